/* What the command line asked for: plain data, validated by cli.c. */
#ifndef MINIVMM_CONFIG_H
#define MINIVMM_CONFIG_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/boot.h"

#define MAX_VCPUS 64

enum console_kind { CONSOLE_STDIO, CONSOLE_NONE, CONSOLE_FILE };

struct vm_config {
	const char *kernel_path;
	const char *initrd_path;
	const char *cmdline;
	enum boot_protocol protocol;
	uint64_t memory_bytes;
	int nr_cpus;
	bool populate;
	bool quiet;
	enum console_kind console;
	const char *console_path;
	/* pinned[i] says whether vCPU i has a host CPU set in pin_sets[i]. */
	bool pinned[MAX_VCPUS];
	cpu_set_t pin_sets[MAX_VCPUS];
};

#endif
