/* Split virtqueues (virtio 1.2, section 2.7): the device side, robust against a lying guest. */
#ifndef MINIVMM_VIRTQUEUE_H
#define MINIVMM_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/guest_mem.h"

#define VIRTQ_MAX_SIZE 1024

#define VIRTQ_DESC_F_NEXT     1
#define VIRTQ_DESC_F_WRITE    2
#define VIRTQ_DESC_F_INDIRECT 4

#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_USED_F_NO_NOTIFY	   1

/* Feature bits that concern the ring layer. */
#define VIRTIO_RING_F_INDIRECT_DESC 28
#define VIRTIO_RING_F_EVENT_IDX	    29

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

/* One popped request: the chain's buffers split into device-readable (out) and
 * device-writable (in) parts, already translated to host pointers and bounds-checked. */
struct virtq_elem {
	uint16_t head;
	unsigned out_num, in_num;
	size_t out_len, in_len; /* byte totals, never overflowing */
	struct iovec out[VIRTQ_MAX_SIZE];
	struct iovec in[VIRTQ_MAX_SIZE];
};

struct virtqueue {
	/* Set by the transport from guest register writes. */
	uint16_t size; /* power of two, 1..VIRTQ_MAX_SIZE */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	bool ready;
	bool event_idx; /* VIRTIO_RING_F_EVENT_IDX negotiated */
	bool indirect;	/* VIRTIO_RING_F_INDIRECT_DESC negotiated */
	/* Host views of the rings, validated by virtqueue_enable(). Descriptors are copied out
	 * once each (never dereferenced in place: the guest may rewrite them). */
	struct virtq_desc *desc;
	volatile uint16_t *avail; /* flags, idx, ring[size], used_event */
	volatile uint8_t *used;	  /* flags, idx, ring[size] {id, len}, avail_event */
	uint16_t last_avail_idx;  /* next avail entry the device will take */
	uint16_t used_idx;	  /* next used entry the device will fill */
	uint16_t signalled_used;  /* used_idx when the driver was last notified */
	bool signalled_used_valid;
	bool notifications_off; /* device asked the driver not to kick */
	const struct guest_mem *mem;
};

/* Validate size and ring addresses against guest memory and map the rings. Returns 0 or -1
 * with a reason in err (the device must then be marked as needing reset). */
int virtqueue_enable(struct virtqueue *vq, const struct guest_mem *mem, char *err, size_t errlen);
/* Forget the rings, their addresses and indices (device reset or queue reset). Keeps size and
 * the negotiated ring features (event_idx, indirect). */
void virtqueue_reset(struct virtqueue *vq);

/* Take the next available chain. Returns 1 with elem filled, 0 if the ring is empty, -1 if
 * the guest broke the protocol (reason in err; nothing consumed): loops, chains longer than the
 * queue, addresses outside RAM, lengths that overflow, readable after writable, bad indices,
 * nested indirect. Returns 0 on a queue that was never enabled.
 * With EVENT_IDX and notifications enabled, the pop that finds the ring empty asks the driver to
 * kick for the next entry (avail_event): pop until it returns 0 before waiting for a kick. */
int virtqueue_pop(struct virtqueue *vq, struct virtq_elem *elem, char *err, size_t errlen);
/* Put a chain back so it is popped again (e.g. no room to process it now). */
void virtqueue_unpop(struct virtqueue *vq);
/* Return a chain to the driver with len bytes written into its device-writable buffers. */
void virtqueue_push(struct virtqueue *vq, uint16_t head, uint32_t len);
/* After pushes: must the driver be interrupted? Honours NO_INTERRUPT or used_event
 * (VIRTIO_RING_F_EVENT_IDX). With EVENT_IDX it remembers used_idx at every call, so each call
 * answers for the pushes since the previous one: call it after every batch (< 65536 pushes). */
bool virtqueue_should_notify(struct virtqueue *vq);
/* Ask the driver to stop (false) or resume (true) kicking. Resuming returns true when buffers
 * became available meanwhile: the caller must then process them (avoids a lost wake-up). */
bool virtqueue_set_notification(struct virtqueue *vq, bool enable);
/* Available buffers not yet popped? */
bool virtqueue_has_work(struct virtqueue *vq);
/* The driver's avail->idx (0 on a queue that is not enabled). */
uint16_t virtqueue_avail_idx(const struct virtqueue *vq);
/* Ask the driver not to kick at all, while the device polls the ring: NO_NOTIFY, or with
 * EVENT_IDX an avail_event the driver has already passed (it then kicks only when its index
 * wraps around to it, 65536 buffers later). virtqueue_set_notification(vq, true) ends it and
 * says whether buffers came meanwhile. */
void virtqueue_suppress_kicks(struct virtqueue *vq);

/* The event-index test of virtio 1.2 2.7.10: has new_idx moved past event since old? */
static inline bool virtq_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

#endif
