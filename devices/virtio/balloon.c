#include "balloon.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/event_loop.h"
#include "base/log.h"

#define BALLOON_QUEUE_SIZE 256
#define Q_INFLATE	   0
#define Q_DEFLATE	   1
#define Q_STATS		   2
#define Q_REPORTING	   3 /* FREE_PAGE_HINT is never offered, so reporting comes next */

#define CONFIG_NUM_PAGES 0
#define CONFIG_ACTUAL	 4
#define CONFIG_SIZE	 8

/* Fresh statistics are asked for this often while the driver answers. */
#define STATS_INTERVAL_NS 1000000000ULL
#define STAT_ENTRY_SIZE	  10 /* le16 tag, le64 value, packed */
/* Entries read from one statistics buffer; the rest is ignored (there are 10 tags today). */
#define STATS_MAX_ENTRIES 64
/* Largest inflate/deflate buffer taken: Linux sends at most 256 PFNs (1 KiB) at a time; a
 * bigger one (a chain may describe 4 GiB) is a protocol violation, not work to do. */
#define PFN_BUFFER_MAX 4096
/* PFNs handled per pass over the queues before the I/O thread looks at other work; the
 * device lock, which vCPUs need for transport registers, is held for one pass. */
#define PASS_PFNS 8192
#define PFN_NONE  UINT32_MAX /* 16 TiB: beyond any guest's RAM (1 TiB at most) */

struct virtio_balloon {
	struct virtio_dev *dev;
	struct guest_mem *mem;
	struct virtq_elem *elem;
	uint32_t *pfns;	    /* PFN_BUFFER_MAX entries: one buffer, copied out of guest memory */
	unsigned pass_pfns; /* PFNs handled in the current pass */
	struct bottom_half more; /* continue a long ring drain */
	struct event_timer stats_timer;
	bool stats_timer_ok;
	bool reporting;
	/* Queue state: I/O thread, under dev->lock. */
	bool stats_held; /* the driver's stats buffer is with us (stats_head) */
	uint16_t stats_head;
	bool warned_madvise;
	/* Everything below: under lock (config accesses come from vCPU threads). */
	pthread_mutex_t lock;
	uint32_t num_pages, actual;
	uint8_t *inflated; /* bitmap, one bit per 4 KiB page of guest RAM (host offset) */
	uint64_t nr_pages;
	struct balloon_info info;
};

static const char *const stat_names[BALLOON_NR_STATS] = {
    "swap-in",	    "swap-out",		"major-faults", "minor-faults",	       "free-memory",
    "total-memory", "available-memory", "disk-caches",	"hugetlb-allocations", "hugetlb-failures",
};

const char *virtio_balloon_stat_name(unsigned tag)
{
	return tag < BALLOON_NR_STATS ? stat_names[tag] : NULL;
}

/* ---- inflate, deflate, reporting: I/O thread, dev->lock held ---- */

static void release(struct virtio_balloon *b, uint8_t *start, size_t len)
{
	if (len && guest_mem_release(b->mem, start, len) < 0 && !b->warned_madvise) {
		b->warned_madvise = true;
		log_warn("%s: giving memory back (madvise): %s", b->dev->label, strerror(errno));
	}
}

/* Record one PFN in the bitmap and counters; returns its host address when it is a page of
 * guest RAM (to release), NULL otherwise. b->lock held. */
static uint8_t *pfn_account(struct virtio_balloon *b, uint32_t pfn, bool inflate)
{
	uint8_t *p = guest_mem_ptr(b->mem, (uint64_t)pfn * BALLOON_PAGE_SIZE, BALLOON_PAGE_SIZE);
	if (inflate)
		b->info.inflate_pfns++;
	else
		b->info.deflate_pfns++;
	if (!p) {
		b->info.invalid_pfns++;
		return NULL;
	}
	uint64_t page = (uint64_t)(p - b->mem->mapping) / BALLOON_PAGE_SIZE;
	uint8_t bit = (uint8_t)(1u << (page % 8));
	bool was = b->inflated[page / 8] & bit;
	if (inflate && !was) {
		b->inflated[page / 8] |= bit;
		b->info.inflated_pages++;
	} else if (!inflate && was) {
		b->inflated[page / 8] &= (uint8_t)~bit;
		b->info.inflated_pages--;
	}
	return p;
}

/* Copy len bytes starting at the beginning of the chain's readable buffers into dst. */
static void copy_out(const struct virtq_elem *e, uint8_t *dst, size_t len)
{
	size_t done = 0;
	for (unsigned i = 0; i < e->out_num && done < len; i++) {
		size_t n = e->out[i].iov_len < len - done ? e->out[i].iov_len : len - done;
		memcpy(dst + done, e->out[i].iov_base, n);
		done += n;
	}
}

/* One inflate or deflate buffer: an array of le32 PFNs, possibly split across descriptors.
 * Copied out once (the guest may rewrite it meanwhile), accounted under b->lock, then the
 * inflated pages are released outside it, adjacent pages as one range. */
static const char *pfn_buffer(struct virtio_balloon *b, bool inflate)
{
	struct virtq_elem *e = b->elem;
	if (e->out_len % 4)
		return "balloon PFN buffer is not a multiple of 4 bytes";
	if (e->out_len > PFN_BUFFER_MAX * 4)
		return "balloon PFN buffer holds more than 4096 PFNs";
	unsigned n = (unsigned)(e->out_len / 4);
	copy_out(e, (uint8_t *)b->pfns, e->out_len);
	pthread_mutex_lock(&b->lock);
	for (unsigned i = 0; i < n; i++) {
		uint32_t pfn = le32toh(b->pfns[i]);
		uint8_t *p = pfn_account(b, pfn, inflate);
		/* Reuse the slot for what to release; no page of RAM has PFN_NONE. */
		b->pfns[i] = inflate && p ? pfn : PFN_NONE;
	}
	pthread_mutex_unlock(&b->lock);
	b->pass_pfns += n;
	if (!inflate)
		return NULL;
	/* Released again even if already inflated: harmless, and the guest may have touched it. */
	uint8_t *start = NULL;
	size_t len = 0;
	for (unsigned i = 0; i < n; i++) {
		if (b->pfns[i] == PFN_NONE)
			continue;
		uint8_t *p = guest_mem_ptr(b->mem, (uint64_t)b->pfns[i] * BALLOON_PAGE_SIZE,
					   BALLOON_PAGE_SIZE);
		if (start && start + len == p) {
			len += BALLOON_PAGE_SIZE;
			continue;
		}
		release(b, start, len);
		start = p;
		len = BALLOON_PAGE_SIZE;
	}
	release(b, start, len);
	return NULL;
}

/* Free page reporting: every buffer is a free range of guest RAM (already checked to lie in
 * RAM by virtqueue_pop); release the whole pages inside it. A report larger than guest RAM
 * (one range described over and over) is refused before any work is done. */
static const char *report_buffer(struct virtio_balloon *b)
{
	struct virtq_elem *e = b->elem;
	if (e->in_len + e->out_len > b->mem->ram_size)
		return "free page report larger than guest RAM";
	uint64_t reported = 0;
	for (unsigned k = 0; k < e->in_num + e->out_num; k++) {
		const struct iovec *iov = k < e->in_num ? &e->in[k] : &e->out[k - e->in_num];
		uintptr_t s = (uintptr_t)iov->iov_base, end = s + iov->iov_len;
		uintptr_t lo = (s + BALLOON_PAGE_SIZE - 1) & ~(uintptr_t)(BALLOON_PAGE_SIZE - 1);
		uintptr_t hi = end & ~(uintptr_t)(BALLOON_PAGE_SIZE - 1);
		if (hi <= lo)
			continue;
		release(b, (uint8_t *)lo, hi - lo);
		reported += hi - lo;
	}
	b->pass_pfns += (unsigned)(reported / BALLOON_PAGE_SIZE);
	pthread_mutex_lock(&b->lock);
	b->info.reported_bytes += reported;
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* Statistics: keep the latest values; hold the buffer until we want fresh ones. The first
 * STATS_MAX_ENTRIES entries are copied out and parsed; b->lock (which vCPUs reading the config
 * space take) is held only to store them. */
static void stats_buffer(struct virtio_balloon *b)
{
	struct virtq_elem *e = b->elem;
	uint8_t raw[STATS_MAX_ENTRIES * STAT_ENTRY_SIZE];
	size_t len = e->out_len < sizeof(raw) ? e->out_len : sizeof(raw);
	copy_out(e, raw, len);
	pthread_mutex_lock(&b->lock);
	for (size_t at = 0; at + STAT_ENTRY_SIZE <= len; at += STAT_ENTRY_SIZE) {
		const uint8_t *entry = raw + at;
		unsigned tag = (unsigned)entry[0] | (unsigned)entry[1] << 8;
		uint64_t val = 0;
		for (int j = 7; j >= 0; j--)
			val = val << 8 | entry[2 + j];
		if (tag < BALLOON_NR_STATS) { /* unknown tags are ignored (5.5.6.3) */
			b->info.stats[tag] = val;
			b->info.stats_valid |= 1u << tag;
		}
	}
	b->info.stats_updates++;
	pthread_mutex_unlock(&b->lock);
}

/* Serve at most one ring's worth per queue, and PASS_PFNS pages, per call; a bottom half
 * continues. */
static void process(struct virtio_balloon *b, int q)
{
	struct virtio_dev *dev = b->dev;
	struct virtqueue *vq = &dev->vqs[q];
	char err[160];
	bool pushed = false;
	if (q != Q_DEFLATE)
		guest_mem_stop_populate(b->mem); /* never fault released pages back in */
	for (unsigned n = 0; n < vq->size && b->pass_pfns < PASS_PFNS; n++) {
		if (q == Q_STATS && b->stats_held)
			break; /* the driver has one stats buffer in flight at a time */
		int rc = virtqueue_pop(vq, b->elem, err, sizeof(err));
		if (rc < 0) {
			virtio_dev_mark_broken(dev, err);
			return;
		}
		if (rc == 0)
			break;
		if (q == Q_STATS) {
			stats_buffer(b);
			b->stats_held = true;
			b->stats_head = b->elem->head;
			if (b->stats_timer_ok)
				event_timer_arm(&b->stats_timer, STATS_INTERVAL_NS);
			continue;
		}
		const char *bad =
		    q == Q_REPORTING ? report_buffer(b) : pfn_buffer(b, q == Q_INFLATE);
		if (bad) {
			virtio_dev_mark_broken(dev, bad);
			return;
		}
		virtqueue_push(vq, b->elem->head, 0);
		pushed = true;
	}
	if (pushed)
		virtio_dev_notify_used(dev, q);
	if (virtqueue_has_work(vq) && !(q == Q_STATS && b->stats_held))
		bottom_half_schedule(dev->loop, &b->more);
}

static void queue_notify(struct virtio_dev *dev, int q)
{
	struct virtio_balloon *b = dev->priv;
	b->pass_pfns = 0;
	if (q >= 0 && q < dev->nr_queues)
		process(b, q);
}

static bool live(struct virtio_dev *dev)
{
	return virtio_dev_live(dev);
}

static void continue_drain(void *opaque)
{
	struct virtio_balloon *b = opaque;
	struct virtio_dev *dev = b->dev;
	virtio_dev_lock(dev);
	b->pass_pfns = 0;
	for (int q = 0; q < dev->nr_queues && live(dev); q++)
		if (dev->vqs[q].desc)
			process(b, q);
	virtio_dev_unlock(dev);
}

void virtio_balloon_request_stats(struct virtio_balloon *b)
{
	struct virtio_dev *dev = b->dev;
	virtio_dev_lock(dev);
	if (b->stats_held && live(dev) && dev->vqs[Q_STATS].desc) {
		b->stats_held = false;
		virtqueue_push(&dev->vqs[Q_STATS], b->stats_head, 0);
		virtio_dev_notify_used(dev, Q_STATS);
	}
	virtio_dev_unlock(dev);
}

static void stats_tick(void *opaque)
{
	virtio_balloon_request_stats(opaque);
}

/* ---- config space and lifecycle ---- */

static void read_config(struct virtio_dev *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	struct virtio_balloon *b = dev->priv;
	uint8_t cfg[CONFIG_SIZE];
	pthread_mutex_lock(&b->lock);
	for (int i = 0; i < 4; i++) {
		cfg[CONFIG_NUM_PAGES + i] = (uint8_t)(b->num_pages >> (8 * i));
		cfg[CONFIG_ACTUAL + i] = (uint8_t)(b->actual >> (8 * i));
	}
	pthread_mutex_unlock(&b->lock);
	memcpy(data, cfg + offset, len); /* offset + len <= CONFIG_SIZE: checked by the transport */
}

static void write_config(struct virtio_dev *dev, uint32_t offset, const uint8_t *data, uint32_t len)
{
	struct virtio_balloon *b = dev->priv;
	/* Only `actual` belongs to the driver; bytes of num_pages are ignored. */
	pthread_mutex_lock(&b->lock);
	for (uint32_t i = 0; i < len; i++) {
		uint32_t at = offset + i;
		if (at < CONFIG_ACTUAL || at >= CONFIG_ACTUAL + 4)
			continue;
		unsigned shift = 8 * (at - CONFIG_ACTUAL);
		b->actual = (b->actual & ~(0xffu << shift)) | (uint32_t)data[i] << shift;
	}
	b->info.actual_pages = b->actual;
	pthread_mutex_unlock(&b->lock);
}

/* Driver reset (vCPU thread, dev->lock held): the balloon is empty again, from the guest's
 * point of view; released pages simply refault as zeros. */
static void reset(struct virtio_dev *dev)
{
	struct virtio_balloon *b = dev->priv;
	b->stats_held = false;
	pthread_mutex_lock(&b->lock);
	b->actual = 0;
	b->info.actual_pages = 0;
	b->info.inflated_pages = 0;
	memset(b->inflated, 0, (size_t)((b->nr_pages + 7) / 8));
	pthread_mutex_unlock(&b->lock);
}

static const struct virtio_device_ops balloon_ops = {
    .name = "virtio-balloon",
    .device_id = VIRTIO_ID_BALLOON,
    .max_queue_size = BALLOON_QUEUE_SIZE,
    .config_size = CONFIG_SIZE,
    .read_config = read_config,
    .write_config = write_config,
    .reset = reset,
    .queue_notify = queue_notify,
};

struct virtio_balloon *virtio_balloon_create(struct virtio_dev *dev, struct guest_mem *mem,
					     struct event_loop *loop, const char *label,
					     const struct balloon_options *opts)
{
	struct virtio_balloon *b = calloc(1, sizeof(*b));
	if (!b)
		goto oom;
	b->elem = malloc(sizeof(*b->elem));
	b->pfns = malloc(PFN_BUFFER_MAX * sizeof(*b->pfns));
	b->nr_pages = mem->ram_size / BALLOON_PAGE_SIZE;
	b->inflated = calloc(1, (size_t)((b->nr_pages + 7) / 8));
	if (!b->elem || !b->pfns || !b->inflated)
		goto oom;
	b->dev = dev;
	b->mem = mem;
	b->reporting = opts->reporting;
	pthread_mutex_init(&b->lock, NULL);
	b->info.deflate_on_oom = opts->deflate_on_oom;
	b->info.reporting = opts->reporting;
	bottom_half_init(&b->more, continue_drain, b);
	b->stats_timer_ok = event_timer_init(loop, &b->stats_timer, stats_tick, b) == 0;
	/* The reporting queue exists only when reporting is offered. */
	const struct virtio_dev_params params = {
	    .features = (1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
			(1ULL << VIRTIO_BALLOON_F_STATS_VQ) |
			(opts->deflate_on_oom ? 1ULL << VIRTIO_BALLOON_F_DEFLATE_ON_OOM : 0) |
			(opts->reporting ? 1ULL << VIRTIO_BALLOON_F_REPORTING : 0),
	    .nr_queues = opts->reporting ? 4 : 3,
	};
	virtio_dev_init(dev, &balloon_ops, &params, b, mem, loop, label);
	return b;
oom:
	if (b) {
		free(b->elem);
		free(b->pfns);
		free(b->inflated);
	}
	free(b);
	log_error("%s: out of memory", label);
	return NULL;
}

void virtio_balloon_destroy(struct virtio_balloon *b)
{
	if (!b)
		return;
	if (b->stats_timer_ok)
		event_timer_destroy(b->dev->loop, &b->stats_timer);
	pthread_mutex_destroy(&b->lock);
	free(b->inflated);
	free(b->pfns);
	free(b->elem);
	free(b);
}

int virtio_balloon_set_target(struct virtio_balloon *b, uint64_t pages, char *err, size_t errlen)
{
	if (pages > b->nr_pages) {
		snprintf(err, errlen, "balloon target %llu MiB exceeds guest RAM (%llu MiB)",
			 (unsigned long long)(pages * BALLOON_PAGE_SIZE >> 20),
			 (unsigned long long)(b->nr_pages * BALLOON_PAGE_SIZE >> 20));
		return -1;
	}
	pthread_mutex_lock(&b->lock);
	bool changed = b->num_pages != (uint32_t)pages;
	b->num_pages = (uint32_t)pages;
	b->info.target_pages = b->num_pages;
	pthread_mutex_unlock(&b->lock);
	if (!changed)
		return 0;
	struct virtio_dev *dev = b->dev;
	virtio_dev_lock(dev);
	dev->config_generation++;
	bool notify = live(dev);
	virtio_dev_unlock(dev);
	if (notify && dev->transport && dev->transport->signal_config)
		dev->transport->signal_config(dev);
	return 0;
}

void virtio_balloon_save(struct virtio_balloon *b, struct virtio_balloon_state *out, uint8_t *map)
{
	memset(out, 0, sizeof(*out));
	virtio_dev_lock(b->dev);
	out->stats_held = b->stats_held;
	out->stats_head = b->stats_held ? b->stats_head : 0;
	virtio_dev_unlock(b->dev);
	pthread_mutex_lock(&b->lock);
	out->num_pages = b->num_pages;
	out->actual = b->actual;
	out->inflate_pfns = b->info.inflate_pfns;
	out->deflate_pfns = b->info.deflate_pfns;
	out->invalid_pfns = b->info.invalid_pfns;
	out->reported_bytes = b->info.reported_bytes;
	out->stats_updates = b->info.stats_updates;
	out->stats_valid = b->info.stats_valid;
	memcpy(out->stats, b->info.stats, sizeof(out->stats));
	memcpy(map, b->inflated, (size_t)virtio_balloon_map_bytes(b->mem->ram_size));
	pthread_mutex_unlock(&b->lock);
}

/* Released pages in a map: bits past the last page of RAM do not count. */
static uint64_t map_count(const uint8_t *map, uint64_t pages)
{
	uint64_t n = 0;
	for (uint64_t i = 0; i < pages / 8; i++)
		n += (uint64_t)__builtin_popcount(map[i]);
	for (uint64_t p = pages & ~7ULL; p < pages; p++)
		n += (map[p / 8] >> (p % 8)) & 1;
	return n;
}

/* The held statistics buffer must be a descriptor of the live stats queue. dev->lock held. */
static const char *check_stats_head(struct virtio_balloon *b, const struct virtio_balloon_state *in)
{
	const struct virtqueue *vq = &b->dev->vqs[Q_STATS];
	if (in->stats_held > 1)
		return "balloon: bad statistics-buffer flag";
	if (in->stats_held && (!vq->desc || in->stats_head >= vq->size))
		return "balloon: the held statistics buffer is not in a live queue";
	return NULL;
}

int virtio_balloon_restore(struct virtio_balloon *b, const struct virtio_balloon_state *in,
			   const uint8_t *map, char *err, size_t errlen)
{
	struct virtio_dev *dev = b->dev;
	if (in->num_pages > b->nr_pages || in->stats_valid >> BALLOON_NR_STATS) {
		snprintf(err, errlen, "balloon: target or statistics out of range");
		return -1;
	}
	virtio_dev_lock(dev);
	const char *bad = check_stats_head(b, in);
	if (!bad) {
		b->stats_held = in->stats_held;
		b->stats_head = in->stats_head;
	}
	virtio_dev_unlock(dev);
	if (bad) {
		snprintf(err, errlen, "%s", bad);
		return -1;
	}
	pthread_mutex_lock(&b->lock);
	b->num_pages = in->num_pages;
	b->actual = in->actual;
	b->info.target_pages = in->num_pages;
	b->info.actual_pages = in->actual;
	b->info.inflate_pfns = in->inflate_pfns;
	b->info.deflate_pfns = in->deflate_pfns;
	b->info.invalid_pfns = in->invalid_pfns;
	b->info.reported_bytes = in->reported_bytes;
	b->info.stats_updates = in->stats_updates;
	b->info.stats_valid = in->stats_valid;
	memcpy(b->info.stats, in->stats, sizeof(b->info.stats));
	memcpy(b->inflated, map, (size_t)virtio_balloon_map_bytes(b->mem->ram_size));
	b->info.inflated_pages = map_count(map, b->nr_pages);
	pthread_mutex_unlock(&b->lock);
	if (b->stats_held && b->stats_timer_ok)
		event_timer_arm(&b->stats_timer, STATS_INTERVAL_NS);
	return 0;
}

void virtio_balloon_resignal(struct virtio_balloon *b)
{
	struct virtio_dev *dev = b->dev;
	pthread_mutex_lock(&b->lock);
	bool behind = b->num_pages != b->actual;
	pthread_mutex_unlock(&b->lock);
	virtio_dev_lock(dev);
	bool notify = behind && live(dev);
	virtio_dev_unlock(dev);
	if (notify && dev->transport && dev->transport->signal_config)
		dev->transport->signal_config(dev);
}

void virtio_balloon_get_info(struct virtio_balloon *b, struct balloon_info *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->info;
	pthread_mutex_unlock(&b->lock);
}
