#include "elf.h"

#include <elf.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/layout.h"
#include "base/byteorder.h"

/* One program header, widened to 64 bits whatever the ELF class. */
struct phdr {
	uint32_t type;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};

#define NOTE_HDR_SIZE 12 /* namesz, descsz, type: 32-bit in both ELF classes */

bool elf_detect(const uint8_t *img, size_t size)
{
	return size >= SELFMAG && memcmp(img, ELFMAG, SELFMAG) == 0;
}

static void read_phdr(const uint8_t *p, bool is64, struct phdr *ph)
{
	if (is64) {
		ph->type = get_le32(p + offsetof(Elf64_Phdr, p_type));
		ph->offset = get_le64(p + offsetof(Elf64_Phdr, p_offset));
		ph->vaddr = get_le64(p + offsetof(Elf64_Phdr, p_vaddr));
		ph->paddr = get_le64(p + offsetof(Elf64_Phdr, p_paddr));
		ph->filesz = get_le64(p + offsetof(Elf64_Phdr, p_filesz));
		ph->memsz = get_le64(p + offsetof(Elf64_Phdr, p_memsz));
		ph->align = get_le64(p + offsetof(Elf64_Phdr, p_align));
	} else {
		ph->type = get_le32(p + offsetof(Elf32_Phdr, p_type));
		ph->offset = get_le32(p + offsetof(Elf32_Phdr, p_offset));
		ph->vaddr = get_le32(p + offsetof(Elf32_Phdr, p_vaddr));
		ph->paddr = get_le32(p + offsetof(Elf32_Phdr, p_paddr));
		ph->filesz = get_le32(p + offsetof(Elf32_Phdr, p_filesz));
		ph->memsz = get_le32(p + offsetof(Elf32_Phdr, p_memsz));
		ph->align = get_le32(p + offsetof(Elf32_Phdr, p_align));
	}
}

/* Where the program header table is; validated by elf_parse before anyone else calls this. */
struct phdr_table {
	bool is64;
	uint64_t off, entsize;
	unsigned num;
};

static int read_ehdr(const uint8_t *img, size_t size, struct phdr_table *t, uint64_t *entry,
		     char *err, size_t errlen)
{
	if (!elf_detect(img, size)) {
		snprintf(err, errlen, "not an ELF image (bad magic)");
		return -1;
	}
	if (size < EI_NIDENT) {
		snprintf(err, errlen, "ELF truncated: %zu bytes", size);
		return -1;
	}
	if (img[EI_CLASS] != ELFCLASS32 && img[EI_CLASS] != ELFCLASS64) {
		snprintf(err, errlen, "ELF class %u not supported", img[EI_CLASS]);
		return -1;
	}
	t->is64 = img[EI_CLASS] == ELFCLASS64;
	size_t ehsize = t->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (size < ehsize) {
		snprintf(err, errlen, "ELF truncated: %zu bytes, header needs %zu", size, ehsize);
		return -1;
	}
	if (img[EI_DATA] != ELFDATA2LSB || img[EI_VERSION] != EV_CURRENT) {
		snprintf(err, errlen, "ELF is not little-endian version 1");
		return -1;
	}
	/* e_type and e_machine sit at the same offsets in both classes. */
	uint16_t type = get_le16(img + offsetof(Elf64_Ehdr, e_type));
	uint16_t machine = get_le16(img + offsetof(Elf64_Ehdr, e_machine));
	if (type != ET_EXEC && type != ET_DYN) {
		snprintf(err, errlen, "ELF type %u is not an executable", type);
		return -1;
	}
	if (machine != (t->is64 ? EM_X86_64 : EM_386)) {
		snprintf(err, errlen, "ELF%d machine %u is not %s", t->is64 ? 64 : 32, machine,
			 t->is64 ? "x86-64" : "i386");
		return -1;
	}
	uint16_t phnum;
	if (t->is64) {
		*entry = get_le64(img + offsetof(Elf64_Ehdr, e_entry));
		t->off = get_le64(img + offsetof(Elf64_Ehdr, e_phoff));
		t->entsize = get_le16(img + offsetof(Elf64_Ehdr, e_phentsize));
		phnum = get_le16(img + offsetof(Elf64_Ehdr, e_phnum));
	} else {
		*entry = get_le32(img + offsetof(Elf32_Ehdr, e_entry));
		t->off = get_le32(img + offsetof(Elf32_Ehdr, e_phoff));
		t->entsize = get_le16(img + offsetof(Elf32_Ehdr, e_phentsize));
		phnum = get_le16(img + offsetof(Elf32_Ehdr, e_phnum));
	}
	size_t want = t->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	if (t->entsize != want) {
		snprintf(err, errlen, "ELF e_phentsize %" PRIu64 " (expected %zu)", t->entsize,
			 want);
		return -1;
	}
	/* PN_XNUM means the real count lives in a section header: never used by kernels. */
	if (phnum == 0 || phnum == PN_XNUM) {
		snprintf(err, errlen, "ELF has no usable program headers (e_phnum %u)", phnum);
		return -1;
	}
	t->num = phnum;
	uint64_t end;
	if (__builtin_add_overflow(t->off, (uint64_t)phnum * t->entsize, &end) || end > size) {
		snprintf(err, errlen,
			 "ELF program headers (offset 0x%" PRIx64 ", %u entries) past end of file",
			 t->off, phnum);
		return -1;
	}
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Walk one PT_NOTE segment looking for Xen's PHYS32_ENTRY note. */
static int scan_notes(const uint8_t *seg, uint64_t len, uint64_t align, struct elf_info *info,
		      char *err, size_t errlen)
{
	uint64_t off = 0;
	while (len - off >= NOTE_HDR_SIZE) {
		uint32_t namesz = get_le32(seg + off);
		uint32_t descsz = get_le32(seg + off + 4);
		uint32_t type = get_le32(seg + off + 8);
		/* 32-bit sizes in 64-bit arithmetic with align <= 8: these sums cannot overflow. */
		uint64_t name_off = off + NOTE_HDR_SIZE;
		uint64_t desc_off = name_off + align_up(namesz, align);
		if (desc_off > len || descsz > len - desc_off) {
			snprintf(err, errlen,
				 "malformed ELF note at offset 0x%" PRIx64
				 " (namesz %u, descsz %u overrun the segment)",
				 off, namesz, descsz);
			return -1;
		}
		if (!info->has_pvh && namesz == 4 && memcmp(seg + name_off, "Xen", 4) == 0 &&
		    type == XEN_ELFNOTE_PHYS32_ENTRY) {
			const uint8_t *d = seg + desc_off;
			if (descsz == 4) {
				info->pvh_entry = get_le32(d);
			} else if (descsz == 8) {
				info->pvh_entry = get_le64(d);
			} else {
				snprintf(err, errlen,
					 "PVH entry note has %u-byte value (expected 4 or 8)",
					 descsz);
				return -1;
			}
			if (info->pvh_entry > UINT32_MAX) {
				snprintf(err, errlen, "PVH entry point 0x%" PRIx64 " above 4 GiB",
					 info->pvh_entry);
				return -1;
			}
			info->has_pvh = true;
		}
		uint64_t next = desc_off + align_up(descsz, align);
		if (next >= len)
			break;
		off = next;
	}
	return 0;
}

static bool in_range(uint64_t addr, uint64_t base, uint64_t len)
{
	return addr >= base && addr - base < len;
}

int elf_parse(const uint8_t *img, size_t size, struct elf_info *info, char *err, size_t errlen)
{
	memset(info, 0, sizeof(*info));
	struct phdr_table t;
	uint64_t entry;
	if (read_ehdr(img, size, &t, &entry, err, errlen))
		return -1;
	info->is64 = t.is64;
	info->load_start = UINT64_MAX;
	bool any_load = false;
	for (unsigned i = 0; i < t.num; i++) {
		struct phdr ph;
		read_phdr(img + t.off + i * t.entsize, t.is64, &ph);
		if (ph.type != PT_LOAD && ph.type != PT_NOTE)
			continue;
		uint64_t fend, pend, vend;
		if (__builtin_add_overflow(ph.offset, ph.filesz, &fend) || fend > size) {
			snprintf(err, errlen,
				 "ELF segment %u (offset 0x%" PRIx64 ", size 0x%" PRIx64
				 ") past end of file",
				 i, ph.offset, ph.filesz);
			return -1;
		}
		if (ph.type == PT_NOTE) {
			uint64_t align = ph.align == 8 ? 8 : 4;
			if (scan_notes(img + ph.offset, ph.filesz, align, info, err, errlen))
				return -1;
			continue;
		}
		if (ph.filesz > ph.memsz) {
			snprintf(err, errlen,
				 "ELF segment %u: p_filesz 0x%" PRIx64 " > p_memsz 0x%" PRIx64, i,
				 ph.filesz, ph.memsz);
			return -1;
		}
		if (__builtin_add_overflow(ph.paddr, ph.memsz, &pend) ||
		    __builtin_add_overflow(ph.vaddr, ph.memsz, &vend)) {
			snprintf(err, errlen, "ELF segment %u: address + p_memsz overflows", i);
			return -1;
		}
		if (ph.memsz == 0)
			continue;
		any_load = true;
		if (ph.paddr < info->load_start)
			info->load_start = ph.paddr;
		if (pend > info->load_end)
			info->load_end = pend;
	}
	if (!any_load) {
		snprintf(err, errlen, "ELF has no loadable segments");
		return -1;
	}
	/* vmlinux's e_entry is physical; other linkers put a virtual address there. */
	for (int pass = 0; pass < 2 && !info->entry_loaded; pass++) {
		for (unsigned i = 0; i < t.num; i++) {
			struct phdr ph;
			read_phdr(img + t.off + i * t.entsize, t.is64, &ph);
			if (ph.type != PT_LOAD)
				continue;
			if (pass == 0 && in_range(entry, ph.paddr, ph.memsz)) {
				info->entry = entry;
				info->entry_loaded = true;
				break;
			}
			if (pass == 1 && in_range(entry, ph.vaddr, ph.memsz)) {
				info->entry = entry - ph.vaddr + ph.paddr;
				info->entry_loaded = true;
				break;
			}
		}
	}
	if (!info->entry_loaded)
		info->entry = entry;
	/* The PVH entry is a physical address by definition: no translation. */
	for (unsigned i = 0; info->has_pvh && !info->pvh_loaded && i < t.num; i++) {
		struct phdr ph;
		read_phdr(img + t.off + i * t.entsize, t.is64, &ph);
		if (ph.type == PT_LOAD && in_range(info->pvh_entry, ph.paddr, ph.memsz))
			info->pvh_loaded = true;
	}
	return 0;
}

int elf_load(struct guest_mem *mem, const uint8_t *img, size_t size, char *err, size_t errlen)
{
	struct phdr_table t;
	uint64_t entry;
	if (read_ehdr(img, size, &t, &entry, err, errlen))
		return -1;
	for (unsigned i = 0; i < t.num; i++) {
		struct phdr ph;
		read_phdr(img + t.off + i * t.entsize, t.is64, &ph);
		if (ph.type != PT_LOAD || ph.memsz == 0)
			continue;
		uint64_t fend;
		if (__builtin_add_overflow(ph.offset, ph.filesz, &fend) || fend > size ||
		    ph.filesz > ph.memsz) {
			snprintf(err, errlen, "ELF segment %u invalid", i);
			return -1;
		}
		/* Below 1 MiB live the VMM's tables (GDT, page tables, zero page, MP table). */
		uint8_t *dst = guest_mem_ptr(mem, ph.paddr, ph.memsz);
		if (ph.paddr < HIGH_MEMORY_START || !dst) {
			snprintf(err, errlen,
				 "ELF segment %u at 0x%" PRIx64 " (+0x%" PRIx64
				 ") is outside usable guest RAM (1 MiB .. end of RAM)",
				 i, ph.paddr, ph.memsz);
			return -1;
		}
		memcpy(dst, img + ph.offset, ph.filesz);
		memset(dst + ph.filesz, 0, ph.memsz - ph.filesz);
	}
	return 0;
}
