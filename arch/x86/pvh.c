#include "pvh.h"

#include <stdio.h>
#include <string.h>

#include "arch/x86/cmdline.h"
#include "arch/x86/e820.h"
#include "arch/x86/initrd.h"
#include "arch/x86/layout.h"
#include "base/byteorder.h"

/* Layout inside [PVH_START_INFO_ADDR, ZERO_PAGE_ADDR): start_info, one module, memory map. */
#define MODLIST_ADDR (PVH_START_INFO_ADDR + HVM_START_INFO_SIZE)
#define MEMMAP_ADDR  (MODLIST_ADDR + HVM_MODLIST_ENTRY_SZ)
_Static_assert(MEMMAP_ADDR + E820_MAX_ENTRIES * HVM_MEMMAP_ENTRY_SZ <= ZERO_PAGE_ADDR,
	       "PVH start info must fit below the zero page");
_Static_assert(MODLIST_ADDR % 8 == 0 && MEMMAP_ADDR % 8 == 0, "PVH tables must be 8-aligned");

/* The PVH protocol has no initrd address limit below 4 GiB beyond what RAM gives. */
#define PVH_INITRD_ADDR_MAX 0xffffffffULL

int pvh_setup(struct guest_mem *mem, const struct pvh_boot *pb, uint64_t *initrd_addr, char *err,
	      size_t errlen)
{
	*initrd_addr = 0;
	const uint64_t span = ZERO_PAGE_ADDR - PVH_START_INFO_ADDR;
	uint8_t *si = guest_mem_ptr(mem, PVH_START_INFO_ADDR, span);
	if (!si) {
		snprintf(err, errlen, "no guest RAM for the PVH start info");
		return -1;
	}
	struct e820_entry e820[E820_MAX_ENTRIES];
	size_t n820;
	if (e820_build(mem, e820, &n820, err, errlen))
		return -1;
	if (cmdline_write(mem, pb->cmdline, CMDLINE_MAX - 1, err, errlen))
		return -1;
	uint64_t ird;
	if (initrd_place(mem, pb->initrd, pb->initrd ? pb->initrd_size : 0, pb->kernel_end,
			 PVH_INITRD_ADDR_MAX, &ird, err, errlen))
		return -1;

	memset(si, 0, span);
	put_le32(si + HSI_OFF_MAGIC, HVM_START_MAGIC_VALUE);
	put_le32(si + HSI_OFF_VERSION, HVM_START_VERSION);
	put_le64(si + HSI_OFF_CMDLINE_PADDR, CMDLINE_ADDR);
	put_le64(si + HSI_OFF_RSDP_PADDR, pb->rsdp_addr);
	if (ird) {
		uint8_t *mod = si + (MODLIST_ADDR - PVH_START_INFO_ADDR);
		put_le64(mod, ird);
		put_le64(mod + 8, pb->initrd_size);
		put_le64(mod + 16, 0); /* no module command line */
		put_le32(si + HSI_OFF_NR_MODULES, 1);
		put_le64(si + HSI_OFF_MODLIST_PADDR, MODLIST_ADDR);
	}
	uint8_t *mm = si + (MEMMAP_ADDR - PVH_START_INFO_ADDR);
	for (size_t i = 0; i < n820; i++) {
		uint8_t *e = mm + i * HVM_MEMMAP_ENTRY_SZ;
		put_le64(e, e820[i].addr);
		put_le64(e + 8, e820[i].size);
		put_le32(e + 16, e820[i].type);
		put_le32(e + 20, 0);
	}
	put_le64(si + HSI_OFF_MEMMAP_PADDR, MEMMAP_ADDR);
	put_le32(si + HSI_OFF_MEMMAP_ENTRIES, (uint32_t)n820);
	*initrd_addr = ird;
	return 0;
}
