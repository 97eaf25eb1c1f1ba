#include "initramfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

void initramfs_init(struct initramfs *ir, int fd)
{
	*ir = (struct initramfs){.fd = fd, .ino = 1};
}

static void put(struct initramfs *ir, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (!ir->failed && len) {
		ssize_t n = write(ir->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ir->failed = n < 0 ? errno : EIO;
			return;
		}
		p += n;
		len -= (size_t)n;
		ir->len += n;
	}
}

/* Headers and data both end on a 4-byte boundary. */
static void pad4(struct initramfs *ir)
{
	static const uint8_t zeros[3];
	put(ir, zeros, (size_t)((4 - ir->len % 4) % 4));
}

static void header(struct initramfs *ir, const char *path, unsigned mode, uint64_t len)
{
	if (len > 0xffffffffu) {
		ir->failed = EFBIG; /* newc sizes are 32 bits */
		return;
	}
	char hdr[111];
	size_t namesize = strlen(path) + 1;
	/* magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor,
	 * rdevminor, namesize, check */
	snprintf(hdr, sizeof(hdr), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		 ir->ino++, mode, 0u, 0u, 1u, 0u, (unsigned)len, 0u, 0u, 0u, 0u, (unsigned)namesize,
		 0u);
	put(ir, hdr, 110);
	put(ir, path, namesize);
	pad4(ir);
}

void initramfs_dir(struct initramfs *ir, const char *path)
{
	header(ir, path, 0040755, 0);
}

void initramfs_file(struct initramfs *ir, const char *path, unsigned mode, const void *data,
		    size_t len)
{
	header(ir, path, 0100000 | (mode & 07777), len);
	put(ir, data, len);
	pad4(ir);
}

void initramfs_file_from(struct initramfs *ir, const char *path, unsigned mode, int src)
{
	struct stat st;
	if (ir->failed)
		return;
	if (fstat(src, &st) < 0) {
		ir->failed = errno;
		return;
	}
	header(ir, path, 0100000 | (mode & 07777), (uint64_t)st.st_size);
	off_t at = 0;
	while (!ir->failed && at < st.st_size) {
		ssize_t n = sendfile(ir->fd, src, &at, (size_t)(st.st_size - at));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) /* a file that shrank under us: the archive would lie */
			ir->failed = n < 0 ? errno : EIO;
		else
			ir->len += n;
	}
	pad4(ir);
}

int initramfs_finish(struct initramfs *ir)
{
	header(ir, "TRAILER!!!", 0, 0);
	if (ir->failed) {
		errno = ir->failed;
		return -1;
	}
	return 0;
}
