/* --share: Debian's virtiofsd started on a host directory for the VM, and stopped with it on
 * every exit path. It runs under a small supervisor process that the VMM forks before anything
 * else is set up: the supervisor starts virtiofsd (in a mount namespace of its own where the
 * directory is a read-only bind mount, for readonly), passes its messages on (less the noise it
 * makes at every session's end), and when the VMM's end of a pipe closes (the VM ended, or the
 * VMM died: the kernel closes it either way) stops virtiofsd and exits. So no VMM thread ever
 * needs to signal or wait for another process. */
#ifndef MINIVMM_VIRTIOFSD_H
#define MINIVMM_VIRTIOFSD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct vhost_user;

struct virtiofsd {
	pid_t supervisor;
	int stop_fd; /* write end: closing it stops virtiofsd */
	int done_fd; /* read end: end of file once the supervisor and virtiofsd have exited */
};

/* Where virtiofsd is: path if given (--virtiofsd), else where Debian and other distributions
 * install it, else on PATH. NULL with a one-line reason in err. */
const char *virtiofsd_find(const char *path, char *buf, size_t len, char *err, size_t errlen);

/* Start binary on dir (an existing directory; readonly: the guest cannot change it) on a
 * listening socket made here and handed over (--fd), already connected to: the connection
 * (handshake not done; virtiofsd answers once it runs), or NULL with a one-line reason in err
 * (nothing left running). No socket file is left, and virtiofsd keeps no pid file. */
struct vhost_user *virtiofsd_start(struct virtiofsd *d, const char *binary, const char *dir,
				   bool readonly, char *err, size_t errlen);
/* After a failed handshake: what ended virtiofsd's supervisor before it could serve (waits
 * briefly for it), or "" (its own messages went to stderr). */
void virtiofsd_why(struct virtiofsd *d, char *out, size_t len);
/* Stop it (closing the VMM's connection first ends its session anyway) and wait up to
 * timeout_ms for it to be gone. Idempotent. */
void virtiofsd_stop(struct virtiofsd *d, int timeout_ms);

#endif
