/* Placing the initial ramdisk in guest RAM (same rule for the Linux and PVH protocols). */
#ifndef MINIVMM_X86_INITRD_H
#define MINIVMM_X86_INITRD_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

/* Copy data to the highest page-aligned address a with kernel_end <= a and
 * a + size <= min(addr_max + 1, low RAM end). size 0 places nothing (*addr = 0).
 * Returns 0 or -1 with err when it does not fit. */
int initrd_place(struct guest_mem *mem, const uint8_t *data, size_t size, uint64_t kernel_end,
		 uint64_t addr_max, uint64_t *addr, char *err, size_t errlen);

#endif
