/* ELF kernel validation, PVH note lookup and loading; protocol selection in x86_boot_load. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/boot.h"
#include "arch/x86/elf.h"
#include "arch/x86/layout.h"
#include "x86_test_util.h"

static char err[256];

#define TEXT_OFF  0x1000
#define TEXT_SZ	  0x2000
#define DATA_OFF  0x3000
#define DATA_SZ	  0x800
#define BSS_SZ	  0x3000
#define NOTE_OFF  0x3800
#define FILE_SZ	  0x4000
#define KPHYS	  0x1000000ULL /* where vmlinux links startup_64 */
#define KVIRT	  0xffffffff81000000ULL
#define PVH_ENTRY (KPHYS + 0x40)

/* A vmlinux-like ELF64: text + data/bss, entry physical, optional note segment. */
static uint8_t *vmlinux(int is64, uint64_t entry, const uint8_t *notes, size_t notes_len)
{
	struct test_seg segs[3] = {
	    {PT_LOAD, TEXT_OFF, KVIRT, KPHYS, TEXT_SZ, TEXT_SZ, 0x200000},
	    {PT_LOAD, DATA_OFF, KVIRT + 0x200000, KPHYS + 0x200000, DATA_SZ, DATA_SZ + BSS_SZ,
	     0x200000},
	    {PT_NOTE, NOTE_OFF, 0, 0, notes_len, notes_len, 4},
	};
	if (!is64) {
		segs[0].vaddr = KPHYS;
		segs[1].vaddr = KPHYS + 0x200000;
	}
	uint8_t *img = test_elf(is64, entry, segs, notes ? 3 : 2, FILE_SZ);
	for (size_t i = 0; i < TEXT_SZ; i++)
		img[TEXT_OFF + i] = (uint8_t)(i ^ 0x5a);
	memset(img + DATA_OFF, 0xd7, DATA_SZ);
	if (notes)
		memcpy(img + NOTE_OFF, notes, notes_len);
	return img;
}

/* A "GNU" note followed by the Xen PHYS32_ENTRY note. */
static size_t pvh_notes(uint8_t *buf, uint32_t descsz, uint64_t entry)
{
	uint8_t desc[8];
	put_le64(desc, entry);
	size_t off = test_note(buf, 0, "GNU", 4, 3, "abcdefghijklmnopqrst", 20);
	return test_note(buf, off, "Xen", 4, XEN_ELFNOTE_PHYS32_ENTRY, desc, descsz);
}

static int parse(const uint8_t *img, size_t size, struct elf_info *info)
{
	err[0] = 0;
	return elf_parse(img, size, info, err, sizeof(err));
}

Test(elf, vmlinux_parses_and_loads)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	memset(gpa(&r, KPHYS + 0x200000, DATA_SZ + BSS_SZ), 0xaa, DATA_SZ + BSS_SZ);
	uint8_t *img = vmlinux(1, KPHYS + 0x100, NULL, 0);
	struct elf_info info;
	cr_assert_eq(parse(img, FILE_SZ, &info), 0, "%s", err);
	cr_assert(info.is64);
	cr_assert_eq(info.entry, KPHYS + 0x100);
	cr_assert(info.entry_loaded);
	cr_assert_not(info.has_pvh);
	cr_assert_eq(info.load_start, KPHYS);
	cr_assert_eq(info.load_end, KPHYS + 0x200000 + DATA_SZ + BSS_SZ);
	cr_assert_eq(elf_load(&r.mem, img, FILE_SZ, err, sizeof(err)), 0, "%s", err);
	cr_assert_arr_eq(gpa(&r, KPHYS, TEXT_SZ), img + TEXT_OFF, TEXT_SZ);
	cr_assert_arr_eq(gpa(&r, KPHYS + 0x200000, DATA_SZ), img + DATA_OFF, DATA_SZ);
	uint8_t zero[BSS_SZ] = {0};
	cr_assert_arr_eq(gpa(&r, KPHYS + 0x200000 + DATA_SZ, BSS_SZ), zero, BSS_SZ,
			 "bss not zeroed");
	free(img);
	test_ram_fini(&r);
}

Test(elf, virtual_entry_translated)
{
	uint8_t *img = vmlinux(1, KVIRT + 0x123, NULL, 0);
	struct elf_info info;
	cr_assert_eq(parse(img, FILE_SZ, &info), 0, "%s", err);
	cr_assert(info.entry_loaded);
	cr_assert_eq(info.entry, KPHYS + 0x123);
	free(img);
}

Test(elf, boot_load_vmlinux_linux64)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct boot_args args = {
	    .kernel = img, .kernel_size = FILE_SZ, .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_LINUX64);
	cr_assert_eq(e.rip, KPHYS);
	cr_assert_eq(e.zero_page, ZERO_PAGE_ADDR);
	cr_assert_str_eq(e.format, "ELF vmlinux");
	cr_assert_eq(get_le32(gpa(&r, ZERO_PAGE_ADDR + 0x202, 4)), 0x53726448);
	free(img);
	test_ram_fini(&r);
}

Test(elf, entry_outside_image_refused)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t *img = vmlinux(1, 0x500000, NULL, 0);
	struct elf_info info;
	cr_assert_eq(parse(img, FILE_SZ, &info), 0, "%s", err);
	cr_assert_not(info.entry_loaded);
	struct boot_args args = {
	    .kernel = img, .kernel_size = FILE_SZ, .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "entry point 0x500000 outside the loaded image");
	/* Refused before anything was copied. */
	cr_assert_eq(*gpa(&r, KPHYS, 1), 0);
	free(img);
	test_ram_fini(&r);
}

Test(elf, pvh_note_4_bytes_selects_pvh)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t notes[128];
	size_t n = pvh_notes(notes, 4, PVH_ENTRY);
	uint8_t *img = vmlinux(1, KPHYS, notes, n);
	struct elf_info info;
	cr_assert_eq(parse(img, FILE_SZ, &info), 0, "%s", err);
	cr_assert(info.has_pvh);
	cr_assert_eq(info.pvh_entry, PVH_ENTRY);
	cr_assert(info.pvh_loaded);
	struct boot_args args = {
	    .kernel = img, .kernel_size = FILE_SZ, .cmdline = "root=/dev/vda", .nr_cpus = 4};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_PVH);
	cr_assert_eq(e.rip, PVH_ENTRY);
	cr_assert_eq(e.start_info, PVH_START_INFO_ADDR);
	cr_assert_str_eq(e.format, "PVH ELF");
	cr_assert_eq(get_le32(gpa(&r, PVH_START_INFO_ADDR, 4)), 0x336ec578);
	/* Explicit LINUX64 on the same image uses e_entry and a zero page. */
	args.protocol = BOOT_LINUX64;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_LINUX64);
	cr_assert_eq(e.rip, KPHYS);
	free(img);
	test_ram_fini(&r);
}

Test(elf, pvh_note_8_bytes)
{
	uint8_t notes[128];
	size_t n = pvh_notes(notes, 8, PVH_ENTRY + 8);
	uint8_t *img = vmlinux(1, KPHYS, notes, n);
	struct elf_info info;
	cr_assert_eq(parse(img, FILE_SZ, &info), 0, "%s", err);
	cr_assert(info.has_pvh);
	cr_assert_eq(info.pvh_entry, PVH_ENTRY + 8);
	free(img);
}

Test(elf, elf32_pvh_kernel)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t notes[128];
	size_t n = pvh_notes(notes, 4, PVH_ENTRY);
	uint8_t *img = vmlinux(0, KPHYS, notes, n);
	struct boot_args args = {
	    .kernel = img, .kernel_size = FILE_SZ, .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_eq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(e.protocol, BOOT_PVH);
	cr_assert_eq(e.rip, PVH_ENTRY);
	cr_assert_arr_eq(gpa(&r, KPHYS, TEXT_SZ), img + TEXT_OFF, TEXT_SZ);
	/* A 32-bit kernel has no Linux 64-bit entry. */
	args.protocol = BOOT_LINUX64;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert(strstr(err, "32-bit ELF"), "%s", err);
	free(img);
	test_ram_fini(&r);
}

Test(elf, pvh_requested_without_note_refused)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct boot_args args = {.kernel = img,
				 .kernel_size = FILE_SZ,
				 .cmdline = "",
				 .protocol = BOOT_PVH,
				 .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "kernel has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)");
	free(img);
	test_ram_fini(&r);
}

Test(elf, pvh_entry_outside_image_refused)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t notes[128];
	size_t n = pvh_notes(notes, 4, 0x900000);
	uint8_t *img = vmlinux(1, KPHYS, notes, n);
	struct boot_args args = {
	    .kernel = img, .kernel_size = FILE_SZ, .cmdline = "", .nr_cpus = 1};
	struct boot_entry e;
	cr_assert_neq(x86_boot_load(&r.mem, &args, &e, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "entry point 0x900000 outside the loaded image");
	free(img);
	test_ram_fini(&r);
}

Test(elf, malformed_notes_refused)
{
	uint8_t notes[128];
	struct elf_info info;
	const uint32_t bad[][2] = {
	    {0xffffffff, 4}, {4, 0xffffffff}, {0xfffffffd, 0}, {4, 0xfffffff0}, {4, 200},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = pvh_notes(notes, 4, PVH_ENTRY);
		/* Corrupt the Xen note (the second one, after a 12+4+20 byte GNU note). */
		put_le32(notes + 36, bad[i][0]);
		put_le32(notes + 40, bad[i][1]);
		uint8_t *img = vmlinux(1, KPHYS, notes, n);
		cr_assert_neq(parse(img, FILE_SZ, &info), 0, "case %zu accepted", i);
		cr_assert(strstr(err, "malformed ELF note at offset 0x24"), "%s", err);
		free(img);
	}
}

Test(elf, pvh_note_bad_desc_size_refused)
{
	uint8_t notes[128];
	size_t n = pvh_notes(notes, 4, PVH_ENTRY);
	put_le32(notes + 40, 2);
	uint8_t *img = vmlinux(1, KPHYS, notes, n);
	struct elf_info info;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "PVH entry note has 2-byte value (expected 4 or 8)");
	free(img);
}

Test(elf, pvh_note_above_4g_refused)
{
	uint8_t notes[128];
	size_t n = pvh_notes(notes, 8, 0x100000000ULL);
	uint8_t *img = vmlinux(1, KPHYS, notes, n);
	struct elf_info info;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert(strstr(err, "above 4 GiB"), "%s", err);
	free(img);
}

Test(elf, truncated_at_every_header_length)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	size_t hdrs = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);
	for (size_t len = 0; len < hdrs; len++) {
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, img, len);
		cr_assert_neq(parse(copy, len, &info), 0, "length %zu accepted", len);
		free(copy);
	}
	/* Headers intact but the segment contents cut off. */
	cr_assert_neq(parse(img, DATA_OFF + 1, &info), 0);
	cr_assert(strstr(err, "past end of file"), "%s", err);
	free(img);
}

Test(elf, bad_ident_refused)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	img[EI_CLASS] = 3;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "ELF class 3 not supported");
	img[EI_CLASS] = ELFCLASS64;
	img[EI_DATA] = ELFDATA2MSB;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	img[EI_DATA] = ELFDATA2LSB;
	put_le16(img + offsetof(Elf64_Ehdr, e_machine), EM_AARCH64);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "ELF64 machine 183 is not x86-64");
	put_le16(img + offsetof(Elf64_Ehdr, e_machine), EM_X86_64);
	put_le16(img + offsetof(Elf64_Ehdr, e_type), ET_REL);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	free(img);
}

Test(elf, phdr_table_overflow_refused)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	put_le64(img + offsetof(Elf64_Ehdr, e_phoff), UINT64_MAX - 8);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert(strstr(err, "program headers"), "%s", err);
	put_le64(img + offsetof(Elf64_Ehdr, e_phoff), sizeof(Elf64_Ehdr));
	put_le16(img + offsetof(Elf64_Ehdr, e_phnum), 0xfffe);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert(strstr(err, "65534 entries) past end of file"), "%s", err);
	put_le16(img + offsetof(Elf64_Ehdr, e_phnum), 0xffff);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	put_le16(img + offsetof(Elf64_Ehdr, e_phnum), 0);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	put_le16(img + offsetof(Elf64_Ehdr, e_phnum), 2);
	put_le16(img + offsetof(Elf64_Ehdr, e_phentsize), 32);
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "ELF e_phentsize 32 (expected 56)");
	free(img);
}

static Elf64_Phdr *phdr(uint8_t *img, int i)
{
	return (Elf64_Phdr *)(img + sizeof(Elf64_Ehdr) + i * sizeof(Elf64_Phdr));
}

Test(elf, filesz_above_memsz_refused)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	phdr(img, 0)->p_memsz = TEXT_SZ - 1;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "ELF segment 0: p_filesz 0x2000 > p_memsz 0x1fff");
	free(img);
}

Test(elf, segment_past_file_refused)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	phdr(img, 1)->p_offset = UINT64_MAX - 0x10; /* offset + filesz wraps */
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert(strstr(err, "ELF segment 1"), "%s", err);
	phdr(img, 1)->p_offset = FILE_SZ - 0x10;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert(strstr(err, "past end of file"), "%s", err);
	free(img);
}

Test(elf, segment_address_overflow_refused)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	phdr(img, 1)->p_paddr = UINT64_MAX - 0x100;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "ELF segment 1: address + p_memsz overflows");
	free(img);
}

Test(elf, segment_past_ram_refused)
{
	struct test_ram r;
	test_ram_init(&r, 16 * MiB + 0x1000);
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	struct elf_info info;
	cr_assert_eq(parse(img, FILE_SZ, &info), 0, "%s", err);
	cr_assert_neq(elf_load(&r.mem, img, FILE_SZ, err, sizeof(err)), 0);
	cr_assert_str_eq(err, "ELF segment 0 at 0x1000000 (+0x2000) is outside usable guest RAM "
			      "(1 MiB .. end of RAM)");
	free(img);
	test_ram_fini(&r);
}

Test(elf, segment_in_mmio_hole_refused)
{
	struct test_ram r;
	test_ram_init(&r, 5 * GiB);
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	phdr(img, 1)->p_paddr = 0xfffff000; /* straddles the hole's end, not RAM */
	cr_assert_neq(elf_load(&r.mem, img, FILE_SZ, err, sizeof(err)), 0);
	cr_assert(strstr(err, "ELF segment 1 at 0xfffff000"), "%s", err);
	free(img);
	test_ram_fini(&r);
}

Test(elf, segment_below_1m_refused)
{
	struct test_ram r;
	test_ram_init(&r, 64 * MiB);
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	phdr(img, 0)->p_paddr = 0x8000; /* would clobber the zero page and page tables */
	cr_assert_neq(elf_load(&r.mem, img, FILE_SZ, err, sizeof(err)), 0);
	cr_assert(strstr(err, "ELF segment 0 at 0x8000"), "%s", err);
	free(img);
	test_ram_fini(&r);
}

Test(elf, no_loadable_segment_refused)
{
	uint8_t *img = vmlinux(1, KPHYS, NULL, 0);
	phdr(img, 0)->p_type = PT_NULL;
	phdr(img, 1)->p_type = PT_NULL;
	struct elf_info info;
	cr_assert_neq(parse(img, FILE_SZ, &info), 0);
	cr_assert_str_eq(err, "ELF has no loadable segments");
	free(img);
}
