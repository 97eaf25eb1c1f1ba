/* The probe's identity map beyond the static low 4 GiB (page_tables.S). */
#ifndef PAGING_H
#define PAGING_H

#include <stdint.h>

#define PAGING_MAP_LIMIT (64ull << 30) /* what paging_map_high_ram() can map (pd_high) */

/* Map every 2 MiB page that holds e820 RAM between 4 GiB and PAGING_MAP_LIMIT. Call once on
 * the BSP, natively (after pvm_probe) and before the APs start. */
void paging_map_high_ram(void);

#endif
