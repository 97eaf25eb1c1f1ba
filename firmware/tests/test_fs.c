/*
 * test=fs: the first virtio-fs device (fs.tag=TAG: its tag must be TAG), mounted by FUSE_INIT;
 * a LOOKUP of a missing name (fs.missing=NAME, default probe-no-such-file) must fail with
 * ENOENT; the file fs.file=NAME in the root is looked up, its GETATTR size must be fs.size=N,
 * it is opened and READ whole in fs.chunk=N requests (default 128K, at most what the session
 * allows), fs.depth=N in flight (1 to 8, default 4), each reply exactly as long as the file
 * has bytes there, then a READ at the end must return nothing; with fs.crc32=HEX the bytes'
 * CRC-32 must be HEX (without it nothing is summed: the benchmark's pure transfer). Then the
 * root is listed (OPENDIR, READDIR until an empty reply, RELEASEDIR) and must hold the file as
 * a regular file, and fs.getattrs=N GETATTRs (default 10000) are timed one at a time.
 */
#include "test_fs.h"

#include "boot_info.h"
#include "cmdline.h"
#include "crc32.h"
#include "lib.h"
#include "printf.h"
#include "virtio_fs.h"
#include "x86.h"

#define CHUNK_MAX	 (1u << 20)
#define CHUNK_DEFAULT	 (128u << 10)
#define DEPTH_DEFAULT	 4
#define GETATTRS_DEFAULT 10000
#define NAME_MAX_PROBE	 255
#define DIR_BUF		 (8192 + sizeof(struct fuse_out_header))
#define READDIR_ROUNDS	 4096 /* a listing that has not ended by then never will */
#define OUT_HDR		 sizeof(struct fuse_out_header)

static uint8_t read_buf[VFS_MAX_INFLIGHT][OUT_HDR + CHUNK_MAX]
    __attribute__((aligned(4096), section(".noinit")));
static uint8_t dir_buf[DIR_BUF] __attribute__((aligned(8)));
static struct vfs_req read_req[VFS_MAX_INFLIGHT];
static struct vfs fs;

struct fs_opts {
	const char *tag, *file, *missing;
	size_t tag_len, file_len, missing_len;
	uint64_t size, chunk, depth, getattrs;
	uint32_t crc;
	bool check_crc;
};

static bool opt_u64(const char *key, uint64_t *out, bool *given)
{
	const char *v;
	size_t n;
	*given = cmdline_get(boot_info.cmdline, key, &v, &n);
	return !*given || parse_u64(v, n, true, out);
}

static bool name_ok(const char *s, size_t n)
{
	if (!n || n > NAME_MAX_PROBE)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			return false;
	return true;
}

static const char *parse_opts(struct fs_opts *o)
{
	const char *v;
	size_t n;
	bool given;
	memset(o, 0, sizeof(*o));
	o->chunk = CHUNK_DEFAULT;
	o->depth = DEPTH_DEFAULT;
	o->getattrs = GETATTRS_DEFAULT;
	o->missing = "probe-no-such-file";
	o->missing_len = strlen(o->missing);
	if (!cmdline_get(boot_info.cmdline, "fs.file", &o->file, &o->file_len) ||
	    !name_ok(o->file, o->file_len))
		return "fs.file=NAME (a name in the shared directory) is needed";
	if (cmdline_get(boot_info.cmdline, "fs.missing", &o->missing, &o->missing_len) &&
	    !name_ok(o->missing, o->missing_len))
		return "bad fs.missing";
	cmdline_get(boot_info.cmdline, "fs.tag", &o->tag, &o->tag_len);
	if (!opt_u64("fs.size", &o->size, &given) || !given)
		return "fs.size=N (the file's size) is needed";
	if (!opt_u64("fs.chunk", &o->chunk, &given) || !o->chunk || o->chunk > CHUNK_MAX)
		return "bad fs.chunk (1 to 1M)";
	if (!opt_u64("fs.depth", &o->depth, &given) || !o->depth || o->depth > VFS_MAX_INFLIGHT)
		return "bad fs.depth (1 to 8)";
	if (!opt_u64("fs.getattrs", &o->getattrs, &given))
		return "bad fs.getattrs";
	if ((o->check_crc = cmdline_get(boot_info.cmdline, "fs.crc32", &v, &n)) &&
	    !parse_hex32(v, n, &o->crc))
		return "bad fs.crc32";
	return 0;
}

static uint64_t rate(uint64_t count, uint64_t us, uint64_t scale)
{
	return us ? count * scale / us : 0;
}

/* The missing name fails with ENOENT, and nothing else. */
static const char *lookup_missing(const struct fs_opts *o)
{
	struct fuse_entry_out e;
	uint32_t error;
	const char *err =
	    vfs_lookup(&fs, FUSE_ROOT_NODE, o->missing, (uint32_t)o->missing_len, &e, &error);
	if (err)
		return err;
	kprintf("probe: fs lookup missing error=%u\n", error);
	return error == FUSE_ENOENT ? 0 : "fs: LOOKUP of a missing name did not fail with ENOENT";
}

/*
 * The whole file, depth READs in flight; completions may come in any order, the CRC is
 * folded in file order (a FIFO of slots by offset). Each reply must be exactly the bytes the
 * file has at its offset.
 */
static const char *read_all(const struct fs_opts *o, uint64_t node, uint64_t fh, uint32_t chunk,
			    uint32_t *crc)
{
	uint64_t off_of[VFS_MAX_INFLIGHT], next = 0;
	uint32_t len_of[VFS_MAX_INFLIGHT];
	bool done[VFS_MAX_INFLIGHT];
	unsigned fifo[VFS_MAX_INFLIGHT], head = 0, count = 0, nslots = (unsigned)o->depth;
	unsigned free_slots[VFS_MAX_INFLIGHT], nfree = nslots;
	const char *err;
	for (unsigned i = 0; i < nslots; i++)
		free_slots[i] = i;
	*crc = 0;
	while (next < o->size || count) {
		bool posted = false;
		while (nfree && next < o->size) {
			unsigned s = free_slots[--nfree];
			struct fuse_read_in in;
			memset(&in, 0, sizeof(in));
			in.fh = fh;
			in.offset = next;
			in.size = chunk;
			if ((err = vfs_prepare(&fs, &read_req[s], FUSE_OP_READ, node, &in,
					       sizeof(in), 0, 0, read_buf[s], OUT_HDR + chunk)) ||
			    (err = vfs_post(&fs, &read_req[s])))
				return err;
			off_of[s] = next;
			done[s] = false;
			fifo[(head + count++) % VFS_MAX_INFLIGHT] = s;
			next += chunk;
			posted = true;
		}
		if (posted)
			vfs_kick(&fs);
		struct vfs_req *r;
		struct fuse_reply rep;
		if ((err = vfs_wait(&fs, &r, &rep)))
			return err;
		unsigned s = (unsigned)(r - read_req);
		if (s >= nslots)
			return "fs: completion for a request that is not a READ";
		if ((err = fuse_read_check(&rep, chunk)))
			return err;
		uint64_t left = o->size - off_of[s];
		uint32_t want = left < chunk ? (uint32_t)left : chunk;
		if (rep.len != want) {
			kprintf("probe: fs read offset=%lu returned=%u expected=%u\n", off_of[s],
				rep.len, want);
			return "fs: READ returned other than the file's bytes at its offset";
		}
		len_of[s] = rep.len;
		done[s] = true;
		while (count && done[fifo[head]]) {
			unsigned f = fifo[head];
			if (o->check_crc)
				*crc = crc32_update(*crc, read_buf[f] + OUT_HDR, len_of[f]);
			done[f] = false;
			free_slots[nfree++] = f;
			head = (head + 1) % VFS_MAX_INFLIGHT;
			count--;
		}
	}
	/* At the end of the file a READ returns nothing. */
	struct fuse_read_in in;
	memset(&in, 0, sizeof(in));
	in.fh = fh;
	in.offset = o->size;
	in.size = chunk;
	struct fuse_reply rep;
	if ((err = vfs_call(&fs, FUSE_OP_READ, node, &in, sizeof(in), 0, 0, read_buf[0],
			    OUT_HDR + chunk, &rep)) ||
	    (err = fuse_read_check(&rep, chunk)))
		return err;
	return rep.len ? "fs: READ past the end returned data" : 0;
}

/* The root's listing holds the file, as a regular file. */
static const char *list_root(const struct fs_opts *o)
{
	uint64_t fh, offset = 0;
	uint32_t error;
	unsigned entries = 0, found = 0, rounds = 0;
	const char *err = vfs_openfh(&fs, FUSE_ROOT_NODE, true, &fh, &error);
	if (err)
		return err;
	if (error)
		return "fs: OPENDIR of the root failed";
	for (;;) {
		struct fuse_reply rep;
		if (++rounds > READDIR_ROUNDS)
			return "fs: READDIR does not end";
		if ((err = vfs_readdir(&fs, FUSE_ROOT_NODE, fh, offset, dir_buf, sizeof(dir_buf),
				       &rep)))
			return err;
		if (!rep.len)
			break;
		uint32_t pos = 0;
		struct fuse_dirent_view e;
		while (fuse_dirent_next(rep.data, rep.len, &pos, &e, &err)) {
			entries++;
			offset = e.off;
			if (e.namelen == o->file_len && !memcmp(e.name, o->file, o->file_len)) {
				found++;
				if (e.type != FUSE_DT_REG)
					return "fs: READDIR lists the file as no regular file";
			}
		}
		if (err)
			return err;
	}
	if ((err = vfs_release(&fs, FUSE_ROOT_NODE, fh, true, &error)))
		return err;
	kprintf("probe: fs readdir entries=%u found=%u\n", entries, found);
	if (error)
		return "fs: RELEASEDIR failed";
	return found == 1 ? 0 : "fs: READDIR of the root does not list the file once";
}

static const char *getattr_bench(const struct fs_opts *o, uint64_t node)
{
	struct fuse_attr_out a;
	uint32_t error;
	const char *err;
	uint64_t t0 = rdtsc();
	for (uint64_t i = 0; i < o->getattrs; i++) {
		if ((err = vfs_getattr(&fs, node, &a, &error)))
			return err;
		if (error || a.attr.size != o->size)
			return "fs: GETATTR failed or changed the size";
	}
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	kprintf("probe: fs getattr ops=%lu us=%lu ops_per_s=%lu\n", o->getattrs, us,
		rate(o->getattrs, us, 1000000));
	return 0;
}

const char *test_fs(void)
{
	struct fs_opts o;
	const char *err;
	uint32_t error;
	if ((err = parse_opts(&o)))
		return err;
	unsigned count;
	struct virtio_dev **devs = vfs_devices(&count);
	if (!count)
		return "no virtio-fs device";
	struct virtio_dev *d = devs[0];
	if ((err = vfs_open(&fs, d)))
		return err;
	kprintf("probe: fs devices=%u transport=%s tag=%s request_queues=%u\n", count,
		virtio_transport_name(d), fs.tag, fs.request_queues);
	if (o.tag && (strlen(fs.tag) != o.tag_len || memcmp(fs.tag, o.tag, o.tag_len)))
		return "fs: the device's tag is not fs.tag";
	if ((err = vfs_mount(&fs)))
		return err;
	kprintf("probe: fs init major=%u minor=%u max_write=%u max_pages=%u max_read=%u\n",
		fs.init.major, fs.init.minor, fs.init.max_write, fs.init.max_pages, fs.max_read);
	if ((err = lookup_missing(&o)))
		return err;

	struct fuse_entry_out e;
	if ((err = vfs_lookup(&fs, FUSE_ROOT_NODE, o.file, (uint32_t)o.file_len, &e, &error)))
		return err;
	if (error)
		return "fs: LOOKUP of fs.file failed";
	if ((e.attr.mode & FUSE_S_IFMT) != FUSE_S_IFREG)
		return "fs: fs.file is no regular file";
	struct fuse_attr_out a;
	if ((err = vfs_getattr(&fs, e.nodeid, &a, &error)))
		return err;
	kprintf("probe: fs file nodeid=%lu size=%lu\n", e.nodeid, a.attr.size);
	if (error)
		return "fs: GETATTR failed";
	if (a.attr.size != o.size)
		return "fs: GETATTR's size is not fs.size";

	uint32_t chunk = o.chunk < fs.max_read ? (uint32_t)o.chunk : fs.max_read;
	uint64_t fh;
	if ((err = vfs_openfh(&fs, e.nodeid, false, &fh, &error)))
		return err;
	if (error)
		return "fs: OPEN failed";
	uint32_t crc;
	uint64_t t0 = rdtsc();
	if ((err = read_all(&o, e.nodeid, fh, chunk, &crc)))
		return err;
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	if ((err = vfs_release(&fs, e.nodeid, fh, false, &error)))
		return err;
	if (error)
		return "fs: RELEASE failed";
	kprintf("probe: fs read bytes=%lu chunk=%u depth=%lu us=%lu mbps=%lu kicks=%lu", o.size,
		chunk, o.depth, us, rate(o.size, us, 1), fs.d->vq[1].kicks);
	if (o.check_crc)
		kprintf(" crc32=%08x\n", crc);
	else
		kprintf(" crc32=unchecked\n");
	if (o.check_crc && crc != o.crc)
		return "fs: CRC-32 of the file differs from fs.crc32";

	if ((err = list_root(&o)) || (err = getattr_bench(&o, e.nodeid)))
		return err;
	return 0;
}
