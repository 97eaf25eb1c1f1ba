/* ACPI tables: RSDP/XSDT/RSDT chain, FADT, DSDT and MADT contents, and how the guest finds them. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "arch/x86/acpi.h"
#include "arch/x86/boot.h"
#include "arch/x86/e820.h"
#include "arch/x86/layout.h"
#include "x86_test_util.h"

static char err[256];

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;
	for (size_t i = 0; i < len; i++)
		s = (uint8_t)(s + p[i]);
	return s;
}

/* A System Description Table at addr with this signature; checks length bounds and checksum. */
static uint8_t *sdt(struct test_ram *r, uint64_t addr, const char *sig, uint32_t len)
{
	cr_assert_geq(addr, ACPI_TABLES_START, "%s at 0x%llx", sig, (unsigned long long)addr);
	cr_assert_leq(addr + len, ACPI_TABLES_END, "%s at 0x%llx", sig, (unsigned long long)addr);
	uint8_t *t = gpa(r, addr, len);
	cr_assert_arr_eq(t, sig, 4, "signature at 0x%llx", (unsigned long long)addr);
	cr_assert_eq(get_le32(t + 4), len, "%s length %u", sig, get_le32(t + 4));
	cr_assert_eq(sum(t, len), 0, "%s checksum", sig);
	cr_assert_arr_eq(t + 10, "MNVMM ", 6);
	cr_assert_arr_eq(t + 16, "MINIVMM ", 8);
	return t;
}

static uint32_t madt_len(int n)
{
	return 44 + 8 * (uint32_t)n + 12 + 6;
}

/* Walk the tables from the RSDP like an OSPM and check everything for n CPUs. */
static void verify(struct test_ram *r, int n)
{
	uint8_t *rsdp = gpa(r, ACPI_TABLES_START, 36);
	cr_assert_arr_eq(rsdp, "RSD PTR ", 8);
	cr_assert_eq(sum(rsdp, 20), 0, "RSDP checksum");
	cr_assert_eq(sum(rsdp, 36), 0, "RSDP extended checksum");
	cr_assert_arr_eq(rsdp + 9, "MNVMM ", 6);
	cr_assert_eq(rsdp[15], 2);
	cr_assert_eq(get_le32(rsdp + 20), 36);
	cr_assert_eq(rsdp[33] | rsdp[34] | rsdp[35], 0);

	uint8_t *xsdt = sdt(r, get_le64(rsdp + 24), "XSDT", 36 + 3 * 8);
	uint64_t fadt_addr = get_le64(xsdt + 36), madt_addr = get_le64(xsdt + 44);
	uint64_t mcfg_addr = get_le64(xsdt + 52);
	/* The RSDT, for ACPI 1.0 readers, lists the same tables. */
	uint8_t *rsdt = sdt(r, get_le32(rsdp + 16), "RSDT", 36 + 3 * 4);
	cr_assert_eq(get_le32(rsdt + 36), fadt_addr);
	cr_assert_eq(get_le32(rsdt + 40), madt_addr);
	cr_assert_eq(get_le32(rsdt + 44), mcfg_addr);

	/* MCFG: ECAM for segment 0, bus 0 only. */
	uint8_t *mcfg = sdt(r, mcfg_addr, "MCFG", 60);
	cr_assert_eq(get_le64(mcfg + 44), PCI_ECAM_BASE);
	cr_assert_eq(get_le16(mcfg + 52), 0, "segment");
	cr_assert_eq(mcfg[54], 0, "start bus");
	cr_assert_eq(mcfg[55], 0, "end bus");

	uint8_t *fadt = sdt(r, fadt_addr, "FACP", 276);
	cr_assert_eq(fadt[8], 6, "FADT revision");
	cr_assert_eq(fadt[131] & 0x0f, 5, "FADT minor version");
	uint32_t flags = get_le32(fadt + 112);
	cr_assert_eq(flags, (1u << 20) | (1u << 10), "flags 0x%x", flags);
	cr_assert_eq(get_le16(fadt + 109), 0x0005, "IAPC_BOOT_ARCH: legacy devices, no VGA");
	cr_assert_eq(get_le32(fadt + 36), 0, "no FACS");
	cr_assert_eq(get_le64(fadt + 132), 0, "no X_FACS");
	cr_assert_eq(get_le16(fadt + 46), 0, "no SCI");
	cr_assert_eq(get_le32(fadt + 76), 0, "no PM timer");
	/* RESET_REG: byte I/O port 0x64, value 0xfe (the i8042 reset). */
	const uint8_t gas[12] = {1, 8, 0, 1, 0x64};
	cr_assert_arr_eq(fadt + 116, gas, 12);
	cr_assert_eq(fadt[128], 0xfe);
	/* SLEEP_CONTROL_REG and SLEEP_STATUS_REG: ports 0x600 and 0x601 (devices/acpi_sleep). */
	const uint8_t sleep_control[12] = {1, 8, 0, 1, 0x00, 0x06},
		      sleep_status[12] = {1, 8, 0, 1, 0x01, 0x06};
	cr_assert_arr_eq(fadt + 244, sleep_control, 12);
	cr_assert_arr_eq(fadt + 256, sleep_status, 12);
	cr_assert_arr_eq(fadt + 268, "MNVMM\0\0\0", 8);
	uint64_t dsdt_addr = get_le64(fadt + 140);
	cr_assert_eq(get_le32(fadt + 40), dsdt_addr, "DSDT and X_DSDT agree");
	uint32_t dsdt_len = get_le32(gpa(r, dsdt_addr + 4, 4));
	cr_assert_gt(dsdt_len, 36, "the DSDT carries AML");
	uint8_t *dsdt = sdt(r, dsdt_addr, "DSDT", dsdt_len);
	cr_assert_eq(dsdt[8], 2);
	/* Name (\_S5, ...) then Scope (\_SB) { Device (PCI0) ... }. */
	const uint8_t s5[] = {0x08, '\\', '_', 'S', '5', '_', 0x12};
	cr_assert_arr_eq(dsdt + 36, s5, sizeof(s5), "\\_S5 first");
	cr_assert(memchr(dsdt + 36, 0x10, dsdt_len - 36), "ScopeOp");
	cr_assert(memmem(dsdt + 36, dsdt_len - 36, "PCI0", 4), "\\_SB.PCI0 is described");
	cr_assert(memmem(dsdt + 36, dsdt_len - 36, "_PRT", 4), "with its interrupt routing");

	uint8_t *madt = sdt(r, madt_addr, "APIC", madt_len(n));
	cr_assert_eq(get_le32(madt + 36), 0xfee00000);
	cr_assert_eq(get_le32(madt + 40), 1, "PCAT_COMPAT");
	int lapics = 0, ioapics = 0, nmis = 0;
	uint32_t len = get_le32(madt + 4);
	for (uint32_t off = 44; off < len;) {
		const uint8_t *e = madt + off;
		cr_assert_geq(e[1], 2, "entry at %u", off);
		cr_assert_leq(off + e[1], len, "entry at %u", off);
		switch (e[0]) {
		case 0:
			cr_assert_eq(e[1], 8);
			cr_assert_eq(e[2], lapics, "processor UID");
			cr_assert_eq(e[3], lapics, "APIC id");
			cr_assert_eq(get_le32(e + 4), 1, "enabled");
			lapics++;
			break;
		case 1:
			cr_assert_eq(e[1], 12);
			cr_assert_eq(e[2], n, "IOAPIC id");
			cr_assert_eq(get_le32(e + 4), 0xfec00000);
			cr_assert_eq(get_le32(e + 8), 0, "GSI base");
			ioapics++;
			break;
		case 4:
			cr_assert_eq(e[1], 6);
			cr_assert_eq(e[2], 0xff, "all processors");
			cr_assert_eq(get_le16(e + 3), 0);
			cr_assert_eq(e[5], 1, "LINT1");
			nmis++;
			break;
		default:
			cr_assert_fail("unexpected MADT entry type %u (no overrides expected)",
				       e[0]);
		}
		off += e[1];
	}
	cr_assert_eq(lapics, n);
	cr_assert_eq(ioapics, 1);
	cr_assert_eq(nmis, 1);
}

ParameterizedTestParameters(acpi, tables_for_n_cpus)
{
	static int counts[] = {1, 2, 8, 254};
	return cr_make_param_array(int, counts, sizeof(counts) / sizeof(counts[0]));
}

ParameterizedTest(int *n, acpi, tables_for_n_cpus)
{
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	memset(gpa(&r, ACPI_TABLES_START, 0x10000), 0xcc, 0x10000);
	cr_assert_eq(
	    acpi_write(&r.mem, ACPI_TABLES_START, ACPI_TABLES_END, *n, NULL, err, sizeof(err)), 0,
	    "%s", err);
	verify(&r, *n);
	cr_assert_eq(acpi_tables_size(*n), 0x2200 + madt_len(*n), "MADT after the DSDT's 8 KiB");
	/* Nothing written past the tables. */
	cr_assert_eq(*gpa(&r, ACPI_TABLES_START + acpi_tables_size(*n), 1), 0xcc);
	test_ram_fini(&r);
}

Test(acpi, cpu_limits)
{
	cr_assert_eq(acpi_max_cpus(ACPI_TABLES_START, ACPI_TABLES_END), 254);
	cr_assert_eq(acpi_max_cpus(0x1000, 0x1000 + acpi_tables_size(3)), 3);
	cr_assert_eq(acpi_max_cpus(0x1000, 0x1000 + acpi_tables_size(3) - 1), 2);
	cr_assert_eq(acpi_max_cpus(0x1000, 0x1000 + acpi_tables_size(0) - 1), 0);
	cr_assert_eq(acpi_max_cpus(0x2000, 0x1000), 0);
	cr_assert_eq(acpi_max_cpus(UINT64_MAX - 8, UINT64_MAX), 0);
}

Test(acpi, refuses_what_does_not_fit)
{
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	uint64_t base = ACPI_TABLES_START;
	cr_assert_neq(acpi_write(&r.mem, base, base + 0x100, 1, NULL, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "ACPI tables support 1..0 CPUs, asked for 1");
	cr_assert_neq(
	    acpi_write(&r.mem, base, base + acpi_tables_size(4) - 1, 4, NULL, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "ACPI tables support 1..3 CPUs, asked for 4");
	cr_assert_neq(acpi_write(&r.mem, base, ACPI_TABLES_END, 255, NULL, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "ACPI tables support 1..254 CPUs, asked for 255");
	cr_assert_neq(acpi_write(&r.mem, base, ACPI_TABLES_END, 0, NULL, err, sizeof(err)), 0);
	cr_assert_neq(acpi_write(&r.mem, base, ACPI_TABLES_END, -1, NULL, err, sizeof(err)), 0);
	/* Misaligned RSDP, no RAM, above 4 GiB. */
	cr_assert_neq(acpi_write(&r.mem, base + 8, ACPI_TABLES_END, 1, NULL, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "no guest RAM for the ACPI tables at 0xe0008");
	cr_assert_neq(acpi_write(&r.mem, 16 * MiB - 0x100, 17 * MiB, 1, NULL, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "no guest RAM for the ACPI tables at 0xffff00");
	cr_assert_neq(acpi_write(&r.mem, 0x100000000ULL, 0x100010000ULL, 1, NULL, err, sizeof(err)),
		      0);
	cr_assert_str_eq(err, "no guest RAM for the ACPI tables at 0x100000000");
	test_ram_fini(&r);
}

Test(acpi, bzimage_boot_hands_over_rsdp)
{
	struct test_ram r;
	test_ram_init(&r, 256 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	struct boot_args args = {.kernel = img, .kernel_size = size, .cmdline = "", .nr_cpus = 2};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	uint8_t *bp = gpa(&r, ZERO_PAGE_ADDR, 0x1000);
	cr_assert_eq(get_le64(bp + 0x070), 0xe0000, "acpi_rsdp_addr");
	verify(&r, 2);
	/* The MP table still sits at 0xf0000, next to the ACPI tables. */
	cr_assert_arr_eq(gpa(&r, 0xf0000, 4), "_MP_", 4);
	/* The reset vector resets through the i8042: cli; mov $0xfe,%al; out %al,$0x64; hlt. */
	const uint8_t reset[] = {0xfa, 0xb0, 0xfe, 0xe6, 0x64, 0xf4, 0xeb, 0xfd};
	cr_assert_arr_eq(gpa(&r, 0xffff0, sizeof(reset)), reset, sizeof(reset));
	/* e820: [0xe0000, 1 MiB) reserved in one entry, as the zero page tells. */
	cr_assert_eq(bp[0x1e8], 4);
	const uint8_t *e820 = bp + 0x2d0 + 2 * 20;
	cr_assert_eq(get_le64(e820), 0xe0000);
	cr_assert_eq(get_le64(e820 + 8), 0x20000);
	cr_assert_eq(get_le32(e820 + 16), E820_RESERVED);
	cr_assert_eq(get_le64(e820 - 20 + 8) + get_le64(e820 - 20), 0xa0000, "EBDA entry ends");
	free(img);
	test_ram_fini(&r);
}

Test(acpi, pvh_boot_hands_over_rsdp)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	enum { TEXT = 0x1000, NOTES = 0x2000, SIZE = 0x3000 };
	const uint64_t kphys = 0x1000000;
	uint8_t notes[64], desc[4];
	put_le32(desc, (uint32_t)kphys);
	size_t nlen = test_note(notes, 0, "Xen", 4, 18 /* XEN_ELFNOTE_PHYS32_ENTRY */, desc, 4);
	struct test_seg segs[2] = {{PT_LOAD, TEXT, kphys, kphys, 0x1000, 0x1000, 0x1000},
				   {PT_NOTE, NOTES, 0, 0, nlen, nlen, 4}};
	uint8_t *img = test_elf(1, kphys, segs, 2, SIZE);
	memcpy(img + NOTES, notes, nlen);
	struct boot_args args = {.kernel = img, .kernel_size = SIZE, .cmdline = "", .nr_cpus = 8};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_PVH);
	uint8_t *si = gpa(&r, PVH_START_INFO_ADDR, 56);
	cr_assert_eq(get_le64(si + 32), 0xe0000, "rsdp_paddr");
	verify(&r, 8);
	/* The PVH memory map reserves the same region. */
	uint8_t *mm = gpa(&r, get_le64(si + 40) + 2 * 24, 24);
	cr_assert_eq(get_le64(mm), 0xe0000);
	cr_assert_eq(get_le64(mm + 8), 0x20000);
	cr_assert_eq(get_le32(mm + 16), E820_RESERVED);
	free(img);
	test_ram_fini(&r);
}

Test(acpi, boot_load_254_cpus)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	struct boot_args args = {.kernel = img, .kernel_size = size, .cmdline = "", .nr_cpus = 254};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	verify(&r, 254);
	free(img);
	test_ram_fini(&r);
}
