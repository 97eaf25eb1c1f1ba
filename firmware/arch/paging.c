/* RAM above 4 GiB: identity-mapped with 2 MiB pages at start-up, only where e820 says RAM. */
#include "paging.h"

#include "boot_info.h"

#define GIB	(1ull << 30)
#define PAGE_2M (2ull << 20)
#define PTE_DIR 0x27 /* present, writable, user, accessed: as page_tables.S */
#define PTE_2M	0xe7 /* the same + dirty, 2 MiB page */

extern uint64_t pdpt[512];
extern uint64_t pd_high[PAGING_MAP_LIMIT / GIB - 4][512];

static int ram_overlaps(uint64_t start, uint64_t end)
{
	for (unsigned i = 0; i < boot_info.e820_count; i++) {
		const struct e820_entry *e = &boot_info.e820[i];
		if (e->type == E820_RAM && e->addr < end && e->addr + e->size > start)
			return 1;
	}
	return 0;
}

void paging_map_high_ram(void)
{
	for (uint64_t gib = 4; gib < PAGING_MAP_LIMIT / GIB; gib++) {
		if (!ram_overlaps(gib * GIB, (gib + 1) * GIB))
			continue;
		uint64_t *pd = pd_high[gib - 4];
		for (uint64_t i = 0; i < 512; i++) {
			uint64_t addr = gib * GIB + i * PAGE_2M;
			pd[i] = ram_overlaps(addr, addr + PAGE_2M) ? addr + PTE_2M : 0;
		}
		/* The directory is complete before the CPU can walk it. The entry was not present,
		 * and not-present entries are never cached, so no TLB flush is needed. */
		__asm__ volatile("" ::: "memory");
		pdpt[gib] = (uint64_t)pd + PTE_DIR;
	}
}
