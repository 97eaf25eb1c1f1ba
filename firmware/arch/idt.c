/*
 * The IDT: exception gates for vectors 0-31; irq.c adds the interrupt vectors it uses.
 * Before the PVM opt-in (emulated) only the #GP gate is set; the others follow natively.
 */
#include "probe.h"
#include "traps.h"

struct idt_gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attr;
	uint16_t offset_mid;
	uint32_t offset_hi;
	uint32_t reserved;
} __attribute__((packed));

#define GATE_INTR 0x8e /* present, DPL 0, 64-bit interrupt gate */
#define NR_TRAPS  32

extern const char trap_stubs[]; /* traps.S: stub N at trap_stubs + 16 * N */

#define VEC_GP 13

/* In .data, not .bss: idt_init_early() runs before start.S zeroes .bss. */
static struct idt_gate idt[256] __attribute__((section(".data"), aligned(16)));

static void set_gate(int v)
{
	idt_set_gate((unsigned)v, trap_stubs + 16 * v);
}

void idt_set_gate(unsigned v, const void *handler)
{
	uint64_t addr = (uint64_t)handler;
	idt[v & 0xff] = (struct idt_gate){
	    .offset_lo = (uint16_t)addr,
	    .selector = SEL_CODE64, /* must exist in our GDT: PVM loads CS from it */
	    .type_attr = GATE_INTR,
	    .offset_mid = (uint16_t)(addr >> 16),
	    .offset_hi = (uint32_t)(addr >> 32),
	};
}

void idt_init_early(void)
{
	set_gate(VEC_GP);
	idt_load();
}

void idt_init(void)
{
	for (int v = 0; v < NR_TRAPS; v++)
		set_gate(v);
}

void idt_load(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) ptr = {sizeof(idt) - 1, (uint64_t)idt};
	__asm__ volatile("lidt %0" : : "m"(ptr));
}
