/* What the loader handed over (PVH hvm_start_info or Linux boot_params), copied into the image. */
#ifndef BOOT_INFO_H
#define BOOT_INFO_H

#include <stddef.h>
#include <stdint.h>

#define E820_MAX 128
#define E820_RAM 1

struct e820_entry {
	uint64_t addr, size;
	uint32_t type;
};

struct boot_info {
	int protocol; /* BOOT_PVH or BOOT_LINUX64 */
	const char *cmdline;
	size_t cmdline_len;
	unsigned e820_count;
	struct e820_entry e820[E820_MAX];
	uint64_t initrd_addr, initrd_size;
	uint64_t rsdp; /* 0 when the loader gave none */
	/* Linux entry: the first SETUP_DTB in the setup_data chain, copied (NULL when none). */
	const void *dtb;
	size_t dtb_size;
	const char *setup_data_err; /* why (part of) the chain was ignored, or NULL */
};

extern struct boot_info boot_info;

/* Copy everything we need out of the loader's structures. Returns NULL or an error. */
const char *boot_info_copy(int protocol, uint64_t info);
/* The end of the highest e820 RAM range below 4 GiB (the probe maps the low 4 GiB). */
uint64_t boot_info_ram_top_below_4g(void);

#endif
