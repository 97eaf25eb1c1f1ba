/* Loading a guest kernel image into guest memory and describing how to enter it. */
#ifndef MINIVMM_X86_BOOT_H
#define MINIVMM_X86_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

struct dsdt_config;

enum boot_protocol {
	BOOT_AUTO = 0, /* detect from the image */
	BOOT_LINUX64,  /* Linux boot protocol, 64-bit entry: bzImage or ELF vmlinux */
	BOOT_PVH,      /* XEN_ELFNOTE_PHYS32_ENTRY, 32-bit protected mode, hvm_start_info */
};

struct boot_args {
	const uint8_t *kernel; /* the whole image file */
	size_t kernel_size;
	const uint8_t *initrd; /* may be NULL */
	size_t initrd_size;
	const char *cmdline; /* never NULL; may be "" */
	enum boot_protocol protocol;
	int nr_cpus; /* for the MP and ACPI tables */
	/* Optional blob handed over as setup_data SETUP_DTB (Linux64 only). */
	const uint8_t *dtb;
	size_t dtb_size;
	/* Devices the ACPI DSDT describes beyond the fixed ones (NULL: none). */
	const struct dsdt_config *acpi_devices;
};

/* How the boot vCPU starts. */
struct boot_entry {
	enum boot_protocol protocol;	   /* resolved: LINUX64 or PVH */
	uint64_t rip;			   /* LINUX64: 64-bit entry; PVH: 32-bit entry */
	uint64_t zero_page;		   /* LINUX64: RSI */
	uint64_t start_info;		   /* PVH: EBX */
	uint64_t initrd_addr, initrd_size; /* where the initrd went (0 when none) */
	const char *format;		   /* "bzImage", "ELF vmlinux", "PVH ELF": for the log */
};

/* Load the kernel (and initrd, cmdline, firmware tables) into mem.
 * Returns 0, or -1 with a one-line reason in err. Never trusts the image. */
int x86_boot_load(struct guest_mem *mem, const struct boot_args *args, struct boot_entry *entry,
		  char *err, size_t errlen);

#endif
