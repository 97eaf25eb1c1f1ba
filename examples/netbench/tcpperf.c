// tcpperf: the host side of TCP benchmarks against the probe (test=tcp_stream|tcp_sink|tcp_rr),
// a small TCP traffic tool on plain Linux sockets.
//
//   tcpperf send --dest IP [--port P] [--mib N] [--write N] [--flip OFFSET] [--wait-secs N]
//                [--idle-ms N]
//   tcpperf recv [--port P] [--bind IP] [--mib N] [--wait-secs N] [--idle-ms N]  (alias: sink)
//   tcpperf rr-server [--port P] [--bind IP] [--size S] [--flip OFFSET] [--wait-secs N]
//                     [--idle-ms N]
//   tcpperf rr --dest IP [--port P] [--size S] [--secs N] [--timeout-ms N]
//   tcpperf crr-server [--port P] [--bind IP] [--size S] [--wait-secs N] [--idle-ms N]
//   tcpperf crr --dest IP [--port P] [--size S] [--secs N] [--timeout-ms N]
//
// The stream: byte i is (i * 131 + (i >> 9)) mod 256, as the probe's tcp_stream sends and its
// tcp_sink checks (firmware/tests/test_net.h, net_tcp_pattern).
// send       connects, sends --mib MiB (default 64) of the stream, shuts its side down and
//            waits for the peer's close; --flip OFFSET sends byte OFFSET wrong (to test a
//            receiver's check). Rate over connect..peer close. --write N (default 1 MiB): the
//            application's write size (netperf's -m), N bytes per send() (a partial send goes
//            on with the rest of the same write; sends= counts the calls). TCP_NODELAY, as the
//            probe's TCP has no Nagle: a small write goes out at once while the windows allow.
//            segs= is what the kernel says it sent with data (TCP_INFO tcpi_data_segs_out; a
//            TSO/GSO segment counts as the segments it is cut into), -1 where it does not say.
// recv/sink  accepts one connection (waiting --wait-secs, default 30), receives until the peer
//            closes and checks every byte; bad= counts wrong bytes, first_bad= the first one's
//            offset. With --mib N the stream must be exactly N MiB. Rate over accept..close.
//            segs= the data segments the kernel received (tcpi_data_segs_in), -1 if unknown.
// rr-server  accepts one connection and echoes requests of --size bytes (each read whole,
//            then sent back) until the peer closes; TCP_NODELAY. --flip OFFSET echoes byte
//            OFFSET of all it sends wrong (to test a client's check).
// rr         connects and does request/response of --size bytes (default 64) for --secs
//            seconds (default 2): each request is the stream at the transaction's offset, so a
//            reply must echo this request to count (else bad=); latency percentiles in us.
// crr-server netperf TCP_CRR's server: accepts connections one after another; on each, reads
//            one request of --size bytes, echoes it, then waits for the client to close first
//            (an EOF: a clean close; a reset, or more data, is counted in resets=/errors=) and
//            closes. Ends --idle-ms after its last connection (waiting --wait-secs for the
//            first) or on SIGTERM: conns= accepted, trans= echoed; ok=1 when there was one and
//            every connection went that way.
// crr        the client: for --secs seconds, connect, one request/response of --size bytes
//            (checked as rr's), close (the client closes first, as netperf's does); latency from
//            connect to the whole echo, percentiles in us.
// --idle-ms  (default 10000) how long a connection may make no progress before it fails.
// --port 0   (recv, rr-server) any free port; --ready-file FILE is then written with the port
//            once listening (for scripts to wait on), as it is for a fixed port.
//
// Output: one line of key=value pairs on stdout, starting with "tcpperf: mode=...".
// Exit status: 0 on success, 2 on a usage error, 1 on an error or a failed check (ok=0).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <linux/tcp.h> // (not netinet/tcp.h: its struct tcp_info lacks the segment counts)
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOOL_NAME "tcpperf"
#define TOOL_USAGE                                                                                 \
	"usage: tcpperf send|recv|sink|rr-server|rr|crr-server|crr [--port P] [--dest IP] "        \
	"[--bind IP] "                                                                             \
	"[--mib N] [--write N] [--size S] [--secs N] [--flip OFFSET] [--wait-secs N] "             \
	"[--idle-ms N] "                                                                           \
	"[--timeout-ms N] [--ready-file FILE]"
#include "tool.h"

#define CHUNK	 (1 << 20)
#define MAX_SIZE (1 << 20)

struct opts {
	const char *mode, *dest, *bind, *ready_file;
	int port, size, write, idle_ms, timeout_ms, wait_secs;
	long mib;
	double secs;
	long long flip; // -1: none
};

static uint8_t pattern(uint64_t k)
{
	return (uint8_t)(k * 131 + (k >> 9));
}

static void fill(uint8_t *p, uint64_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(from + i);
}

// Waits until fd is ready for events or ms pass; false on a timeout or a signal's stop.
static bool wait_fd(int fd, short events, int ms)
{
	double end = now_s() + ms / 1e3;
	for (;;) {
		if (stop_flag)
			return false;
		double left = end - now_s();
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1e3) + 1);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			die("poll");
	}
}

static void no_delay(int fd)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		die("setsockopt TCP_NODELAY");
}

// Listens (backlog connections queued), writes the ready file; the listening socket.
static int listen_on(const struct opts *o, int backlog)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	if (o->bind && inet_pton(AF_INET, o->bind, &a.sin_addr) != 1)
		usage_error("bad --bind address", o->bind);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind");
	if (listen(ls, backlog) < 0)
		die("listen");
	socklen_t len = sizeof(a);
	if (getsockname(ls, (struct sockaddr *)&a, &len) < 0)
		die("getsockname");
	if (o->ready_file) {
		FILE *f = fopen(o->ready_file, "w");
		if (!f)
			die("ready file");
		fprintf(f, "%u\n", ntohs(a.sin_port));
		fclose(f);
	}
	return ls;
}

// Listens, writes the ready file, and returns the one connection accepted (or exits 1).
static int accept_one(const struct opts *o)
{
	int ls = listen_on(o, 1);
	if (!wait_fd(ls, POLLIN, o->wait_secs * 1000)) {
		fprintf(stderr, TOOL_NAME ": no connection in %d s\n", o->wait_secs);
		exit(1);
	}
	int fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(ls);
	return fd;
}

static int connect_to(const struct opts *o)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	if (!o->dest)
		usage_error("--dest is required for this mode", NULL);
	if (inet_pton(AF_INET, o->dest, &a.sin_addr) != 1)
		usage_error("bad --dest address", o->dest);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	return fd;
}

// Reads until EOF within idle_ms of each read; true on a clean EOF.
static bool drain_to_eof(int fd, const struct opts *o)
{
	static uint8_t buf[4096];
	for (;;) {
		if (!wait_fd(fd, POLLIN, o->idle_ms))
			return false;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			return true;
		if (n < 0 && errno != EINTR)
			return false;
	}
}

// The connection's MSS (what the kernel sends in a segment), or -1.
static int mss_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);
	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, &len) < 0)
		return -1;
	return v;
}

// The data segments the kernel sent (out) or received on fd, or -1 where it does not say.
static long long data_segs(int fd, bool out)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0 ||
	    len < offsetof(struct tcp_info, tcpi_data_segs_out) + sizeof(ti.tcpi_data_segs_out))
		return -1;
	return out ? ti.tcpi_data_segs_out : ti.tcpi_data_segs_in;
}

static void print_rate(unsigned long long bytes, double secs)
{
	printf(" bytes=%llu secs=%.3f mbps=%.2f", bytes, secs,
	       secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0);
}

static int run_send(const struct opts *o)
{
	static uint8_t buf[CHUNK];
	unsigned long long total = (unsigned long long)o->mib << 20, sent = 0, sends = 0;
	size_t wsize = (size_t)o->write;
	double t0 = now_s();
	int fd = connect_to(o), mss = mss_of(fd);
	no_delay(fd);
	const char *err = NULL;
	// the pattern a CHUNK at a time; each write of wsize bytes from it
	unsigned long long filled = 0, at = 0; // buf holds [at, filled)
	while (sent < total && !err) {
		size_t n = total - sent < wsize ? (size_t)(total - sent) : wsize;
		if (sent + n > filled) {
			at = sent;
			filled = at + (total - at < CHUNK ? total - at : CHUNK);
			fill(buf, at, (size_t)(filled - at));
			if (o->flip >= 0 && (unsigned long long)o->flip >= at &&
			    (unsigned long long)o->flip < filled)
				buf[o->flip - (long long)at] ^= 0x01;
		}
		uint8_t *p = buf + (sent - at);
		for (size_t off = 0; off < n && !err;) {
			if (!wait_fd(fd, POLLOUT, o->idle_ms)) {
				err = "no progress";
				break;
			}
			ssize_t k = send(fd, p + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (k < 0 && errno != EAGAIN && errno != EINTR)
				err = strerror(errno);
			else if (k > 0) {
				off += (size_t)k;
				sends++;
			}
		}
		if (!err)
			sent += n;
	}
	long long segs = data_segs(fd, true);
	if (!err && shutdown(fd, SHUT_WR) < 0)
		err = strerror(errno);
	if (!err && !drain_to_eof(fd, o))
		err = "the peer did not close";
	double secs = now_s() - t0;
	close(fd);
	printf("tcpperf: mode=send mss=%d", mss);
	print_rate(sent, secs);
	printf(" write=%zu sends=%llu segs=%lld ok=%d\n", wsize, sends, segs, !err);
	if (err)
		fprintf(stderr, TOOL_NAME ": send: %s\n", err);
	return err ? 1 : 0;
}

static int run_recv(const struct opts *o)
{
	static uint8_t buf[CHUNK];
	int fd = accept_one(o), mss = mss_of(fd);
	double t0 = now_s();
	unsigned long long bytes = 0, bad = 0, first_bad = 0;
	const char *err = NULL;
	for (;;) {
		if (!wait_fd(fd, POLLIN, o->idle_ms)) {
			err = "no progress";
			break;
		}
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = strerror(errno);
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(bytes + (unsigned long long)i) && !bad++)
				first_bad = bytes + (unsigned long long)i;
		bytes += (unsigned long long)n;
	}
	double secs = now_s() - t0;
	long long segs = data_segs(fd, false);
	close(fd);
	unsigned long long want = (unsigned long long)o->mib << 20;
	if (!err && o->mib && bytes != want)
		err = "the stream has the wrong length";
	if (!err && bad)
		err = "wrong bytes in the stream";
	printf("tcpperf: mode=recv mss=%d", mss);
	print_rate(bytes, secs);
	printf(" segs=%lld bad=%llu first_bad=%llu ok=%d\n", segs, bad, first_bad, !err);
	if (err)
		fprintf(stderr, TOOL_NAME ": recv: %s\n", err);
	return err ? 1 : 0;
}

// Moves exactly len bytes (recv or send) within idle_ms of progress each; 0, or -1 on EOF
// before any byte (rd only), or 1 on an error.
static int move_all(int fd, uint8_t *p, size_t len, bool rd, const struct opts *o)
{
	for (size_t off = 0; off < len;) {
		if (!wait_fd(fd, rd ? POLLIN : POLLOUT, o->idle_ms))
			return 1;
		ssize_t k = rd ? recv(fd, p + off, len - off, MSG_DONTWAIT)
			       : send(fd, p + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k == 0 && rd)
			return off ? 1 : -1;
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return 1;
		if (k > 0)
			off += (size_t)k;
	}
	return 0;
}

static int run_rr_server(const struct opts *o)
{
	static uint8_t buf[MAX_SIZE];
	int fd = accept_one(o);
	no_delay(fd);
	unsigned long long trans = 0;
	int r;
	while ((r = move_all(fd, buf, (size_t)o->size, true, o)) == 0) {
		unsigned long long at = trans * (unsigned long long)o->size;
		if (o->flip >= 0 && (unsigned long long)o->flip >= at &&
		    (unsigned long long)o->flip < at + (unsigned long long)o->size)
			buf[(unsigned long long)o->flip - at] ^= 0x01;
		if ((r = move_all(fd, buf, (size_t)o->size, false, o)))
			break;
		trans++;
	}
	close(fd);
	printf("tcpperf: mode=rr-server size=%d trans=%llu ok=%d\n", o->size, trans, r < 0);
	if (r > 0)
		fprintf(stderr, TOOL_NAME ": rr-server: the connection failed or stalled\n");
	return r < 0 ? 0 : 1;
}

static int run_crr_server(const struct opts *o)
{
	static uint8_t buf[MAX_SIZE];
	int ls = listen_on(o, 128);
	unsigned long long conns = 0, trans = 0, resets = 0, errors = 0;
	while (wait_fd(ls, POLLIN, conns ? o->idle_ms : o->wait_secs * 1000)) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		conns++;
		no_delay(fd);
		if (move_all(fd, buf, (size_t)o->size, true, o) ||
		    move_all(fd, buf, (size_t)o->size, false, o)) {
			errors++;
			close(fd);
			continue;
		}
		trans++;
		// the client closes first: nothing more may come before its FIN
		uint8_t x;
		ssize_t k = -1;
		if (wait_fd(fd, POLLIN, o->idle_ms)) {
			while ((k = recv(fd, &x, 1, 0)) < 0 && errno == EINTR)
				;
		}
		if (k < 0 && (errno == ECONNRESET || errno == EPIPE))
			resets++;
		else if (k != 0)
			errors++;
		close(fd);
	}
	close(ls);
	bool ok = conns && !resets && !errors;
	printf("tcpperf: mode=crr-server size=%d conns=%llu trans=%llu resets=%llu errors=%llu "
	       "ok=%d\n",
	       o->size, conns, trans, resets, errors, ok);
	if (!ok)
		fprintf(stderr, TOOL_NAME ": crr-server: %s\n",
			conns ? "a connection failed, or did not close cleanly" : "no connection");
	return ok ? 0 : 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int run_rr(const struct opts *o)
{
	static uint8_t req[MAX_SIZE], resp[MAX_SIZE];
	struct opts t = *o;
	t.idle_ms = o->timeout_ms;
	int fd = connect_to(o);
	no_delay(fd);
	size_t cap = 1 << 16, n = 0;
	double *lat = malloc(cap * sizeof(*lat));
	if (!lat)
		die("malloc");
	unsigned long long bad = 0;
	const char *err = NULL;
	double start = now_s(), now = start;
	while (!stop_flag && now - start < o->secs) {
		fill(req, (uint64_t)n * (uint64_t)o->size, (size_t)o->size);
		double t0 = now_s();
		if (move_all(fd, req, (size_t)o->size, false, &t) ||
		    move_all(fd, resp, (size_t)o->size, true, &t)) {
			err = "no reply";
			break;
		}
		now = now_s();
		if (memcmp(req, resp, (size_t)o->size)) {
			bad++; // not the echo of this request: not a transaction
			err = "a reply that is not the echo of its request";
			break;
		}
		if (n == cap) {
			cap *= 2;
			double *nl = realloc(lat, cap * sizeof(*lat));
			if (!nl)
				die("realloc");
			lat = nl;
		}
		lat[n++] = (now - t0) * 1e6;
	}
	double secs = now - start;
	shutdown(fd, SHUT_WR);
	if (!err && !drain_to_eof(fd, o))
		err = "the server did not close";
	close(fd);
	qsort(lat, n, sizeof(*lat), cmp_double);
	double p50 = n ? lat[n * 50 / 100] : 0, p90 = n ? lat[n * 90 / 100] : 0,
	       p99 = n ? lat[n * 99 / 100] : 0;
	if (!err && !n)
		err = "no transaction completed";
	printf("tcpperf: mode=rr size=%d trans=%zu secs=%.3f tps=%.0f lat_us_p50=%.1f p90=%.1f "
	       "p99=%.1f bad=%llu ok=%d\n",
	       o->size, n, secs, secs > 0 ? (double)n / secs : 0, p50, p90, p99, bad, !err);
	free(lat);
	if (err)
		fprintf(stderr, TOOL_NAME ": rr: %s\n", err);
	return err ? 1 : 0;
}

// Latency samples (us), grown as they come.
struct lats {
	double *v;
	size_t n, cap;
};

static void lat_add(struct lats *l, double us)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1 << 16;
		double *nv = realloc(l->v, l->cap * sizeof(*nv));
		if (!nv)
			die("realloc");
		l->v = nv;
	}
	l->v[l->n++] = us;
}

static int run_crr(const struct opts *o)
{
	static uint8_t req[MAX_SIZE], resp[MAX_SIZE];
	struct opts t = *o;
	t.idle_ms = o->timeout_ms;
	struct lats lat = {0};
	unsigned long long bad = 0;
	const char *err = NULL;
	double start = now_s(), now = start;
	while (!stop_flag && now - start < o->secs) {
		fill(req, (uint64_t)lat.n * (uint64_t)o->size, (size_t)o->size);
		double t0 = now_s();
		int fd = connect_to(o);
		no_delay(fd);
		if (move_all(fd, req, (size_t)o->size, false, &t) ||
		    move_all(fd, resp, (size_t)o->size, true, &t)) {
			close(fd);
			err = "no reply";
			break;
		}
		now = now_s();
		close(fd); // first, as netperf's client does
		if (memcmp(req, resp, (size_t)o->size)) {
			bad++;
			err = "a reply that is not the echo of its request";
			break;
		}
		lat_add(&lat, (now - t0) * 1e6);
	}
	double secs = now - start;
	size_t n = lat.n;
	if (n)
		qsort(lat.v, n, sizeof(*lat.v), cmp_double);
	if (!err && !n)
		err = "no transaction completed";
	printf("tcpperf: mode=crr size=%d trans=%zu secs=%.3f tps=%.0f lat_us_p50=%.1f p90=%.1f "
	       "p99=%.1f bad=%llu ok=%d\n",
	       o->size, n, secs, secs > 0 ? (double)n / secs : 0, n ? lat.v[n * 50 / 100] : 0,
	       n ? lat.v[n * 90 / 100] : 0, n ? lat.v[n * 99 / 100] : 0, bad, !err);
	free(lat.v);
	if (err)
		fprintf(stderr, TOOL_NAME ": crr: %s\n", err);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.port = 9000,
			 .size = 64,
			 .write = CHUNK,
			 .idle_ms = 10000,
			 .timeout_ms = 5000,
			 .wait_secs = 30,
			 .secs = 2,
			 .mib = -1,
			 .flip = -1};
	if (argc < 2)
		usage_error("a mode is required", NULL);
	o.mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_error("missing value or unknown flag", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--port"))
			o.port = (int)parse_long(v, 0, 65535, a);
		else if (!strcmp(a, "--dest"))
			o.dest = v;
		else if (!strcmp(a, "--bind"))
			o.bind = v;
		else if (!strcmp(a, "--mib"))
			o.mib = parse_long(v, 0, 1 << 20, a);
		else if (!strcmp(a, "--write"))
			o.write = (int)parse_long(v, 1, CHUNK, a);
		else if (!strcmp(a, "--size"))
			o.size = (int)parse_long(v, 1, MAX_SIZE, a);
		else if (!strcmp(a, "--secs"))
			o.secs = (double)parse_long(v, 1, 86400, a);
		else if (!strcmp(a, "--flip"))
			o.flip = parse_long(v, 0, LONG_MAX, a);
		else if (!strcmp(a, "--wait-secs"))
			o.wait_secs = (int)parse_long(v, 1, 86400, a);
		else if (!strcmp(a, "--idle-ms"))
			o.idle_ms = (int)parse_long(v, 1, 3600000, a);
		else if (!strcmp(a, "--timeout-ms"))
			o.timeout_ms = (int)parse_long(v, 1, 3600000, a);
		else if (!strcmp(a, "--ready-file"))
			o.ready_file = v;
		else
			usage_error("unknown flag", a);
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(o.mode, "send")) {
		if (o.mib < 0)
			o.mib = 64;
		return run_send(&o);
	}
	if (!strcmp(o.mode, "recv") || !strcmp(o.mode, "sink")) {
		if (o.mib < 0)
			o.mib = 0; // any length
		return run_recv(&o);
	}
	if (!strcmp(o.mode, "rr-server"))
		return run_rr_server(&o);
	if (!strcmp(o.mode, "rr"))
		return run_rr(&o);
	if (!strcmp(o.mode, "crr-server"))
		return run_crr_server(&o);
	if (!strcmp(o.mode, "crr"))
		return run_crr(&o);
	usage_error("unknown mode", o.mode);
	return 2;
}
