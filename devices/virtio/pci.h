/* virtio-pci modern transport (virtio 1.2, 4.1): a PCI function whose 64-bit BAR 0 holds the
 * common, ISR, device and notify structures and the MSI-X table and PBA. Kicks arrive through
 * one ioeventfd per queue (or a trapped write), interrupts leave through MSI-X vectors (an
 * irqfd each, on an MSI route kept in step with the table) or INTx. */
#ifndef MINIVMM_VIRTIO_PCI_H
#define MINIVMM_VIRTIO_PCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/pci.h"
#include "devices/virtio/virtio.h"
#include "base/event_loop.h"

#define VIRTIO_PCI_VENDOR_ID	   0x1af4
#define VIRTIO_PCI_DEVICE_ID_BASE  0x1040 /* + virtio device id */
#define VIRTIO_PCI_SUBSYS_ID	   0x1100
#define VIRTIO_PCI_REVISION	   1
#define VIRTIO_PCI_NO_VECTOR	   0xffff
#define VIRTIO_PCI_NOTIFY_MULT	   4 /* notify_off_multiplier: 4 bytes per queue */
#define VIRTIO_PCI_MAX_VECTORS	   (VIRTIO_MAX_QUEUES + 1)
#define VIRTIO_PCI_COMMON_CFG_SIZE 0x38

/* cfg_type of the vendor-specific capabilities (virtio 1.2, 4.1.4). */
#define VIRTIO_PCI_CAP_COMMON_CFG 1
#define VIRTIO_PCI_CAP_NOTIFY_CFG 2
#define VIRTIO_PCI_CAP_ISR_CFG	  3
#define VIRTIO_PCI_CAP_DEVICE_CFG 4
#define VIRTIO_PCI_CAP_PCI_CFG	  5
#define VIRTIO_PCI_CAP_LEN	  16 /* struct virtio_pci_cap */
#define VIRTIO_PCI_NOTIFY_CAP_LEN 20 /* + notify_off_multiplier */
#define VIRTIO_PCI_CFG_CAP_LEN	  20 /* + pci_cfg_data */

/* BAR 0 layout. */
#define VIRTIO_PCI_BAR		0
#define VIRTIO_PCI_BAR_SIZE	0x4000
#define VIRTIO_PCI_COMMON_OFF	0x0000
#define VIRTIO_PCI_ISR_OFF	0x1000
#define VIRTIO_PCI_ISR_LEN	4
#define VIRTIO_PCI_DEVICE_OFF	0x2000
#define VIRTIO_PCI_DEVICE_MAX	0x1000
#define VIRTIO_PCI_NOTIFY_OFF	0x3000
#define VIRTIO_PCI_MSIX_TABLE	0x3800
#define VIRTIO_PCI_MSIX_PBA	0x3c00
#define VIRTIO_PCI_MSIX_PBA_LEN 8

/* Common configuration structure (virtio 1.2, 4.1.4.3). */
#define VIRTIO_PCI_COMMON_DFSELECT 0x00
#define VIRTIO_PCI_COMMON_DF	   0x04
#define VIRTIO_PCI_COMMON_GFSELECT 0x08
#define VIRTIO_PCI_COMMON_GF	   0x0c
#define VIRTIO_PCI_COMMON_MSIX	   0x10
#define VIRTIO_PCI_COMMON_NUMQ	   0x12
#define VIRTIO_PCI_COMMON_STATUS   0x14
#define VIRTIO_PCI_COMMON_CFGGEN   0x15
#define VIRTIO_PCI_COMMON_Q_SELECT 0x16
#define VIRTIO_PCI_COMMON_Q_SIZE   0x18
#define VIRTIO_PCI_COMMON_Q_MSIX   0x1a
#define VIRTIO_PCI_COMMON_Q_ENABLE 0x1c
#define VIRTIO_PCI_COMMON_Q_NOFF   0x1e
#define VIRTIO_PCI_COMMON_Q_DESC   0x20
#define VIRTIO_PCI_COMMON_Q_DRIVER 0x28
#define VIRTIO_PCI_COMMON_Q_DEVICE 0x30

#define VIRTIO_PCI_ISR_QUEUE  1
#define VIRTIO_PCI_ISR_CONFIG 2

struct virtio_pci_vector {
	uint32_t addr_lo, addr_hi, data, ctrl; /* the MSI-X table entry */
	bool pending;			       /* the PBA bit */
	int gsi;			       /* MSI route, -1 if none */
	bool routed;			       /* the route holds the message below */
	uint32_t route_addr_lo, route_addr_hi, route_data;
	int fd; /* eventfd bound to gsi (irqfd) */
};

struct virtio_pci {
	struct pci_device pci;
	struct virtio_dev *dev;
	struct virtio_transport_host host;
	uint8_t msix_cap; /* config-space offset of the MSI-X capability */
	uint8_t cfg_cap;  /* config-space offset of the PCI configuration access capability */

	pthread_mutex_t lock; /* everything below; taken after dev->lock, never before */
	uint32_t dfselect, gfselect;
	uint16_t queue_select;
	uint16_t config_vector;
	uint16_t queue_vector[VIRTIO_MAX_QUEUES];
	uint8_t isr;
	bool intx_level, intx_disabled;
	bool msix_enabled, msix_masked;
	int nr_vectors;
	struct virtio_pci_vector vec[VIRTIO_PCI_MAX_VECTORS];
	struct virtio_kick notify[VIRTIO_MAX_QUEUES];
	uint64_t ioeventfd_base; /* BAR address the ioeventfds are on; 0: none */
};

/* Build the transport for dev (not yet on a bus): config space, capabilities, MSI-X vectors
 * (routes and irqfds when the host provides them), kick eventfds. Returns 0 or -1 with err. */
int virtio_pci_init(struct virtio_pci *vp, struct virtio_dev *dev,
		    const struct virtio_transport_host *host, char *err, size_t errlen);
/* Undo init (call after the device left the bus or the bus was destroyed). */
void virtio_pci_cleanup(struct virtio_pci *vp);

/* Create the transport for dev on host (which must have MSI routing) and plug it into bus.
 * NULL with err on failure. */
struct virtio_pci *virtio_pci_create(const struct virtio_transport_host *host, struct pci_bus *bus,
				     struct virtio_dev *dev, char *err, size_t errlen);
void virtio_pci_destroy(struct virtio_pci *vp);

/* The transport's own state, for a snapshot: configuration space, the MSI-X table and pending
 * bits, the common configuration's selectors and vectors, ISR and INTx. */
struct virtio_pci_state {
	uint8_t cfg[PCI_CFG_SIZE];
	uint32_t msix[VIRTIO_PCI_MAX_VECTORS][4]; /* addr_lo, addr_hi, data, ctrl */
	uint8_t pending[VIRTIO_PCI_MAX_VECTORS];
	uint8_t isr, intx_level, pad[5];
	uint32_t dfselect, gfselect;
	uint16_t queue_select, config_vector;
	uint16_t queue_vector[VIRTIO_MAX_QUEUES];
};

void virtio_pci_save(struct virtio_pci *vp, struct virtio_pci_state *out);
/* Bring a freshly created device (on its bus, same slot) to the saved state by replaying the
 * driver's writes: BARs, MSI-X control and command through configuration space, the MSI-X table
 * and the common configuration through BAR 0; then the rings' indices, ISR and pending bits. */
void virtio_pci_restore(struct virtio_pci *vp, const struct virtio_dev_state *dev,
			const struct virtio_pci_state *in);

/* The INTx GSI once the device is on a bus (slot known). */
int virtio_pci_intx_gsi(const struct virtio_pci *vp);

#endif
