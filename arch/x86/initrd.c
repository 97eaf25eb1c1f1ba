#include "initrd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define PAGE_SIZE 0x1000ULL

int initrd_place(struct guest_mem *mem, const uint8_t *data, size_t size, uint64_t kernel_end,
		 uint64_t addr_max, uint64_t *addr, char *err, size_t errlen)
{
	*addr = 0;
	if (size == 0)
		return 0;
	/* Highest usable byte + 1: addr_max is inclusive (initrd_addr_max semantics). */
	uint64_t limit = guest_mem_low_end(mem);
	if (addr_max < limit - 1)
		limit = addr_max + 1;
	if (size > limit) {
		snprintf(err, errlen,
			 "initrd of %zu bytes does not fit below 0x%" PRIx64
			 " (kernel ends at 0x%" PRIx64 ")",
			 size, limit, kernel_end);
		return -1;
	}
	uint64_t a = (limit - size) & ~(PAGE_SIZE - 1);
	uint8_t *dst = guest_mem_ptr(mem, a, size);
	/* a = 0 would read as "no initrd" to the caller: refuse it as not fitting. */
	if (a == 0 || a < kernel_end || !dst) {
		snprintf(err, errlen,
			 "initrd of %zu bytes does not fit between the kernel end 0x%" PRIx64
			 " and 0x%" PRIx64,
			 size, kernel_end, limit);
		return -1;
	}
	memcpy(dst, data, size);
	*addr = a;
	return 0;
}
