/* virtio-net's batched transmit (tx-uring=on, with a backend that takes batches: the tap's
 * send_batch, tap_uring.c): net.c's transmit pass hands the ring to net_tx_flush_batched
 * instead of its own tx_flush, which sends one frame at a time. */
#include "net_internal.h"

#include <errno.h>
#include <stdlib.h>

/* Chains gathered and handed to the backend in one send_batch call. */
#define TX_BATCH 64
/* The iovecs a batch's frames share: always room for the longest chain (header + out). */
#define TX_BATCH_IOVS (2 * (VIRTQ_MAX_SIZE + 1))
/* A chain popped for a batch: what pushing it back needs, and our copy of its header. */
struct tx_slot {
	uint16_t head;
	bool allowed; /* tx_header_allowed: else dropped (-EPROTO), never sent */
	size_t len;   /* frame bytes after the header */
	uint8_t hdr[NET_HDR_LEN];
};

/* The batched transmit path's buffers (tx-uring=on), allocated once. */
struct tx_batch {
	struct tx_slot slot[TX_BATCH];
	struct net_frame frame[TX_BATCH];
	struct iovec iov[TX_BATCH_IOVS];
};

struct tx_batch *net_tx_batch_alloc(void)
{
	return malloc(sizeof(struct tx_batch));
}

/* Gather up to want chains into n->tx_batch (each with its own header copy and iovecs) and
 * the frames among them that may be sent. Returns the chains gathered, or -1 (device broken);
 * *empty when the ring ran out. */
static int tx_gather(struct virtio_net *n, unsigned want, unsigned *nframes, bool *empty)
{
	struct tx_batch *b = n->tx_batch;
	unsigned got = 0;
	size_t iovs = 0;
	*nframes = 0;
	*empty = false;
	while (got < want) {
		int rc = net_tx_pop(n);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			*empty = true;
			break;
		}
		if (iovs + n->elem->out_num + 1 > TX_BATCH_IOVS) {
			virtqueue_unpop(&n->dev->vqs[TX_QUEUE]); /* first in the next batch */
			break;
		}
		struct tx_slot *s = &b->slot[got++];
		struct iovec *iov = b->iov + iovs;
		int cnt = net_tx_build_iov(n->elem, s->hdr, iov);
		iovs += (size_t)cnt;
		s->head = n->elem->head;
		s->len = n->elem->out_len - NET_HDR_LEN;
		s->allowed = net_tx_header_allowed(n->dev, s->hdr);
		if (s->allowed)
			b->frame[(*nframes)++] = (struct net_frame){.iov = iov, .iovcnt = cnt};
	}
	return (int)got;
}

/* As net.c's tx_flush, but up to TX_BATCH frames at a time go to the backend in one
 * send_batch call. A frame the backend refuses (full) and every chain after it go back on the
 * ring, in order, and are sent first when it has room. dev->lock held. */
unsigned net_tx_flush_batched(struct virtio_net *n, unsigned burst, bool *more)
{
	struct virtio_dev *dev = n->dev;
	struct virtqueue *vq = &dev->vqs[TX_QUEUE];
	struct tx_batch *b = n->tx_batch;
	unsigned done = 0, unchecked = 0;
	unsigned every = vq->size > TX_NOTIFY_CHECKS ? vq->size / TX_NOTIFY_CHECKS : 1;
	*more = false;
	while (done < burst) {
		unsigned nframes;
		bool empty;
		int got = tx_gather(n, burst - done < TX_BATCH ? burst - done : TX_BATCH, &nframes,
				    &empty);
		if (got < 0)
			return done;
		int sent =
		    nframes ? n->backend->ops->send_batch(n->backend, b->frame, (int)nframes) : 0;
		if (sent < 0 || sent > (int)nframes)
			sent = 0; /* a backend's mistake: resend rather than lose */
		unsigned i = 0, f = 0;
		for (; i < (unsigned)got; i++) {
			const struct tx_slot *s = &b->slot[i];
			if (s->allowed && f == (unsigned)sent)
				break; /* refused: this chain and the rest go back */
			int rc = s->allowed ? b->frame[f++].rc : -EPROTO;
			net_tx_complete(n, s->head, s->len, rc, &unchecked, every);
			done++;
		}
		if (i < (unsigned)got) {
			for (; i < (unsigned)got; i++)
				virtqueue_unpop(vq);
			n->tx_blocked = true;
			break;
		}
		if (empty)
			break;
	}
	if (unchecked)
		virtio_dev_notify_used(dev, TX_QUEUE);
	*more = done == burst;
	return done;
}
