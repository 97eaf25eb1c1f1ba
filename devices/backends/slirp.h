/* The user-mode backend: libslirp's TCP/IP stack on the I/O thread, no privileges needed.
 * Guest network 10.0.2.0/24, gateway 10.0.2.2, DNS 10.0.2.3, guest 10.0.2.15 (as QEMU's). */
#ifndef MINIVMM_NET_SLIRP_H
#define MINIVMM_NET_SLIRP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/backends/net_backend.h"

struct event_loop;

/* Port forwards, each "[tcp|udp]:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT" (hostfwd=). */
struct slirp_forwards {
	const char *const *rules;
	int count;
};

/* What the guest may reach through the backend (slirp_gate.h says how it is enforced). */
struct slirp_policy {
	bool host_loopback;   /* host-loopback=on: the host's 127.0.0.1 as 10.0.2.2 */
	bool restrict_net;    /* restrict=on: nothing but the forwards' clients */
	uint32_t max_sockets; /* max-sockets=N: libslirp's host sockets at most (0: no cap) */
};

/* max-sockets's default: half the usual soft RLIMIT_NOFILE (1024), so that a guest at the cap
 * still leaves the VMM's own descriptors room. */
#define SLIRP_DEFAULT_MAX_SOCKETS 512

/* Check the forwarding rules at command-line time. */
int slirp_validate(const struct slirp_forwards *fwd, char *err, size_t errlen);
struct net_backend *slirp_backend_open(const struct slirp_forwards *fwd,
				       const struct slirp_policy *policy, struct event_loop *loop,
				       const struct net_backend_client *client, char *err,
				       size_t errlen);
/* For tests: the fds in slirp's poll set as of the last refresh (at most max); returns how
 * many. */
int slirp_backend_poll_fds(struct net_backend *be, int *fds, int max);
/* For tests: libslirp's host sockets counted against max_sockets. */
unsigned slirp_backend_sockets(struct net_backend *be);

#endif
