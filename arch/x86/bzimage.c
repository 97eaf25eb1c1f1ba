#include "bzimage.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/layout.h"
#include "base/byteorder.h"

/* Last field we read is init_size (protocol 2.10+); the header must reach past it. */
#define BZ_REQUIRED_HDR_END (BZ_OFF_INIT_SIZE + 4)
/* XLF_KERNEL_64 (the 64-bit entry at load address + 0x200) exists since protocol 2.12. */
#define BZ_MIN_VERSION_64 0x020c
#define BZ_MIN_VERSION	  0x0206
#define BZ_ENTRY64_OFFSET 0x200

bool bzimage_detect(const uint8_t *img, size_t size)
{
	return size >= BZ_OFF_HEADER + 4 && get_le16(img + BZ_OFF_BOOT_FLAG) == BZ_BOOT_FLAG &&
	       get_le32(img + BZ_OFF_HEADER) == BZ_HDRS_MAGIC;
}

int bzimage_parse(const uint8_t *img, size_t size, struct bzimage *bz, char *err, size_t errlen)
{
	memset(bz, 0, sizeof(*bz));
	if (!bzimage_detect(img, size)) {
		snprintf(err, errlen, "not a bzImage (no boot flag 0xAA55 / \"HdrS\" magic)");
		return -1;
	}
	if (size < BZ_OFF_VERSION + 2) {
		snprintf(err, errlen, "bzImage truncated: %zu bytes, setup header incomplete",
			 size);
		return -1;
	}
	bz->version = get_le16(img + BZ_OFF_VERSION);
	if (bz->version < BZ_MIN_VERSION) {
		snprintf(err, errlen, "bzImage boot protocol %u.%02u too old (need >= 2.06)",
			 bz->version >> 8, bz->version & 0xff);
		return -1;
	}
	if (bz->version < BZ_MIN_VERSION_64) {
		snprintf(err, errlen,
			 "bzImage boot protocol %u.%02u has no 64-bit entry (need >= 2.12 with "
			 "XLF_KERNEL_64)",
			 bz->version >> 8, bz->version & 0xff);
		return -1;
	}
	/* The byte at 0x201 is the short jump over the header: it tells where the header ends. */
	size_t hdr_end = BZ_OFF_HEADER + (size_t)img[BZ_OFF_JUMP + 1];
	if (hdr_end < BZ_REQUIRED_HDR_END) {
		snprintf(err, errlen,
			 "bzImage setup header ends at 0x%zx, too short for protocol 2.%02u",
			 hdr_end, bz->version & 0xff);
		return -1;
	}
	if (size < hdr_end) {
		snprintf(err, errlen, "bzImage truncated: %zu bytes, setup header ends at 0x%zx",
			 size, hdr_end);
		return -1;
	}
	if (!(get_le16(img + BZ_OFF_XLOADFLAGS) & XLF_KERNEL_64)) {
		snprintf(err, errlen, "bzImage is 32-bit only (XLF_KERNEL_64 not set)");
		return -1;
	}
	if (img[BZ_OFF_RELOCATABLE] == 0) {
		snprintf(err, errlen, "bzImage is not relocatable (relocatable_kernel = 0)");
		return -1;
	}
	/* setup_sects is one byte, so (255 + 1) * 512 cannot overflow size_t. */
	size_t setup_sects = img[BZ_OFF_SETUP_SECTS] ? img[BZ_OFF_SETUP_SECTS] : 4;
	size_t setup_size = (setup_sects + 1) * 512;
	if (setup_size >= size) {
		snprintf(err, errlen,
			 "bzImage truncated: %zu setup sectors need %zu bytes, file has %zu",
			 setup_sects, setup_size, size);
		return -1;
	}
	bz->payload = img + setup_size;
	bz->payload_size = size - setup_size;
	uint64_t syssize_bytes = (uint64_t)get_le32(img + BZ_OFF_SYSSIZE) * 16;
	if (syssize_bytes == 0 || syssize_bytes > bz->payload_size) {
		snprintf(err, errlen,
			 "bzImage syssize claims %" PRIu64 " payload bytes, file has %zu",
			 syssize_bytes, bz->payload_size);
		return -1;
	}
	bz->kernel_alignment = get_le32(img + BZ_OFF_KERNEL_ALIGN);
	if (bz->kernel_alignment == 0 || (bz->kernel_alignment & (bz->kernel_alignment - 1))) {
		snprintf(err, errlen,
			 "bzImage kernel_alignment 0x%" PRIx32 " is not a power of two",
			 bz->kernel_alignment);
		return -1;
	}
	bz->setup_hdr = img + BZ_SETUP_HDR_START;
	bz->setup_hdr_len =
	    (hdr_end < BZ_SETUP_HDR_MAX_END ? hdr_end : BZ_SETUP_HDR_MAX_END) - BZ_SETUP_HDR_START;
	bz->init_size = get_le32(img + BZ_OFF_INIT_SIZE);
	bz->cmdline_size = get_le32(img + BZ_OFF_CMDLINE_SIZE);
	bz->initrd_addr_max = get_le32(img + BZ_OFF_INITRD_ADDR_MAX);
	bz->pref_address = get_le64(img + BZ_OFF_PREF_ADDRESS);
	return 0;
}

int bzimage_load(struct guest_mem *mem, const struct bzimage *bz, uint64_t *entry64,
		 uint64_t *kernel_end, char *err, size_t errlen)
{
	const uint64_t load = HIGH_MEMORY_START;
	/* A relocatable kernel decompresses to its load address rounded up to kernel_alignment,
	 * but never below pref_address (LOAD_PHYSICAL_ADDR), and needs init_size bytes there. */
	uint64_t align = bz->kernel_alignment;
	uint64_t runtime = (load + align - 1) & ~(align - 1);
	if (runtime < bz->pref_address)
		runtime = bz->pref_address;
	uint64_t end = load + bz->payload_size;
	uint64_t runtime_end;
	if (__builtin_add_overflow(runtime, (uint64_t)bz->init_size, &runtime_end)) {
		snprintf(err, errlen, "bzImage pref_address 0x%" PRIx64 " + init_size overflows",
			 bz->pref_address);
		return -1;
	}
	if (runtime_end > end)
		end = runtime_end;
	uint64_t low_end = guest_mem_low_end(mem);
	if (end > low_end || !guest_mem_ptr(mem, load, end - load)) {
		snprintf(err, errlen,
			 "kernel needs memory up to 0x%" PRIx64 " but low RAM ends at 0x%" PRIx64,
			 end, low_end);
		return -1;
	}
	uint8_t *dst = guest_mem_ptr(mem, load, bz->payload_size);
	memcpy(dst, bz->payload, bz->payload_size);
	*entry64 = load + BZ_ENTRY64_OFFSET;
	*kernel_end = end;
	return 0;
}
