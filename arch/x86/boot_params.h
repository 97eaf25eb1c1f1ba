/* The Linux zero page (struct boot_params) at ZERO_PAGE_ADDR, plus its setup_data chain. */
#ifndef MINIVMM_X86_BOOT_PARAMS_H
#define MINIVMM_X86_BOOT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

/* boot_params offsets outside the setup header (arch/x86/include/uapi/asm/bootparam.h). */
#define BP_OFF_ACPI_RSDP_ADDR	 0x070 /* read by Linux 5.0+ (protocol 2.14); older kernels scan */
#define BP_OFF_EXT_RAMDISK_IMAGE 0x0c0
#define BP_OFF_EXT_RAMDISK_SIZE	 0x0c4
#define BP_OFF_EXT_CMD_LINE_PTR	 0x0c8
#define BP_OFF_E820_ENTRIES	 0x1e8
#define BP_OFF_E820_TABLE	 0x2d0
#define BP_E820_ENTRY_SIZE	 20
#define BP_E820_MAX		 128
#define BP_SIZE			 0x1000

/* Protocol version of the header synthesized for an ELF vmlinux (has every field we fill). */
#define BOOT_PARAMS_SYNTH_VERSION 0x020f

#define SETUP_DTB	  2
#define SETUP_DATA_HDR_SZ 16 /* next (u64), type (u32), len (u32) */

/* Values the Linux protocol needs; from a bzImage's header or synthesized for a vmlinux. */
struct linux_boot {
	const uint8_t *setup_hdr; /* file bytes from 0x1f1 (NULL: synthesize for an ELF) */
	size_t setup_hdr_len;
	uint16_t version;
	uint32_t cmdline_size;	  /* longest command line the kernel takes, without the NUL */
	uint32_t initrd_addr_max; /* highest address the initrd may occupy */
	uint64_t kernel_end;	  /* the initrd goes above this */
	const char *cmdline;
	const uint8_t *initrd;
	size_t initrd_size;
	const uint8_t *dtb; /* optional SETUP_DTB payload */
	size_t dtb_size;
	uint64_t rsdp_addr; /* ACPI RSDP for acpi_rsdp_addr (0: none) */
};

/* Write the command line, initrd, setup_data and zero page. *initrd_addr gets where the initrd
 * went (0 when none). Returns 0 or -1 with err. */
int boot_params_setup(struct guest_mem *mem, const struct linux_boot *lb, uint64_t *initrd_addr,
		      char *err, size_t errlen);

#endif
