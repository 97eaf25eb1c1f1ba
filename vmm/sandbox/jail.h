/* --jail DIR,uid=N,gid=N: once everything is open, chroot into an empty directory and drop to
 * an unprivileged uid/gid, for hosts that run many VMs. */
#ifndef MINIVMM_JAIL_H
#define MINIVMM_JAIL_H

#include <stddef.h>

#include "vmm/cli/config.h"

/* Parse "DIR,uid=N,gid=N" into out and check DIR: an absolute path to an existing, empty
 * directory that the target uid/gid neither owns nor can write. uid and gid are required and
 * must not be 0. Returns 0, or -1 with a one-line reason in err. */
int jail_parse(const char *arg, struct jail_config *out, char *err, size_t errlen);

/* chdir + chroot into the jail, drop supplementary groups, then gid and uid (real, effective
 * and saved), and check that root cannot be regained. Needs root (CAP_SYS_CHROOT, CAP_SETUID,
 * CAP_SETGID). Returns 0, or -1 with err set. */
int jail_enter(const struct jail_config *jail, char *err, size_t errlen);

#endif
