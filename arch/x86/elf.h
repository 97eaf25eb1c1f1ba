/* ELF32/ELF64 x86 kernel images: validation, PVH entry note lookup, loading by p_paddr. */
#ifndef MINIVMM_X86_ELF_H
#define MINIVMM_X86_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

#define XEN_ELFNOTE_PHYS32_ENTRY 18

struct elf_info {
	bool is64;	     /* ELFCLASS64 / EM_X86_64, else ELFCLASS32 / EM_386 */
	uint64_t entry;	     /* e_entry, translated to a physical address when possible */
	bool entry_loaded;   /* entry lies inside a PT_LOAD segment's physical range */
	bool has_pvh;	     /* a Xen PHYS32_ENTRY note was found */
	uint64_t pvh_entry;  /* valid when has_pvh */
	bool pvh_loaded;     /* pvh_entry lies inside a PT_LOAD segment's physical range */
	uint64_t load_start; /* lowest p_paddr of the PT_LOAD segments */
	uint64_t load_end;   /* highest p_paddr + p_memsz of the PT_LOAD segments */
};

/* True when the image starts with the ELF magic. */
bool elf_detect(const uint8_t *img, size_t size);

/* Validate headers, segments (against the file, not RAM) and notes. Returns 0 or -1 with err. */
int elf_parse(const uint8_t *img, size_t size, struct elf_info *info, char *err, size_t errlen);

/* Copy every PT_LOAD segment to p_paddr and zero its bss; each must lie inside guest RAM at or
 * above HIGH_MEMORY_START. The image must have passed elf_parse. Returns 0 or -1 with err. */
int elf_load(struct guest_mem *mem, const uint8_t *img, size_t size, char *err, size_t errlen);

#endif
