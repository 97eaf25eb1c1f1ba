/* PVH boot: hvm_start_info, module list and memory map at PVH_START_INFO_ADDR. */
#ifndef MINIVMM_X86_PVH_H
#define MINIVMM_X86_PVH_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

/* xen/include/public/arch-x86/hvm/start_info.h */
#define HVM_START_MAGIC_VALUE 0x336ec578u
#define HVM_START_VERSION     1
#define HVM_START_INFO_SIZE   56 /* version 1 layout */
#define HVM_MODLIST_ENTRY_SZ  32
#define HVM_MEMMAP_ENTRY_SZ   24

/* Field offsets in struct hvm_start_info. */
#define HSI_OFF_MAGIC	       0
#define HSI_OFF_VERSION	       4
#define HSI_OFF_FLAGS	       8
#define HSI_OFF_NR_MODULES     12
#define HSI_OFF_MODLIST_PADDR  16
#define HSI_OFF_CMDLINE_PADDR  24
#define HSI_OFF_RSDP_PADDR     32
#define HSI_OFF_MEMMAP_PADDR   40
#define HSI_OFF_MEMMAP_ENTRIES 48

struct pvh_boot {
	uint64_t kernel_end; /* the initrd goes above this */
	const char *cmdline;
	const uint8_t *initrd; /* module 0 when set */
	size_t initrd_size;
	uint64_t rsdp_addr; /* ACPI RSDP (0: none, the guest falls back to the MP table) */
};

/* Write command line, initrd and start_info. *initrd_addr gets where the initrd went (0 when
 * none). Returns 0 or -1 with err. */
int pvh_setup(struct guest_mem *mem, const struct pvh_boot *pb, uint64_t *initrd_addr, char *err,
	      size_t errlen);

#endif
