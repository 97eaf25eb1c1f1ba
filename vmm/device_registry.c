#include "device_registry.h"

#include <stdio.h>
#include <string.h>

#include "vmm/options.h"

#include "vmm/kinds/kinds.h"

const struct device_kind_desc *const device_kinds[] = {
    &virtio_rng_kind, &virtio_net_kind, &virtio_balloon_kind, &virtio_blk_kind, NULL,
};

void device_kind_usage(const struct device_kind_desc *kind)
{
	options_usage(stdout, kind->flag, kind->needs_options, kind->help, kind->options);
}
