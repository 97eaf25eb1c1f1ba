/*
 * The probe's page tables, built by the assembler: an identity map of the low 4 GiB
 * (LAPIC included) with 2 MiB pages. On PVM the start-up code runs emulated, so tables
 * filled at run time cost ~14k instructions (milliseconds); these cost none. The image
 * is linked at a fixed address (probe.ld), so the entries are link-time constants.
 * U/S=1 at every level (supervisor pages livelock PVM's shadow MMU); Accessed and Dirty
 * are preset so the CPU never writes the tables. Used by the BSP (start.S) and the APs
 * (trampoline.S). RAM from 4 to 64 GiB is mapped once at run time, natively, by
 * paging_map_high_ram() (paging.c): into pd_high, which costs the image nothing (.noinit),
 * then its PDPT entry. 64 GiB keeps pd_high small (240 KiB of guest address space).
 */
#define PTE_DIR 0x27 /* present, writable, user, accessed */
#define PTE_2M	0xe7 /* the same + dirty, 2 MiB page */

	.section .data.page_tables, "aw"
	.balign	4096
	.globl	pml4, pdpt, pd_high
pml4:
	.quad	pdpt + PTE_DIR
	.fill	511, 8, 0
pdpt:
	.quad	pd + 0x0000 + PTE_DIR
	.quad	pd + 0x1000 + PTE_DIR
	.quad	pd + 0x2000 + PTE_DIR
	.quad	pd + 0x3000 + PTE_DIR
	.fill	508, 8, 0
/* 4 page directories, 2048 entries: entry i maps [i * 2 MiB, (i + 1) * 2 MiB). */
pd:
	.set	addr, 0
	.rept	2048
	.quad	addr + PTE_2M
	.set	addr, addr + 0x200000
	.endr

/* Page directories for 4 GiB to 64 GiB, filled at run time (PDPT entries 4 to 63). */
	.section .noinit.page_tables, "aw", @nobits
	.balign	4096
pd_high:
	.skip	60 * 4096
