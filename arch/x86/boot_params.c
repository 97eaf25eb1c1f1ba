#include "boot_params.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/bzimage.h"
#include "arch/x86/cmdline.h"
#include "arch/x86/e820.h"
#include "arch/x86/initrd.h"
#include "arch/x86/layout.h"
#include "base/byteorder.h"

_Static_assert(BP_OFF_E820_TABLE + BP_E820_MAX * BP_E820_ENTRY_SIZE <= BP_SIZE,
	       "e820_table must fit in the zero page");
_Static_assert(BZ_SETUP_HDR_MAX_END <= BP_OFF_E820_TABLE, "setup header overlaps e820_table");
_Static_assert(ZERO_PAGE_ADDR + BP_SIZE <= PML4_ADDR, "zero page overlaps the page tables");

_Static_assert(E820_MAX_ENTRIES <= BP_E820_MAX, "e820 map larger than the zero page table");

#define TYPE_OF_LOADER_UNDEFINED 0xff
#define SETUP_DATA_MIN_VERSION	 0x0209
/* What a vmlinux gets: the 16 MiB alignment of x86-64 kernels. */
#define SYNTH_KERNEL_ALIGN 0x1000000u
#define SYNTH_JUMP_TO_END  (BZ_OFF_INIT_SIZE + 4 - BZ_OFF_HEADER)

/* A minimal setup header for kernels that come without one (ELF vmlinux). */
static void synth_header(uint8_t *bp, const struct linux_boot *lb)
{
	put_le16(bp + BZ_OFF_BOOT_FLAG, BZ_BOOT_FLAG);
	bp[BZ_OFF_JUMP] = 0xeb; /* jmp short, as a real header has */
	bp[BZ_OFF_JUMP + 1] = SYNTH_JUMP_TO_END;
	put_le32(bp + BZ_OFF_HEADER, BZ_HDRS_MAGIC);
	put_le16(bp + BZ_OFF_VERSION, BOOT_PARAMS_SYNTH_VERSION);
	bp[BZ_OFF_LOADFLAGS] = LOADFLAG_LOADED_HIGH;
	put_le32(bp + BZ_OFF_KERNEL_ALIGN, SYNTH_KERNEL_ALIGN);
	put_le32(bp + BZ_OFF_INITRD_ADDR_MAX, lb->initrd_addr_max);
	put_le32(bp + BZ_OFF_CMDLINE_SIZE, lb->cmdline_size);
}

static int write_setup_data(struct guest_mem *mem, const struct linux_boot *lb, uint8_t *bp,
			    char *err, size_t errlen)
{
	put_le64(bp + BZ_OFF_SETUP_DATA, 0); /* never forward a chain the image carried */
	if (!lb->dtb)
		return 0;
	if (lb->version < SETUP_DATA_MIN_VERSION) {
		snprintf(err, errlen,
			 "kernel boot protocol 2.%02u has no setup_data (DTB needs 2.09)",
			 lb->version & 0xff);
		return -1;
	}
	const uint64_t room = EBDA_START - SETUP_DATA_ADDR - SETUP_DATA_HDR_SZ;
	uint8_t *sd = guest_mem_ptr(mem, SETUP_DATA_ADDR, SETUP_DATA_HDR_SZ + room);
	if (lb->dtb_size > room || !sd) {
		snprintf(err, errlen, "DTB of %zu bytes too large (limit %" PRIu64 ")",
			 lb->dtb_size, room);
		return -1;
	}
	put_le64(sd, 0);
	put_le32(sd + 8, SETUP_DTB);
	put_le32(sd + 12, (uint32_t)lb->dtb_size);
	memcpy(sd + SETUP_DATA_HDR_SZ, lb->dtb, lb->dtb_size);
	put_le64(bp + BZ_OFF_SETUP_DATA, SETUP_DATA_ADDR);
	return 0;
}

int boot_params_setup(struct guest_mem *mem, const struct linux_boot *lb, uint64_t *initrd_addr,
		      char *err, size_t errlen)
{
	*initrd_addr = 0;
	uint8_t *bp = guest_mem_ptr(mem, ZERO_PAGE_ADDR, BP_SIZE);
	if (!bp) {
		snprintf(err, errlen, "no guest RAM for the zero page");
		return -1;
	}
	struct e820_entry e820[E820_MAX_ENTRIES];
	size_t n820;
	if (e820_build(mem, e820, &n820, err, errlen))
		return -1;
	if (cmdline_write(mem, lb->cmdline, lb->cmdline_size, err, errlen))
		return -1;
	uint64_t ird;
	if (initrd_place(mem, lb->initrd, lb->initrd ? lb->initrd_size : 0, lb->kernel_end,
			 lb->initrd_addr_max, &ird, err, errlen))
		return -1;

	/* The protocol wants everything outside the setup header zeroed. */
	memset(bp, 0, BP_SIZE);
	if (lb->setup_hdr) {
		size_t len = lb->setup_hdr_len;
		if (len > BZ_SETUP_HDR_MAX_END - BZ_SETUP_HDR_START)
			len = BZ_SETUP_HDR_MAX_END - BZ_SETUP_HDR_START;
		memcpy(bp + BZ_SETUP_HDR_START, lb->setup_hdr, len);
	} else {
		synth_header(bp, lb);
	}
	bp[BZ_OFF_TYPE_OF_LOADER] = TYPE_OF_LOADER_UNDEFINED;
	put_le32(bp + BZ_OFF_CMD_LINE_PTR, (uint32_t)CMDLINE_ADDR);
	put_le32(bp + BP_OFF_EXT_CMD_LINE_PTR, (uint32_t)(CMDLINE_ADDR >> 32));
	uint64_t isize = ird ? lb->initrd_size : 0;
	put_le32(bp + BZ_OFF_RAMDISK_IMAGE, (uint32_t)ird);
	put_le32(bp + BP_OFF_EXT_RAMDISK_IMAGE, (uint32_t)(ird >> 32));
	put_le32(bp + BZ_OFF_RAMDISK_SIZE, (uint32_t)isize);
	put_le32(bp + BP_OFF_EXT_RAMDISK_SIZE, (uint32_t)(isize >> 32));
	put_le64(bp + BP_OFF_ACPI_RSDP_ADDR, lb->rsdp_addr);
	bp[BP_OFF_E820_ENTRIES] = (uint8_t)n820;
	for (size_t i = 0; i < n820; i++) {
		uint8_t *e = bp + BP_OFF_E820_TABLE + i * BP_E820_ENTRY_SIZE;
		put_le64(e, e820[i].addr);
		put_le64(e + 8, e820[i].size);
		put_le32(e + 16, e820[i].type);
	}
	if (write_setup_data(mem, lb, bp, err, errlen))
		return -1;
	*initrd_addr = ird;
	return 0;
}
