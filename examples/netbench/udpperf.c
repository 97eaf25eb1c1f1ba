// udpperf: the host side of examples/netbench.sh, a small UDP traffic tool.
//
//   udpperf sink [--port P] [--bind IP] [--buf BYTES] [--idle-ms N] [--wait-secs N] [--secs N]
//   udpperf echo [--port P] [--bind IP] [--buf BYTES] [--idle-ms N] [--wait-secs N]
//   udpperf send --dest IP [--port P] [--size S] [--secs N] [--buf BYTES]
//   udpperf rr   --dest IP [--port P] [--size S] [--secs N] [--timeout-ms N]
//
// sink   receives datagrams on a port and counts them; it reports once no datagram has arrived
//        for --idle-ms (after the first one), after --secs from the first datagram, or after
//        --wait-secs when nothing arrived at all. Throughput is over first..last datagram.
// echo   sends every datagram back to where it came from; stops like sink.
// send   streams datagrams of --size bytes to --dest for --secs seconds.
// rr     request/response: one datagram out, waits for the reply; transactions/s and latency
//        percentiles (a request lost for --timeout-ms is counted in lost= and sent again).
//
// Common options:
//   --buf BYTES          socket buffer (SO_RCVBUF for sink/echo/rr, SO_SNDBUF for send); the
//                        *FORCE variant is tried first so root may exceed net.core.*mem_max
//   --cpu-pid-file FILE  a file holding the pid of another process (the VMM); its CPU time
//                        (utime+stime from /proc/PID/stat) over the measured interval is
//                        reported as cpu_us= (read when the first datagram moves, and then
//                        at most every 5 ms while datagrams move, so the end is within 5 ms)
//   --ready-file FILE    created once the socket is bound (for scripts to wait on)
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

#define MAX_DGRAM 65535
#define BATCH	  64

struct opts {
	const char *mode;
	const char *dest;
	const char *bind;
	const char *cpu_pid_file;
	const char *ready_file;
	int port;
	int size;
	double secs;
	long buf;
	int idle_ms;
	double wait_secs;
	int timeout_ms;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "udpperf: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "udpperf: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "usage: udpperf sink|echo|send|rr [--port P] [--dest IP] [--bind IP] "
			"[--size S] [--secs N] [--buf BYTES] [--idle-ms N] [--wait-secs N] "
			"[--timeout-ms N] [--cpu-pid-file FILE] [--ready-file FILE]\n");
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long parse_long(const char *s, long min, long max, const char *name)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error("bad value for", name);
	return v;
}

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
	}
	printf("udpperf: mode=send");
	print_rate(msgs, msgs * (unsigned long long)o->size, t - start);
	printf(" size=%d sndbuf=%d errors=%llu", o->size, sock_buf(fd, false), errors);
	cpu_print(&cw);
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
	unsigned long long lost = 0;
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
		if (n == cap) {
			cap *= 2;
			double *nl = realloc(lat, cap * sizeof(*lat));
			if (!nl)
				die("realloc");
			lat = nl;
		}
		lat[n++] = (t - t0) * 1e6;
		cpu_tick(&cw, t);
	}
	double secs = t - start;
	qsort(lat, n, sizeof(*lat), cmp_double);
	double p50 = n ? lat[n * 50 / 100] : 0, p90 = n ? lat[n * 90 / 100] : 0,
	       p99 = n ? lat[n * 99 / 100] : 0;
	printf("udpperf: mode=rr size=%d trans=%zu secs=%.3f tps=%.0f lat_us_p50=%.1f "
	       "p90=%.1f p99=%.1f lost=%llu",
	       o->size, n, secs, secs > 0 ? (double)n / secs : 0, p50, p90, p99, lost);
	cpu_print(&cw);
	printf("\n");
	free(lat);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.port = 9000,
			 .size = 1024,
			 .secs = 0,
			 .idle_ms = 1000,
			 .wait_secs = 30,
			 .timeout_ms = 200};
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
		else if (!strcmp(a, "--idle-ms"))
			o.idle_ms = (int)parse_long(v, 1, 3600000, a);
		else if (!strcmp(a, "--wait-secs"))
			o.wait_secs = parse_double(v, 0, a);
		else if (!strcmp(a, "--timeout-ms"))
			o.timeout_ms = (int)parse_long(v, 1, 3600000, a);
		else if (!strcmp(a, "--cpu-pid-file"))
			o.cpu_pid_file = v;
		else if (!strcmp(a, "--ready-file"))
			o.ready_file = v;
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
	usage_error("unknown mode", o.mode);
	return 2;
}
