/*
 * Interrupts for the probe: device vectors IRQ_VEC_FIRST..IRQ_VEC_LAST through the LAPIC,
 * the IOAPIC and MSI-X. The probe runs with interrupts off and takes them only while it
 * waits in irq_wait(), so handlers never race with the code they interrupt.
 * Interrupt flag: on PVM the VIF page's if_ byte, on hardware KVM and TCG cli/sti.
 */
#ifndef IRQ_H
#define IRQ_H

#include <stdbool.h>
#include <stdint.h>

#define IRQ_VEC_FIRST 0x20
#define IRQ_VEC_LAST  0x4f
#define IRQ_VEC_TIMER 0x20 /* the watchdog tick (irq_init) */

typedef void (*irq_fn)(void *arg);

/* Once, on the BSP: IDT gates, LAPIC enabled, PIC masked, a 100 ms watchdog tick. */
void irq_init(void);
/* A free device vector with fn(arg) run (before EOI) when it fires; 0 when none is left. */
uint8_t irq_alloc(irq_fn fn, void *arg);
/* Interrupts taken on vector v so far (any vector, including unallocated ones). */
uint64_t irq_count(uint8_t v);

void irq_enable(void);
void irq_disable(void);
/* Enable interrupts and halt until one has been handled; returns with interrupts off. */
void irq_wait(void);

/* irq_entry.S */
extern const char irq_stubs[]; /* stub for vector v at irq_stubs + 16 * (v - IRQ_VEC_FIRST) */
extern const char irq_spurious[];
extern const char irq_wait_begin[], irq_wait_hlt[]; /* the enable-then-halt window */
void irq_wait_native(void);			    /* sti; hlt */
void irq_wait_pvm(volatile uint8_t *vif);	    /* if_ = 1; trap if pending; hlt */
void irq_dispatch(uint64_t vector, uint64_t *rip);

#endif
