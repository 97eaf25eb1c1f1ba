/* x86_boot_load: format detection, argument checks and what boot_entry reports. */
#include <criterion/criterion.h>
#include <string.h>

#include "arch/x86/boot.h"
#include "arch/x86/layout.h"
#include "x86_test_util.h"

static char err[256];

Test(boot, unrecognised_format)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	uint8_t junk[4096];
	memset(junk, 0x90, sizeof(junk));
	struct boot_args args = {
	    .kernel = junk, .kernel_size = sizeof(junk), .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "unrecognised kernel image format (expected bzImage or ELF)");
	args.kernel_size = 0;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "unrecognised kernel image format (expected bzImage or ELF)");
	test_ram_fini(&r);
}

Test(boot, missing_arguments_and_bad_protocol)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	struct boot_args args = {.kernel = NULL, .kernel_size = size, .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	args.kernel = img;
	args.cmdline = NULL;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	args.cmdline = "";
	args.protocol = (enum boot_protocol)7;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "unknown boot protocol 7");
	free(img);
	test_ram_fini(&r);
}

Test(boot, bzimage_with_initrd_and_dtb)
{
	struct test_ram r;
	test_ram_init(&r, 256 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	uint8_t initrd[5000];
	memset(initrd, 0x77, sizeof(initrd));
	const uint8_t dtb[8] = {0xd0, 0x0d, 0xfe, 0xed};
	struct boot_args args = {.kernel = img,
				 .kernel_size = size,
				 .initrd = initrd,
				 .initrd_size = sizeof(initrd),
				 .cmdline = "init=/bin/sh",
				 .protocol = BOOT_LINUX64,
				 .nr_cpus = 2,
				 .dtb = dtb,
				 .dtb_size = sizeof(dtb)};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_LINUX64);
	cr_assert_eq(e.initrd_addr, 256 * MiB - 0x2000);
	cr_assert_eq(e.initrd_size, sizeof(initrd));
	uint8_t *bp = gpa(&r, ZERO_PAGE_ADDR, 0x1000);
	cr_assert_eq(get_le32(bp + 0x218), 256 * MiB - 0x2000);
	cr_assert_eq(get_le64(bp + 0x250), SETUP_DATA_ADDR);
	free(img);
	test_ram_fini(&r);
}

Test(boot, failure_clears_entry)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	static uint8_t initrd[32 * 1024 * 1024];
	struct boot_args args = {.kernel = img,
				 .kernel_size = size,
				 .initrd = initrd,
				 .initrd_size = sizeof(initrd),
				 .cmdline = "",
				 .nr_cpus = 1};
	struct boot_entry e;
	memset(&e, 0x5a, sizeof(e));
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert(strstr(err, "initrd of 33554432 bytes"), "%s", err);
	cr_assert_eq(e.rip, 0);
	cr_assert_null(e.format);
	free(img);
	test_ram_fini(&r);
}

Test(boot, small_error_buffer_is_safe)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	uint8_t junk[16] = {0};
	struct boot_args args = {
	    .kernel = junk, .kernel_size = sizeof(junk), .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	char small[8];
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, small, sizeof(small)), 0);
	cr_assert_str_eq(small, "unrecog");
	test_ram_fini(&r);
}

Test(boot, tiny_ram_refused_cleanly)
{
	struct test_ram r;
	test_ram_init(&r, 256 * 1024);
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	struct boot_args args = {.kernel = img, .kernel_size = size, .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel needs memory up to 0x1800000 but low RAM ends at 0x40000");
	/* 1 MiB + 8 KiB: the payload fits only without a decompression area. */
	test_ram_fini(&r);
	test_ram_init(&r, 1 * MiB + 0x2000);
	put_le64(img + BZ_OFF_PREF_ADDRESS, 0);
	put_le32(img + BZ_OFF_INIT_SIZE, 0);
	put_le32(img + BZ_OFF_KERNEL_ALIGN, 0x1000);
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.rip, 0x100200);
	free(img);
	test_ram_fini(&r);
}

/* Deterministic xorshift so failures reproduce. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Hostile images: random byte corruption in the headers plus random truncation. Every outcome
 * must be a clean success or a one-line error; ASan/UBSan builds catch anything else. */
static void mutate_and_load(uint8_t *orig, size_t size, size_t span_off, size_t span_len,
			    uint64_t seed)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t *img = malloc(size);
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(img, orig, size);
		int flips = 1 + (int)(next_rand(&seed) % 8);
		for (int i = 0; i < flips; i++)
			img[span_off + next_rand(&seed) % span_len] = (uint8_t)next_rand(&seed);
		size_t len = next_rand(&seed) % 4 == 0 ? next_rand(&seed) % (size + 1) : size;
		uint8_t *copy = malloc(len ? len : 1); /* exact-size copy: ASan sees overreads */
		memcpy(copy, img, len);
		struct boot_args args = {
		    .kernel = copy, .kernel_size = len, .cmdline = "x", .nr_cpus = 2};
		struct boot_entry e;
		err[0] = 0;
		if (x86_boot_load(&r.mem, &args, &e, err, sizeof(err)) == 0)
			cr_assert(e.rip != 0 && e.format != NULL);
		else
			cr_assert(err[0] != 0 && !strchr(err, '\n'), "iter %d: '%s'", iter, err);
		free(copy);
	}
	free(img);
	test_ram_fini(&r);
}

Test(boot, fuzz_bzimage_headers)
{
	size_t size;
	uint8_t *img = test_bzimage(0x1000, &size);
	mutate_and_load(img, size, 0, 0x300, 0x9e3779b97f4a7c15ULL);
	free(img);
}

Test(boot, fuzz_elf_headers)
{
	uint8_t notes[64];
	uint8_t desc[4] = {0x40, 0, 0, 1}; /* 0x1000040 */
	size_t nlen = test_note(notes, 0, "Xen", 4, 18, desc, 4);
	struct test_seg segs[3] = {
	    {PT_LOAD, 0x1000, 0x1000000, 0x1000000, 0x1000, 0x1000, 0x1000},
	    {PT_LOAD, 0x2000, 0x1200000, 0x1200000, 0x100, 0x4000, 0x1000},
	    {PT_NOTE, 0x2100, 0, 0, nlen, nlen, 4},
	};
	size_t size = 0x2200;
	uint8_t *img = test_elf(1, 0x1000000, segs, 3, size);
	memcpy(img + 0x2100, notes, nlen);
	mutate_and_load(img, size, 0, sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr), 0x1234567ULL);
	mutate_and_load(img, size, 0x2100, nlen, 42); /* the PVH note itself */
	free(img);
}
