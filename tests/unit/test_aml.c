/* The AML builder: PkgLength, names, integers, EISA ids, packages, resource descriptors, and the
 * DSDT's PCI host bridge. */
#include <criterion/criterion.h>
#include <string.h>

#include "arch/x86/aml.h"
#include "arch/x86/dsdt.h"
#include "base/byteorder.h"

static uint8_t buf[16384];
static struct aml a;

static void setup(void)
{
	memset(buf, 0xcc, sizeof(buf));
	aml_init(&a, buf, sizeof(buf));
}

TestSuite(aml, .init = setup);

#define EXPECT(...)                                                                                \
	do {                                                                                       \
		const uint8_t want[] = {__VA_ARGS__};                                              \
		cr_assert(!a.error);                                                               \
		cr_assert_eq(a.len, sizeof(want), "length %zu, want %zu", a.len, sizeof(want));    \
		cr_assert_arr_eq(buf, want, sizeof(want));                                         \
	} while (0)

Test(aml, pkglength_boundaries)
{
	uint8_t e[4];
	/* One byte up to 63 in all (the byte itself included). */
	cr_assert_eq(aml_pkglength(0, e), 1);
	cr_assert_eq(e[0], 1);
	cr_assert_eq(aml_pkglength(62, e), 1);
	cr_assert_eq(e[0], 63);
	/* 63 body bytes: 65 in all, two bytes: lead 0x40 | low nibble, then the rest. */
	cr_assert_eq(aml_pkglength(63, e), 2);
	cr_assert_eq(e[0], 0x40 | (65 & 0xf));
	cr_assert_eq(e[1], 65 >> 4);
	cr_assert_eq(aml_pkglength(0xffd, e), 2); /* 0xfff in all */
	cr_assert_eq(e[0], 0x4f);
	cr_assert_eq(e[1], 0xff);
	cr_assert_eq(aml_pkglength(0xffe, e), 3); /* 0x1001 in all */
	cr_assert_eq(e[0], 0x81);
	cr_assert_eq(e[1], 0x00);
	cr_assert_eq(e[2], 0x01);
	cr_assert_eq(aml_pkglength(0xffffc, e), 3); /* 0xfffff */
	cr_assert_eq(aml_pkglength(0xffffd, e), 4); /* 0x100001 */
	cr_assert_eq(e[0], 0xc1);
	cr_assert_eq(e[1], 0x00);
	cr_assert_eq(e[2], 0x00);
	cr_assert_eq(e[3], 0x01);
	cr_assert_eq(aml_pkglength(0x0ffffffb, e), 4);
	cr_assert_eq(aml_pkglength(0x0ffffffc, e), 0, "beyond 28 bits");
}

Test(aml, pkg_end_inserts_the_length)
{
	size_t m = aml_pkg_begin(&a);
	for (int i = 0; i < 100; i++)
		aml_byte(&a, (uint8_t)i);
	aml_pkg_end(&a, m);
	cr_assert(!a.error);
	cr_assert_eq(a.len, 102);
	cr_assert_eq(buf[0], 0x40 | (102 & 0xf));
	cr_assert_eq(buf[1], 102 >> 4);
	cr_assert_eq(buf[2], 0);
	cr_assert_eq(buf[101], 99);
}

Test(aml, integers_use_the_shortest_encoding)
{
	aml_integer(&a, 0);
	aml_integer(&a, 1);
	aml_integer(&a, 2);
	aml_integer(&a, 0xff);
	aml_integer(&a, 0x100);
	aml_integer(&a, 0x12345678);
	aml_integer(&a, 0x100000000ULL);
	EXPECT(0x00, 0x01, 0x0a, 0x02, 0x0a, 0xff, 0x0b, 0x00, 0x01, 0x0c, 0x78, 0x56, 0x34, 0x12,
	       0x0e, 0, 0, 0, 0, 1, 0, 0, 0);
}

Test(aml, names)
{
	aml_name_string(&a, "_HID");
	aml_name_string(&a, "\\_SB");
	aml_name_string(&a, "\\_SB.PCI0");
	aml_name_string(&a, "A.B.C");
	EXPECT('_', 'H', 'I', 'D', '\\', '_', 'S', 'B', '_', '\\', 0x2e, '_', 'S', 'B', '_', 'P',
	       'C', 'I', '0', 0x2f, 3, 'A', '_', '_', '_', 'B', '_', '_', '_', 'C', '_', '_', '_');
}

Test(aml, bad_names_set_error)
{
	const char *bad[] = {"1ABC", "ABCDE", "a", "A..B", "A.", "A-B"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		aml_init(&a, buf, sizeof(buf));
		aml_name_string(&a, bad[i]);
		cr_assert(a.error, "%s", bad[i]);
	}
}

Test(aml, eisaid)
{
	cr_assert_eq(aml_eisaid("PNP0A03"), 0x030ad041);
	cr_assert_eq(aml_eisaid("PNP0A08"), 0x080ad041);
	cr_assert_eq(aml_eisaid("PNP0C02"), 0x020cd041);
	cr_assert_eq(aml_eisaid("pnp0a03"), 0);
	cr_assert_eq(aml_eisaid("PNP0A0"), 0);
	cr_assert_eq(aml_eisaid("PNP0A0G"), 0);
}

Test(aml, device_with_name)
{
	size_t d = aml_device_begin(&a, "PCI0");
	aml_name(&a, "_UID");
	aml_integer(&a, 0);
	aml_pkg_end(&a, d);
	EXPECT(0x5b, 0x82, 11, 'P', 'C', 'I', '0', 0x08, '_', 'U', 'I', 'D', 0x00);
}

Test(aml, package_and_buffer)
{
	size_t p = aml_package_begin(&a, 2);
	aml_integer(&a, 1);
	aml_integer(&a, 0x20);
	aml_pkg_end(&a, p);
	const uint8_t bytes[3] = {0x79, 0x00, 0xaa};
	aml_buffer(&a, bytes, 2);
	(void)bytes[2];
	EXPECT(0x12, 5, 2, 0x01, 0x0a, 0x20, 0x11, 5, 0x0a, 2, 0x79, 0x00);
}

Test(aml, resource_descriptors)
{
	aml_res_word_bus(&a, 0, 0);
	aml_res_dword_mem(&a, 0xc0000000, 0xdfffffff);
	aml_res_io(&a, 0xcf8, 0xcf8, 1, 8);
	aml_res_mem32_fixed(&a, 0xe0000000, 0x100000);
	aml_res_irq(&a, 4);
	aml_res_interrupt_edge(&a, 0x12345);
	aml_res_end(&a);
	EXPECT(
	    /* WordBusNumber: producer, MinFixed, MaxFixed, 0-0, length 1 */
	    0x88, 13, 0, 2, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0,
	    /* DWordMemory: read-write, 0xc0000000-0xdfffffff, length 0x20000000 */
	    0x87, 23, 0, 0, 0x0c, 1, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0xff, 0xff, 0xdf, 0, 0, 0, 0,
	    0, 0, 0, 0x20,
	    /* IO(Decode16, 0xcf8, 0xcf8, 1, 8) */
	    0x47, 1, 0xf8, 0x0c, 0xf8, 0x0c, 1, 8,
	    /* Memory32Fixed(ReadWrite, 0xe0000000, 0x100000) */
	    0x86, 9, 0, 1, 0, 0, 0, 0xe0, 0, 0, 0x10, 0,
	    /* IRQNoFlags() {4} */
	    0x22, 0x10, 0x00,
	    /* Interrupt(ResourceConsumer, Edge, ActiveHigh, Exclusive) {0x12345} */
	    0x89, 6, 0, 0x03, 1, 0x45, 0x23, 0x01, 0x00,
	    /* EndTag */
	    0x79, 0);
}

Test(aml, irq_beyond_isa_range_sets_error)
{
	aml_res_irq(&a, 16);
	cr_assert(a.error);
}

Test(aml, strings)
{
	aml_string(&a, "LNRO0005");
	EXPECT(0x0d, 'L', 'N', 'R', 'O', '0', '0', '0', '5', 0);
	setup();
	aml_string(&a, "bad\n");
	cr_assert(a.error, "control characters are refused");
}

Test(aml, overflow_sets_error_and_stops)
{
	aml_init(&a, buf, 3);
	aml_integer(&a, 0x12345678);
	cr_assert(a.error);
	size_t len = a.len;
	cr_assert_leq(len, 3);
	aml_byte(&a, 0);
	cr_assert_eq(a.len, len, "nothing more is written");
}

/* Find a NameOp for name in the AML and return what follows it. */
static const uint8_t *find_name(const uint8_t *p, size_t len, const char *name)
{
	for (size_t i = 0; i + 5 <= len; i++)
		if (p[i] == 0x08 && !memcmp(p + i + 1, name, 4))
			return p + i + 5;
	return NULL;
}

Test(aml, dsdt_pci_host_bridge)
{
	dsdt_build(&a, NULL);
	cr_assert(!a.error);
	cr_assert_lt(a.len, 0x2000 - 36, "fits the DSDT's room");
	/* Name (\_S5, Package (1) { 5 }): soft-off's sleep type, then Scope (\_SB). */
	const uint8_t s5[] = {0x08, '\\', '_', 'S', '5', '_', 0x12, 4, 1, 0x0a, 5, 0x10};
	cr_assert_arr_eq(buf, s5, sizeof(s5));
	const uint8_t *hid = find_name(buf, a.len, "_HID");
	cr_assert(hid);
	cr_assert_eq(hid[0], 0x0c);
	cr_assert_eq(get_le32(hid + 1), 0x080ad041, "PNP0A08");
	const uint8_t *cid = find_name(buf, a.len, "_CID");
	cr_assert(cid && get_le32(cid + 1) == 0x030ad041, "PNP0A03");
	const uint8_t *seg = find_name(buf, a.len, "_SEG");
	cr_assert(seg && seg[0] == 0x00);
	const uint8_t *bbn = find_name(buf, a.len, "_BBN");
	cr_assert(bbn && bbn[0] == 0x00);
	/* _PRT: 31 slots x 4 pins; slot 1 pin A goes to GSI 17. */
	const uint8_t *prt = find_name(buf, a.len, "_PRT");
	cr_assert(prt && prt[0] == 0x12);
	int n = (prt[1] >> 6) + 1; /* PkgLength bytes */
	cr_assert_eq(prt[1 + n], 124, "entries");
	const uint8_t *e = prt + 2 + n;
	const uint8_t first[] = {0x12, 11, 4, 0x0c, 0xff, 0xff, 1, 0, 0x00, 0x00, 0x0a, 17};
	cr_assert_arr_eq(e, first, sizeof(first));
	/* _CRS of PCI0 starts with the bus range; RES0 reserves ECAM. */
	const uint8_t *crs = find_name(buf, a.len, "_CRS");
	cr_assert(crs && crs[0] == 0x11);
	cr_assert(memmem(buf, a.len, "RES0", 4));
	const uint8_t ecam[] = {0x86, 9, 0, 1, 0, 0, 0, 0xe0, 0, 0, 0x10, 0};
	cr_assert(memmem(buf, a.len, ecam, sizeof(ecam)), "ECAM reserved");
}

/* Device NAME's _CRS buffer: returns its resource template bytes. */
static const uint8_t *device_crs(const uint8_t *p, size_t len, const char *name)
{
	const uint8_t *dev = memmem(p, len, name, 4);
	cr_assert(dev, "device %s", name);
	const uint8_t *crs = find_name(dev, len - (size_t)(dev - p), "_CRS");
	cr_assert(crs && crs[0] == 0x11, "%s has a _CRS buffer", name);
	return crs;
}

Test(aml, dsdt_legacy_devices_have_their_isa_irqs)
{
	dsdt_build(&a, NULL);
	cr_assert(!a.error);
	/* COM1: PNP0501, ports 0x3f8-0x3ff, IRQ 4. Without it Linux (HW-reduced ACPI: no legacy
	 * IRQs) polls the UART and userspace console output never drains. */
	const uint8_t *com1 = memmem(buf, a.len, "COM1", 4);
	cr_assert(com1);
	const uint8_t *hid = find_name(com1, a.len - (size_t)(com1 - buf), "_HID");
	cr_assert(hid && hid[0] == 0x0c && get_le32(hid + 1) == 0x0105d041, "PNP0501");
	const uint8_t com1_res[] = {0x47, 1, 0xf8, 0x03, 0xf8, 0x03, 1, 8, 0x22, 0x10, 0x00, 0x79};
	cr_assert(memmem(device_crs(buf, a.len, "COM1"), 24, com1_res, sizeof(com1_res)));
	/* The CMOS RTC: PNP0B00, ports 0x70-0x71, IRQ 8 (rtc_cmos fails to probe without it). */
	const uint8_t *rtc = memmem(buf, a.len, "RTC_", 4);
	cr_assert(rtc);
	hid = find_name(rtc, a.len - (size_t)(rtc - buf), "_HID");
	cr_assert(hid && hid[0] == 0x0c && get_le32(hid + 1) == 0x000bd041, "PNP0B00");
	const uint8_t rtc_res[] = {0x47, 1, 0x70, 0, 0x70, 0, 1, 2, 0x22, 0x00, 0x01, 0x79};
	cr_assert(memmem(device_crs(buf, a.len, "RTC_"), 24, rtc_res, sizeof(rtc_res)));
	cr_assert_null(memmem(buf, a.len, "LNRO0005", 8), "no virtio-mmio device asked for");
}

Test(aml, dsdt_virtio_mmio_devices)
{
	const struct dsdt_mmio_device devs[2] = {{0xd0000000, 0x1000, 5}, {0xd0001000, 0x1000, 6}};
	const struct dsdt_config cfg = {.virtio_mmio = devs, .nr_virtio_mmio = 2};
	dsdt_build(&a, &cfg);
	cr_assert(!a.error);
	for (int i = 0; i < 2; i++) {
		char name[5] = {'V', 'R', '0', (char)('0' + i), 0};
		const uint8_t *dev = memmem(buf, a.len, name, 4);
		cr_assert(dev, "%s", name);
		const uint8_t *hid = find_name(dev, a.len - (size_t)(dev - buf), "_HID");
		cr_assert(hid && !memcmp(hid, "\x0dLNRO0005", 10), "%s: _HID \"LNRO0005\"", name);
		const uint8_t *uid = find_name(dev, a.len - (size_t)(dev - buf), "_UID");
		cr_assert(uid && uid[0] == (i ? 0x01 : 0x00), "_UID %d", i);
		uint8_t res[21] = {0x86, 9, 0, 1,    0, 0, 0,	 0xd0, 0,
				   0x10, 0, 0, 0x89, 6, 0, 0x03, 1};
		res[5] = (uint8_t)(i << 4);
		res[17] = (uint8_t)(5 + i);
		cr_assert(memmem(device_crs(buf, a.len, name), 32, res, sizeof(res)),
			  "%s: window and edge interrupt", name);
	}
}

Test(aml, dsdt_refuses_bad_mmio_devices)
{
	const struct dsdt_mmio_device high = {0x100000000ULL, 0x1000, 5};
	dsdt_build(&a, &(struct dsdt_config){.virtio_mmio = &high, .nr_virtio_mmio = 1});
	cr_assert(a.error, "a window above 4 GiB does not fit Memory32Fixed");
	setup();
	const struct dsdt_mmio_device ok = {0xd0000000, 0x1000, 5};
	dsdt_build(&a, &(struct dsdt_config){.virtio_mmio = &ok, .nr_virtio_mmio = 17});
	cr_assert(a.error, "more devices than the DSDT describes");
}
