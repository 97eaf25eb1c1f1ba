#include "mptable.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/layout.h"
#include "base/byteorder.h"

#define MP_SPEC_REV	 4 /* 1.4 */
#define LAPIC_VERSION	 0x14
#define IOAPIC_VERSION	 0x11
#define CPU_FLAG_ENABLED 0x01
#define CPU_FLAG_BSP	 0x02
/* Family 6 signature and the features the MP spec says to report (FPU, APIC). */
#define CPU_SIGNATURE 0x600
#define CPU_FEATURES  ((1u << 0) | (1u << 9))
#define LINT_ALL_CPUS 0xff
/* xAPIC ids are 8 bits and 0xff is broadcast; the IOAPIC takes id nr_cpus. */
#define MP_MAX_APIC_ID 0xfe

static const uint64_t fixed_size =
    MP_FLOATING_SIZE + MP_CONFIG_HDR_SIZE + MP_SMALL_ENTRY_SIZE /* bus */ +
    MP_SMALL_ENTRY_SIZE /* IOAPIC */ + (MP_NR_ISA_IRQS + MP_NR_LOCAL_INTS) * MP_SMALL_ENTRY_SIZE;

uint64_t mptable_size(int nr_cpus)
{
	return fixed_size + (uint64_t)(nr_cpus > 0 ? nr_cpus : 0) * MP_PROC_ENTRY_SIZE;
}

int mptable_max_cpus(uint64_t base, uint64_t limit)
{
	if (limit <= base || limit - base < fixed_size)
		return 0;
	uint64_t n = (limit - base - fixed_size) / MP_PROC_ENTRY_SIZE;
	return n > MP_MAX_APIC_ID ? MP_MAX_APIC_ID : (int)n;
}

static uint8_t checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

static uint8_t *small_entry(uint8_t *p, uint8_t type)
{
	memset(p, 0, MP_SMALL_ENTRY_SIZE);
	p[0] = type;
	return p;
}

/* I/O or local interrupt assignment entry: flags 0 = polarity/trigger conform to the bus. */
static uint8_t *int_entry(uint8_t *p, uint8_t type, uint8_t int_type, uint8_t src_irq,
			  uint8_t dst_id, uint8_t dst_pin)
{
	small_entry(p, type);
	p[1] = int_type;
	p[4] = 0; /* source bus: ISA */
	p[5] = src_irq;
	p[6] = dst_id;
	p[7] = dst_pin;
	return p + MP_SMALL_ENTRY_SIZE;
}

int mptable_write(struct guest_mem *mem, uint64_t base, uint64_t limit, int nr_cpus, char *err,
		  size_t errlen)
{
	int max = mptable_max_cpus(base, limit);
	if (nr_cpus < 1 || nr_cpus > max) {
		snprintf(err, errlen, "MP table supports 1..%d CPUs, asked for %d", max, nr_cpus);
		return -1;
	}
	uint64_t size = mptable_size(nr_cpus);
	uint8_t *fp = guest_mem_ptr(mem, base, size);
	/* The table carries 32-bit physical pointers. */
	if (!fp || base + size > UINT32_MAX) {
		snprintf(err, errlen, "no guest RAM for the MP table at 0x%" PRIx64, base);
		return -1;
	}
	memset(fp, 0, size);
	uint64_t cfg_addr = base + MP_FLOATING_SIZE;
	uint8_t *cfg = fp + MP_FLOATING_SIZE;
	uint8_t ioapic_id = (uint8_t)nr_cpus;

	uint8_t *p = cfg + MP_CONFIG_HDR_SIZE;
	for (int i = 0; i < nr_cpus; i++) {
		p[0] = MP_ENTRY_PROCESSOR;
		p[1] = (uint8_t)i;
		p[2] = LAPIC_VERSION;
		p[3] = CPU_FLAG_ENABLED | (i == 0 ? CPU_FLAG_BSP : 0);
		put_le32(p + 4, CPU_SIGNATURE);
		put_le32(p + 8, CPU_FEATURES);
		p += MP_PROC_ENTRY_SIZE;
	}
	small_entry(p, MP_ENTRY_BUS);
	memcpy(p + 2, "ISA   ", 6);
	p += MP_SMALL_ENTRY_SIZE;
	small_entry(p, MP_ENTRY_IOAPIC);
	p[1] = ioapic_id;
	p[2] = IOAPIC_VERSION;
	p[3] = 1; /* enabled */
	put_le32(p + 4, (uint32_t)IOAPIC_ADDR);
	p += MP_SMALL_ENTRY_SIZE;
	/* KVM's default GSI routing is identity: ISA IRQ i arrives on IOAPIC pin i. */
	for (int irq = 0; irq < MP_NR_ISA_IRQS; irq++)
		p = int_entry(p, MP_ENTRY_IOINT, MP_INT_INT, (uint8_t)irq, ioapic_id, (uint8_t)irq);
	/* Virtual-wire mode: the PIC through LINT0, NMI through LINT1 on every CPU. */
	p = int_entry(p, MP_ENTRY_LOCALINT, MP_INT_EXTINT, 0, LINT_ALL_CPUS, 0);
	p = int_entry(p, MP_ENTRY_LOCALINT, MP_INT_NMI, 0, LINT_ALL_CPUS, 1);

	uint16_t cfg_len = (uint16_t)(p - cfg);
	memcpy(cfg, "PCMP", 4);
	put_le16(cfg + 4, cfg_len);
	cfg[6] = MP_SPEC_REV;
	memcpy(cfg + 8, "MINIVMM ", 8);
	memcpy(cfg + 16, "MINIVMM-VM  ", 12);
	put_le16(cfg + 34, (uint16_t)(nr_cpus + 2 + MP_NR_ISA_IRQS + MP_NR_LOCAL_INTS));
	put_le32(cfg + 36, (uint32_t)LAPIC_ADDR);
	cfg[7] = checksum(cfg, cfg_len);

	memcpy(fp, "_MP_", 4);
	put_le32(fp + 4, (uint32_t)cfg_addr);
	fp[8] = 1; /* length in 16-byte units */
	fp[9] = MP_SPEC_REV;
	/* feature bytes 0: a configuration table is present, virtual-wire mode. */
	fp[10] = checksum(fp, MP_FLOATING_SIZE);
	return 0;
}
