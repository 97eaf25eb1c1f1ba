/* A conventional PCI bus (segment 0, bus 0) behind a host bridge: type-0 configuration space,
 * reached through ports 0xcf8/0xcfc (mechanism #1) and ECAM; BARs the VMM places in the 32-bit
 * hole and maps on the MMIO bus while the device decodes memory. */
#ifndef MINIVMM_PCI_H
#define MINIVMM_PCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/io_bus.h"
#include "base/log.h"

#define PCI_CFG_SIZE	 256  /* conventional configuration space */
#define PCI_EXT_CFG_SIZE 4096 /* ECAM window per function; 256..4095 read as 0 */
#define PCI_NR_SLOTS	 32
#define PCI_NR_BARS	 6

/* Ports of configuration mechanism #1. */
#define PCI_CONFIG_ADDRESS_PORT 0xcf8
#define PCI_CONFIG_PORTS_LEN	8 /* 0xcf8-0xcfb address, 0xcfc-0xcff data */

/* Type-0 header registers. */
#define PCI_VENDOR_ID	   0x00
#define PCI_DEVICE_ID	   0x02
#define PCI_COMMAND	   0x04
#define PCI_STATUS	   0x06
#define PCI_REVISION_ID	   0x08
#define PCI_CLASS_PROG	   0x09
#define PCI_CACHE_LINE	   0x0c
#define PCI_HEADER_TYPE	   0x0e
#define PCI_BAR0	   0x10
#define PCI_SUBSYS_VENDOR  0x2c
#define PCI_SUBSYS_ID	   0x2e
#define PCI_CAP_PTR	   0x34
#define PCI_INTERRUPT_LINE 0x3c
#define PCI_INTERRUPT_PIN  0x3d
#define PCI_CAP_START	   0x40 /* first byte after the header */

#define PCI_COMMAND_IO		 0x0001
#define PCI_COMMAND_MEMORY	 0x0002
#define PCI_COMMAND_MASTER	 0x0004
#define PCI_COMMAND_INTX_DISABLE 0x0400
#define PCI_STATUS_CAP_LIST	 0x0010
#define PCI_STATUS_INTERRUPT	 0x0008

#define PCI_BAR_MEM_64	      0x04
#define PCI_BAR_MEM_PREFETCH  0x08
#define PCI_BAR_MEM_ADDR_MASK (~(uint64_t)0xf)

#define PCI_CAP_ID_MSIX 0x11
#define PCI_CAP_ID_VNDR 0x09

/* MSI-X capability: message control at +2, table and PBA offset/BIR dwords at +4 and +8. */
#define PCI_MSIX_FLAGS		 2
#define PCI_MSIX_TABLE		 4
#define PCI_MSIX_PBA		 8
#define PCI_MSIX_CAP_SIZE	 12
#define PCI_MSIX_FLAGS_ENABLE	 0x8000
#define PCI_MSIX_FLAGS_MASKALL	 0x4000
#define PCI_MSIX_FLAGS_QSIZE	 0x07ff
#define PCI_MSIX_ENTRY_SIZE	 16
#define PCI_MSIX_ENTRY_CTRL_MASK 1

/* The host bridge at 00:00.0 (the ids QEMU's generic PCIe host bridge uses). */
#define PCI_HOST_VENDOR_ID 0x1b36
#define PCI_HOST_DEVICE_ID 0x0008
#define PCI_CLASS_HOST	   0x060000

struct pci_device;

/* What a device model supplies. Every callback is optional. */
struct pci_device_ops {
	/* Guest access to BAR bar at offset (within the BAR), len 1..8 bytes. */
	void (*bar_access)(struct pci_device *d, int bar, uint64_t offset, uint8_t *data,
			   uint32_t len, bool is_write);
	/* After a guest write to config space [offset, offset + len) was applied (read-only bits
	 * kept). Called with the bus lock held: do not access config space through the bus. */
	void (*config_written)(struct pci_device *d, uint32_t offset, uint32_t len);
	/* Config space [offset, offset + len) is about to be read: a device may refresh d->cfg
	 * there. Bus lock held, as for config_written. */
	void (*config_read)(struct pci_device *d, uint32_t offset, uint32_t len);
	/* BAR bar started (mapped) or stopped decoding at addr. Bus lock held. */
	void (*bar_mapped)(struct pci_device *d, int bar, uint64_t addr, bool mapped);
};

struct pci_bar {
	uint64_t size; /* power of two >= 16; 0: BAR not implemented */
	bool is64;     /* occupies this BAR and the next */
	bool mapped;   /* currently registered on the MMIO bus at mapped_addr */
	uint64_t mapped_addr;
	struct pci_device *dev; /* back-pointer for the MMIO handler */
	int index;
};

struct pci_device {
	uint8_t cfg[PCI_CFG_SIZE];
	uint8_t wmask[PCI_CFG_SIZE]; /* bits the guest may change */
	struct pci_bar bars[PCI_NR_BARS];
	uint8_t last_cap; /* offset of the last capability, 0 if none */
	uint16_t cap_end; /* where the next capability goes */
	const struct pci_device_ops *ops;
	void *opaque; /* the device model */
	struct pci_bus *bus;
	int slot; /* -1 until added */
};

struct pci_bus {
	pthread_mutex_t lock;	 /* config space of every device, the address latch, BAR mapping */
	struct io_bus *mmio;	 /* where BARs are mapped */
	uint32_t config_address; /* the 0xcf8 latch */
	struct pci_device *slots[PCI_NR_SLOTS];
	struct pci_device host_bridge;
	uint64_t mmio_next, mmio_end;	      /* VMM BAR placement window */
	struct log_ratelimit bar_overlap_log; /* the guest can move BARs onto each other at will */
};

/* Identity registers: vendor, device, revision, 24-bit class code, subsystem ids. Sets the
 * writable bits of the type-0 header (command, cache line, interrupt line) and pin (0: none,
 * 1: INTA#). */
void pci_device_init(struct pci_device *d, uint16_t vendor, uint16_t device, uint8_t revision,
		     uint32_t class_code, uint16_t subsys_vendor, uint16_t subsys_id, uint8_t pin,
		     const struct pci_device_ops *ops, void *opaque);
/* Declare a memory BAR of size bytes (power of two, >= 16); a 64-bit one also takes bar + 1.
 * Returns 0 or -1 on a bad argument. */
int pci_device_add_bar(struct pci_device *d, int bar, uint64_t size, bool is64, bool prefetch);
/* Append a capability of len bytes (>= 2) with this id to the list; returns its offset in
 * config space (body zeroed, read-only), or 0 if it does not fit. */
uint8_t pci_device_add_cap(struct pci_device *d, uint8_t cap_id, uint8_t len);
/* Mark [offset, offset + len) guest-writable with these bit masks (little-endian value). */
void pci_device_set_wmask(struct pci_device *d, uint32_t offset, uint32_t len, uint32_t mask);

/* Config space fields, for device models (bus lock held, or before the device is added). */
uint32_t pci_cfg_get(const struct pci_device *d, uint32_t offset, uint32_t len);
void pci_cfg_set(struct pci_device *d, uint32_t offset, uint32_t len, uint32_t value);

/* The bus maps BARs on mmio and places them in [mmio_base, mmio_end). */
void pci_bus_init(struct pci_bus *bus, struct io_bus *mmio, uint64_t mmio_base, uint64_t mmio_end);
/* Unmaps every BAR. Devices stay owned by their creators. */
void pci_bus_destroy(struct pci_bus *bus);
/* Plug d in the first free slot (1..31), placing its BARs. Returns the slot or -1 (no free
 * slot, or no room for the BARs). */
int pci_bus_add_device(struct pci_bus *bus, struct pci_device *d);
/* Register the 0xcf8/0xcfc ports on pio and the ECAM window at ecam_base on mmio. 0 or -1. */
int pci_bus_register(struct pci_bus *bus, struct io_bus *pio, uint64_t ecam_base);

/* io_bus handlers (exposed for unit tests): opaque is the bus. */
void pci_bus_config_port_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len,
			    bool is_write);
void pci_bus_ecam_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

/* The IOAPIC GSI that INTx pin (1..4) of slot raises; the ACPI _PRT says the same. */
static inline int pci_intx_gsi(int slot, int pin)
{
	return 16 + (slot + pin - 1) % 8;
}

#endif
