/* virtio-blk request processing (virtio 1.2, 5.2.6). Every request is validated before any
 * I/O: the header must be 16 device-readable bytes, the status byte the last device-writable
 * one, the data direction must match the type, and sector + length must lie inside the image.
 * A request that fails these gets IOERR (or UNSUPP for an unknown type); only a chain without
 * any device-writable byte (nowhere to put a status) breaks the device.
 *
 * Threads and locking. Requests are popped and submitted on the I/O thread (queue_notify, with
 * dev->lock held) and their completions are taken there too (the image's completion eventfd,
 * handled under dev->lock), so dev->lock alone serialises the queue, the request pool and the
 * io_uring. Reset runs on a vCPU thread with dev->lock held (and, through the PCI config
 * window, the PCI bus lock): it must not wait for the disk (up to 256 requests of up to 4 GiB
 * each would stall the I/O thread, the control socket and every vCPU meanwhile). It only
 * disowns what is in flight: each request carries the reset epoch it was started in, and one
 * from an older epoch is released on completion without touching the guest's rings, even if
 * the driver has set the queue up again meanwhile. Until the last of them has finished, the
 * status register reads non-zero (virtio_dev_status), which is what a driver waits for before
 * it may reuse the memory those requests still read into.
 */
#include "blk.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "devices/backends/blk_io.h"
#include "base/byteorder.h"
#include "base/event_loop.h"
#include "base/log.h"

#define BLK_QUEUE_SIZE	 256
#define BLK_SECTOR	 512u
#define BLK_SEG_MAX	 (BLK_QUEUE_SIZE - 2) /* data segments per request */
#define BLK_SIZE_MAX	 (4u << 20)	      /* advisory largest segment */
#define BLK_BOUNCE_MAX	 (8u << 20) /* cache=none: largest request with unaligned buffers */
#define BLK_DWZ_MAX_SECS (1u << 22) /* discard / write zeroes: 2 GiB per request */
#define BLK_DIO_ALIGN	 512u

/* Feature bits (5.2.3). */
#define VIRTIO_BLK_F_SIZE_MAX	  1
#define VIRTIO_BLK_F_SEG_MAX	  2
#define VIRTIO_BLK_F_RO		  5
#define VIRTIO_BLK_F_BLK_SIZE	  6
#define VIRTIO_BLK_F_FLUSH	  9
#define VIRTIO_BLK_F_TOPOLOGY	  10
#define VIRTIO_BLK_F_DISCARD	  13
#define VIRTIO_BLK_F_WRITE_ZEROES 14

/* Request types and status values (5.2.6). */
#define VIRTIO_BLK_T_IN		  0
#define VIRTIO_BLK_T_OUT	  1
#define VIRTIO_BLK_T_FLUSH	  4
#define VIRTIO_BLK_T_GET_ID	  8
#define VIRTIO_BLK_T_DISCARD	  11
#define VIRTIO_BLK_T_WRITE_ZEROES 13
#define VIRTIO_BLK_S_OK		  0
#define VIRTIO_BLK_S_IOERR	  1
#define VIRTIO_BLK_S_UNSUPP	  2
#define VIRTIO_BLK_DWZ_F_UNMAP	  1u

/* Configuration layout (5.2.4), little-endian, up to write_zeroes_may_unmap. */
#define CFG_CAPACITY		0
#define CFG_SIZE_MAX		8
#define CFG_SEG_MAX		12
#define CFG_BLK_SIZE		20
#define CFG_MIN_IO_SIZE		26
#define CFG_MAX_DISCARD_SECTORS 36
#define CFG_MAX_DISCARD_SEG	40
#define CFG_DISCARD_ALIGNMENT	44
#define CFG_MAX_WZ_SECTORS	48
#define CFG_MAX_WZ_SEG		52
#define CFG_WZ_MAY_UNMAP	56
#define BLK_CONFIG_SIZE		60

struct blk_req {
	struct virtio_blk *blk;
	uint16_t head;
	uint32_t type;
	uint8_t *status; /* the status byte, in guest memory */
	void *bounce;	 /* cache=none: aligned copy of unaligned guest buffers */
	bool zero_retry; /* WRITE_ZEROES: ZERO_RANGE unsupported, punching instead */
	unsigned niov;	 /* guest data buffers */
	struct iovec bounce_iov;
	struct blk_io io;
	uint64_t epoch; /* blk->epoch when started: older ones belong to a reset device */
	struct blk_req *next_free; /* also the link of blk->parked */
	int64_t res;		   /* parked: the result to report */
	struct iovec iov[BLK_SEG_MAX];
};

struct virtio_blk {
	struct virtio_dev *dev;
	struct event_loop *loop;
	struct event_source src;
	bool src_added;
	struct blk_image img;
	struct virtq_elem *elem; /* scratch for popping */
	struct blk_req *reqs, *free;
	unsigned inflight;
	uint64_t epoch;	  /* resets so far (64 bits: never wraps back onto a live request) */
	unsigned orphans; /* in flight from before the last reset */
	struct bottom_half more;
	/* Finished while bus mastering was off (linked by next_free, res kept): handed to the
	 * guest once it is back on, released at a reset. */
	struct blk_req *parked;
	unsigned nr_parked;
	bool stalled;  /* stopped popping: every request slot busy */
	bool dropping; /* destroy: completions are dropped, guest memory is not touched */
	bool pushed;   /* used entries added since the last notification */
	bool warned;   /* an I/O error was logged */
	uint64_t capacity;
	char serial[VIRTIO_BLK_ID_BYTES];
	uint8_t config[BLK_CONFIG_SIZE];
};

/* Copy len bytes starting skip bytes into an iovec array out to dst. */
static void iov_read(const struct iovec *iov, unsigned n, size_t skip, void *dst, size_t len)
{
	uint8_t *d = dst;
	for (unsigned i = 0; i < n && len; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t c = iov[i].iov_len - skip;
		if (c > len)
			c = len;
		memcpy(d, (uint8_t *)iov[i].iov_base + skip, c);
		d += c;
		len -= c;
		skip = 0;
	}
}

static void iov_write(const struct iovec *iov, unsigned n, const void *src, size_t len)
{
	const uint8_t *s = src;
	for (unsigned i = 0; i < n && len; i++) {
		size_t c = iov[i].iov_len < len ? iov[i].iov_len : len;
		memcpy(iov[i].iov_base, s, c);
		s += c;
		len -= c;
	}
}

/* The sub-array of iov covering [skip, skip + len) into dst; -1 if it needs more than max
 * entries. The caller has checked skip + len against the array's total. */
static int iov_slice(const struct iovec *iov, unsigned n, size_t skip, size_t len,
		     struct iovec *dst, unsigned max)
{
	unsigned out = 0;
	for (unsigned i = 0; i < n && len; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		if (out == max)
			return -1;
		size_t c = iov[i].iov_len - skip;
		if (c > len)
			c = len;
		dst[out].iov_base = (uint8_t *)iov[i].iov_base + skip;
		dst[out].iov_len = c;
		out++;
		len -= c;
		skip = 0;
	}
	return (int)out;
}

static bool iov_aligned(const struct iovec *iov, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if ((uintptr_t)iov[i].iov_base % BLK_DIO_ALIGN || iov[i].iov_len % BLK_DIO_ALIGN)
			return false;
	return true;
}

/* [sector, sector + bytes/512) inside the disk, without overflow. */
static bool in_range(const struct virtio_blk *blk, uint64_t sector, uint64_t bytes)
{
	return sector <= blk->capacity && bytes / BLK_SECTOR <= blk->capacity - sector;
}

static bool live(const struct virtio_blk *blk)
{
	const struct virtio_dev *dev = blk->dev;
	return !blk->dropping && virtio_dev_live(dev) && dev->vqs[0].used;
}

/* Live but for bus mastering, which the guest turned off: a completion must wait. */
static bool dma_held(const struct virtio_blk *blk)
{
	const struct virtio_dev *dev = blk->dev;
	return !blk->dropping && !dev->broken && !dev->dma_enabled &&
	       (dev->status & VIRTIO_STATUS_DRIVER_OK) && dev->vqs[0].used;
}

/* Finish a request that needs no I/O. */
static void complete_now(struct virtio_blk *blk, uint16_t head, uint8_t *status, uint8_t s,
			 uint32_t written)
{
	*status = s;
	virtqueue_push(&blk->dev->vqs[0], head, written + 1);
	blk->pushed = true;
}

static void release(struct virtio_blk *blk, struct blk_req *req)
{
	free(req->bounce);
	req->bounce = NULL;
	req->next_free = blk->free;
	blk->free = req;
	blk->inflight--;
}

static struct blk_req *take(struct virtio_blk *blk, uint16_t head, uint8_t *status, uint32_t type)
{
	struct blk_req *req = blk->free;
	blk->free = req->next_free;
	blk->inflight++;
	req->head = head;
	req->status = status;
	req->type = type;
	req->epoch = blk->epoch;
	req->zero_retry = false;
	req->niov = 0;
	req->bounce = NULL;
	memset(&req->io, 0, sizeof(req->io));
	return req;
}

/* T_IN / T_OUT: set up the transfer; returns a status to report now, or -1 once submitted. */
static int start_rw(struct virtio_blk *blk, const struct virtq_elem *e, uint16_t head,
		    uint8_t *status, uint32_t type, uint64_t sector)
{
	bool read = type == VIRTIO_BLK_T_IN;
	size_t len = read ? e->in_len - 1 : e->out_len - 16;
	/* Data must all go one way: a read has no readable data, a write no writable data. */
	if ((read && e->out_len != 16) || (!read && e->in_len != 1))
		return VIRTIO_BLK_S_IOERR;
	if (!read && blk->img.readonly)
		return VIRTIO_BLK_S_IOERR;
	if (len % BLK_SECTOR || !in_range(blk, sector, len))
		return VIRTIO_BLK_S_IOERR;
	if (len == 0)
		return VIRTIO_BLK_S_OK;
	struct blk_req *req = take(blk, head, status, type);
	int n = read ? iov_slice(e->in, e->in_num, 0, len, req->iov, BLK_SEG_MAX)
		     : iov_slice(e->out, e->out_num, 16, len, req->iov, BLK_SEG_MAX);
	if (n < 0)
		goto ioerr; /* more segments than seg_max */
	req->niov = (unsigned)n;
	req->io.iov = req->iov;
	req->io.iovcnt = n;
	/* O_DIRECT wants aligned memory and lengths: copy through an aligned buffer. */
	if (blk->img.direct && !iov_aligned(req->iov, req->niov)) {
		if (len > BLK_BOUNCE_MAX || posix_memalign(&req->bounce, 4096, len))
			goto ioerr;
		if (!read)
			iov_read(req->iov, req->niov, 0, req->bounce, len);
		req->bounce_iov = (struct iovec){req->bounce, len};
		req->io.iov = &req->bounce_iov;
		req->io.iovcnt = 1;
	}
	req->io.op = read ? BLK_IO_READ : BLK_IO_WRITE;
	req->io.offset = sector * BLK_SECTOR;
	req->io.len = len;
	blk_image_submit(&blk->img, &req->io);
	return -1;
ioerr:
	release(blk, req);
	return VIRTIO_BLK_S_IOERR;
}

/* T_DISCARD / T_WRITE_ZEROES with one segment {le64 sector; le32 num_sectors; le32 flags}. */
static int start_dwz(struct virtio_blk *blk, const struct virtq_elem *e, uint16_t head,
		     uint8_t *status, uint32_t type)
{
	bool discard = type == VIRTIO_BLK_T_DISCARD;
	if (!virtio_dev_has_feature(blk->dev,
				    discard ? VIRTIO_BLK_F_DISCARD : VIRTIO_BLK_F_WRITE_ZEROES))
		return VIRTIO_BLK_S_UNSUPP;
	size_t segs = e->out_len - 16;
	if (blk->img.readonly || e->in_len != 1 || segs != 16)
		return VIRTIO_BLK_S_IOERR; /* max_*_seg is 1 */
	uint8_t seg[16];
	iov_read(e->out, e->out_num, 16, seg, sizeof(seg));
	uint64_t sector = get_le64(seg);
	uint32_t num = get_le32(seg + 8), flags = get_le32(seg + 12);
	/* Unknown flags, and unmap on a discard, are refused (5.2.6.2). */
	if (flags & ~VIRTIO_BLK_DWZ_F_UNMAP || (discard && flags))
		return VIRTIO_BLK_S_UNSUPP;
	if (num > BLK_DWZ_MAX_SECS || !in_range(blk, sector, (uint64_t)num * BLK_SECTOR))
		return VIRTIO_BLK_S_IOERR;
	if (num == 0)
		return VIRTIO_BLK_S_OK;
	struct blk_req *req = take(blk, head, status, type);
	req->io.op = BLK_IO_FALLOCATE;
	req->io.mode =
	    FALLOC_FL_KEEP_SIZE | (discard ? FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE);
	req->io.offset = sector * BLK_SECTOR;
	req->io.len = (uint64_t)num * BLK_SECTOR;
	blk_image_submit(&blk->img, &req->io);
	return -1;
}

/* One popped chain. Returns 0, or -1 after marking the device broken. */
static int handle(struct virtio_blk *blk, const struct virtq_elem *e)
{
	if (!e->in_num) {
		char why[80];
		snprintf(why, sizeof(why), "request %u has no device-writable status byte",
			 e->head);
		virtio_dev_mark_broken(blk->dev, why);
		return -1;
	}
	const struct iovec *last = &e->in[e->in_num - 1];
	uint8_t *status = (uint8_t *)last->iov_base + last->iov_len - 1;
	if (e->out_len < 16) {
		/* No readable header (too short, or made writable): nothing to act on. */
		complete_now(blk, e->head, status, VIRTIO_BLK_S_IOERR, 0);
		return 0;
	}
	uint8_t hdr[16];
	iov_read(e->out, e->out_num, 0, hdr, sizeof(hdr));
	uint32_t type = get_le32(hdr);
	uint64_t sector = get_le64(hdr + 8);
	int s;
	uint32_t written = 0;
	switch (type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		s = start_rw(blk, e, e->head, status, type, sector);
		break;
	case VIRTIO_BLK_T_FLUSH:
		if (e->in_len != 1 || e->out_len != 16) {
			s = VIRTIO_BLK_S_IOERR;
		} else if (blk->img.readonly) {
			s = VIRTIO_BLK_S_OK; /* nothing was written */
		} else {
			struct blk_req *req = take(blk, e->head, status, type);
			req->io.op = BLK_IO_FLUSH;
			blk_image_submit(&blk->img, &req->io);
			s = -1;
		}
		break;
	case VIRTIO_BLK_T_GET_ID:
		written = e->in_len - 1 < VIRTIO_BLK_ID_BYTES ? (uint32_t)e->in_len - 1
							      : VIRTIO_BLK_ID_BYTES;
		iov_write(e->in, e->in_num, blk->serial, written);
		s = VIRTIO_BLK_S_OK;
		break;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		s = start_dwz(blk, e, e->head, status, type);
		break;
	default:
		s = VIRTIO_BLK_S_UNSUPP;
		break;
	}
	if (s >= 0)
		complete_now(blk, e->head, status, (uint8_t)s, s == VIRTIO_BLK_S_OK ? written : 0);
	return 0;
}

static void on_done(void *opaque, struct blk_io *io, int64_t res);
static void finish(struct virtio_blk *blk, struct blk_req *req, int64_t res);

/* Bus mastering is back on: what finished meanwhile goes to the guest now. */
static void unpark(struct virtio_blk *blk)
{
	while (blk->parked) {
		struct blk_req *req = blk->parked;
		blk->parked = req->next_free;
		blk->nr_parked--;
		finish(blk, req, req->res);
	}
}

/* A reset: the held requests belong to the old rings; they are done (not orphans). */
static void release_parked(struct virtio_blk *blk)
{
	while (blk->parked) {
		struct blk_req *req = blk->parked;
		blk->parked = req->next_free;
		release(blk, req);
	}
	blk->nr_parked = 0;
}

/* One interrupt for everything pushed since the last one. */
static void notify(struct virtio_blk *blk)
{
	if (blk->pushed && !blk->dev->broken)
		virtio_dev_notify_used(blk->dev, 0);
	blk->pushed = false;
}

/* Pop and start requests until the ring is empty (re-arming EVENT_IDX kicks) or every request
 * slot is busy (resumed by the next completion). Requests served from the page cache have
 * completed by the time io_uring_enter returns: they are finished here at once, and the ring
 * looked at again, since a polling driver refills it meanwhile. After four rings' worth the
 * rest waits for a bottom half, so one disk cannot monopolise the I/O thread. Kicks cost an
 * exit each: while requests are in flight every completion brings us back here anyway, so the
 * driver is asked not to kick; once idle, kicks are asked for again (and the ring checked once
 * more for requests added before the driver saw that). One interrupt at the end, if any.
 * dev->lock held. */
static void process_queue(struct virtio_blk *blk)
{
	struct virtio_dev *dev = blk->dev;
	struct virtqueue *vq = &dev->vqs[0];
	char err[160];
	unsigned popped = 0, budget = 4u * vq->size;
	unpark(blk);
	while (!dev->broken) {
		blk->stalled = false;
		while (popped < budget) {
			if (!blk->free) {
				blk->stalled = true;
				break;
			}
			int rc = virtqueue_pop(vq, blk->elem, err, sizeof(err));
			if (rc < 0)
				virtio_dev_mark_broken(dev, err);
			if (rc <= 0 || handle(blk, blk->elem) < 0)
				break;
			popped++;
		}
		if (dev->broken) {
			/* Start what was queued before the violation: nothing else would, and a
			 * reset waits (status non-zero) for every request to end. */
			blk_image_kick(&blk->img);
			break;
		}
		blk_image_kick(&blk->img);
		if (blk_image_reap(&blk->img, on_done, blk) && popped < budget)
			continue;
		if (blk->inflight) {
			if (!vq->notifications_off)
				virtqueue_set_notification(vq, false);
			break;
		}
		if (!vq->notifications_off || !virtqueue_set_notification(vq, true) ||
		    popped >= budget)
			break;
	}
	notify(blk);
	/* More to do and no completion pending to bring us back: continue in a bottom half. */
	if (!dev->broken && (popped >= budget || !blk->inflight) && virtqueue_has_work(vq))
		bottom_half_schedule(dev->loop, &blk->more);
}

static void on_done(void *opaque, struct blk_io *io, int64_t res)
{
	struct virtio_blk *blk = opaque;
	struct blk_req *req = (struct blk_req *)((uint8_t *)io - offsetof(struct blk_req, io));
	if (req->epoch != blk->epoch) {
		/* Started before a reset: the rings it came from are gone (or set up anew). */
		release(blk, req);
		if (--blk->orphans == 0)
			virtio_dev_reset_done(blk->dev);
		return;
	}
	if (!live(blk)) {
		if (dma_held(blk)) {
			/* No write to guest memory until bus mastering is back (restart). */
			req->res = res;
			req->next_free = blk->parked;
			blk->parked = req;
			blk->nr_parked++;
			return;
		}
		release(blk, req); /* reset or broken: the guest gets nothing back */
		return;
	}
	finish(blk, req, res);
}

/* Hand a finished request to the guest (live, bus mastering on). dev->lock held. */
static void finish(struct virtio_blk *blk, struct blk_req *req, int64_t res)
{
	struct blk_io *io = &req->io;
	if (req->type == VIRTIO_BLK_T_WRITE_ZEROES && res == -EOPNOTSUPP && !req->zero_retry) {
		/* No FALLOC_FL_ZERO_RANGE here (tmpfs, some block devices): a punched hole
		 * also reads back as zeroes. */
		req->zero_retry = true;
		req->io.mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
		blk_image_submit(&blk->img, &req->io);
		return;
	}
	bool rw = io->op == BLK_IO_READ || io->op == BLK_IO_WRITE;
	bool ok = rw ? res >= 0 && (uint64_t)res == io->len : res == 0;
	uint32_t written = 0;
	if (ok && io->op == BLK_IO_READ) {
		if (req->bounce)
			iov_write(req->iov, req->niov, req->bounce, io->len);
		written = (uint32_t)io->len;
	}
	if (!ok && !blk->warned) {
		blk->warned = true; /* once: a failing disk must not flood the log */
		log_warn("%s: I/O error at byte %llu: %s; the guest gets IOERR", blk->dev->label,
			 (unsigned long long)io->offset,
			 res < 0 ? strerror((int)-res) : "short transfer");
	}
	complete_now(blk, req->head, req->status, ok ? VIRTIO_BLK_S_OK : VIRTIO_BLK_S_IOERR,
		     written);
	release(blk, req);
}

/* The image's completion eventfd (I/O thread): every finished request, one interrupt. */
static void on_completion_event(void *opaque, uint32_t events)
{
	(void)events;
	struct virtio_blk *blk = opaque;
	struct virtio_dev *dev = blk->dev;
	virtio_dev_lock(dev);
	blk_image_reap(&blk->img, on_done, blk);
	if (live(blk)) {
		if (blk->pushed)
			virtio_dev_notify_used(dev, 0);
		blk->pushed = false;
		/* Requests the driver added without kicking (see process_queue). */
		process_queue(blk);
	}
	blk->pushed = false;
	virtio_dev_unlock(dev);
}

static void continue_drain(void *opaque)
{
	struct virtio_blk *blk = opaque;
	virtio_dev_lock(blk->dev);
	if (live(blk))
		process_queue(blk);
	virtio_dev_unlock(blk->dev);
}

static void queue_notify(struct virtio_dev *dev, int q)
{
	(void)q;
	process_queue(dev->priv);
}

/* DRIVER_OK, or bus mastering back on: requests held meanwhile complete, and the ring is looked
 * at even without new buffers (its notifications may have been left off while requests were
 * in flight: process_queue turns them back on once idle). */
static void restart(struct virtio_dev *dev)
{
	struct virtio_blk *blk = dev->priv;
	if (live(blk))
		process_queue(blk);
}

/* Device reset (vCPU thread, dev->lock held): disown the requests in flight without waiting
 * for them; the last one to finish completes the reset (on_done). */
static void reset(struct virtio_dev *dev)
{
	struct virtio_blk *blk = dev->priv;
	release_parked(blk);
	blk->epoch++;
	blk->orphans = blk->inflight;
	if (blk->orphans)
		__atomic_store_n(&dev->reset_pending, true, __ATOMIC_RELEASE);
	blk->stalled = false;
	blk->pushed = false;
}

static void read_config(struct virtio_dev *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	struct virtio_blk *blk = dev->priv;
	memcpy(data, blk->config + offset, len); /* bounds checked by the transport */
}

static void build_config(struct virtio_blk *blk)
{
	uint8_t *c = blk->config;
	put_le64(c + CFG_CAPACITY, blk->capacity);
	put_le32(c + CFG_SIZE_MAX, BLK_SIZE_MAX);
	put_le32(c + CFG_SEG_MAX, BLK_SEG_MAX);
	put_le32(c + CFG_BLK_SIZE, BLK_SECTOR);
	put_le16(c + CFG_MIN_IO_SIZE, 1);
	put_le32(c + CFG_MAX_DISCARD_SECTORS, BLK_DWZ_MAX_SECS);
	put_le32(c + CFG_MAX_DISCARD_SEG, 1);
	put_le32(c + CFG_DISCARD_ALIGNMENT, 1);
	put_le32(c + CFG_MAX_WZ_SECTORS, BLK_DWZ_MAX_SECS);
	put_le32(c + CFG_MAX_WZ_SEG, 1);
	c[CFG_WZ_MAY_UNMAP] = 1;
}

static const struct virtio_device_ops blk_ops = {
    .name = "virtio-blk",
    .device_id = VIRTIO_ID_BLOCK,
    .max_queue_size = BLK_QUEUE_SIZE,
    .config_size = BLK_CONFIG_SIZE,
    .read_config = read_config,
    .reset = reset,
    .queue_notify = queue_notify,
    .restart = restart,
};

struct virtio_blk *virtio_blk_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const char *label,
				     const struct blk_options *opts)
{
	return virtio_blk_create_on(dev, mem, loop, label, opts, -1);
}

struct virtio_blk *virtio_blk_create_on(struct virtio_dev *dev, struct guest_mem *mem,
					struct event_loop *loop, const char *label,
					const struct blk_options *opts, int fd)
{
	struct virtio_blk *blk = calloc(1, sizeof(*blk));
	if (!blk) {
		if (fd >= 0)
			close(fd);
		log_error("%s: out of memory", label);
		return NULL;
	}
	blk->dev = dev;
	blk->loop = loop;
	char err[300];
	int rc = fd >= 0
		     ? blk_image_open_fd(&blk->img, fd, opts->path, opts->readonly, opts->direct,
					 !opts->no_uring, BLK_QUEUE_SIZE, err, sizeof(err))
		     : blk_image_open(&blk->img, opts->path, opts->readonly, opts->direct,
				      !opts->no_uring, BLK_QUEUE_SIZE, err, sizeof(err));
	if (rc) {
		log_error("%s: %s", label, err);
		free(blk);
		return NULL;
	}
	blk->elem = malloc(sizeof(*blk->elem));
	blk->reqs = calloc(BLK_QUEUE_SIZE, sizeof(*blk->reqs));
	if (!blk->elem || !blk->reqs) {
		log_error("%s: out of memory", label);
		goto fail;
	}
	for (int i = BLK_QUEUE_SIZE - 1; i >= 0; i--) {
		blk->reqs[i].blk = blk;
		blk->reqs[i].next_free = blk->free;
		blk->free = &blk->reqs[i];
	}
	blk->inflight = 0;
	if (event_loop_add_fd(loop, &blk->src, blk->img.efd, EPOLLIN, on_completion_event, blk)) {
		log_error("%s: cannot watch the completion eventfd", label);
		goto fail;
	}
	blk->src_added = true;
	blk->capacity = blk->img.size / BLK_SECTOR;
	memcpy(blk->serial, opts->serial, strnlen(opts->serial, VIRTIO_BLK_ID_BYTES));
	build_config(blk);
	bottom_half_init(&blk->more, continue_drain, blk);

	/* The offered features depend on readonly; blk_ops is the same for every disk. */
	const struct virtio_dev_params params = {
	    .features = (1ULL << VIRTIO_BLK_F_SIZE_MAX) | (1ULL << VIRTIO_BLK_F_SEG_MAX) |
			(1ULL << VIRTIO_BLK_F_BLK_SIZE) | (1ULL << VIRTIO_BLK_F_FLUSH) |
			(1ULL << VIRTIO_BLK_F_TOPOLOGY) | (1ULL << VIRTIO_BLK_F_DISCARD) |
			(1ULL << VIRTIO_BLK_F_WRITE_ZEROES) |
			(opts->readonly ? 1ULL << VIRTIO_BLK_F_RO : 0) |
			(1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << VIRTIO_RING_F_INDIRECT_DESC),
	    .nr_queues = 1,
	};
	virtio_dev_init(dev, &blk_ops, &params, blk, mem, loop, label);
	log_info("%s: %s, %llu sectors%s, cache=%s, %s", label, opts->path,
		 (unsigned long long)blk->capacity, opts->readonly ? ", read-only" : "",
		 opts->direct ? "none" : "writeback", blk_image_engine(&blk->img));
	return blk;
fail:
	blk_image_close(&blk->img);
	free(blk->elem);
	free(blk->reqs);
	free(blk);
	return NULL;
}

void virtio_blk_destroy(struct virtio_blk *blk)
{
	if (!blk)
		return;
	virtio_dev_lock(blk->dev);
	blk->dropping = true;
	blk_image_drain(&blk->img, on_done, blk);
	release_parked(blk);
	virtio_dev_unlock(blk->dev);
	if (blk->src_added)
		event_loop_del_fd(blk->loop, &blk->src);
	blk_image_close(&blk->img);
	free(blk->elem);
	free(blk->reqs);
	free(blk);
}

uint64_t virtio_blk_capacity(const struct virtio_blk *blk)
{
	return blk->capacity;
}

const char *virtio_blk_engine(const struct virtio_blk *blk)
{
	return blk_image_engine(&blk->img);
}

unsigned virtio_blk_inflight(const struct virtio_blk *blk)
{
	return blk->inflight;
}

unsigned virtio_blk_parked(const struct virtio_blk *blk)
{
	return blk->nr_parked;
}

void virtio_blk_quiesce(struct virtio_blk *blk)
{
	virtio_dev_lock(blk->dev);
	blk_image_drain(&blk->img, on_done, blk);
	notify(blk);
	virtio_dev_unlock(blk->dev);
}
