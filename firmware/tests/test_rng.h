/* test=rng: every virtio-rng device over virtio-mmio and virtio-pci (driver: virtio_rng.c). */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

#include "virtio_rng.h"

/* rng_read(), checking that the bytes look random (also for test=demo and test=hostile). */
const char *rng_read_checked(struct virtio_dev *d, uint64_t total, struct rng_stats *st);

/* probe: rng dev=N transport=... bytes= ms= kib_per_s= kicks= */
void rng_report(unsigned idx, struct virtio_dev *d, const struct rng_stats *st);

const char *test_rng(void);

#endif
