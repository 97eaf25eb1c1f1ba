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

#endif
