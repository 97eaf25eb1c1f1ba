/* hvm_start_info, module list and memory map for PVH boot. */
#include <criterion/criterion.h>
#include <string.h>

#include "arch/x86/layout.h"
#include "arch/x86/pvh.h"
#include "x86_test_util.h"

static char err[256];

Test(pvh, start_info_with_initrd)
{
	struct test_ram r;
	test_ram_init(&r, 128 * MiB);
	memset(gpa(&r, PVH_START_INFO_ADDR, 0x1000), 0xcc, 0x1000);
	uint8_t initrd[0x2800];
	memset(initrd, 0x42, sizeof(initrd));
	struct pvh_boot pb = {.kernel_end = 0x1400000,
			      .cmdline = "console=hvc0",
			      .initrd = initrd,
			      .initrd_size = sizeof(initrd)};
	uint64_t ird;
	cr_assert_eq(pvh_setup(&r.mem, &pb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ird, 128 * MiB - 0x3000);
	cr_assert_arr_eq(gpa(&r, ird, sizeof(initrd)), initrd, sizeof(initrd));

	uint8_t *si = gpa(&r, PVH_START_INFO_ADDR, 56);
	cr_assert_eq(get_le32(si + 0), 0x336ec578);
	cr_assert_eq(get_le32(si + 4), 1);
	cr_assert_eq(get_le32(si + 8), 0);
	cr_assert_eq(get_le32(si + 12), 1);
	uint64_t modlist = get_le64(si + 16);
	cr_assert_eq(get_le64(si + 24), CMDLINE_ADDR);
	cr_assert_str_eq((char *)gpa(&r, CMDLINE_ADDR, 13), "console=hvc0");
	cr_assert_eq(get_le64(si + 32), 0);
	uint64_t memmap = get_le64(si + 40);
	uint32_t n = get_le32(si + 48);
	cr_assert_eq(get_le32(si + 52), 0);

	cr_assert_eq(modlist, PVH_START_INFO_ADDR + 56);
	uint8_t *mod = gpa(&r, modlist, 32);
	cr_assert_eq(get_le64(mod), ird);
	cr_assert_eq(get_le64(mod + 8), sizeof(initrd));
	cr_assert_eq(get_le64(mod + 16), 0);
	cr_assert_eq(get_le64(mod + 24), 0);

	cr_assert_eq(n, 4);
	cr_assert_eq(memmap % 8, 0);
	cr_assert_leq(memmap + n * 24, ZERO_PAGE_ADDR);
	cr_assert_geq(memmap, modlist + 32);
	const uint64_t want[4][3] = {
	    {0, 0x9fc00, 1}, {0x9fc00, 0x400, 2}, {0xe0000, 0x20000, 2}, {0x100000, 127 * MiB, 1}};
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *e = gpa(&r, memmap + i * 24, 24);
		cr_assert_eq(get_le64(e), want[i][0], "entry %u", i);
		cr_assert_eq(get_le64(e + 8), want[i][1], "entry %u", i);
		cr_assert_eq(get_le32(e + 16), want[i][2], "entry %u", i);
		cr_assert_eq(get_le32(e + 20), 0);
	}
	test_ram_fini(&r);
}

Test(pvh, no_initrd_no_modules)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	struct pvh_boot pb = {.kernel_end = 0x1400000, .cmdline = ""};
	uint64_t ird = 1;
	cr_assert_eq(pvh_setup(&r.mem, &pb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ird, 0);
	uint8_t *si = gpa(&r, PVH_START_INFO_ADDR, 56);
	cr_assert_eq(get_le32(si + 12), 0);
	cr_assert_eq(get_le64(si + 16), 0);
	cr_assert_eq(*gpa(&r, CMDLINE_ADDR, 1), 0);
	test_ram_fini(&r);
}

Test(pvh, memmap_above_4g)
{
	struct test_ram r;
	test_ram_init(&r, 5 * GiB);
	struct pvh_boot pb = {.kernel_end = 0x1400000, .cmdline = ""};
	uint64_t ird;
	cr_assert_eq(pvh_setup(&r.mem, &pb, &ird, err, sizeof(err)), 0, "%s", err);
	uint8_t *si = gpa(&r, PVH_START_INFO_ADDR, 56);
	cr_assert_eq(get_le32(si + 48), 5);
	uint8_t *e = gpa(&r, get_le64(si + 40) + 4 * 24, 24);
	cr_assert_eq(get_le64(e), 0x100000000ULL);
	cr_assert_eq(get_le64(e + 8), 2 * GiB);
	cr_assert_eq(get_le32(e + 16), 1);
	test_ram_fini(&r);
}

Test(pvh, initrd_too_large_refused)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	static uint8_t initrd[16 * 1024 * 1024];
	struct pvh_boot pb = {.kernel_end = 0x1400000,
			      .cmdline = "",
			      .initrd = initrd,
			      .initrd_size = sizeof(initrd)};
	uint64_t ird;
	cr_assert_neq(pvh_setup(&r.mem, &pb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "initrd of 16777216 bytes does not fit between the kernel end "
			      "0x1400000 and 0x2000000");
	test_ram_fini(&r);
}

Test(pvh, cmdline_too_long_refused)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	char *big = malloc(CMDLINE_MAX + 1);
	memset(big, 'b', CMDLINE_MAX);
	big[CMDLINE_MAX] = 0;
	struct pvh_boot pb = {.kernel_end = 0x1400000, .cmdline = big};
	uint64_t ird;
	cr_assert_neq(pvh_setup(&r.mem, &pb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel command line too long (limit 65535 bytes)");
	free(big);
	test_ram_fini(&r);
}
