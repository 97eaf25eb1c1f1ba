/* The initramfs `minivmm run` hands its guest: a newc cpio archive (the format the kernel
 * unpacks, Documentation/driver-api/early-userspace/buffer-format.rst) built in memory. */
#ifndef MINIVMM_INITRAMFS_H
#define MINIVMM_INITRAMFS_H

#include <stddef.h>
#include <stdint.h>

struct initramfs {
	uint8_t *buf;
	size_t len, cap;
	unsigned ino;
	int failed; /* out of memory: every later call does nothing, initramfs_finish fails */
};

void initramfs_init(struct initramfs *ir);
/* A directory (mode 0755) at path ("minivmm/modules": no leading slash, parents first). */
void initramfs_dir(struct initramfs *ir, const char *path);
/* A regular file with mode (0644, 0755) and its bytes. */
void initramfs_file(struct initramfs *ir, const char *path, unsigned mode, const void *data,
		    size_t len);
/* The trailer; then ir->buf holds ir->len bytes. 0, or -1 when out of memory. */
int initramfs_finish(struct initramfs *ir);
void initramfs_free(struct initramfs *ir);

#endif
