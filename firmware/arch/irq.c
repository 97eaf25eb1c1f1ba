/* Interrupt vectors, their handlers, and the interrupt flag on PVM and on ordinary x86. */
#include "apic.h"
#include "irq.h"
#include "pvm.h"
#include "traps.h"
#include "x86.h"

#define WATCHDOG_MS 100 /* bounds every irq_wait(): a lost interrupt costs a tick, not a hang */
#define PIC1_DATA   0x21
#define PIC2_DATA   0xa1

struct handler {
	irq_fn fn;
	void *arg;
};

static struct handler handlers[256];
static volatile uint64_t counts[256];
static uint8_t next_vec = IRQ_VEC_TIMER + 1;
static bool ready;

void irq_dispatch(uint64_t vector, uint64_t *rip)
{
	uint8_t v = (uint8_t)vector;
	/* Interrupted between enabling and the hlt: return past the hlt (see irq_entry.S). */
	if (*rip >= (uint64_t)irq_wait_begin && *rip <= (uint64_t)irq_wait_hlt)
		*rip = (uint64_t)irq_wait_hlt + 1;
	counts[v]++;
	if (handlers[v].fn)
		handlers[v].fn(handlers[v].arg);
	lapic_eoi();
}

void irq_init(void)
{
	if (ready)
		return;
	ready = true;
	for (unsigned v = IRQ_VEC_FIRST; v <= IRQ_VEC_LAST; v++)
		idt_set_gate(v, irq_stubs + 16 * (v - IRQ_VEC_FIRST));
	idt_set_gate(APIC_SPURIOUS_VEC, irq_spurious);
	outb(PIC1_DATA, 0xff); /* the 8259s stay masked: everything goes through the APICs */
	outb(PIC2_DATA, 0xff);
	lapic_enable();
	lapic_timer_periodic(IRQ_VEC_TIMER, WATCHDOG_MS);
}

uint8_t irq_alloc(irq_fn fn, void *arg)
{
	if (next_vec > IRQ_VEC_LAST)
		return 0;
	uint8_t v = next_vec++;
	handlers[v] = (struct handler){fn, arg};
	return v;
}

uint64_t irq_count(uint8_t v)
{
	return counts[v];
}

void irq_enable(void)
{
	if (pvm_active()) {
		volatile struct pvm_vif *vif = pvm_vif(0);
		vif->if_ = 1;
		barrier();
		if (vif->pending)
			outb(0x80, 0); /* trap, so the hypervisor delivers what is pending */
	} else {
		__asm__ volatile("sti" : : : "memory");
	}
}

void irq_disable(void)
{
	if (pvm_active())
		pvm_vif(0)->if_ = 0;
	else
		__asm__ volatile("cli" : : : "memory");
	barrier();
}

void irq_wait(void)
{
	if (pvm_active())
		irq_wait_pvm(&pvm_vif(0)->if_);
	else
		irq_wait_native();
	irq_disable();
}
