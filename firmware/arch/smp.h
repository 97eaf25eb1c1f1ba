/* Starting the application processors. */
#ifndef SMP_H
#define SMP_H

#include <stdint.h>

#include "cpu_tables.h"

struct smp_result {
	unsigned online;	   /* including the BSP */
	uint8_t apic_id[MAX_CPUS]; /* reported by each CPU itself; [0] = BSP */
};

/* INIT/SIPI/SIPI every listed CPU but the BSP, one at a time; waits bounded by timeout_cycles. */
void smp_boot(const struct cpu_list *cpus, uint64_t timeout_cycles, struct smp_result *res);
uint32_t lapic_id(void);
/* What APs started by the next smp_boot() run once online, before halting (NULL: nothing). */
void smp_set_ap_job(void (*job)(unsigned slot));

/* Entered from trampoline.S on each AP. */
void ap_main(void) __attribute__((noreturn));

#endif
