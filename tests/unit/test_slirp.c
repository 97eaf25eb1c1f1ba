/* The user-mode backend on a real libslirp, with the test as the guest (frames handed to the
 * backend's send op) and as the host (a listener on 127.0.0.1, which slirp reaches as
 * 10.0.2.2). What is checked is that every fd slirp polls is in epoll as the file the number
 * refers to now: when slirp closes a socket and the next one it opens gets the same number
 * (a guest's RST and SYN in consecutive frames), the new socket must still be watched. */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/mount.h>
#include <sched.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "devices/backends/net_backend.h"
#include "devices/backends/slirp.h"
#include "devices/virtio/net.h"
#include "base/event_loop.h"
#include "vmm/sandbox/seccomp.h"

#define FRAME_MAX 2048
#define POLL_MAX  1024 /* fds of slirp's poll set the tests look at */
#define TH_SYN	  0x02
#define TH_RST	  0x04
#define TH_ACK	  0x10

static const uint8_t guest_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
static const uint8_t slirp_mac[6] = {0x52, 0x55, 0x0a, 0x00, 0x02, 0x02};

static struct event_loop loop;
static struct net_backend *be;
static int listener = -1;
static uint16_t host_port;

/* What slirp sent the guest. */
static bool arp_reply_seen;
static struct tcp_seen {
	uint16_t dport;
	uint8_t flags;
	uint32_t seq, ack;
} tcp_seen[64];
static int ntcp_seen;
static bool udp_seen[65536];	      /* a UDP datagram to this guest port came */
static uint32_t udp_from_addr[65536]; /* ... from this address and port (the last one) */
static uint16_t udp_from_port[65536];

/* ---- frames ---- */

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static void put_ip4(uint8_t *p, const char *addr)
{
	cr_assert_eq(inet_pton(AF_INET, addr, p), 1);
}

/* Hand one Ethernet frame (padded to 60 bytes) to the backend, virtio-net header in front. */
static void guest_send(uint8_t *frame, size_t len)
{
	uint8_t hdr[NET_HDR_LEN] = {0};
	if (len < 60) {
		memset(frame + len, 0, 60 - len);
		len = 60;
	}
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {frame, len}};
	cr_assert_eq(be->ops->send(be, iov, 2), 0);
}

static size_t eth_header(uint8_t *f, const uint8_t *dst, uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, type);
	return 14;
}

static void send_arp_request(void)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t f[64];
	uint8_t *a = f + eth_header(f, bcast, 0x0806);
	put16(a, 1);	      /* Ethernet */
	put16(a + 2, 0x0800); /* IPv4 */
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, 1); /* request */
	memcpy(a + 8, guest_mac, 6);
	put_ip4(a + 14, "10.0.2.15");
	memset(a + 18, 0, 6);
	put_ip4(a + 24, "10.0.2.2");
	guest_send(f, 14 + 28);
}

/* A TCP segment without data from 10.0.2.15:sport to 10.0.2.2:host_port. */
static void send_tcp(uint16_t sport, uint32_t seq, uint32_t ack, uint8_t flags)
{
	uint8_t f[64];
	uint8_t *ip = f + eth_header(f, slirp_mac, 0x0800);
	uint8_t *tcp = ip + 20;
	memset(ip, 0, 40);
	ip[0] = 0x45;
	put16(ip + 2, 40);
	put16(ip + 4, sport);  /* identification */
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	put_ip4(ip + 12, "10.0.2.15");
	put_ip4(ip + 16, "10.0.2.2");
	put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	put16(tcp, sport);
	put16(tcp + 2, host_port);
	put32(tcp + 4, seq);
	put32(tcp + 8, ack);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	put16(tcp + 14, 65535);
	uint8_t pseudo[12];
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	put16(pseudo + 10, 20);
	put16(tcp + 16, csum_fold(csum_add(csum_add(0, pseudo, 12), tcp, 20)));
	guest_send(f, 14 + 40);
}

/* ---- the device side: frames from slirp ---- */

static void note_frame(const uint8_t *buf, size_t len)
{
	if (len < NET_HDR_LEN + 14)
		return;
	const uint8_t *f = buf + NET_HDR_LEN;
	len -= NET_HDR_LEN;
	uint16_t type = get16(f + 12);
	if (type == 0x0806 && len >= 14 + 28 && get16(f + 14 + 6) == 2)
		arp_reply_seen = true;
	if (type == 0x0800 && len >= 14 + 28 && f[14 + 9] == IPPROTO_UDP) {
		const uint8_t *udp = f + 14 + (f[14] & 0xf) * 4;
		udp_seen[get16(udp + 2)] = true;
		udp_from_addr[get16(udp + 2)] = get32(f + 14 + 12);
		udp_from_port[get16(udp + 2)] = get16(udp);
	}
	if (type != 0x0800 || len < 14 + 20 || f[14 + 9] != IPPROTO_TCP)
		return;
	const uint8_t *tcp = f + 14 + (f[14] & 0xf) * 4;
	if (tcp + 20 > f + len || ntcp_seen == 64)
		return;
	tcp_seen[ntcp_seen++] = (struct tcp_seen){.dport = get16(tcp + 2),
						  .flags = tcp[13],
						  .seq = get32(tcp + 4),
						  .ack = get32(tcp + 8)};
}

static void rx_ready(void *opaque)
{
	(void)opaque;
	uint8_t buf[NET_HDR_LEN + FRAME_MAX];
	ssize_t n;
	while ((n = be->ops->recv(be, buf, sizeof(buf))) > 0)
		note_frame(buf, (size_t)n);
}

static const struct tcp_seen *syn_ack_to(uint16_t sport)
{
	for (int i = 0; i < ntcp_seen; i++)
		if (tcp_seen[i].dport == sport &&
		    (tcp_seen[i].flags & (TH_SYN | TH_ACK | TH_RST)) == (TH_SYN | TH_ACK))
			return &tcp_seen[i];
	return NULL;
}

/* ---- driving the loop ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run the loop until the guest has received a SYN-ACK for sport (generous deadline: this only
 * bounds a failure, a passing run returns as soon as it arrives). */
static const struct tcp_seen *run_until_syn_ack(uint16_t sport)
{
	double deadline = now_s() + 10;
	while (!syn_ack_to(sport) && now_s() < deadline)
		event_loop_run_once(&loop, 100);
	return syn_ack_to(sport);
}

/* One pass: the bottom half that slirp_input scheduled lets slirp refresh its poll set. */
static void run_refresh(void)
{
	cr_assert_geq(event_loop_run_once(&loop, 0), 0);
}

/* ---- the invariant ---- */

static int poll_fds(int *fds)
{
	return slirp_backend_poll_fds(be, fds, POLL_MAX);
}

static bool in_set(int fd, const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

static ino_t inode_of(int fd)
{
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0, "fstat(%d): %s", fd, strerror(errno));
	return st.st_ino;
}

/* Every fd slirp polls is in the event loop's epoll set, registered for the file the number
 * refers to now (epoll keys a registration by file and number: /proc/self/fdinfo of the
 * epoll fd lists "tfd: N ... ino:HEX" per registration). */
static void assert_poll_set_watched(const char *when)
{
	int fds[POLL_MAX], n = poll_fds(fds);
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", loop.epoll_fd);
	for (int i = 0; i < n; i++) {
		FILE *f = fopen(path, "r");
		cr_assert(f, "%s: %s", path, strerror(errno));
		bool found = false;
		ino_t want = inode_of(fds[i]);
		while (!found && fgets(line, sizeof(line), f)) {
			int tfd;
			const char *ino = strstr(line, "ino:");
			if (sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fds[i] && ino &&
			    (ino_t)strtoull(ino + 4, NULL, 16) == want)
				found = true;
		}
		fclose(f);
		cr_assert(found,
			  "%s: fd %d is in slirp's poll set but not in epoll as the file it is now",
			  when, fds[i]);
	}
}

/* ---- set-up ---- */

/* What setup() opens the backend with: the host's loopback reachable (the tests' host end
 * listens there), unless a suite's own set-up says otherwise. */
static struct slirp_policy policy = {.host_loopback = true,
				     .max_sockets = SLIRP_DEFAULT_MAX_SOCKETS};
static struct slirp_forwards forwards;

static void setup(void)
{
	cr_assert_eq(event_loop_init(&loop), 0);
	listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	cr_assert_geq(listener, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	cr_assert_eq(bind(listener, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(listener, 8), 0);
	cr_assert_eq(getsockname(listener, (struct sockaddr *)&a, &alen), 0);
	host_port = ntohs(a.sin_port);

	char err[256];
	struct net_backend_client client = {.rx_ready = rx_ready};
	be = slirp_backend_open(&forwards, &policy, &loop, &client, err, sizeof(err));
	cr_assert(be, "%s", err);
	be->ops->set_rx_enabled(be, true);
	arp_reply_seen = false;
	ntcp_seen = 0;
	memset(udp_seen, 0, sizeof(udp_seen));

	/* The guest announces itself (slirp answers to a MAC it has learned). */
	send_arp_request();
	for (int i = 0; i < 10 && !arp_reply_seen; i++)
		event_loop_run_once(&loop, 0);
	cr_assert(arp_reply_seen, "slirp answered the guest's ARP request");
}

static void teardown(void)
{
	if (be)
		be->ops->destroy(be);
	be = NULL;
	if (listener >= 0)
		close(listener);
	listener = -1;
	event_loop_destroy(&loop);
}

TestSuite(slirp, .init = setup, .fini = teardown);

/* Whether some registration in the event loop's epoll set is for the file with inode ino. */
static bool epoll_watches_inode(ino_t ino)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", loop.epoll_fd);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s: %s", path, strerror(errno));
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "ino:");
		if (!strncmp(line, "tfd:", 4) && p && (ino_t)strtoull(p + 4, NULL, 16) == ino)
			found = true;
	}
	fclose(f);
	return found;
}

/* The guest's two connections: source ports and initial sequence numbers. */
static const uint16_t sport1 = 40001, sport2 = 40002;
static const uint32_t isn1 = 1000, isn2 = 5000;

struct scenario {
	int n_fd;	  /* connection 1's socket, then connection 2's */
	ino_t old_ino;	  /* connection 1's socket file */
	int old_file;	  /* the test's own reference to it (hold_old), or -1 */
	int conn1, conn2; /* the host's ends */
};

/* Connection 1 is established (its socket, fd N, polled for input); the guest resets it and at
 * once opens connection 2, whose socket slirp opens before it refreshes its poll set: the
 * lowest free number, N again. hold_old: the test keeps connection 1's socket file open
 * through a dup, so that only an explicit EPOLL_CTL_DEL takes it out of epoll. */
static void reset_and_reconnect(struct scenario *sc, bool hold_old)
{
	int before[POLL_MAX], nbefore = poll_fds(before);
	assert_poll_set_watched("at start");

	send_tcp(sport1, isn1, 0, TH_SYN);
	const struct tcp_seen *sa = run_until_syn_ack(sport1);
	cr_assert(sa, "slirp connected connection 1 to the host and answered the guest's SYN");
	cr_assert_eq(sa->ack, isn1 + 1);
	uint32_t iss1 = sa->seq;
	send_tcp(sport1, isn1 + 1, iss1 + 1, TH_ACK);
	run_refresh();
	assert_poll_set_watched("connection 1 established");

	/* N: the one fd slirp polls now and did not before (the established socket). */
	int after[POLL_MAX], nafter = poll_fds(after);
	sc->n_fd = -1;
	for (int i = 0; i < nafter; i++) {
		if (!in_set(after[i], before, nbefore)) {
			cr_assert_eq(sc->n_fd, -1, "one new socket for connection 1");
			sc->n_fd = after[i];
		}
	}
	cr_assert_neq(sc->n_fd, -1, "slirp polls connection 1's socket for input");
	sc->conn1 = accept(listener, NULL, NULL);
	cr_assert_geq(sc->conn1, 0, "accept connection 1: %s", strerror(errno));
	sc->old_ino = inode_of(sc->n_fd);
	sc->old_file = hold_old ? dup(sc->n_fd) : -1;
	cr_assert(!hold_old || sc->old_file > sc->n_fd);

	/* RST and SYN in consecutive frames, no refresh in between. */
	send_tcp(sport1, isn1 + 1, iss1 + 1, TH_RST | TH_ACK);
	send_tcp(sport2, isn2, 0, TH_SYN);
	run_refresh();
	int now[POLL_MAX], nnow = poll_fds(now);
	cr_assert(in_set(sc->n_fd, now, nnow) && inode_of(sc->n_fd) != sc->old_ino,
		  "precondition: connection 2's socket got fd %d, the number connection 1's had",
		  sc->n_fd);
}

/* The observable: connection 2 completes (the host accepts it, the guest gets its SYN-ACK). */
static void complete_connection_2(struct scenario *sc)
{
	const struct tcp_seen *sa = run_until_syn_ack(sport2);
	cr_assert(sa, "slirp connected connection 2 to the host and answered the guest's SYN");
	cr_assert_eq(sa->ack, isn2 + 1);
	sc->conn2 = accept(listener, NULL, NULL);
	cr_assert_geq(sc->conn2, 0, "accept connection 2: %s", strerror(errno));
	assert_poll_set_watched("connection 2 answered");
	close(sc->conn1);
	close(sc->conn2);
	if (sc->old_file >= 0)
		close(sc->old_file);
}

/* The socket that took over the closed one's number is watched, and its connection completes
 * through that watch. */
Test(slirp, socket_reusing_a_closed_fd_number_is_watched)
{
	struct scenario sc;
	reset_and_reconnect(&sc, false);
	assert_poll_set_watched("after RST and SYN");
	complete_connection_2(&sc);
}

/* slirp tells us (unregister_poll_fd) before it closes a socket, and the backend takes it out
 * of epoll then, while the number still means that socket. Had it not, the registration would
 * linger as long as anything else holds the file (here the test's dup; the kernel drops it by
 * itself only with the file's last reference), and nothing would tell refresh() that the
 * number now means another socket. */
Test(slirp, closed_socket_leaves_epoll_before_it_is_closed)
{
	struct scenario sc;
	reset_and_reconnect(&sc, true);
	cr_assert(!epoll_watches_inode(sc.old_ino),
		  "connection 1's socket (closed by slirp) is still registered in epoll");
	assert_poll_set_watched("after RST and SYN");
	complete_connection_2(&sc);
}

/* A UDP datagram (no checksum) with data, or none, from 10.0.2.15:sport to dst:dport. */
static void send_udp_data(const char *dst, uint16_t sport, uint16_t dport, const char *data)
{
	uint8_t f[64];
	uint16_t n = (uint16_t)strlen(data);
	cr_assert_leq(n, 16);
	uint8_t *ip = f + eth_header(f, slirp_mac, 0x0800);
	uint8_t *udp = ip + 20;
	memset(ip, 0, 28);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(28 + n));
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	put_ip4(ip + 12, "10.0.2.15");
	put_ip4(ip + 16, dst);
	put16(ip + 10, csum_fold(csum_add(0, ip, 20)));
	put16(udp, sport);
	put16(udp + 2, dport);
	put16(udp + 4, (uint16_t)(8 + n));
	memcpy(udp + 8, data, n);
	guest_send(f, 14 + 28 + n);
}

static void send_udp(const char *dst, uint16_t sport, uint16_t dport)
{
	send_udp_data(dst, sport, dport, "");
}

/* In a child under the I/O thread's filter (every device configured): a TCP connection to the
 * host (socket, fcntl O_NONBLOCK, connect) and a datagram to the DNS address, for which
 * libslirp only stats /etc/resolv.conf (read at set-up). A refused call exits 1. */
static void traffic_under_the_filter(void)
{
	struct seccomp_policy p = {
	    .needs = {.user_net = true, .tap = true, .io_uring = true, .control_socket = true}};
	char err[160];
	if (seccomp_install(&p, SECCOMP_PROCESS, err, sizeof(err)) ||
	    seccomp_install(&p, SECCOMP_IO, err, sizeof(err)))
		_exit(42);
	send_tcp(sport1, isn1, 0, TH_SYN);
	if (!run_until_syn_ack(sport1))
		_exit(10);
	send_udp("10.0.2.3", 40100, 53);
	for (int i = 0; i < 10; i++)
		event_loop_run_once(&loop, 0);
	/* 200 UDP flows, a socket each: the poll set and the fd table grow (realloc) under the
	 * filter too. */
	for (int i = 0; i < 200; i++) {
		send_udp("10.0.2.2", (uint16_t)(42000 + i), 9);
		event_loop_run_once(&loop, 0);
	}
	int fds[POLL_MAX];
	if (poll_fds(fds) < 200)
		_exit(11);
	_exit(0);
}

Test(slirp, user_networking_works_under_the_io_threads_filter)
{
	if (!seccomp_default_on())
		cr_skip_test("sanitizer build: its runtime makes calls the filter refuses");
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		traffic_under_the_filter();
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

/* libslirp's DNS forwarding keeps working under the filters, which let it open no file: the
 * host's nameserver was read at set-up (slirp.c). In a private mount namespace whose
 * /etc/resolv.conf names 127.0.0.2, the test listens there: the guest's query must arrive,
 * more than a second after set-up too (when libslirp stats the file again). Without that
 * read it would go to 127.0.0.1 instead (libslirp's fallback when the file cannot be read). */
static int nameserver_fd = -1;

/* In a private mount namespace (and network namespace too with NEWNET in flags), an
 * /etc/resolv.conf naming NAMESERVER. 20: cannot write it; 77: no namespaces (not root). */
static int private_resolv_conf(int flags, const char *nameserver)
{
	char conf[64];
	snprintf(conf, sizeof(conf), "/tmp/minivmm-resolv-%d", (int)getpid());
	FILE *f = fopen(conf, "w");
	if (!f || fprintf(f, "nameserver %s\n", nameserver) < 0 || fclose(f))
		return 20;
	bool private = unshare(CLONE_NEWNS | flags) == 0 &&
		       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		       mount(conf, "/etc/resolv.conf", NULL, MS_BIND, NULL) == 0;
	unlink(conf);
	return private ? 0 : 77;
}

static int dns_child(void)
{
	int rc = private_resolv_conf(0, "127.0.0.2");
	if (rc)
		return rc;
	nameserver_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in ns = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, "127.0.0.2", &ns.sin_addr);
	if (nameserver_fd < 0 || bind(nameserver_fd, (struct sockaddr *)&ns, sizeof(ns)))
		return 77;
	setup();
	struct seccomp_policy p = {.needs = {.user_net = true}};
	char err[160];
	if (seccomp_install(&p, SECCOMP_PROCESS, err, sizeof(err)) ||
	    seccomp_install(&p, SECCOMP_IO, err, sizeof(err)))
		return 21;
	/* Past libslirp's one-second cache: the next lookup stats the file. */
	double until = now_s() + 1.2;
	while (now_s() < until)
		event_loop_run_once(&loop, 100);
	char buf[16];
	while (recv(nameserver_fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		; /* set-up's empty datagrams: a nameserver on the loopback gets them (slirp.c) */
	send_udp_data("10.0.2.3", 40200, 53, "q");
	for (int i = 0; i < 10; i++)
		event_loop_run_once(&loop, 0);
	struct pollfd pfd = {.fd = nameserver_fd, .events = POLLIN};
	if (poll(&pfd, 1, 5000) != 1 || recv(nameserver_fd, buf, sizeof(buf), 0) != 1 ||
	    buf[0] != 'q')
		return 10;
	return 0;
}

/* CHILD in a forked process: exit 0 passes, 77 skips the test with WHY_SKIPPED. */
static void in_child(int (*child)(void), const char *why_skipped)
{
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(child());
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		cr_skip_test("%s", why_skipped);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

Test(slirp_dns, guest_queries_reach_the_hosts_nameserver_under_the_filter)
{
	if (!seccomp_default_on())
		cr_skip_test("sanitizer build: its runtime makes calls the filter refuses");
	in_child(dns_child, "needs root for a private mount namespace and 127.0.0.2:53");
}

/* Reading the DNS configuration at set-up sends nothing off the host. In a network namespace
 * whose only way out is a veth link (192.0.2.2/24) and whose resolv.conf names 192.0.2.1 on
 * it, a packet socket sees every frame the link sends: a datagram on its way to the nameserver
 * would first need its ARP request, sent within the sendto() itself. */
static int off_host_child(void)
{
	int rc = private_resolv_conf(CLONE_NEWNET, "192.0.2.1");
	if (rc)
		return rc;
	if (system("ip link set lo up && ip link add mvdns0 type veth peer name mvdns1 && "
		   "ip link set mvdns1 up && "
		   "ip addr add 192.0.2.2/24 dev mvdns0 && ip link set mvdns0 up"))
		return 77;
	int pkt = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	struct sockaddr_ll ll = {.sll_family = AF_PACKET,
				 .sll_protocol = htons(ETH_P_ALL),
				 .sll_ifindex = (int)if_nametoindex("mvdns0")};
	if (pkt < 0 || ll.sll_ifindex == 0 || bind(pkt, (struct sockaddr *)&ll, sizeof(ll)))
		return 22;
	uint8_t frame[2048];
	while (recv(pkt, frame, sizeof(frame), MSG_DONTWAIT) >= 0)
		; /* what bringing the link up sent (IPv6 router solicitations and the like) */
	setup();
	/* IPv4 or ARP only: the kernel's own IPv6 neighbour discovery on the new link may go on. */
	ssize_t n;
	while ((n = recv(pkt, frame, sizeof(frame), MSG_DONTWAIT)) >= 14) {
		if (frame[12] == 0x08 && (frame[13] == 0x00 || frame[13] == 0x06)) {
			fprintf(stderr,
				"set-up sent a %zd-byte frame (ethertype 08%02x) off the host\n", n,
				frame[13]);
			return 10;
		}
	}
	return 0;
}

Test(slirp_dns, set_up_sends_nothing_off_the_host)
{
	in_child(off_host_child, "needs root for network namespaces and a veth link");
}

/* slirp takes whole, checksummed frames only: it says so, and a virtio-net device on it then
 * offers no CSUM or HOST_TSO4 (virtio_net/offloads_offered_only_where_the_backend_takes_them). */
Test(slirp, takes_no_offloaded_frames)
{
	struct net_offloads o;
	memset(&o, 0xff, sizeof(o));
	be->ops->offloads_supported(be, &o);
	cr_assert_not(o.csum || o.tso4 || o.tso6 || o.ecn || o.uso);
}

/* More sockets than the poll set once held (256): a guest talks UDP from 300 source ports to a
 * host service, one slirp socket each, and the host answers each one alone, which must wake the
 * loop and reach the guest: a socket left out of the poll set (the oldest ones: libslirp lists
 * the newest first), or out of epoll (the highest fd numbers), is never read. */
Test(slirp, every_socket_is_served_past_256)
{
	enum { FLOWS = 300, BASE_PORT = 41000 };
	int host = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(host, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	cr_assert_eq(bind(host, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(host, (struct sockaddr *)&a, &alen), 0);
	struct sockaddr_in peers[FLOWS];
	for (int i = 0; i < FLOWS; i++) {
		send_udp("10.0.2.2", (uint16_t)(BASE_PORT + i), ntohs(a.sin_port));
		run_refresh();
		/* slirp sends it on at once, from the flow's own socket */
		struct pollfd pfd = {.fd = host, .events = POLLIN};
		cr_assert_eq(poll(&pfd, 1, 5000), 1, "flow %d reached the host", i);
		socklen_t plen = sizeof(peers[i]);
		cr_assert_eq(recvfrom(host, NULL, 0, 0, (struct sockaddr *)&peers[i], &plen), 0);
	}
	int fds[POLL_MAX], polled = poll_fds(fds);
	cr_assert_geq(polled, FLOWS, "slirp polls every flow's socket: %d", polled);
	assert_poll_set_watched("300 flows");
	for (int i = 0; i < FLOWS; i++) {
		cr_assert_eq(
		    sendto(host, "r", 1, 0, (struct sockaddr *)&peers[i], sizeof(peers[i])), 1);
		double deadline = now_s() + 5;
		while (!udp_seen[BASE_PORT + i] && now_s() < deadline)
			event_loop_run_once(&loop, 100);
		cr_assert(udp_seen[BASE_PORT + i], "the answer to flow %d never reached the guest",
			  i);
	}
	close(host);
}

/* ---- what the guest may reach (slirp_gate.h) ---- */

static const struct tcp_seen *rst_to(uint16_t sport)
{
	for (int i = 0; i < ntcp_seen; i++)
		if (tcp_seen[i].dport == sport && (tcp_seen[i].flags & TH_RST))
			return &tcp_seen[i];
	return NULL;
}

/* A UDP socket on 127.0.0.1 (a host service, or a client); its port in *port. */
static int loopback_udp(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Nothing is waiting on fd (libslirp's sendto is done within the guest's send op, and the
 * loopback delivers at once, so a datagram let through is there already). */
static bool nothing_arrived(int fd)
{
	char buf[16];
	return recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == -1 && errno == EAGAIN;
}

static void run_a_little(void)
{
	for (int i = 0; i < 10; i++)
		event_loop_run_once(&loop, 0);
}

static void setup_loopback_off(void)
{
	policy = (struct slirp_policy){.max_sockets = SLIRP_DEFAULT_MAX_SOCKETS};
	setup();
}

/* host-loopback=off (the default): a service on the host's 127.0.0.1 is out of the guest's
 * reach through 10.0.2.2, any other 10.0.2.0/24 address, and the DNS address's other ports;
 * a connection is refused at once (a RST), and libslirp never opens a socket for it. */
Test(slirp_policy, host_loopback_off_keeps_the_hosts_loopback_out_of_reach,
     .init = setup_loopback_off, .fini = teardown)
{
	send_tcp(sport1, isn1, 0, TH_SYN);
	run_a_little();
	const struct tcp_seen *rst = rst_to(sport1);
	cr_assert(rst, "the guest's SYN to 10.0.2.2 is answered with a RST");
	cr_assert_eq(rst->ack, isn1 + 1);
	cr_assert(!syn_ack_to(sport1));
	cr_assert_eq(accept(listener, NULL, NULL), -1, "the host's listener got a connection");
	uint16_t port;
	int service = loopback_udp(&port);
	send_udp_data("10.0.2.2", 42000, port, "a");
	send_udp_data("10.0.2.77", 42001, port, "b");
	send_udp_data("10.0.2.255", 42002, port, "c");
	cr_assert(nothing_arrived(service), "a datagram reached the host's loopback");
	cr_assert_eq(slirp_backend_sockets(be), 0, "libslirp opened a socket");
	close(service);
}

static uint16_t fwd_port;
static char fwd_rule[64];
static const char *fwd_rules[1];

static void setup_udp_forward(bool restrict_net)
{
	int probe = loopback_udp(&fwd_port); /* a free port for the forward */
	close(probe);
	snprintf(fwd_rule, sizeof(fwd_rule), "udp:127.0.0.1:%u-:9000", fwd_port);
	fwd_rules[0] = fwd_rule;
	forwards = (struct slirp_forwards){.rules = fwd_rules, .count = 1};
	policy = (struct slirp_policy){.restrict_net = restrict_net,
				       .max_sockets = SLIRP_DEFAULT_MAX_SOCKETS};
	setup();
}

static void setup_udp_forward_loopback_off(void)
{
	setup_udp_forward(false);
}

static void setup_udp_forward_restricted(void)
{
	setup_udp_forward(true);
}

/* A client on the host's loopback reaches the guest through a UDP forward (it appears as
 * 10.0.2.2) and gets the guest's answers; the forward's socket takes the guest nowhere else on
 * the loopback. */
static void forward_answered_and_no_further(void)
{
	uint16_t cport, other_port;
	int client = loopback_udp(&cport), other = loopback_udp(&other_port);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(fwd_port)};
	cr_assert_eq(sendto(client, "q", 1, 0, (struct sockaddr *)&to, sizeof(to)), 1);
	double deadline = now_s() + 5;
	while (!udp_seen[9000] && now_s() < deadline)
		event_loop_run_once(&loop, 100);
	cr_assert(udp_seen[9000], "the forwarded datagram reached the guest");
	cr_assert_eq(udp_from_addr[9000], 0x0a000202, "from 10.0.2.2");
	cr_assert_eq(udp_from_port[9000], cport);
	send_udp_data("10.0.2.2", 9000, cport, "r");
	char buf[4];
	cr_assert_eq(recv(client, buf, sizeof(buf), MSG_DONTWAIT), 1, "the answer: %s",
		     strerror(errno));
	cr_assert_eq(buf[0], 'r');
	send_udp_data("10.0.2.2", 9000, other_port, "x");
	cr_assert(nothing_arrived(other), "the forward's socket reached another loopback port");
	close(client);
	close(other);
}

Test(slirp_policy, udp_forward_from_the_loopback_is_answered_with_host_loopback_off,
     .init = setup_udp_forward_loopback_off, .fini = teardown)
{
	forward_answered_and_no_further();
}

/* restrict=on: the forward works the same; the guest opens nothing, DNS included. */
Test(slirp_policy, restrict_leaves_only_the_forwards, .init = setup_udp_forward_restricted,
     .fini = teardown)
{
	forward_answered_and_no_further();
	unsigned before = slirp_backend_sockets(be);
	send_udp_data("10.0.2.3", 40300, 53, "q");
	send_udp_data("192.0.2.1", 40301, 9, "q");
	send_tcp(sport1, isn1, 0, TH_SYN);
	run_a_little();
	cr_assert(rst_to(sport1), "the guest's SYN is refused");
	cr_assert_eq(slirp_backend_sockets(be), before, "libslirp opened a socket");
}

#define CAP 50

static void setup_cap(void)
{
	policy = (struct slirp_policy){.host_loopback = true, .max_sockets = CAP};
	setup();
}

/* max-sockets: one TCP connection and 49 UDP flows fill a cap of 50; past it a new flow and a
 * new connection are refused, the earlier flows go on both ways, and a socket that closes (the
 * guest resets the connection) makes room for a new flow. */
Test(slirp_policy, sockets_past_the_cap_are_refused_and_earlier_flows_go_on, .init = setup_cap,
     .fini = teardown)
{
	enum { BASE_PORT = 43000 };
	cr_assert_eq(slirp_backend_sockets(be), 0);
	send_tcp(sport1, isn1, 0, TH_SYN);
	const struct tcp_seen *sa = run_until_syn_ack(sport1);
	cr_assert(sa);
	uint32_t iss1 = sa->seq;
	send_tcp(sport1, isn1 + 1, iss1 + 1, TH_ACK);
	run_refresh();
	int conn1 = accept(listener, NULL, NULL);
	cr_assert_geq(conn1, 0);
	uint16_t port;
	int host = loopback_udp(&port);
	struct sockaddr_in peers[CAP - 1];
	for (int i = 0; i < CAP - 1; i++) {
		send_udp("10.0.2.2", (uint16_t)(BASE_PORT + i), port);
		socklen_t plen = sizeof(peers[i]);
		cr_assert_eq(
		    recvfrom(host, NULL, 0, MSG_DONTWAIT, (struct sockaddr *)&peers[i], &plen), 0,
		    "flow %d reached the host", i);
		run_refresh();
	}
	cr_assert_eq(slirp_backend_sockets(be), CAP);

	send_udp("10.0.2.2", BASE_PORT + CAP - 1, port);
	cr_assert(nothing_arrived(host), "a flow past the cap reached the host");
	send_tcp(sport2, isn2, 0, TH_SYN);
	run_a_little();
	cr_assert(rst_to(sport2), "a connection past the cap is refused");
	cr_assert_eq(accept(listener, NULL, NULL), -1);
	cr_assert_eq(slirp_backend_sockets(be), CAP);

	for (int i = 0; i < CAP - 1; i++) {
		send_udp("10.0.2.2", (uint16_t)(BASE_PORT + i), port);
		cr_assert_eq(recv(host, NULL, 0, MSG_DONTWAIT), 0, "flow %d, again, at the cap", i);
		cr_assert_eq(
		    sendto(host, "r", 1, 0, (struct sockaddr *)&peers[i], sizeof(peers[i])), 1);
		double deadline = now_s() + 5;
		while (!udp_seen[BASE_PORT + i] && now_s() < deadline)
			event_loop_run_once(&loop, 100);
		cr_assert(udp_seen[BASE_PORT + i], "the answer to flow %d", i);
	}

	send_tcp(sport1, isn1 + 1, iss1 + 1, TH_RST | TH_ACK);
	run_refresh();
	cr_assert_eq(slirp_backend_sockets(be), CAP - 1, "the reset connection's socket is gone");
	send_udp("10.0.2.2", BASE_PORT + CAP - 1, port);
	cr_assert_eq(recv(host, NULL, 0, MSG_DONTWAIT), 0, "a new flow once there is room");
	close(conn1);
	close(host);
}
