/* test=rng and test=hostile: virtio-rng devices over virtio-mmio and virtio-pci. */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

#include "virtio.h"

struct rng_stats {
	uint64_t bytes, cycles, kicks;
};

/* The virtio-rng devices found (discovers on first use); *n set to their count. */
struct virtio_dev **rng_devices(unsigned *n);
/* Reset and initialise an rng device (one queue). */
const char *rng_init(struct virtio_dev *d);
/* Read `total` bytes in 4 KiB buffers, several in flight; checks they look random. */
const char *rng_read(struct virtio_dev *d, uint64_t total, struct rng_stats *st);

/* probe: rng dev=N transport=... bytes= ms= kib_per_s= kicks= */
void rng_report(unsigned idx, struct virtio_dev *d, const struct rng_stats *st);

const char *test_rng(void);
const char *test_hostile(void);

#endif
