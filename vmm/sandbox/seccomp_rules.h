/* The seccomp policy itself (seccomp_rules.c), as libseccomp filters: what vmm/sandbox/seccomp.c
 * falls back on at run time and what tools/seccomp_gen.c compiles ahead of time. */
#ifndef MINIVMM_SECCOMP_RULES_H
#define MINIVMM_SECCOMP_RULES_H

#include <linux/filter.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

#include "seccomp_roles.h"

/* role's filter for needs, with tgkill allowed for pid only (SECCOMP_PROCESS: with thread
 * synchronisation set). Returns NULL with err set. */
scmp_filter_ctx seccomp_rules_filter(const struct seccomp_needs *needs, enum seccomp_role role,
				     uint32_t pid, char *err, size_t errlen);

/* The same filter as the BPF program libseccomp would load: *insns (malloc'd, *len
 * instructions). Returns 0, or -1 with err set. */
int seccomp_rules_export(const struct seccomp_needs *needs, enum seccomp_role role, uint32_t pid,
			 struct sock_filter **insns, size_t *len, char *err, size_t errlen);

#endif
