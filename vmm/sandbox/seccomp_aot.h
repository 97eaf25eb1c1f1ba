/* The seccomp programs compiled at build time (tools/seccomp_gen.c writes them, for every role
 * and every combination of needs, into $(BUILD)/gen/seccomp_programs.c): at start minivmm only
 * puts its pid into the tgkill rule instead of building the filter with libseccomp. */
#ifndef MINIVMM_SECCOMP_AOT_H
#define MINIVMM_SECCOMP_AOT_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "seccomp_roles.h"

/* What the programs compare tgkill's first argument with instead of the pid: above any pid
 * (pid_max is at most 2^22), below 2^31, and found nowhere else in them (the generator checks
 * that it is where a pid is, and only there). */
#define SECCOMP_AOT_PID 0x5ecc0bf1u

#define SECCOMP_AOT_ROLES (SECCOMP_POPULATE + 1)
#define SECCOMP_AOT_NEEDS 32 /* the five needs as bits: seccomp_aot_needs_index */
/* The longest program (the generator checks): a thread copies its own on its stack. */
#define SECCOMP_AOT_MAX_LEN 1024

struct seccomp_aot_program {
	const struct sock_filter *insns;
	size_t len;
	size_t pid_slots; /* how many instructions compare with SECCOMP_AOT_PID */
};

/* Generated: [role][seccomp_aot_needs_index(needs)]; not linked into tools/seccomp_gen. */
extern const struct seccomp_aot_program seccomp_aot_programs[SECCOMP_AOT_ROLES][SECCOMP_AOT_NEEDS];

unsigned seccomp_aot_needs_index(const struct seccomp_needs *needs);

/* Whether prog fits in cap instructions with the placeholder in exactly prog->pid_slots. */
bool seccomp_aot_fits(const struct seccomp_aot_program *prog, size_t cap);

/* Copy prog into out (cap instructions) with pid in place of every SECCOMP_AOT_PID. Returns
 * the length, or -1 if it does not fit or the placeholder is not in exactly prog->pid_slots
 * instructions (then the program cannot be trusted: build the filter at run time). */
long seccomp_aot_patch(const struct seccomp_aot_program *prog, uint32_t pid,
		       struct sock_filter *out, size_t cap);

#endif
