/*
 * A virtio 1.x driver core for the probe (virtio 1.2: 2.1 status, 2.2 features, 2.7 split
 * virtqueues, 3.1 initialisation). Transports: virtio_mmio.c and virtio_pci.c.
 * Completions are found by polling the used ring (no VM exits) or, with use_irq, by halting
 * until the used-buffer interrupt (IOAPIC pin for mmio, MSI-X for pci; see irq.h).
 * Notifications are suppressed with VIRTIO_RING_F_EVENT_IDX when the device offers it
 * (unless virtio.event_idx=off on the command line, or no_event_idx).
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
#define VIRTIO_MAX_QUEUES 6   /* per device: a virtio console with one named port needs 6 */
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
	bool use_irq; /* virtq_wait halts until an interrupt instead of spinning */
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
	/* Select queue q and write its size register, nothing else (test=hostile's racer). */
	void (*queue_size_write)(struct virtio_dev *d, unsigned q, unsigned size);
	/* Tell the device where vq's rings are, enable it, and fill in vq->notify_*. */
	const char *(*queue_enable)(struct virtio_dev *d, struct virtq *vq);
	/* Before the queues are set up, with use_irq: route the device's interrupts to
	 * d->vec_cfg / d->vec_q[] (allocating them on first use). */
	const char *(*irq_setup)(struct virtio_dev *d);
	/* In the interrupt handler: acknowledge the interrupt at the device (may be 0). */
	void (*irq_ack)(struct virtio_dev *d);
};

struct virtio_dev {
	enum virtio_transport transport;
	const struct virtio_ops *ops;
	uint32_t device_id;
	/* virtio-mmio: register window and IRQ (from the DTB or virtio_mmio.device=) */
	uint64_t base, size;
	uint32_t irq;
	/* virtio-pci: location and the structures the capabilities point at */
	uint8_t bus, slot, func;
	uint64_t common, notify, isr, devcfg;
	uint32_t notify_mult, notify_len;
	bool msix;
	unsigned msix_size;
	uint8_t msix_cap;    /* config-space offset of the MSI-X capability */
	uint64_t msix_table; /* its table, mapped; 0 if unusable */
	/* Set by the caller before virtio_init(). */
	bool use_irq;	   /* completions by interrupt (see virtq_wait) */
	bool no_event_idx; /* do not negotiate VIRTIO_RING_F_EVENT_IDX */
	/* Interrupt vectors, allocated once (mmio: one line, so vec_q[*] == vec_cfg). */
	uint8_t vec_cfg, vec_q[VIRTIO_MAX_QUEUES];
	volatile uint64_t irqs; /* interrupts handled for this device */
	uint64_t offered;	/* what the device offered */
	uint64_t features;	/* negotiated */
	unsigned nqueues;
	struct virtq vq[VIRTIO_MAX_QUEUES];
	void *ring_mem; /* VIRTIO_MAX_QUEUES * 3 pages, owned by this device */
};

/* Every virtio device the transports can find, mmio first (by address), then pci (by slot). */
extern struct virtio_dev virtio_devs[VIRTIO_MAX_DEVS];
extern unsigned virtio_ndevs;
void virtio_discover(void);
/* The discovered devices of one type, in discovery order (mmio by address, then PCI by slot),
 * at most max of them into out. */
unsigned virtio_devices_of(uint32_t device_id, struct virtio_dev **out, unsigned max);
/* The same, looked up once into set and kept (for drivers that hand out their device list). */
struct virtio_dev_set {
	struct virtio_dev *devs[VIRTIO_MAX_DEVS];
	unsigned count;
	bool done;
};
struct virtio_dev **virtio_devices_kept(struct virtio_dev_set *set, uint32_t device_id,
					unsigned *n);

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
/*
 * Wait for a completion for up to timeout_ms, polling or (use_irq) halting until the
 * interrupt, which it requests for the next used entry; fails on DEVICE_NEEDS_RESET or timeout.
 */
const char *virtq_wait(struct virtq *vq, uint16_t *id, uint32_t *len, unsigned timeout_ms);

/*
 * Used-buffer interrupts (2.7.7, 2.7.10). arm: with EVENT_IDX interrupt once the device
 * has used entry `event` (used_event = event), without it after every used buffer
 * (clear NO_INTERRUPT). disarm: no interrupts. Both only write to the ring: no exit.
 */
void virtq_arm(struct virtq *vq, uint16_t event);
void virtq_disarm(struct virtq *vq);
/* Halt until used->idx is `want` or more past last_used (after virtq_arm); bounded by
 * timeout_ms, after which it returns virtq_timed_out. */
const char *virtq_sleep(struct virtq *vq, uint16_t want, unsigned timeout_ms);
extern const char virtq_timed_out[];
/* True unless virtio.event_idx=off is on the command line. */
bool virtio_event_idx_allowed(void);

/* TSC helpers shared by the virtio tests. */
uint64_t virtio_ms_to_cycles(unsigned ms);
uint64_t virtio_cycles_to_us(uint64_t cycles);

#endif
