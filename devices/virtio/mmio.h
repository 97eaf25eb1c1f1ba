/* virtio-mmio transport, version 2 (virtio 1.2, 4.2): registers in a 4 KiB MMIO window,
 * queue kicks through ioeventfd, interrupts through irqfd on an IOAPIC pin. */
#ifndef MINIVMM_VIRTIO_MMIO_H
#define MINIVMM_VIRTIO_MMIO_H

#include <stddef.h>
#include <stdint.h>

#include "devices/virtio/virtio.h"
#include "base/event_loop.h"

#define VIRTIO_MMIO_SIZE 0x1000ULL /* one device's register window; where they sit is arch's */

struct virtio_mmio {
	struct virtio_transport_host host;
	struct virtio_dev *dev;
	uint64_t base;
	int irq;
	uint32_t device_features_sel, driver_features_sel, queue_sel;
	uint32_t interrupt_status; /* atomic: set by the I/O thread, cleared by the driver */
	int irq_fd;
	struct virtio_kick kick[VIRTIO_MAX_QUEUES];
};

/* Transport state only, no host (KVM, MMIO bus): what attach starts from (and unit tests use). */
void virtio_mmio_init(struct virtio_mmio *t, struct virtio_dev *dev, uint64_t base, int irq);
/* Attach dev as a virtio-mmio device at base with interrupt irq, through host: registers its
 * window on the MMIO space, its kicks on ioeventfds watched on host->loop and its interrupt on
 * an irqfd. Returns 0 or -1 (logged). */
int virtio_mmio_attach(struct virtio_mmio *t, const struct virtio_transport_host *host,
		       struct virtio_dev *dev, uint64_t base, int irq);
void virtio_mmio_detach(struct virtio_mmio *t);
/* Register access (offset within the window); exposed for unit tests. */
void virtio_mmio_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);
/* The transport's own state, for a snapshot. */
struct virtio_mmio_state {
	uint32_t device_features_sel, driver_features_sel, queue_sel, interrupt_status;
};

void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *out);
/* Bring a freshly attached device to the saved state: the driver's set-up replayed through the
 * registers (features, queues, status), then the rings' indices and the interrupt status. */
void virtio_mmio_restore(struct virtio_mmio *t, const struct virtio_dev_state *dev,
			 const struct virtio_mmio_state *in);

/* The Linux command-line entry that announces this device, e.g. "virtio_mmio.device=4K@0x...:5". */
void virtio_mmio_cmdline_entry(const struct virtio_mmio *t, char *buf, size_t len);

#endif
