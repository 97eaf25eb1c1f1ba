/* Split virtqueues, device side (virtio 1.2, 2.7). Every value read from the rings is guest
 * controlled: indices are range-checked, chains are length-bounded, and every buffer goes through
 * guest_mem_ptr() before the device may touch it. */
#include "devices/virtio/virtqueue.h"

#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Ring layout. Fields are little-endian (virtio 1.x); the le/htole conversions are no-ops on x86
 * but keep the byte order explicit. */
#define AVAIL_FLAGS 0 /* u16 index into vq->avail */
#define AVAIL_IDX   1
#define AVAIL_RING  2
#define USED_FLAGS  0 /* byte offsets into vq->used */
#define USED_IDX    2
#define USED_RING   4
#define USED_ELEM   8 /* struct virtq_used_elem {le32 id; le32 len;} */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
						      ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static inline volatile uint16_t *used_u16(const struct virtqueue *vq, size_t off)
{
	return (volatile uint16_t *)(vq->used + off);
}

/* The guest's avail->idx. Acquire: ring entries and descriptors it publishes are read after. */
static inline uint16_t avail_idx(const struct virtqueue *vq)
{
	return le16toh(__atomic_load_n(&vq->avail[AVAIL_IDX], __ATOMIC_ACQUIRE));
}

static inline void set_avail_event(struct virtqueue *vq, uint16_t val)
{
	*used_u16(vq, USED_RING + (size_t)USED_ELEM * vq->size) = htole16(val);
}

/* Copy one descriptor out of guest memory exactly once. The compiler barrier forbids re-reading
 * the guest's copy later (which the guest may have changed after validation); memcpy also copes
 * with indirect tables that are not 8-byte aligned. */
static inline void load_desc(struct virtq_desc *d, const void *src)
{
	memcpy(d, src, sizeof(*d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	d->addr = le64toh(d->addr);
	d->len = le32toh(d->len);
	d->flags = le16toh(d->flags);
	d->next = le16toh(d->next);
}

int virtqueue_enable(struct virtqueue *vq, const struct guest_mem *mem, char *err, size_t errlen)
{
	uint16_t n = vq->size;

	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	if (n == 0 || n > VIRTQ_MAX_SIZE || (n & (n - 1)))
		return fail(err, errlen, "queue size %u is not a power of two in 1..%u", n,
			    VIRTQ_MAX_SIZE);
	if (vq->desc_gpa % 16)
		return fail(err, errlen, "descriptor table 0x%llx is not 16-byte aligned",
			    (unsigned long long)vq->desc_gpa);
	if (vq->avail_gpa % 2)
		return fail(err, errlen, "available ring 0x%llx is not 2-byte aligned",
			    (unsigned long long)vq->avail_gpa);
	if (vq->used_gpa % 4)
		return fail(err, errlen, "used ring 0x%llx is not 4-byte aligned",
			    (unsigned long long)vq->used_gpa);

	/* Sizes include the trailing event fields whether or not EVENT_IDX is negotiated. */
	uint64_t desc_len = 16ULL * n, avail_len = 6 + 2ULL * n, used_len = 6 + 8ULL * n;
	void *desc = guest_mem_ptr(mem, vq->desc_gpa, desc_len);
	if (!desc)
		return fail(err, errlen, "descriptor table 0x%llx +%llu outside guest RAM",
			    (unsigned long long)vq->desc_gpa, (unsigned long long)desc_len);
	void *avail = guest_mem_ptr(mem, vq->avail_gpa, avail_len);
	if (!avail)
		return fail(err, errlen, "available ring 0x%llx +%llu outside guest RAM",
			    (unsigned long long)vq->avail_gpa, (unsigned long long)avail_len);
	void *used = guest_mem_ptr(mem, vq->used_gpa, used_len);
	if (!used)
		return fail(err, errlen, "used ring 0x%llx +%llu outside guest RAM",
			    (unsigned long long)vq->used_gpa, (unsigned long long)used_len);

	vq->mem = mem;
	vq->desc = desc;
	vq->avail = avail;
	vq->used = used;
	/* Both sides start at index 0 (2.7.13); the driver zeroed the rings. */
	vq->last_avail_idx = 0;
	vq->used_idx = 0;
	vq->signalled_used = 0;
	vq->signalled_used_valid = false;
	vq->notifications_off = false;
	return 0;
}

void virtqueue_reset(struct virtqueue *vq)
{
	uint16_t size = vq->size;
	bool event_idx = vq->event_idx, indirect = vq->indirect;

	memset(vq, 0, sizeof(*vq));
	vq->size = size;
	vq->event_idx = event_idx;
	vq->indirect = indirect;
}

/* State of one chain walk: the out-before-in rule spans the direct chain and its indirect table. */
struct walk {
	struct virtq_elem *elem;
	uint64_t out_len, in_len;
	bool seen_in;
};

static int add_buffer(const struct virtqueue *vq, struct walk *w, const struct virtq_desc *d,
		      char *err, size_t errlen)
{
	struct virtq_elem *e = w->elem;
	bool writable = d->flags & VIRTQ_DESC_F_WRITE;

	if (!writable && w->seen_in)
		return fail(err, errlen,
			    "chain %u: device-readable buffer 0x%llx after a device-writable one",
			    e->head, (unsigned long long)d->addr);
	w->seen_in |= writable;
	if (d->len == 0)
		return 0; /* nothing to transfer, and no address to trust */

	void *p = guest_mem_ptr(vq->mem, d->addr, d->len);
	if (!p)
		return fail(err, errlen, "chain %u: buffer 0x%llx +%u outside guest RAM", e->head,
			    (unsigned long long)d->addr, d->len);
	/* Each total is capped at UINT32_MAX (2.7.5: chains are under 2^32 bytes). */
	uint64_t *total = writable ? &w->in_len : &w->out_len;
	*total += d->len;
	if (*total > UINT32_MAX)
		return fail(err, errlen, "chain %u: total %s length exceeds 4 GiB - 1", e->head,
			    writable ? "device-writable" : "device-readable");
	unsigned *num = writable ? &e->in_num : &e->out_num;
	/* Only reachable with a direct prefix plus a full indirect table. */
	if (*num == VIRTQ_MAX_SIZE)
		return fail(err, errlen, "chain %u: more than %u %s buffers", e->head,
			    VIRTQ_MAX_SIZE, writable ? "device-writable" : "device-readable");
	struct iovec *iov = writable ? &e->in[*num] : &e->out[*num];
	iov->iov_base = p;
	iov->iov_len = d->len;
	(*num)++;
	return 0;
}

/* Walk an indirect table (2.7.5.3): translated once, its own loop bound, no nesting. */
static int walk_indirect(const struct virtqueue *vq, struct walk *w, const struct virtq_desc *ind,
			 char *err, size_t errlen)
{
	uint16_t head = w->elem->head;

	if (!vq->indirect)
		return fail(err, errlen,
			    "chain %u: indirect descriptor but VIRTIO_RING_F_INDIRECT_DESC "
			    "not negotiated",
			    head);
	if (ind->flags & VIRTQ_DESC_F_NEXT)
		return fail(err, errlen, "chain %u: descriptor has both INDIRECT and NEXT", head);
	if (ind->len == 0 || ind->len % 16 || ind->len / 16 > VIRTQ_MAX_SIZE)
		return fail(err, errlen,
			    "chain %u: indirect table length %u is not a non-zero multiple of 16 "
			    "up to %u",
			    head, ind->len, 16 * VIRTQ_MAX_SIZE);
	const uint8_t *table = guest_mem_ptr(vq->mem, ind->addr, ind->len);
	if (!table)
		return fail(err, errlen, "chain %u: indirect table 0x%llx +%u outside guest RAM",
			    head, (unsigned long long)ind->addr, ind->len);

	unsigned n = ind->len / 16, count = 0;
	uint16_t i = 0;
	for (;;) {
		struct virtq_desc d;
		if (++count > n)
			return fail(err, errlen,
				    "chain %u: indirect chain loops or exceeds its %u entries",
				    head, n);
		load_desc(&d, table + 16 * (size_t)i);
		if (d.flags & VIRTQ_DESC_F_INDIRECT)
			return fail(err, errlen, "chain %u: nested indirect descriptor", head);
		if (add_buffer(vq, w, &d, err, errlen))
			return -1;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= n)
			return fail(err, errlen,
				    "chain %u: indirect next %u >= indirect table size %u", head,
				    d.next, n);
		i = d.next;
	}
}

static int walk_chain(const struct virtqueue *vq, struct walk *w, char *err, size_t errlen)
{
	const uint8_t *table = (const uint8_t *)vq->desc;
	uint16_t i = w->elem->head;
	unsigned count = 0;

	for (;;) {
		struct virtq_desc d;
		/* A chain visits each descriptor at most once: more steps than size means a loop.
		 */
		if (++count > vq->size)
			return fail(err, errlen,
				    "chain %u: descriptor chain loops or exceeds queue size %u",
				    w->elem->head, vq->size);
		load_desc(&d, table + 16 * (size_t)i);
		/* An indirect descriptor ends the chain (zero or more direct ones may precede it).
		 */
		if (d.flags & VIRTQ_DESC_F_INDIRECT)
			return walk_indirect(vq, w, &d, err, errlen);
		if (add_buffer(vq, w, &d, err, errlen))
			return -1;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= vq->size)
			return fail(err, errlen,
				    "chain %u: descriptor %u: next %u >= queue size %u",
				    w->elem->head, i, d.next, vq->size);
		i = d.next;
	}
}

int virtqueue_pop(struct virtqueue *vq, struct virtq_elem *elem, char *err, size_t errlen)
{
	if (!vq->avail)
		return 0; /* a kick on a queue that is not enabled: nothing to do */

	uint16_t idx = avail_idx(vq);
	if (idx == vq->last_avail_idx) {
		if (!vq->event_idx || vq->notifications_off)
			return 0;
		/* Ring drained with kicks wanted: ask for one when the next entry is published,
		 * then look again, since the driver may have added it before seeing our request. */
		set_avail_event(vq, vq->last_avail_idx);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		idx = avail_idx(vq);
		if (idx == vq->last_avail_idx)
			return 0;
	}
	uint16_t pending = (uint16_t)(idx - vq->last_avail_idx);
	if (pending > vq->size)
		return fail(err, errlen, "available index jumped by %u > queue size %u", pending,
			    vq->size);

	uint16_t slot = vq->last_avail_idx & (vq->size - 1);
	uint16_t head = le16toh(vq->avail[AVAIL_RING + slot]);
	if (head >= vq->size)
		return fail(err, errlen, "available ring entry %u: head %u >= queue size %u", slot,
			    head, vq->size);

	elem->head = head;
	elem->out_num = elem->in_num = 0;
	struct walk w = {.elem = elem};
	if (walk_chain(vq, &w, err, errlen))
		return -1;
	elem->out_len = w.out_len;
	elem->in_len = w.in_len;
	vq->last_avail_idx++;
	return 1;
}

void virtqueue_unpop(struct virtqueue *vq)
{
	vq->last_avail_idx--;
}

void virtqueue_push(struct virtqueue *vq, uint16_t head, uint32_t len)
{
	if (!vq->used)
		return;
	size_t off = USED_RING + (size_t)USED_ELEM * (vq->used_idx & (vq->size - 1));
	volatile uint32_t *e = (volatile uint32_t *)(vq->used + off);
	e[0] = htole32(head);
	e[1] = htole32(len);
	vq->used_idx++;
	/* The entry must be visible before the index that publishes it. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(used_u16(vq, USED_IDX), htole16(vq->used_idx), __ATOMIC_RELAXED);
}

bool virtqueue_should_notify(struct virtqueue *vq)
{
	if (!vq->avail)
		return false;
	/* Our used->idx store must be visible before we read the driver's suppression state
	 * (store-load order: a full fence), or driver and device can both miss the update. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->event_idx)
		return !(le16toh(vq->avail[AVAIL_FLAGS]) & VIRTQ_AVAIL_F_NO_INTERRUPT);

	uint16_t used_event = le16toh(vq->avail[AVAIL_RING + vq->size]);
	uint16_t old = vq->signalled_used;
	bool valid = vq->signalled_used_valid;
	/* Remember where this check stood, so the next one asks about (old, new] only. */
	vq->signalled_used = vq->used_idx;
	vq->signalled_used_valid = true;
	return !valid || virtq_need_event(used_event, vq->used_idx, old);
}

bool virtqueue_set_notification(struct virtqueue *vq, bool enable)
{
	if (!vq->used)
		return false;
	vq->notifications_off = !enable;
	if (!vq->event_idx)
		*used_u16(vq, USED_FLAGS) = htole16(enable ? 0 : VIRTQ_USED_F_NO_NOTIFY);
	else if (enable)
		set_avail_event(vq, vq->last_avail_idx);
	/* With EVENT_IDX, disabling just leaves avail_event behind: the driver stops kicking once
	 * it has passed it. */
	if (!enable)
		return false;
	/* The driver may have added buffers before it saw kicks re-enabled: look again. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return avail_idx(vq) != vq->last_avail_idx;
}

bool virtqueue_has_work(struct virtqueue *vq)
{
	return vq->avail && avail_idx(vq) != vq->last_avail_idx;
}

uint16_t virtqueue_avail_idx(const struct virtqueue *vq)
{
	return vq->avail ? avail_idx(vq) : 0;
}

void virtqueue_suppress_kicks(struct virtqueue *vq)
{
	if (!vq->used)
		return;
	vq->notifications_off = true;
	if (!vq->event_idx)
		*used_u16(vq, USED_FLAGS) = htole16(VIRTQ_USED_F_NO_NOTIFY);
	else
		set_avail_event(vq, (uint16_t)(vq->last_avail_idx - 1));
}
