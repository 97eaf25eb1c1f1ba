/* virtio-rng (virtio 1.2, 5.4): one request queue filled from the host's getrandom(). */
#ifndef MINIVMM_VIRTIO_RNG_H
#define MINIVMM_VIRTIO_RNG_H

#include "devices/virtio/virtio.h"

#include <sys/types.h>

struct virtio_rng;

/* An entropy source: fill up to len bytes of buf, return how many (short counts are fine), or
 * -1 with errno set, like getrandom(). EINTR is retried; any other error ends the request. */
typedef ssize_t (*virtio_rng_source_fn)(void *opaque, void *buf, size_t len);

/* Create the device model and initialise dev with it. Returns NULL (logged) on failure. */
struct virtio_rng *virtio_rng_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const char *label);
void virtio_rng_destroy(struct virtio_rng *rng);
/* Replace the default source (the host's getrandom()): for tests that must know the bytes. */
void virtio_rng_set_source(struct virtio_rng *rng, virtio_rng_source_fn source, void *opaque);
uint64_t virtio_rng_bytes(const struct virtio_rng *rng);

#endif
