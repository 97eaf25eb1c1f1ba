#include "slirp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <slirp/libslirp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "slirp_gate.h"
#include "slirp_lib.h"
#include "base/clock.h"
#include "base/event_loop.h"
#include "base/log.h"

#define RXQ_FRAMES 256 /* frames slirp produced that the guest has not taken yet */
#define FRAME_MAX  (NET_HDR_LEN + 65536)
#define MAX_TIMERS 16

struct slirp_timer {
	bool used, armed;
	int64_t expire_ms;
	SlirpTimerId id;
	void *cb_opaque;
};

/* An fd of slirp's poll set that epoll watches, in a table indexed by fd number. A slot must be
 * freed (and the fd taken out of epoll) before slirp closes the fd: unregister_poll_fd does that,
 * or a new socket that gets the same number would be taken for the old one and never be watched.
 * A slot's memory lives as long as the backend, and owner stays set when the slot is freed: an
 * event already fetched for it in the same epoll_wait batch can still arrive, and only makes
 * slirp look at its sockets once more. */
struct watched_fd {
	struct event_source src;
	struct slirp_be *owner;
	int fd;
	uint32_t events;
	bool used;
	bool seen; /* still in slirp's poll set after the last refresh */
};

struct slirp_be {
	struct net_backend be;	     /* first: the backend is this struct */
	const struct slirp_lib *lib; /* libslirp, loaded at open */
	Slirp *slirp;
	/* Frames towards the guest: a ring of malloc'd frames with the header in front. */
	uint8_t *rxq[RXQ_FRAMES];
	size_t rxq_len[RXQ_FRAMES];
	unsigned rxq_head, rxq_count;
	bool rx_enabled;
	struct bottom_half rx_bh, refresh_bh;
	/* slirp's poll set, mirrored into epoll. Both grow with it: the guest decides how many
	 * sockets slirp holds (bounded by the process's fd limit), and a socket left out of the
	 * set would never be served (libslirp treats it as having no events). */
	struct pollfd *pfds;
	int npfds, pfds_cap;
	struct watched_fd **watched; /* by fd number; NULL where never watched */
	int nwatched;		     /* the table's length */
	bool grow_failed_logged;
	struct event_timer poll_timer; /* slirp's poll timeout and its own timers */
	struct slirp_timer timers[MAX_TIMERS];
	struct log_ratelimit guest_error_log; /* the guest decides how often libslirp complains */
	struct slirp_gate gate;		      /* what the guest's frames may open on the host */
	struct log_ratelimit gate_log;
	uint8_t tx_buf[FRAME_MAX];
};

static int64_t now_ns(void)
{
	return (int64_t)clock_monotonic_ns();
}

/* ---- frames from slirp towards the guest ---- */

/* A frame towards the guest, queued (or dropped when the queue is full). */
static void queue_to_guest(struct slirp_be *s, const void *buf, size_t len)
{
	if (len + NET_HDR_LEN > FRAME_MAX || s->rxq_count == RXQ_FRAMES)
		return;
	uint8_t *f = malloc(len + NET_HDR_LEN);
	if (!f)
		return;
	memset(f, 0, NET_HDR_LEN); /* no offloads from slirp */
	memcpy(f + NET_HDR_LEN, buf, len);
	unsigned slot = (s->rxq_head + s->rxq_count) % RXQ_FRAMES;
	s->rxq[slot] = f;
	s->rxq_len[slot] = len + NET_HDR_LEN;
	s->rxq_count++;
	if (s->rx_enabled)
		bottom_half_schedule(s->be.loop, &s->rx_bh);
}

static ssize_t send_packet(const void *buf, size_t len, void *opaque)
{
	struct slirp_be *s = opaque;
	slirp_gate_to_guest(&s->gate, buf, len);
	queue_to_guest(s, buf, len);
	return (ssize_t)len; /* a dropped frame too: TCP retransmits, as libslirp allows */
}

static void rx_bh_run(void *opaque)
{
	struct slirp_be *s = opaque;
	if (s->rx_enabled && s->rxq_count && s->be.client.rx_ready)
		s->be.client.rx_ready(s->be.client.opaque);
}

static ssize_t slirp_recv(struct net_backend *be, uint8_t *buf, size_t len)
{
	struct slirp_be *s = (struct slirp_be *)be;
	if (!s->rxq_count)
		return 0;
	unsigned slot = s->rxq_head;
	size_t n = s->rxq_len[slot] < len ? s->rxq_len[slot] : len;
	memcpy(buf, s->rxq[slot], n);
	free(s->rxq[slot]);
	s->rxq_head = (s->rxq_head + 1) % RXQ_FRAMES;
	s->rxq_count--;
	return (ssize_t)n;
}

static void slirp_set_rx_enabled(struct net_backend *be, bool enabled)
{
	struct slirp_be *s = (struct slirp_be *)be;
	s->rx_enabled = enabled;
	if (enabled && s->rxq_count)
		bottom_half_schedule(s->be.loop, &s->rx_bh);
}

/* ---- polling slirp's sockets from our epoll loop ---- */

static void log_grow_failure(struct slirp_be *s)
{
	if (!s->grow_failed_logged)
		log_error(
		    "user-mode network: out of memory for its poll set: sockets left unserved");
	s->grow_failed_logged = true;
}

static int add_poll(int fd, int events, void *opaque)
{
	struct slirp_be *s = opaque;
	if (s->npfds == s->pfds_cap) {
		int cap = s->pfds_cap ? (s->pfds_cap <= INT_MAX / 2 ? 2 * s->pfds_cap : 0) : 64;
		struct pollfd *p = cap ? realloc(s->pfds, (size_t)cap * sizeof(*p)) : NULL;
		if (!p) {
			log_grow_failure(s);
			return -1;
		}
		s->pfds = p;
		s->pfds_cap = cap;
	}
	short ev = 0;
	if (events & SLIRP_POLL_IN)
		ev |= POLLIN;
	if (events & SLIRP_POLL_OUT)
		ev |= POLLOUT;
	if (events & SLIRP_POLL_PRI)
		ev |= POLLPRI;
	s->pfds[s->npfds] = (struct pollfd){.fd = fd, .events = ev};
	return s->npfds++;
}

static int get_revents(int idx, void *opaque)
{
	struct slirp_be *s = opaque;
	if (idx < 0 || idx >= s->npfds)
		return 0;
	short r = s->pfds[idx].revents;
	int out = 0;
	if (r & POLLIN)
		out |= SLIRP_POLL_IN;
	if (r & POLLOUT)
		out |= SLIRP_POLL_OUT;
	if (r & POLLPRI)
		out |= SLIRP_POLL_PRI;
	if (r & POLLERR)
		out |= SLIRP_POLL_ERR;
	if (r & POLLHUP)
		out |= SLIRP_POLL_HUP;
	return out;
}

static void service(struct slirp_be *s);

static void fd_event(void *opaque, uint32_t events)
{
	(void)events;
	service(((struct watched_fd *)opaque)->owner);
}

static void arm_poll_timer(struct slirp_be *s, uint32_t timeout_ms)
{
	int64_t now_ms = now_ns() / 1000000;
	int64_t deadline = timeout_ms == UINT32_MAX ? INT64_MAX : now_ms + timeout_ms;
	for (int i = 0; i < MAX_TIMERS; i++)
		if (s->timers[i].used && s->timers[i].armed && s->timers[i].expire_ms < deadline)
			deadline = s->timers[i].expire_ms;
	if (deadline == INT64_MAX)
		event_timer_cancel(&s->poll_timer);
	else
		event_timer_arm(&s->poll_timer,
				(uint64_t)(deadline > now_ms ? deadline - now_ms : 0) * 1000000ULL);
}

/* fd's slot in the table, made (and the table grown) on first use; NULL when out of memory. */
static struct watched_fd *watch_slot(struct slirp_be *s, int fd)
{
	if (fd < 0)
		return NULL;
	if (fd >= s->nwatched) {
		int n = s->nwatched ? s->nwatched : 64;
		while (n <= fd && n <= INT_MAX / 2)
			n *= 2;
		if (n <= fd)
			return NULL;
		struct watched_fd **t = realloc(s->watched, (size_t)n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + s->nwatched, 0, (size_t)(n - s->nwatched) * sizeof(*t));
		s->watched = t;
		s->nwatched = n;
	}
	if (!s->watched[fd]) {
		struct watched_fd *w = calloc(1, sizeof(*w));
		if (!w)
			return NULL;
		w->owner = s;
		w->fd = fd;
		s->watched[fd] = w;
	}
	return s->watched[fd];
}

static void unwatch(struct slirp_be *s, struct watched_fd *w)
{
	event_loop_del_fd(s->be.loop, &w->src);
	w->used = false;
}

/* Rebuild slirp's poll set and make epoll watch exactly those fds. */
static void refresh(struct slirp_be *s)
{
	uint32_t timeout = UINT32_MAX;
	s->npfds = 0;
	s->lib->pollfds_fill(s->slirp, &timeout, add_poll, s);
	for (int fd = 0; fd < s->nwatched; fd++)
		if (s->watched[fd])
			s->watched[fd]->seen = false;
	for (int i = 0; i < s->npfds; i++) {
		uint32_t ev = ((s->pfds[i].events & POLLIN) ? EPOLLIN : 0) |
			      ((s->pfds[i].events & POLLOUT) ? EPOLLOUT : 0) |
			      ((s->pfds[i].events & POLLPRI) ? EPOLLPRI : 0);
		slirp_gate_socket_opened(&s->gate, s->pfds[i].fd);
		struct watched_fd *w = watch_slot(s, s->pfds[i].fd);
		if (!w) {
			log_grow_failure(s);
			continue;
		}
		if (w->used) {
			/* A failed change means the fd was closed (and reused) without
			 * unregister_poll_fd: watch what the number refers to now. */
			if (w->events != ev && event_loop_mod_fd(s->be.loop, &w->src, ev) &&
			    event_loop_add_fd(s->be.loop, &w->src, w->fd, ev, fd_event, w)) {
				w->used = false;
				continue;
			}
		} else {
			if (event_loop_add_fd(s->be.loop, &w->src, w->fd, ev, fd_event, w))
				continue;
			w->used = true;
		}
		w->events = ev;
		w->seen = true;
	}
	for (int fd = 0; fd < s->nwatched; fd++) {
		struct watched_fd *w = s->watched[fd];
		if (w && w->used && !w->seen)
			unwatch(s, w);
	}
	arm_poll_timer(s, timeout);
}

unsigned slirp_backend_sockets(struct net_backend *be)
{
	return ((struct slirp_be *)be)->gate.open;
}

int slirp_backend_poll_fds(struct net_backend *be, int *fds, int max)
{
	struct slirp_be *s = (struct slirp_be *)be;
	int n = 0;
	for (int i = 0; i < s->npfds && n < max; i++)
		fds[n++] = s->pfds[i].fd;
	return n;
}

static void run_timers(struct slirp_be *s)
{
	int64_t now_ms = now_ns() / 1000000;
	for (int i = 0; i < MAX_TIMERS; i++) {
		struct slirp_timer *t = &s->timers[i];
		if (t->used && t->armed && t->expire_ms <= now_ms) {
			t->armed = false;
			s->lib->handle_timer(s->slirp, t->id, t->cb_opaque);
		}
	}
}

/* Let slirp look at its sockets and timers, then rebuild the poll set. */
static void service(struct slirp_be *s)
{
	int n = poll(s->pfds, (nfds_t)s->npfds, 0);
	s->lib->pollfds_poll(s->slirp, n < 0, get_revents, s);
	run_timers(s);
	refresh(s);
}

static void poll_timer_run(void *opaque)
{
	service(opaque);
}

static void refresh_bh_run(void *opaque)
{
	service(opaque);
}

/* ---- libslirp callbacks ---- */

static void guest_error(const char *msg, void *opaque)
{
	struct slirp_be *s = opaque;
	log_warn_ratelimited(&s->guest_error_log, "user-mode network: guest error: %s", msg);
}

static int64_t clock_get_ns(void *opaque)
{
	(void)opaque;
	return now_ns();
}

static void *timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
	struct slirp_be *s = opaque;
	for (int i = 0; i < MAX_TIMERS; i++) {
		if (!s->timers[i].used) {
			s->timers[i] =
			    (struct slirp_timer){.used = true, .id = id, .cb_opaque = cb_opaque};
			return &s->timers[i];
		}
	}
	log_error("user-mode network: out of timers");
	return NULL;
}

static void timer_free(void *timer, void *opaque)
{
	(void)opaque;
	if (timer)
		((struct slirp_timer *)timer)->used = false;
}

static void timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
	struct slirp_be *s = opaque;
	struct slirp_timer *t = timer;
	if (!t)
		return;
	t->expire_ms = expire_ms;
	t->armed = true;
	bottom_half_schedule(s->be.loop, &s->refresh_bh);
}

/* libslirp opened fd (the poll set is rebuilt from slirp_pollfds_fill): counted against
 * max-sockets, as the UDP flow of the frame being input if there is one. */
static void register_poll_fd(int fd, void *opaque)
{
	struct slirp_be *s = opaque;
	slirp_gate_socket_opened(&s->gate, fd);
}

/* slirp is about to close fd (tcp_close, udp_detach, the accept-once listener, hostfwd removal):
 * stop watching it while it is still open, so that a socket reusing the number is added afresh
 * by the next refresh. */
static void unregister_poll_fd(int fd, void *opaque)
{
	struct slirp_be *s = opaque;
	slirp_gate_socket_closed(&s->gate, fd);
	if (fd >= 0 && fd < s->nwatched && s->watched[fd] && s->watched[fd]->used)
		unwatch(s, s->watched[fd]);
}

static void notify(void *opaque)
{
	struct slirp_be *s = opaque;
	bottom_half_schedule(s->be.loop, &s->refresh_bh);
}

static const SlirpCb callbacks = {
    .send_packet = send_packet,
    .guest_error = guest_error,
    .clock_get_ns = clock_get_ns,
    .timer_free = timer_free,
    .timer_mod = timer_mod,
    .register_poll_fd = register_poll_fd,
    .unregister_poll_fd = unregister_poll_fd,
    .notify = notify,
    .timer_new_opaque = timer_new_opaque,
};

/* ---- backend operations ---- */

static void log_gate(struct slirp_be *s)
{
	switch (s->gate.last_reason) {
	case SLIRP_GATE_LOOPBACK:
		log_warn_ratelimited(&s->gate_log,
				     "user-mode network: the guest's packet to the host's loopback "
				     "(10.0.2.0/24) held back: host-loopback=off");
		break;
	case SLIRP_GATE_RESTRICT:
		log_warn_ratelimited(
		    &s->gate_log, "user-mode network: the guest's packet held back: restrict=on");
		break;
	case SLIRP_GATE_CAP:
		log_warn_ratelimited(&s->gate_log,
				     "user-mode network: the guest has %u host sockets open "
				     "(max-sockets): new connections and flows held back",
				     s->gate.open);
		break;
	case SLIRP_GATE_NONE:
		break;
	}
}

static int slirp_send(struct net_backend *be, const struct iovec *iov, int iovcnt)
{
	struct slirp_be *s = (struct slirp_be *)be;
	size_t len = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > sizeof(s->tx_buf) - len)
			return -EMSGSIZE;
		memcpy(s->tx_buf + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	if (len <= NET_HDR_LEN)
		return -EINVAL;
	const uint8_t *frame = s->tx_buf + NET_HDR_LEN;
	size_t flen = len - NET_HDR_LEN;
	enum slirp_gate_verdict v = slirp_gate_check(&s->gate, frame, flen);
	if (v != SLIRP_GATE_PASS) {
		log_gate(s);
		uint8_t rst[64];
		size_t n = v == SLIRP_GATE_REFUSE
			       ? slirp_gate_build_rst(frame, flen, rst, sizeof(rst))
			       : 0;
		if (n)
			queue_to_guest(s, rst, n);
		return 0; /* sent, as far as the guest knows: held back like a firewall's drop */
	}
	s->lib->input(s->slirp, frame, (int)flen);
	slirp_gate_input_done(&s->gate);
	bottom_half_schedule(s->be.loop, &s->refresh_bh);
	return 0;
}

static void slirp_offloads_supported(struct net_backend *be, struct net_offloads *out)
{
	(void)be;
	memset(out, 0, sizeof(*out)); /* slirp wants whole, checksummed frames */
}

static int slirp_set_rx_offloads(struct net_backend *be, const struct net_offloads *o)
{
	(void)be;
	(void)o;
	return 0;
}

static void slirp_destroy(struct net_backend *be)
{
	struct slirp_be *s = (struct slirp_be *)be;
	/* Unwatched first: slirp_cleanup's unregister_poll_fd then finds none. */
	for (int fd = 0; fd < s->nwatched; fd++)
		if (s->watched[fd] && s->watched[fd]->used)
			unwatch(s, s->watched[fd]);
	event_timer_destroy(s->be.loop, &s->poll_timer);
	s->lib->cleanup(s->slirp);
	while (s->rxq_count) {
		free(s->rxq[s->rxq_head]);
		s->rxq_head = (s->rxq_head + 1) % RXQ_FRAMES;
		s->rxq_count--;
	}
	for (int fd = 0; fd < s->nwatched; fd++)
		free(s->watched[fd]);
	free(s->watched);
	free(s->pfds);
	slirp_gate_destroy(&s->gate);
	free(s);
}

static const struct net_backend_ops slirp_ops = {
    .name = "user",
    .send = slirp_send,
    .recv = slirp_recv,
    .offloads_supported = slirp_offloads_supported,
    .set_rx_offloads = slirp_set_rx_offloads,
    .set_rx_enabled = slirp_set_rx_enabled,
    .destroy = slirp_destroy,
};

/* "tcp::8080-:80", "udp:127.0.0.1:9000-:9000": protocol, optional host address, ports. */
static int parse_hostfwd(const char *rule, bool *udp, struct in_addr *host, int *host_port,
			 int *guest_port)
{
	char proto[8], addr[64] = "";
	int hp, gp, used = 0;
	if (sscanf(rule, "%7[a-z]:%63[0-9.]:%d-:%d%n", proto, addr, &hp, &gp, &used) != 4 &&
	    sscanf(rule, "%7[a-z]::%d-:%d%n", proto, &hp, &gp, &used) != 3)
		return -1;
	if ((size_t)used != strlen(rule) || hp < 1 || hp > 65535 || gp < 1 || gp > 65535)
		return -1;
	if (!strcmp(proto, "udp"))
		*udp = true;
	else if (!strcmp(proto, "tcp"))
		*udp = false;
	else
		return -1;
	host->s_addr = htonl(INADDR_ANY);
	if (addr[0] && inet_pton(AF_INET, addr, host) != 1)
		return -1;
	*host_port = hp;
	*guest_port = gp;
	return 0;
}

int slirp_validate(const struct slirp_forwards *fwd, char *err, size_t errlen)
{
	for (int i = 0; i < fwd->count; i++) {
		bool udp;
		struct in_addr a;
		int hp, gp;
		if (parse_hostfwd(fwd->rules[i], &udp, &a, &hp, &gp)) {
			snprintf(err, errlen,
				 "--net: invalid hostfwd '%s' (expected tcp|udp:[ADDR]:HOSTPORT-:"
				 "GUESTPORT)",
				 fwd->rules[i]);
			return -1;
		}
	}
	return 0;
}

/* ---- reading the host's DNS configuration before the sandbox ---- */

/* A stand-in libslirp instance that only exists while it reads the file: nothing it makes
 * needs polling or timers. */
static ssize_t dns_probe_send(const void *buf, size_t len, void *opaque)
{
	(void)buf, (void)opaque;
	return (ssize_t)len;
}
static void dns_probe_error(const char *msg, void *opaque)
{
	(void)msg, (void)opaque;
}
static int64_t dns_probe_clock(void *opaque)
{
	(void)opaque;
	return now_ns();
}
static void *dns_probe_timer_new(SlirpTimerId id, void *cb_opaque, void *opaque)
{
	(void)id, (void)cb_opaque, (void)opaque;
	return NULL;
}
static void dns_probe_timer_free(void *timer, void *opaque)
{
	(void)timer, (void)opaque;
}
static void dns_probe_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
	(void)timer, (void)expire_ms, (void)opaque;
}
static void dns_probe_fd(int fd, void *opaque)
{
	(void)fd, (void)opaque;
}
static void dns_probe_notify(void *opaque)
{
	(void)opaque;
}
static int dns_probe_revents(int idx, void *opaque)
{
	(void)idx, (void)opaque;
	return 0;
}

static const SlirpCb dns_probe_callbacks = {
    .send_packet = dns_probe_send,
    .guest_error = dns_probe_error,
    .clock_get_ns = dns_probe_clock,
    .timer_free = dns_probe_timer_free,
    .timer_mod = dns_probe_timer_mod,
    .register_poll_fd = dns_probe_fd,
    .unregister_poll_fd = dns_probe_fd,
    .notify = dns_probe_notify,
    .timer_new_opaque = dns_probe_timer_new,
};

/* libslirp reads /etc/resolv.conf when the guest first sends to its DNS address (10.0.2.3),
 * and keeps the host's nameserver, for every instance in the process, while that file's inode,
 * size and mtime stay the same (it only stats it again). The seccomp filters let no thread open
 * a file once the guest runs, so have libslirp read it now, through a stand-in instance whose
 * outbound sockets are bound to 127.0.0.1: an empty UDP datagram to 10.0.2.3 makes it look the
 * nameserver up and then send the datagram there, which the host refuses (EINVAL) for any
 * nameserver off this host, as a loopback source cannot leave it; one on the host's loopback
 * (a local resolver) gets an empty datagram, which it ignores. Nothing leaves the host. The
 * first lookup reads the file without taking its identity (stat); a second one, once
 * libslirp's clock (set by each poll) is past the first lookup's time, takes it and reads the
 * file again: without it the guest's first lookup would. A file that changes later cannot be
 * read again: libslirp then forwards DNS to the host's 127.0.0.1. */
static void read_dns_config_now(const struct slirp_lib *lib, const SlirpConfig *config)
{
	static const uint8_t macs[12] = {0x52, 0x55, 0x0a, 0x00, 0x02, 0x02,  /* to slirp */
					 0x52, 0x54, 0x00, 0x12, 0x34, 0x56}; /* from the guest */
	SlirpConfig sc = *config;
	struct sockaddr_in loopback = {.sin_family = AF_INET,
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	sc.outbound_addr = &loopback;
	Slirp *probe = lib->new_instance(&sc, &dns_probe_callbacks, NULL);
	if (!probe)
		return;
	uint8_t f[14 + 20 + 8] = {0};
	memcpy(f, macs, sizeof(macs));
	f[12] = 0x08; /* IPv4 */
	uint8_t *ip = f + 14, *udp = ip + 20;
	ip[0] = 0x45; /* version 4, 20-byte header */
	ip[3] = 20 + 8;
	ip[8] = 64; /* TTL */
	ip[9] = 17; /* UDP */
	memcpy(ip + 16, (const uint8_t[]){10, 0, 2, 3}, 4);
	udp[0] = 0xd1; /* source port 53518 */
	udp[1] = 0x0e;
	udp[3] = 53;
	udp[5] = 8; /* length, no checksum */
	uint32_t sum = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
	lib->input(probe, f, (int)sizeof(f));
	lib->pollfds_poll(probe, 1, dns_probe_revents, NULL); /* the clock only */
	lib->input(probe, f, (int)sizeof(f));
	lib->cleanup(probe);
}

struct net_backend *slirp_backend_open(const struct slirp_forwards *fwd,
				       const struct slirp_policy *policy, struct event_loop *loop,
				       const struct net_backend_client *client, char *err,
				       size_t errlen)
{
	const struct slirp_lib *lib = slirp_lib_get(err, errlen);
	if (!lib)
		return NULL;
	struct slirp_be *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->lib = lib;
	s->be.ops = &slirp_ops;
	s->be.client = *client;
	s->be.loop = loop;
	struct slirp_gate_config gc = {.host_loopback = policy->host_loopback,
				       .restrict_net = policy->restrict_net,
				       .max_sockets = policy->max_sockets};
	for (int i = 0; i < fwd->count && gc.nr_udp_forward_ports < SLIRP_GATE_MAX_FORWARDS; i++) {
		bool udp;
		struct in_addr host;
		int hp, gp;
		if (!parse_hostfwd(fwd->rules[i], &udp, &host, &hp, &gp) && udp)
			gc.udp_forward_ports[gc.nr_udp_forward_ports++] = (uint16_t)gp;
	}
	slirp_gate_init(&s->gate, &gc);
	bottom_half_init(&s->rx_bh, rx_bh_run, s);
	bottom_half_init(&s->refresh_bh, refresh_bh_run, s);
	if (event_timer_init(loop, &s->poll_timer, poll_timer_run, s)) {
		snprintf(err, errlen, "cannot create a timer");
		free(s);
		return NULL;
	}
	SlirpConfig sc = {.version = 4, .in_enabled = true, .if_mtu = 1500, .if_mru = 1500};
	inet_pton(AF_INET, "10.0.2.0", &sc.vnetwork);
	inet_pton(AF_INET, "255.255.255.0", &sc.vnetmask);
	inet_pton(AF_INET, "10.0.2.2", &sc.vhost);
	inet_pton(AF_INET, "10.0.2.15", &sc.vdhcp_start);
	inet_pton(AF_INET, "10.0.2.3", &sc.vnameserver);
	s->slirp = s->lib->new_instance(&sc, &callbacks, s);
	if (!s->slirp) {
		snprintf(err, errlen, "libslirp could not start");
		event_timer_destroy(loop, &s->poll_timer);
		slirp_gate_destroy(&s->gate);
		free(s);
		return NULL;
	}
	for (int i = 0; i < fwd->count; i++) {
		bool udp;
		struct in_addr host, guest;
		int hp, gp;
		inet_pton(AF_INET, "10.0.2.15", &guest);
		if (parse_hostfwd(fwd->rules[i], &udp, &host, &hp, &gp) ||
		    s->lib->add_hostfwd(s->slirp, udp, host, hp, guest, gp) < 0) {
			snprintf(err, errlen, "cannot forward %s (port in use?)", fwd->rules[i]);
			slirp_destroy(&s->be);
			return NULL;
		}
	}
	read_dns_config_now(s->lib, &sc);
	refresh(s);
	return &s->be;
}
