#include "boot.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/acpi.h"
#include "arch/x86/boot_params.h"
#include "arch/x86/bzimage.h"
#include "arch/x86/elf.h"
#include "arch/x86/layout.h"
#include "arch/x86/mptable.h"
#include "arch/x86/pvh.h"
#include "devices/i8042.h"
#include "base/startup_timing.h"

/* acpi_write puts the RSDP at the start of its region. */
#define ACPI_RSDP_ADDR ACPI_TABLES_START
_Static_assert(ACPI_TABLES_START >= FIRMWARE_TABLES_START && ACPI_TABLES_END <= MPTABLE_START,
	       "ACPI tables must sit in the reserved firmware area, clear of the MP table");
/* 64-bit Linux refuses initrds above 2 GiB unless told otherwise; a vmlinux has no header
 * to tell, so stay conservative. */
#define VMLINUX_INITRD_ADDR_MAX 0x7fffffffu

/* What a PC's BIOS does at the reset vector, reduced to the part that matters here: reset the
 * machine through the i8042 (minivmm exits with status 0). Linux reboots this way on a
 * hardware-reduced ACPI machine without EFI: its reboot order there is EFI, then a real-mode
 * jump to 0xf000:0xfff0 (BOOT_BIOS); without code there the vCPU ran into zeroed memory. */
static int write_reset_vector(struct guest_mem *mem, char *err, size_t errlen)
{
	const uint8_t stub[RESET_VECTOR_SIZE] = {
	    0xfa,		      /* cli */
	    0xb0, I8042_CMD_RESET,    /* mov $0xfe, %al */
	    0xe6, I8042_COMMAND_PORT, /* out %al, $0x64 */
	    0xf4,		      /* 1: hlt */
	    0xeb, 0xfd,		      /* jmp 1b */
	};
	uint8_t *p = guest_mem_ptr(mem, RESET_VECTOR_ADDR, sizeof(stub));
	if (!p) {
		snprintf(err, errlen, "no guest RAM for the reset vector");
		return -1;
	}
	memcpy(p, stub, sizeof(stub));
	return 0;
}

static int load_bzimage(struct guest_mem *mem, const struct boot_args *args,
			struct boot_entry *entry, char *err, size_t errlen)
{
	if (args->protocol == BOOT_PVH) {
		snprintf(err, errlen,
			 "PVH boot needs an ELF kernel with a XEN_ELFNOTE_PHYS32_ENTRY note, "
			 "not a bzImage");
		return -1;
	}
	struct bzimage bz;
	uint64_t end;
	if (bzimage_parse(args->kernel, args->kernel_size, &bz, err, errlen) ||
	    bzimage_load(mem, &bz, &entry->rip, &end, err, errlen))
		return -1;
	struct linux_boot lb = {
	    .setup_hdr = bz.setup_hdr,
	    .setup_hdr_len = bz.setup_hdr_len,
	    .version = bz.version,
	    .cmdline_size = bz.cmdline_size,
	    .initrd_addr_max = bz.initrd_addr_max,
	    .kernel_end = end,
	    .cmdline = args->cmdline,
	    .initrd = args->initrd,
	    .initrd_size = args->initrd_size,
	    .dtb = args->dtb,
	    .dtb_size = args->dtb_size,
	    .rsdp_addr = ACPI_RSDP_ADDR,
	};
	if (boot_params_setup(mem, &lb, &entry->initrd_addr, err, errlen))
		return -1;
	entry->protocol = BOOT_LINUX64;
	entry->zero_page = ZERO_PAGE_ADDR;
	entry->format = "bzImage";
	return 0;
}

static int load_elf(struct guest_mem *mem, const struct boot_args *args, struct boot_entry *entry,
		    char *err, size_t errlen)
{
	struct elf_info info;
	if (elf_parse(args->kernel, args->kernel_size, &info, err, errlen))
		return -1;
	enum boot_protocol proto = args->protocol;
	if (proto == BOOT_AUTO)
		proto = info.has_pvh ? BOOT_PVH : BOOT_LINUX64;
	if (proto == BOOT_PVH && !info.has_pvh) {
		snprintf(err, errlen, "kernel has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)");
		return -1;
	}
	if (proto == BOOT_LINUX64 && !info.is64) {
		snprintf(err, errlen,
			 "32-bit ELF kernel cannot use the Linux 64-bit entry (needs a PVH note)");
		return -1;
	}
	uint64_t rip = proto == BOOT_PVH ? info.pvh_entry : info.entry;
	if (!(proto == BOOT_PVH ? info.pvh_loaded : info.entry_loaded)) {
		snprintf(err, errlen, "entry point 0x%" PRIx64 " outside the loaded image", rip);
		return -1;
	}
	if (proto == BOOT_PVH && args->dtb) {
		snprintf(err, errlen, "a DTB can only be passed with the Linux boot protocol");
		return -1;
	}
	if (elf_load(mem, args->kernel, args->kernel_size, err, errlen))
		return -1;
	if (proto == BOOT_PVH) {
		struct pvh_boot pb = {
		    .kernel_end = info.load_end,
		    .cmdline = args->cmdline,
		    .initrd = args->initrd,
		    .initrd_size = args->initrd_size,
		    .rsdp_addr = ACPI_RSDP_ADDR,
		};
		if (pvh_setup(mem, &pb, &entry->initrd_addr, err, errlen))
			return -1;
		entry->start_info = PVH_START_INFO_ADDR;
		entry->format = "PVH ELF";
	} else {
		struct linux_boot lb = {
		    .version = BOOT_PARAMS_SYNTH_VERSION,
		    .cmdline_size = CMDLINE_MAX - 1,
		    .initrd_addr_max = VMLINUX_INITRD_ADDR_MAX,
		    .kernel_end = info.load_end,
		    .cmdline = args->cmdline,
		    .initrd = args->initrd,
		    .initrd_size = args->initrd_size,
		    .dtb = args->dtb,
		    .dtb_size = args->dtb_size,
		    .rsdp_addr = ACPI_RSDP_ADDR,
		};
		if (boot_params_setup(mem, &lb, &entry->initrd_addr, err, errlen))
			return -1;
		entry->zero_page = ZERO_PAGE_ADDR;
		entry->format = "ELF vmlinux";
	}
	entry->protocol = proto;
	entry->rip = rip;
	return 0;
}

int x86_boot_load(struct guest_mem *mem, const struct boot_args *args, struct boot_entry *entry,
		  char *err, size_t errlen)
{
	*entry = (struct boot_entry){0};
	if (!args->kernel || !args->cmdline) {
		snprintf(err, errlen, "no kernel image or command line given");
		return -1;
	}
	if (args->protocol != BOOT_AUTO && args->protocol != BOOT_LINUX64 &&
	    args->protocol != BOOT_PVH) {
		snprintf(err, errlen, "unknown boot protocol %d", (int)args->protocol);
		return -1;
	}
	int max_cpus = mptable_max_cpus(MPTABLE_START, MPTABLE_END);
	if (args->nr_cpus < 1 || args->nr_cpus > max_cpus) {
		snprintf(err, errlen, "%d CPUs requested; the MP table supports 1..%d",
			 args->nr_cpus, max_cpus);
		return -1;
	}
	int max_acpi = acpi_max_cpus(ACPI_TABLES_START, ACPI_TABLES_END);
	if (args->nr_cpus > max_acpi) {
		snprintf(err, errlen, "%d CPUs requested; the ACPI tables support 1..%d",
			 args->nr_cpus, max_acpi);
		return -1;
	}
	int rc;
	if (bzimage_detect(args->kernel, args->kernel_size))
		rc = load_bzimage(mem, args, entry, err, errlen);
	else if (elf_detect(args->kernel, args->kernel_size))
		rc = load_elf(mem, args, entry, err, errlen);
	else {
		snprintf(err, errlen, "unrecognised kernel image format (expected bzImage or ELF)");
		rc = -1;
	}
	startup_mark(STARTUP_LOAD); /* the rest is tables */
	if (rc == 0)
		rc = mptable_write(mem, MPTABLE_START, MPTABLE_END, args->nr_cpus, err, errlen);
	/* Both: the MP table for kernels without ACPI (and Linux's MPPARSE), ACPI for the rest. */
	if (rc == 0)
		rc = acpi_write(mem, ACPI_RSDP_ADDR, ACPI_TABLES_END, args->nr_cpus,
				args->acpi_devices, err, errlen);
	if (rc == 0)
		rc = write_reset_vector(mem, err, errlen);
	if (rc == 0 && entry->initrd_addr)
		entry->initrd_size = args->initrd_size;
	if (rc)
		*entry = (struct boot_entry){0};
	return rc;
}
