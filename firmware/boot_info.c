/* Copies loader data before anything touches low memory (the AP trampoline reuses it). */
#include "boot_info.h"
#include "lib.h"
#include "probe.h"

#define CMDLINE_MAX 65535 /* matches the bzImage header's cmdline_size */

struct boot_info boot_info;
static char cmdline_buf[CMDLINE_MAX + 1] __attribute__((section(".noinit")));

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
