/* The user-mode backend: libslirp's TCP/IP stack on the I/O thread, no privileges needed.
 * Guest network 10.0.2.0/24, gateway and DNS 10.0.2.2, guest 10.0.2.15 (as QEMU's). */
#ifndef MINIVMM_NET_SLIRP_H
#define MINIVMM_NET_SLIRP_H

#include <stddef.h>

#include "devices/backends/net_backend.h"

struct event_loop;

/* Port forwards, each "[tcp|udp]:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT" (hostfwd=). */
struct slirp_forwards {
	const char *const *rules;
	int count;
};

/* Check the forwarding rules at command-line time. */
int slirp_validate(const struct slirp_forwards *fwd, char *err, size_t errlen);
struct net_backend *slirp_backend_open(const struct slirp_forwards *fwd, struct event_loop *loop,
				       const struct net_backend_client *client, char *err,
				       size_t errlen);
/* For tests: the fds in slirp's poll set as of the last refresh (at most max); returns how
 * many. */
int slirp_backend_poll_fds(struct net_backend *be, int *fds, int max);

#endif
