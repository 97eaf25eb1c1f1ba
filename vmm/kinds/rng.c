/* --rng: the device-kind entry for virtio-rng. */
#include "vmm/kinds/kinds.h"

#include "devices/virtio/rng.h"
#include "device_registry.h"
#include "vmm/cli/options.h"
#include "vmm/kvm/virtio_devices.h"

static const struct option_desc rng_options[] = {{NULL}};

static int rng_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	*parsed = NULL;
	return options_parse(rng_options, opts, "--rng", "transport=", NULL, err, errlen);
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

/* Nothing of its own to save: the generic virtio state is all of it. */
static const struct device_snapshot_ops rng_snapshot;

const struct device_kind_desc virtio_rng_kind = {
    .flag = "rng",
    .label = "virtio-rng",
    .help = "virtio-rng, fed from getrandom()",
    .options = rng_options,
    .parse = rng_parse,
    .create = rng_create,
    .destroy = rng_destroy,
    .snapshot = &rng_snapshot,
};
