/* Copies loader data before anything touches low memory (the AP trampoline reuses it). */
#include <stdbool.h>

#include "boot_info.h"
#include "lib.h"
#include "probe.h"

#define CMDLINE_MAX  65535 /* matches the bzImage header's cmdline_size */
#define DTB_MAX	     (64 * 1024)
#define IDENTITY_TOP (4ull << 30) /* what the page tables map */

struct boot_info boot_info;
static char cmdline_buf[CMDLINE_MAX + 1] __attribute__((section(".noinit")));
static uint8_t dtb_buf[DTB_MAX] __attribute__((section(".noinit"), aligned(8)));

/* PVH (xen/include/public/arch-x86/hvm/start_info.h). */
#define HVM_START_MAGIC 0x336ec578
struct hvm_start_info {
	uint32_t magic, version, flags, nr_modules;
	uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr;
	uint64_t memmap_paddr; /* version >= 1 */
	uint32_t memmap_entries, reserved;
};
struct hvm_modlist_entry {
	uint64_t paddr, size, cmdline_paddr, reserved;
};
struct hvm_memmap_entry {
	uint64_t addr, size;
	uint32_t type, reserved;
};

/* Linux boot_params offsets (Documentation/arch/x86/zero-page.rst). */
#define BP_ACPI_RSDP	 0x070
#define BP_EXT_RAMDISK	 0x0c0
#define BP_EXT_RD_SIZE	 0x0c4
#define BP_EXT_CMDLINE	 0x0c8
#define BP_E820_ENTRIES	 0x1e8
#define BP_RAMDISK_IMAGE 0x218
#define BP_RAMDISK_SIZE	 0x21c
#define BP_CMD_LINE_PTR	 0x228
#define BP_SETUP_DATA	 0x250
#define BP_E820_TABLE	 0x2d0
#define BP_E820_MAX	 128

static void copy_cmdline(uint64_t paddr)
{
	size_t n = 0;
	if (paddr) {
		const char *s = (const char *)paddr;
		while (n < CMDLINE_MAX && s[n])
			n++;
		memcpy(cmdline_buf, s, n);
	}
	cmdline_buf[n] = 0;
	boot_info.cmdline = cmdline_buf;
	boot_info.cmdline_len = n;
}

static void add_e820(uint64_t addr, uint64_t size, uint32_t type)
{
	if (boot_info.e820_count < E820_MAX)
		boot_info.e820[boot_info.e820_count++] = (struct e820_entry){addr, size, type};
}

static const char *copy_pvh(const struct hvm_start_info *si)
{
	copy_cmdline(0);
	if (si->magic != HVM_START_MAGIC)
		return "bad hvm_start_info magic";
	copy_cmdline(si->cmdline_paddr);
	if (si->nr_modules && si->modlist_paddr) {
		const struct hvm_modlist_entry *m = (const void *)si->modlist_paddr;
		boot_info.initrd_addr = m[0].paddr;
		boot_info.initrd_size = m[0].size;
	}
	if (si->version >= 1 && si->memmap_paddr) {
		const struct hvm_memmap_entry *e = (const void *)si->memmap_paddr;
		for (uint32_t i = 0; i < si->memmap_entries; i++)
			add_e820(e[i].addr, e[i].size, e[i].type);
	}
	boot_info.rsdp = si->rsdp_paddr;
	return 0;
}

static uint32_t bp32(const uint8_t *bp, unsigned off)
{
	uint32_t v;
	memcpy(&v, bp + off, 4);
	return v;
}

/* struct setup_data { u64 next; u32 type; u32 len; u8 data[]; } (asm/bootparam.h) */
#define SETUP_HDR_SIZE 16
#define SETUP_DTB      2
#define SETUP_MAX      16 /* entries followed; the chain is untrusted and may loop */

/* Is [addr, addr + len) inside one e820 RAM range, and identity-mapped? */
static bool in_ram(uint64_t addr, uint64_t len)
{
	if (!addr || addr >= IDENTITY_TOP || len > IDENTITY_TOP - addr)
		return false;
	for (unsigned i = 0; i < boot_info.e820_count; i++) {
		const struct e820_entry *e = &boot_info.e820[i];
		if (e->type == E820_RAM && addr >= e->addr && addr - e->addr <= e->size &&
		    len <= e->size - (addr - e->addr))
			return true;
	}
	return false;
}

/* Needs the e820 map. The chain sits in low memory the probe reuses, so copy the DTB now. */
static void copy_setup_data(uint64_t pa)
{
	for (unsigned i = 0; pa; i++) {
		if (i == SETUP_MAX) {
			boot_info.setup_data_err = "setup_data chain too long";
			return;
		}
		if (!in_ram(pa, SETUP_HDR_SIZE)) {
			boot_info.setup_data_err = "setup_data entry outside RAM";
			return;
		}
		const uint8_t *sd = (const uint8_t *)pa;
		uint64_t next;
		memcpy(&next, sd, 8);
		uint32_t type = bp32(sd, 8), len = bp32(sd, 12);
		if (!in_ram(pa + SETUP_HDR_SIZE, len)) {
			boot_info.setup_data_err = "setup_data entry runs past RAM";
			return;
		}
		if (type == SETUP_DTB && !boot_info.dtb) {
			if (len > DTB_MAX) {
				boot_info.setup_data_err = "SETUP_DTB larger than 64 KiB";
			} else {
				memcpy(dtb_buf, sd + SETUP_HDR_SIZE, len);
				boot_info.dtb = dtb_buf;
				boot_info.dtb_size = len;
			}
		}
		pa = next;
	}
}

static const char *copy_linux(const uint8_t *bp)
{
	copy_cmdline(bp32(bp, BP_CMD_LINE_PTR) | (uint64_t)bp32(bp, BP_EXT_CMDLINE) << 32);
	boot_info.initrd_addr = bp32(bp, BP_RAMDISK_IMAGE) | (uint64_t)bp32(bp, BP_EXT_RAMDISK)
								 << 32;
	boot_info.initrd_size = bp32(bp, BP_RAMDISK_SIZE) | (uint64_t)bp32(bp, BP_EXT_RD_SIZE)
								<< 32;
	unsigned n = bp[BP_E820_ENTRIES];
	if (n > BP_E820_MAX)
		n = BP_E820_MAX;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *e = bp + BP_E820_TABLE + 20 * i; /* packed: addr, size, type */
		uint64_t addr, size;
		memcpy(&addr, e, 8);
		memcpy(&size, e + 8, 8);
		add_e820(addr, size, bp32(e, 16));
	}
	memcpy(&boot_info.rsdp, bp + BP_ACPI_RSDP, 8);
	uint64_t setup_data;
	memcpy(&setup_data, bp + BP_SETUP_DATA, 8);
	copy_setup_data(setup_data);
	return 0;
}

const char *boot_info_copy(int protocol, uint64_t info)
{
	boot_info.protocol = protocol;
	if (!info) {
		copy_cmdline(0);
		return "no boot information";
	}
	if (protocol == BOOT_PVH)
		return copy_pvh((const struct hvm_start_info *)info);
	return copy_linux((const uint8_t *)info);
}

uint64_t boot_info_ram_top_below_4g(void)
{
	uint64_t top = 0;
	for (unsigned i = 0; i < boot_info.e820_count; i++) {
		const struct e820_entry *e = &boot_info.e820[i];
		uint64_t end = e->addr + e->size;
		if (e->type == E820_RAM && end <= (1ull << 32) && end > top)
			top = end;
	}
	return top;
}
