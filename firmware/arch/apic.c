/*
 * The local APIC, xAPIC mode. LINT0 is masked on enable: KVM resets the BSP's LVT0 to
 * ExtINT (virtual wire), and an un-initialised PIC would deliver IRQs on exception vectors.
 */
#include "apic.h"
#include "x86.h"

#define LAPIC_TPR	0x080
#define LAPIC_EOI	0x0b0
#define LAPIC_SVR	0x0f0
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360
#define LAPIC_LVT_ERROR 0x370
#define LAPIC_TMICT	0x380
#define LAPIC_TDCR	0x3e0

#define SVR_ENABLE     0x100
#define LVT_MASKED     0x10000
#define TIMER_PERIODIC 0x20000
#define TDCR_DIV16     0x3
#define BUS_KHZ	       1000000 /* KVM's (and QEMU's) APIC bus: 1 GHz */

static void wr(unsigned reg, uint32_t v)
{
	mmio_write32(LAPIC_DEFAULT_BASE + reg, v);
}

void lapic_enable(void)
{
	wr(LAPIC_SVR, SVR_ENABLE | APIC_SPURIOUS_VEC);
	wr(LAPIC_TPR, 0);
	wr(LAPIC_LVT_LINT0, LVT_MASKED);
	wr(LAPIC_LVT_LINT1, LVT_MASKED);
	wr(LAPIC_LVT_ERROR, LVT_MASKED);
	wr(LAPIC_LVT_TIMER, LVT_MASKED);
}

void lapic_eoi(void)
{
	wr(LAPIC_EOI, 0);
}

void lapic_timer_periodic(uint8_t vector, unsigned ms)
{
	uint64_t ticks = (uint64_t)BUS_KHZ / 16 * ms;
	wr(LAPIC_TDCR, TDCR_DIV16);
	wr(LAPIC_LVT_TIMER, TIMER_PERIODIC | vector);
	wr(LAPIC_TMICT, ticks > 0xffffffffu ? 0xffffffffu : (uint32_t)ticks);
}

void lapic_timer_stop(void)
{
	wr(LAPIC_TMICT, 0);
	wr(LAPIC_LVT_TIMER, LVT_MASKED);
}
