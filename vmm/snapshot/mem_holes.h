/* Pages of guest RAM that hold nothing but zeros, found without reading them: a page the host
 * never gave memory (neither present nor swapped, /proc/self/pagemap) is all zeros, unless RAM was
 * mapped from a snapshot file and the file holds data there. Reading a page to find out faults it
 * in: ~20 us per 4 KiB page on a PVM host, 20 s for an untouched 4 GiB guest (snapshots). */
#ifndef MINIVMM_MEM_HOLES_H
#define MINIVMM_MEM_HOLES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/guest_mem.h"

#define MEM_HOLES_WINDOW 512 /* pagemap entries read at once: 2 MiB of RAM */

struct mem_holes {
	const struct guest_mem *mem;
	/* A window of pagemap entries, for pages [win_page, win_page + win_len) of the mapping. */
	uint64_t win_page;
	unsigned win_len;
	uint64_t win[MEM_HOLES_WINDOW];
	/* What is known of the snapshot file: [hole_lo, hole_hi) is a hole, [data_lo, data_hi)
	 * data (byte offsets). */
	uint64_t hole_lo, hole_hi, data_lo, data_hi;
};

void mem_holes_init(struct mem_holes *h, const struct guest_mem *mem);
/* Is the 4 KiB page at byte offset off (page aligned) of mem's mapping known to hold only
 * zeros? false when in doubt (no pagemap, a read error): the caller then reads the page. */
bool mem_holes_is_hole(struct mem_holes *h, uint64_t off);

#endif
