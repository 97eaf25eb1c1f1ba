// udpperf: the host side of examples/netbench.sh, a small UDP traffic tool.
//
//   udpperf sink [--port P] [--bind IP] [--buf BYTES] [--idle-ms N] [--wait-secs N] [--secs N]
//   udpperf echo [--port P] [--bind IP] [--buf BYTES] [--idle-ms N] [--wait-secs N]
//   udpperf send --dest IP [--port P] [--size S] [--secs N] [--buf BYTES]
//   udpperf rr   --dest IP [--port P] [--size S] [--secs N] [--timeout-ms N]
//   udpperf bulk-recv [--port P] [--mib N] [--wait-secs N] [--idle-ms N]
//   udpperf bulk-send --dest IP [--port P] [--mib N] [--wait-secs N]
//
// sink   receives datagrams on a port and counts them; it reports once no datagram has arrived
//        for --idle-ms (after the first one), after --secs from the first datagram, or after
//        --wait-secs when nothing arrived at all. Throughput is over first..last datagram.
// echo   sends every datagram back to where it came from; stops like sink.
// send   streams datagrams of --size bytes to --dest for --secs seconds.
// rr     request/response: one datagram out, waits for the reply; transactions/s and latency
//        percentiles (a request lost for --timeout-ms is counted in lost= and sent again; a
//        reply that is not an exact copy of the request, in bad=).
// bulk-send / bulk-recv  a reliable transfer of --mib MiB (default 64) in 1024-byte datagrams
//        with go-back-N and a CRC-32 of the content (as firmware/tests/test_net_bulk.c);
//        every datagram's content is checked on arrival. bulk-recv waits --wait-secs for the
//        first datagram, fails after --idle-ms (default 10000) without one, and its --buf
//        defaults to 4 MiB; bulk-send fails after --wait-secs without ack progress. Both
//        exit with status 1 unless ok=1.
//
// Common options:
//   --buf BYTES          socket buffer (SO_RCVBUF for sink/echo/rr, SO_SNDBUF for send); the
//                        *FORCE variant is tried first so root may exceed net.core.*mem_max
//   --cpu-pid-file FILE  a file holding the pid of another process (the VMM); its CPU time
//                        (utime+stime from /proc/PID/stat) over the measured interval is
//                        reported as cpu_us= (read when the first datagram moves, and then
//                        at most every 5 ms while datagrams move, so the end is within 5 ms)
//   --ready-file FILE    created once the socket is bound (for scripts to wait on)
//   --breakdown-file FILE  (sink, echo, send, rr; with --cpu-pid-file) per-thread CPU time and
//                        context switches of the VMM and of this tool, sampled at the start of
//                        the measured interval and near its end, to FILE (breakdown.h)
//   --status-sock PATH   with --breakdown-file: minivmm's control socket, whose status is read
//                        with each sample
//
// Output: one line of key=value pairs on stdout, starting with "udpperf: mode=...".
// Exit status: 0 on success (also when nothing arrived: msgs=0), 2 on a usage error, 1 on an
// error.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME "udpperf"
#define TOOL_USAGE                                                                                 \
	"usage: udpperf sink|echo|send|rr|bulk-send|bulk-recv [--port P] [--dest IP] "             \
	"[--bind IP] [--size S] [--secs N] [--buf BYTES] [--idle-ms N] [--wait-secs N] "           \
	"[--timeout-ms N] [--mib N] [--cpu-pid-file FILE] [--ready-file FILE] "                    \
	"[--breakdown-file FILE] [--status-sock PATH]"
#include "tool.h"

#include "breakdown.h"

#define MAX_DGRAM 65535
#define BATCH	  64

struct opts {
	const char *mode;
	const char *dest;
	const char *bind;
	const char *cpu_pid_file;
	const char *ready_file;
	const char *breakdown_file;
	const char *status_sock;
	int port;
	int size;
	double secs;
	long buf;
	int idle_ms;
	double wait_secs;
	int timeout_ms;
	int mib;
};

static double parse_double(const char *s, double min, const char *name)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min))
		usage_error("bad value for", name);
	return v;
}

// CPU time of another process in microseconds (utime + stime, all its threads), or -1.
struct cpu_watch {
	const char *pid_file;
	long pid;
	long hz;
	double start_us, last_us;
	double last_sample_t;
	bool started;
};

static double cpu_read(struct cpu_watch *w)
{
	if (!w->pid_file)
		return -1;
	if (w->pid <= 0) {
		FILE *f = fopen(w->pid_file, "r");
		if (!f)
			return -1;
		if (fscanf(f, "%ld", &w->pid) != 1)
			w->pid = 0;
		fclose(f);
		if (w->pid <= 0)
			return -1;
	}
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", w->pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	// Fields after the command name "(...)": state is field 3; utime 14, stime 15.
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	unsigned long long ut, st;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1e6 / (double)w->hz;
}

// Called whenever datagrams moved at time t.
static void cpu_tick(struct cpu_watch *w, double t)
{
	if (!w->pid_file)
		return;
	if (!w->started) {
		double v = cpu_read(w);
		if (v >= 0) {
			w->start_us = w->last_us = v;
			w->started = true;
		}
		w->last_sample_t = t;
		return;
	}
	if (t - w->last_sample_t >= 0.005) {
		double v = cpu_read(w);
		if (v >= 0)
			w->last_us = v;
		w->last_sample_t = t;
	}
}

static void cpu_print(struct cpu_watch *w)
{
	if (!w->pid_file)
		return;
	if (w->started)
		printf(" cpu_us=%.0f", w->last_us - w->start_us);
	else
		printf(" cpu_us=-1");
}

static int make_socket(const struct opts *o, bool rcv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (o->buf > 0) {
		int v = (int)o->buf;
		int force = rcv ? SO_RCVBUFFORCE : SO_SNDBUFFORCE;
		int plain = rcv ? SO_RCVBUF : SO_SNDBUF;
		if (setsockopt(fd, SOL_SOCKET, force, &v, sizeof(v)) < 0 &&
		    setsockopt(fd, SOL_SOCKET, plain, &v, sizeof(v)) < 0)
			die("setsockopt SO_RCVBUF/SO_SNDBUF");
	}
	return fd;
}

static int sock_buf(int fd, bool rcv)
{
	int v = 0;
	socklen_t len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF, &v, &len) < 0)
		die("getsockopt");
	return v;
}

static void bind_local(int fd, const struct opts *o)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	if (o->bind && inet_pton(AF_INET, o->bind, &a.sin_addr) != 1)
		usage_error("bad --bind address", o->bind);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind");
	if (o->ready_file) {
		FILE *f = fopen(o->ready_file, "w");
		if (!f)
			die("ready file");
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}
}

static struct sockaddr_in dest_addr(const struct opts *o)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o->port)};
	if (!o->dest)
		usage_error("--dest is required for this mode", NULL);
	if (inet_pton(AF_INET, o->dest, &a.sin_addr) != 1)
		usage_error("bad --dest address", o->dest);
	return a;
}

// Wait for input: before the first datagram up to wait_secs (from start), afterwards up to
// idle_ms since the last one. Returns false when the wait is over.
static bool wait_input(int fd, const struct opts *o, double start, double last, bool any)
{
	for (;;) {
		if (stop_flag)
			return false;
		double t = now_s();
		double deadline = any ? last + o->idle_ms / 1e3 : start + o->wait_secs;
		if (t >= deadline)
			return false;
		int ms = (int)((deadline - t) * 1e3) + 1;
		if (ms > 100)
			ms = 100; // to notice signals promptly
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, ms);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			die("poll");
	}
}

static void print_rate(unsigned long long msgs, unsigned long long bytes, double secs)
{
	double mbps = secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0;
	double pps = secs > 0 ? (double)msgs / secs : 0;
	printf(" msgs=%llu bytes=%llu secs=%.3f mbps=%.2f pps=%.0f", msgs, bytes, secs, mbps, pps);
}

static int run_sink(const struct opts *o, bool echo)
{
	int fd = make_socket(o, true);
	bind_local(fd, o);
	static char bufs[BATCH][MAX_DGRAM];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in from[BATCH];
	struct cpu_watch cw = {.pid_file = o->cpu_pid_file, .hz = sysconf(_SC_CLK_TCK)};
	static struct breakdown bd;
	bd = (struct breakdown){
	    .file = o->breakdown_file, .sock_path = o->status_sock, .sock_fd = -1};
	// A sink only counts: MSG_TRUNC gives the real length, so small buffers do.
	size_t len = echo ? MAX_DGRAM : 64;
	unsigned long long msgs = 0, bytes = 0, errors = 0;
	int last_size = 0;
	double start = now_s(), first = 0, last = 0;
	bool any = false;

	while (wait_input(fd, o, start, last, any)) {
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = len};
			mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i],
							.msg_iovlen = 1,
							.msg_name = &from[i],
							.msg_namelen = sizeof(from[i])};
		}
		int n = recvmmsg(fd, mm, BATCH, MSG_DONTWAIT | (echo ? 0 : MSG_TRUNC), NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			die("recvmmsg");
		}
		double t = now_s();
		if (!any) {
			any = true;
			first = t;
		}
		last = t;
		cpu_tick(&cw, t);
		for (int i = 0; i < n; i++) {
			msgs++;
			bytes += mm[i].msg_len;
			last_size = (int)mm[i].msg_len;
		}
		bd_tick(&bd, cw.pid, t, msgs);
		if (echo) {
			for (int i = 0; i < n; i++)
				iov[i].iov_len = mm[i].msg_len;
			int done = 0;
			while (done < n) {
				int s = sendmmsg(fd, mm + done, (unsigned)(n - done), 0);
				if (s < 0) {
					errors++;
					break;
				}
				done += s;
			}
		}
		if (o->secs > 0 && t - first >= o->secs)
			break;
	}
	printf("udpperf: mode=%s", echo ? "echo" : "sink");
	print_rate(msgs, bytes, msgs > 1 ? last - first : 0);
	printf(" size=%d rcvbuf=%d", last_size, sock_buf(fd, true));
	if (echo)
		printf(" errors=%llu", errors);
	cpu_print(&cw);
	bd_finish(&bd);
	printf("\n");
	close(fd);
	return 0;
}

static int run_send(const struct opts *o)
{
	int fd = make_socket(o, false);
	struct sockaddr_in to = dest_addr(o);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		die("connect");
	static char buf[MAX_DGRAM];
	memset(buf, 0x5a, sizeof(buf));
	struct mmsghdr mm[BATCH];
	struct iovec iov = {.iov_base = buf, .iov_len = (size_t)o->size};
	for (int i = 0; i < BATCH; i++)
		mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov, .msg_iovlen = 1};
	struct cpu_watch cw = {.pid_file = o->cpu_pid_file, .hz = sysconf(_SC_CLK_TCK)};
	static struct breakdown bd;
	bd = (struct breakdown){
	    .file = o->breakdown_file, .sock_path = o->status_sock, .sock_fd = -1};
	unsigned long long msgs = 0, errors = 0;
	double start = now_s(), t = start;
	while (!stop_flag && t - start < o->secs) {
		int n = sendmmsg(fd, mm, BATCH, 0);
		t = now_s();
		if (n < 0) {
			// ENOBUFS (queue full), ECONNREFUSED (ICMP from the peer): count, go on.
			errors++;
			if (errno != ENOBUFS && errno != ECONNREFUSED && errno != EAGAIN &&
			    errno != EINTR)
				die("sendmmsg");
			continue;
		}
		msgs += (unsigned)n;
		cpu_tick(&cw, t);
		bd_tick(&bd, cw.pid, t, msgs);
	}
	printf("udpperf: mode=send");
	print_rate(msgs, msgs * (unsigned long long)o->size, t - start);
	printf(" size=%d sndbuf=%d errors=%llu", o->size, sock_buf(fd, false), errors);
	cpu_print(&cw);
	bd_finish(&bd);
	printf("\n");
	close(fd);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int run_rr(const struct opts *o)
{
	int fd = make_socket(o, true);
	struct sockaddr_in to = dest_addr(o);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		die("connect");
	static char buf[MAX_DGRAM], rbuf[MAX_DGRAM];
	memset(buf, 0x5a, sizeof(buf));
	size_t cap = 1 << 16, n = 0;
	double *lat = malloc(cap * sizeof(*lat));
	if (!lat)
		die("malloc");
	struct cpu_watch cw = {.pid_file = o->cpu_pid_file, .hz = sysconf(_SC_CLK_TCK)};
	static struct breakdown bd;
	bd = (struct breakdown){
	    .file = o->breakdown_file, .sock_path = o->status_sock, .sock_fd = -1};
	unsigned long long lost = 0, bad = 0;
	double start = now_s(), t = start;
	while (!stop_flag && t - start < o->secs) {
		double t0 = now_s();
		if (send(fd, buf, (size_t)o->size, 0) < 0 && errno != ECONNREFUSED)
			die("send");
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, o->timeout_ms);
		if (r <= 0) {
			if (r < 0 && errno != EINTR)
				die("poll");
			lost++;
			t = now_s();
			continue;
		}
		ssize_t got = recv(fd, rbuf, sizeof(rbuf), 0);
		t = now_s();
		if (got < 0) {
			if (errno == ECONNREFUSED)
				continue;
			die("recv");
		}
		if (got != o->size || memcmp(rbuf, buf, (size_t)got)) {
			bad++; /* not an exact copy of the request: not a transaction */
			continue;
		}
		if (n == cap) {
			cap *= 2;
			double *nl = realloc(lat, cap * sizeof(*lat));
			if (!nl)
				die("realloc");
			lat = nl;
		}
		lat[n++] = (t - t0) * 1e6;
		cpu_tick(&cw, t);
		bd_tick(&bd, cw.pid, t, n);
	}
	double secs = t - start;
	qsort(lat, n, sizeof(*lat), cmp_double);
	double p50 = n ? lat[n * 50 / 100] : 0, p90 = n ? lat[n * 90 / 100] : 0,
	       p99 = n ? lat[n * 99 / 100] : 0;
	printf("udpperf: mode=rr size=%d trans=%zu secs=%.3f tps=%.0f lat_us_p50=%.1f "
	       "p90=%.1f p99=%.1f lost=%llu bad=%llu",
	       o->size, n, secs, secs > 0 ? (double)n / secs : 0, p50, p90, p99, lost, bad);
	cpu_print(&cw);
	bd_finish(&bd);
	printf("\n");
	free(lat);
	close(fd);
	return 0;
}

// Reliable bulk transfer (bulk-send / bulk-recv), as in firmware/tests/test_net_bulk.c:
//   data "BULK" u32 seq, BULK_PAYLOAD bytes (xorshift32 words seeded with seq*2654435761+1)
//   ack  "BACK" u32 next (cumulative; every BULK_ACK_EVERY accepted and for every drop)
//   end  "BEND" u32 total, u32 crc32 of all payload (answered with an ack)
// Go-back-N with a window of BULK_WINDOW datagrams and a BULK_RTO_MS timeout. Little endian.
#define BULK_MAGIC     0x4b4c5542u // "BULK"
#define BACK_MAGIC     0x4b434142u // "BACK"
#define BEND_MAGIC     0x444e4542u // "BEND"
#define BULK_HDR       8
#define BULK_PAYLOAD   1024
#define BULK_WINDOW    128
#define BULK_ACK_EVERY 16
#define BULK_RTO_MS    20
#define BULK_END_TRIES 50
#define BULK_LINGER_MS 300

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void bulk_fill(unsigned char *p, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 1;
	if (!x)
		x = 1;
	for (int i = 0; i < BULK_PAYLOAD; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		put32(p + i, x);
	}
}

// CRC-32 (zlib): crc32_update(0, ...) starts one.
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t len)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	uint32_t c = crc ^ 0xffffffffu;
	while (len--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static void print_bulk_rate(uint32_t datagrams, double secs)
{
	double bytes = (double)datagrams * BULK_PAYLOAD;
	printf(" secs=%.3f mbps=%.2f", secs, secs > 0 ? bytes * 8 / secs / 1e6 : 0);
}

static int run_bulk_send(const struct opts *o)
{
	int fd = make_socket(o, false);
	struct sockaddr_in to = dest_addr(o);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		die("connect");
	uint32_t total = (uint32_t)o->mib * (1024 * 1024 / BULK_PAYLOAD);
	uint32_t next = 0, high = 0, acked = 0, crc = 0, rewound_at = UINT32_MAX;
	unsigned long long retransmits = 0;
	static unsigned char d[BULK_HDR + BULK_PAYLOAD], r[64];
	double start = now_s(), last_progress = start, last_rewind = start;
	bool ok = true;
	while (acked < total) {
		if (stop_flag) {
			ok = false;
			break;
		}
		for (int burst = 0; next < total && next < acked + BULK_WINDOW && burst < 32;
		     burst++) {
			put32(d, BULK_MAGIC);
			put32(d + 4, next);
			bulk_fill(d + BULK_HDR, next);
			if (send(fd, d, sizeof(d), 0) < 0) {
				if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED ||
				    errno == EINTR)
					break; // sent again after a rewind
				die("send");
			}
			if (next == high) {
				crc = crc32_update(crc, d + BULK_HDR, BULK_PAYLOAD);
				high++;
			} else {
				retransmits++;
			}
			next++;
		}
		// Acks: wait only when the window is full (or everything is out).
		bool full = next >= total || next >= acked + BULK_WINDOW;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, full ? 1 : 0) < 0 && errno != EINTR)
			die("poll");
		bool dup = false;
		ssize_t got;
		while ((got = recv(fd, r, sizeof(r), MSG_DONTWAIT)) >= 0) {
			if (got < 8 || get32(r) != BACK_MAGIC)
				continue;
			uint32_t n = get32(r + 4);
			if (n > acked && n <= total) {
				acked = n;
				last_progress = last_rewind = now_s();
				if (next < acked)
					next = acked;
			} else if (n == acked) {
				dup = true;
			}
		}
		if (errno != EAGAIN && errno != ECONNREFUSED && errno != EINTR)
			die("recv");
		double t = now_s();
		if (t - last_progress > o->wait_secs) {
			fprintf(stderr, "udpperf: bulk-send: no ack progress for %.0f s\n",
				o->wait_secs);
			ok = false;
			break;
		}
		if (next > acked &&
		    (t - last_rewind > BULK_RTO_MS / 1e3 || (dup && rewound_at != acked))) {
			next = acked;
			rewound_at = acked;
			last_rewind = t;
		}
	}
	double secs = now_s() - start;
	bool ended = false;
	if (ok) {
		while (recv(fd, r, sizeof(r), MSG_DONTWAIT) >= 0) // acks still in flight
			;
		unsigned char e[12];
		put32(e, BEND_MAGIC);
		put32(e + 4, total);
		put32(e + 8, crc);
		for (int i = 0; i < BULK_END_TRIES && (!ended || i < 3); i++) {
			if (send(fd, e, sizeof(e), 0) < 0 && errno != ECONNREFUSED &&
			    errno != ENOBUFS)
				die("send");
			struct pollfd p = {.fd = fd, .events = POLLIN};
			double t0 = now_s();
			while (now_s() - t0 < 0.1 && poll(&p, 1, 10) >= 0) {
				ssize_t got = recv(fd, r, sizeof(r), MSG_DONTWAIT);
				if (got >= 8 && get32(r) == BACK_MAGIC && get32(r + 4) == total) {
					ended = true;
					break;
				}
			}
		}
	}
	ok = ok && ended;
	printf("udpperf: mode=bulk-send mib=%d datagrams=%u retransmits=%llu", o->mib, high,
	       retransmits);
	print_bulk_rate(acked, secs);
	printf(" crc32=%08x ok=%d\n", crc, ok);
	close(fd);
	return ok ? 0 : 1;
}

static int run_bulk_recv(const struct opts *o)
{
	int fd = make_socket(o, true);
	bind_local(fd, o);
	uint32_t total = (uint32_t)o->mib * (1024 * 1024 / BULK_PAYLOAD);
	uint32_t next = 0, crc = 0, end_crc = 0;
	unsigned long long out_of_order = 0, corrupt = 0;
	static unsigned char bufs[BATCH][BULK_HDR + BULK_PAYLOAD + 64], expect[BULK_PAYLOAD];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in from[BATCH];
	double start = now_s(), first = 0, last = start, end_t = 0;
	bool ended = false, end_ok = false;
	const char *why = NULL;
	for (;;) {
		if (stop_flag) {
			why = "interrupted";
			break;
		}
		double t = now_s();
		if (ended && t - end_t > BULK_LINGER_MS / 1e3)
			break;
		if (!next && !ended && t - start > o->wait_secs) {
			why = "no datagram arrived";
			break;
		}
		if (next && !ended && t - last > o->idle_ms / 1e3) {
			why = "the transfer stalled";
			break;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 10) < 0 && errno != EINTR)
			die("poll");
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = sizeof(bufs[i])};
			mm[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i],
							.msg_iovlen = 1,
							.msg_name = &from[i],
							.msg_namelen = sizeof(from[i])};
		}
		int n = recvmmsg(fd, mm, BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			die("recvmmsg");
		}
		t = now_s();
		for (int i = 0; i < n; i++) {
			const unsigned char *b = bufs[i];
			size_t len = mm[i].msg_len;
			bool send_ack = false;
			if (len < 8)
				continue;
			if (get32(b) == BEND_MAGIC && len >= 12) {
				if (!ended) {
					ended = true;
					end_crc = get32(b + 8);
					end_ok = get32(b + 4) == total && next == total;
				}
				end_t = t;
				send_ack = true;
			} else if (get32(b) != BULK_MAGIC) {
				continue;
			} else if (get32(b + 4) != next || next >= total) {
				out_of_order++;
				send_ack = true;
			} else {
				bulk_fill(expect, next);
				if (len != BULK_HDR + BULK_PAYLOAD ||
				    memcmp(b + BULK_HDR, expect, BULK_PAYLOAD)) {
					corrupt++;
					send_ack = true;
				} else {
					crc = crc32_update(crc, b + BULK_HDR, BULK_PAYLOAD);
					if (!next)
						first = t;
					last = t;
					next++;
					send_ack = next % BULK_ACK_EVERY == 0 || next == total;
				}
			}
			if (send_ack) {
				unsigned char a[8];
				put32(a, BACK_MAGIC);
				put32(a + 4, next);
				sendto(fd, a, sizeof(a), 0, (struct sockaddr *)&from[i],
				       mm[i].msg_hdr.msg_namelen);
			}
		}
	}
	if (!why && !end_ok)
		why = "the end does not match the data received";
	if (!why && end_crc != crc)
		why = "crc32 mismatch with the sender's";
	if (!why && corrupt)
		why = "corrupt datagrams";
	printf("udpperf: mode=bulk-recv mib=%d datagrams=%u out_of_order=%llu", o->mib, next,
	       out_of_order);
	print_bulk_rate(next, next > 1 ? last - first : 0);
	printf(" crc32=%08x corrupt=%llu ok=%d\n", crc, corrupt, !why);
	if (why)
		fprintf(stderr, "udpperf: bulk-recv: %s\n", why);
	close(fd);
	return why ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.port = 9000,
			 .size = 1024,
			 .secs = 0,
			 .idle_ms = 1000,
			 .wait_secs = 30,
			 .timeout_ms = 200,
			 .mib = 64};
	bool idle_set = false;
	if (argc < 2)
		usage_error("a mode is required", NULL);
	o.mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_error("missing value or unknown flag", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--port"))
			o.port = (int)parse_long(v, 1, 65535, a);
		else if (!strcmp(a, "--dest"))
			o.dest = v;
		else if (!strcmp(a, "--bind"))
			o.bind = v;
		else if (!strcmp(a, "--size"))
			o.size = (int)parse_long(v, 0, 65507, a);
		else if (!strcmp(a, "--secs"))
			o.secs = parse_double(v, 0, a);
		else if (!strcmp(a, "--buf"))
			o.buf = parse_long(v, 0, INT_MAX / 2, a);
		else if (!strcmp(a, "--idle-ms")) {
			o.idle_ms = (int)parse_long(v, 1, 3600000, a);
			idle_set = true;
		} else if (!strcmp(a, "--mib"))
			o.mib = (int)parse_long(v, 1, 4095, a);
		else if (!strcmp(a, "--wait-secs"))
			o.wait_secs = parse_double(v, 0, a);
		else if (!strcmp(a, "--timeout-ms"))
			o.timeout_ms = (int)parse_long(v, 1, 3600000, a);
		else if (!strcmp(a, "--cpu-pid-file"))
			o.cpu_pid_file = v;
		else if (!strcmp(a, "--ready-file"))
			o.ready_file = v;
		else if (!strcmp(a, "--breakdown-file"))
			o.breakdown_file = v;
		else if (!strcmp(a, "--status-sock"))
			o.status_sock = v;
		else
			usage_error("unknown flag", a);
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(o.mode, "sink"))
		return run_sink(&o, false);
	if (!strcmp(o.mode, "echo"))
		return run_sink(&o, true);
	if (!strcmp(o.mode, "send")) {
		if (o.secs <= 0)
			o.secs = 2;
		return run_send(&o);
	}
	if (!strcmp(o.mode, "rr")) {
		if (o.secs <= 0)
			o.secs = 2;
		return run_rr(&o);
	}
	if (!strcmp(o.mode, "bulk-send"))
		return run_bulk_send(&o);
	if (!strcmp(o.mode, "bulk-recv")) {
		if (!idle_set)
			o.idle_ms = 10000;
		if (!o.buf)
			o.buf = 4 << 20; // a window of bursts without socket-buffer drops
		return run_bulk_recv(&o);
	}
	usage_error("unknown mode", o.mode);
	return 2;
}
