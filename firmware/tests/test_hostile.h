/* test=hostile (test_hostile.c) and its rule-breaking driver cases (test_hostile_driver.c). */
#ifndef TEST_HOSTILE_H
#define TEST_HOSTILE_H

#include "virtio.h"

/* Status tricks, aliasing 4 GiB chains (rng, balloon when present) and the QueueNum race
 * from a second vCPU, on victim. NULL when the VMM coped with all of them. */
const char *hostile_driver(struct virtio_dev *victim);

const char *test_hostile(void);

#endif
