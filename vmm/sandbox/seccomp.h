/* The system-call filters the VMM's threads run under once the VM is set up. */
#ifndef MINIVMM_SECCOMP_H
#define MINIVMM_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>

#include "seccomp_roles.h"

struct seccomp_policy {
	struct seccomp_needs needs;
	/* Runs on a refused call before the process exits (async-signal-safe; may be NULL). */
	void (*on_violation)(void);
};

/* Whether the filter is on unless --seccomp says otherwise: off in sanitizer builds, whose
 * runtimes make system calls (ptrace, fork-like clones) a VMM has no business making. */
bool seccomp_default_on(void);

/* Install role's filter on the calling thread (SECCOMP_PROCESS: on every thread). A refused
 * call prints its number on stderr, runs policy->on_violation and exits with status 1.
 * Returns 0, or -1 with err set. */
int seccomp_install(const struct seccomp_policy *policy, enum seccomp_role role, char *err,
		    size_t errlen);

/* The program built ahead (seccomp_aot.h) that seccomp_install loads for needs and role. */
struct seccomp_aot_program;
const struct seccomp_aot_program *seccomp_aot_program_for(const struct seccomp_needs *needs,
							  enum seccomp_role role);

/* seccomp_install with the program built ahead aot, or with the filter built now by
 * libseccomp when aot is NULL or its pid slots do not match (with a warning). */
int seccomp_install_from(const struct seccomp_aot_program *aot, const struct seccomp_policy *policy,
			 enum seccomp_role role, char *err, size_t errlen);

/* Once the process filter is on: the threads the lower layers start (blk workers, console
 * input, populate) install their role's filter from policy before their next input
 * (base/thread_sandbox.h). policy must outlive them. */
void seccomp_arm_thread_filters(const struct seccomp_policy *policy);

#endif
