#include "initramfs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void initramfs_init(struct initramfs *ir)
{
	*ir = (struct initramfs){.ino = 1};
}

static void put(struct initramfs *ir, const void *data, size_t len)
{
	if (ir->failed)
		return;
	if (ir->cap - ir->len < len) {
		size_t cap = ir->cap ? ir->cap : 1 << 20;
		while (cap - ir->len < len)
			cap *= 2;
		uint8_t *b = realloc(ir->buf, cap);
		if (!b) {
			ir->failed = 1;
			return;
		}
		ir->buf = b;
		ir->cap = cap;
	}
	memcpy(ir->buf + ir->len, data, len);
	ir->len += len;
}

/* Headers and data both end on a 4-byte boundary. */
static void pad4(struct initramfs *ir)
{
	static const uint8_t zeros[3];
	put(ir, zeros, (4 - ir->len % 4) % 4);
}

static void entry(struct initramfs *ir, const char *path, unsigned mode, const void *data,
		  size_t len)
{
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
	if (len)
		put(ir, data, len);
	pad4(ir);
}

void initramfs_dir(struct initramfs *ir, const char *path)
{
	entry(ir, path, 0040755, NULL, 0);
}

void initramfs_file(struct initramfs *ir, const char *path, unsigned mode, const void *data,
		    size_t len)
{
	if (len > 0xffffffffu) {
		ir->failed = 1; /* newc sizes are 32 bits */
		return;
	}
	entry(ir, path, 0100000 | (mode & 07777), data, len);
}

int initramfs_finish(struct initramfs *ir)
{
	entry(ir, "TRAILER!!!", 0, NULL, 0);
	return ir->failed ? -1 : 0;
}

void initramfs_free(struct initramfs *ir)
{
	free(ir->buf);
	*ir = (struct initramfs){0};
}
