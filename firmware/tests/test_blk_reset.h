/* test=blk-reset: a virtio-blk reset with large requests in flight. */
#ifndef TEST_BLK_RESET_H
#define TEST_BLK_RESET_H

const char *test_blk_reset(void);

#endif
