/*
 * A virtio-balloon driver for the probe (virtio 1.2, 5.5): inflate, deflate and stats queues,
 * plus free page reporting when asked; it accepts VIRTIO_BALLOON_F_DEFLATE_ON_OOM when offered.
 * It sets up its own queues (the core's device record holds two) and polls: no interrupts.
 */
#ifndef VIRTIO_BALLOON_H
#define VIRTIO_BALLOON_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio.h"

#define VIRTIO_ID_BALLOON		5
#define VIRTIO_BALLOON_F_STATS_VQ	1
#define VIRTIO_BALLOON_F_DEFLATE_ON_OOM 2
#define VIRTIO_BALLOON_F_REPORTING	5

#define BALLOON_Q_INFLATE   0
#define BALLOON_Q_DEFLATE   1
#define BALLOON_Q_STATS	    2
#define BALLOON_Q_REPORTING 3
#define BALLOON_MAX_QUEUES  4

/* Statistics tags (5.5.6.3). */
#define BALLOON_STAT_MEMFREE 4
#define BALLOON_STAT_MEMTOT  5
#define BALLOON_STAT_AVAIL   6

struct balloon {
	struct virtio_dev *d;
	uint64_t offered, features;
	unsigned nq;
	struct virtq vq[BALLOON_MAX_QUEUES];
};

/* Reset and initialise d; want_reporting adds the reporting queue if offered. */
const char *balloon_init(struct balloon *b, struct virtio_dev *d, bool want_reporting);
/* num_pages (the target), read consistently with the configuration generation. */
uint32_t balloon_target(struct balloon *b);
void balloon_set_actual(struct balloon *b, uint32_t pages);
/* Send n (<= 256) PFNs on the inflate or deflate queue and wait until the device used them. */
const char *balloon_send_pfns(struct balloon *b, unsigned q, const uint32_t *pfns, unsigned n);
/*
 * Out of memory: give back n (<= 256) of the balloon's *have pages, pfns[], although the target
 * may ask for more. Only with VIRTIO_BALLOON_F_DEFLATE_ON_OOM negotiated (5.5.6.1: without it
 * the driver MUST NOT use pages from the balloon below num_pages); the device is told on the
 * deflate queue and has acknowledged before this returns (the pages may then be used), and
 * `actual` is *have - n. Returns an error, and deflates nothing, without the feature.
 */
const char *balloon_deflate_on_oom(struct balloon *b, const uint32_t *pfns, unsigned n,
				   uint64_t *have);

static inline bool balloon_may_deflate_on_oom(const struct balloon *b)
{
	return b->features >> VIRTIO_BALLOON_F_DEFLATE_ON_OOM & 1;
}

#endif
