#include "device_registry.h"

#include "devices/virtio/blk.h"
#include "devices/virtio/balloon.h"
#include "devices/virtio/net.h"
#include "devices/virtio/rng.h"

const struct device_kind_desc *const device_kinds[] = {
    &virtio_rng_kind, &virtio_net_kind, &virtio_balloon_kind, &virtio_blk_kind, NULL,
};
