/* test=fs: a file read through virtio-fs (FUSE over the device), its listing, GETATTR's rate. */
#ifndef TEST_FS_H
#define TEST_FS_H

const char *test_fs(void);

#endif
