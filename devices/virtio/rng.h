/* virtio-rng (virtio 1.2, 5.4): one request queue filled from the host's getrandom(). */
#ifndef MINIVMM_VIRTIO_RNG_H
#define MINIVMM_VIRTIO_RNG_H

#include "devices/virtio/virtio.h"

struct virtio_rng;
struct device_kind_desc;

/* --rng: no options of its own. */
extern const struct device_kind_desc virtio_rng_kind;

/* Create the device model and initialise dev with it. Returns NULL (logged) on failure. */
struct virtio_rng *virtio_rng_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const char *label);
void virtio_rng_destroy(struct virtio_rng *rng);
uint64_t virtio_rng_bytes(const struct virtio_rng *rng);

#endif
