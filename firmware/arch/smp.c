/*
 * AP bring-up through the xAPIC. APs start one at a time: the BSP publishes a stack
 * and index, sends INIT/SIPI/SIPI, and waits until the AP reports its own APIC ID.
 * The real-mode and 32-bit part of each AP runs emulated on PVM (tens of ms).
 */
#include "lib.h"
#include "probe.h"
#include "pvm.h"
#include "smp.h"
#include "traps.h"
#include "x86.h"

#define LAPIC_BASE   0xfee00000ull
#define LAPIC_ID     0x20
#define LAPIC_SVR    0xf0
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
#define ICR_BUSY     (1u << 12)
#define ICR_INIT     0x00004500 /* INIT, level assert */
#define ICR_SIPI     0x00004600 /* start-up; low byte = vector (page number) */
#define SVR_ENABLE   0x100
#define SPURIOUS_VEC 0xff

extern const char tramp_start[], tramp_end[];

/*
 * Everything an AP needs is looked up by its own APIC ID, so an AP that comes up
 * late (after the BSP gave up on it) still lands on its own stack and slot.
 * ap_stack_by_apic is read by trampoline.S; 0 means "not ours: halt".
 */
uint64_t ap_stack_by_apic[256];
static uint8_t slot_by_apic[256]; /* 1..MAX_CPUS-1; slot 0 is the BSP */
static volatile uint32_t slot_reported_id[MAX_CPUS];
static volatile int slot_online[MAX_CPUS];
static uint8_t ap_stacks[MAX_CPUS][AP_STACK_SIZE] __attribute__((section(".noinit"), aligned(16)));
static void (*volatile ap_job)(unsigned slot);

void smp_set_ap_job(void (*job)(unsigned slot))
{
	ap_job = job;
}

uint32_t lapic_id(void)
{
	return mmio_read32(LAPIC_BASE + LAPIC_ID) >> 24;
}

void ap_main(void)
{
	uint32_t id = lapic_id();
	unsigned slot = slot_by_apic[id & 0xff];
	idt_load();
	if (pvm_active())
		pvm_opt_in(slot); /* emulated until here */
	slot_reported_id[slot] = id;
	barrier();
	slot_online[slot] = 1;
	void (*job)(unsigned) = ap_job;
	if (job)
		job(slot);
	for (;;)
		__asm__ volatile("cli; hlt");
}

/*
 * Elapsed TSC cycles, robust against the TSC jumping when a vCPU moves between host
 * CPUs (seen on nested hosts): each step counts at most `cap` cycles, so a jump can
 * neither end a wait early nor, running backwards, make it endless.
 */
struct tsc_wait {
	uint64_t prev, elapsed, cap;
};

static void tsc_wait_start(struct tsc_wait *w, uint64_t cap)
{
	w->prev = rdtsc();
	w->elapsed = 0;
	w->cap = cap;
}

static uint64_t tsc_wait_elapsed(struct tsc_wait *w)
{
	uint64_t now = rdtsc(), d = now - w->prev;
	w->prev = now;
	w->elapsed += d > w->cap ? w->cap : d;
	return w->elapsed;
}

static void delay_cycles(uint64_t cycles, uint64_t cap)
{
	struct tsc_wait w;
	tsc_wait_start(&w, cap);
	while (tsc_wait_elapsed(&w) < cycles)
		cpu_relax();
}

static void send_ipi(uint32_t apic_id, uint32_t icr)
{
	mmio_write32(LAPIC_BASE + LAPIC_ICR_HI, apic_id << 24);
	mmio_write32(LAPIC_BASE + LAPIC_ICR_LO, icr);
	for (int i = 0; i < 100000 && (mmio_read32(LAPIC_BASE + LAPIC_ICR_LO) & ICR_BUSY); i++)
		cpu_relax();
}

static bool wait_online(unsigned slot, uint64_t cycles, uint64_t cap)
{
	struct tsc_wait w;
	tsc_wait_start(&w, cap);
	while (!slot_online[slot]) {
		if (tsc_wait_elapsed(&w) > cycles)
			return false;
		cpu_relax();
	}
	return true;
}

void smp_boot(const struct cpu_list *cpus, uint64_t timeout_cycles, struct smp_result *res)
{
	uint32_t bsp = lapic_id();
	uint64_t ms = timeout_cycles / 2000 + 1; /* the timeout is "2 s" of TSC cycles */
	uint8_t slot_apic[MAX_CPUS];
	unsigned slots = 1;

	for (unsigned i = 0; i < cpus->count && slots < MAX_CPUS; i++) {
		uint8_t id = cpus->apic_id[i];
		if (id == bsp || slot_by_apic[id])
			continue;
		slot_by_apic[id] = (uint8_t)slots;
		ap_stack_by_apic[id] = (uint64_t)(ap_stacks[slots] + AP_STACK_SIZE);
		slot_apic[slots++] = id;
	}
	memcpy((void *)TRAMPOLINE_ADDR, tramp_start, (size_t)(tramp_end - tramp_start));
	mmio_write32(LAPIC_BASE + LAPIC_SVR, SVR_ENABLE | SPURIOUS_VEC);
	barrier();
	/* One at a time: on PVM each AP's start-up runs emulated and the host has few cores. */
	for (unsigned s = 1; s < slots; s++) {
		send_ipi(slot_apic[s], ICR_INIT);
		delay_cycles(10 * ms, ms);
		send_ipi(slot_apic[s], ICR_SIPI | (TRAMPOLINE_ADDR >> 12));
		/* A second SIPI is ignored by a CPU that already left wait-for-SIPI. */
		if (!wait_online(s, ms, ms))
			send_ipi(slot_apic[s], ICR_SIPI | (TRAMPOLINE_ADDR >> 12));
		wait_online(s, timeout_cycles, ms);
	}
	res->online = 1;
	res->apic_id[0] = (uint8_t)bsp;
	for (unsigned s = 1; s < slots; s++)
		if (slot_online[s])
			res->apic_id[res->online++] = (uint8_t)slot_reported_id[s];
}
