/*
 * A polling virtio 1.x driver core for the probe (virtio 1.2: 2.1 status, 2.2 features,
 * 2.7 split virtqueues, 3.1 initialisation). Transports: virtio_mmio.c and virtio_pci.c.
 * No interrupts: completions are found by polling the used ring, which costs no VM exits;
 * notifications are suppressed with VIRTIO_RING_F_EVENT_IDX when the device offers it.
 */
#ifndef VIRTIO_H
#define VIRTIO_H

#include <stdbool.h>
#include <stdint.h>

/* Device status bits (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	 1
#define VIRTIO_STATUS_DRIVER		 2
#define VIRTIO_STATUS_DRIVER_OK		 4
#define VIRTIO_STATUS_FEATURES_OK	 8
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 64
#define VIRTIO_STATUS_FAILED		 128

/* Feature bits (6). */
#define VIRTIO_RING_F_INDIRECT_DESC 28
#define VIRTIO_RING_F_EVENT_IDX	    29
#define VIRTIO_F_VERSION_1	    32

#define VIRTQ_DESC_F_NEXT	   1
#define VIRTQ_DESC_F_WRITE	   2
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_USED_F_NO_NOTIFY	   1

#define VIRTIO_ID_RNG 4

#define VIRTIO_MAX_DEVS	  16
#define VIRTIO_MAX_QUEUES 2   /* per device, the probe's devices need no more */
#define VIRTQ_MAX_SIZE	  256 /* desc, avail and used each fit one 4 KiB page */

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct virtq_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* size entries, then used_event */
};

struct virtq_used_elem {
	uint32_t id;
	uint32_t len;
};

struct virtq_used {
	uint16_t flags;
	uint16_t idx;
	struct virtq_used_elem ring[]; /* size entries, then avail_event (uint16_t) */
};

struct virtio_dev;

struct virtq {
	struct virtio_dev *dev;
	uint16_t index, size;
	uint16_t free_head, num_free;
	uint16_t avail_idx; /* our copy of avail->idx */
	uint16_t kick_old;  /* avail->idx at the last notification decision */
	uint16_t last_used; /* next used->ring entry to consume */
	bool event_idx;
	volatile struct virtq_desc *desc;
	volatile struct virtq_avail *avail;
	volatile struct virtq_used *used;
	uint64_t notify_addr;
	unsigned notify_width; /* bytes: 4 (mmio) or 2 (pci) */
	uint64_t kicks;
};

/* One buffer of a chain for virtq_add(). */
struct virtq_buf {
	uint64_t addr;
	uint32_t len;
	bool write; /* device-writable */
};

enum virtio_transport { VIRTIO_MMIO, VIRTIO_PCI };

struct virtio_ops {
	uint8_t (*get_status)(struct virtio_dev *d);
	void (*set_status)(struct virtio_dev *d, uint8_t status);
	uint32_t (*get_features)(struct virtio_dev *d, unsigned word);
	void (*set_features)(struct virtio_dev *d, unsigned word, uint32_t bits);
	/* Largest size of queue q, 0 if there is no such queue (or it is already live). */
	unsigned (*queue_max)(struct virtio_dev *d, unsigned q);
	/* Tell the device where vq's rings are, enable it, and fill in vq->notify_*. */
	const char *(*queue_enable)(struct virtio_dev *d, struct virtq *vq);
};

struct virtio_dev {
	enum virtio_transport transport;
	const struct virtio_ops *ops;
	uint32_t device_id;
	/* virtio-mmio: register window and IRQ from virtio_mmio.device= */
	uint64_t base, size;
	uint32_t irq;
	/* virtio-pci: location and the structures the capabilities point at */
	uint8_t bus, slot, func;
	uint64_t common, notify, isr, devcfg;
	uint32_t notify_mult, notify_len;
	bool msix;
	unsigned msix_size;
	uint64_t features; /* negotiated */
	unsigned nqueues;
	struct virtq vq[VIRTIO_MAX_QUEUES];
	void *ring_mem; /* VIRTIO_MAX_QUEUES * 3 pages, owned by this device */
};

/* Every virtio device the transports can find, mmio first (by address), then pci (by slot). */
extern struct virtio_dev virtio_devs[VIRTIO_MAX_DEVS];
extern unsigned virtio_ndevs;
void virtio_discover(void);

/* Transport discovery: append to virtio_devs (virtio_add_dev hands out the next slot). */
struct virtio_dev *virtio_add_dev(void);
void virtio_mmio_discover(void);
void virtio_pci_discover(void);

const char *virtio_transport_name(const struct virtio_dev *d);

/*
 * Reset, negotiate (VERSION_1 required, EVENT_IDX if offered, plus `want` bits the
 * device offers), set up nqueues queues and set DRIVER_OK. Safe to repeat (re-init).
 */
const char *virtio_init(struct virtio_dev *d, uint64_t want, unsigned nqueues);
/* Write status 0 and wait (bounded) until the device reads back 0. */
const char *virtio_reset(struct virtio_dev *d);
uint8_t virtio_status(struct virtio_dev *d);

/* Queue a chain; returns its head descriptor, or -1 if there are not enough free ones. */
int virtq_add(struct virtq *vq, const struct virtq_buf *bufs, unsigned n);
/* Put a head (maybe a hand-made chain) on the avail ring without notifying. */
void virtq_publish(struct virtq *vq, uint16_t head);
/* Notify the device if it asked for it (EVENT_IDX / NO_NOTIFY), or always if force. */
void virtq_kick(struct virtq *vq, bool force);
/* Take one completion off the used ring; false if there is none. Frees its chain. */
bool virtq_get(struct virtq *vq, uint16_t *id, uint32_t *len, const char **err);
/* Poll for a completion for up to timeout_ms; fails on DEVICE_NEEDS_RESET or timeout. */
const char *virtq_wait(struct virtq *vq, uint16_t *id, uint32_t *len, unsigned timeout_ms);

/* TSC helpers shared by the virtio tests. */
uint64_t virtio_ms_to_cycles(unsigned ms);
uint64_t virtio_cycles_to_us(uint64_t cycles);

#endif
