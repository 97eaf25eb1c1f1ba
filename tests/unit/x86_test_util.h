/* Shared fixtures for the arch/x86 unit tests: sparse guest RAM and synthetic kernel images. */
#ifndef MINIVMM_TEST_X86_UTIL_H
#define MINIVMM_TEST_X86_UTIL_H

#include <criterion/criterion.h>
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/x86/bzimage.h"
#include "base/byteorder.h"
#include "base/guest_mem.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

/* Guest RAM backed by a lazily-populated anonymous mapping, so 5 GiB costs nothing. */
struct test_ram {
	uint8_t *backing;
	uint64_t size;
	struct guest_mem mem;
};

static inline void test_ram_init(struct test_ram *r, uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	cr_assert_neq(p, MAP_FAILED, "mmap %llu bytes", (unsigned long long)size);
	r->backing = p;
	r->size = size;
	guest_mem_init_with(&r->mem, r->backing, size);
}

static inline void test_ram_fini(struct test_ram *r)
{
	munmap(r->backing, r->size);
}

static inline uint8_t *gpa(struct test_ram *r, uint64_t addr, uint64_t len)
{
	uint8_t *p = guest_mem_ptr(&r->mem, addr, len);
	cr_assert_not_null(p, "gpa 0x%llx+0x%llx not in RAM", (unsigned long long)addr,
			   (unsigned long long)len);
	return p;
}

/* A plausible modern bzImage: protocol 2.15, 4 setup sectors, relocatable, 64-bit entry. */
#define TEST_BZ_SETUP_SECTS 4
#define TEST_BZ_SETUP_SIZE  ((TEST_BZ_SETUP_SECTS + 1) * 512)
#define TEST_BZ_HDR_END	    0x26c
#define TEST_BZ_INIT_SIZE   0x800000u
#define TEST_BZ_PREF	    0x1000000ull

static inline uint8_t *test_bzimage(size_t payload_size, size_t *size)
{
	*size = TEST_BZ_SETUP_SIZE + payload_size;
	uint8_t *img = calloc(1, *size);
	cr_assert_not_null(img);
	img[BZ_OFF_SETUP_SECTS] = TEST_BZ_SETUP_SECTS;
	put_le32(img + BZ_OFF_SYSSIZE, (uint32_t)(payload_size / 16));
	put_le16(img + BZ_OFF_BOOT_FLAG, BZ_BOOT_FLAG);
	img[BZ_OFF_JUMP] = 0xeb;
	img[BZ_OFF_JUMP + 1] = TEST_BZ_HDR_END - BZ_OFF_HEADER;
	put_le32(img + BZ_OFF_HEADER, BZ_HDRS_MAGIC);
	put_le16(img + BZ_OFF_VERSION, 0x020f);
	img[BZ_OFF_LOADFLAGS] = LOADFLAG_LOADED_HIGH;
	put_le32(img + BZ_OFF_INITRD_ADDR_MAX, 0x7fffffff);
	put_le32(img + BZ_OFF_KERNEL_ALIGN, 0x200000);
	img[BZ_OFF_RELOCATABLE] = 1;
	put_le16(img + BZ_OFF_XLOADFLAGS, XLF_KERNEL_64);
	put_le32(img + BZ_OFF_CMDLINE_SIZE, 2047);
	put_le64(img + BZ_OFF_PREF_ADDRESS, TEST_BZ_PREF);
	put_le32(img + BZ_OFF_INIT_SIZE, TEST_BZ_INIT_SIZE);
	for (size_t i = 0; i < payload_size; i++)
		img[TEST_BZ_SETUP_SIZE + i] = (uint8_t)(i * 7 + 3);
	return img;
}

/* ELF images: headers at the start, program headers right after, contents by the caller. */
struct test_seg {
	uint32_t type;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

static inline uint8_t *test_elf(int is64, uint64_t entry, const struct test_seg *segs, int n,
				size_t size)
{
	uint8_t *img = calloc(1, size);
	cr_assert_not_null(img);
	if (is64) {
		Elf64_Ehdr eh = {.e_type = ET_EXEC,
				 .e_machine = EM_X86_64,
				 .e_version = EV_CURRENT,
				 .e_entry = entry,
				 .e_phoff = sizeof(Elf64_Ehdr),
				 .e_ehsize = sizeof(Elf64_Ehdr),
				 .e_phentsize = sizeof(Elf64_Phdr),
				 .e_phnum = (uint16_t)n};
		memcpy(eh.e_ident, ELFMAG, SELFMAG);
		eh.e_ident[EI_CLASS] = ELFCLASS64;
		eh.e_ident[EI_DATA] = ELFDATA2LSB;
		eh.e_ident[EI_VERSION] = EV_CURRENT;
		cr_assert_geq(size, sizeof(eh) + n * sizeof(Elf64_Phdr));
		memcpy(img, &eh, sizeof(eh));
		for (int i = 0; i < n; i++) {
			Elf64_Phdr ph = {.p_type = segs[i].type,
					 .p_offset = segs[i].offset,
					 .p_vaddr = segs[i].vaddr,
					 .p_paddr = segs[i].paddr,
					 .p_filesz = segs[i].filesz,
					 .p_memsz = segs[i].memsz,
					 .p_align = segs[i].align};
			memcpy(img + sizeof(eh) + i * sizeof(ph), &ph, sizeof(ph));
		}
	} else {
		Elf32_Ehdr eh = {.e_type = ET_EXEC,
				 .e_machine = EM_386,
				 .e_version = EV_CURRENT,
				 .e_entry = (uint32_t)entry,
				 .e_phoff = sizeof(Elf32_Ehdr),
				 .e_ehsize = sizeof(Elf32_Ehdr),
				 .e_phentsize = sizeof(Elf32_Phdr),
				 .e_phnum = (uint16_t)n};
		memcpy(eh.e_ident, ELFMAG, SELFMAG);
		eh.e_ident[EI_CLASS] = ELFCLASS32;
		eh.e_ident[EI_DATA] = ELFDATA2LSB;
		eh.e_ident[EI_VERSION] = EV_CURRENT;
		cr_assert_geq(size, sizeof(eh) + n * sizeof(Elf32_Phdr));
		memcpy(img, &eh, sizeof(eh));
		for (int i = 0; i < n; i++) {
			Elf32_Phdr ph = {.p_type = segs[i].type,
					 .p_offset = (uint32_t)segs[i].offset,
					 .p_vaddr = (uint32_t)segs[i].vaddr,
					 .p_paddr = (uint32_t)segs[i].paddr,
					 .p_filesz = (uint32_t)segs[i].filesz,
					 .p_memsz = (uint32_t)segs[i].memsz,
					 .p_align = (uint32_t)segs[i].align};
			memcpy(img + sizeof(eh) + i * sizeof(ph), &ph, sizeof(ph));
		}
	}
	return img;
}

/* Append one ELF note at *off (4-byte aligned fields); returns the new offset. */
static inline size_t test_note(uint8_t *buf, size_t off, const char *name, uint32_t namesz,
			       uint32_t type, const void *desc, uint32_t descsz)
{
	put_le32(buf + off, namesz);
	put_le32(buf + off + 4, descsz);
	put_le32(buf + off + 8, type);
	off += 12;
	memcpy(buf + off, name, namesz);
	off += (namesz + 3) & ~3u;
	memcpy(buf + off, desc, descsz);
	off += (descsz + 3) & ~3u;
	return off;
}

#endif
