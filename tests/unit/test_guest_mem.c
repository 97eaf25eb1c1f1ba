/* Guest RAM's mapping (vmm/base/guest_mem.c): which parts may use transparent huge pages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vmm/base/guest_mem.h"

/* The VmFlags line of the /proc/self/smaps entry that starts at addr; false if none does. */
static bool vma_flags(const void *addr, char *flags, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	cr_assert_not_null(f);
	char line[512];
	bool in = false, found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = start == (unsigned long)addr;
		else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(flags, size, "%s", line + 8);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool has_flag(const char *flags, const char *flag)
{
	char padded[8];
	snprintf(padded, sizeof(padded), " %s ", flag);
	char line[512];
	snprintf(line, sizeof(line), " %s ", flags);
	for (char *p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return strstr(line, padded) != NULL;
}

Test(guest_mem, the_loaders_low_pages_are_small_the_rest_may_be_huge)
{
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0)
		cr_skip_test("this kernel has no transparent huge pages");
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, 64ULL << 20, false), 0);
	uint8_t *base = mem.mapping;
	char low[512], high[512];
	cr_assert(vma_flags(base + GUEST_MEM_LOW_4K_BYTES, high, sizeof(high)),
		  "no mapping of its own starts at 2 MiB: the low pages were not split off");
	cr_assert(has_flag(high, "hg"), "RAM above 2 MiB did not ask for huge pages: %s", high);
	cr_assert(vma_flags(base, low, sizeof(low)));
	cr_assert_not(has_flag(low, "hg"), "the first 2 MiB asked for huge pages: %s", low);
	cr_assert(has_flag(low, "dd"), "guest RAM must stay out of core files: %s", low);
	cr_assert(has_flag(high, "dd"), "guest RAM must stay out of core files: %s", high);
	guest_mem_destroy(&mem);
}

/* RAM no larger than the low part: no huge pages asked, nothing split. */
Test(guest_mem, ram_within_the_low_pages_is_all_small)
{
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, GUEST_MEM_LOW_4K_BYTES, false), 0);
	char flags[512];
	cr_assert(vma_flags(mem.mapping, flags, sizeof(flags)));
	cr_assert_not(has_flag(flags, "hg"), "%s", flags);
	guest_mem_destroy(&mem);
}
