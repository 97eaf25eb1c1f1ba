/* What a guest's frame may make libslirp do on the host, looked at before libslirp gets it.
 *
 * - The host's loopback: libslirp sends whatever the guest addresses to 10.0.2.0/24 (but the
 *   DNS address) to the host's 127.0.0.1, so the guest reaches every service listening there.
 *   libslirp's own disable_host_loopback cannot be used: it also refuses the guest's replies to
 *   a UDP hostfwd client on the loopback (they go to 10.0.2.2 too). So with host_loopback off,
 *   a guest frame to such an address is held back unless it is DNS (10.0.2.3 port 53), a
 *   segment of a TCP connection that exists (only a SYN opens one: it is refused with a RST),
 *   or a UDP datagram to an address and port that sent the guest a datagram there first (a
 *   hostfwd client's, answered).
 * - restrict (QEMU's restrict=on): the same for every destination, DNS included: the guest
 *   reaches nothing but its forwards' clients (and libslirp's own DHCP and ping answers).
 * - max_sockets: libslirp opens a host socket per guest TCP connection, UDP source port and ICMP
 *   echo, and the VMM's fd table and poll set grow with them. The sockets are counted (libslirp
 *   reports each it opens, register_poll_fd, and each it closes); at the cap a frame that would
 *   open another is held back (a TCP SYN refused with a RST), and the flows that have sockets
 *   go on. Counted in the backend, not with RLIMIT_NOFILE: that limit is the process's, and a
 *   guest at it would leave the VMM itself no descriptor (control socket clients, snapshots).
 *
 * Only what libslirp could act on is looked at: IPv4 (the backend leaves libslirp's IPv6 off),
 * first fragments (a datagram whose first fragment is held back never completes; the first
 * fragment's bytes win in libslirp's reassembly). */
#ifndef MINIVMM_SLIRP_GATE_H
#define MINIVMM_SLIRP_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLIRP_GATE_MAX_FORWARDS 8
#define SLIRP_GATE_REPLIES	1024 /* remembered (peer, guest port) pairs, newest kept */

struct slirp_gate_config {
	bool host_loopback;   /* the guest may reach the host's 127.0.0.1 through 10.0.2.0/24 */
	bool restrict_net;    /* only the forwards' clients: nothing the guest opens */
	uint32_t max_sockets; /* libslirp's sockets at most (0: no cap) */
	/* The guest's 10.0.2.15 UDP ports that hostfwd rules forward to: their listening
	 * socket takes the guest's datagrams from there, no new one is opened. */
	uint16_t udp_forward_ports[SLIRP_GATE_MAX_FORWARDS];
	int nr_udp_forward_ports;
};

enum slirp_gate_verdict {
	SLIRP_GATE_PASS,
	SLIRP_GATE_DROP,   /* held back without an answer */
	SLIRP_GATE_REFUSE, /* a TCP SYN held back: answer it with slirp_gate_build_rst */
};

/* Why a frame was held back, for the log. */
enum slirp_gate_reason {
	SLIRP_GATE_NONE,
	SLIRP_GATE_LOOPBACK,
	SLIRP_GATE_RESTRICT,
	SLIRP_GATE_CAP
};

struct slirp_gate_fd {
	bool open;
	bool udp; /* opened for the guest's UDP source addr:port */
	uint32_t addr;
	uint16_t port;
};

struct slirp_gate_reply {
	uint32_t peer; /* 0: unused */
	uint16_t peer_port, guest_port;
};

struct slirp_gate {
	struct slirp_gate_config cfg;
	uint32_t open;		   /* sockets counted */
	struct slirp_gate_fd *fds; /* by fd number */
	int nfds;
	bool table_full_logged;
	/* The UDP source of the frame being handed to libslirp, for a socket it opens. */
	bool pending_udp;
	uint32_t pending_addr;
	uint16_t pending_port;
	enum slirp_gate_reason last_reason;
	struct slirp_gate_reply replies[SLIRP_GATE_REPLIES];
};

void slirp_gate_init(struct slirp_gate *g, const struct slirp_gate_config *cfg);
void slirp_gate_destroy(struct slirp_gate *g);
/* The guest's Ethernet frame: may libslirp have it? Sets last_reason when not. */
enum slirp_gate_verdict slirp_gate_check(struct slirp_gate *g, const uint8_t *frame, size_t len);
/* libslirp has taken the frame that slirp_gate_check passed. */
void slirp_gate_input_done(struct slirp_gate *g);
/* A frame libslirp sends the guest: a UDP datagram from a held-back address is remembered as
 * one the guest may answer. */
void slirp_gate_to_guest(struct slirp_gate *g, const uint8_t *frame, size_t len);
/* libslirp opened, or closes, socket fd (either may be told more than once). */
void slirp_gate_socket_opened(struct slirp_gate *g, int fd);
void slirp_gate_socket_closed(struct slirp_gate *g, int fd);
/* A TCP RST answering the SYN frame syn (from the guest), into out; returns its length, 0 when
 * out is too small or syn is not a TCP segment. */
size_t slirp_gate_build_rst(const uint8_t *syn, size_t len, uint8_t *out, size_t outlen);

#endif
