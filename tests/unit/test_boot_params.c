/* The Linux zero page: header copy/synthesis, command line, initrd placement, e820, setup_data. */
#include <criterion/criterion.h>
#include <string.h>

#include "arch/x86/boot_params.h"
#include "arch/x86/bzimage.h"
#include "arch/x86/initrd.h"
#include "arch/x86/layout.h"
#include "x86_test_util.h"

static char err[256];

struct fixture {
	struct test_ram r;
	uint8_t *img;
	size_t size;
	struct bzimage bz;
	struct linux_boot lb;
};

static void setup_bz(struct fixture *f, uint64_t ram)
{
	test_ram_init(&f->r, ram);
	f->img = test_bzimage(0x1000, &f->size);
	cr_assert_eq(bzimage_parse(f->img, f->size, &f->bz, err, sizeof(err)), 0, "%s", err);
	f->lb = (struct linux_boot){
	    .setup_hdr = f->bz.setup_hdr,
	    .setup_hdr_len = f->bz.setup_hdr_len,
	    .version = f->bz.version,
	    .cmdline_size = f->bz.cmdline_size,
	    .initrd_addr_max = f->bz.initrd_addr_max,
	    .kernel_end = 0x1800000,
	    .cmdline = "console=ttyS0 quiet",
	};
}

static void teardown(struct fixture *f)
{
	free(f->img);
	test_ram_fini(&f->r);
}

static uint8_t *zp(struct fixture *f)
{
	return gpa(&f->r, ZERO_PAGE_ADDR, 0x1000);
}

Test(boot_params, bzimage_zero_page_fields)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	memset(zp(&f), 0xee, 0x1000); /* stale contents must be cleared */
	uint64_t ird = 1;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ird, 0);
	uint8_t *bp = zp(&f);
	/* Header bytes copied verbatim from the image ... */
	cr_assert_eq(bp[0x1f1], TEST_BZ_SETUP_SECTS);
	cr_assert_eq(get_le32(bp + 0x1f4), 0x1000 / 16);
	cr_assert_eq(get_le16(bp + 0x1fe), 0xaa55);
	cr_assert_eq(get_le32(bp + 0x202), 0x53726448);
	cr_assert_eq(get_le16(bp + 0x206), 0x020f);
	cr_assert_eq(get_le32(bp + 0x260), TEST_BZ_INIT_SIZE);
	/* ... and nothing beyond the header end nor before it. */
	cr_assert_eq(bp[0x26c], 0);
	cr_assert_eq(bp[0x1f0], 0);
	cr_assert_eq(bp[0x000], 0);
	/* Loader fields. */
	cr_assert_eq(bp[0x210], 0xff);
	cr_assert_eq(get_le32(bp + 0x228), CMDLINE_ADDR);
	cr_assert_eq(get_le32(bp + 0x0c8), 0);
	cr_assert_str_eq((char *)gpa(&f.r, CMDLINE_ADDR, 20), "console=ttyS0 quiet");
	cr_assert_eq(get_le32(bp + 0x218), 0);
	cr_assert_eq(get_le32(bp + 0x21c), 0);
	cr_assert_eq(get_le64(bp + 0x250), 0);
	/* e820 */
	cr_assert_eq(bp[0x1e8], 4);
	const uint8_t *e = bp + 0x2d0;
	cr_assert_eq(get_le64(e), 0);
	cr_assert_eq(get_le64(e + 8), 0x9fc00);
	cr_assert_eq(get_le32(e + 16), 1);
	cr_assert_eq(get_le64(e + 20), 0x9fc00);
	cr_assert_eq(get_le32(e + 36), 2);
	cr_assert_eq(get_le64(e + 60), 0x100000);
	cr_assert_eq(get_le64(e + 68), 63 * MiB);
	cr_assert_eq(get_le32(e + 76), 1);
	cr_assert_eq(get_le64(e + 80), 0); /* no fifth entry */
	teardown(&f);
}

Test(boot_params, e820_high_region_in_zero_page)
{
	struct fixture f;
	setup_bz(&f, 5 * GiB);
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	uint8_t *bp = zp(&f);
	cr_assert_eq(bp[0x1e8], 5);
	const uint8_t *e = bp + 0x2d0 + 4 * 20;
	cr_assert_eq(get_le64(e), 0x100000000ULL);
	cr_assert_eq(get_le64(e + 8), 2 * GiB);
	cr_assert_eq(get_le32(e + 16), 1);
	teardown(&f);
}

Test(boot_params, initrd_highest_page_aligned)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	size_t isz = 0x12345;
	uint8_t *initrd = malloc(isz);
	for (size_t i = 0; i < isz; i++)
		initrd[i] = (uint8_t)(i * 13);
	f.lb.initrd = initrd;
	f.lb.initrd_size = isz;
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	uint64_t want = (64 * MiB - isz) & ~0xfffULL;
	cr_assert_eq(ird, want);
	cr_assert_eq(want, 0x3fed000);
	cr_assert_arr_eq(gpa(&f.r, ird, isz), initrd, isz);
	uint8_t *bp = zp(&f);
	cr_assert_eq(get_le32(bp + 0x218), want);
	cr_assert_eq(get_le32(bp + 0x21c), isz);
	cr_assert_eq(get_le32(bp + 0x0c0), 0);
	cr_assert_eq(get_le32(bp + 0x0c4), 0);
	free(initrd);
	teardown(&f);
}

Test(boot_params, initrd_respects_initrd_addr_max)
{
	struct fixture f;
	setup_bz(&f, 3 * GiB);
	uint8_t initrd[0x3000] = {1, 2, 3};
	f.lb.initrd = initrd;
	f.lb.initrd_size = sizeof(initrd);
	f.lb.initrd_addr_max = 0x7fffffff;
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ird, 0x80000000 - 0x3000);
	/* An unaligned maximum rounds the start down to a page. */
	f.lb.initrd_addr_max = 0x2000ffe;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ird, 0x1ffd000);
	cr_assert_leq(ird + sizeof(initrd), 0x2000fffULL);
	teardown(&f);
}

Test(boot_params, initrd_too_large_refused)
{
	struct fixture f;
	setup_bz(&f, 32 * MiB);
	f.lb.initrd = f.img; /* contents irrelevant: it must be refused before copying */
	f.lb.initrd_size = 64 * MiB;
	uint64_t ird = 1;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	cr_assert_eq(ird, 0);
	cr_assert_str_eq(err, "initrd of 67108864 bytes does not fit below 0x2000000 (kernel ends "
			      "at 0x1800000)");
	teardown(&f);
}

Test(boot_params, initrd_not_above_kernel_refused)
{
	struct fixture f;
	setup_bz(&f, 32 * MiB);
	static uint8_t initrd[9 * 1024 * 1024];
	f.lb.initrd = initrd;
	f.lb.initrd_size = sizeof(initrd); /* 9 MiB: would overlap the kernel ending at 24 MiB */
	uint64_t ird;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "initrd of 9437184 bytes does not fit between the kernel end "
			      "0x1800000 and 0x2000000");
	teardown(&f);
}

/* Found by fuzz_kernel_loaders: with a limit below one page and no kernel below it, the only
 * page-aligned address left was 0, returned as success although 0 means "no initrd". */
Test(boot_params, initrd_never_placed_at_address_zero)
{
	struct test_ram r;
	test_ram_init(&r, 8 * MiB);
	static const uint8_t initrd[136];
	uint64_t a = 1;
	cr_assert_neq(initrd_place(&r.mem, initrd, sizeof(initrd), 0, 0x100, &a, err, sizeof(err)),
		      0);
	cr_assert_eq(a, 0);
	cr_assert_str_eq(err,
			 "initrd of 136 bytes does not fit between the kernel end 0x0 and 0x101");
	cr_assert_eq(initrd_place(&r.mem, initrd, sizeof(initrd), 0, 0x1100, &a, err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(a, 0x1000, "the lowest page but one still fits");
	test_ram_fini(&r);
}

Test(boot_params, cmdline_limits)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	uint64_t ird;
	f.lb.cmdline_size = 19; /* exactly strlen("console=ttyS0 quiet") */
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	f.lb.cmdline_size = 18;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel command line too long (limit 18 bytes)");
	/* Beyond CMDLINE_MAX - 1 even if the kernel claims more. */
	f.lb.cmdline_size = 0xffffffff;
	char *big = malloc(CMDLINE_MAX + 1);
	memset(big, 'a', CMDLINE_MAX);
	big[CMDLINE_MAX] = 0;
	f.lb.cmdline = big;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel command line too long (limit 65535 bytes)");
	big[CMDLINE_MAX - 1] = 0;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strlen((char *)gpa(&f.r, CMDLINE_ADDR, CMDLINE_MAX)), CMDLINE_MAX - 1);
	free(big);
	teardown(&f);
}

Test(boot_params, synthesized_header_for_vmlinux)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	struct linux_boot lb = {.version = BOOT_PARAMS_SYNTH_VERSION,
				.cmdline_size = CMDLINE_MAX - 1,
				.initrd_addr_max = 0x7fffffff,
				.kernel_end = 0x2000000,
				.cmdline = "x"};
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&r.mem, &lb, &ird, err, sizeof(err)), 0, "%s", err);
	uint8_t *bp = gpa(&r, ZERO_PAGE_ADDR, 0x1000);
	cr_assert_eq(get_le16(bp + 0x1fe), 0xaa55);
	cr_assert_eq(get_le32(bp + 0x202), 0x53726448);
	cr_assert_eq(get_le16(bp + 0x206), 0x020f);
	cr_assert_eq(get_le32(bp + 0x230), 0x1000000);
	cr_assert_eq(get_le32(bp + 0x22c), 0x7fffffff);
	cr_assert_eq(get_le32(bp + 0x238), CMDLINE_MAX - 1);
	cr_assert_eq(bp[0x210], 0xff);
	cr_assert_eq(get_le32(bp + 0x228), CMDLINE_ADDR);
	test_ram_fini(&r);
}

Test(boot_params, setup_data_dtb)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	put_le64((uint8_t *)f.img + 0x250, 0xdeadbeef); /* hostile chain in the image */
	const uint8_t dtb[] = {0xd0, 0x0d, 0xfe, 0xed, 1, 2, 3, 4, 5};
	f.lb.dtb = dtb;
	f.lb.dtb_size = sizeof(dtb);
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(get_le64(zp(&f) + 0x250), SETUP_DATA_ADDR);
	uint8_t *sd = gpa(&f.r, SETUP_DATA_ADDR, 16 + sizeof(dtb));
	cr_assert_eq(get_le64(sd), 0);
	cr_assert_eq(get_le32(sd + 8), SETUP_DTB);
	cr_assert_eq(get_le32(sd + 12), sizeof(dtb));
	cr_assert_arr_eq(sd + 16, dtb, sizeof(dtb));
	teardown(&f);
}

Test(boot_params, hostile_setup_data_not_forwarded)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	put_le64((uint8_t *)f.img + 0x250, 0xdeadbeef);
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(get_le64(zp(&f) + 0x250), 0);
	teardown(&f);
}

Test(boot_params, setup_data_dtb_too_large)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	size_t room = EBDA_START - SETUP_DATA_ADDR - 16;
	uint8_t *dtb = calloc(1, room + 1);
	f.lb.dtb = dtb;
	f.lb.dtb_size = room; /* exactly fits */
	uint64_t ird;
	cr_assert_eq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0, "%s", err);
	f.lb.dtb_size = room + 1;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "DTB of 457713 bytes too large (limit 457712)");
	f.lb.dtb_size = SIZE_MAX;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	free(dtb);
	teardown(&f);
}

Test(boot_params, setup_data_needs_protocol_209)
{
	struct fixture f;
	setup_bz(&f, 64 * MiB);
	const uint8_t dtb[4] = {0};
	f.lb.dtb = dtb;
	f.lb.dtb_size = sizeof(dtb);
	f.lb.version = 0x0208;
	uint64_t ird;
	cr_assert_neq(boot_params_setup(&f.r.mem, &f.lb, &ird, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel boot protocol 2.08 has no setup_data (DTB needs 2.09)");
	teardown(&f);
}
