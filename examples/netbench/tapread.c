// tapread: the ceiling of a tap-backed VMM's host-to-guest path on this host.
//
//   tapread --tap NAME --mac MAC --ip IP [--port P] [--secs N] [--wait-secs N]
//           [--ready-file FILE] [--uring | --uring-epoll | --backend | --device]
//
// Stands where a VMM's I/O thread stands: attaches to the tap as minivmm does (IFF_VNET_HDR,
// non-blocking, no offloads, as for the probe, which takes none) and reads one frame per
// read(), polling when the tap is empty; no guest, no virtqueue, no copy into guest memory.
// It counts the UDP datagrams to IP:PORT (fragments reassembled by position, in order, as the
// tap delivers them) for --secs seconds from the first one, like the probe's udp_sink, and
// answers ARP for IP with MAC, as the guest would. Whatever else arrives is read and ignored.
// --uring reads through io_uring instead: 64 reads into 64 buffers kept in flight, each
// io_uring_enter sending back the buffers taken and waiting for the next frames: what a VMM
// would gain by batching its tap reads (netbench's tapread:uring).
// --uring-epoll receives as minivmm's tap backend did with rx-uring=on, removed since
// (netbench's tapread:uring-epoll): the same 64 reads in flight, on the tap (not a registered
// file), in a SINGLE_ISSUER ring (not DEFER_TASKRUN) whose completions signal an eventfd that an
// event loop (epoll) waits on; each frame is copied out of its ring buffer into one bounce buffer,
// as minivmm copies it into the device's, and taken from there.
// --backend receives with minivmm's own tap backend (devices/backends/tap.c, linked in) on
// minivmm's event loop, taking at most 64 frames per wake before looking again, as the device
// does (netbench's tapread:backend): the code itself, not a stand-in, minus the guest.
// --device goes further: minivmm's virtio-net device on that backend, driven by a fake driver
// that posts 256 buffers of 2 KiB and takes the frames out of guest memory (devguest.h;
// netbench's tapread:device): the VMM's whole receive
// path, tap to guest memory, interrupt and kick eventfds included, minus the guest. Further
// --net options may follow a comma (--device,poll-us=50): the result line's mode says them.
// Output: "tapread: msgs=N bytes=N secs=S mbps=M pps=N frames=N mode=MODE" on
// stdout (bytes: UDP payload; frames: every frame read); exit 1 on an error or when no datagram
// arrived within --wait-secs (default 30), 2 on a usage error (two modes together, too).
// --ready-file FILE is written once attached.
#ifndef _GNU_SOURCE // netbench and make build it with -D_GNU_SOURCE, as minivmm's own code
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>

#define TOOL_NAME "tapread"
#define TOOL_USAGE                                                                                 \
	"usage: tapread --tap NAME --mac MAC --ip IP [--port P] [--secs N] [--wait-secs N] "       \
	"[--ready-file FILE] [--uring | --uring-epoll | --backend | --device]"
#include "tool.h"
#include "tap.h"
#include "devguest.h"

#include "devices/backends/tap.h"
#include "base/event_loop.h"

#define ETH_HLEN  14
#define ARP_LEN	  28
#define UDP_HLEN  8
#define CHECK_GAP 64 // frames between two looks at the clock while frames flow

static uint8_t my_mac[6];
static struct net_backend *backend; // --backend*: minivmm's tap backend, else NULL
static struct devguest *guest;	    // --device*: minivmm's device and the fake driver, else NULL
static uint32_t my_ip;		    // network order
static unsigned my_port;

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

// Answers an ARP request for my_ip, so that the host resolves the "guest" as it would a VM.
static void arp(int fd, const uint8_t *eth, size_t n)
{
	if (n < ETH_HLEN + ARP_LEN)
		return;
	const uint8_t *a = eth + ETH_HLEN;
	if (get16(a) != 1 || get16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4 ||
	    get16(a + 6) != 1 || memcmp(a + 24, &my_ip, 4))
		return;
	uint8_t r[VNET_HLEN + 60] = {0}; // a zeroed header, then a minimum-size frame
	uint8_t *e = r + VNET_HLEN, *ra = e + ETH_HLEN;
	memcpy(e, a + 8, 6);
	memcpy(e + 6, my_mac, 6);
	e[12] = 0x08;
	e[13] = 0x06;
	static const uint8_t reply[8] = {0, 1, 8, 0, 6, 4, 0, 2};
	memcpy(ra, reply, sizeof(reply));
	memcpy(ra + 8, my_mac, 6);
	memcpy(ra + 14, &my_ip, 4);
	memcpy(ra + 18, a + 8, 10); // the requester's MAC and IP
	if (guest) {
		devguest_send(guest, r, sizeof(r));
	} else if (backend) {
		struct iovec iov = {.iov_base = r, .iov_len = sizeof(r)};
		int rc = backend->ops->send(backend, &iov, 1);
		if (rc < 0 && rc != -EAGAIN) {
			errno = -rc;
			die("the tap backend's send");
		}
	} else if (write(fd, r, sizeof(r)) != (ssize_t)sizeof(r) && errno != EAGAIN) {
		die("write to the tap");
	}
}

// The datagram being reassembled: fragments arrive in order, each where the last one ended.
static struct {
	bool active;
	unsigned id, next, total;
} frag;

// The UDP payload length of the datagram to my_ip:my_port this frame completes, or -1.
static long udp_datagram(const uint8_t *eth, size_t n)
{
	if (n < ETH_HLEN + 20)
		return -1;
	const uint8_t *ip = eth + ETH_HLEN;
	unsigned ihl = (ip[0] & 15u) * 4, tot = get16(ip + 2);
	if (ip[0] >> 4 != 4 || ihl < 20 || tot < ihl || ETH_HLEN + (size_t)tot > n ||
	    ip[9] != IPPROTO_UDP || memcmp(ip + 16, &my_ip, 4))
		return -1;
	unsigned fo = get16(ip + 6), off = (fo & 0x1fff) * 8, id = get16(ip + 4);
	unsigned len = tot - ihl;
	const uint8_t *udp = ip + ihl;
	if (off == 0) {
		frag.active =
		    len >= UDP_HLEN && get16(udp + 2) == my_port && get16(udp + 4) >= UDP_HLEN;
		frag.id = id;
		frag.next = len;
		frag.total = frag.active ? get16(udp + 4) : 0;
	} else if (frag.active && id == frag.id && off == frag.next) {
		frag.next += len;
	} else {
		frag.active = false;
	}
	if (fo & 0x2000 || !frag.active)
		return -1;
	frag.active = false;
	return frag.next == frag.total ? (long)frag.total - UDP_HLEN : -1;
}

#define BATCH 64 // --uring: reads per io_uring_enter

static unsigned long long msgs, bytes, frames;
static double first;

// One frame read from the tap: count it, answer it if it is ARP for us.
static void take(int fd, const uint8_t *buf, size_t n)
{
	frames++;
	if (n < VNET_HLEN + ETH_HLEN)
		return;
	const uint8_t *eth = buf + VNET_HLEN;
	size_t len = n - VNET_HLEN;
	unsigned type = get16(eth + 12);
	long payload = type == 0x0800 ? udp_datagram(eth, len) : -1;
	if (type == 0x0806)
		arp(fd, eth, len);
	if (payload >= 0) {
		if (!msgs++)
			first = now_s();
		bytes += (unsigned long long)payload;
	}
}

// One read(): frames taken (0 or 1), or -1 when the tap is empty.
static int read_one(int fd)
{
	static uint8_t buf[VNET_HLEN + 65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n >= 0) {
		take(fd, buf, (size_t)n);
		return 1;
	}
	if (errno == EINTR)
		return 0;
	if (errno != EAGAIN)
		die("read from the tap");
	return -1;
}

// --uring: BATCH reads kept in flight, one per buffer. A read of an empty tap waits (io_uring
// arms a poll for it), so each io_uring_enter sends back the buffers taken and waits for at
// least one completion (100 ms at most: to see the clock and signals); every completion
// there is taken, in completion order (the order the reads ran, which is the tap's). Returns
// frames taken, or -1 when none came.
static uint8_t ring_buf[BATCH][VNET_HLEN + 65536];

// Queues (does not submit) a read of the tap (fd) into ring_buf[i].
static void read_prep(struct io_uring *ring, int fd, unsigned i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe) { // cannot happen: BATCH reads in flight at most, in a ring of BATCH entries
		errno = EOVERFLOW;
		die("io_uring submission queue full");
	}
	io_uring_prep_read(sqe, fd, ring_buf[i], sizeof(ring_buf[i]), 0);
	sqe->user_data = i;
}

static void read_submit(struct io_uring *ring, int fd, unsigned i)
{
	read_prep(ring, fd, i);
}

static int read_batch(struct io_uring *ring, int fd)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {.tv_nsec = 100 * 1000 * 1000};
	int rc = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL);
	if (rc < 0 && rc != -ETIME && rc != -EINTR) {
		errno = -rc;
		die("io_uring_submit_and_wait_timeout");
	}
	// One pass: take each frame, then send its buffer back. (A second pass over the CQ could
	// see completions the first did not: an ARP answer's write() runs task work on its way
	// back, which may post more, and their buffers would go back twice.)
	int got = 0;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(ring, head, cqe)
	{
		unsigned i = (unsigned)(cqe->user_data % BATCH);
		seen++;
		if (cqe->res >= 0) {
			take(fd, ring_buf[i], (size_t)cqe->res);
			got++;
		} else if (cqe->res != -EAGAIN && cqe->res != -EINTR) {
			errno = -cqe->res;
			die("io_uring read from the tap");
		}
		read_submit(ring, fd, i);
	}
	io_uring_cq_advance(ring, seen);
	return got ? got : -1;
}

// --uring-epoll: one wake of the event loop. The ring (SINGLE_ISSUER) signals efd when it posts
// completions, and epfd watches efd (level-triggered), so: wait on
// epfd (100 ms at most: to see the clock and signals); on a wake, clear efd first (a signal
// after that is a wake to come, not one lost), then take every completion there is: when the CQ
// looks empty, io_uring_submit_and_get_events sends back the buffers taken (and runs the reads
// whose frames came, if they still wait for this task), once; still none ends the wake. Each frame
// is copied from its ring buffer into one bounce buffer and taken from there (minivmm copies every
// frame into its device's buffer), and a new read of that ring buffer is queued, to go with the
// next submit. After CHECK_GAP frames it returns to let the caller see the clock, and the next call
// goes on where it stopped, without waiting (the eventfd, cleared, says nothing of what is
// left). Returns frames taken, or -1 when none came.
static uint8_t bounce[VNET_HLEN + 65536];

static int read_wake(struct io_uring *ring, int tap, int efd, int epfd)
{
	static bool in_wake; // the last call stopped at CHECK_GAP frames
	if (!in_wake) {
		struct epoll_event ev;
		int n = epoll_wait(epfd, &ev, 1, 100);
		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		if (n <= 0)
			return -1;
		uint64_t count;
		if (read(efd, &count, sizeof(count)) < 0 && errno != EAGAIN && errno != EINTR)
			die("read the eventfd");
	}
	in_wake = false;
	int got = 0;
	for (;;) {
		if (got == CHECK_GAP) {
			in_wake = true;
			break;
		}
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(ring, &cqe)) {
			int rc = io_uring_submit_and_get_events(ring);
			if (rc < 0 && rc != -EINTR) {
				errno = -rc;
				die("io_uring_submit_and_get_events");
			}
			if (io_uring_peek_cqe(ring, &cqe))
				break;
		}
		unsigned i = (unsigned)(cqe->user_data % BATCH);
		int res = cqe->res;
		if (res >= 0) {
			size_t len = (size_t)res < sizeof(bounce) ? (size_t)res : sizeof(bounce);
			memcpy(bounce, ring_buf[i], len);
			take(tap, bounce, len);
			got++;
		} else if (res != -EAGAIN && res != -EINTR && res != -ECANCELED) {
			errno = -res;
			die("io_uring read from the tap");
		}
		read_prep(ring, tap, i);
		io_uring_cqe_seen(ring, cqe);
	}
	return got ? got : -1;
}

// --backend: one wake's frames, as the device takes them (RX_BATCH in devices/virtio/net.c):
// at most BATCH, each into the device's one buffer (bounce); more_pending says a full batch
// was taken, so the caller comes back without waiting (the device's bottom half).
static bool more_pending;

static void backend_rx_ready(void *opaque)
{
	(void)opaque;
	int n = 0;
	ssize_t len = 0;
	while (n < BATCH && (len = backend->ops->recv(backend, bounce, sizeof(bounce))) > 0) {
		take(-1, bounce, (size_t)len);
		n++;
	}
	if (len < 0) {
		errno = (int)-len;
		die("the tap backend's recv");
	}
	more_pending = n == BATCH;
}

static void backend_open(struct event_loop *loop, const char *tap)
{
	backend = dg_backend_open(loop, tap, backend_rx_ready);
	struct net_offloads none = {0}; // plain frames, IP fragments above the MTU
	if (backend->ops->set_rx_offloads(backend, &none) < 0)
		die("the tap backend's set_rx_offloads");
	// As the device does once the guest has posted buffers: receive, then ask to be told of
	// the next frames.
	backend_rx_ready(NULL);
	backend->ops->set_rx_enabled(backend, true);
}

// --device: a frame the fake driver took out of guest memory.
static void device_take(const uint8_t *frame, size_t len)
{
	take(-1, frame, len);
}

static void device_open(struct event_loop *loop, struct devguest *g, const char *tap,
			const char *more)
{
	if (event_loop_init(loop) < 0)
		die("event_loop_init");
	char options[256];
	if (snprintf(options, sizeof(options), "tap=%s,offload=off%s", tap, more) >=
	    (int)sizeof(options))
		usage_error("--device options too long", more);
	devguest_open(g, loop, options, device_take);
	guest = g;
	// The activation's first receive; a turn of the loop runs it.
	if (event_loop_run_once(loop, 0) < 0 && errno != EINTR)
		die("event_loop_run_once");
	const char *path = devguest_rx_path(g);
	if (strcmp(path, "read")) {
		fprintf(stderr, "tapread: the device's backend receives by %s\n", path);
		exit(1);
	}
}

// --device: one turn of the event loop, then the driver's look at the receive queue.
static int device_wake(struct event_loop *loop, struct devguest *g)
{
	unsigned long long before = frames;
	if (event_loop_run_once(loop, 100) < 0 && errno != EINTR) // 100 ms: the clock
		die("event_loop_run_once");
	devguest_poll(g);
	return frames > before ? (int)(frames - before) : -1;
}

// --backend: one turn of the event loop (none when a full batch left more to take). Returns
// frames taken, or -1 when none came.
static int backend_wake(struct event_loop *loop)
{
	unsigned long long before = frames;
	if (more_pending)
		backend_rx_ready(NULL);
	else if (event_loop_run_once(loop, 100) < 0 && errno != EINTR) // 100 ms: the clock
		die("event_loop_run_once");
	return frames > before ? (int)(frames - before) : -1;
}

int main(int argc, char **argv)
{
	const char *tap = NULL, *mac = NULL, *ip = NULL, *ready = NULL;
	long port = 9000, secs = 2, wait_secs = 30;
	bool uring = false, uring_epoll = false, be = false, dev = false;
	const char *dev_mode = "device", *dev_opts = ""; // --device...,OPTS: more --net options
	int modes = 0;					 // mode flags given: one at most
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--uring")) {
			uring = true;
			modes++;
			continue;
		}
		if (!strcmp(a, "--uring-epoll")) {
			uring_epoll = true;
			modes++;
			continue;
		}
		if (!strncmp(a, "--device", 8) && (!a[8] || a[8] == ',')) {
			dev = true;
			dev_mode = a + 2; // device[,OPTS]: the result line's mode
			dev_opts = a + 8;
			modes++;
			continue;
		}
		if (!strcmp(a, "--backend")) {
			be = true;
			modes++;
			continue;
		}
		if (i + 1 >= argc)
			usage_error("missing value for", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--tap"))
			tap = v;
		else if (!strcmp(a, "--mac"))
			mac = v;
		else if (!strcmp(a, "--ip"))
			ip = v;
		else if (!strcmp(a, "--port"))
			port = parse_long(v, 1, 65535, a);
		else if (!strcmp(a, "--secs"))
			secs = parse_long(v, 1, 3600, a);
		else if (!strcmp(a, "--wait-secs"))
			wait_secs = parse_long(v, 1, 3600, a);
		else if (!strcmp(a, "--ready-file"))
			ready = v;
		else
			usage_error("unknown option", a);
	}
	if (modes > 1)
		usage_error("--uring, --uring-epoll, --backend and --device exclude each other",
			    NULL);
	if (!tap || !mac || !ip)
		usage_error("--tap, --mac and --ip are required", NULL);
	if (strlen(tap) >= IFNAMSIZ)
		usage_error("tap name too long", tap);
	parse_mac(mac, my_mac);
	my_ip = parse_ip(ip, "--ip");
	my_port = (unsigned)port;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	struct event_loop loop;
	struct devguest g;
	int fd = -1;
	if (dev) {
		device_open(&loop, &g, tap, dev_opts);
	} else if (be) {
		backend_open(&loop, tap);
	} else {
		fd = tap_open(tap, O_NONBLOCK, 0);
		if (ioctl(fd, TUNSETOFFLOAD, 0) < 0) // plain frames, IP fragments above the MTU
			die("TUNSETOFFLOAD");
	}
	if (ready) {
		FILE *f = fopen(ready, "w");
		if (!f)
			die("ready file");
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}

	struct io_uring ring;
	if (uring) {
		int rc = io_uring_queue_init(BATCH, &ring, 0);
		if (rc < 0) {
			errno = -rc;
			die("io_uring_queue_init");
		}
		for (unsigned i = 0; i < BATCH; i++)
			read_submit(&ring, fd, i);
	}
	int efd = -1, epfd = -1;
	if (uring_epoll) {
		int rc = io_uring_queue_init(
		    // Not DEFER_TASKRUN: with it the eventfd missed completions (Linux 6.18: frames
		    // found waiting at 50-120 of the epoll timeouts of a 2 s run; 0-2 without).
		    BATCH, &ring, IORING_SETUP_SINGLE_ISSUER);
		if (rc < 0) {
			errno = -rc;
			die("io_uring_queue_init (SINGLE_ISSUER)");
		}
		efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (efd < 0)
			die("eventfd");
		if ((rc = io_uring_register_eventfd(&ring, efd)) < 0) {
			errno = -rc;
			die("io_uring_register_eventfd");
		}
		epfd = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN};
		if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) < 0)
			die("epoll");
		for (unsigned i = 0; i < BATCH; i++)
			read_prep(&ring, fd, i);
		if ((rc = io_uring_submit(&ring)) < 0) {
			errno = -rc;
			die("io_uring_submit");
		}
	}
	double start = now_s(), t = start;
	unsigned since_check = 0;
	while (!stop_flag) {
		int got = dev		? device_wake(&loop, &g)
			  : be		? backend_wake(&loop)
			  : uring_epoll ? read_wake(&ring, fd, efd, epfd)
			  : uring	? read_batch(&ring, fd)
					: read_one(fd);
		if (got < 0) { // the tap was empty: wait (the rings waited already), see the clock
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (!uring && !uring_epoll && !be && !dev && poll(&p, 1, 100) < 0 &&
			    errno != EINTR) // 100 ms: to see the clock and signals
				die("poll");
			since_check = CHECK_GAP;
		} else {
			since_check += (unsigned)got;
		}
		if (since_check < CHECK_GAP)
			continue;
		since_check = 0;
		t = now_s();
		if (msgs ? t - first >= (double)secs : t - start >= (double)wait_secs)
			break;
	}
	if (dev) {
		// What the device asked of the (missing) guest: interrupts and kicks per frame.
		fprintf(stderr,
			"tapread: device: %llu frames, %llu interrupts (%.4f per frame), %llu "
			"kicks (%.4f per frame)\n",
			frames, g.irqs, frames ? (double)g.irqs / (double)frames : 0, g.kicks,
			frames ? (double)g.kicks / (double)frames : 0);
		devguest_close(&g, &loop);
		event_loop_destroy(&loop);
	} else if (be) {
		backend->ops->destroy(backend);
		event_loop_destroy(&loop);
	} else {
		close(fd);
	}
	if (!msgs) {
		fprintf(stderr, "tapread: no datagram to %s port %ld arrived\n", ip, port);
		return 1;
	}
	double el = t - first;
	printf("tapread: msgs=%llu bytes=%llu secs=%.3f mbps=%.2f pps=%.0f frames=%llu mode=%s\n",
	       msgs, bytes, el, el > 0 ? (double)bytes * 8 / el / 1e6 : 0,
	       el > 0 ? (double)msgs / el : 0, frames,
	       dev	     ? dev_mode
	       : be	     ? "backend"
	       : uring_epoll ? "uring-epoll"
	       : uring	     ? "uring"
			     : "read");
	return 0;
}
