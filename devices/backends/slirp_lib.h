/* libslirp, loaded (dlopen) when the first user-mode backend is made rather than linked: with
 * the glib and pcre2 it pulls in it cost every start ~1.5 ms of exec on a PVM host, VMs without
 * --net user included. Loaded before any sandbox (devices are made before it), once. */
#ifndef MINIVMM_SLIRP_LIB_H
#define MINIVMM_SLIRP_LIB_H

#include <slirp/libslirp.h>
#include <stddef.h>

struct slirp_lib {
	Slirp *(*new_instance)(const SlirpConfig *cfg, const SlirpCb *callbacks, void *opaque);
	void (*cleanup)(Slirp *slirp);
	void (*input)(Slirp *slirp, const uint8_t *pkt, int pkt_len);
	void (*pollfds_fill)(Slirp *slirp, uint32_t *timeout, SlirpAddPollCb add_poll,
			     void *opaque);
	void (*pollfds_poll)(Slirp *slirp, int select_error, SlirpGetREventsCb get_revents,
			     void *opaque);
	void (*handle_timer)(Slirp *slirp, SlirpTimerId id, void *cb_opaque);
	int (*add_hostfwd)(Slirp *slirp, int is_udp, struct in_addr host_addr, int host_port,
			   struct in_addr guest_addr, int guest_port);
};

/* The library's entry points, loading it on the first call; NULL with err set (one line, what
 * is missing) when it cannot be loaded. Not thread-safe: called from device set-up. */
const struct slirp_lib *slirp_lib_get(char *err, size_t errlen);

#endif
