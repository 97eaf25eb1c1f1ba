/* The probe's virtio-fs driver: FUSE requests on the first request queue (see virtio_fs.h). */
#include "virtio_fs.h"

#include "lib.h"
#include "x86.h"

#define CFG_TAG	       0
#define CFG_NUM_QUEUES VFS_TAG_MAX
#define CFG_SIZE       (VFS_TAG_MAX + 4)
#define MMIO_CFG       0x100
#define Q_REQUEST      1
#define PAGE	       4096
#define DEFAULT_PAGES  32 /* Linux's request size when the server does not say (FUSE_MAX_PAGES) */
#define O_RDONLY_FLAGS 0

struct virtio_dev **vfs_devices(unsigned *n)
{
	static struct virtio_dev_set set;
	return virtio_devices_kept(&set, VIRTIO_ID_FS, n);
}

static uint32_t cfg32(struct virtio_dev *d, unsigned off)
{
	uint64_t base = d->transport == VIRTIO_MMIO ? d->base + MMIO_CFG : d->devcfg;
	return mmio_read32(base + off);
}

const char *vfs_open(struct vfs *fs, struct virtio_dev *d)
{
	memset(fs, 0, sizeof(*fs));
	fs->d = d;
	if (d->transport == VIRTIO_PCI && !d->devcfg)
		return "virtio-fs: no device configuration structure";
	if (d->transport == VIRTIO_MMIO && d->size && d->size < MMIO_CFG + CFG_SIZE)
		return "virtio-fs: register window too small for the configuration";
	const char *err = virtio_init(d, 0, 2);
	if (err)
		return err;
	/* The tag: up to 36 bytes, NUL-padded, not always terminated. */
	uint8_t raw[VFS_TAG_MAX];
	for (unsigned i = 0; i < VFS_TAG_MAX; i += 4) {
		uint32_t w = cfg32(d, CFG_TAG + i);
		for (unsigned k = 0; k < 4; k++)
			raw[i + k] = (uint8_t)(w >> (8 * k));
	}
	unsigned n = 0;
	while (n < VFS_TAG_MAX && raw[n])
		n++;
	if (!n)
		return "virtio-fs: the device has an empty tag";
	for (unsigned i = 0; i < n; i++)
		if (raw[i] < 0x21 || raw[i] > 0x7e)
			return "virtio-fs: the tag has bytes that are not printable";
	memcpy(fs->tag, raw, n);
	fs->tag[n] = 0;
	fs->request_queues = cfg32(d, CFG_NUM_QUEUES);
	if (!fs->request_queues)
		return "virtio-fs: the device has no request queue";
	return 0;
}

const char *vfs_prepare(struct vfs *fs, struct vfs_req *r, uint32_t opcode, uint64_t nodeid,
			const void *arg, uint32_t arglen, const char *name, uint32_t namelen,
			void *out, uint32_t out_cap)
{
	if (r->busy)
		return "virtio-fs: request already in flight";
	r->unique = ++fs->unique;
	r->in_len =
	    fuse_build(r->in, sizeof(r->in), opcode, r->unique, nodeid, arg, arglen, name, namelen);
	if (!r->in_len)
		return "virtio-fs: request too large";
	if (out_cap < sizeof(struct fuse_out_header))
		return "virtio-fs: reply buffer too small";
	r->out = out;
	r->out_cap = out_cap;
	return 0;
}

const char *vfs_post(struct vfs *fs, struct vfs_req *r)
{
	if (r->busy)
		return "virtio-fs: request already in flight";
	/* A reply buffer that still holds an earlier reply must not pass for a new one. */
	memset(r->out, 0, sizeof(struct fuse_out_header));
	struct virtq_buf bufs[2] = {
	    {(uint64_t)r->in, r->in_len, false},
	    {(uint64_t)r->out, r->out_cap, true},
	};
	int head = virtq_add(&fs->d->vq[Q_REQUEST], bufs, 2);
	if (head < 0)
		return "virtio-fs: queue full";
	fs->req_of[head] = r;
	r->busy = true;
	fs->inflight++;
	return 0;
}

void vfs_kick(struct vfs *fs)
{
	virtq_kick(&fs->d->vq[Q_REQUEST], false);
}

const char *vfs_wait(struct vfs *fs, struct vfs_req **rp, struct fuse_reply *rep)
{
	uint16_t id;
	uint32_t used;
	const char *err = virtq_wait(&fs->d->vq[Q_REQUEST], &id, &used, VFS_TIMEOUT_MS);
	if (err)
		return err;
	struct vfs_req *r = fs->req_of[id];
	if (!r || !r->busy)
		return "virtio-fs: completion for a request not in flight";
	fs->req_of[id] = 0;
	r->busy = false;
	fs->inflight--;
	*rp = r;
	return fuse_reply_parse(r->out, r->out_cap, used, r->unique, rep);
}

const char *vfs_call(struct vfs *fs, uint32_t opcode, uint64_t nodeid, const void *arg,
		     uint32_t arglen, const char *name, uint32_t namelen, void *out,
		     uint32_t out_cap, struct fuse_reply *rep)
{
	static struct vfs_req req;
	struct vfs_req *done;
	const char *err;
	if ((err =
		 vfs_prepare(fs, &req, opcode, nodeid, arg, arglen, name, namelen, out, out_cap)) ||
	    (err = vfs_post(fs, &req)))
		return err;
	vfs_kick(fs);
	if ((err = vfs_wait(fs, &done, rep)))
		return err;
	return done == &req ? 0 : "virtio-fs: completion for another request";
}

/* Replies of the fixed-size operations: the out header and the largest of them. */
static uint8_t small_reply[sizeof(struct fuse_out_header) + 128] __attribute__((aligned(8)));

const char *vfs_mount(struct vfs *fs)
{
	struct fuse_init_in in;
	memset(&in, 0, sizeof(in));
	in.major = FUSE_PROTO_MAJOR;
	in.minor = FUSE_PROTO_MINOR;
	in.flags = FUSE_INIT_MAX_PAGES;
	struct fuse_reply rep;
	const char *err = vfs_call(fs, FUSE_OP_INIT, 0, &in, sizeof(in), 0, 0, small_reply,
				   sizeof(small_reply), &rep);
	if (err || (err = fuse_init_parse(&rep, &fs->init)))
		return err;
	bool pages = fs->init.flags & FUSE_INIT_MAX_PAGES && fs->init.max_pages;
	fs->max_read = (pages ? fs->init.max_pages : DEFAULT_PAGES) * PAGE;
	return 0;
}

const char *vfs_lookup(struct vfs *fs, uint64_t parent, const char *name, uint32_t namelen,
		       struct fuse_entry_out *e, uint32_t *error)
{
	struct fuse_reply rep;
	const char *err = vfs_call(fs, FUSE_OP_LOOKUP, parent, 0, 0, name, namelen, small_reply,
				   sizeof(small_reply), &rep);
	return err ? err : fuse_entry_parse(&rep, e, error);
}

const char *vfs_getattr(struct vfs *fs, uint64_t nodeid, struct fuse_attr_out *a, uint32_t *error)
{
	struct fuse_getattr_in in;
	memset(&in, 0, sizeof(in));
	struct fuse_reply rep;
	const char *err = vfs_call(fs, FUSE_OP_GETATTR, nodeid, &in, sizeof(in), 0, 0, small_reply,
				   sizeof(small_reply), &rep);
	if (err)
		return err;
	if ((*error = rep.error))
		return 0;
	return fuse_attr_parse(&rep, a);
}

const char *vfs_openfh(struct vfs *fs, uint64_t nodeid, bool dir, uint64_t *fh, uint32_t *error)
{
	struct fuse_open_in in = {O_RDONLY_FLAGS, 0};
	struct fuse_open_out out;
	struct fuse_reply rep;
	const char *err = vfs_call(fs, dir ? FUSE_OP_OPENDIR : FUSE_OP_OPEN, nodeid, &in,
				   sizeof(in), 0, 0, small_reply, sizeof(small_reply), &rep);
	if (err)
		return err;
	if ((*error = rep.error))
		return 0;
	if ((err = fuse_reply_fixed(&rep, &out, sizeof(out))))
		return err;
	*fh = out.fh;
	return 0;
}

const char *vfs_release(struct vfs *fs, uint64_t nodeid, uint64_t fh, bool dir, uint32_t *error)
{
	struct fuse_release_in in;
	memset(&in, 0, sizeof(in));
	in.fh = fh;
	struct fuse_reply rep;
	const char *err = vfs_call(fs, dir ? FUSE_OP_RELEASEDIR : FUSE_OP_RELEASE, nodeid, &in,
				   sizeof(in), 0, 0, small_reply, sizeof(small_reply), &rep);
	if (err)
		return err;
	if ((*error = rep.error))
		return 0;
	return rep.len ? "fuse: RELEASE reply carries data" : 0;
}

const char *vfs_readdir(struct vfs *fs, uint64_t nodeid, uint64_t fh, uint64_t offset, void *buf,
			uint32_t cap, struct fuse_reply *rep)
{
	struct fuse_read_in in;
	memset(&in, 0, sizeof(in));
	in.fh = fh;
	in.offset = offset;
	in.size = cap - (uint32_t)sizeof(struct fuse_out_header);
	const char *err =
	    vfs_call(fs, FUSE_OP_READDIR, nodeid, &in, sizeof(in), 0, 0, buf, cap, rep);
	if (err)
		return err;
	if (rep->error)
		return "fuse: READDIR failed";
	return rep->len > in.size ? "fuse: READDIR returned more than asked" : 0;
}
