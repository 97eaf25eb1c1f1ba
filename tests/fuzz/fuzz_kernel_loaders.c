/* libFuzzer target: kernel image detection and the bzImage, ELF vmlinux and PVH loaders, with
 * the initrd, command line and DTB they place (x86_boot_load, as main.c calls it), plus
 * initrd_place on its own with arbitrary limits.
 *
 * Input: a 24-byte header, then the command line (header bytes 6..7 say how many bytes, at
 * most 512), then the kernel image (the rest, in an allocation of exactly its size).
 *   0     bits 0-1 boot protocol (3: invalid), bit 2 pass a DTB, bit 3 long command line
 *         ('a' x 2 * len, past CMDLINE_MAX), bit 4 also call initrd_place directly,
 *         bits 5-7 vCPUs - 1
 *   1     guest RAM (bits 0-2): 1, 2, 8, 32 MiB, 640 KiB, 1 MiB + 4 KiB, 1.5 MiB + 123 bytes,
 *         3 MiB
 *   2..5  initrd size (u32 LE, capped at 40 MiB: more than any RAM here)
 *   6..7  command line length (u16 LE)
 *   8..9  DTB size (u16 LE), shifted left by byte 10 % 8
 *   16..23 initrd_place: kernel_end, addr_max (u32 LE each)
 * Guest RAM is heap memory, so ASan sees any write past it. What a successful load wrote is
 * checked: the zero page (command line pointer, initrd fields, e820 map, setup_data) or the PVH
 * start info, and the command line itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "arch/x86/boot.h"
#include "arch/x86/boot_params.h"
#include "arch/x86/bzimage.h"
#include "arch/x86/e820.h"
#include "arch/x86/initrd.h"
#include "arch/x86/layout.h"
#include "arch/x86/pvh.h"
#include "base/byteorder.h"

#define HDR_SIZE    24
#define CMDLINE_CAP 512
#define INITRD_MAX  (40u << 20)
#define MiB	    (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool in_ram(const struct guest_mem *mem, uint64_t gpa, uint64_t len)
{
	return guest_mem_ptr(mem, gpa, len ? len : 1) != NULL;
}

/* What the loaders promise the kernel after a successful load. */
static void check_tables(const struct guest_mem *mem, const struct boot_entry *e,
			 const char *cmdline, const uint8_t *dtb, size_t dtb_size)
{
	const char *cl = guest_mem_ptr(mem, CMDLINE_ADDR, strlen(cmdline) + 1);
	if (!cl || strcmp(cl, cmdline))
		abort();
	uint64_t ird = e->initrd_addr, isize = e->initrd_size;
	if (e->protocol == BOOT_PVH) {
		const uint8_t *si = guest_mem_ptr(mem, PVH_START_INFO_ADDR, HVM_START_INFO_SIZE);
		if (!si || get_le32(si + HSI_OFF_MAGIC) != HVM_START_MAGIC_VALUE ||
		    get_le64(si + HSI_OFF_CMDLINE_PADDR) != CMDLINE_ADDR ||
		    get_le32(si + HSI_OFF_NR_MODULES) != (ird ? 1 : 0))
			abort();
		if (ird) {
			const uint8_t *mod = guest_mem_ptr(
			    mem, get_le64(si + HSI_OFF_MODLIST_PADDR), HVM_MODLIST_ENTRY_SZ);
			if (!mod || get_le64(mod) != ird || get_le64(mod + 8) != isize)
				abort();
		}
		uint32_t n = get_le32(si + HSI_OFF_MEMMAP_ENTRIES);
		const uint8_t *mm = guest_mem_ptr(mem, get_le64(si + HSI_OFF_MEMMAP_PADDR),
						  (uint64_t)n * HVM_MEMMAP_ENTRY_SZ);
		if (!n || n > E820_MAX_ENTRIES || !mm)
			abort();
		for (uint32_t i = 0; i < n; i++) {
			const uint8_t *m = mm + i * HVM_MEMMAP_ENTRY_SZ;
			if (get_le32(m + 16) == E820_RAM &&
			    !in_ram(mem, get_le64(m), get_le64(m + 8)))
				abort();
		}
		return;
	}
	const uint8_t *bp = guest_mem_ptr(mem, ZERO_PAGE_ADDR, BP_SIZE);
	if (!bp || get_le32(bp + BZ_OFF_CMD_LINE_PTR) != CMDLINE_ADDR ||
	    get_le32(bp + BZ_OFF_RAMDISK_IMAGE) != (uint32_t)ird ||
	    get_le32(bp + BP_OFF_EXT_RAMDISK_IMAGE) != (uint32_t)(ird >> 32) ||
	    get_le32(bp + BZ_OFF_RAMDISK_SIZE) != (uint32_t)isize ||
	    get_le32(bp + BP_OFF_EXT_RAMDISK_SIZE) != (uint32_t)(isize >> 32))
		abort();
	unsigned n = bp[BP_OFF_E820_ENTRIES];
	if (!n || n > E820_MAX_ENTRIES)
		abort();
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *m = bp + BP_OFF_E820_TABLE + i * BP_E820_ENTRY_SIZE;
		if (get_le32(m + 16) == E820_RAM && !in_ram(mem, get_le64(m), get_le64(m + 8)))
			abort();
	}
	uint64_t sd = get_le64(bp + BZ_OFF_SETUP_DATA);
	if (!dtb) {
		if (sd)
			abort(); /* nothing from the image's own header */
		return;
	}
	const uint8_t *h = guest_mem_ptr(mem, sd, SETUP_DATA_HDR_SZ + dtb_size);
	if (!h || get_le64(h) != 0 || get_le32(h + 8) != SETUP_DTB ||
	    get_le32(h + 12) != dtb_size || memcmp(h + SETUP_DATA_HDR_SZ, dtb, dtb_size))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t ram_sizes[8] = {
	    1 * MiB, 2 * MiB, 8 * MiB, 32 * MiB, 640 << 10, MiB + 4096, MiB + MiB / 2 + 123,
	    3 * MiB};
	static uint8_t *rams[8];
	static const uint8_t *initrd_src; /* zero pages, read-only: costs nothing */
	static char *long_cmdline;
	if (!initrd_src) {
		initrd_src = mmap(NULL, INITRD_MAX, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		long_cmdline = malloc(2 * 65536 + 1);
		if (initrd_src == MAP_FAILED || !long_cmdline)
			abort();
		for (int i = 0; i < 8; i++)
			if (!(rams[i] = malloc(ram_sizes[i])))
				abort();
	}
	if (size < HDR_SIZE)
		return 0;
	uint8_t flags = data[0];
	uint32_t ram_size = ram_sizes[data[1] & 7];
	uint8_t *ram = rams[data[1] & 7];
	/* The firmware tables and the zero page live below 1 MiB: start from a clean slate. */
	memset(ram, 0, HIGH_MEMORY_START < ram_size ? HIGH_MEMORY_START : ram_size);
	struct guest_mem mem;
	guest_mem_init_with(&mem, ram, ram_size);

	uint32_t initrd_size = get_le32(data + 2) % (INITRD_MAX + 1);
	size_t cmdline_len = (size_t)(data[6] | data[7] << 8);
	size_t dtb_size = (size_t)(data[8] | data[9] << 8) << (data[10] % 8);
	uint32_t place_end = get_le32(data + 16), place_max = get_le32(data + 20);
	data += HDR_SIZE;
	size -= HDR_SIZE;

	char *cmdline;
	if (flags & 8) {
		cmdline = long_cmdline;
		memset(cmdline, 'a', 2 * cmdline_len);
		cmdline[2 * cmdline_len] = 0;
	} else {
		if (cmdline_len > CMDLINE_CAP)
			cmdline_len = CMDLINE_CAP;
		if (cmdline_len > size)
			cmdline_len = size;
		cmdline = malloc(cmdline_len + 1);
		memcpy(cmdline, data, cmdline_len);
		cmdline[cmdline_len] = 0;
		data += cmdline_len;
		size -= cmdline_len;
	}
	uint8_t *kernel = malloc(size ? size : 1);
	memcpy(kernel, data, size);
	uint8_t *dtb = NULL;
	if (flags & 4) {
		dtb = malloc(dtb_size ? dtb_size : 1);
		memset(dtb, 0xd0, dtb_size);
	}

	struct boot_args args = {
	    .kernel = kernel,
	    .kernel_size = size,
	    .initrd = initrd_size ? initrd_src : NULL,
	    .initrd_size = initrd_size,
	    .cmdline = cmdline,
	    .protocol = (enum boot_protocol)(flags & 3),
	    .nr_cpus = 1 + (flags >> 5),
	    .dtb = dtb,
	    .dtb_size = dtb ? dtb_size : 0,
	};
	struct boot_entry e;
	char err[256] = "";
	int rc = x86_boot_load(&mem, &args, &e, err, sizeof(err));
	if (getenv("FUZZ_VERBOSE")) /* to check what seeds reach */
		fprintf(stderr, "x86_boot_load: %s\n", rc ? err : e.format);
	if (rc == 0) {
		if (e.protocol != BOOT_LINUX64 && e.protocol != BOOT_PVH)
			abort();
		if ((flags & 3) && e.protocol != (enum boot_protocol)(flags & 3))
			abort(); /* an explicit protocol is honoured or refused */
		if (!e.format || !in_ram(&mem, e.rip, 1))
			abort();
		if (e.protocol == BOOT_LINUX64 && e.zero_page != ZERO_PAGE_ADDR)
			abort();
		if (e.protocol == BOOT_PVH && e.start_info != PVH_START_INFO_ADDR)
			abort();
		if (e.initrd_addr && (e.initrd_size != initrd_size || e.initrd_addr & 0xfff ||
				      e.initrd_addr < HIGH_MEMORY_START ||
				      !in_ram(&mem, e.initrd_addr, e.initrd_size)))
			abort();
		if (!e.initrd_addr && initrd_size)
			abort(); /* an initrd given is placed or refused */
		if (strlen(cmdline) >= CMDLINE_MAX)
			abort();
		check_tables(&mem, &e, cmdline, dtb, dtb ? dtb_size : 0);
	} else if (!err[0]) {
		abort(); /* every refusal says why */
	}

	if (flags & 16) {
		uint64_t a;
		err[0] = 0;
		int prc = initrd_place(&mem, initrd_src, initrd_size, place_end, place_max, &a, err,
				       sizeof(err));
		if (getenv("FUZZ_VERBOSE"))
			fprintf(stderr, "initrd_place(%u, %#x, %#x): %d %#lx %s\n", initrd_size,
				place_end, place_max, prc, (unsigned long)a, err);
		if (prc == 0) {
			if (initrd_size && (!a || a & 0xfff || a < place_end ||
					    (uint64_t)a + initrd_size - 1 > place_max ||
					    a + initrd_size > guest_mem_low_end(&mem) ||
					    !in_ram(&mem, a, initrd_size)))
				abort();
			if (!initrd_size && a)
				abort();
		} else if (!err[0] || !initrd_size) {
			abort();
		}
	}

	free(dtb);
	free(kernel);
	if (!(flags & 8))
		free(cmdline);
	return 0;
}
