/* TSC kHz: ask the hypervisor/CPU first; calibrate against PIT channel 2 as a last resort. */
#include "pvm.h"
#include "tsc.h"
#include "x86.h"

#define PIT_HZ	     1193182
#define PIT_CH0	     0x40
#define PIT_CH2	     0x42
#define PIT_CMD	     0x43
#define PORT_B	     0x61
#define CALIBRATE_MS 50

static uint32_t from_cpuid(void)
{
	uint32_t r[4];
	cpuid(0x40000000, 0, r);
	if (r[0] >= 0x40000010 && r[0] < 0x40010000) {
		cpuid(0x40000010, 0, r); /* VMware-style timing leaf; minivmm fills EAX */
		if (r[0])
			return r[0];
	}
	cpuid(0, 0, r);
	uint32_t max = r[0];
	if (max >= 0x15) {
		cpuid(0x15, 0, r); /* TSC = crystal (ECX Hz) * EBX / EAX */
		if (r[0] && r[1] && r[2])
			return (uint32_t)((uint64_t)r[2] * r[1] / r[0] / 1000);
	}
	if (max >= 0x16) {
		cpuid(0x16, 0, r); /* base frequency, MHz */
		if (r[0])
			return r[0] * 1000;
	}
	return 0;
}

/* A PIT measurement outside 100 MHz..10 GHz means the TSC or the PIT misbehaved (seen under
 * TCG on nested hosts, where the TSC can stall): better no figure than a wrong one. */
static uint32_t plausible(uint64_t khz)
{
	return khz >= 100000 && khz <= 10000000 ? (uint32_t)khz : 0;
}

/* One-shot count down on channel 2 (gate via port 0x61), timing the TSC until OUT2 rises. */
static uint32_t from_pit(void)
{
	uint32_t latch = PIT_HZ / (1000 / CALIBRATE_MS);
	outb(PORT_B, (inb(PORT_B) & ~0x02) | 0x01);
	outb(PIT_CMD, 0xb0); /* channel 2, lo/hi byte, mode 0, binary */
	outb(PIT_CH2, latch & 0xff);
	outb(PIT_CH2, latch >> 8);
	uint64_t t0 = rdtsc();
	/* Bounded: no PIT must not hang the probe (each inb is ~60 us on PVM). */
	for (long i = 0; i < 100000000; i++) {
		if (inb(PORT_B) & 0x20) {
			/* Port 0x61 reading 0xff (no speaker port) ends at once. */
			uint64_t cycles = rdtsc() - t0;
			return plausible(cycles / CALIBRATE_MS);
		}
	}
	return 0;
}

/*
 * No port 0x61 (e.g. QEMU microvm has no speaker port): count down channel 0 in mode 0
 * (one terminal-count edge, not a periodic IRQ 0) and read it back with latch commands.
 */
static uint16_t pit0_read(void)
{
	outb(PIT_CMD, 0x00); /* latch channel 0 */
	uint8_t lo = inb(PIT_CH0);
	return (uint16_t)(lo | inb(PIT_CH0) << 8);
}

static uint32_t from_pit0(void)
{
	const uint32_t want = PIT_HZ / (1000 / CALIBRATE_MS);
	outb(PIT_CMD, 0x30); /* channel 0, lo/hi byte, mode 0, binary */
	outb(PIT_CH0, 0xff);
	outb(PIT_CH0, 0xff);
	uint16_t c0 = pit0_read();
	uint64_t t0 = rdtsc();
	for (long i = 0; i < 10000000; i++) {
		uint16_t c = pit0_read();
		uint32_t ticks = (uint16_t)(c0 - c);
		if (c > c0) /* not counting, or reads are garbage */
			return 0;
		if (ticks >= want) {
			uint64_t cycles = rdtsc() - t0;
			uint64_t khz = cycles * PIT_HZ / ((uint64_t)ticks * 1000);
			return plausible(khz);
		}
	}
	return 0;
}

uint32_t tsc_khz(void)
{
	static uint32_t khz;
	if (khz)
		return khz;
	if (pvm_active())
		khz = (uint32_t)rdmsr(MSR_PVM_TSC_KHZ);
	if (!khz)
		khz = from_cpuid();
	if (!khz)
		khz = from_pit();
	if (!khz)
		khz = from_pit0();
	return khz;
}
