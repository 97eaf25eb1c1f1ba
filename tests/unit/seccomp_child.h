/* The seccomp unit tests' child: body() in a forked child under the process filter and then
 * role's (the real vmm/sandbox filters), stderr captured. */
#ifndef MINIVMM_TESTS_SECCOMP_CHILD_H
#define MINIVMM_TESTS_SECCOMP_CHILD_H

#include <stddef.h>

#include "vmm/sandbox/seccomp.h"

/* prepare (may be NULL) runs in the child before the filters: it opens or maps what the body
 * uses, as the VMM does before its own. Returns the child's wait status; what it wrote on
 * stderr is in out. Exit status 42: a filter could not be installed (its error in out). */
int seccomp_child_run(const struct seccomp_policy *policy, enum seccomp_role role,
		      void (*prepare)(void), void (*body)(void), char *out, size_t outlen);

#endif
