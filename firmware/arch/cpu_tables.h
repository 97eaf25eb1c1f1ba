/* Finding the CPUs: Intel MP table first, ACPI MADT second. */
#ifndef CPU_TABLES_H
#define CPU_TABLES_H

#include <stdint.h>

#include "probe.h"

struct cpu_list {
	unsigned count;
	uint8_t apic_id[MAX_CPUS];
	const char *source; /* "mptable", "madt" or NULL when neither was found */
};

/* rsdp: from the boot info, or 0 to scan the BIOS area. */
void cpu_tables_find(uint64_t rsdp, struct cpu_list *out);

#endif
