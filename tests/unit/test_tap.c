/* The tap backend's batched transmit (tx-uring=on) on a real tap: every frame arrives, in
 * order, through io_uring; a frame the tap rejects is dropped in its place without costing
 * the rest of the batch or the ring. Its receive: frames sent on the tap's host side come out
 * of recv whole, in order, once, and not while the device wants none. Frames are captured and
 * injected on the tap's host side with an AF_PACKET socket. Needs CAP_NET_ADMIN and /dev/net/tun
 * (skipped otherwise). The tap is not persistent: it disappears with the backend, also when a test
 * fails. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/io_uring.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "devices/backends/tap.h"
#include "log_capture.h"
#include "base/event_loop.h"

#define ETH_TYPE_LOCAL 0x88b5 /* IEEE local experimental: the host stack ignores it */
#define FRAME_LEN      (NET_HDR_LEN + 64)
#define NR_FRAMES      6

static struct event_loop loop;
static struct net_backend *tap;
static char tap_name[IFNAMSIZ];
static int capture = -1;
static bool loop_ready;
static int rx_ready_calls;

static void no_callback(void *opaque)
{
	(void)opaque;
}

static void rx_ready(void *opaque)
{
	(void)opaque;
	rx_ready_calls++;
}

static void link_down(void *opaque, const char *why)
{
	(void)opaque;
	(void)why;
}

/* Open a tap of our own with io_uring as asked (TAP_URING_*), bring it up, and capture what
 * reaches its host side. */
static void open_tap(unsigned uring)
{
	snprintf(tap_name, sizeof(tap_name), "mvtu%d", (int)(getpid() % 100000));
	cr_assert_eq(event_loop_init(&loop), 0);
	loop_ready = true;
	const struct net_backend_client client = {
	    .rx_ready = rx_ready, .tx_ready = no_callback, .link_down = link_down};
	char err[200];
	tap = tap_backend_open(tap_name, &loop, &client, uring, err, sizeof(err));
	if (!tap) {
		if (strstr(err, "Operation not permitted") || strstr(err, "No such file"))
			cr_skip_test("no tap for this user (%s): needs CAP_NET_ADMIN", err);
		cr_assert_fail("%s", err);
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(s, 0);
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap_name);
	cr_assert_eq(ioctl(s, SIOCGIFFLAGS, &ifr), 0, "SIOCGIFFLAGS: %s", strerror(errno));
	ifr.ifr_flags |= IFF_UP;
	cr_assert_eq(ioctl(s, SIOCSIFFLAGS, &ifr), 0, "SIOCSIFFLAGS: %s", strerror(errno));
	close(s);
	capture = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_TYPE_LOCAL));
	cr_assert_geq(capture, 0, "AF_PACKET: %s", strerror(errno));
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_protocol = htons(ETH_TYPE_LOCAL),
				  .sll_ifindex = (int)if_nametoindex(tap_name)};
	cr_assert_gt(sll.sll_ifindex, 0);
	cr_assert_eq(bind(capture, (struct sockaddr *)&sll, sizeof(sll)), 0);
	/* A bound on waiting for a frame that never comes, not a delay. */
	struct timeval tv = {.tv_sec = 2};
	setsockopt(capture, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static void close_tap(void)
{
	if (capture >= 0)
		close(capture);
	capture = -1;
	if (tap)
		tap->ops->destroy(tap);
	tap = NULL;
	if (loop_ready)
		event_loop_destroy(&loop);
	loop_ready = false;
}

static uint8_t frames[NR_FRAMES][FRAME_LEN];
static struct iovec iovs[NR_FRAMES][2];
static struct net_frame batch[NR_FRAMES];

/* Frame i: a zeroed vnet header, broadcast Ethernet of our type, payload byte 0xa0 + i; the
 * header and the rest in two iovecs, as the device hands them over. */
static void build_batch(void)
{
	for (int i = 0; i < NR_FRAMES; i++) {
		uint8_t *f = frames[i];
		memset(f, 0, FRAME_LEN);
		uint8_t *eth = f + NET_HDR_LEN;
		memset(eth, 0xff, 6);
		const uint8_t src[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
		memcpy(eth + 6, src, 6);
		eth[12] = ETH_TYPE_LOCAL >> 8;
		eth[13] = ETH_TYPE_LOCAL & 0xff;
		memset(eth + 14, 0xa0 + i, FRAME_LEN - NET_HDR_LEN - 14);
		iovs[i][0] = (struct iovec){f, NET_HDR_LEN};
		iovs[i][1] = (struct iovec){eth, FRAME_LEN - NET_HDR_LEN};
		batch[i] = (struct net_frame){.iov = iovs[i], .iovcnt = 2, .rc = 1};
	}
}

/* The tags of our frames seen on the host side, in arrival order, until `want` or a 2 s
 * silence. */
static int captured(uint8_t *tags, int want)
{
	int n = 0;
	uint8_t buf[2048];
	while (n < want) {
		ssize_t len = recv(capture, buf, sizeof(buf), 0);
		if (len < 0)
			break;
		if (len >= 15 && buf[12] == ETH_TYPE_LOCAL >> 8 &&
		    buf[13] == (ETH_TYPE_LOCAL & 0xff))
			tags[n++] = buf[14];
	}
	return n;
}

/* Frames of ours beyond those expected (a frame sent twice). A write into a tap is delivered
 * to packet sockets before the write returns (netif_rx, run as the tap's bottom half ends), so
 * anything extra is queued already: no waiting. */
static int extra_frames(void)
{
	int n = 0;
	uint8_t buf[2048];
	ssize_t len;
	while ((len = recv(capture, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		n += len >= 15 && buf[12] == ETH_TYPE_LOCAL >> 8;
	return n;
}

static void batch_arrives_in_order(bool tx_uring, const char *path)
{
	open_tap(tx_uring ? TAP_URING_TX : 0);
	cr_assert_str_eq(tap->ops->tx_path(tap), path);
	build_batch();
	int took = tap->ops->send_batch(tap, batch, NR_FRAMES);
	cr_assert_eq(took, NR_FRAMES);
	uint8_t tags[NR_FRAMES];
	int n = captured(tags, NR_FRAMES);
	cr_assert_eq(n, NR_FRAMES, "%d of %d frames reached the host", n, NR_FRAMES);
	for (int i = 0; i < NR_FRAMES; i++) {
		cr_assert_eq(batch[i].rc, 0, "frame %d: %d", i, batch[i].rc);
		cr_assert_eq(tags[i], 0xa0 + i, "frame %d out of order", i);
	}
	cr_assert_eq(extra_frames(), 0, "a frame went out twice");
	cr_assert_str_eq(tap->ops->tx_path(tap), path, "still %s after the batch", path);
	close_tap();
}

Test(tap, batch_through_io_uring_arrives_in_order, .fini = close_tap)
{
	batch_arrives_in_order(true, "io_uring");
}

Test(tap, batch_without_tx_uring_is_written_frame_by_frame, .fini = close_tap)
{
	batch_arrives_in_order(false, "writev");
}

/* A vnet header the tap rejects (an unknown GSO type: EINVAL) in the middle of a linked
 * chain: that frame is dropped, the frames after it (cancelled by the link) go again and
 * arrive, in order, and the ring stays in use. */
Test(tap, rejected_frame_mid_batch_is_dropped_alone, .fini = close_tap)
{
	open_tap(TAP_URING_TX);
	build_batch();
	frames[2][1] = 0x7f; /* gso_type */
	int took = tap->ops->send_batch(tap, batch, NR_FRAMES);
	cr_assert_eq(took, NR_FRAMES);
	cr_assert_eq(batch[2].rc, -EINVAL, "rc %d", batch[2].rc);
	uint8_t tags[NR_FRAMES];
	int n = captured(tags, NR_FRAMES - 1);
	cr_assert_eq(n, NR_FRAMES - 1, "%d of %d frames reached the host", n, NR_FRAMES - 1);
	static const uint8_t want[] = {0xa0, 0xa1, 0xa3, 0xa4, 0xa5};
	for (int i = 0; i < NR_FRAMES - 1; i++)
		cr_assert_eq(tags[i], want[i], "arrival %d: %#x", i, tags[i]);
	cr_assert_eq(extra_frames(), 0, "a frame went out twice");
	for (int i = 0; i < NR_FRAMES; i++)
		if (i != 2)
			cr_assert_eq(batch[i].rc, 0, "frame %d: %d", i, batch[i].rc);
	cr_assert_str_eq(tap->ops->tx_path(tap), "io_uring", "one bad frame gave the ring up");
	close_tap();
}

/* This test process only (Criterion runs each test in its own): the system call, or with an
 * opcode the io_uring_register call, fails with EPERM, as where io_uring is disabled. */
static void refuse(const char *name, int register_op)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	cr_assert_not_null(ctx);
	int nr = seccomp_syscall_resolve_name(name);
	int rc = register_op < 0
		     ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)
		     : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
					SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)register_op));
	cr_assert_eq(rc, 0);
	cr_assert_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);
}

/* The kernel refuses the ring at open (io_uring disabled, or too old for DEFER_TASKRUN): a
 * warning, and every frame still goes out, by writev. */
Test(tap, no_ring_at_open_falls_back_to_writev, .fini = close_tap)
{
	refuse("io_uring_setup", -1);
	log_capture_clear();
	batch_arrives_in_order(true, "writev");
	char *log = log_captured();
	cr_assert(strstr(log, "no io_uring ring") && strstr(log, "transmitting with writev"), "%s",
		  log);
	free(log);
}

/* The ring is made but cannot be enabled by the thread that sends (a seccomp filter without
 * that call): given up with a warning at the first batch, which writev then sends whole. */
Test(tap, ring_not_enabled_falls_back_to_writev, .fini = close_tap)
{
	refuse("io_uring_register", IORING_REGISTER_ENABLE_RINGS);
	log_capture_clear();
	open_tap(TAP_URING_TX);
	cr_assert_str_eq(tap->ops->tx_path(tap), "io_uring");
	build_batch();
	cr_assert_eq(tap->ops->send_batch(tap, batch, NR_FRAMES), NR_FRAMES);
	uint8_t tags[NR_FRAMES];
	cr_assert_eq(captured(tags, NR_FRAMES), NR_FRAMES);
	for (int i = 0; i < NR_FRAMES; i++)
		cr_assert_eq(tags[i], 0xa0 + i, "frame %d out of order", i);
	cr_assert_eq(extra_frames(), 0);
	cr_assert_str_eq(tap->ops->tx_path(tap), "writev");
	char *log = log_captured();
	cr_assert(strstr(log, "enabling the ring"), "%s", log);
	free(log);
	close_tap();
}

/* ---- receive ---- */

/* Send our frames 0..n-1 (every payload byte (uint8_t)(0xa0 + i)) on the tap's host side: the
 * tap's reader gets them. */
static void inject(int n)
{
	uint8_t eth[FRAME_LEN - NET_HDR_LEN];
	memset(eth, 0xff, 6);
	const uint8_t src[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x57};
	memcpy(eth + 6, src, 6);
	eth[12] = ETH_TYPE_LOCAL >> 8;
	eth[13] = ETH_TYPE_LOCAL & 0xff;
	for (int i = 0; i < n; i++) {
		memset(eth + 14, (uint8_t)(0xa0 + i), sizeof(eth) - 14);
		ssize_t sent = send(capture, eth, sizeof(eth), 0);
		cr_assert_eq(sent, (ssize_t)sizeof(eth), "inject %d: %s", i, strerror(errno));
	}
}

static uint8_t rx_frame[NET_RX_FRAME_MAX];
static uint8_t rx_tags[NR_FRAMES];
static int rx_got, rx_others, rx_want = NR_FRAMES;

/* Take every frame recv has now: ours (tagged) in rx_tags; the host's own (IPv6 router
 * solicitations and the like) counted apart. Returns recv's last answer (0: empty). */
static ssize_t drain(void)
{
	for (;;) {
		ssize_t n = tap->ops->recv(tap, rx_frame, sizeof(rx_frame));
		if (n <= 0)
			return n;
		const uint8_t *eth = rx_frame + NET_HDR_LEN;
		if (n == FRAME_LEN && eth[12] == ETH_TYPE_LOCAL >> 8 &&
		    eth[13] == (ETH_TYPE_LOCAL & 0xff)) {
			cr_assert_lt(rx_got, rx_want, "a frame came twice");
			for (int b = 14; b < FRAME_LEN - NET_HDR_LEN; b++)
				cr_assert_eq(eth[b], eth[14], "frame %d damaged at byte %d", rx_got,
					     b);
			rx_tags[rx_got++] = eth[14];
		} else {
			rx_others++;
		}
	}
}

/* Run the loop on this thread until recv has given all rx_want of our frames (5 s bound: a
 * frame that never comes fails, it is not waited for), each after the loop said rx_ready. */
static void receive_all(void)
{
	struct timespec end, now;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 5;
	while (rx_got < rx_want) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		cr_assert(now.tv_sec < end.tv_sec ||
			      (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec),
			  "%d of %d frames came (rx_ready %d times)", rx_got, rx_want,
			  rx_ready_calls);
		int calls = rx_ready_calls;
		event_loop_run_once(&loop, 100);
		if (rx_ready_calls != calls)
			cr_assert_eq(drain(), 0);
	}
	for (int i = 0; i < rx_want; i++)
		cr_assert_eq(rx_tags[i], (uint8_t)(0xa0 + i), "frame %d out of order (%#x)", i,
			     rx_tags[i]);
}

Test(tap, frames_are_read_one_by_one_in_order_once, .fini = close_tap)
{
	open_tap(0);
	cr_assert_str_eq(tap->ops->rx_path(tap), "read");
	tap->ops->set_rx_enabled(tap, true);
	cr_assert_eq(drain(), 0, "nothing sent yet");
	inject(rx_want);
	receive_all();
	close_tap();
}

/* While the device wants no frames the loop does not call rx_ready for them (the guest has no
 * buffers: it would spin); asked again, they come. */
Test(tap, paused_receive_calls_no_rx_ready, .fini = close_tap)
{
	open_tap(0);
	tap->ops->set_rx_enabled(tap, true);
	cr_assert_eq(drain(), 0);
	tap->ops->set_rx_enabled(tap, false);
	inject(NR_FRAMES);
	rx_ready_calls = 0;
	event_loop_run_once(&loop, 200); /* a bound: rx_ready must not come */
	cr_assert_eq(rx_ready_calls, 0);
	tap->ops->set_rx_enabled(tap, true);
	receive_all();
	close_tap();
}

/* ---- letting go of the tap ---- */

/* A destroyed backend lets go of its tap at once, so the next VMM (a restore right after the
 * old one was stopped, a restarted test) attaches to the same name: a ring holding the tap as
 * a registered file kept it attached (EBUSY for the next one) for 20-60 ms after the close,
 * until the kernel's asynchronous ring teardown ran. */
static void tap_free_after_destroy_once(unsigned uring)
{
	open_tap(uring);
	tap->ops->set_rx_enabled(tap, true);
	cr_assert_eq(drain(), 0);
	build_batch();
	cr_assert_eq(tap->ops->send_batch(tap, batch, NR_FRAMES), NR_FRAMES);
	tap->ops->destroy(tap);
	tap = NULL;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap_name);
	int rc = ioctl(fd, TUNSETIFF, &ifr);
	int e = errno;
	close(fd);
	cr_assert_eq(rc, 0, "the tap is still held after destroy: %s", strerror(e));
	close_tap();
}

/* Several times: a reference dropped late is a race the kernel often wins anyway. */
static void tap_free_after_destroy(unsigned uring)
{
	for (int i = 0; i < 8; i++)
		tap_free_after_destroy_once(uring);
}

Test(tap, destroyed_backend_lets_go_of_its_tap_at_once, .fini = close_tap)
{
	tap_free_after_destroy(0);
}

Test(tap, destroyed_backend_with_a_tx_ring_lets_go_of_its_tap_at_once, .fini = close_tap)
{
	tap_free_after_destroy(TAP_URING_TX);
}

/* The next VMM waits for the previous one to let go: an attach that finds the tap busy is
 * retried (for up to a second), so a tap released 100 ms later is attached; one that stays
 * busy is refused with a line that says why. */
static int holder = -1;

static int hold_tap(void)
{
	snprintf(tap_name, sizeof(tap_name), "mvtu%d", (int)(getpid() % 100000));
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", tap_name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		cr_skip_test("no tap for this user: %s", strerror(errno));
	return fd;
}

static void *let_go_later(void *arg)
{
	(void)arg;
	/* What is measured is that the open waits, not how long: 100 ms is ten retries. */
	struct timespec t = {.tv_nsec = 100 * 1000 * 1000};
	nanosleep(&t, NULL);
	close(holder);
	holder = -1;
	return NULL;
}

static void release_holder(void)
{
	if (holder >= 0)
		close(holder);
	holder = -1;
	close_tap();
}

Test(tap, attach_waits_for_the_previous_owner_to_let_go, .fini = release_holder)
{
	holder = hold_tap();
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, let_go_later, NULL), 0);
	cr_assert_eq(event_loop_init(&loop), 0);
	loop_ready = true;
	const struct net_backend_client client = {
	    .rx_ready = rx_ready, .tx_ready = no_callback, .link_down = link_down};
	char err[200];
	tap = tap_backend_open(tap_name, &loop, &client, 0, err, sizeof(err));
	pthread_join(th, NULL);
	cr_assert_not_null(tap, "%s", err);
}

Test(tap, attach_to_a_tap_in_use_is_refused, .fini = release_holder)
{
	holder = hold_tap();
	cr_assert_eq(event_loop_init(&loop), 0);
	loop_ready = true;
	const struct net_backend_client client = {
	    .rx_ready = rx_ready, .tx_ready = no_callback, .link_down = link_down};
	char err[200] = "";
	tap = tap_backend_open(tap_name, &loop, &client, 0, err, sizeof(err));
	cr_assert_null(tap);
	cr_assert(strstr(err, "cannot attach to tap") && strstr(err, "another process has it open"),
		  "%s", err);
}
