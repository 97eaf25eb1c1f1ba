/* bzImage setup header validation and payload loading. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/boot.h"
#include "arch/x86/bzimage.h"
#include "arch/x86/layout.h"
#include "x86_test_util.h"

#define PAYLOAD 0x4000

static char err[256];

static int parse(const uint8_t *img, size_t size)
{
	struct bzimage bz;
	err[0] = 0;
	return bzimage_parse(img, size, &bz, err, sizeof(err));
}

Test(bzimage, valid_image_parses)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	struct bzimage bz;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bz.version, 0x020f);
	cr_assert_eq(bz.payload, img + TEST_BZ_SETUP_SIZE);
	cr_assert_eq(bz.payload_size, PAYLOAD);
	cr_assert_eq(bz.setup_hdr, img + 0x1f1);
	cr_assert_eq(bz.setup_hdr_len, TEST_BZ_HDR_END - 0x1f1);
	cr_assert_eq(bz.init_size, TEST_BZ_INIT_SIZE);
	cr_assert_eq(bz.cmdline_size, 2047);
	cr_assert_eq(bz.initrd_addr_max, 0x7fffffff);
	cr_assert_eq(bz.pref_address, TEST_BZ_PREF);
	free(img);
}

Test(bzimage, load_places_payload_and_entry)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	struct bzimage bz;
	uint64_t entry, end;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bzimage_load(&r.mem, &bz, &entry, &end, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(entry, 0x100200);
	/* Decompresses at pref_address (16 MiB), needing init_size there. */
	cr_assert_eq(end, TEST_BZ_PREF + TEST_BZ_INIT_SIZE);
	cr_assert_arr_eq(gpa(&r, 0x100000, PAYLOAD), img + TEST_BZ_SETUP_SIZE, PAYLOAD);
	free(img);
	test_ram_fini(&r);
}

Test(bzimage, setup_sects_zero_means_four)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	img[BZ_OFF_SETUP_SECTS] = 0;
	struct bzimage bz;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bz.payload, img + 5 * 512);
	free(img);
}

Test(bzimage, truncated_at_every_header_length)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	/* Every prefix up to the end of the setup sectors is refused, never read past. */
	for (size_t len = 0; len <= TEST_BZ_SETUP_SIZE; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, img, len);
		cr_assert_neq(parse(copy, len), 0, "length %zu accepted", len);
		cr_assert_neq(err[0], 0);
		free(copy);
	}
	free(img);
}

Test(bzimage, truncated_reports_setup_size)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	cr_assert_neq(parse(img, 0x300), 0);
	cr_assert_str_eq(err, "bzImage truncated: 4 setup sectors need 2560 bytes, file has 768");
	free(img);
}

Test(bzimage, wrong_magic)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	img[BZ_OFF_BOOT_FLAG] = 0;
	cr_assert_eq(bzimage_detect(img, size), false);
	cr_assert_neq(parse(img, size), 0);
	img[BZ_OFF_BOOT_FLAG] = 0x55;
	img[BZ_OFF_HEADER] = 'h';
	cr_assert_eq(bzimage_detect(img, size), false);
	cr_assert_neq(parse(img, size), 0);
	free(img);
}

Test(bzimage, protocol_205_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le16(img + BZ_OFF_VERSION, 0x0205);
	cr_assert_neq(parse(img, size), 0);
	cr_assert_str_eq(err, "bzImage boot protocol 2.05 too old (need >= 2.06)");
	free(img);
}

Test(bzimage, protocol_without_xloadflags_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le16(img + BZ_OFF_VERSION, 0x020b);
	cr_assert_neq(parse(img, size), 0);
	cr_assert(strstr(err, "no 64-bit entry"), "%s", err);
	free(img);
}

Test(bzimage, thirty_two_bit_only_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le16(img + BZ_OFF_XLOADFLAGS, 0x2);
	cr_assert_neq(parse(img, size), 0);
	cr_assert_str_eq(err, "bzImage is 32-bit only (XLF_KERNEL_64 not set)");
	free(img);
}

Test(bzimage, non_relocatable_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	img[BZ_OFF_RELOCATABLE] = 0;
	cr_assert_neq(parse(img, size), 0);
	cr_assert_str_eq(err, "bzImage is not relocatable (relocatable_kernel = 0)");
	free(img);
}

Test(bzimage, huge_setup_sects_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	img[BZ_OFF_SETUP_SECTS] = 0xff; /* 128 KiB of setup in a 18 KiB file */
	cr_assert_neq(parse(img, size), 0);
	cr_assert(strstr(err, "255 setup sectors need 131072 bytes"), "%s", err);
	free(img);
}

Test(bzimage, short_header_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	img[BZ_OFF_JUMP + 1] = 0x10; /* header would end before init_size */
	cr_assert_neq(parse(img, size), 0);
	cr_assert(strstr(err, "setup header ends at 0x212"), "%s", err);
	free(img);
}

Test(bzimage, header_copy_bounded_by_boot_params)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	img[BZ_OFF_JUMP + 1] = 0xff; /* claims the header runs to 0x301 */
	struct bzimage bz;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(bz.setup_hdr_len, 0x290 - 0x1f1);
	free(img);
}

Test(bzimage, syssize_past_file_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le32(img + BZ_OFF_SYSSIZE, 0xffffffff);
	cr_assert_neq(parse(img, size), 0);
	cr_assert_str_eq(err, "bzImage syssize claims 68719476720 payload bytes, file has 16384");
	put_le32(img + BZ_OFF_SYSSIZE, 0);
	cr_assert_neq(parse(img, size), 0);
	free(img);
}

Test(bzimage, bad_kernel_alignment_refused)
{
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le32(img + BZ_OFF_KERNEL_ALIGN, 0x300000);
	cr_assert_neq(parse(img, size), 0);
	cr_assert(strstr(err, "not a power of two"), "%s", err);
	put_le32(img + BZ_OFF_KERNEL_ALIGN, 0);
	cr_assert_neq(parse(img, size), 0);
	free(img);
}

Test(bzimage, init_size_larger_than_ram_refused)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le32(img + BZ_OFF_INIT_SIZE, 0xfffff000);
	struct bzimage bz;
	uint64_t entry = 0, end = 0;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(bzimage_load(&r.mem, &bz, &entry, &end, err, sizeof(err)), 0);
	cr_assert_str_eq(err,
			 "kernel needs memory up to 0x100fff000 but low RAM ends at 0x2000000");
	/* Nothing was written. */
	cr_assert_eq(*gpa(&r, 0x100000, 1), 0);
	free(img);
	test_ram_fini(&r);
}

Test(bzimage, payload_larger_than_ram_refused)
{
	struct test_ram r;
	test_ram_init(&r, 2 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(2 * MiB, &size);
	put_le64(img + BZ_OFF_PREF_ADDRESS, 0);
	put_le32(img + BZ_OFF_INIT_SIZE, 0);
	struct bzimage bz;
	uint64_t entry, end;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(bzimage_load(&r.mem, &bz, &entry, &end, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel needs memory up to 0x300000 but low RAM ends at 0x200000");
	free(img);
	test_ram_fini(&r);
}

Test(bzimage, pref_address_overflow_refused)
{
	struct test_ram r;
	test_ram_init(&r, 32 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	put_le64(img + BZ_OFF_PREF_ADDRESS, UINT64_MAX - 0x1000);
	struct bzimage bz;
	uint64_t entry, end;
	cr_assert_eq(bzimage_parse(img, size, &bz, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(bzimage_load(&r.mem, &bz, &entry, &end, err, sizeof(err)), 0);
	cr_assert(strstr(err, "overflows"), "%s", err);
	free(img);
	test_ram_fini(&r);
}

Test(bzimage, boot_load_end_to_end)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	struct boot_args args = {
	    .kernel = img, .kernel_size = size, .cmdline = "console=ttyS0", .nr_cpus = 2};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_LINUX64);
	cr_assert_eq(e.rip, 0x100200);
	cr_assert_eq(e.zero_page, ZERO_PAGE_ADDR);
	cr_assert_str_eq(e.format, "bzImage");
	cr_assert_eq(e.initrd_addr, 0);
	cr_assert_str_eq((char *)gpa(&r, CMDLINE_ADDR, 14), "console=ttyS0");
	cr_assert_arr_eq(gpa(&r, MPTABLE_START, 4), "_MP_", 4);
	free(img);
	test_ram_fini(&r);
}

Test(bzimage, boot_load_refuses_pvh_on_bzimage)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	struct boot_args args = {
	    .kernel = img, .kernel_size = size, .cmdline = "", .protocol = BOOT_PVH, .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert(strstr(err, "not a bzImage"), "%s", err);
	cr_assert_eq(e.rip, 0);
	free(img);
	test_ram_fini(&r);
}

Test(bzimage, boot_load_truncated_prefixes_fail_cleanly)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	size_t size;
	uint8_t *img = test_bzimage(PAYLOAD, &size);
	for (size_t len = 0; len < TEST_BZ_HDR_END + 16; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, img, len);
		struct boot_args args = {
		    .kernel = copy, .kernel_size = len, .cmdline = "", .nr_cpus = 1};
		struct boot_entry e;
		err[0] = 0;
		cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "len %zu",
			      len);
		if (len < 0x206)
			cr_assert_str_eq(
			    err, "unrecognised kernel image format (expected bzImage or ELF)");
		else
			cr_assert(strstr(err, "truncated"), "len %zu: %s", len, err);
		free(copy);
	}
	free(img);
	test_ram_fini(&r);
}
