/* The e820 map derived from guest RAM layouts below, across and above the 32-bit hole. */
#include <criterion/criterion.h>

#include "arch/x86/e820.h"
#include "arch/x86/layout.h"
#include "x86_test_util.h"

static char err[256];

static void expect(const struct e820_entry *e, uint64_t addr, uint64_t size, uint32_t type)
{
	cr_assert_eq(e->addr, addr, "addr 0x%llx != 0x%llx", (unsigned long long)e->addr,
		     (unsigned long long)addr);
	cr_assert_eq(e->size, size, "size 0x%llx != 0x%llx", (unsigned long long)e->size,
		     (unsigned long long)size);
	cr_assert_eq(e->type, type);
}

static void expect_low(const struct e820_entry *e, uint64_t low_end)
{
	expect(&e[0], 0, 0x9fc00, E820_RAM);
	expect(&e[1], 0x9fc00, 0x400, E820_RESERVED);
	expect(&e[2], 0xe0000, 0x20000, E820_RESERVED); /* ACPI + MP tables */
	expect(&e[3], 0x100000, low_end - 0x100000, E820_RAM);
}

Test(e820, small_16m)
{
	struct test_ram r;
	test_ram_init(&r, 16 * MiB);
	struct e820_entry e[E820_MAX_ENTRIES];
	size_t n;
	cr_assert_eq(e820_build(&r.mem, e, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 4);
	expect_low(e, 16 * MiB);
	test_ram_fini(&r);
}

Test(e820, exactly_3g_fills_low_region)
{
	struct test_ram r;
	test_ram_init(&r, 3 * GiB);
	struct e820_entry e[E820_MAX_ENTRIES];
	size_t n;
	cr_assert_eq(e820_build(&r.mem, e, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 4);
	expect_low(e, 0xc0000000);
	test_ram_fini(&r);
}

Test(e820, five_gib_splits_around_hole)
{
	struct test_ram r;
	test_ram_init(&r, 5 * GiB);
	struct e820_entry e[E820_MAX_ENTRIES];
	size_t n;
	cr_assert_eq(e820_build(&r.mem, e, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 5);
	expect_low(e, 0xc0000000);
	expect(&e[4], 0x100000000ULL, 2 * GiB, E820_RAM);
	/* Total RAM reported equals what was allocated minus the reserved legacy areas. */
	uint64_t ram = 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].type == E820_RAM)
			ram += e[i].size;
	cr_assert_eq(ram, 5 * GiB - (0x100000 - 0x9fc00));
	test_ram_fini(&r);
}

Test(e820, ram_not_above_1m_refused)
{
	struct test_ram r;
	test_ram_init(&r, 1 * MiB);
	struct e820_entry e[E820_MAX_ENTRIES];
	size_t n = 99;
	cr_assert_neq(e820_build(&r.mem, e, &n, err, sizeof(err)), 0);
	cr_assert_eq(n, 0);
	cr_assert_str_eq(err, "guest RAM too small: 1048576 bytes (need more than 1 MiB)");
	test_ram_fini(&r);
}
