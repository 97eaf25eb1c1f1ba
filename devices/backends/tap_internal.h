/* What the tap backend's files share, and nothing else: the tap (tap.c: the default path, one
 * writev per frame sent and one read() per frame received) and the calls between it and its
 * io_uring path (tap_uring.c: tx-uring=on). tap.c reaches tap_uring.c only when the ring was
 * asked for (t->uring), and for send_batch, which the device calls only with tx-uring=on.
 * Private to devices/backends/tap*.c. */
#ifndef MINIVMM_NET_TAP_INTERNAL_H
#define MINIVMM_NET_TAP_INTERNAL_H

#include <linux/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "devices/backends/net_backend.h"
#include "base/event_loop.h"

struct tap_uring; /* tap_uring.c's */

struct tap {
	struct net_backend be;
	int fd;
	char name[IFNAMSIZ];
	/* EPOLLIN when the guest has room (set by whichever thread serves the device), EPOLLOUT
	 * when the tap was full (cleared by the loop thread when it has room): an event_watch,
	 * so a change on one thread never undoes one on another. */
	struct event_watch watch;
	bool gone;	/* atomic: set once, by whichever thread sees the tap fail */
	bool rx_wanted; /* the device wants frames (set_rx_enabled) */
	struct net_offloads supported;
	/* tx-uring=on: the ring (tap_uring.c), set at open; else NULL. */
	struct tap_uring *uring;
};

static inline bool is_gone(struct tap *t)
{
	return __atomic_load_n(&t->gone, __ATOMIC_ACQUIRE);
}

/* tap.c, for tap_uring.c: one writev of a frame (tap.c's send, with its EAGAIN and gone
 * handling). */
int tap_write_frame(struct net_backend *be, const struct iovec *iov, int iovcnt);

/* tap_uring.c. Open: the ring, given up with a warning where the kernel refuses it (t->uring
 * stays NULL only when nothing could be allocated). The rest only with t->uring set. */
void tap_uring_open(struct tap *t);
bool tap_uring_tx_in_use(struct tap *t);
void tap_uring_free(struct tap *t);
/* The backend's send_batch: through the tx ring, or writev by writev without one. */
int tap_send_batch(struct net_backend *be, struct net_frame *f, int n);

#endif
