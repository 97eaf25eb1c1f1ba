/* I/O APIC programming: one redirection entry per GSI the probe uses, all others untouched. */
#include "ioapic.h"
#include "x86.h"

#define IOAPIC0_BASE 0xfec00000ull
#define IOAPIC1_BASE 0xfec10000ull /* QEMU microvm with ioapic2=on (GSIs 24..47) */
#define IOREGSEL     0x00
#define IOWIN	     0x10
#define REG_VER	     0x01
#define REG_REDIR    0x10

#define RTE_LEVEL      (1u << 15)
#define RTE_ACTIVE_LOW (1u << 13)
#define RTE_MASKED     (1u << 16)

static uint32_t rd(uint64_t base, uint32_t reg)
{
	mmio_write32(base + IOREGSEL, reg);
	return mmio_read32(base + IOWIN);
}

static void wr(uint64_t base, uint32_t reg, uint32_t v)
{
	mmio_write32(base + IOREGSEL, reg);
	mmio_write32(base + IOWIN, v);
}

/* Pins of the IOAPIC at base; 0 if nothing answers there (reads as all ones). */
static unsigned pins(uint64_t base)
{
	uint32_t ver = rd(base, REG_VER);
	if (ver == 0xffffffffu || ver == 0)
		return 0;
	return (ver >> 16 & 0xff) + 1;
}

/* The IOAPIC and pin serving gsi, found once per call (a few exits, set-up only). */
static bool locate(uint32_t gsi, uint64_t *base, uint32_t *pin)
{
	unsigned n0 = pins(IOAPIC0_BASE);
	if (gsi < n0) {
		*base = IOAPIC0_BASE;
		*pin = gsi;
		return true;
	}
	if (gsi - n0 < pins(IOAPIC1_BASE)) {
		*base = IOAPIC1_BASE;
		*pin = gsi - n0;
		return true;
	}
	return false;
}

bool ioapic_route(uint32_t gsi, uint8_t vector, uint8_t dest, bool level)
{
	uint64_t base;
	uint32_t pin;
	if (!locate(gsi, &base, &pin))
		return false;
	uint32_t lo = vector | (level ? RTE_LEVEL | RTE_ACTIVE_LOW : 0);
	/* Mask while changing, destination (high word) first, unmask with the low word last. */
	wr(base, REG_REDIR + 2 * pin, RTE_MASKED);
	wr(base, REG_REDIR + 2 * pin + 1, (uint32_t)dest << 24);
	wr(base, REG_REDIR + 2 * pin, lo);
	return true;
}

void ioapic_mask(uint32_t gsi)
{
	uint64_t base;
	uint32_t pin;
	if (locate(gsi, &base, &pin))
		wr(base, REG_REDIR + 2 * pin, RTE_MASKED);
}
