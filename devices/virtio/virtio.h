/* A virtio device as the transports see it: features, status, queues, config space. The
 * device model (rng, net, blk, ...) plugs in through struct virtio_device_ops; the transport
 * (virtio-mmio or virtio-pci) owns register decoding, notifications and interrupts. */
#ifndef MINIVMM_VIRTIO_H
#define MINIVMM_VIRTIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/virtio/virtqueue.h"
#include "base/event_loop.h"
#include "base/io_bus.h"
#include "base/log.h"

/* Device status bits (virtio 1.2, 2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	 1
#define VIRTIO_STATUS_DRIVER		 2
#define VIRTIO_STATUS_DRIVER_OK		 4
#define VIRTIO_STATUS_FEATURES_OK	 8
#define VIRTIO_STATUS_DEVICE_NEEDS_RESET 64
#define VIRTIO_STATUS_FAILED		 128

#define VIRTIO_F_VERSION_1 32

/* Device ids (virtio 1.2, 5). */
#define VIRTIO_ID_NET	  1
#define VIRTIO_ID_BLOCK	  2
#define VIRTIO_ID_RNG	  4
#define VIRTIO_ID_BALLOON 5
#define VIRTIO_ID_FS	  26

#define VIRTIO_MAX_QUEUES 16

struct virtio_dev;
struct event_loop;

struct virtio_device_ops {
	const char *name;
	uint32_t device_id;
	uint16_t max_queue_size;
	uint32_t config_size;
	/* Config space access; offset + len <= config_size is checked by the transport. */
	void (*read_config)(struct virtio_dev *dev, uint32_t offset, uint8_t *data, uint32_t len);
	void (*write_config)(struct virtio_dev *dev, uint32_t offset, const uint8_t *data,
			     uint32_t len);
	/* Driver set DRIVER_OK with all enabled queues validated. Runs on a vCPU thread. */
	int (*activate)(struct virtio_dev *dev);
	/* Device reset by the driver; stop using the queues. Runs on a vCPU thread with dev->lock
	 * held, so it must not wait: work still in flight is left to finish on its own (it must
	 * never touch the rings again), with dev->reset_pending set until it has (see
	 * virtio_dev_reset_done). */
	void (*reset)(struct virtio_dev *dev);
	/* The driver kicked queue q. Runs on the I/O thread with dev->lock held. */
	void (*queue_notify)(struct virtio_dev *dev, int q);
	/* Optional: the device may use its queues again after DRIVER_OK or after bus mastering
	 * came back on; finish what waited and look at every queue (kicks were ignored). Without
	 * it, queue_notify is called for each queue with buffers. I/O thread, dev->lock held. */
	void (*restart)(struct virtio_dev *dev);
};

/* What one instance offers: a device kind has one static ops table, and each instance its own
 * features and queue count (a read-only disk offers VIRTIO_BLK_F_RO, a balloon with free-page
 * reporting has a fourth queue). */
struct virtio_dev_params {
	uint64_t features; /* device-specific and ring features offered (VERSION_1 is added) */
	int nr_queues;
};

/* What a device asks of its transport. */
struct virtio_transport_ops {
	/* Raise the used-buffer interrupt for queue q. Thread-safe. */
	void (*signal_queue)(struct virtio_dev *dev, int q);
	/* Raise the configuration-change interrupt. Thread-safe. */
	void (*signal_config)(struct virtio_dev *dev);
	/* For a device whose queues another process serves (vhost-user, dev->external_queues):
	 * external: queue q's kicks stop reaching the I/O thread, and the eventfd KVM signals for
	 * them (or the transport, for a trapped write) is returned for that process to read (-1:
	 * none); !external: they reach the I/O thread again. dev->lock held. */
	int (*queue_kick_fd)(struct virtio_dev *dev, int q, bool external);
	/* An eventfd whose every write raises queue q's interrupt in the guest without the VMM
	 * (an irqfd), or -1 when the transport cannot give one (INTx, no MSI-X vector): the
	 * caller then calls signal_queue. Asked at DRIVER_OK. dev->lock held. */
	int (*queue_irqfd)(struct virtio_dev *dev, int q);
};

/* What a transport asks of the machine, the one interface through which virtio-mmio and
 * virtio-pci reach KVM: the VMM provides it (vmm/kvm/virtio_devices.c binds it to the VM). Every
 * hook may be NULL (unit tests, fuzz targets): kicks are then trapped (virtio-pci handles them
 * at once without a loop), and interrupts only reach the eventfds and INTx state. */
struct virtio_transport_host {
	void *opaque;
	/* (Un)register fd for guest writes to addr: len bytes (0: any length), with datamatch only
	 * writes of value. 0 or -1. */
	int (*ioeventfd)(void *opaque, uint64_t addr, uint32_t len, bool datamatch, uint64_t value,
			 int fd, bool add);
	/* (Un)bind fd to gsi (KVM_IRQFD): writing it raises the interrupt. 0 or -1. */
	int (*irqfd)(void *opaque, int gsi, int fd, bool add);
	/* Drive a level-triggered GSI (PCI INTx). */
	void (*set_irq)(void *opaque, int gsi, int level);
	/* Route guest accesses to [base, base + len) of the MMIO space to handler. 0 or -1. */
	int (*register_mmio)(void *opaque, uint64_t base, uint64_t len, io_handler_fn handler,
			     void *ctx);
	/* MSI routes (virtio-pci's MSI-X vectors): all four hooks or none (no routes: vectors get
	 * no GSI and no irqfd). Changes reach KVM at the next msi_route_commit. */
	/* A new route, masked (it raises nothing): its GSI, or -1 when none is left. */
	int (*msi_route_alloc)(void *opaque);
	void (*msi_route_free)(void *opaque, int gsi);
	/* Point the route at an MSI-X table entry's message address and data, and unmask it.
	 * 0, or -1 for a GSI that is not an allocated route. */
	int (*msi_route_set)(void *opaque, int gsi, uint32_t addr_lo, uint32_t addr_hi,
			     uint32_t data);
	/* Hand the routes to KVM if they changed since the last commit. 0 or -1. */
	int (*msi_route_commit)(void *opaque);
	struct event_loop *loop; /* where kicks run (the I/O thread); NULL: none */
};

struct virtio_dev {
	const struct virtio_device_ops *ops;
	void *priv; /* the device model's state */
	const struct virtio_transport_ops *transport;
	void *transport_priv;
	struct guest_mem *mem;
	struct event_loop *loop;
	char label[32]; /* e.g. "virtio-rng0", for messages */

	pthread_mutex_t lock; /* guards status, features and queue setup */
	uint8_t status;
	int nr_queues;		  /* from virtio_dev_params */
	uint64_t device_features; /* offered: params features | VERSION_1 */
	uint64_t driver_features; /* accepted by the driver (subset of offered) */
	uint32_t config_generation;
	struct virtqueue vqs[VIRTIO_MAX_QUEUES];
	bool broken;	  /* a protocol violation was seen: no more processing until reset */
	bool activated;	  /* ops->activate ran: ops->reset must run at the next reset */
	bool dma_enabled; /* the transport lets the device touch guest memory (PCI bus master) */
	/* Another process serves the queues (vhost-user): its interrupts may bypass the VMM, so
	 * the transports must not rely on seeing each one (virtio-mmio's interrupt status shows a
	 * used buffer at every read; virtio-pci raises a vector again when it is unmasked). Set at
	 * creation, never changed. */
	bool external_queues;
	/* A reset was written but work from before it is still in flight (ops->reset set it):
	 * the status register reads non-zero until it is done (virtio 1.2, 4.1.4.3.2). Written
	 * under lock, read by the transports' status read without it. */
	bool reset_pending;
	/* Counters for status and benchmarks: guest kicks (eventfd counts, so kicks that arrive
	 * together are all counted), I/O-thread wake-ups they caused, interrupts sent. */
	uint64_t kicks, notifications, interrupts;
	/* How contended lock is (status "lock"): acquisitions through virtio_dev_lock, those that
	 * found it held and the time they waited (counted under the lock; an uncontended one costs
	 * what pthread_mutex_lock does, no clock is read), and the threads waiting now. */
	uint64_t lock_taken, lock_contended, lock_wait_ns;
	_Atomic int lock_waiters;
	/* Hold times, sampled: every VIRTIO_LOCK_HOLD_SAMPLE-th take reads the clock there and at
	 * virtio_dev_unlock (hold_start_ns, 0 when this take is not sampled); the samples' count,
	 * sum and largest. Two clock reads per 64 takes keep the data path's cost out of sight. */
	uint64_t lock_hold_start_ns, lock_hold_samples, lock_hold_ns, lock_hold_max_ns;
	/* Protocol-violation warnings: a driver looping break/reset must not flood the log. */
	struct log_ratelimit broken_log;
	/* At DRIVER_OK: serve buffers made available (and kicked) before it. */
	struct bottom_half driver_ok_bh;
};

#define VIRTIO_LOCK_HOLD_SAMPLE 64

/* Take dev->lock, counting its contention (lock_taken, lock_contended, lock_wait_ns); every
 * VIRTIO_LOCK_HOLD_SAMPLE-th take (the first included) starts a hold-time sample. */
void virtio_dev_lock(struct virtio_dev *dev);
/* Release what virtio_dev_lock took, ending a hold-time sample if one runs. */
void virtio_dev_unlock(struct virtio_dev *dev);

void virtio_dev_init(struct virtio_dev *dev, const struct virtio_device_ops *ops,
		     const struct virtio_dev_params *params, void *priv, struct guest_mem *mem,
		     struct event_loop *loop, const char *label);
/* Status register write from the driver, with the spec's rules: FEATURES_OK is refused
 * (cleared) when the driver accepted features never offered or lacks VERSION_1; DRIVER_OK
 * validates and enables every ready queue and activates the device; 0 resets. */
void virtio_dev_set_status(struct virtio_dev *dev, uint8_t status);
/* The status register as the driver reads it: dev->status, or, after a reset (0 written)
 * whose in-flight work has not finished, DEVICE_NEEDS_RESET: non-zero, so a driver waits
 * (Linux's virtio-pci polls for 0), and a driver that ORs bits into what it reads (a
 * non-polling virtio-mmio driver) adds nothing, since the driver cannot set that bit. */
uint8_t virtio_dev_status(const struct virtio_dev *dev);
/* The device model's work from before the last reset has all finished (dev->lock held). */
void virtio_dev_reset_done(struct virtio_dev *dev);
/* Feature word write (sel 0: bits 0-31, sel 1: 32-63); ignored after FEATURES_OK. */
void virtio_dev_set_driver_features(struct virtio_dev *dev, uint32_t sel, uint32_t value);
uint32_t virtio_dev_get_device_features(const struct virtio_dev *dev, uint32_t sel);
bool virtio_dev_has_feature(const struct virtio_dev *dev, unsigned bit);
/* Queue configuration from the transports, checked and stored under dev->lock. A live
 * (ready) queue's geometry never changes: writes to it are ignored. A size that is not a power
 * of two in 1..ops->max_queue_size marks the device broken. q must be < dev->nr_queues. */
void virtio_dev_set_queue_size(struct virtio_dev *dev, int q, uint32_t size);
enum virtio_ring_part { VIRTIO_RING_DESC, VIRTIO_RING_DRIVER, VIRTIO_RING_DEVICE };
/* Set bits [shift, shift + width) of a ring address (width 32 or 64; shift 0 or 32). */
void virtio_dev_set_queue_addr(struct virtio_dev *dev, int q, enum virtio_ring_part part,
			       unsigned shift, unsigned width, uint64_t value);
/* Queue ready register written (transports). Writing 0 to a live queue of a running device
 * is a protocol violation (no VIRTIO_F_RING_RESET is offered): the device is marked broken. */
void virtio_dev_queue_ready(struct virtio_dev *dev, int q, bool ready);
/* PCI bus mastering turned on or off: while off the device takes no new buffers; turning it
 * back on serves what was made available meanwhile. virtio-mmio devices are always on. */
void virtio_dev_set_dma_enabled(struct virtio_dev *dev, bool enabled);
/* The device may process its queues: DRIVER_OK, not broken, DMA allowed. dev->lock held. */
bool virtio_dev_live(const struct virtio_dev *dev);
/* The driver kicked queue q (I/O thread): runs ops->queue_notify under dev->lock when the
 * device is live. Out-of-range queue numbers are ignored. */
void virtio_dev_queue_notify(struct virtio_dev *dev, int q);
/* Device-specific configuration space, from either transport (offset within the device's
 * config space): an access outside ops->config_size is ignored, or reads as zeros. */
void virtio_dev_config_access(struct virtio_dev *dev, uint64_t offset, uint8_t *data, uint32_t len,
			      bool is_write);

/* One queue's kick eventfd, watched on the I/O thread, for either transport: KVM signals it
 * (ioeventfd) or the transport does for a trapped notify write. Each event adds the eventfd's
 * count to dev->kicks and runs virtio_dev_queue_notify. */
struct virtio_kick {
	struct virtio_dev *dev;
	int queue;
	int fd;	       /* -1: none */
	bool watched;  /* fd is open and carries the queue's kicks */
	bool external; /* ... to another process: not on the event loop */
	struct event_source src;
};

/* No eventfd yet (fd -1). external: its kicks go to another process (see
 * virtio_transport_ops.queue_kick_fd), the eventfd being off the I/O thread's loop. */
void virtio_kick_init(struct virtio_kick *k, struct virtio_dev *dev, int queue);
/* Create the eventfd and watch it on loop. 0, or -1 (what exists is left for close). */
int virtio_kick_open(struct virtio_kick *k, struct event_loop *loop);
void virtio_kick_close(struct virtio_kick *k, struct event_loop *loop);
/* Hand the kicks to another process (off loop) or take them back; the eventfd, or -1 when
 * there is none. */
int virtio_kick_set_external(struct virtio_kick *k, struct event_loop *loop, bool external);

/* A guest broke the protocol: log once, set DEVICE_NEEDS_RESET, stop processing, and send a
 * configuration-change interrupt. The VMM and every other device keep running. Call with
 * dev->lock held (queue processing holds it). */
void virtio_dev_mark_broken(struct virtio_dev *dev, const char *reason);
/* The device itself failed (its back end is gone): as virtio_dev_mark_broken, but the log line
 * does not blame the guest. dev->lock held. */
void virtio_dev_fail(struct virtio_dev *dev, const char *reason);
/* Called by device models after pushing used buffers on queue q. */
void virtio_dev_notify_used(struct virtio_dev *dev, int q);

/* A device's transport-independent state, as a snapshot stores it (fixed layout, no padding
 * holes: every field is written). The transport restores it by replaying the driver's register
 * writes (so every value gets the checks a guest's would), then virtio_dev_restore_rings. */
struct virtio_queue_state {
	uint64_t desc, avail, used;
	uint16_t size, last_avail_idx, used_idx, signalled_used;
	uint8_t ready, signalled_used_valid, notifications_off, pad[5];
};

struct virtio_dev_state {
	uint64_t driver_features;
	uint32_t config_generation;
	uint8_t status, broken, pad[2];
	struct virtio_queue_state q[VIRTIO_MAX_QUEUES];
};

/* Read dev's state (the device must be quiet: vCPUs paused, on the I/O thread). */
void virtio_dev_save(struct virtio_dev *dev, struct virtio_dev_state *out);
/* After the replay: the ring indices the device had, and its broken mark. */
void virtio_dev_restore_rings(struct virtio_dev *dev, const struct virtio_dev_state *in);

#endif
