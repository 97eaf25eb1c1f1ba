/* --rng: the device-kind entry for virtio-rng. */
#include "vmm/kinds/kinds.h"

#include "devices/virtio/rng.h"
#include "vmm/device_registry.h"
#include "vmm/options.h"
#include "vmm/virtio_devices.h"

static int rng_parse(const char *options, void **parsed, char *err, size_t errlen)
{
	struct option_list opts;
	if (options_split(options, "--rng", &opts, err, errlen))
		return -1;
	if (opts.n)
		return option_unknown(&opts.kv[0], "--rng", "transport=", err, errlen);
	*parsed = NULL;
	return 0;
}

static int rng_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	slot->model = virtio_rng_create(&slot->dev, env->mem, env->loop, label);
	return slot->model ? 0 : -1;
}

static void rng_destroy(struct virtio_slot *slot)
{
	virtio_rng_destroy(slot->model);
}

const struct device_kind_desc virtio_rng_kind = {
    .flag = "rng",
    .label = "virtio-rng",
    .usage = "[,transport=mmio|pci]\n"
	     "                         virtio-rng, fed from getrandom()",
    .parse = rng_parse,
    .create = rng_create,
    .destroy = rng_destroy,
};
