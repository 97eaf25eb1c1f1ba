/* Intel MultiProcessor Specification 1.4 tables: how the guest finds its CPUs and IOAPIC. */
#ifndef MINIVMM_X86_MPTABLE_H
#define MINIVMM_X86_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

#define MP_FLOATING_SIZE    16
#define MP_CONFIG_HDR_SIZE  44
#define MP_PROC_ENTRY_SIZE  20
#define MP_SMALL_ENTRY_SIZE 8 /* bus, IOAPIC, I/O and local interrupt entries */
#define MP_NR_ISA_IRQS	    16
#define MP_NR_LOCAL_INTS    2

#define MP_ENTRY_PROCESSOR 0
#define MP_ENTRY_BUS	   1
#define MP_ENTRY_IOAPIC	   2
#define MP_ENTRY_IOINT	   3
#define MP_ENTRY_LOCALINT  4

#define MP_INT_INT    0
#define MP_INT_NMI    1
#define MP_INT_EXTINT 3

/* Bytes the floating pointer plus configuration table take for nr_cpus processors. */
uint64_t mptable_size(int nr_cpus);

/* Most CPUs whose tables fit in [base, limit). */
int mptable_max_cpus(uint64_t base, uint64_t limit);

/* Write the floating pointer at base and the configuration table right after it; everything
 * must lie in [base, limit). The IOAPIC gets id nr_cpus. Returns 0 or -1 with err. */
int mptable_write(struct guest_mem *mem, uint64_t base, uint64_t limit, int nr_cpus, char *err,
		  size_t errlen);

#endif
