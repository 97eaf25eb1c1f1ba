/* ACPI tables (RSDP, RSDT, XSDT, FADT, DSDT, MADT, MCFG): how ACPI-only kernels find their CPUs
 * and the PCI bus (ECAM in the MCFG, the host bridge and its interrupt routing in the DSDT). */
#ifndef MINIVMM_X86_ACPI_H
#define MINIVMM_X86_ACPI_H

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/dsdt.h"
#include "base/guest_mem.h"

#define ACPI_RSDP_SIZE	      36 /* revision 2 (ACPI 2.0+) */
#define ACPI_RSDP_V1_SIZE     20 /* what the first checksum covers */
#define ACPI_HDR_SIZE	      36 /* common System Description Table header */
#define ACPI_FADT_SIZE	      276
#define ACPI_MADT_LAPIC_SIZE  8
#define ACPI_MADT_IOAPIC_SIZE 12
#define ACPI_MADT_NMI_SIZE    6
#define ACPI_MCFG_SIZE	      60 /* header, 8 reserved, one 16-byte allocation */
#define MCFG_OFF_ENTRIES      44

/* ACPI 6.x FADT field offsets. */
#define FADT_OFF_FIRMWARE_CTRL	   36
#define FADT_OFF_DSDT		   40
#define FADT_OFF_PM_PROFILE	   45
#define FADT_OFF_IAPC_BOOT_ARCH	   109
#define FADT_OFF_FLAGS		   112
#define FADT_OFF_RESET_REG	   116
#define FADT_OFF_RESET_VALUE	   128
#define FADT_OFF_MINOR_VERSION	   131
#define FADT_OFF_X_DSDT		   140
#define FADT_OFF_SLEEP_CONTROL_REG 244
#define FADT_OFF_SLEEP_STATUS_REG  256
#define FADT_OFF_HYPERVISOR_ID	   268

#define FADT_FLAG_RESET_REG_SUP	  (1u << 10)
#define FADT_FLAG_HW_REDUCED_ACPI (1u << 20)

#define IAPC_LEGACY_DEVICES  (1u << 0)
#define IAPC_8042	     (1u << 1)
#define IAPC_VGA_NOT_PRESENT (1u << 2)

/* MADT: header, then Local APIC address and flags, then entries. */
#define MADT_OFF_LAPIC_ADDR 36
#define MADT_OFF_FLAGS	    40
#define MADT_OFF_ENTRIES    44
#define MADT_PCAT_COMPAT    (1u << 0)
#define MADT_TYPE_LAPIC	    0
#define MADT_TYPE_IOAPIC    1
#define MADT_TYPE_LAPIC_NMI 4
#define MADT_LAPIC_ENABLED  (1u << 0)

/* Bytes the tables take for nr_cpus processors, alignment padding included. */
uint64_t acpi_tables_size(int nr_cpus);

/* Most CPUs whose tables fit in [base, limit) (at most 254: xAPIC ids, the IOAPIC takes one). */
int acpi_max_cpus(uint64_t base, uint64_t limit);

/* Write the RSDP at base (16-byte aligned) and the other tables after it, all in [base, limit)
 * below 4 GiB. The IOAPIC gets id nr_cpus, as in the MP table; devices (may be NULL) adds the
 * virtio-mmio devices to the DSDT. Returns 0 or -1 with err. */
int acpi_write(struct guest_mem *mem, uint64_t base, uint64_t limit, int nr_cpus,
	       const struct dsdt_config *devices, char *err, size_t errlen);

#endif
