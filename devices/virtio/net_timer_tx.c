/* virtio-net's timer transmit (tx=timer): a kick arms a timer and the timer runs net.c's
 * transmit pass. The older algorithm, kept as the baseline the bottom half is measured
 * against (docs/performance.md). */
#include "net_internal.h"

/* The timer algorithm: a kick arms a timer, the timer flushes the ring. */
static void tx_timer_run(void *opaque)
{
	struct virtio_net *n = opaque;
	if (net_tx_pass(n))
		event_timer_arm(&n->tx_timer, (uint64_t)n->cfg.tx_timer_us * 1000);
}

int net_tx_timer_init(struct virtio_net *n)
{
	return event_timer_init(n->loop, &n->tx_timer, tx_timer_run, n);
}

/* A transmit kick (notifications are off): arm the timer. */
void net_tx_timer_kick(struct virtio_net *n)
{
	if (n->tx_timer.armed) {
		/* A kick while the timer waits: flush now, as the timer algorithm always did. */
		event_timer_cancel(&n->tx_timer);
		bottom_half_schedule(n->dev->loop, &n->tx_bh);
	} else {
		event_timer_arm(&n->tx_timer, (uint64_t)n->cfg.tx_timer_us * 1000);
	}
}

void net_tx_timer_cancel(struct virtio_net *n)
{
	event_timer_cancel(&n->tx_timer);
}

/* Any time after net_tx_timer_init was tried (it may have failed). */
void net_tx_timer_destroy(struct virtio_net *n)
{
	if (n->tx_timer.src.fn)
		event_timer_destroy(n->loop, &n->tx_timer);
}
