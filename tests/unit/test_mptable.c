/* Intel MP 1.4 tables: checksums, entry counts and contents. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <string.h>

#include "arch/x86/boot.h"
#include "arch/x86/layout.h"
#include "arch/x86/mptable.h"
#include "x86_test_util.h"

static char err[256];

#define EBDA_END 0xa0000ULL

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;
	for (size_t i = 0; i < len; i++)
		s = (uint8_t)(s + p[i]);
	return s;
}

/* Check every field the guest relies on; the table was written at base. */
static void verify(struct test_ram *r, uint64_t base, int nr_cpus)
{
	uint8_t *fp = gpa(r, base, 16);
	cr_assert_arr_eq(fp, "_MP_", 4);
	cr_assert_eq(fp[8], 1);
	cr_assert_eq(fp[9], 4);
	cr_assert_eq(sum(fp, 16), 0, "floating pointer checksum");
	cr_assert_eq(fp[11], 0);
	cr_assert_eq(fp[12], 0);
	uint32_t cfg_addr = get_le32(fp + 4);
	cr_assert_eq(cfg_addr, base + 16);

	uint8_t *cfg = gpa(r, cfg_addr, 44);
	uint16_t len = get_le16(cfg + 4);
	cr_assert_eq(len, 44 + 20 * nr_cpus + 8 + 8 + 16 * 8 + 2 * 8);
	cr_assert_eq(mptable_size(nr_cpus), 16 + (uint64_t)len);
	cfg = gpa(r, cfg_addr, len);
	cr_assert_arr_eq(cfg, "PCMP", 4);
	cr_assert_eq(cfg[6], 4);
	cr_assert_eq(sum(cfg, len), 0, "config table checksum");
	cr_assert_arr_eq(cfg + 8, "MINIVMM ", 8);
	cr_assert_eq(get_le16(cfg + 34), nr_cpus + 2 + 16 + 2);
	cr_assert_eq(get_le32(cfg + 36), LAPIC_ADDR);
	cr_assert_eq(get_le16(cfg + 40), 0);

	const uint8_t *p = cfg + 44;
	for (int i = 0; i < nr_cpus; i++, p += 20) {
		cr_assert_eq(p[0], MP_ENTRY_PROCESSOR);
		cr_assert_eq(p[1], i);
		cr_assert_eq(p[3], i == 0 ? 3 : 1, "cpu %d flags", i);
		cr_assert_neq(get_le32(p + 4), 0);
		cr_assert(get_le32(p + 8) & (1u << 9), "APIC feature bit");
	}
	cr_assert_eq(p[0], MP_ENTRY_BUS);
	cr_assert_arr_eq(p + 2, "ISA   ", 6);
	p += 8;
	cr_assert_eq(p[0], MP_ENTRY_IOAPIC);
	cr_assert_eq(p[1], nr_cpus);
	cr_assert_eq(p[2], 0x11);
	cr_assert_eq(p[3], 1);
	cr_assert_eq(get_le32(p + 4), IOAPIC_ADDR);
	p += 8;
	for (int irq = 0; irq < 16; irq++, p += 8) {
		cr_assert_eq(p[0], MP_ENTRY_IOINT);
		cr_assert_eq(p[1], MP_INT_INT);
		cr_assert_eq(p[4], 0);
		cr_assert_eq(p[5], irq);
		cr_assert_eq(p[6], nr_cpus);
		cr_assert_eq(p[7], irq);
	}
	cr_assert_eq(p[0], MP_ENTRY_LOCALINT);
	cr_assert_eq(p[1], MP_INT_EXTINT);
	cr_assert_eq(p[7], 0);
	p += 8;
	cr_assert_eq(p[0], MP_ENTRY_LOCALINT);
	cr_assert_eq(p[1], MP_INT_NMI);
	cr_assert_eq(p[7], 1);
	p += 8;
	cr_assert_eq(p, cfg + len);
}

ParameterizedTestParameters(mptable, cpu_counts)
{
	static int counts[] = {1, 2, 4, 8, 40};
	return cr_make_param_array(int, counts, sizeof(counts) / sizeof(counts[0]));
}

ParameterizedTest(int *n, mptable, cpu_counts)
{
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	cr_assert_eq(mptable_write(&r.mem, EBDA_START, EBDA_END, *n, err, sizeof(err)), 0, "%s",
		     err);
	verify(&r, EBDA_START, *n);
	cr_assert_leq(EBDA_START + mptable_size(*n), EBDA_END);
	test_ram_fini(&r);
}

Test(mptable, ebda_limit_is_40_cpus)
{
	cr_assert_eq(mptable_size(1), 240);
	cr_assert_eq(mptable_max_cpus(EBDA_START, EBDA_END), 40);
	cr_assert_eq(mptable_max_cpus(EBDA_START, EBDA_START + 100), 0);
	cr_assert_eq(mptable_max_cpus(EBDA_END, EBDA_START), 0);
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	cr_assert_neq(mptable_write(&r.mem, EBDA_START, EBDA_END, 41, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "MP table supports 1..40 CPUs, asked for 41");
	cr_assert_neq(mptable_write(&r.mem, EBDA_START, EBDA_END, 0, err, sizeof(err)), 0);
	cr_assert_neq(mptable_write(&r.mem, EBDA_START, EBDA_END, -5, err, sizeof(err)), 0);
	/* Nothing written on failure. */
	cr_assert_eq(*gpa(&r, EBDA_START, 1), 0);
	test_ram_fini(&r);
}

Test(mptable, bios_area_fits_254_cpus)
{
	cr_assert_eq(mptable_max_cpus(BIOS_ROM_START, HIGH_MEMORY_START), 254);
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	cr_assert_eq(
	    mptable_write(&r.mem, BIOS_ROM_START, HIGH_MEMORY_START, 254, err, sizeof(err)), 0,
	    "%s", err);
	verify(&r, BIOS_ROM_START, 254);
	cr_assert_neq(
	    mptable_write(&r.mem, BIOS_ROM_START, HIGH_MEMORY_START, 255, err, sizeof(err)), 0);
	test_ram_fini(&r);
}

Test(mptable, outside_ram_refused)
{
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	cr_assert_neq(
	    mptable_write(&r.mem, 16 * MiB - 0x10, 16 * MiB + 0x1000, 1, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "no guest RAM for the MP table at 0xfffff0");
	test_ram_fini(&r);
}

Test(mptable, boot_load_writes_table_and_checks_cpus)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	struct boot_args args = {.kernel = img, .kernel_size = size, .cmdline = "", .nr_cpus = 3};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	verify(&r, MPTABLE_START, 3);
	args.nr_cpus = 254;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	verify(&r, MPTABLE_START, 254);
	args.nr_cpus = 255;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "255 CPUs requested; the MP table supports 1..254");
	args.nr_cpus = 0;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	free(img);
	test_ram_fini(&r);
}
