#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vmm/base/event_loop.h"
#include "vmm/base/log.h"

/* Transmit batches through io_uring (tx-uring=on): frames per submission. */
#define TX_RING_ENTRIES 64

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
	/* tx-uring=on: a ring restricted to linked WRITEVs on the tap (registered as fixed file
	 * 0), created disabled at open and enabled by the first batch, on the I/O thread, which
	 * is then the only thread that may submit to it (SINGLE_ISSUER). */
	struct io_uring ring;
	bool ring_made;	    /* ring exists (destroy it) */
	bool ring_enabled;  /* the first batch enabled it */
	bool ring_disabled; /* it failed once: writev from then on */
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

/* The ring cannot be used (any more): every frame goes through writev. Once: SQEs a failed
 * submission left in the ring must never be submitted later. */
static void ring_give_up(struct tap *t, const char *what, int err)
{
	if (t->ring_disabled)
		return;
	t->ring_disabled = true;
	log_warn("tap %s: io_uring %s: %s; transmitting with writev instead", t->name, what,
		 strerror(err));
}

/* Submit k frames as one linked chain of WRITEVs and wait for all of them. Returns how many
 * were submitted (each frame's rc filled from its completion; a frame after a failed one is
 * -ECANCELED: not sent), or -errno when nothing was. */
static int ring_send_chain(struct tap *t, struct net_frame *f, int k)
{
	for (int i = 0; i < k; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
		if (!sqe) {
			k = i; /* cannot happen: the ring holds TX_RING_ENTRIES and is empty */
			break;
		}
		/* The tap is O_NONBLOCK: a full one completes the write with -EAGAIN at once (no
		 * RWF_NOWAIT: a kernel whose tap lacks FMODE_NOWAIT would refuse every write). */
		io_uring_prep_writev(sqe, 0, f[i].iov, (unsigned)f[i].iovcnt, 0);
		sqe->flags = IOSQE_FIXED_FILE | (i + 1 < k ? IOSQE_IO_LINK : 0);
		sqe->user_data = (uint64_t)i;
		f[i].rc = -ECANCELED;
	}
	int submitted = io_uring_submit_and_wait(&t->ring, (unsigned)k);
	if (submitted < 0)
		return submitted;
	for (int seen = 0; seen < submitted; seen++) {
		struct io_uring_cqe *cqe;
		int rc;
		while ((rc = io_uring_wait_cqe(&t->ring, &cqe)) == -EINTR)
			; /* a signal: the writes were submitted, their completions still come */
		if (rc < 0) {
			/* Never seen: frames not reaped stay -ECANCELED, and go again by writev. */
			ring_give_up(t, "waiting for completions", -rc);
			return submitted;
		}
		if (cqe->user_data < (uint64_t)k)
			f[cqe->user_data].rc = cqe->res < 0 ? cqe->res : 0;
		io_uring_cqe_seen(&t->ring, cqe);
	}
	return submitted;
}

static bool ring_usable(struct tap *t)
{
	if (!t->ring_made || t->ring_disabled)
		return false;
	if (!t->ring_enabled) {
		int rc = io_uring_register(t->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
		if (rc < 0) {
			ring_give_up(t, "enabling the ring", -rc);
			return false;
		}
		t->ring_enabled = true;
	}
	return true;
}

static int tap_send_batch(struct net_backend *be, struct net_frame *f, int n)
{
	struct tap *t = (struct tap *)be;
	int done = 0;
	while (done < n) {
		if (t->gone || !ring_usable(t)) {
			int rc = tap_send(be, f[done].iov, f[done].iovcnt);
			if (rc == -EAGAIN)
				return done;
			f[done++].rc = rc;
			continue;
		}
		int k = n - done < TX_RING_ENTRIES ? n - done : TX_RING_ENTRIES;
		int submitted = ring_send_chain(t, f + done, k);
		if (submitted < 0) {
			ring_give_up(t, "submission", -submitted);
			continue;
		}
		int i = 0;
		while (i < submitted && f[done + i].rc == 0)
			i++;
		done += i;
		if (i == k)
			continue;
		int rc = i < submitted ? f[done].rc : -ECANCELED;
		if (rc == -EAGAIN) {
			update_watch(t, t->events | EPOLLOUT);
			return done; /* the rest of the chain was cancelled: not sent */
		}
		/* The ring failed this frame (or never ran it): writev decides, as it would without
		 * the ring. A frame the tap rejects is dropped; one writev takes means the ring is
		 * at fault, and is given up. The chain behind was cancelled and goes again. */
		int wrc = tap_send(be, f[done].iov, f[done].iovcnt);
		if (wrc == -EAGAIN)
			return done;
		if (wrc == 0)
			ring_give_up(t, "a write that writev then sent", -rc);
		f[done++].rc = wrc;
	}
	return done;
}

static const char *tap_tx_path(struct net_backend *be)
{
	struct tap *t = (struct tap *)be;
	return t->ring_made && !t->ring_disabled ? "io_uring" : "writev";
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
	if (t->ring_made)
		io_uring_queue_exit(&t->ring);
	close(t->fd);
	free(t);
}

static const struct net_backend_ops tap_ops = {
    .name = "tap",
    .send = tap_send,
    .send_batch = tap_send_batch,
    .tx_path = tap_tx_path,
    .recv = tap_recv,
    .offloads_supported = tap_offloads_supported,
    .set_rx_offloads = tap_set_rx_offloads,
    .set_rx_enabled = tap_set_rx_enabled,
    .destroy = tap_destroy,
};

/* tx-uring=on: the ring the batches go through. It can only do what tap_send_batch issues:
 * WRITEV on the tap (fixed file 0, required), linked or not, no other SQE flag and no further
 * io_uring_register call but the I/O thread's ENABLE_RINGS (which the seccomp filter allows it
 * alone). Whoever takes over the VMM cannot use it to open, connect or read files. */
static int tx_ring_init(struct tap *t)
{
	struct io_uring_restriction res[3];
	memset(res, 0, sizeof(res));
	res[0].opcode = IORING_RESTRICTION_SQE_OP;
	res[0].sqe_op = IORING_OP_WRITEV;
	res[1].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[1].sqe_flags = IOSQE_IO_LINK;
	res[2].opcode = IORING_RESTRICTION_SQE_FLAGS_REQUIRED;
	res[2].sqe_flags = IOSQE_FIXED_FILE;
	/* DEFER_TASKRUN: a linked write runs in the submitter's own io_uring_enter instead of
	 * task work queued behind it (one chain of 64: 2.2x the packets of plain links on the
	 * development VM, as fast as unlinked writes). It needs SINGLE_ISSUER (Linux 6.1). */
	int rc = io_uring_queue_init(TX_RING_ENTRIES, &t->ring,
				     IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER |
					 IORING_SETUP_DEFER_TASKRUN);
	if (rc < 0)
		return rc;
	/* Debian 12's liburing 2.3 declares io_uring_register_restrictions() but does not
	 * export it: the raw register call does the same. */
	if ((rc = io_uring_register_files(&t->ring, &t->fd, 1)) < 0 ||
	    (rc = io_uring_register(t->ring.ring_fd, IORING_REGISTER_RESTRICTIONS, res, 3)) < 0) {
		io_uring_queue_exit(&t->ring);
		return rc;
	}
	return 0;
}

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
				     const struct net_backend_client *client, bool tx_uring,
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
	if (tx_uring) {
		int rc = tx_ring_init(t);
		t->ring_made = rc == 0;
		if (rc < 0)
			log_warn(
			    "tap %s: tx-uring=on, but no io_uring ring (%s): transmitting with "
			    "writev",
			    t->name, strerror(-rc));
	}
	/* Receiving starts when the device asks for it (the guest has posted buffers). */
	t->events = 0;
	if (event_loop_add_fd(loop, &t->src, fd, 0, tap_event, t)) {
		snprintf(err, errlen, "tap '%s': cannot watch it", name);
		if (t->ring_made)
			io_uring_queue_exit(&t->ring);
		close(fd);
		free(t);
		return NULL;
	}
	return &t->be;
}
