/* --balloon: option parsing and the device-kind entry for virtio-balloon. */
#include "vmm/kinds/kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio/balloon.h"
#include "vmm/device_registry.h"
#include "vmm/options.h"
#include "vmm/virtio_devices.h"

static int balloon_parse(const char *options, void **parsed, char *err, size_t errlen)
{
	struct option_list opts;
	struct balloon_options o = {0};
	if (options_split(options, "--balloon", &opts, err, errlen))
		return -1;
	for (int i = 0; i < opts.n; i++) {
		const struct option_kv *kv = &opts.kv[i];
		if (!strcmp(kv->key, "deflate-on-oom")) {
			if (option_bool(kv, "--balloon", &o.deflate_on_oom, err, errlen))
				return -1;
		} else if (!strcmp(kv->key, "free-page-reporting")) {
			if (option_bool(kv, "--balloon", &o.reporting, err, errlen))
				return -1;
		} else {
			return option_unknown(
			    kv, "--balloon",
			    "deflate-on-oom=, free-page-reporting=, transport=", err, errlen);
		}
	}
	/* Owned by the configuration from here on (cli_free_config frees it). */
	struct balloon_options *copy = malloc(sizeof(*copy));
	if (!copy) {
		snprintf(err, errlen, "--balloon: out of memory");
		return -1;
	}
	*copy = o;
	*parsed = copy;
	return 0;
}

static int balloon_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	static const struct balloon_options defaults;
	const struct balloon_options *o = slot->cfg->parsed ? slot->cfg->parsed : &defaults;
	slot->model = virtio_balloon_create(&slot->dev, env->mem, env->loop, label, o);
	return slot->model ? 0 : -1;
}

static void balloon_destroy(struct virtio_slot *slot)
{
	virtio_balloon_destroy(slot->model);
}

const struct device_kind_desc virtio_balloon_kind = {
    .flag = "balloon",
    .label = "virtio-balloon",
    .usage = "[,deflate-on-oom=on][,free-page-reporting=on][,transport=mmio|pci]\n"
	     "                         virtio-balloon: memory given back by the guest is "
	     "released\n"
	     "                         (target set with the control socket, see --api-sock)",
    .parse = balloon_parse,
    .create = balloon_create,
    .destroy = balloon_destroy,
};

struct virtio_balloon *virtio_balloon_of(struct virtio_slot *slot)
{
	return slot->cfg && slot->cfg->kind == &virtio_balloon_kind ? slot->model : NULL;
}
