/* virtio-balloon (virtio 1.2, 5.5): the VMM sets a target (num_pages), the driver inflates
 * (gives pages back: the VMM releases their host memory) or deflates towards it and reports
 * `actual`; a stats queue carries the guest's memory statistics; an optional free page
 * reporting queue hands over free ranges, released too. */
#ifndef MINIVMM_VIRTIO_BALLOON_H
#define MINIVMM_VIRTIO_BALLOON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/virtio/virtio.h"

struct virtio_balloon;

/* Feature bits (5.5.3). */
#define VIRTIO_BALLOON_F_MUST_TELL_HOST 0
#define VIRTIO_BALLOON_F_STATS_VQ	1
#define VIRTIO_BALLOON_F_DEFLATE_ON_OOM 2
#define VIRTIO_BALLOON_F_REPORTING	5

/* Statistics tags (5.5.6.3). */
#define BALLOON_NR_STATS 10

#define BALLOON_PAGE_SIZE 4096u

struct balloon_options {
	bool deflate_on_oom;
	bool reporting;
};

struct balloon_info {
	uint32_t target_pages;	 /* num_pages, as set by the VMM */
	uint32_t actual_pages;	 /* actual, as written by the driver */
	uint64_t inflated_pages; /* pages the VMM holds as released (host view) */
	uint64_t inflate_pfns, deflate_pfns, invalid_pfns;
	uint64_t reported_bytes; /* released through free page reporting */
	bool deflate_on_oom, reporting;
	uint32_t stats_valid; /* bit per tag received */
	uint64_t stats[BALLOON_NR_STATS];
	uint64_t stats_updates; /* stats buffers received */
};

/* Create the device model over dev. Returns NULL (logged) on failure. */
struct virtio_balloon *virtio_balloon_create(struct virtio_dev *dev, struct guest_mem *mem,
					     struct event_loop *loop, const char *label,
					     const struct balloon_options *opts);
void virtio_balloon_destroy(struct virtio_balloon *b);
/* New target in 4 KiB pages: raises a configuration-change interrupt. Any thread. Returns 0, or
 * -1 with a reason in err (more than guest RAM). */
int virtio_balloon_set_target(struct virtio_balloon *b, uint64_t pages, char *err, size_t errlen);
void virtio_balloon_get_info(struct virtio_balloon *b, struct balloon_info *out);
/* Ask the driver for fresh statistics (returns the stats buffer). I/O thread. */
void virtio_balloon_request_stats(struct virtio_balloon *b);
/* "swap-in", "free-memory", ...: the name of a statistics tag (NULL past the known ones). */
const char *virtio_balloon_stat_name(unsigned tag);

/* The balloon's own state, as a snapshot stores it (fixed layout, no padding holes): the
 * target, the driver's `actual`, the statistics buffer the device holds (stats_head, a
 * descriptor the driver made available and gets back when fresh numbers are wanted), the
 * counters. The released pages are a separate map (virtio_balloon_map_bytes), one bit per
 * 4 KiB page of RAM; their count is the map's. */
struct virtio_balloon_state {
	uint32_t num_pages, actual;
	uint64_t inflate_pfns, deflate_pfns, invalid_pfns, reported_bytes, stats_updates;
	uint64_t stats[BALLOON_NR_STATS];
	uint32_t stats_valid;
	uint16_t stats_head;
	uint8_t stats_held, pad;
};

/* Bytes of the released-page map of a guest with ram_bytes of RAM. */
static inline uint64_t virtio_balloon_map_bytes(uint64_t ram_bytes)
{
	return (ram_bytes / BALLOON_PAGE_SIZE + 7) / 8;
}
/* Read b's state and its map (virtio_balloon_map_bytes of RAM) while the device is quiet
 * (vCPUs paused, on the I/O thread). */
void virtio_balloon_save(struct virtio_balloon *b, struct virtio_balloon_state *out, uint8_t *map);
/* After the transport's replay has set the queues up again: put the state back and hold the
 * statistics buffer again (fresh numbers are asked for in due time). Returns 0, or -1 with a
 * one-line reason in err (a value no device could have had). */
int virtio_balloon_restore(struct virtio_balloon *b, const struct virtio_balloon_state *in,
			   const uint8_t *map, char *err, size_t errlen);
/* Once the interrupt controllers are restored: a configuration-change interrupt when the
 * target is not reached, in case the one raised before the save was lost (a spurious one is
 * harmless, a lost one leaves the balloon where it was). */
void virtio_balloon_resignal(struct virtio_balloon *b);

#endif
