/* Strict command-line parsing. Every parser returns 0, or -1 with a one-line reason in err. */
#ifndef MINIVMM_CLI_H
#define MINIVMM_CLI_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* "512M", "2G", "4096K", "1T", or a bare number of MiB (as QEMU's -m). */
int parse_size(const char *s, uint64_t *out, char *err, size_t errlen);
/* Linux cpulist syntax: "2", "0-3", "1,4-5". Every CPU must be < max_cpus. */
int parse_cpu_list(const char *s, int max_cpus, cpu_set_t *set, char *err, size_t errlen);
/* "VCPU=CPULIST,VCPU=CPULIST", e.g. "0=2,1=3-4". Commas separate pins only before an '='. */
int parse_pin_list(const char *s, int nr_vcpus, int max_host_cpus, struct vm_config *cfg, char *err,
		   size_t errlen);
/* Format a cpu set as a cpulist ("2-4,7") into buf. */
void format_cpu_list(const cpu_set_t *set, char *buf, size_t len);

enum cli_result { CLI_RUN, CLI_EXIT_OK, CLI_ERROR };
/* Parse argv into cfg. CLI_EXIT_OK after --help/--version (already printed). */
enum cli_result cli_parse(int argc, char **argv, struct vm_config *cfg, char *err, size_t errlen);
void cli_usage(void);
/* Add a device as "--FLAG SPEC" would (a restore's devices). 0, or -1 with err. */
int cli_add_device(struct vm_config *cfg, const char *flag, const char *spec, char *err,
		   size_t errlen);
/* Free what cli_parse allocated (the devices' parsed options). */
void cli_free_config(struct vm_config *cfg);

#endif
