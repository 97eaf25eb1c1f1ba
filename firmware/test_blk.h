/* test=blk, test=blk-durable: virtio-blk devices over virtio-mmio and virtio-pci. */
#ifndef TEST_BLK_H
#define TEST_BLK_H

#include <stdbool.h>
#include <stddef.h>

/* test is the value of test= (n bytes); true if it names one of these tests. */
bool test_blk_known(const char *test, size_t n);
const char *test_blk(const char *test, size_t n);

#endif
