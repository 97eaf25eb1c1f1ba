/* test=boot: check what the VMM handed over and measure the CPU. */
#ifndef TEST_BOOT_H
#define TEST_BOOT_H

#include <stdint.h>

/* What the last test_boot() found, for a summary (test=demo). */
struct boot_summary {
	unsigned cpus_online;
	uint64_t ram_bytes;
	uint32_t tsc_khz;
	uint64_t miter_per_s; /* 0 if unknown */
};
extern struct boot_summary boot_summary;

/* Prints the result lines; returns NULL on success or the FAIL reason. */
const char *test_boot(void);

#endif
