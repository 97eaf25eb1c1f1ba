// tapwake: what one frame's wake-up costs a tap reader at a low rate, read() against the
// io_uring ring minivmm's rx-uring=on received with, removed since (docs/performance.md, *The
// read side*).
//
//   tapwake [--mode read|ring|backend|device] [--reads N] [--frames N]
//           [--gap-us N] [--tap NAME] [--net-opts OPTS]
//
// Makes its own tap (default mvwake0, gone when it exits) and brings it up; a second thread
// sends --frames 64-byte frames (default 4000) on the tap's host side with a packet socket, one
// every --gap-us microseconds (default 250), each stamped with the time it was sent. The main
// thread receives them as a VMM's I/O thread would: --mode read waits in epoll for the tap's
// EPOLLIN and read()s until EAGAIN; --mode ring keeps --reads reads (1 to 64, default 64) in
// flight in a SINGLE_ISSUER ring and waits in epoll for its eventfd, taking each completion
// and giving its buffer back with the next io_uring_enter, as minivmm's tap backend did. An
// empty tap arms one poll per read in flight, and a frame wakes them all: the price this
// measures. --mode backend receives with minivmm's own tap backend (devices/backends/tap.c,
// linked in) on minivmm's event loop: the code itself rather than a stand-in (--reads does not
// apply). --mode device adds minivmm's virtio-net device on that backend, driven by a
// fake driver that takes each frame out of guest memory (devguest.h): a frame's wake-up through
// the VMM's whole receive path; --net-opts adds --net options (poll-us=50: the I/O thread's
// adaptive polling), and the result line's mode says them (mode=device,poll-us=50).
// Output: "tapwake: mode=MODE reads=N frames=N cpu_us_per_frame=X p50_us=X p90_us=X
// p99_us=X" (CPU: the receiving thread's own; latency: from the send to the frame in hand).
// Exit 1 on an error or when a frame did not come, 2 on a usage error. Needs CAP_NET_ADMIN.
#ifndef _GNU_SOURCE // netbench and make build it with -D_GNU_SOURCE, as minivmm's own code
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <linux/if_packet.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>

#define TOOL_NAME "tapwake"
#define TOOL_USAGE                                                                                 \
	"usage: tapwake [--mode read|ring|backend|device] [--reads N] [--frames N] "               \
	"[--gap-us N] [--tap NAME]"
#include "tool.h"
#include "tap.h"

#include "devguest.h"
#include "devices/backends/tap.h"
#include "base/event_loop.h"

#define ETH_TYPE   0x88b5 // IEEE local experimental: the host stack ignores it
#define FRAME_LEN  64
#define MAX_READS  64
#define BUF_LEN	   (VNET_HLEN + 65536)
#define MAX_FRAMES 1000000

static const char *tap_name = "mvwake0";
static long nframes = 4000, gap_us = 250;
static double *lat; // seconds from send to receipt, per frame received
static long got;

static void *sender(void *arg)
{
	(void)arg;
	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_TYPE));
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_TYPE),
				  .sll_ifindex = (int)if_nametoindex(tap_name)};
	if (s < 0 || bind(s, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		die("packet socket on the tap");
	uint8_t f[FRAME_LEN] = {0};
	memset(f, 0xff, 6);
	memset(f + 6, 0x52, 6);
	f[12] = ETH_TYPE >> 8;
	f[13] = ETH_TYPE & 0xff;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (long i = 0; i < nframes && !stop_flag; i++) {
		t.tv_nsec += gap_us * 1000;
		while (t.tv_nsec >= 1000000000) {
			t.tv_nsec -= 1000000000;
			t.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		double sent = now_s();
		memcpy(f + 16, &sent, sizeof(sent));
		if (send(s, f, sizeof(f), 0) != (ssize_t)sizeof(f))
			die("send on the tap");
	}
	close(s);
	return NULL;
}

// One frame in hand (header + Ethernet): its latency, if it is ours.
static void take(const uint8_t *buf, ssize_t n)
{
	const uint8_t *eth = buf + VNET_HLEN;
	if (n < VNET_HLEN + 24 || eth[12] != ETH_TYPE >> 8 || eth[13] != (ETH_TYPE & 0xff))
		return;
	double sent;
	memcpy(&sent, eth + 16, sizeof(sent));
	if (got < nframes)
		lat[got++] = now_s() - sent;
}

static uint8_t bufs[MAX_READS][BUF_LEN], bounce[BUF_LEN];

static void queue_read(struct io_uring *ring, int fd, unsigned i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe) { // cannot happen: a buffer is in one place at a time
		errno = EOVERFLOW;
		die("io_uring submission queue full");
	}
	io_uring_prep_read(sqe, fd, bufs[i], BUF_LEN, 0);
	sqe->user_data = i;
}

// --mode ring, one wake: every completion, each frame copied out (as into a device's buffer),
// its buffer queued again; when the queue looks empty, one enter sends them back.
static void ring_wake(struct io_uring *ring, int fd)
{
	bool entered = false;
	for (;;) {
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(ring, &cqe)) {
			if (entered)
				return;
			int rc = io_uring_submit_and_get_events(ring);
			if (rc < 0 && rc != -EINTR) {
				errno = -rc;
				die("io_uring_submit_and_get_events");
			}
			entered = true;
			continue;
		}
		unsigned i = (unsigned)(cqe->user_data % MAX_READS);
		int res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		if (res < 0 && res != -EAGAIN && res != -EINTR) {
			errno = -res;
			die("io_uring read from the tap");
		}
		if (res > 0) {
			memcpy(bounce, bufs[i], (size_t)res);
			take(bounce, res);
		}
		queue_read(ring, fd, i);
		entered = false;
	}
}

// --mode backend: the device's side of minivmm's tap backend. rx_ready: take every frame.
static struct net_backend *backend;

static void backend_rx_ready(void *opaque)
{
	(void)opaque;
	ssize_t n;
	while ((n = backend->ops->recv(backend, bounce, sizeof(bounce))) > 0)
		take(bounce, n);
	if (n < 0) {
		errno = (int)-n;
		die("the tap backend's recv");
	}
}

static void backend_open(struct event_loop *loop)
{
	backend = dg_backend_open(loop, tap_name, backend_rx_ready);
}

// --mode device: a frame the fake driver took out of guest memory.
static void device_take(const uint8_t *frame, size_t len)
{
	take(frame, (ssize_t)len);
}

static void device_open(struct event_loop *loop, struct devguest *g, const char *more)
{
	if (event_loop_init(loop) < 0)
		die("event_loop_init");
	char options[256];
	if (snprintf(options, sizeof(options), "tap=%s,offload=off%s%s", tap_name, *more ? "," : "",
		     more) >= (int)sizeof(options))
		usage_error("--net-opts too long", more);
	devguest_open(g, loop, options, device_take);
	if (event_loop_run_once(loop, 0) < 0 && errno != EINTR) // the first receive
		die("event_loop_run_once");
	const char *path = devguest_rx_path(g);
	if (strcmp(path, "read")) {
		fprintf(stderr, "tapwake: the device's backend receives by %s\n", path);
		exit(1);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	(void)parse_ip; // tap.h's address parsing: this tool needs no address
	(void)parse_mac;
	bool ring_mode = false, backend_mode = false, device_mode = false;
	const char *mode = "read", *net_opts = "";
	long reads = MAX_READS;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_error("missing value for", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--mode")) {
			if (strcmp(v, "read") && strcmp(v, "ring") && strcmp(v, "backend") &&
			    strcmp(v, "device"))
				usage_error("--mode is read, ring, backend or device, not", v);
			mode = v;
			ring_mode = !strcmp(v, "ring");
			backend_mode = !strcmp(v, "backend");
			device_mode = !strcmp(v, "device");
		} else if (!strcmp(a, "--net-opts")) {
			net_opts = v;
		} else if (!strcmp(a, "--reads")) {
			reads = parse_long(v, 1, MAX_READS, a);
		} else if (!strcmp(a, "--frames")) {
			nframes = parse_long(v, 1, MAX_FRAMES, a);
		} else if (!strcmp(a, "--gap-us")) {
			gap_us = parse_long(v, 1, 1000000, a);
		} else if (!strcmp(a, "--tap")) {
			if (strlen(v) >= IFNAMSIZ)
				usage_error("tap name too long", v);
			tap_name = v;
		} else {
			usage_error("unknown option", a);
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	lat = calloc((size_t)nframes, sizeof(*lat));
	if (!lat)
		die("calloc");

	// A previous run's tap lingers while the kernel tears its ring down (milliseconds; see
	// docs/performance.md, *Letting go of the tap*): wait for it to go, 2 s at most.
	for (int i = 0; i < 200 && if_nametoindex(tap_name); i++) {
		struct timespec pause = {.tv_nsec = 10 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	if (*net_opts && !device_mode)
		usage_error("--net-opts goes with --mode device", net_opts);
	struct event_loop loop;
	struct devguest g;
	int fd = -1;
	if (device_mode)
		device_open(&loop, &g, net_opts);
	else if (backend_mode)
		backend_open(&loop);
	else
		fd = tap_open(tap_name, O_NONBLOCK, 0);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap_name);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("SIOCGIFFLAGS");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("SIOCSIFFLAGS");
	close(s);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	struct io_uring ring;
	int efd = -1;
	if (ep < 0)
		die("epoll_create1");
	if (device_mode) {
		// The device started receiving when the driver's buffers came (device_open).
	} else if (backend_mode) {
		// As the device does when the guest posts buffers: receive, then ask to be told of
		// the next frames.
		backend_rx_ready(NULL);
		backend->ops->set_rx_enabled(backend, true);
	} else if (ring_mode) {
		int rc = io_uring_queue_init(MAX_READS, &ring, IORING_SETUP_SINGLE_ISSUER);
		if (rc < 0) {
			errno = -rc;
			die("io_uring_queue_init");
		}
		efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (efd < 0 || (rc = io_uring_register_eventfd(&ring, efd)) < 0)
			die("the ring's eventfd");
		if (epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0)
			die("epoll_ctl");
		for (unsigned i = 0; i < (unsigned)reads; i++)
			queue_read(&ring, fd, i);
		if ((rc = io_uring_submit(&ring)) < 0) {
			errno = -rc;
			die("io_uring_submit");
		}
	} else if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		die("epoll_ctl");
	}

	pthread_t th;
	if (pthread_create(&th, NULL, sender, NULL))
		die("pthread_create");
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	double end = now_s() + (double)nframes * (double)gap_us / 1e6 + 3;
	while (got < nframes && !stop_flag && now_s() < end) {
		if (backend_mode || device_mode) {
			if (event_loop_run_once(&loop, 100) < 0 && errno != EINTR)
				die("event_loop_run_once");
			if (device_mode)
				devguest_poll(&g);
			continue;
		}
		struct epoll_event e;
		int n = epoll_wait(ep, &e, 1, 100); // 100 ms: to see the clock and signals
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		if (n <= 0)
			continue;
		if (!ring_mode) {
			ssize_t r;
			while ((r = read(fd, bounce, sizeof(bounce))) >= 0)
				take(bounce, r);
			if (errno != EAGAIN && errno != EINTR)
				die("read from the tap");
			continue;
		}
		uint64_t count;
		if (read(efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
			die("read the eventfd");
		ring_wake(&ring, fd);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	stop_flag = 1;
	pthread_join(th, NULL);
	if (backend_mode) {
		backend->ops->destroy(backend);
		event_loop_destroy(&loop);
	}
	if (device_mode) {
		// The I/O thread's adaptive polling (poll-us=), as the control socket's io_poll.
		fprintf(
		    stderr,
		    "tapwake: io_poll max_ns=%llu window_ns=%llu polls=%llu polls_found=%llu "
		    "poll_ns=%llu grows=%llu shrinks=%llu loop_iterations=%llu\n",
		    (unsigned long long)loop.poll.max_ns, (unsigned long long)loop.poll.window_ns,
		    (unsigned long long)loop.poll.polls, (unsigned long long)loop.poll.polls_found,
		    (unsigned long long)loop.poll.poll_ns, (unsigned long long)loop.poll.grows,
		    (unsigned long long)loop.poll.shrinks, (unsigned long long)loop.iterations);
		devguest_close(&g, &loop);
		event_loop_destroy(&loop);
	}
	if (got < nframes) {
		fprintf(stderr, "tapwake: %ld of %ld frames came\n", got, nframes);
		return 1;
	}
	double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
	qsort(lat, (size_t)got, sizeof(*lat), cmp_double);
	printf("tapwake: mode=%s%s%s reads=%ld frames=%ld cpu_us_per_frame=%.2f p50_us=%.1f "
	       "p90_us=%.1f p99_us=%.1f\n",
	       mode, *net_opts ? "," : "", net_opts, ring_mode ? reads : 0, got,
	       cpu * 1e6 / (double)got, lat[got / 2] * 1e6, lat[got * 9 / 10] * 1e6,
	       lat[got * 99 / 100] * 1e6);
	return 0;
}
