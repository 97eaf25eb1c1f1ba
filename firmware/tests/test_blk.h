/* test=blk, test=blk-durable: virtio-blk devices over virtio-mmio and virtio-pci. */
#ifndef TEST_BLK_H
#define TEST_BLK_H

const char *test_blk(void);
const char *test_blk_durable(void);

#endif
