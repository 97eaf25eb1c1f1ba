/*
 * A virtio-rng driver for the probe (virtio 1.2, 5.4): one request queue of device-writable
 * buffers, several 4 KiB buffers in flight, completions found by polling the used ring.
 */
#ifndef VIRTIO_RNG_H
#define VIRTIO_RNG_H

#include <stdint.h>

#include "virtio.h"

struct rng_stats {
	uint64_t bytes, cycles, kicks;
};

/* The virtio-rng devices found (discovers on first use); *n set to their count. */
struct virtio_dev **rng_devices(unsigned *n);
/* Reset and initialise an rng device (one queue). */
const char *rng_init(struct virtio_dev *d);
/* Called with each completed buffer, in the order they arrive; non-NULL stops the read. */
typedef const char *rng_sink(void *ctx, const uint8_t *p, uint32_t len);
/* Read `total` bytes in 4 KiB buffers, several in flight, handing each to sink; on success the
 * queue is idle again and *st says what it took. */
const char *rng_read(struct virtio_dev *d, uint64_t total, rng_sink *sink, void *ctx,
		     struct rng_stats *st);

#endif
