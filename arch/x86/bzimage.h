/* bzImage (Linux boot protocol) setup header parsing and payload loading. */
#ifndef MINIVMM_X86_BZIMAGE_H
#define MINIVMM_X86_BZIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

/* Setup header offsets (Documentation/arch/x86/boot.rst), relative to the start of the file
 * and equally to the start of boot_params (the header sits at the same offset in both). */
#define BZ_SETUP_HDR_START     0x1f1
#define BZ_OFF_SETUP_SECTS     0x1f1
#define BZ_OFF_SYSSIZE	       0x1f4
#define BZ_OFF_BOOT_FLAG       0x1fe
#define BZ_OFF_JUMP	       0x200
#define BZ_OFF_HEADER	       0x202
#define BZ_OFF_VERSION	       0x206
#define BZ_OFF_TYPE_OF_LOADER  0x210
#define BZ_OFF_LOADFLAGS       0x211
#define BZ_OFF_RAMDISK_IMAGE   0x218
#define BZ_OFF_RAMDISK_SIZE    0x21c
#define BZ_OFF_CMD_LINE_PTR    0x228
#define BZ_OFF_INITRD_ADDR_MAX 0x22c
#define BZ_OFF_KERNEL_ALIGN    0x230
#define BZ_OFF_RELOCATABLE     0x234
#define BZ_OFF_XLOADFLAGS      0x236
#define BZ_OFF_CMDLINE_SIZE    0x238
#define BZ_OFF_SETUP_DATA      0x250
#define BZ_OFF_PREF_ADDRESS    0x258
#define BZ_OFF_INIT_SIZE       0x260
#define BZ_SETUP_HDR_MAX_END   0x290 /* boot_params reserves 0x1f1..0x290 for the header */

#define BZ_BOOT_FLAG	     0xaa55
#define BZ_HDRS_MAGIC	     0x53726448 /* "HdrS" */
#define XLF_KERNEL_64	     (1u << 0)
#define LOADFLAG_LOADED_HIGH 0x01

struct bzimage {
	uint16_t version;
	const uint8_t *setup_hdr; /* file bytes from 0x1f1 ... */
	size_t setup_hdr_len;	  /* ... up to the header end the image declares */
	const uint8_t *payload;	  /* protected-mode kernel */
	size_t payload_size;
	uint32_t init_size; /* linear memory the kernel needs from its runtime start */
	uint32_t cmdline_size;
	uint32_t initrd_addr_max;
	uint32_t kernel_alignment;
	uint64_t pref_address;
};

/* True when the image carries the boot sector flag and the "HdrS" magic. */
bool bzimage_detect(const uint8_t *img, size_t size);

/* Validate the setup header; bz points into img afterwards. Returns 0 or -1 with err. */
int bzimage_parse(const uint8_t *img, size_t size, struct bzimage *bz, char *err, size_t errlen);

/* Copy the payload to HIGH_MEMORY_START. On success *entry64 is the 64-bit entry point and
 * *kernel_end the first byte above everything the kernel may use while decompressing. */
int bzimage_load(struct guest_mem *mem, const struct bzimage *bz, uint64_t *entry64,
		 uint64_t *kernel_end, char *err, size_t errlen);

#endif
