/* The initramfs `minivmm run` hands its guest: a newc cpio archive (the format the kernel
 * unpacks, Documentation/driver-api/early-userspace/buffer-format.rst) written straight into a
 * file (a memfd): file data from another file is copied by the kernel (sendfile), never through
 * this process's memory (on a PVM host each page a copy faults in is an exit). */
#ifndef MINIVMM_INITRAMFS_H
#define MINIVMM_INITRAMFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct initramfs {
	int fd;
	off_t len;
	unsigned ino;
	int failed; /* an errno: every later call does nothing, initramfs_finish fails */
};

/* Write the archive to fd (empty, at offset 0; the caller's). */
void initramfs_init(struct initramfs *ir, int fd);
/* A directory (mode 0755) at path ("minivmm/modules": no leading slash, parents first). */
void initramfs_dir(struct initramfs *ir, const char *path);
/* A regular file with mode (0644, 0755) and its bytes. */
void initramfs_file(struct initramfs *ir, const char *path, unsigned mode, const void *data,
		    size_t len);
/* A regular file whose bytes are src's (an open file, read from its start), all of them. */
void initramfs_file_from(struct initramfs *ir, const char *path, unsigned mode, int src);
/* The trailer. 0, or -1 with errno (the first failure's). */
int initramfs_finish(struct initramfs *ir);

#endif
