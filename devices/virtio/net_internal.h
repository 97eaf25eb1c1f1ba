/* What virtio-net's files share, and nothing else: the device's state and the calls between
 * net.c (the device and its default path: bottom-half transmit, one frame per send) and the
 * files of the other modes, net_timer_tx.c (tx=timer) and net_tx_batch.c (tx-uring=on), and of
 * adaptive polling, net_poll.c (poll-us=, on by default with tx=bh). The default path calls
 * none of them: the timer and the batches are reached only in their modes, the poller only
 * through the event loop's function pointers. Private to devices/virtio/net*.c. */
#ifndef MINIVMM_VIRTIO_NET_INTERNAL_H
#define MINIVMM_VIRTIO_NET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "devices/backends/net_backend.h"
#include "devices/virtio/net.h"
#include "devices/virtio/virtio.h"
#include "base/event_loop.h"

#define RX_QUEUE 0
#define TX_QUEUE 1
/* Checks for a used-ring interrupt per ring's worth of transmitted frames, within a burst too:
 * often enough that a driver waiting for room wakes well before the ring drains, rarely enough
 * that without EVENT_IDX a ring's worth raises at most this many interrupts. */
#define TX_NOTIFY_CHECKS 8

struct virtio_net_config_space {
	uint8_t mac[6];
	uint16_t status;
	uint16_t max_virtqueue_pairs;
	uint16_t mtu;
} __attribute__((packed));

struct tx_batch; /* net_tx_batch.c's */

struct virtio_net {
	struct virtio_dev *dev;
	struct event_loop *loop;
	struct net_options cfg;
	struct net_backend *backend;
	struct virtio_net_config_space config;
	struct virtq_elem *elem; /* one chain at a time; allocated once */
	/* A transmitted frame as the backend gets it: our copy of the header, then the guest's
	 * buffers, so the header checked is the header sent. */
	uint8_t tx_hdr[NET_HDR_LEN];
	struct iovec *tx_iov;	   /* VIRTQ_MAX_SIZE + 1 entries */
	struct tx_batch *tx_batch; /* tx-uring=on with a backend that takes batches; else NULL */
	uint8_t *rx_buf;
	ssize_t rx_pending; /* bytes of a frame read from the backend and not yet delivered */
	bool rx_enabled;
	bool tx_blocked;   /* the backend is full: wait for tx_ready */
	bool link_changed; /* by a restore: the driver must read the status again */
	/* Adaptive polling (poll-us): the loop polls our rings before it sleeps. */
	struct event_poller poller;
	bool poller_added;
	bool polling;	       /* between the poller's begin and end: transmit kicks stay off */
	uint16_t rx_stall_idx; /* the receive ring's avail->idx when receive last stalled */
	struct bottom_half tx_bh;
	struct event_timer tx_timer;
	struct bottom_half rx_bh;
	uint64_t tx_packets, tx_bytes, tx_dropped, rx_packets, rx_bytes, rx_dropped;
	uint64_t poll_tx, poll_rx;
};

static inline bool live(const struct virtio_net *n)
{
	return virtio_dev_live(n->dev);
}

/* Receive stalled for want of buffers (net.c), or a poll reported the buffers posted since
 * (net_poll.c): a poll looks for buffers posted after these, never the same ones again. */
static inline void rx_stall_mark(struct virtio_net *n)
{
	n->rx_stall_idx = virtqueue_avail_idx(&n->dev->vqs[RX_QUEUE]);
}

/* net.c: the steps of a transmit, for the other modes (each a call of net.c's own static
 * function, which the default path calls directly). */
bool net_tx_pass(struct virtio_net *n); /* one pass: true when another is needed */
int net_tx_pop(struct virtio_net *n);	/* into n->elem: 1, 0 (ring empty), -1 (broken) */
int net_tx_build_iov(const struct virtq_elem *e, uint8_t *hdr, struct iovec *iov);
bool net_tx_header_allowed(const struct virtio_dev *dev, const uint8_t *hdr);
void net_tx_complete(struct virtio_net *n, uint16_t head, size_t len, int rc, unsigned *unchecked,
		     unsigned every);

/* net_timer_tx.c: tx=timer, a kick arms a timer and the timer flushes the ring. */
int net_tx_timer_init(struct virtio_net *n);
void net_tx_timer_kick(struct virtio_net *n);
void net_tx_timer_cancel(struct virtio_net *n);
void net_tx_timer_destroy(struct virtio_net *n);

/* net_tx_batch.c: tx-uring=on, up to a batch of frames per send_batch call. */
struct tx_batch *net_tx_batch_alloc(void);
unsigned net_tx_flush_batched(struct virtio_net *n, unsigned burst, bool *more);

/* net_poll.c: adaptive polling (poll-us=), the loop polls the rings before it sleeps. */
void net_poll_add(struct virtio_net *n);
void net_poll_del(struct virtio_net *n);

#endif
