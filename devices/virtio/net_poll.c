/* virtio-net's adaptive polling (poll-us=; the policy is base/adaptive_poll.h): before the I/O
 * thread sleeps its loop polls the rings through these callbacks, with transmit kicks off. net.c
 * keeps its part of the bargain: a transmit pass leaves kicks off while polling is on, and a
 * receive stall records where the ring stood (rx_stall_idx). */
#include "net_internal.h"

/* The loop starts polling instead of sleeping: the guest need not kick for transmit frames. */
static void poll_begin(void *opaque)
{
	struct virtio_net *n = opaque;
	virtio_dev_lock(n->dev);
	n->polling = true;
	if (live(n))
		virtqueue_suppress_kicks(&n->dev->vqs[TX_QUEUE]);
	virtio_dev_unlock(n->dev);
}

/* One look, no system call: transmit frames (unless the backend is full: they wait for
 * tx_ready, and reporting them would spin), and receive buffers posted since receive stalled
 * for want of them (not the same ones again: a frame too big for them would spin). The tap is
 * the loop's fd checks' business. */
static bool poll_check(void *opaque)
{
	struct virtio_net *n = opaque;
	struct virtio_dev *dev = n->dev;
	bool tx = false, rx = false;
	virtio_dev_lock(dev);
	if (live(n)) {
		tx = !n->tx_blocked && virtqueue_has_work(&dev->vqs[TX_QUEUE]);
		rx = !n->rx_enabled && virtqueue_avail_idx(&dev->vqs[RX_QUEUE]) != n->rx_stall_idx;
		n->poll_tx += tx;
		n->poll_rx += rx;
		if (rx) /* counted once: rx_process moves it on if it stalls again */
			rx_stall_mark(n);
	}
	virtio_dev_unlock(dev);
	if (tx)
		bottom_half_schedule(n->loop, &n->tx_bh);
	if (rx)
		bottom_half_schedule(n->loop, &n->rx_bh);
	return tx || rx;
}

/* The loop will sleep: kicks back on, then one more look, since a frame queued after the last
 * poll and before the driver saw kicks on gets no kick. */
static bool poll_end(void *opaque)
{
	struct virtio_net *n = opaque;
	struct virtio_dev *dev = n->dev;
	struct virtqueue *vq = &dev->vqs[TX_QUEUE];
	bool work = false;
	virtio_dev_lock(dev);
	n->polling = false;
	if (live(n) && !n->tx_blocked && virtqueue_set_notification(vq, true)) {
		virtqueue_set_notification(vq, false);
		work = true;
	}
	virtio_dev_unlock(dev);
	if (work)
		bottom_half_schedule(n->loop, &n->tx_bh);
	return work;
}

void net_poll_add(struct virtio_net *n)
{
	n->poller = (struct event_poller){.begin = poll_begin,
					  .poll = poll_check,
					  .end = poll_end,
					  .opaque = n,
					  .max_ns = (uint64_t)n->cfg.poll_us * 1000};
	event_loop_add_poller(n->loop, &n->poller);
	n->poller_added = true;
}

void net_poll_del(struct virtio_net *n)
{
	event_loop_del_poller(n->loop, &n->poller);
}
