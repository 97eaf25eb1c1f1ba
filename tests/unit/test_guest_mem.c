/* Guest RAM's mapping (base/guest_mem.c): which parts may use transparent huge pages, and
 * its pagemap descriptor, which must not show host physical addresses. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "base/guest_mem.h"

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
	cr_assert_eq(guest_mem_init(&mem, 64ULL << 20, false, false), 0);
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
	cr_assert_eq(guest_mem_init(&mem, GUEST_MEM_LOW_4K_BYTES, false, false), 0);
	char flags[512];
	cr_assert(vma_flags(mem.mapping, flags, sizeof(flags)));
	cr_assert_not(has_flag(flags, "hg"), "%s", flags);
	guest_mem_destroy(&mem);
}

/* ---- the pagemap descriptor: present and swapped bits, never page frame numbers ---- */

#define PM_PRESENT  (1ULL << 63)
#define PM_PFN_BITS ((1ULL << 55) - 1) /* bits 0-54 */

static uint64_t pagemap_entry(int fd, const void *p)
{
	uint64_t e = 0;
	off_t off = (off_t)((uintptr_t)p / 4096 * sizeof(e));
	cr_assert_eq(pread(fd, &e, sizeof(e), off), (ssize_t)sizeof(e));
	return e;
}

static bool sys_admin_effective(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	cr_assert_eq(syscall(SYS_capget, &hdr, caps), 0);
	return caps[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN);
}

/* A touched page of mem: present through its pagemap descriptor, with no frame number, where
 * a descriptor this process opens itself does show one (root: CAP_SYS_ADMIN, as in CI). The
 * capability, if the test had it before mem was set up (admin), is back in the effective set. */
static void expect_present_without_pfn(struct guest_mem *mem, bool admin)
{
	cr_assert(!admin || sys_admin_effective(), "CAP_SYS_ADMIN was not put back");
	uint8_t *page = mem->mapping + 5 * 4096;
	*(volatile uint8_t *)page = 1;
	int own = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(own, 0);
	uint64_t shown = pagemap_entry(own, page);
	close(own);
	bool can_see = shown & PM_PFN_BITS;
	uint64_t e = mem->pagemap_fd >= 0 ? pagemap_entry(mem->pagemap_fd, page) : 0;
	int fd = mem->pagemap_fd;
	guest_mem_destroy(mem);
	if (!can_see)
		cr_skip_test("this process is shown no page frame numbers: nothing to hide");
	cr_assert_geq(fd, 0, "no pagemap descriptor");
	cr_assert(e & PM_PRESENT, "a touched page is not present: %#llx", (unsigned long long)e);
	cr_assert_eq(e & PM_PFN_BITS, 0, "the descriptor shows frame number %#llx",
		     (unsigned long long)(e & PM_PFN_BITS));
}

Test(guest_mem, pagemap_shows_no_frame_numbers)
{
	bool admin = sys_admin_effective();
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, 16ULL << 20, false, false), 0);
	expect_present_without_pfn(&mem, admin);
}

Test(guest_mem, restored_ram_pagemap_shows_no_frame_numbers)
{
	int fd = memfd_create("ram", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 16 << 20), 0);
	bool admin = sys_admin_effective();
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init_file(&mem, 16ULL << 20, fd), 0);
	close(fd);
	expect_present_without_pfn(&mem, admin);
}

/* ---- shared RAM (a vhost-user back end maps it too) ---- */

/* Bytes of shmem this process's mapping of fd holds (its RssShmem would count the whole
 * process; the memfd's own size in blocks is what the balloon must shrink). */
static uint64_t memfd_bytes(int fd)
{
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

Test(guest_mem, shared_ram_is_one_memfd_that_another_mapping_sees)
{
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, 16ULL << 20, false, true), 0);
	cr_assert_geq(mem.shared_fd, 0, "shared RAM without its memfd");
	/* What a back end does: map the descriptor it was passed, at the region's offset. */
	uint8_t *peer =
	    mmap(NULL, 16ULL << 20, PROT_READ | PROT_WRITE, MAP_SHARED, mem.shared_fd, 0);
	cr_assert_neq(peer, MAP_FAILED);
	uint8_t *g = guest_mem_ptr(&mem, 0x123000, 4);
	memcpy(g, "ping", 4);
	cr_assert_eq(memcmp(peer + 0x123000, "ping", 4), 0, "the peer does not see guest writes");
	memcpy(peer + 0x200000, "pong", 4);
	cr_assert_eq(memcmp(guest_mem_ptr(&mem, 0x200000, 4), "pong", 4), 0,
		     "the guest does not see the peer's writes");
	munmap(peer, 16ULL << 20);
	guest_mem_destroy(&mem);
}

Test(guest_mem, private_ram_has_no_memfd)
{
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, 4ULL << 20, false, false), 0);
	cr_assert_eq(mem.shared_fd, -1);
	guest_mem_destroy(&mem);
}

/* The balloon's release: on shared RAM a MADV_DONTNEED would leave the pages in the memfd
 * (the host gets nothing back and the guest reads its old data again). */
Test(guest_mem, releasing_shared_ram_frees_the_memfd_pages_and_reads_zeros)
{
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, 16ULL << 20, false, true), 0);
	uint8_t *p = guest_mem_ptr(&mem, 4ULL << 20, 8ULL << 20);
	memset(p, 0xab, 8ULL << 20);
	uint64_t before = memfd_bytes(mem.shared_fd);
	cr_assert_geq(before, 8ULL << 20);
	cr_assert_eq(guest_mem_release(&mem, p, 8ULL << 20), 0);
	uint64_t after = memfd_bytes(mem.shared_fd);
	cr_assert_leq(after + (8ULL << 20), before, "released 8 MiB, memfd went %llu -> %llu bytes",
		      (unsigned long long)before, (unsigned long long)after);
	cr_assert_eq(p[0], 0);
	cr_assert_eq(p[(8ULL << 20) - 1], 0);
	guest_mem_destroy(&mem);
}

Test(guest_mem, releasing_private_ram_reads_zeros)
{
	struct guest_mem mem;
	cr_assert_eq(guest_mem_init(&mem, 4ULL << 20, false, false), 0);
	uint8_t *p = guest_mem_ptr(&mem, 1ULL << 20, 4096);
	memset(p, 0xcd, 4096);
	cr_assert_eq(guest_mem_release(&mem, p, 4096), 0);
	cr_assert_eq(p[0], 0);
	cr_assert_eq(p[4095], 0);
	guest_mem_destroy(&mem);
}
