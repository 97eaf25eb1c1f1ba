/* Descriptors passed over a Unix socket with the bytes they go with (SCM_RIGHTS): the control
 * socket's snapshot files (vmm/api/ctl.c sends them, vmm/api/api.c receives them). */
#ifndef MINIVMM_FD_PASSING_H
#define MINIVMM_FD_PASSING_H

#include <stddef.h>
#include <sys/types.h>

#define FD_PASSING_MAX 8

/* One sendmsg() of len bytes of buf carrying the nfds (0 to FD_PASSING_MAX) descriptors in fds
 * (MSG_NOSIGNAL). Returns what sendmsg returns. */
ssize_t send_with_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);

/* One recvmsg() into buf (flags as recv's). The descriptors that came with the bytes are put in
 * fds, close-on-exec, and counted in *nfds; more than max (or more than the kernel could pass)
 * are all closed and *nfds is -1. Returns what recvmsg returns (*nfds 0 on error). */
ssize_t recv_with_fds(int sock, void *buf, size_t len, int flags, int *fds, int max, int *nfds);

#endif
