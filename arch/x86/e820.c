#include "e820.h"

#include <inttypes.h>
#include <stdio.h>

#include "arch/x86/layout.h"

/* Legacy-PC end of conventional memory; [0xa0000, FIRMWARE_TABLES_START) is the VGA/option ROM
 * hole, left out of the map entirely as on real hardware. */
#define LOW_RAM_LEGACY_END 0xa0000ULL

int e820_build(const struct guest_mem *mem, struct e820_entry *out, size_t *count, char *err,
	       size_t errlen)
{
	uint64_t low_end = guest_mem_low_end(mem);
	*count = 0;
	if (low_end <= HIGH_MEMORY_START) {
		snprintf(err, errlen,
			 "guest RAM too small: %" PRIu64 " bytes (need more than 1 MiB)", low_end);
		return -1;
	}
	size_t n = 0;
	out[n++] = (struct e820_entry){0, EBDA_START, E820_RAM};
	out[n++] = (struct e820_entry){EBDA_START, LOW_RAM_LEGACY_END - EBDA_START, E820_RESERVED};
	/* ACPI and MP tables: reserved (not ACPI-reclaimable), so the guest never reuses them. */
	out[n++] = (struct e820_entry){FIRMWARE_TABLES_START,
				       HIGH_MEMORY_START - FIRMWARE_TABLES_START, E820_RESERVED};
	out[n++] = (struct e820_entry){HIGH_MEMORY_START, low_end - HIGH_MEMORY_START, E820_RAM};
	/* RAM relocated above the 32-bit MMIO hole. */
	for (int i = 1; i < mem->nr_regions && n < E820_MAX_ENTRIES; i++)
		out[n++] = (struct e820_entry){mem->regions[i].gpa, mem->regions[i].size, E820_RAM};
	*count = n;
	return 0;
}
