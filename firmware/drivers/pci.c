/* PCI configuration mechanism #1: every access is two port exits (~120 us on PVM). */
#include "pci.h"
#include "printf.h"

#define PCI_ADDR 0xcf8
#define PCI_DATA 0xcfc

#define ALLOC_BASE 0xe0000000ull /* inside every VMM's 32-bit PCI hole we know of */
#define ALLOC_TOP  0xfec00000ull /* IOAPIC */
#define ID_TOP	   (4ull << 30)

static uint64_t alloc_next = ALLOC_BASE;

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static void select_reg(unsigned bus, unsigned slot, unsigned func, unsigned off)
{
	outl(PCI_ADDR, 0x80000000u | bus << 16 | slot << 11 | func << 8 | (off & 0xfc));
}

uint32_t pci_read32(unsigned bus, unsigned slot, unsigned func, unsigned off)
{
	select_reg(bus, slot, func, off);
	return inl(PCI_DATA);
}

uint16_t pci_read16(unsigned bus, unsigned slot, unsigned func, unsigned off)
{
	return (uint16_t)(pci_read32(bus, slot, func, off) >> (off & 2) * 8);
}

uint8_t pci_read8(unsigned bus, unsigned slot, unsigned func, unsigned off)
{
	return (uint8_t)(pci_read32(bus, slot, func, off) >> (off & 3) * 8);
}

void pci_write32(unsigned bus, unsigned slot, unsigned func, unsigned off, uint32_t v)
{
	select_reg(bus, slot, func, off);
	outl(PCI_DATA, v);
}

void pci_write16(unsigned bus, unsigned slot, unsigned func, unsigned off, uint16_t v)
{
	select_reg(bus, slot, func, off);
	outw((uint16_t)(PCI_DATA + (off & 2)), v);
}

uint64_t pci_bar_map(unsigned bus, unsigned slot, unsigned func, unsigned bar)
{
	if (bar > 5)
		return 0;
	unsigned off = PCI_BAR0 + 4 * bar;
	uint32_t lo = pci_read32(bus, slot, func, off);
	if (lo & 1)
		return 0; /* I/O space */
	bool is64 = (lo >> 1 & 3) == 2;
	if (is64 && bar == 5)
		return 0;
	uint64_t addr = lo & ~0xfull;
	if (is64)
		addr |= (uint64_t)pci_read32(bus, slot, func, off + 4) << 32;
	uint16_t cmd = pci_read16(bus, slot, func, PCI_COMMAND);
	bool moved = !addr || addr >= ID_TOP;
	if (moved || addr >= ID_TOP) {
		/* Size it with decoding off, then place it naturally aligned in our window. */
		pci_write16(bus, slot, func, PCI_COMMAND, cmd & ~PCI_CMD_MEM);
		pci_write32(bus, slot, func, off, 0xffffffff);
		uint64_t mask = pci_read32(bus, slot, func, off) & ~0xfull;
		if (is64) {
			pci_write32(bus, slot, func, off + 4, 0xffffffff);
			mask |= (uint64_t)pci_read32(bus, slot, func, off + 4) << 32;
		} else {
			mask |= 0xffffffff00000000ull;
		}
		uint64_t size = ~mask + 1;
		uint64_t at = (alloc_next + size - 1) & ~(size - 1);
		if (!size || at + size > ALLOC_TOP || at < alloc_next) {
			kprintf("probe: pci %02x:%02x.%x bar%u size=0x%lx does not fit\n", bus,
				slot, func, bar, size);
			pci_write32(bus, slot, func, off, lo);
			if (is64)
				pci_write32(bus, slot, func, off + 4, (uint32_t)(addr >> 32));
			pci_write16(bus, slot, func, PCI_COMMAND, cmd);
			return 0;
		}
		alloc_next = at + size;
		pci_write32(bus, slot, func, off, (uint32_t)at);
		if (is64)
			pci_write32(bus, slot, func, off + 4, 0);
		kprintf("probe: pci %02x:%02x.%x bar%u assigned 0x%lx (was 0x%lx)\n", bus, slot,
			func, bar, at, addr);
		addr = at;
	}
	if (moved || (cmd & (PCI_CMD_MEM | PCI_CMD_MASTER)) != (PCI_CMD_MEM | PCI_CMD_MASTER))
		pci_write16(bus, slot, func, PCI_COMMAND, cmd | PCI_CMD_MEM | PCI_CMD_MASTER);
	return addr;
}
