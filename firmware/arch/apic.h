/* The local APIC (xAPIC MMIO at 0xfee00000): enable, EOI, and a periodic timer. */
#ifndef APIC_H
#define APIC_H

#include <stdint.h>

#define LAPIC_DEFAULT_BASE 0xfee00000ull
#define APIC_SPURIOUS_VEC  0xff

/* Software-enable this CPU's LAPIC (SVR, spurious vector 0xff), TPR 0, LVTs masked. */
void lapic_enable(void);
void lapic_eoi(void);
/* Periodic timer on `vector` every ~ms milliseconds (assumes KVM's 1 GHz APIC bus). */
void lapic_timer_periodic(uint8_t vector, unsigned ms);
void lapic_timer_stop(void);

#endif
