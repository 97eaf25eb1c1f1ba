/* PCI configuration space through mechanism #1 (ports 0xcf8/0xcfc), and memory BARs. */
#ifndef PCI_H
#define PCI_H

#include <stdbool.h>
#include <stdint.h>

#define PCI_VENDOR_ID	  0x00
#define PCI_DEVICE_ID	  0x02
#define PCI_COMMAND	  0x04
#define PCI_STATUS	  0x06
#define PCI_HEADER_TYPE	  0x0e
#define PCI_BAR0	  0x10
#define PCI_SUBSYSTEM_ID  0x2e
#define PCI_CAP_PTR	  0x34
#define PCI_CMD_MEM	  0x0002
#define PCI_CMD_MASTER	  0x0004
#define PCI_STATUS_CAPS	  0x0010
#define PCI_CAP_ID_MSIX	  0x11
#define PCI_CAP_ID_VENDOR 0x09

uint32_t pci_read32(unsigned bus, unsigned slot, unsigned func, unsigned off);
uint16_t pci_read16(unsigned bus, unsigned slot, unsigned func, unsigned off);
uint8_t pci_read8(unsigned bus, unsigned slot, unsigned func, unsigned off);
void pci_write32(unsigned bus, unsigned slot, unsigned func, unsigned off, uint32_t v);
void pci_write16(unsigned bus, unsigned slot, unsigned func, unsigned off, uint16_t v);

/*
 * The address of memory BAR `bar`, made usable: a BAR that is unassigned (0) or lies
 * above the probe's 4 GiB identity map is (re)assigned in 0xe0000000..0xfec00000. Turns on
 * memory decoding and bus mastering. Returns 0 for an I/O BAR or when nothing fits.
 */
uint64_t pci_bar_map(unsigned bus, unsigned slot, unsigned func, unsigned bar);

#endif
