/* The system-call filter every VMM thread runs under once the VM is set up. */
#ifndef MINIVMM_SECCOMP_H
#define MINIVMM_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the filter is on unless --seccomp says otherwise: off in sanitizer builds, whose
 * runtimes make system calls (ptrace, fork-like clones) a VMM has no business making. */
bool seccomp_default_on(void);

/* Install the allow-list on every thread of the process (and the ones it starts later).
 * A refused call prints its number on stderr, runs on_violation (async-signal-safe, may be
 * NULL) and exits with status 1. Returns 0, or -1 with err set. */
int seccomp_install(void (*on_violation)(void), char *err, size_t errlen);

#endif
