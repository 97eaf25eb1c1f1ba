#include "acpi.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/aml.h"
#include "arch/x86/dsdt.h"
#include "arch/x86/layout.h"
#include "devices/acpi_sleep.h"
#include "devices/i8042.h"
#include "base/byteorder.h"

#define OEM_ID		 "MNVMM "   /* 6 bytes */
#define OEM_TABLE_ID	 "MINIVMM " /* 8 bytes */
#define OEM_REVISION	 1
#define CREATOR_ID	 "MNVM"
#define CREATOR_REVISION 1
#define HYPERVISOR_ID	 "MNVMM\0\0\0" /* FADT Hypervisor Vendor Identity, 8 bytes */

#define RSDP_REVISION 2 /* ACPI 2.0+: XSDT address and extended checksum */
#define RSDT_REVISION 1
#define XSDT_REVISION 1
#define FADT_REVISION 6 /* ACPI 6.x layout (276 bytes) */
#define FADT_MINOR    5 /* ACPI 6.5 */
#define DSDT_REVISION 2 /* 64-bit AML integers */
#define MADT_REVISION 5 /* ACPI 6.3+ */
#define MCFG_REVISION 1

#define PM_PROFILE_ENTERPRISE_SERVER 4
#define MADT_NMI_ALL_PROCESSORS	     0xff
#define MADT_NMI_LINT1		     1
#define MADT_NMI_CONFORMING	     0	  /* polarity and trigger conform to the bus */
#define MAX_XAPIC_ID		     0xfe /* 0xff is broadcast; ids 0..nr_cpus, IOAPIC last */
#define NR_SDT_ENTRIES		     3	  /* FADT, MADT, MCFG */

/* Generic Address Structure: an 8-bit I/O port. */
#define GAS_SPACE_SYSTEM_IO 1
#define GAS_ACCESS_BYTE	    1
#define I8042_RESET_VALUE   0xfe /* devices/i8042: this command resets the VM */

/* Offsets in the tables' common header and the RSDP. */
#define HDR_OFF_LENGTH	      4
#define HDR_OFF_CHECKSUM      9
#define RSDP_OFF_CHECKSUM     8
#define RSDP_OFF_REVISION     15
#define RSDP_OFF_RSDT	      16
#define RSDP_OFF_LENGTH	      20
#define RSDP_OFF_XSDT	      24
#define RSDP_OFF_EXT_CHECKSUM 32

_Static_assert(FADT_OFF_FIRMWARE_CTRL == ACPI_HDR_SIZE, "FADT body starts after the header");
_Static_assert(FADT_OFF_IAPC_BOOT_ARCH + 2 + 1 == FADT_OFF_FLAGS, "FADT: boot arch, reserved");
_Static_assert(FADT_OFF_RESET_REG + 12 == FADT_OFF_RESET_VALUE, "FADT: RESET_REG is a GAS");
_Static_assert(FADT_OFF_RESET_VALUE + 1 + 2 == FADT_OFF_MINOR_VERSION, "FADT: ARM_BOOT_ARCH");
_Static_assert(FADT_OFF_MINOR_VERSION + 1 + 8 == FADT_OFF_X_DSDT, "FADT: X_FIRMWARE_CTRL");
/* X_DSDT, then 8 extended GAS blocks and the two sleep registers, then the vendor id. */
_Static_assert(FADT_OFF_X_DSDT + 8 + 8 * 12 == FADT_OFF_SLEEP_CONTROL_REG, "FADT: X_ blocks");
_Static_assert(FADT_OFF_SLEEP_CONTROL_REG + 12 == FADT_OFF_SLEEP_STATUS_REG, "FADT: sleep regs");
_Static_assert(FADT_OFF_SLEEP_STATUS_REG + 12 == FADT_OFF_HYPERVISOR_ID, "FADT: vendor id");
_Static_assert(FADT_OFF_HYPERVISOR_ID + 8 == ACPI_FADT_SIZE, "FADT: ACPI 6 length");
_Static_assert(MADT_OFF_ENTRIES == ACPI_HDR_SIZE + 8, "MADT: LAPIC address and flags");

#define ALIGN16(x) (((x) + 15) & ~(uint64_t)15)

/* Where each table sits relative to base; everything but the MADT has a fixed size. */
#define RSDT_OFF   ALIGN16((uint64_t)ACPI_RSDP_SIZE)
#define RSDT_SIZE  (ACPI_HDR_SIZE + 4 * NR_SDT_ENTRIES)
#define XSDT_OFF   ALIGN16(RSDT_OFF + RSDT_SIZE)
#define XSDT_SIZE  (ACPI_HDR_SIZE + 8 * NR_SDT_ENTRIES)
#define FADT_OFF   ALIGN16(XSDT_OFF + XSDT_SIZE)
#define MCFG_OFF   ALIGN16(FADT_OFF + ACPI_FADT_SIZE)
#define DSDT_OFF   ALIGN16(MCFG_OFF + ACPI_MCFG_SIZE)
#define DSDT_MAX   0x2000 /* room for the AML: the PCI host bridge and its _PRT */
#define MADT_OFF   ALIGN16(DSDT_OFF + DSDT_MAX)
#define MADT_FIXED (MADT_OFF_ENTRIES + ACPI_MADT_IOAPIC_SIZE + ACPI_MADT_NMI_SIZE)

static uint64_t madt_size(int nr_cpus)
{
	return MADT_FIXED + (uint64_t)(nr_cpus > 0 ? nr_cpus : 0) * ACPI_MADT_LAPIC_SIZE;
}

uint64_t acpi_tables_size(int nr_cpus)
{
	return MADT_OFF + madt_size(nr_cpus);
}

int acpi_max_cpus(uint64_t base, uint64_t limit)
{
	if (limit <= base || limit - base < MADT_OFF + MADT_FIXED)
		return 0;
	uint64_t n = (limit - base - MADT_OFF - MADT_FIXED) / ACPI_MADT_LAPIC_SIZE;
	return n > MAX_XAPIC_ID ? MAX_XAPIC_ID : (int)n;
}

static uint8_t checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

static void sdt_header(uint8_t *p, const char sig[4], uint32_t len, uint8_t rev)
{
	memcpy(p, sig, 4);
	put_le32(p + HDR_OFF_LENGTH, len);
	p[8] = rev;
	memcpy(p + 10, OEM_ID, 6);
	memcpy(p + 16, OEM_TABLE_ID, 8);
	put_le32(p + 24, OEM_REVISION);
	memcpy(p + 28, CREATOR_ID, 4);
	put_le32(p + 32, CREATOR_REVISION);
}

/* Last step for each table: the checksum covers everything, the body included. */
static void sdt_finish(uint8_t *p)
{
	p[HDR_OFF_CHECKSUM] = 0;
	p[HDR_OFF_CHECKSUM] = checksum(p, get_le32(p + HDR_OFF_LENGTH));
}

/* MCFG: one ECAM allocation, segment 0, bus 0 only. */
static void write_mcfg(uint8_t *p)
{
	sdt_header(p, "MCFG", ACPI_MCFG_SIZE, MCFG_REVISION);
	uint8_t *e = p + MCFG_OFF_ENTRIES;
	put_le64(e, PCI_ECAM_BASE);
	put_le16(e + 8, 0); /* PCI segment group */
	e[10] = 0;	    /* start bus */
	e[11] = 0;	    /* end bus */
	sdt_finish(p);
}

/* DSDT: header, then AML. Returns 0, or -1 if the AML does not fit. */
static int write_dsdt(uint8_t *p, const struct dsdt_config *devices)
{
	struct aml a;
	aml_init(&a, p + ACPI_HDR_SIZE, DSDT_MAX - ACPI_HDR_SIZE);
	dsdt_build(&a, devices);
	if (a.error)
		return -1;
	sdt_header(p, "DSDT", (uint32_t)(ACPI_HDR_SIZE + a.len), DSDT_REVISION);
	sdt_finish(p);
	return 0;
}

/* A Generic Address Structure for one byte-wide I/O port. */
static void gas_io_byte(uint8_t *gas, uint16_t port)
{
	gas[0] = GAS_SPACE_SYSTEM_IO;
	gas[1] = 8; /* register bit width */
	gas[2] = 0; /* bit offset */
	gas[3] = GAS_ACCESS_BYTE;
	put_le64(gas + 4, port);
}

static void write_fadt(uint8_t *p, uint32_t dsdt)
{
	sdt_header(p, "FACP", ACPI_FADT_SIZE, FADT_REVISION);
	/* No FACS: optional on HW-reduced platforms. */
	put_le32(p + FADT_OFF_DSDT, dsdt);
	p[FADT_OFF_PM_PROFILE] = PM_PROFILE_ENTERPRISE_SERVER;
	/* Legacy devices: yes (COM1, CMOS RTC); no 8042 to probe (our i8042 only resets, and Linux
	 * skips its PS/2 probe when the bit is clear); no VGA. RTC-present and MSI stay allowed. */
	put_le16(p + FADT_OFF_IAPC_BOOT_ARCH, IAPC_LEGACY_DEVICES | IAPC_VGA_NOT_PRESENT);
	/* HW-reduced: no PM timer, SCI, GPE or PM1 blocks to emulate. */
	put_le32(p + FADT_OFF_FLAGS, FADT_FLAG_HW_REDUCED_ACPI | FADT_FLAG_RESET_REG_SUP);
	gas_io_byte(p + FADT_OFF_RESET_REG, I8042_COMMAND_PORT);
	p[FADT_OFF_RESET_VALUE] = I8042_RESET_VALUE;
	/* Power-off: HW-reduced ACPI's sleep registers with \_S5 in the DSDT (Linux installs its
	 * ACPI power-off only when both registers and \_S5 exist). */
	gas_io_byte(p + FADT_OFF_SLEEP_CONTROL_REG, ACPI_SLEEP_CONTROL_PORT);
	gas_io_byte(p + FADT_OFF_SLEEP_STATUS_REG, ACPI_SLEEP_STATUS_PORT);
	p[FADT_OFF_MINOR_VERSION] = FADT_MINOR;
	/* Both DSDT pointers agree, so OSPMs reading either (and Linux's cross-check) are happy. */
	put_le64(p + FADT_OFF_X_DSDT, dsdt);
	memcpy(p + FADT_OFF_HYPERVISOR_ID, HYPERVISOR_ID, 8);
	sdt_finish(p);
}

/* No Interrupt Source Overrides: KVM's in-kernel PIT raises GSI 0 and its default routing sends
 * GSI n to IOAPIC pin n, which is exactly ACPI's identity default. (An IRQ0->GSI2 override, as
 * on real chipsets, would be wrong here; HW-reduced ACPI has no SCI needing one either.) */
static void write_madt(uint8_t *p, int nr_cpus)
{
	uint32_t len = (uint32_t)madt_size(nr_cpus);
	sdt_header(p, "APIC", len, MADT_REVISION);
	put_le32(p + MADT_OFF_LAPIC_ADDR, (uint32_t)LAPIC_ADDR);
	put_le32(p + MADT_OFF_FLAGS, MADT_PCAT_COMPAT); /* there is a PIC to mask */
	uint8_t *e = p + MADT_OFF_ENTRIES;
	for (int i = 0; i < nr_cpus; i++) {
		e[0] = MADT_TYPE_LAPIC;
		e[1] = ACPI_MADT_LAPIC_SIZE;
		e[2] = (uint8_t)i; /* ACPI processor UID */
		e[3] = (uint8_t)i; /* APIC id: vCPU index, as KVM assigns */
		put_le32(e + 4, MADT_LAPIC_ENABLED);
		e += ACPI_MADT_LAPIC_SIZE;
	}
	e[0] = MADT_TYPE_IOAPIC;
	e[1] = ACPI_MADT_IOAPIC_SIZE;
	e[2] = (uint8_t)nr_cpus; /* IOAPIC id, as in the MP table */
	put_le32(e + 4, (uint32_t)IOAPIC_ADDR);
	put_le32(e + 8, 0); /* GSI base */
	e += ACPI_MADT_IOAPIC_SIZE;
	e[0] = MADT_TYPE_LAPIC_NMI;
	e[1] = ACPI_MADT_NMI_SIZE;
	e[2] = MADT_NMI_ALL_PROCESSORS;
	put_le16(e + 3, MADT_NMI_CONFORMING);
	e[5] = MADT_NMI_LINT1;
	sdt_finish(p);
}

int acpi_write(struct guest_mem *mem, uint64_t base, uint64_t limit, int nr_cpus,
	       const struct dsdt_config *devices, char *err, size_t errlen)
{
	int max = acpi_max_cpus(base, limit);
	if (nr_cpus < 1 || nr_cpus > max) {
		snprintf(err, errlen, "ACPI tables support 1..%d CPUs, asked for %d", max, nr_cpus);
		return -1;
	}
	/* OSPMs scan for the RSDP on 16-byte boundaries; RSDT and FADT hold 32-bit pointers. */
	uint64_t size = acpi_tables_size(nr_cpus);
	uint8_t *t = guest_mem_ptr(mem, base, size);
	if (base % 16 || base > UINT32_MAX || size > UINT32_MAX - base || !t) {
		snprintf(err, errlen, "no guest RAM for the ACPI tables at 0x%" PRIx64, base);
		return -1;
	}
	memset(t, 0, size);
	const uint32_t fadt = (uint32_t)(base + FADT_OFF), madt = (uint32_t)(base + MADT_OFF);

	write_fadt(t + FADT_OFF, (uint32_t)(base + DSDT_OFF));
	if (write_dsdt(t + DSDT_OFF, devices)) {
		snprintf(err, errlen,
			 "the DSDT's AML does not fit in %u bytes (or a device is invalid)",
			 DSDT_MAX);
		return -1;
	}
	write_madt(t + MADT_OFF, nr_cpus);
	write_mcfg(t + MCFG_OFF);
	const uint32_t mcfg = (uint32_t)(base + MCFG_OFF);

	uint8_t *rsdt = t + RSDT_OFF;
	sdt_header(rsdt, "RSDT", RSDT_SIZE, RSDT_REVISION);
	put_le32(rsdt + ACPI_HDR_SIZE, fadt);
	put_le32(rsdt + ACPI_HDR_SIZE + 4, madt);
	put_le32(rsdt + ACPI_HDR_SIZE + 8, mcfg);
	sdt_finish(rsdt);
	uint8_t *xsdt = t + XSDT_OFF;
	sdt_header(xsdt, "XSDT", XSDT_SIZE, XSDT_REVISION);
	put_le64(xsdt + ACPI_HDR_SIZE, fadt);
	put_le64(xsdt + ACPI_HDR_SIZE + 8, madt);
	put_le64(xsdt + ACPI_HDR_SIZE + 16, mcfg);
	sdt_finish(xsdt);

	memcpy(t, "RSD PTR ", 8);
	memcpy(t + 9, OEM_ID, 6);
	t[RSDP_OFF_REVISION] = RSDP_REVISION;
	put_le32(t + RSDP_OFF_RSDT, (uint32_t)(base + RSDT_OFF));
	put_le32(t + RSDP_OFF_LENGTH, ACPI_RSDP_SIZE);
	put_le64(t + RSDP_OFF_XSDT, base + XSDT_OFF);
	t[RSDP_OFF_CHECKSUM] = checksum(t, ACPI_RSDP_V1_SIZE);
	t[RSDP_OFF_EXT_CHECKSUM] = checksum(t, ACPI_RSDP_SIZE);
	return 0;
}
