/* The tap backend's io_uring path, tx-uring=on: each transmit batch goes to the tap as one
 * chain of linked WRITEVs (send_batch), falling back, with a warning, to tap.c's writev where
 * the kernel refuses the ring. tap.c calls in here only when the ring was asked for (t->uring),
 * and for send_batch, which the device calls only with tx-uring=on. */
#include "tap.h"
#include "tap_internal.h"

#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "base/event_loop.h"
#include "base/log.h"

/* Frames per submission. */
#define TX_RING_ENTRIES 64

/* The tap's io_uring: restricted to the operations this file issues (ring_init), created
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
	struct tap_ring tx; /* linked WRITEVs of each batch */
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

/* A ring that can only do what this file issues: op, with no SQE flag but `flags`, and no
 * further io_uring_register call but the I/O thread's ENABLE_RINGS (which the seccomp filter
 * allows it alone). Whoever takes over the VMM cannot use it to open, connect or otherwise reach
 * beyond the write calls its filter allows anyway. The tap is not a registered file: the table
 * of one outlives the ring's fd (the kernel frees it asynchronously), and kept the tap attached,
 * refusing the next VMM, for 20-60 ms after exit. */
static int ring_init(struct tap_ring *r, unsigned entries, unsigned setup, uint8_t op,
		     uint8_t flags)
{
	struct io_uring_restriction res[2];
	memset(res, 0, sizeof(res));
	res[0].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[0].sqe_flags = flags;
	res[1].opcode = IORING_RESTRICTION_SQE_OP;
	res[1].sqe_op = op;
	int rc = io_uring_queue_init(entries, &r->ring,
				     IORING_SETUP_R_DISABLED | IORING_SETUP_SINGLE_ISSUER | setup);
	if (rc < 0)
		return rc;
	/* Debian 12's liburing 2.3 declares io_uring_register_restrictions() but does not
	 * export it: the raw register call does the same. */
	if ((rc = io_uring_register(r->ring.ring_fd, IORING_REGISTER_RESTRICTIONS, res, 2)) < 0) {
		io_uring_queue_exit(&r->ring);
		return rc;
	}
	r->made = true;
	return 0;
}

void tap_uring_open(struct tap *t)
{
	struct tap_uring *u = calloc(1, sizeof(*u));
	if (!u) {
		log_warn("tap %s: tx-uring=on, but no io_uring ring (%s): transmitting with writev",
			 t->name, strerror(ENOMEM));
		return;
	}
	t->uring = u;
	u->tx.fallback = "transmitting with writev";
	/* DEFER_TASKRUN: a linked write runs in the submitter's own io_uring_enter, not as task
	 * work queued behind it (one chain of 64: 2.2x the packets of plain links on the
	 * development VM, as fast as unlinked writes). */
	int rc = ring_init(&u->tx, TX_RING_ENTRIES, IORING_SETUP_DEFER_TASKRUN, IORING_OP_WRITEV,
			   IOSQE_IO_LINK);
	if (rc < 0)
		log_warn("tap %s: tx-uring=on, but no io_uring ring (%s): transmitting with writev",
			 t->name, strerror(-rc));
}

bool tap_uring_tx_in_use(struct tap *t)
{
	return ring_in_use(&t->uring->tx);
}

void tap_uring_free(struct tap *t)
{
	ring_destroy(&t->uring->tx);
	free(t->uring);
	t->uring = NULL;
}
