/* The tap backend's io_uring paths: tx-uring=on writes each transmit batch as one chain of
 * linked WRITEVs (send_batch); rx-uring=on keeps reads of the tap in flight and reaps them in
 * batches. Each falls back, with a warning, to tap.c's writev or read() where the kernel refuses
 * its ring. tap.c calls in here only when a ring was asked for (t->uring). */
#include "tap.h"
#include "tap_internal.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/event_loop.h"
#include "base/log.h"

/* Transmit batches through io_uring (tx-uring=on): frames per submission. */
#define TX_RING_ENTRIES 64
/* Receive through io_uring (rx-uring=on): reads kept in flight, one buffer each. */
#define RX_RING_ENTRIES 64

/* One of the tap's io_urings: restricted to the operations this file issues (ring_init), created
 * disabled at open and enabled by its first use, on the I/O thread, which is then the only
 * thread that may submit to it (SINGLE_ISSUER). */
struct tap_ring {
	struct io_uring ring;
	const char *fallback; /* the warning's end when it is given up */
	bool made;	      /* the ring exists (destroy it) */
	bool enabled;	      /* its first use enabled it */
	bool disabled;	      /* it failed once: the plain system call from then on */
};

struct tap_uring {
	/* tx-uring=on: linked WRITEVs of each batch. */
	struct tap_ring tx;
	/* rx-uring=on: RX_RING_ENTRIES READs kept in flight, each into its own buffer of
	 * rx_bufs. A read of an empty tap waits (io_uring arms a poll); when a frame comes it
	 * runs as task work of the I/O thread (its submitter) and posts its completion, and the
	 * kernel signals rx_efd, which the loop watches instead of the tap's EPOLLIN. */
	struct tap_ring rx;
	uint8_t *rx_bufs;
	int rx_efd;
	struct event_watch rx_efd_watch;
	bool rx_started;      /* the reads were queued (on the ring's first use) */
	unsigned rx_inflight; /* reads submitted and not reaped */
};

static void ring_destroy(struct tap_ring *r)
{
	if (r->made)
		io_uring_queue_exit(&r->ring);
	r->made = false;
}

static bool ring_in_use(const struct tap_ring *r)
{
	return r->made && !r->disabled;
}

/* The ring cannot be used (any more): every frame goes through the plain system call. Once:
 * SQEs a failed submission left in the ring must never be submitted later. */
static void ring_give_up(struct tap *t, struct tap_ring *r, const char *what, int err)
{
	if (r->disabled)
		return;
	r->disabled = true;
	log_warn("tap %s: io_uring %s: %s; %s instead", t->name, what, strerror(err), r->fallback);
}

/* Enables the ring on its first use (which makes this thread its only submitter). */
static bool ring_usable(struct tap *t, struct tap_ring *r)
{
	if (!ring_in_use(r))
		return false;
	if (!r->enabled) {
		int rc = io_uring_register(r->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
		if (rc < 0) {
			ring_give_up(t, r, "enabling the ring", -rc);
			return false;
		}
		r->enabled = true;
	}
	return true;
}

/* Submit k frames as one linked chain of WRITEVs and wait for all of them. Returns how many
 * were submitted (each frame's rc filled from its completion; a frame after a failed one is
 * -ECANCELED: not sent), or -errno when nothing was. */
static int ring_send_chain(struct tap *t, struct net_frame *f, int k)
{
	struct tap_uring *u = t->uring;
	for (int i = 0; i < k; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->tx.ring);
		if (!sqe) {
			k = i; /* cannot happen: the ring holds TX_RING_ENTRIES and is empty */
			break;
		}
		/* The tap is O_NONBLOCK: a full one completes the write with -EAGAIN at once (no
		 * RWF_NOWAIT: a kernel whose tap lacks FMODE_NOWAIT would refuse every write). */
		io_uring_prep_writev(sqe, t->fd, f[i].iov, (unsigned)f[i].iovcnt, 0);
		sqe->flags = i + 1 < k ? IOSQE_IO_LINK : 0;
		sqe->user_data = (uint64_t)i;
		f[i].rc = -ECANCELED;
	}
	int submitted = io_uring_submit_and_wait(&u->tx.ring, (unsigned)k);
	if (submitted < 0)
		return submitted;
	for (int seen = 0; seen < submitted; seen++) {
		struct io_uring_cqe *cqe;
		int rc;
		while ((rc = io_uring_wait_cqe(&u->tx.ring, &cqe)) == -EINTR)
			; /* a signal: the writes were submitted, their completions still come */
		if (rc < 0) {
			/* Never seen: frames not reaped stay -ECANCELED, and go again by writev. */
			ring_give_up(t, &u->tx, "waiting for completions", -rc);
			return submitted;
		}
		if (cqe->user_data < (uint64_t)k)
			f[cqe->user_data].rc = cqe->res < 0 ? cqe->res : 0;
		io_uring_cqe_seen(&u->tx.ring, cqe);
	}
	return submitted;
}

int tap_send_batch(struct net_backend *be, struct net_frame *f, int n)
{
	struct tap *t = (struct tap *)be;
	struct tap_uring *u = t->uring;
	int done = 0;
	while (done < n) {
		if (is_gone(t) || !u || !ring_usable(t, &u->tx)) {
			int rc = tap_write_frame(be, f[done].iov, f[done].iovcnt);
			if (rc == -EAGAIN)
				return done;
			f[done++].rc = rc;
			continue;
		}
		int k = n - done < TX_RING_ENTRIES ? n - done : TX_RING_ENTRIES;
		int submitted = ring_send_chain(t, f + done, k);
		if (submitted < 0) {
			ring_give_up(t, &u->tx, "submission", -submitted);
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
			event_watch_change(&t->watch, EPOLLOUT, 0);
			return done; /* the rest of the chain was cancelled: not sent */
		}
		/* The ring failed this frame (or never ran it): writev decides, as it would without
		 * the ring. A frame the tap rejects is dropped; one writev takes means the ring is
		 * at fault, and is given up. The chain behind was cancelled and goes again. */
		int wrc = tap_write_frame(be, f[done].iov, f[done].iovcnt);
		if (wrc == -EAGAIN)
			return done;
		if (wrc == 0)
			ring_give_up(t, &u->tx, "a write that writev then sent", -rc);
		f[done++].rc = wrc;
	}
	return done;
}

static uint8_t *rx_buf(struct tap *t, unsigned i)
{
	return t->uring->rx_bufs + (size_t)i * NET_RX_FRAME_MAX;
}

/* Buffer i's next read, sent to the kernel by the next io_uring_enter. Each buffer is in one
 * place at a time (an SQE, a read in flight, a completion), so the queue always has room. */
static void rx_queue_read(struct tap *t, unsigned i)
{
	struct tap_uring *u = t->uring;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->rx.ring);
	if (!sqe)
		return;
	io_uring_prep_read(sqe, t->fd, rx_buf(t, i), NET_RX_FRAME_MAX, 0);
	sqe->user_data = i;
}

/* The ring's first use (on the I/O thread): enable it and queue a read into every buffer. */
static bool rx_ring_start(struct tap *t)
{
	struct tap_uring *u = t->uring;
	if (u->rx_started)
		return true;
	if (!ring_usable(t, &u->rx)) {
		tap_rx_watch_update(t);
		return false;
	}
	for (unsigned i = 0; i < RX_RING_ENTRIES; i++)
		rx_queue_read(t, i);
	u->rx_started = true;
	return true;
}

/* rx-uring=on: the next frame a read of the ring took, copied into buf (its buffer goes back
 * with the next io_uring_enter). Returns its length, or 0 when none came: the tap is empty and
 * rx_efd will say when one comes. Returns -1 with *what and *err when the ring failed. */
static ssize_t ring_recv(struct tap *t, uint8_t *buf, size_t len, const char **what, int *err)
{
	struct tap_uring *u = t->uring;
	struct io_uring *ring = &u->rx.ring;
	bool entered = false;
	for (;;) {
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(ring, &cqe) != 0) {
			if (entered)
				return 0;
			/* One system call gives back the buffers taken since the last (and runs the
			 * reads whose frames have come, if they still wait for this thread). */
			int rc = io_uring_submit_and_get_events(ring);
			entered = true;
			if (rc > 0)
				u->rx_inflight += (unsigned)rc;
			if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
				*what = "entering the ring";
				*err = -rc;
				return -1;
			}
			continue;
		}
		uint64_t i = cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		u->rx_inflight--;
		if (i >= RX_RING_ENTRIES) { /* cannot happen: only rx_queue_read submits */
			*what = "a completion";
			*err = EPROTO;
			return -1;
		}
		size_t n = res > 0 ? ((size_t)res < len ? (size_t)res : len) : 0;
		if (n)
			memcpy(buf, rx_buf(t, (unsigned)i), n);
		rx_queue_read(t, (unsigned)i);
		if (res >= 0)
			return (ssize_t)n;
		if (res != -EINTR && res != -EAGAIN) {
			*what = "a read";
			*err = -res;
			return -1;
		}
	}
}

/* A ring that can only do what this file issues: op (and op2, when not 0), with no SQE flag
 * but `flags`, and no further io_uring_register call but the I/O thread's ENABLE_RINGS (which
 * the seccomp filter allows it alone). Whoever takes over the VMM cannot use it to open,
 * connect or otherwise reach beyond the read and write calls its filter allows anyway. The tap
 * is not a registered file: the table of one outlives the ring's fd (the kernel frees it
 * asynchronously), and kept the tap attached, refusing the next VMM, for 20-60 ms after exit.
 * efd >= 0: signalled when completions are posted. */
static int ring_init(struct tap_ring *r, unsigned entries, unsigned setup, uint8_t op, uint8_t op2,
		     uint8_t flags, int efd)
{
	struct io_uring_restriction res[3];
	unsigned nres = 0;
	memset(res, 0, sizeof(res));
	res[nres].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[nres++].sqe_flags = flags;
	res[nres].opcode = IORING_RESTRICTION_SQE_OP;
	res[nres++].sqe_op = op;
	if (op2) {
		res[nres].opcode = IORING_RESTRICTION_SQE_OP;
		res[nres++].sqe_op = op2;
	}
	int rc = io_uring_queue_init(entries, &r->ring,
				     IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER | setup);
	if (rc < 0)
		return rc;
	/* Debian 12's liburing 2.3 declares io_uring_register_restrictions() but does not
	 * export it: the raw register call does the same. */
	if ((efd >= 0 && (rc = io_uring_register_eventfd(&r->ring, efd)) < 0) ||
	    (rc = io_uring_register(r->ring.ring_fd, IORING_REGISTER_RESTRICTIONS, res, nres)) <
		0) {
		io_uring_queue_exit(&r->ring);
		return rc;
	}
	r->made = true;
	return 0;
}

/* rx-uring=on: the buffers, the eventfd and the ring the reads go through. */
static int rx_ring_init(struct tap *t)
{
	struct tap_uring *u = t->uring;
	u->rx_bufs = malloc((size_t)RX_RING_ENTRIES * NET_RX_FRAME_MAX); /* touched as used */
	if (!u->rx_bufs)
		return -ENOMEM;
	u->rx_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (u->rx_efd < 0)
		return -errno;
	/* Not DEFER_TASKRUN: with it, the eventfd missed completions on Linux 6.18 (a stand-in
	 * reading this way found frames waiting at 50-120 of its epoll timeouts per 2 s run, and
	 * idled while the sender's frames were dropped; without it, 0-2: netbench's
	 * tapread:uring-epoll, docs/performance.md). */
	return ring_init(&u->rx, RX_RING_ENTRIES, 0, IORING_OP_READ, IORING_OP_ASYNC_CANCEL, 0,
			 u->rx_efd);
}

static void close_rx_efd(struct tap *t)
{
	struct tap_uring *u = t->uring;
	if (u->rx_efd < 0)
		return;
	event_watch_remove(&u->rx_efd_watch);
	close(u->rx_efd);
	u->rx_efd = -1;
}

/* The kernel says completions wait. The eventfd is cleared before the ring is looked at, so a
 * read that completes after this signals again. */
static void rx_efd_event(void *opaque, uint32_t events)
{
	struct tap *t = opaque;
	struct tap_uring *u = t->uring;
	uint64_t count;
	(void)events;
	if (read(u->rx_efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warn("tap %s: reading the ring's eventfd: %s", t->name, strerror(errno));
	if (t->be.client.rx_ready)
		t->be.client.rx_ready(t->be.client.opaque);
}

/* The reads in flight hold the tap: cancel them and wait (1 s at most) until every one has
 * completed, so that closing the fd lets go of the tap at once (the ring's own teardown, which
 * would cancel them, runs later, asynchronously). Only the ring's submitter may enter it: where
 * it cannot (the I/O thread has exited, and its exit cancelled its reads), nothing is done. */
static void rx_ring_cancel(struct tap *t)
{
	struct tap_uring *u = t->uring;
	if (!ring_in_use(&u->rx) || !u->rx_started || !u->rx_inflight)
		return;
	struct io_uring *ring = &u->rx.ring;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe) { /* the queue is full of buffers given back: send them, then cancel them too */
		int sent = io_uring_submit(ring);
		if (sent > 0)
			u->rx_inflight += (unsigned)sent;
		sqe = io_uring_get_sqe(ring);
	}
	if (!sqe)
		return;
	io_uring_prep_cancel_fd(sqe, t->fd, IORING_ASYNC_CANCEL_ALL);
	sqe->user_data = RX_RING_ENTRIES; /* not a buffer */
	int rc = io_uring_submit(ring);
	if (rc <= 0)
		return;
	u->rx_inflight += (unsigned)rc - 1;
	bool cancel_done = false;
	struct timespec end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 1;
	while (u->rx_inflight || !cancel_done) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec wait = {.tv_nsec = 100 * 1000 * 1000};
		rc = io_uring_wait_cqe_timeout(ring, &cqe, &wait);
		if (rc == 0) {
			if (cqe->user_data == RX_RING_ENTRIES)
				cancel_done = true;
			else
				u->rx_inflight--;
			io_uring_cqe_seen(ring, cqe);
			continue;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((rc != -ETIME && rc != -EINTR) || now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			return;
	}
}

void tap_uring_open(struct tap *t, unsigned uring)
{
	struct tap_uring *u = calloc(1, sizeof(*u));
	if (!u) {
		log_warn("tap %s: io_uring: out of memory; writev and read() instead", t->name);
		return;
	}
	t->uring = u;
	u->rx_efd = -1;
	event_watch_init(&u->rx_efd_watch, t->be.loop);
	u->tx.fallback = "transmitting with writev";
	u->rx.fallback = "receiving with read";
	int rc;
	/* DEFER_TASKRUN: a linked write runs in the submitter's own io_uring_enter, not as task
	 * work queued behind it (one chain of 64: 2.2x the packets of plain links on the
	 * development VM, as fast as unlinked writes). */
	if ((uring & TAP_URING_TX) &&
	    (rc = ring_init(&u->tx, TX_RING_ENTRIES, IORING_SETUP_DEFER_TASKRUN, IORING_OP_WRITEV,
			    0, IOSQE_IO_LINK, -1)) < 0)
		log_warn("tap %s: tx-uring=on, but no io_uring ring (%s): transmitting with writev",
			 t->name, strerror(-rc));
	if ((uring & TAP_URING_RX) && (rc = rx_ring_init(t)) < 0) {
		log_warn("tap %s: rx-uring=on, but no io_uring ring (%s): receiving with read",
			 t->name, strerror(-rc));
		close_rx_efd(t);
	}
}

int tap_uring_watch(struct tap *t)
{
	struct tap_uring *u = t->uring;
	return u->rx_efd >= 0 ? event_watch_add(&u->rx_efd_watch, u->rx_efd, 0, rx_efd_event, t)
			      : 0;
}

bool tap_uring_rx_watch(struct tap *t)
{
	struct tap_uring *u = t->uring;
	bool ring = ring_in_use(&u->rx), on = t->rx_wanted && ring;
	if (u->rx_efd >= 0)
		event_watch_change(&u->rx_efd_watch, on ? EPOLLIN : 0, on ? 0 : EPOLLIN);
	return ring;
}

bool tap_uring_recv(struct tap *t, uint8_t *buf, size_t len, ssize_t *got)
{
	struct tap_uring *u = t->uring;
	if (!ring_in_use(&u->rx))
		return false;
	if (!event_loop_on_thread(t->be.loop)) {
		/* Only the I/O thread enters the ring (a vCPU thread's trapped kick lands
		 * here): have it look, through the eventfd it watches. */
		uint64_t one = 1;
		if (write(u->rx_efd, &one, sizeof(one)) < 0)
			log_warn("tap %s: cannot wake the I/O thread: %s", t->name,
				 strerror(errno));
		*got = 0;
		return true;
	}
	if (rx_ring_start(t)) {
		const char *what = NULL;
		int err = 0;
		ssize_t n = ring_recv(t, buf, len, &what, &err);
		if (n >= 0) {
			*got = n;
			return true;
		}
		/* Never seen. The ring goes (its reads still in flight are cancelled:
		 * frames they had taken and not handed over are lost, as on a wire) and
		 * read() takes over, from the frame after. */
		ring_give_up(t, &u->rx, what, err);
		ring_destroy(&u->rx);
		tap_rx_watch_update(t);
	}
	return false;
}

bool tap_uring_tx_in_use(struct tap *t)
{
	return ring_in_use(&t->uring->tx);
}

bool tap_uring_rx_in_use(struct tap *t)
{
	return ring_in_use(&t->uring->rx);
}

void tap_uring_unwatch(struct tap *t)
{
	event_watch_remove(&t->uring->rx_efd_watch);
}

void tap_uring_stop(struct tap *t)
{
	rx_ring_cancel(t);
	close_rx_efd(t);
}

void tap_uring_free(struct tap *t)
{
	struct tap_uring *u = t->uring;
	event_watch_destroy(&u->rx_efd_watch);
	ring_destroy(&u->tx);
	ring_destroy(&u->rx);
	free(u->rx_bufs);
	free(u);
	t->uring = NULL;
}
