#include "tap.h"

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
#include <unistd.h>

#include "vmm/base/event_loop.h"
#include "vmm/base/log.h"

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif

struct tap {
	struct net_backend be;
	int fd;
	char name[IFNAMSIZ];
	struct event_source src;
	uint32_t events; /* what we watch: EPOLLIN when the guest has room, EPOLLOUT when full */
	bool gone;
	struct net_offloads supported;
};

static void update_watch(struct tap *t, uint32_t events)
{
	if (t->gone || events == t->events)
		return;
	t->events = events;
	event_loop_mod_fd(t->be.loop, &t->src, events);
}

static void mark_gone(struct tap *t, const char *why)
{
	if (t->gone)
		return;
	t->gone = true;
	/* Stop watching: a dead tap fd reports errors forever and would spin the loop. */
	event_loop_del_fd(t->be.loop, &t->src);
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
		update_watch(t, t->events & ~(uint32_t)EPOLLOUT);
		t->be.client.tx_ready(t->be.client.opaque);
	}
	if ((events & EPOLLIN) && t->be.client.rx_ready)
		t->be.client.rx_ready(t->be.client.opaque);
}

static int tap_send(struct net_backend *be, const struct iovec *iov, int iovcnt)
{
	struct tap *t = (struct tap *)be;
	if (t->gone)
		return -ENODEV;
	for (;;) {
		ssize_t n = writev(t->fd, iov, iovcnt);
		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			update_watch(t, t->events | EPOLLOUT);
			return -EAGAIN;
		}
		int e = errno;
		if (e == EBADFD || e == EIO || e == ENXIO || e == ENODEV)
			mark_gone(t, strerror(e));
		return -e;
	}
}

static ssize_t tap_recv(struct net_backend *be, uint8_t *buf, size_t len)
{
	struct tap *t = (struct tap *)be;
	if (t->gone)
		return -ENODEV;
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
	update_watch(t, enabled ? t->events | EPOLLIN : t->events & ~(uint32_t)EPOLLIN);
}

static void tap_destroy(struct net_backend *be)
{
	struct tap *t = (struct tap *)be;
	if (!t->gone)
		event_loop_del_fd(t->be.loop, &t->src);
	close(t->fd);
	free(t);
}

static const struct net_backend_ops tap_ops = {
    .name = "tap",
    .send = tap_send,
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

struct net_backend *tap_backend_open(const char *name, struct event_loop *loop,
				     const struct net_backend_client *client, char *err,
				     size_t errlen)
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
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot attach to tap '%s': %s%s", name, strerror(e),
			 e == EPERM ? " (create it first: ip tuntap add NAME mode tap user $USER, "
				      "or run with CAP_NET_ADMIN)"
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
	snprintf(t->name, sizeof(t->name), "%s", ifr.ifr_name);
	probe_offloads(t);
	/* Receiving starts when the device asks for it (the guest has posted buffers). */
	t->events = 0;
	if (event_loop_add_fd(loop, &t->src, fd, 0, tap_event, t)) {
		snprintf(err, errlen, "tap '%s': cannot watch it", name);
		close(fd);
		free(t);
		return NULL;
	}
	return &t->be;
}
