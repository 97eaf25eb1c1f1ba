/*
 * virtio-fs driver for the probe (virtio 1.2, 5.11): queue 0 is the high-priority queue (set up,
 * never used: the probe sends no FORGET), queue 1 the first request queue. A request is one
 * chain: the FUSE request (device-readable), then the reply buffer (device-writable: the out
 * header, then the payload). Several may be in flight; completions are found by polling.
 * The FUSE messages and the checks on the replies are fuse.c's.
 */
#ifndef VIRTIO_FS_H
#define VIRTIO_FS_H

#include <stdbool.h>
#include <stdint.h>

#include "fuse.h"
#include "virtio.h"

#define VIRTIO_ID_FS	 26
#define VFS_TAG_MAX	 36 /* config space: tag[36] (NUL-padded), le32 num_request_queues */
#define VFS_REQ_MAX	 (sizeof(struct fuse_in_header) + 64 + 256) /* header, args, a name */
#define VFS_MAX_INFLIGHT 8
#define VFS_TIMEOUT_MS	 10000

/* A request: its bytes, and where the device writes the reply. */
struct vfs_req {
	uint8_t in[VFS_REQ_MAX] __attribute__((aligned(8)));
	uint32_t in_len;
	void *out; /* out header then payload, out_cap bytes */
	uint32_t out_cap;
	uint64_t unique;
	bool busy;
};

struct vfs {
	struct virtio_dev *d;
	char tag[VFS_TAG_MAX + 1];
	uint32_t request_queues;
	uint64_t unique; /* the last request's id */
	struct fuse_init_out init;
	uint32_t max_read;			/* the largest READ this session allows (bytes) */
	struct vfs_req *req_of[VIRTQ_MAX_SIZE]; /* head descriptor -> request */
	unsigned inflight;
};

/* Every virtio-fs device, in discovery order. */
struct virtio_dev **vfs_devices(unsigned *n);
/* Initialise d (two queues) and read its tag and request queue count. */
const char *vfs_open(struct vfs *fs, struct virtio_dev *d);
/* FUSE_INIT: the session's limits in fs->init and fs->max_read. */
const char *vfs_mount(struct vfs *fs);

/* Fill r for a request (a fresh id) with its reply buffer; 0, or why it does not fit. */
const char *vfs_prepare(struct vfs *fs, struct vfs_req *r, uint32_t opcode, uint64_t nodeid,
			const void *arg, uint32_t arglen, const char *name, uint32_t namelen,
			void *out, uint32_t out_cap);
/* Queue a prepared request (no kick). */
const char *vfs_post(struct vfs *fs, struct vfs_req *r);
void vfs_kick(struct vfs *fs);
/* Wait for one completion: which request, and its reply checked (fuse_reply_parse). */
const char *vfs_wait(struct vfs *fs, struct vfs_req **r, struct fuse_reply *rep);
/* One request, synchronously; the reply goes to out (out_cap bytes). */
const char *vfs_call(struct vfs *fs, uint32_t opcode, uint64_t nodeid, const void *arg,
		     uint32_t arglen, const char *name, uint32_t namelen, void *out,
		     uint32_t out_cap, struct fuse_reply *rep);

/* The operations. A FUSE error (an errno) is *error; a reply that breaks the protocol, or a
 * device that fails, the return value. */
const char *vfs_lookup(struct vfs *fs, uint64_t parent, const char *name, uint32_t namelen,
		       struct fuse_entry_out *e, uint32_t *error);
const char *vfs_getattr(struct vfs *fs, uint64_t nodeid, struct fuse_attr_out *a, uint32_t *error);
/* OPEN (read-only) or, with dir, OPENDIR. */
const char *vfs_openfh(struct vfs *fs, uint64_t nodeid, bool dir, uint64_t *fh, uint32_t *error);
/* RELEASE or, with dir, RELEASEDIR. */
const char *vfs_release(struct vfs *fs, uint64_t nodeid, uint64_t fh, bool dir, uint32_t *error);
/* READDIR from offset into buf (cap bytes, out header included): the entries in rep. */
const char *vfs_readdir(struct vfs *fs, uint64_t nodeid, uint64_t fh, uint64_t offset, void *buf,
			uint32_t cap, struct fuse_reply *rep);

#endif
