#include "device_registry.h"

#include <string.h>

#include "vmm/kinds/kinds.h"

const struct device_kind_desc *const device_kinds[] = {
    &virtio_rng_kind, &virtio_net_kind, &virtio_balloon_kind, &virtio_blk_kind, NULL,
};

const struct device_kind_desc *device_kind_find(const char *flag)
{
	for (int i = 0; device_kinds[i]; i++)
		if (!strcmp(device_kinds[i]->flag, flag))
			return device_kinds[i];
	return NULL;
}
