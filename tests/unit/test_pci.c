/* The PCI bus: configuration space through ports 0xcf8/0xcfc and ECAM, BAR sizing and mapping,
 * read-only bits, the capability list, unclaimed functions. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/layout.h"
#include "devices/pci.h"
#include "log_capture.h"
#include "base/io_bus.h"

static struct io_bus mmio, pio;
static struct pci_bus bus;

struct fake {
	struct pci_device pci;
	int bar_reads, bar_writes, mapped_calls, config_writes;
	uint64_t last_offset, last_mapped_addr;
	bool last_mapped;
};

static void fake_bar(struct pci_device *d, int bar, uint64_t offset, uint8_t *data, uint32_t len,
		     bool is_write)
{
	struct fake *f = d->opaque;
	(void)bar;
	f->last_offset = offset;
	if (is_write) {
		f->bar_writes++;
	} else {
		f->bar_reads++;
		memset(data, 0x5a, len);
	}
}

static void fake_mapped(struct pci_device *d, int bar, uint64_t addr, bool mapped)
{
	struct fake *f = d->opaque;
	(void)bar;
	f->mapped_calls++;
	f->last_mapped = mapped;
	f->last_mapped_addr = addr;
}

static void fake_config(struct pci_device *d, uint32_t offset, uint32_t len)
{
	(void)offset;
	(void)len;
	((struct fake *)d->opaque)->config_writes++;
}

static const struct pci_device_ops fake_ops = {
    .bar_access = fake_bar, .config_written = fake_config, .bar_mapped = fake_mapped};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pci_device_init(&f->pci, 0x1234, 0x5678, 2, 0xff0000, 0x1af4, 0x0042, 1, &fake_ops, f);
}

static void setup(void)
{
	io_bus_init(&mmio);
	io_bus_init(&pio);
	pci_bus_init(&bus, &mmio, PCI_MMIO_BASE, PCI_MMIO_END);
	cr_assert_eq(pci_bus_register(&bus, &pio, PCI_ECAM_BASE), 0);
}

static void teardown(void)
{
	pci_bus_destroy(&bus);
	io_bus_destroy(&mmio);
	io_bus_destroy(&pio);
}

TestSuite(pci, .init = setup, .fini = teardown);

static uint32_t le(const uint8_t *p, uint32_t len)
{
	uint32_t v = 0;
	for (uint32_t i = 0; i < len; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

/* Mechanism #1 through the port bus, as a guest does it. */
static uint32_t cf8_read(int dev, int fn, uint32_t reg, uint32_t len)
{
	uint8_t a[4], d[4];
	uint32_t addr = 0x80000000u | (uint32_t)dev << 11 | (uint32_t)fn << 8 | (reg & 0xfc);
	memcpy(a, &addr, 4);
	io_bus_access(&pio, 0xcf8, a, 4, true);
	io_bus_access(&pio, 0xcfc + (reg & 3), d, len, false);
	return le(d, len);
}

static void cf8_write(int dev, int fn, uint32_t reg, uint32_t len, uint32_t v)
{
	uint8_t a[4], d[4];
	uint32_t addr = 0x80000000u | (uint32_t)dev << 11 | (uint32_t)fn << 8 | (reg & 0xfc);
	memcpy(a, &addr, 4);
	memcpy(d, &v, 4);
	io_bus_access(&pio, 0xcf8, a, 4, true);
	io_bus_access(&pio, 0xcfc + (reg & 3), d, len, true);
}

static uint32_t ecam_read(int dev, int fn, uint32_t reg, uint32_t len)
{
	uint8_t d[4];
	io_bus_access(&mmio, PCI_ECAM_BASE + ((uint64_t)dev << 15 | (uint64_t)fn << 12 | reg), d,
		      len, false);
	return le(d, len);
}

static void ecam_write(int dev, int fn, uint32_t reg, uint32_t len, uint32_t v)
{
	uint8_t d[4];
	memcpy(d, &v, 4);
	io_bus_access(&mmio, PCI_ECAM_BASE + ((uint64_t)dev << 15 | (uint64_t)fn << 12 | reg), d,
		      len, true);
}

Test(pci, host_bridge_through_both_mechanisms)
{
	cr_assert_eq(cf8_read(0, 0, 0, 4), 0x00081b36);
	cr_assert_eq(ecam_read(0, 0, 0, 4), 0x00081b36);
	cr_assert_eq(cf8_read(0, 0, 0x08, 4) >> 8, 0x060000, "host bridge class");
	cr_assert_eq(ecam_read(0, 0, 0x0a, 2), 0x0600);
	cr_assert_eq(cf8_read(0, 0, 0x0e, 1), 0, "type-0 header, single function");
}

Test(pci, address_register_reads_back)
{
	uint8_t a[4] = {0x04, 0x08, 0x00, 0x80}, d[4];
	io_bus_access(&pio, 0xcf8, a, 4, true);
	io_bus_access(&pio, 0xcf8, d, 4, false);
	cr_assert_eq(le(d, 4), 0x80000804);
	/* A byte at 0xcfb is not the address register (Linux's type-1 probe writes one). */
	uint8_t b = 0x01;
	io_bus_access(&pio, 0xcfb, &b, 1, true);
	io_bus_access(&pio, 0xcf8, d, 4, false);
	cr_assert_eq(le(d, 4), 0x80000804);
}

Test(pci, byte_and_word_accesses_at_cfc_to_cff)
{
	cr_assert_eq(cf8_read(0, 0, 0x00, 1), 0x36);
	cr_assert_eq(cf8_read(0, 0, 0x01, 1), 0x1b);
	cr_assert_eq(cf8_read(0, 0, 0x02, 2), 0x0008);
	cr_assert_eq(cf8_read(0, 0, 0x03, 1), 0x00);
	cr_assert_eq(cf8_read(0, 0, 0x0b, 1), 0x06);
}

Test(pci, unclaimed_functions_read_all_ones)
{
	cr_assert_eq(cf8_read(5, 0, 0, 2), 0xffff, "empty slot");
	cr_assert_eq(cf8_read(0, 1, 0, 2), 0xffff, "function 1 of the host bridge");
	cr_assert_eq(ecam_read(31, 7, 0, 4), 0xffffffff);
	cr_assert_eq(ecam_read(0, 3, 0, 2), 0xffff);
	/* Bus 1 does not exist; the enable bit clear reaches nothing. */
	uint8_t a[4] = {0x00, 0x00, 0x01, 0x80}, d[4];
	io_bus_access(&pio, 0xcf8, a, 4, true);
	io_bus_access(&pio, 0xcfc, d, 4, false);
	cr_assert_eq(le(d, 4), 0xffffffff);
	uint8_t off[4] = {0};
	io_bus_access(&pio, 0xcf8, off, 4, true);
	io_bus_access(&pio, 0xcfc, d, 4, false);
	cr_assert_eq(le(d, 4), 0xffffffff);
	/* Writes there go nowhere (and do not crash). */
	cf8_write(7, 0, 0x04, 2, 0xffff);
	ecam_write(7, 2, 0x10, 4, 0xffffffff);
	cr_assert_eq(cf8_read(7, 0, 0, 4), 0xffffffff);
}

Test(pci, device_identity_and_read_only_bits)
{
	static struct fake f;
	fake_init(&f);
	int slot = pci_bus_add_device(&bus, &f.pci);
	cr_assert_eq(slot, 1);
	cr_assert_eq(cf8_read(slot, 0, 0, 4), 0x56781234);
	cr_assert_eq(ecam_read(slot, 0, 0x08, 4), 0xff000002);
	cr_assert_eq(ecam_read(slot, 0, 0x2c, 4), 0x00421af4);
	cr_assert_eq(ecam_read(slot, 0, 0x3d, 1), 1, "INTA#");
	/* Vendor, device, class, revision, header type and pin are read-only. */
	cf8_write(slot, 0, 0x00, 4, 0xffffffff);
	ecam_write(slot, 0, 0x08, 4, 0);
	ecam_write(slot, 0, 0x3d, 1, 3);
	cr_assert_eq(cf8_read(slot, 0, 0, 4), 0x56781234);
	cr_assert_eq(ecam_read(slot, 0, 0x08, 4), 0xff000002);
	cr_assert_eq(ecam_read(slot, 0, 0x3d, 1), 1);
	/* The command register keeps only the bits it implements; status is read-only. */
	ecam_write(slot, 0, 0x04, 4, 0xffffffff);
	cr_assert_eq(ecam_read(slot, 0, 0x04, 2), 0x0406);
	cr_assert_eq(ecam_read(slot, 0, 0x06, 2), 0);
	/* Interrupt line is scratch for the OS. */
	cf8_write(slot, 0, 0x3c, 1, 0x0b);
	cr_assert_eq(cf8_read(slot, 0, 0x3c, 1), 0x0b);
	cr_assert_geq(f.config_writes, 1);
}

Test(pci, extended_space_reads_zero_through_ecam)
{
	static struct fake f;
	fake_init(&f);
	int slot = pci_bus_add_device(&bus, &f.pci);
	ecam_write(slot, 0, 0x100, 4, 0x12345678);
	cr_assert_eq(ecam_read(slot, 0, 0x100, 4), 0);
	cr_assert_eq(ecam_read(slot, 0, 0xffc, 4), 0);
	cr_assert_eq(ecam_read(0, 0, 0x100, 4), 0, "no extended capabilities");
}

Test(pci, bar64_sizing_and_placement)
{
	static struct fake f;
	fake_init(&f);
	cr_assert_eq(pci_device_add_bar(&f.pci, 0, 0x4000, true, false), 0);
	cr_assert_eq(pci_device_add_bar(&f.pci, 2, 0x1000, false, false), 0);
	int slot = pci_bus_add_device(&bus, &f.pci);
	cr_assert_geq(slot, 1);
	/* Placed by the VMM, naturally aligned, in the window. */
	uint32_t lo = ecam_read(slot, 0, 0x10, 4), hi = ecam_read(slot, 0, 0x14, 4);
	cr_assert_eq(lo & 0xf, 0x4, "64-bit memory BAR, not prefetchable");
	cr_assert_eq(hi, 0);
	cr_assert_eq(lo & ~0xfu, PCI_MMIO_BASE);
	uint32_t bar2 = ecam_read(slot, 0, 0x18, 4);
	cr_assert_eq(bar2 & 0xf, 0);
	cr_assert_eq(bar2, PCI_MMIO_BASE + 0x4000);
	/* Sizing: all ones in, the size mask out (type bits kept); unimplemented BARs read 0. */
	cf8_write(slot, 0, 0x10, 4, 0xffffffff);
	cf8_write(slot, 0, 0x14, 4, 0xffffffff);
	cr_assert_eq(cf8_read(slot, 0, 0x10, 4), 0xffffc004);
	cr_assert_eq(cf8_read(slot, 0, 0x14, 4), 0xffffffff);
	ecam_write(slot, 0, 0x18, 4, 0xffffffff);
	cr_assert_eq(ecam_read(slot, 0, 0x18, 4), 0xfffff000);
	ecam_write(slot, 0, 0x1c, 4, 0xffffffff);
	cr_assert_eq(ecam_read(slot, 0, 0x1c, 4), 0);
	ecam_write(slot, 0, 0x24, 4, 0xffffffff);
	cr_assert_eq(ecam_read(slot, 0, 0x24, 4), 0);
	/* A 64-bit address above 4 GiB. */
	ecam_write(slot, 0, 0x10, 4, 0x12340000);
	ecam_write(slot, 0, 0x14, 4, 0x00000001);
	cr_assert_eq(ecam_read(slot, 0, 0x10, 4), 0x12340004);
	cr_assert_eq(ecam_read(slot, 0, 0x14, 4), 1);
}

Test(pci, bar_add_rejects_bad_arguments)
{
	static struct fake f;
	fake_init(&f);
	cr_assert_neq(pci_device_add_bar(&f.pci, 0, 0x3000, false, false), 0, "not a power of 2");
	cr_assert_neq(pci_device_add_bar(&f.pci, 0, 8, false, false), 0, "too small");
	cr_assert_neq(pci_device_add_bar(&f.pci, 5, 0x1000, true, false), 0, "no upper half");
	cr_assert_neq(pci_device_add_bar(&f.pci, 6, 0x1000, false, false), 0);
	cr_assert_eq(pci_device_add_bar(&f.pci, 0, 0x1000, true, false), 0);
	cr_assert_neq(pci_device_add_bar(&f.pci, 1, 0x1000, false, false), 0, "upper half taken");
	cr_assert_neq(pci_device_add_bar(&f.pci, 0, 0x1000, false, false), 0, "taken");
}

static uint8_t mmio_read8(uint64_t addr, bool *handled)
{
	uint8_t b;
	*handled = io_bus_access(&mmio, addr, &b, 1, false);
	return b;
}

Test(pci, bars_map_while_memory_decoding_is_on)
{
	static struct fake f;
	fake_init(&f);
	pci_device_add_bar(&f.pci, 0, 0x4000, true, false);
	int slot = pci_bus_add_device(&bus, &f.pci);
	bool handled;
	mmio_read8(PCI_MMIO_BASE + 0x10, &handled);
	cr_assert(!handled, "not decoding before the command register says so");
	ecam_write(slot, 0, 0x04, 2, PCI_COMMAND_MEMORY);
	cr_assert_eq(mmio_read8(PCI_MMIO_BASE + 0x10, &handled), 0x5a);
	cr_assert(handled);
	cr_assert_eq(f.last_offset, 0x10);
	cr_assert(f.last_mapped);
	cr_assert_eq(f.last_mapped_addr, PCI_MMIO_BASE);
	/* Moving the BAR moves the mapping. */
	ecam_write(slot, 0, 0x10, 4, 0xc8000000);
	mmio_read8(PCI_MMIO_BASE + 0x10, &handled);
	cr_assert(!handled);
	mmio_read8(0xc8000000 + 0x3fff, &handled);
	cr_assert(handled);
	cr_assert_eq(f.last_offset, 0x3fff);
	cr_assert_eq(f.last_mapped_addr, 0xc8000000);
	/* Sizing with decoding on does not map at the all-ones address. */
	ecam_write(slot, 0, 0x10, 4, 0xffffffff);
	ecam_write(slot, 0, 0x14, 4, 0xffffffff);
	mmio_read8(0xc8000000, &handled);
	cr_assert(!handled);
	cr_assert(!f.last_mapped);
	ecam_write(slot, 0, 0x10, 4, 0xc8000000);
	ecam_write(slot, 0, 0x14, 4, 0);
	mmio_read8(0xc8000000, &handled);
	cr_assert(handled);
	/* Decoding off: unmapped. */
	ecam_write(slot, 0, 0x04, 2, 0);
	mmio_read8(0xc8000000, &handled);
	cr_assert(!handled);
	cr_assert(!f.last_mapped);
	int calls = f.mapped_calls;
	ecam_write(slot, 0, 0x04, 2, 0);
	cr_assert_eq(f.mapped_calls, calls, "no spurious callbacks");
}

/* f's BAR0 decoding at PCI_MMIO_BASE, g's moved on top of it (slots in *s1, *s2); g's decode
 * is turned on last, from a cleared log capture. */
static void overlapping_bars(struct fake *f, struct fake *g, int *s1, int *s2)
{
	fake_init(f);
	fake_init(g);
	pci_device_add_bar(&f->pci, 0, 0x4000, true, false);
	pci_device_add_bar(&g->pci, 0, 0x4000, true, false);
	*s1 = pci_bus_add_device(&bus, &f->pci);
	*s2 = pci_bus_add_device(&bus, &g->pci);
	cr_assert_eq(*s2, *s1 + 1);
	ecam_write(*s1, 0, 0x04, 2, PCI_COMMAND_MEMORY);
	ecam_write(*s2, 0, 0x10, 4, PCI_MMIO_BASE); /* on top of f's BAR */
	log_capture_clear();
	ecam_write(*s2, 0, 0x04, 2, PCI_COMMAND_MEMORY);
}

Test(pci, bar_overlapping_another_device_stays_unmapped)
{
	static struct fake f, g;
	int s1, s2;
	overlapping_bars(&f, &g, &s1, &s2);
	cr_assert(!g.pci.bars[0].mapped);
	char *log = log_captured();
	cr_assert(strstr(log, "minivmm: warning: pci ") && strstr(log, "overlaps another device"),
		  "%s", log);
	free(log);
	bool handled;
	mmio_read8(PCI_MMIO_BASE, &handled);
	cr_assert(handled);
	cr_assert_eq(f.bar_reads, 1);
	cr_assert_eq(g.bar_reads, 0);
}

/* A BAR refused for overlapping another device's is mapped once that device's BAR moves away,
 * as real PCI decodes from the registers' current values: the other device's config write
 * looks at every device, not just its own. */
Test(pci, refused_bar_is_mapped_once_its_range_is_free)
{
	static struct fake f, g;
	int s1, s2;
	overlapping_bars(&f, &g, &s1, &s2);
	cr_assert(!g.pci.bars[0].mapped);
	const uint64_t elsewhere = PCI_MMIO_BASE + 0x10000;
	ecam_write(s1, 0, 0x10, 4, (uint32_t)elsewhere); /* f moves away */
	cr_assert(f.pci.bars[0].mapped && f.pci.bars[0].mapped_addr == elsewhere);
	cr_assert(g.pci.bars[0].mapped, "g's BAR, now free, decodes");
	cr_assert_eq(g.pci.bars[0].mapped_addr, PCI_MMIO_BASE);
	bool handled;
	mmio_read8(PCI_MMIO_BASE, &handled);
	cr_assert(handled);
	cr_assert_eq(g.bar_reads, 1, "the access reaches g");
	mmio_read8(elsewhere, &handled);
	cr_assert(handled);
	cr_assert_eq(f.bar_reads, 1, "and f where it went");
}

Test(pci, bar_window_exhaustion)
{
	struct pci_bus small;
	struct io_bus m;
	io_bus_init(&m);
	pci_bus_init(&small, &m, 0xc0000000, 0xc0006000);
	static struct fake f, g;
	fake_init(&f);
	fake_init(&g);
	pci_device_add_bar(&f.pci, 0, 0x4000, true, false);
	pci_device_add_bar(&g.pci, 0, 0x4000, true, false);
	cr_assert_eq(pci_bus_add_device(&small, &f.pci), 1);
	cr_assert_eq(pci_bus_add_device(&small, &g.pci), -1, "0x4000-aligned room is gone");
	pci_bus_destroy(&small);
	io_bus_destroy(&m);
}

Test(pci, slots_run_out)
{
	static struct fake f[PCI_NR_SLOTS];
	for (int i = 1; i < PCI_NR_SLOTS; i++) {
		fake_init(&f[i]);
		cr_assert_eq(pci_bus_add_device(&bus, &f[i].pci), i);
	}
	fake_init(&f[0]);
	cr_assert_eq(pci_bus_add_device(&bus, &f[0].pci), -1);
}

Test(pci, capability_list_walk)
{
	static struct fake f;
	fake_init(&f);
	uint8_t c1 = pci_device_add_cap(&f.pci, PCI_CAP_ID_VNDR, 16);
	uint8_t c2 = pci_device_add_cap(&f.pci, PCI_CAP_ID_VNDR, 21);
	uint8_t c3 = pci_device_add_cap(&f.pci, PCI_CAP_ID_MSIX, 12);
	cr_assert_eq(c1, 0x40);
	cr_assert_eq(c2, 0x50);
	cr_assert_eq(c3, 0x68, "dword-aligned after a 21-byte capability");
	int slot = pci_bus_add_device(&bus, &f.pci);
	cr_assert(ecam_read(slot, 0, 0x06, 2) & PCI_STATUS_CAP_LIST);
	uint8_t want[] = {PCI_CAP_ID_VNDR, PCI_CAP_ID_VNDR, PCI_CAP_ID_MSIX};
	uint32_t p = cf8_read(slot, 0, 0x34, 1);
	int n = 0;
	while (p && n < 48) {
		cr_assert_eq(p & 3, 0);
		cr_assert_eq(cf8_read(slot, 0, p, 1), want[n]);
		p = cf8_read(slot, 0, p + 1, 1);
		n++;
	}
	cr_assert_eq(n, 3);
	/* Capabilities are read-only unless the device says otherwise. */
	ecam_write(slot, 0, c1, 4, 0);
	cr_assert_eq(ecam_read(slot, 0, c1, 2), (uint32_t)(c2 << 8 | PCI_CAP_ID_VNDR));
	/* Full: a capability that does not fit is refused. */
	cr_assert_eq(pci_device_add_cap(&f.pci, PCI_CAP_ID_VNDR, 200), 0);
}

Test(pci, host_bridge_has_no_capabilities)
{
	cr_assert_eq(ecam_read(0, 0, 0x06, 2) & PCI_STATUS_CAP_LIST, 0);
	cr_assert_eq(ecam_read(0, 0, 0x34, 1), 0);
}

static void nop_handler(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	(void)opaque;
	(void)offset;
	(void)is_write;
	memset(data, 0, len);
}

Test(pci, io_bus_unregister)
{
	int a, b;
	cr_assert_eq(io_bus_register(&mmio, 0x1000, 0x100, nop_handler, &a), 0);
	cr_assert_neq(io_bus_unregister(&mmio, 0x1000, &b), 0, "other owner");
	cr_assert_neq(io_bus_unregister(&mmio, 0x1001, &a), 0, "other base");
	cr_assert_eq(io_bus_unregister(&mmio, 0x1000, &a), 0);
	uint8_t d;
	cr_assert(!io_bus_access(&mmio, 0x1000, &d, 1, false));
	cr_assert_eq(io_bus_register(&mmio, 0x1000, 0x100, nop_handler, &b), 0, "room again");
}
