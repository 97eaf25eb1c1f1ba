/* Fixed guest-physical addresses minivmm uses below 1 MiB and in the MMIO hole. */
#ifndef MINIVMM_X86_LAYOUT_H
#define MINIVMM_X86_LAYOUT_H

#define BOOT_GDT_ADDR	    0x0500ULL /* GDT for the 64-bit and 32-bit entries */
#define BOOT_IDT_ADDR	    0x0520ULL /* empty IDT (limit 0) until the guest loads its own */
#define PVH_START_INFO_ADDR 0x6000ULL /* hvm_start_info + module list + memory map */
#define ZERO_PAGE_ADDR	    0x7000ULL /* Linux boot_params */
#define PML4_ADDR	    0x9000ULL /* identity page tables for the 64-bit entry */
#define PDPT_ADDR	    0xa000ULL
#define PD_ADDR		    0xb000ULL /* 4 page directories: identity map of 4 GiB, 2 MiB pages */
#define CMDLINE_ADDR	    0x20000ULL
#define CMDLINE_MAX	    0x10000ULL /* 64 KiB including the NUL */
#define SETUP_DATA_ADDR	    0x30000ULL /* setup_data chain (e.g. SETUP_DTB), up to EBDA_START */
#define EBDA_START	    0x9fc00ULL /* reserved in e820, as on a PC */
/* ACPI tables, RSDP first: inside the 0xe0000-0xfffff area OSPMs scan for "RSD PTR ". */
#define ACPI_TABLES_START 0xe0000ULL
#define ACPI_TABLES_END	  0xf0000ULL
#define BIOS_ROM_START	  0xf0000ULL
/* [FIRMWARE_TABLES_START, HIGH_MEMORY_START) is one reserved e820 entry: ACPI + MP tables. */
#define FIRMWARE_TABLES_START ACPI_TABLES_START
/* MP floating pointer + table: the BIOS area holds one for up to 254 CPUs (the EBDA only 40). */
#define MPTABLE_START BIOS_ROM_START
#define MPTABLE_END   RESET_VECTOR_ADDR
/* The x86 reset vector (0xf000:0xfff0): a stub that resets the VM through the i8042. */
#define RESET_VECTOR_ADDR 0xffff0ULL
#define RESET_VECTOR_SIZE 16
#define HIGH_MEMORY_START 0x100000ULL /* kernels are loaded at 1 MiB */

/* PCI (devices/pci.c): BARs the VMM places, then virtio-mmio windows, then ECAM for bus 0. */
#define PCI_MMIO_BASE  0xc0000000ULL /* 32-bit BAR window, [PCI_MMIO_BASE, PCI_MMIO_END) */
#define PCI_MMIO_END   0xd0000000ULL
#define PCI_ECAM_BASE  0xe0000000ULL /* enhanced configuration access: 1 MiB per bus */
#define PCI_ECAM_SIZE  0x100000ULL   /* bus 0 only */
#define PCI_HOLE_LIMIT 0xdfffffffULL /* last byte of the window ACPI gives the host bridge */

/* virtio-mmio windows (4 KiB each, devices/virtio/mmio.h) between the PCI BARs and ECAM. */
#define VIRTIO_MMIO_BASE     0xd0000000ULL
#define VIRTIO_MMIO_MAX_DEVS 10

#define IOAPIC_ADDR 0xfec00000ULL
#define LAPIC_ADDR  0xfee00000ULL

/* Selectors in the boot GDT (same as Linux's boot protocol expects). */
#define BOOT_CS_SELECTOR 0x10
#define BOOT_DS_SELECTOR 0x18

#endif
