/* The virtio core: status and feature negotiation, split virtqueues with EVENT_IDX, polling
 * or interrupt-driven completion. */
#include "boot_info.h"
#include "cmdline.h"
#include "irq.h"
#include "lib.h"
#include "tsc.h"
#include "virtio.h"
#include "x86.h"

#define PAGE		4096
#define RESET_WAIT_MS	1000
#define STATUS_POLL_MS	1 /* how often a waiting driver reads the status register (an exit) */
#define ASSUMED_TSC_KHZ 3000000

struct virtio_dev virtio_devs[VIRTIO_MAX_DEVS];
unsigned virtio_ndevs;

/* Rings: 3 pages (desc, avail, used) per queue; not zeroed at start-up, virtq setup does it. */
static uint8_t ring_pool[VIRTIO_MAX_DEVS][VIRTIO_MAX_QUEUES][3 * PAGE]
    __attribute__((aligned(PAGE), section(".noinit")));

static const char *virtq_poll(struct virtq *vq, uint16_t *id, uint32_t *len, unsigned timeout_ms);

static inline void mb(void)
{
	__asm__ volatile("mfence" : : : "memory");
}

uint64_t virtio_ms_to_cycles(unsigned ms)
{
	uint32_t khz = tsc_khz();
	return (uint64_t)(khz ? khz : ASSUMED_TSC_KHZ) * ms;
}

uint64_t virtio_cycles_to_us(uint64_t cycles)
{
	uint32_t khz = tsc_khz();
	return cycles * 1000 / (khz ? khz : ASSUMED_TSC_KHZ);
}

struct virtio_dev *virtio_add_dev(void)
{
	if (virtio_ndevs == VIRTIO_MAX_DEVS)
		return 0;
	struct virtio_dev *d = &virtio_devs[virtio_ndevs];
	memset(d, 0, sizeof(*d));
	d->ring_mem = ring_pool[virtio_ndevs];
	virtio_ndevs++;
	return d;
}

void virtio_discover(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	virtio_mmio_discover();
	virtio_pci_discover();
}

unsigned virtio_devices_of(uint32_t device_id, struct virtio_dev **out, unsigned max)
{
	virtio_discover();
	unsigned n = 0;
	for (unsigned i = 0; i < virtio_ndevs && n < max; i++)
		if (virtio_devs[i].device_id == device_id)
			out[n++] = &virtio_devs[i];
	return n;
}

struct virtio_dev **virtio_devices_kept(struct virtio_dev_set *set, uint32_t device_id, unsigned *n)
{
	if (!set->done) {
		set->done = true;
		set->count = virtio_devices_of(device_id, set->devs, VIRTIO_MAX_DEVS);
	}
	*n = set->count;
	return set->devs;
}

const char *virtio_transport_name(const struct virtio_dev *d)
{
	return d->transport == VIRTIO_MMIO ? "mmio" : "pci";
}

uint8_t virtio_status(struct virtio_dev *d)
{
	return d->ops->get_status(d);
}

const char *virtio_reset(struct virtio_dev *d)
{
	d->ops->set_status(d, 0);
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(RESET_WAIT_MS);
	while (d->ops->get_status(d) != 0)
		if (rdtsc() - t0 > limit)
			return "virtio reset did not complete";
	return 0;
}

/* Split ring in three zeroed pages (2.7: desc 16-, avail 2-, used 4-byte aligned). */
static void virtq_setup(struct virtio_dev *d, struct virtq *vq, unsigned q, unsigned size)
{
	uint8_t *mem = (uint8_t *)d->ring_mem + q * 3 * PAGE;
	memset(mem, 0, 3 * PAGE);
	memset(vq, 0, sizeof(*vq));
	vq->dev = d;
	vq->index = (uint16_t)q;
	vq->size = (uint16_t)size;
	vq->desc = (volatile struct virtq_desc *)mem;
	vq->avail = (volatile struct virtq_avail *)(mem + PAGE);
	vq->used = (volatile struct virtq_used *)(mem + 2 * PAGE);
	vq->event_idx = d->features >> VIRTIO_RING_F_EVENT_IDX & 1;
	vq->use_irq = d->use_irq;
	for (unsigned i = 0; i < size; i++)
		vq->desc[i].next = (uint16_t)(i + 1);
	vq->num_free = (uint16_t)size;
	/* No interrupts until a waiter asks (virtq_arm). With EVENT_IDX the flag is ignored
	 * and used_event, kept far ahead of the used index (virtq_get), does the same. */
	virtq_disarm(vq);
}

bool virtio_event_idx_allowed(void)
{
	const char *v;
	size_t n;
	return !(cmdline_get(boot_info.cmdline, "virtio.event_idx", &v, &n) && n == 3 &&
		 !memcmp(v, "off", 3));
}

/* Every interrupt of a device: count it, acknowledge it at the device if the transport must. */
static void virtio_irq(void *arg)
{
	struct virtio_dev *d = arg;
	d->irqs++;
	if (d->ops->irq_ack)
		d->ops->irq_ack(d);
}

/* Vectors, once per device: the transport decides how many it needs from what is set here. */
static const char *alloc_vectors(struct virtio_dev *d)
{
	if (d->vec_cfg)
		return 0;
	irq_init();
	d->vec_cfg = irq_alloc(virtio_irq, d);
	for (unsigned q = 0; q < VIRTIO_MAX_QUEUES; q++)
		d->vec_q[q] = d->transport == VIRTIO_PCI ? irq_alloc(virtio_irq, d) : d->vec_cfg;
	for (unsigned q = 0; q < VIRTIO_MAX_QUEUES; q++)
		if (!d->vec_q[q])
			return "out of interrupt vectors";
	return d->vec_cfg ? 0 : "out of interrupt vectors";
}

const char *virtio_init(struct virtio_dev *d, uint64_t want, unsigned nqueues)
{
	const char *err;
	if (nqueues > VIRTIO_MAX_QUEUES)
		return "too many virtqueues";
	if ((err = virtio_reset(d)))
		return err;
	d->ops->set_status(d, VIRTIO_STATUS_ACKNOWLEDGE);
	d->ops->set_status(d, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	uint64_t offered = d->ops->get_features(d, 0) | (uint64_t)d->ops->get_features(d, 1) << 32;
	d->offered = offered;
	if (!(offered >> VIRTIO_F_VERSION_1 & 1)) {
		d->ops->set_status(d, VIRTIO_STATUS_FAILED);
		return "virtio device does not offer VERSION_1";
	}
	want |= 1ull << VIRTIO_F_VERSION_1;
	if (!d->no_event_idx && virtio_event_idx_allowed())
		want |= 1ull << VIRTIO_RING_F_EVENT_IDX;
	d->features = offered & want;
	d->ops->set_features(d, 0, (uint32_t)d->features);
	d->ops->set_features(d, 1, (uint32_t)(d->features >> 32));
	uint8_t s = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	d->ops->set_status(d, s);
	if (!(d->ops->get_status(d) & VIRTIO_STATUS_FEATURES_OK)) {
		d->ops->set_status(d, VIRTIO_STATUS_FAILED);
		return "virtio device rejected FEATURES_OK";
	}
	if (d->use_irq &&
	    ((err = alloc_vectors(d)) || (err = d->ops->irq_setup ? d->ops->irq_setup(d) : 0))) {
		d->ops->set_status(d, VIRTIO_STATUS_FAILED);
		return err;
	}
	for (unsigned q = 0; q < nqueues; q++) {
		unsigned max = d->ops->queue_max(d, q);
		if (!max) {
			d->ops->set_status(d, VIRTIO_STATUS_FAILED);
			return "virtqueue not available";
		}
		unsigned size = max < VIRTQ_MAX_SIZE ? max : VIRTQ_MAX_SIZE;
		virtq_setup(d, &d->vq[q], q, size);
		if ((err = d->ops->queue_enable(d, &d->vq[q]))) {
			d->ops->set_status(d, VIRTIO_STATUS_FAILED);
			return err;
		}
	}
	d->nqueues = nqueues;
	d->ops->set_status(d, s | VIRTIO_STATUS_DRIVER_OK);
	if (d->ops->get_status(d) & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
		return "virtio device needs reset after DRIVER_OK";
	return 0;
}

int virtq_add(struct virtq *vq, const struct virtq_buf *bufs, unsigned n)
{
	if (!n || n > vq->num_free)
		return -1;
	uint16_t head = vq->free_head, i = head, last = head;
	for (unsigned k = 0; k < n; k++) {
		volatile struct virtq_desc *desc = &vq->desc[i];
		desc->addr = bufs[k].addr;
		desc->len = bufs[k].len;
		desc->flags = (uint16_t)((bufs[k].write ? VIRTQ_DESC_F_WRITE : 0) |
					 (k + 1 < n ? VIRTQ_DESC_F_NEXT : 0));
		last = i;
		i = desc->next;
	}
	vq->free_head = vq->desc[last].next;
	vq->num_free = (uint16_t)(vq->num_free - n);
	virtq_publish(vq, head);
	return head;
}

void virtq_publish(struct virtq *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx % vq->size] = head;
	barrier(); /* x86 keeps stores in order: the entry is visible before the index */
	vq->avail->idx = ++vq->avail_idx;
}

/* 2.7.10: notify iff the device's avail_event lies in (old, new]. */
static bool need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

void virtq_kick(struct virtq *vq, bool force)
{
	uint16_t old = vq->kick_old, new_idx = vq->avail_idx;
	vq->kick_old = new_idx;
	mb(); /* our avail->idx store before reading the device's suppression state */
	bool need;
	if (vq->event_idx) {
		uint16_t event = *(volatile uint16_t *)((uintptr_t)vq->used + 4 + 8 * vq->size);
		need = need_event(event, new_idx, old);
	} else {
		need = !(vq->used->flags & VIRTQ_USED_F_NO_NOTIFY) && new_idx != old;
	}
	if (!need && !force)
		return;
	if (vq->notify_width == 2)
		*(volatile uint16_t *)vq->notify_addr = vq->index;
	else
		*(volatile uint32_t *)vq->notify_addr = vq->index;
	vq->kicks++;
}

bool virtq_get(struct virtq *vq, uint16_t *id, uint32_t *len, const char **err)
{
	*err = 0;
	if (vq->used->idx == vq->last_used)
		return false;
	barrier(); /* x86 keeps loads in order: the entry is read after the index */
	volatile struct virtq_used_elem *e = &vq->used->ring[vq->last_used % vq->size];
	uint32_t head = e->id;
	*len = e->len;
	vq->last_used++;
	if (vq->event_idx && !vq->use_irq)
		vq->avail->ring[vq->size] = (uint16_t)(vq->last_used + 0x7fff);
	if (head >= vq->size) {
		*err = "virtio device returned a bad descriptor id";
		return true;
	}
	*id = (uint16_t)head;
	/* Return the chain to the free list. */
	uint16_t i = (uint16_t)head, n = 1;
	while (vq->desc[i].flags & VIRTQ_DESC_F_NEXT) {
		i = vq->desc[i].next;
		if (++n > vq->size || i >= vq->size) {
			*err = "virtio descriptor chain is broken";
			return true;
		}
	}
	vq->desc[i].next = vq->free_head;
	vq->free_head = (uint16_t)head;
	vq->num_free = (uint16_t)(vq->num_free + n);
	return true;
}

void virtq_arm(struct virtq *vq, uint16_t event)
{
	if (vq->event_idx)
		vq->avail->ring[vq->size] = event;
	else
		vq->avail->flags = 0;
	mb(); /* armed before we look at used->idx again (the caller re-checks) */
}

void virtq_disarm(struct virtq *vq)
{
	if (vq->event_idx)
		vq->avail->ring[vq->size] = (uint16_t)(vq->last_used + 0x7fff);
	else
		vq->avail->flags = VIRTQ_AVAIL_F_NO_INTERRUPT;
}

const char virtq_timed_out[] = "virtio device timed out (no interrupt)";

const char *virtq_sleep(struct virtq *vq, uint16_t want, unsigned timeout_ms)
{
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(timeout_ms);
	while ((uint16_t)(vq->used->idx - vq->last_used) < want) {
		if (rdtsc() - t0 > limit)
			return virtq_timed_out;
		/* The watchdog tick (irq.c) ends a halt whose interrupt never comes; then the
		 * status register tells a dead device from a slow one. */
		uint64_t before = vq->dev->irqs;
		irq_wait();
		if (vq->dev->irqs == before && vq->used->idx == vq->last_used &&
		    virtio_status(vq->dev) & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
			return "virtio device needs reset";
	}
	return 0;
}

const char *virtq_wait(struct virtq *vq, uint16_t *id, uint32_t *len, unsigned timeout_ms)
{
	if (vq->use_irq) {
		const char *err;
		for (;;) {
			if (virtq_get(vq, id, len, &err))
				return err;
			virtq_arm(vq, vq->last_used); /* interrupt on the next used entry */
			if (vq->used->idx != vq->last_used)
				continue; /* it came while arming */
			if ((err = virtq_sleep(vq, 1, timeout_ms)))
				return err; /* else the next virtq_get() finds an entry */
		}
	}
	return virtq_poll(vq, id, len, timeout_ms);
}

/* Spin on the used ring (no exits), reading the status register once per STATUS_POLL_MS. */
static const char *virtq_poll(struct virtq *vq, uint16_t *id, uint32_t *len, unsigned timeout_ms)
{
	const char *err;
	uint64_t t0 = rdtsc(), last_check = t0;
	uint64_t limit = virtio_ms_to_cycles(timeout_ms);
	uint64_t poll = virtio_ms_to_cycles(STATUS_POLL_MS);
	for (;;) {
		if (virtq_get(vq, id, len, &err))
			return err;
		uint64_t now = rdtsc();
		if (now - last_check > poll) {
			last_check = now;
			if (virtio_status(vq->dev) & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
				return "virtio device needs reset";
		}
		if (now - t0 > limit)
			return "virtio device timed out";
		cpu_relax();
	}
}
