/* The guest's physical memory map (e820), shared by the Linux zero page and the PVH memmap. */
#ifndef MINIVMM_X86_E820_H
#define MINIVMM_X86_E820_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

#define E820_RAM      1 /* same values as XEN_HVM_MEMMAP_TYPE_RAM / _RESERVED */
#define E820_RESERVED 2

#define E820_MAX_ENTRIES 8 /* what e820_build can produce, with room to spare */

struct e820_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/* Fill out[] (E820_MAX_ENTRIES long) from mem's layout; *count gets the number of entries.
 * Fails when RAM does not reach above HIGH_MEMORY_START. Returns 0 or -1 with err. */
int e820_build(const struct guest_mem *mem, struct e820_entry *out, size_t *count, char *err,
	       size_t errlen);

#endif
