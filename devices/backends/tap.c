/* The tap backend on its default path, top to bottom: one writev per frame sent, one read() per
 * frame received, the tap's EPOLLIN and EPOLLOUT on the I/O thread's loop. The io_uring path
 * (tx-uring=on) is in tap_uring.c (tap_internal.h says what crosses). */
#include "tap.h"
#include "tap_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/event_loop.h"
#include "base/log.h"

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif

static void watch_in(struct event_watch *w, bool on)
{
	event_watch_change(w, on ? EPOLLIN : 0, on ? 0 : EPOLLIN);
}

/* What tells the loop that frames wait: the tap's EPOLLIN, while the device wants frames. */
static void update_rx_watch(struct tap *t)
{
	watch_in(&t->watch, t->rx_wanted);
}

static void mark_gone(struct tap *t, const char *why)
{
	if (__atomic_exchange_n(&t->gone, true, __ATOMIC_ACQ_REL))
		return;
	/* Stop watching: a dead tap fd reports errors forever and would spin the loop. */
	event_watch_remove(&t->watch);
	if (t->be.client.link_down)
		t->be.client.link_down(t->be.client.opaque, why);
}

static void tap_event(void *opaque, uint32_t events)
{
	struct tap *t = opaque;
	if (events & (EPOLLERR | EPOLLHUP)) {
		mark_gone(t, "the tap device reported an error (was it deleted?)");
		return;
	}
	if ((events & EPOLLOUT) && t->be.client.tx_ready) {
		event_watch_change(&t->watch, 0, EPOLLOUT);
		t->be.client.tx_ready(t->be.client.opaque);
	}
	if ((events & EPOLLIN) && t->be.client.rx_ready)
		t->be.client.rx_ready(t->be.client.opaque);
}

static int tap_send(struct net_backend *be, const struct iovec *iov, int iovcnt)
{
	struct tap *t = (struct tap *)be;
	if (is_gone(t))
		return -ENODEV;
	for (;;) {
		ssize_t n = writev(t->fd, iov, iovcnt);
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			event_watch_change(&t->watch, EPOLLOUT, 0);
			return -EAGAIN;
		}
		int e = errno;
		if (e == EBADFD || e == EIO || e == ENXIO || e == ENODEV)
			mark_gone(t, strerror(e));
		return -e;
	}
}

static const char *tap_tx_path(struct net_backend *be)
{
	struct tap *t = (struct tap *)be;
	return t->uring && tap_uring_tx_in_use(t) ? "io_uring" : "writev";
}

static const char *tap_rx_path(struct net_backend *be)
{
	(void)be;
	return "read";
}

/* One read() of the tap: the frame's length, 0 when the tap is empty, or -errno (it is gone). */
static ssize_t read_frame(struct tap *t, uint8_t *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(t->fd, buf, len);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN)
			return 0;
		int e = errno;
		mark_gone(t, strerror(e));
		return -e;
	}
}

static ssize_t tap_recv(struct net_backend *be, uint8_t *buf, size_t len)
{
	struct tap *t = (struct tap *)be;
	if (is_gone(t))
		return -ENODEV;
	return read_frame(t, buf, len);
}

static void tap_offloads_supported(struct net_backend *be, struct net_offloads *out)
{
	*out = ((struct tap *)be)->supported;
}

static unsigned tun_flags(const struct net_offloads *o)
{
	unsigned f = 0;
	if (o->csum) {
		f |= TUN_F_CSUM;
		if (o->tso4)
			f |= TUN_F_TSO4;
		if (o->tso6)
			f |= TUN_F_TSO6;
		if (o->ecn && (o->tso4 || o->tso6))
			f |= TUN_F_TSO_ECN;
		if (o->uso)
			f |= TUN_F_USO4 | TUN_F_USO6;
	}
	return f;
}

static int tap_set_rx_offloads(struct net_backend *be, const struct net_offloads *o)
{
	struct tap *t = (struct tap *)be;
	if (ioctl(t->fd, TUNSETOFFLOAD, tun_flags(o)) < 0) {
		log_warn("tap %s: TUNSETOFFLOAD: %s", t->name, strerror(errno));
		return -1;
	}
	return 0;
}

static void tap_set_rx_enabled(struct net_backend *be, bool enabled)
{
	struct tap *t = (struct tap *)be;
	t->rx_wanted = enabled;
	update_rx_watch(t);
}

/* What is left once nothing watches the tap. */
static void free_tap(struct tap *t)
{
	event_watch_destroy(&t->watch);
	if (t->uring)
		tap_uring_free(t);
	close(t->fd);
	free(t);
}

static void tap_destroy(struct net_backend *be)
{
	struct tap *t = (struct tap *)be;
	event_watch_remove(&t->watch);
	free_tap(t);
}

static const struct net_backend_ops tap_ops = {
    .name = "tap",
    .send = tap_send,
    .send_batch = tap_send_batch, /* tap_uring.c */
    .tx_path = tap_tx_path,
    .rx_path = tap_rx_path,
    .recv = tap_recv,
    .offloads_supported = tap_offloads_supported,
    .set_rx_offloads = tap_set_rx_offloads,
    .set_rx_enabled = tap_set_rx_enabled,
    .destroy = tap_destroy,
};

/* Probe which offload combinations this kernel's tap accepts (USO is new in Linux 6.2). */
static void probe_offloads(struct tap *t)
{
	struct net_offloads all = {.csum = true, .tso4 = true, .tso6 = true, .ecn = true};
	if (ioctl(t->fd, TUNSETOFFLOAD, tun_flags(&all)) == 0)
		t->supported = all;
	else if (ioctl(t->fd, TUNSETOFFLOAD, TUN_F_CSUM) == 0)
		t->supported.csum = true;
	struct net_offloads uso = t->supported;
	uso.uso = true;
	if (t->supported.csum && ioctl(t->fd, TUNSETOFFLOAD, tun_flags(&uso)) == 0)
		t->supported = uso;
	ioctl(t->fd, TUNSETOFFLOAD, 0); /* nothing until the guest accepts offloads */
}

/* A tap without IFF_MULTI_QUEUE takes one file at a time, and the previous one lets go only
 * when the kernel has dropped every reference to it: a VMM that just exited may hold it for a
 * few milliseconds more (its io_uring requests are cancelled asynchronously). So EBUSY is
 * retried, every 10 ms for up to a second, before it is believed (a restore right after the
 * original was stopped, a test that starts the next VM at once). */
#define ATTACH_RETRY_MS 10
#define ATTACH_TRIES	100

static int attach(int fd, struct ifreq *ifr)
{
	for (int i = 0;; i++) {
		if (ioctl(fd, TUNSETIFF, ifr) == 0)
			return 0;
		if (errno != EBUSY || i + 1 >= ATTACH_TRIES)
			return -1;
		struct timespec pause = {.tv_nsec = ATTACH_RETRY_MS * 1000000L};
		while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
			;
	}
}

struct net_backend *tap_backend_open(const char *name, struct event_loop *loop,
				     const struct net_backend_client *client, unsigned uring,
				     char *err, size_t errlen)
{
	if (strlen(name) >= IFNAMSIZ) {
		snprintf(err, errlen, "tap name '%s' is longer than %d characters", name,
			 IFNAMSIZ - 1);
		return NULL;
	}
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open /dev/net/tun: %s", strerror(errno));
		return NULL;
	}
	struct ifreq ifr = {.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (attach(fd, &ifr) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot attach to tap '%s': %s%s", name, strerror(e),
			 e == EPERM ? " (create it first: ip tuntap add NAME mode tap user $USER, "
				      "or run with CAP_NET_ADMIN)"
			 : e == EBUSY ? " (another process has it open)"
				      : "");
		close(fd);
		return NULL;
	}
	int hdr = NET_HDR_LEN;
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0) {
		snprintf(err, errlen, "tap '%s': TUNSETVNETHDRSZ: %s", name, strerror(errno));
		close(fd);
		return NULL;
	}
	/*
	 * The tap's send buffer: how much this fd may have queued in the host stack before writes
	 * get EAGAIN. QEMU sets INT_MAX ("unlimited", its default sndbuf=0) on every tap it opens;
	 * so do we, to compare like with like. Current Linux gives every fd it attaches to a tap
	 * INT_MAX already (even after a previous user of a persistent tap set less), so this makes
	 * the setting explicit rather than changing it. Set-up only: the seccomp filters do not
	 * allow TUNSETSNDBUF, and nothing needs it later. QEMU ignores a failure here; we warn.
	 */
	int sndbuf = INT_MAX;
	if (ioctl(fd, TUNSETSNDBUF, &sndbuf) < 0)
		log_warn("tap %s: TUNSETSNDBUF: %s", name, strerror(errno));
	struct tap *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return NULL;
	}
	t->be.ops = &tap_ops;
	t->be.client = *client;
	t->be.loop = loop;
	t->fd = fd;
	event_watch_init(&t->watch, loop);
	snprintf(t->name, sizeof(t->name), "%s", ifr.ifr_name);
	probe_offloads(t);
	if (uring & TAP_URING_TX)
		tap_uring_open(t); /* tx-uring=on: tap_uring.c */
	/* Receiving starts when the device asks for it (the guest has posted buffers). */
	if (event_watch_add(&t->watch, fd, 0, tap_event, t) < 0) {
		snprintf(err, errlen, "tap '%s': cannot watch it", name);
		event_watch_remove(&t->watch);
		free_tap(t);
		return NULL;
	}
	return &t->be;
}

/* For tap_uring.c (tap_internal.h): the default path's own call, which it makes directly. */

int tap_write_frame(struct net_backend *be, const struct iovec *iov, int iovcnt)
{
	return tap_send(be, iov, iovcnt);
}
