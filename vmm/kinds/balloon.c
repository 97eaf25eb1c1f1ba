/* --balloon: option parsing and the device-kind entry for virtio-balloon. */
#include "vmm/kinds/kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio/balloon.h"
#include "vmm/device_registry.h"
#include "vmm/options.h"
#include "vmm/virtio_devices.h"

static const struct option_desc balloon_option_table[] = {
    {.key = "deflate-on-oom",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct balloon_options, deflate_on_oom),
     .help = "the guest may take pages back when it runs out of memory"},
    {.key = "free-page-reporting",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct balloon_options, reporting),
     .help = "the guest reports free pages, whose host memory is released"},
    {NULL},
};

static int balloon_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct balloon_options o = {0};
	if (options_parse(balloon_option_table, opts, "--balloon", "transport=", &o, err, errlen))
		return -1;
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
    .help = "virtio-balloon: memory given back by the guest is released\n"
	    "(target set with the control socket, see --api-sock)",
    .options = balloon_option_table,
    .parse = balloon_parse,
    .create = balloon_create,
    .destroy = balloon_destroy,
};

struct virtio_balloon *virtio_balloon_of(struct virtio_slot *slot)
{
	return slot->cfg && slot->cfg->kind == &virtio_balloon_kind ? slot->model : NULL;
}
