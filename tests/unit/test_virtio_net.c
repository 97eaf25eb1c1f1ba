/* virtio-net against a fake backend and a fake guest driver: transmit with the burst cap and
 * back-pressure, the timer transmit mode (delay, one pass per expiry, burst cap), mergeable
 * receive, receive flow control, frames too big for the buffers, and
 * a transmit chain shorter than the header. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices/backends/net_backend.h"
#include "devices/virtio/net.h"
#include "devices/virtio/virtio.h"
#include "base/event_loop.h"
#include "vmm/kinds/kinds.h"
#include "vmm/cli/options.h"

#define RAM_SIZE    (16u << 20)
#define QSIZE	    16
#define RXQ	    0
#define TXQ	    1
#define F_MRG	    15
#define F_EVENT_IDX 29

/* ---- the fake backend ---- */

struct fake {
	struct net_backend be;
	uint8_t sent[64][2048];
	size_t sent_len[64];
	int nsent;
	uint8_t rx[8][2048];
	size_t rx_len[8];
	int rx_head, rx_count;
	bool rx_enabled;
	int eagain_at; /* make the send with this index return -EAGAIN once (-1: never) */
	int fail_at;   /* make the send with this index drop the frame with -EINVAL (-1: never) */
	int batches;   /* send_batch calls (tx-uring=on) */
	int batch_len[16];
};

static struct fake *fake;

static int fake_send(struct net_backend *be, const struct iovec *iov, int iovcnt)
{
	struct fake *f = (struct fake *)be;
	if (f->nsent == f->eagain_at) {
		f->eagain_at = -1;
		return -EAGAIN;
	}
	size_t len = 0;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(f->sent[f->nsent] + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	f->sent_len[f->nsent++] = len;
	return 0;
}

/* tx-uring=on: the frames in order, stopping at a full backend, as tap_send_batch does. */
static int fake_send_batch(struct net_backend *be, struct net_frame *frames, int n)
{
	struct fake *f = (struct fake *)be;
	if (f->batches < 16)
		f->batch_len[f->batches] = n;
	f->batches++;
	for (int i = 0; i < n; i++) {
		if (f->nsent == f->fail_at) {
			f->fail_at = -1;
			frames[i].rc = -EINVAL;
			continue;
		}
		int rc = fake_send(be, frames[i].iov, frames[i].iovcnt);
		if (rc == -EAGAIN)
			return i;
		frames[i].rc = rc;
	}
	return n;
}

static ssize_t fake_recv(struct net_backend *be, uint8_t *buf, size_t len)
{
	struct fake *f = (struct fake *)be;
	if (!f->rx_count)
		return 0;
	size_t n = f->rx_len[f->rx_head] < len ? f->rx_len[f->rx_head] : len;
	memcpy(buf, f->rx[f->rx_head], n);
	f->rx_head++;
	f->rx_count--;
	return (ssize_t)n;
}

static struct net_offloads fake_supported; /* what the fake backend says it can take */

static void fake_offloads(struct net_backend *be, struct net_offloads *o)
{
	(void)be;
	*o = fake_supported;
}

static int fake_set_rx_offloads(struct net_backend *be, const struct net_offloads *o)
{
	(void)be;
	(void)o;
	return 0;
}

static void fake_set_rx_enabled(struct net_backend *be, bool enabled)
{
	((struct fake *)be)->rx_enabled = enabled;
}

static void fake_destroy(struct net_backend *be)
{
	(void)be;
}

static const struct net_backend_ops fake_ops = {
    .name = "fake",
    .send = fake_send,
    .send_batch = fake_send_batch,
    .recv = fake_recv,
    .offloads_supported = fake_offloads,
    .set_rx_offloads = fake_set_rx_offloads,
    .set_rx_enabled = fake_set_rx_enabled,
    .destroy = fake_destroy,
};

static struct net_backend_client client;

static struct net_backend *open_fake(const struct net_options *cfg, struct event_loop *loop,
				     const struct net_backend_client *c, char *err, size_t errlen)
{
	(void)cfg;
	(void)err;
	(void)errlen;
	fake->be.ops = &fake_ops;
	fake->be.loop = loop;
	fake->be.client = *c;
	client = *c;
	return &fake->be;
}

/* ---- the fake transport and guest ---- */

static int queue_irqs, config_irqs;
static int first_irq_after; /* frames the backend had sent at the first queue interrupt */

static void signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	(void)q;
	if (!queue_irqs++)
		first_irq_after = fake->nsent;
}

static void signal_config(struct virtio_dev *d)
{
	(void)d;
	config_irqs++;
}

static const struct virtio_transport_ops transport = {.signal_queue = signal_queue,
						      .signal_config = signal_config};

static uint8_t *ram;
static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static struct virtio_net *net;
static uint16_t avail_idx[2];
static uint32_t extra_features; /* feature bits 0-31 start() offers beyond MRG_RXBUF */

static uint64_t ring_base(int q)
{
	return 0x10000 + (uint64_t)q * 0x10000;
}

static void *gpa(uint64_t a)
{
	return ram + a;
}

/* A device configured by --net options (tap=fake,...), with its queues set up by the driver. */
/* The device tests run without adaptive polling (on by default with tx=bh) unless they ask for
 * it: a poll phase would take kicks off and change what they count. */
static void start_with(const char *given, bool mergeable)
{
	char options[128];
	bool polling_given = strstr(given, "poll-us=") || strstr(given, "tx=timer");
	snprintf(options, sizeof(options), "%s%s", given, polling_given ? "" : ",poll-us=0");
	ram = calloc(1, RAM_SIZE);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	cr_assert_eq(event_loop_init(&loop), 0);
	fake = calloc(1, sizeof(*fake));
	fake->eagain_at = fake->fail_at = -1;
	struct net_options cfg;
	struct option_list opts;
	char err[128];
	cr_assert_eq(options_split(options, "--net", &opts, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), 0, "%s", err);
	net = virtio_net_create(&dev, &mem, &loop, &cfg, "net-test0", open_fake);
	cr_assert_not_null(net);
	dev.transport = &transport;
	queue_irqs = config_irqs = first_irq_after = 0;
	avail_idx[0] = avail_idx[1] = 0;
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 0, (mergeable ? 1u << F_MRG : 0) | extra_features);
	virtio_dev_set_driver_features(&dev, 1, 1); /* VERSION_1 */
	for (int q = 0; q < 2; q++) {
		dev.vqs[q].size = QSIZE;
		dev.vqs[q].desc_gpa = ring_base(q);
		dev.vqs[q].avail_gpa = ring_base(q) + 0x1000;
		dev.vqs[q].used_gpa = ring_base(q) + 0x2000;
		virtio_dev_queue_ready(&dev, q, true);
	}
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
					VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	cr_assert_eq(dev.status & VIRTIO_STATUS_DRIVER_OK, VIRTIO_STATUS_DRIVER_OK);
	event_loop_run_once(&loop, 0); /* activation's receive kick-off */
}

static void start(uint32_t burst, bool mergeable)
{
	char options[64];
	snprintf(options, sizeof(options), "tap=fake,tx-burst=%u", burst);
	start_with(options, mergeable);
}

static void stop(void)
{
	virtio_dev_set_status(&dev, 0);
	virtio_net_destroy(net);
	event_loop_destroy(&loop);
	free(fake);
	free(ram);
}

/* Post a one-descriptor chain on queue q: buffer at addr of len bytes. */
static void post(int q, uint16_t desc, uint64_t addr, uint32_t len, bool writable)
{
	struct virtq_desc *d = gpa(ring_base(q));
	d[desc] = (struct virtq_desc){
	    .addr = addr, .len = len, .flags = writable ? VIRTQ_DESC_F_WRITE : 0};
	uint16_t *avail = gpa(ring_base(q) + 0x1000);
	avail[2 + avail_idx[q] % QSIZE] = desc;
	avail_idx[q]++;
	__atomic_store_n(&avail[1], avail_idx[q], __ATOMIC_RELEASE);
}

static uint16_t used_idx(int q)
{
	return *(uint16_t *)gpa(ring_base(q) + 0x2000 + 2);
}

static uint32_t used_len(int q, int i)
{
	uint32_t *e = gpa(ring_base(q) + 0x2000 + 4 + 8 * (uint64_t)i);
	return e[1];
}

/* A transmit frame: 12-byte header then payload bytes of value tag. */
static void post_tx(uint16_t desc, uint32_t payload, uint8_t tag)
{
	uint64_t addr = 0x100000 + (uint64_t)desc * 0x1000;
	memset(gpa(addr), 0, NET_HDR_LEN);
	memset(gpa(addr + NET_HDR_LEN), tag, payload);
	post(TXQ, desc, addr, NET_HDR_LEN + payload, false);
}

/* A device on options gets five frames of different lengths in one kick: all are sent, in
 * order, whole, and returned. The caller stops the device. */
static void five_frames_go_out_in_order(const char *options)
{
	start_with(options, true);
	for (uint16_t i = 0; i < 5; i++)
		post_tx(i, 60 + i, (uint8_t)(0x10 + i));
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(fake->sent_len[i], NET_HDR_LEN + 60 + (size_t)i);
		cr_assert_eq(fake->sent[i][NET_HDR_LEN], 0x10 + i);
	}
	cr_assert_eq(used_idx(TXQ), 5);
}

Test(virtio_net, transmit_sends_every_frame_in_order)
{
	five_frames_go_out_in_order("tap=fake");
	cr_assert_eq(fake->batches, 0, "without tx-uring, frame by frame");
	stop();
}

Test(virtio_net, driver_waiting_for_room_is_woken_during_the_burst)
{
	extra_features = 1u << F_EVENT_IDX;
	start(256, true);
	extra_features = 0;
	/* One frame first, so the device's first (unconditional) interrupt is behind us. */
	post_tx(0, 64, 0);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(TXQ), 1);
	queue_irqs = 0;
	/* A full ring; the driver asks to be woken once 4 of it are used (used_event = 1 + 3). */
	uint16_t *avail = gpa(ring_base(TXQ) + 0x1000);
	avail[2 + QSIZE] = 4;
	for (uint16_t i = 0; i < QSIZE; i++)
		post_tx(i, 64, (uint8_t)i);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 1 + QSIZE);
	cr_assert_eq(used_idx(TXQ), 1 + QSIZE);
	cr_assert_eq(queue_irqs, 1, "one interrupt: the one asked for, not %d", queue_irqs);
	/* Not only at the end of the burst: the driver refills while the device drains. */
	int after = first_irq_after - 1;
	cr_assert(after >= 4 && after <= 4 + QSIZE / 8, "interrupt after %d of %d frames", after,
		  QSIZE);
	stop();
}

Test(virtio_net, burst_cap_reschedules_until_the_ring_is_empty)
{
	start(2, true);
	for (uint16_t i = 0; i < 5; i++)
		post_tx(i, 64, (uint8_t)i);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 2, "one bottom-half pass sends one burst");
	/* No further kick: the bottom half must come back by itself. */
	for (int i = 0; i < 5 && fake->nsent < 5; i++)
		event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 5, "no frame stranded at the burst cap");
	cr_assert_eq(used_idx(TXQ), 5);
	stop();
}

Test(virtio_net, backend_back_pressure_keeps_the_frame)
{
	start(256, true);
	fake->eagain_at = 1;
	for (uint16_t i = 0; i < 3; i++)
		post_tx(i, 64, (uint8_t)(0x40 + i));
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 1, "stops at the full backend");
	cr_assert_eq(used_idx(TXQ), 1);
	client.tx_ready(client.opaque);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 3);
	cr_assert_eq(fake->sent[1][NET_HDR_LEN], 0x41, "the held frame goes next, in order");
	cr_assert_eq(used_idx(TXQ), 3);
	stop();
}

/* ---- tx-uring=on: frames go to the backend in batches ---- */

static uint64_t tx_dropped(void)
{
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	return st.tx_dropped;
}

Test(virtio_net, batched_transmit_sends_every_frame_in_order_in_one_call)
{
	five_frames_go_out_in_order("tap=fake,tx-uring=on");
	cr_assert_eq(fake->batches, 1, "5 frames, %d send_batch calls", fake->batches);
	cr_assert_eq(fake->batch_len[0], 5);
	stop();
}

/* A full backend in the middle of a batch: what it took is done, the frame it refused and
 * every one after it stay in the ring and go next, in order, each exactly once. */
Test(virtio_net, batched_back_pressure_mid_batch_keeps_the_rest_in_order)
{
	start_with("tap=fake,tx-uring=on", true);
	fake->eagain_at = 2;
	for (uint16_t i = 0; i < 6; i++)
		post_tx(i, 64, (uint8_t)(0x40 + i));
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 2, "stops at the full backend");
	cr_assert_eq(used_idx(TXQ), 2, "only what was sent is returned");
	client.tx_ready(client.opaque);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 6, "%d frames sent, not 6", fake->nsent);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(fake->sent[i][NET_HDR_LEN], 0x40 + i, "frame %d out of order", i);
	cr_assert_eq(used_idx(TXQ), 6);
	cr_assert_eq(tx_dropped(), 0);
	stop();
}

/* Frames the driver may not send (an offload it never negotiated) and frames the backend
 * rejects are dropped and counted, in their place in the batch; the others all go out. */
Test(virtio_net, batched_rejected_frames_are_dropped_in_place)
{
	start_with("tap=fake,tx-uring=on", true);
	fake->fail_at = 3; /* the 4th frame the backend sees */
	for (uint16_t i = 0; i < 6; i++) {
		post_tx(i, 64, (uint8_t)(0x50 + i));
		if (i == 1) /* NEEDS_CSUM without VIRTIO_NET_F_CSUM */
			*(uint8_t *)gpa(0x100000 + (uint64_t)i * 0x1000) = 1;
	}
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->batches, 1);
	cr_assert_eq(fake->batch_len[0], 5, "the bad header never reaches the backend");
	cr_assert_eq(fake->nsent, 4);
	static const uint8_t want[] = {0x50, 0x52, 0x53, 0x55};
	for (int i = 0; i < 4; i++)
		cr_assert_eq(fake->sent[i][NET_HDR_LEN], want[i], "frame %d", i);
	cr_assert_eq(used_idx(TXQ), 6, "every chain is returned");
	cr_assert_eq(tx_dropped(), 2);
	stop();
}

/* tx-burst caps a pass in batched mode too: 5 frames at a burst of 2 take three passes, and
 * the bottom half comes back by itself. */
Test(virtio_net, batched_transmit_honours_the_burst)
{
	start_with("tap=fake,tx-uring=on,tx-burst=2", true);
	for (uint16_t i = 0; i < 5; i++)
		post_tx(i, 64, (uint8_t)i);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 2, "one pass sends one burst");
	for (int i = 0; i < 5 && fake->nsent < 5; i++)
		event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 5);
	cr_assert_eq(fake->batches, 3);
	cr_assert_eq(fake->batch_len[0], 2);
	cr_assert_eq(fake->batch_len[2], 1);
	cr_assert_eq(used_idx(TXQ), 5);
	stop();
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Run the event loop until the backend has sent more than `sent` frames (one loop iteration
 * at a time, so what one iteration sends is one pass), or 2 s pass; returns when, in us. */
static uint64_t run_until_sent_more_than(int sent)
{
	uint64_t deadline = now_us() + 2000000;
	while (fake->nsent <= sent && now_us() < deadline)
		event_loop_run_once(&loop, 10);
	cr_assert_gt(fake->nsent, sent, "nothing sent within 2 s");
	return now_us();
}

/* tx=timer: a kick only arms the timer (nothing is sent until it expires), then one pass sends
 * everything queued. */
Test(virtio_net, timer_mode_sends_the_batch_when_the_timer_fires)
{
	start_with("tap=fake,tx=timer,tx-timer=50000", true);
	for (uint16_t i = 0; i < 5; i++)
		post_tx(i, 64, (uint8_t)(0x30 + i));
	uint64_t kicked = now_us();
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 0, "a kick in timer mode must not send before the timer fires");
	uint64_t sent_at = run_until_sent_more_than(0);
	cr_assert_geq(sent_at - kicked, 50000, "sent %lu us after the kick, before tx-timer=50000",
		      (unsigned long)(sent_at - kicked));
	cr_assert_eq(fake->nsent, 5, "the whole batch goes in one pass");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(fake->sent[i][NET_HDR_LEN], 0x30 + i);
	cr_assert_eq(used_idx(TXQ), 5);
	stop();
}

/* tx-timer sets the delay: at least 2 ms here, and well under a second (a unit mix-up). */
Test(virtio_net, timer_mode_delay_is_tx_timer)
{
	start_with("tap=fake,tx=timer,tx-timer=2000", true);
	post_tx(0, 64, 0x11);
	uint64_t kicked = now_us();
	virtio_dev_queue_notify(&dev, TXQ);
	uint64_t waited = run_until_sent_more_than(0) - kicked;
	cr_assert_geq(waited, 2000, "sent after %lu us", (unsigned long)waited);
	cr_assert_lt(waited, 500000, "sent after %lu us: the delay is not tx-timer's 2 ms",
		     (unsigned long)waited);
	stop();
}

/* A second kick while the timer waits flushes at once (the ring is filling up). */
Test(virtio_net, timer_mode_kick_while_armed_flushes_now)
{
	start_with("tap=fake,tx=timer,tx-timer=1000000", true);
	post_tx(0, 64, 0x21);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 0);
	post_tx(1, 64, 0x22);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 2, "the second kick flushes without waiting 1 s");
	stop();
}

/* tx-burst caps each timer pass: 5 frames at 2 per pass go out 2, 2, 1, each pass a timer
 * period after the one before (a full burst re-arms the timer, no kick needed). */
Test(virtio_net, timer_mode_passes_are_capped_by_tx_burst)
{
	start_with("tap=fake,tx=timer,tx-timer=5000,tx-burst=2", true);
	for (uint16_t i = 0; i < 5; i++)
		post_tx(i, 64, (uint8_t)i);
	uint64_t last = now_us();
	virtio_dev_queue_notify(&dev, TXQ);
	const int after_pass[3] = {2, 4, 5};
	for (int p = 0, sent = 0; p < 3; sent = after_pass[p++]) {
		uint64_t at = run_until_sent_more_than(sent);
		cr_assert_eq(fake->nsent, after_pass[p], "pass %d: %d frames sent in all", p,
			     fake->nsent);
		cr_assert_geq(at - last, 5000, "pass %d came %lu us after the one before", p,
			      (unsigned long)(at - last));
		last = at;
	}
	cr_assert_eq(used_idx(TXQ), 5);
	stop();
}

static void queue_rx_frame(size_t payload, uint8_t tag)
{
	int i = fake->rx_head + fake->rx_count;
	memset(fake->rx[i], 0, NET_HDR_LEN);
	memset(fake->rx[i] + NET_HDR_LEN, tag, payload);
	fake->rx_len[i] = NET_HDR_LEN + payload;
	fake->rx_count++;
}

Test(virtio_net, mergeable_receive_spans_buffers)
{
	start(256, true);
	for (uint16_t i = 0; i < 8; i++)
		post(RXQ, i, 0x200000 + (uint64_t)i * 0x1000, 256, true);
	queue_rx_frame(1000, 0x77);
	client.rx_ready(client.opaque);
	cr_assert_eq(used_idx(RXQ), 4, "1012 bytes in 256-byte buffers: 4 of them");
	uint32_t total = 0;
	for (int i = 0; i < 4; i++)
		total += used_len(RXQ, i);
	cr_assert_eq(total, NET_HDR_LEN + 1000);
	uint8_t *first = gpa(0x200000);
	cr_assert_eq(first[10] | first[11] << 8, 4, "num_buffers");
	cr_assert_eq(((uint8_t *)gpa(0x203000))[0], 0x77);
	cr_assert_geq(queue_irqs, 1);
	stop();
}

Test(virtio_net, receive_waits_for_buffers_without_dropping)
{
	start(256, true);
	post(RXQ, 0, 0x200000, 2048, true);
	post(RXQ, 1, 0x201000, 2048, true);
	for (int i = 0; i < 3; i++)
		queue_rx_frame(100, (uint8_t)(0x20 + i));
	client.rx_ready(client.opaque);
	cr_assert_eq(used_idx(RXQ), 2);
	cr_assert_not(fake->rx_enabled, "no buffers: stop reading the backend");
	cr_assert_eq(fake->rx_count, 0, "the third frame is held by the device, not dropped");
	post(RXQ, 2, 0x202000, 2048, true);
	virtio_dev_queue_notify(&dev, RXQ);
	cr_assert_eq(used_idx(RXQ), 3);
	cr_assert_eq(((uint8_t *)gpa(0x202000))[NET_HDR_LEN], 0x22);
	cr_assert(fake->rx_enabled, "reading resumes once the guest posts buffers");
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.rx_packets, 3);
	cr_assert_eq(st.rx_dropped, 0);
	stop();
}

Test(virtio_net, frame_too_big_for_the_buffer_is_dropped_cleanly)
{
	start(256, false); /* no MRG_RXBUF: one buffer per frame */
	post(RXQ, 0, 0x200000, 100, true);
	post(RXQ, 1, 0x201000, 2048, true);
	queue_rx_frame(500, 0x55);
	queue_rx_frame(50, 0x66);
	client.rx_ready(client.opaque);
	cr_assert_eq(used_idx(RXQ), 2);
	cr_assert_eq(used_len(RXQ, 0), NET_HDR_LEN, "a header-only runt, which drivers discard");
	cr_assert_eq(used_len(RXQ, 1), NET_HDR_LEN + 50);
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.rx_dropped, 1);
	cr_assert_eq(st.rx_packets, 1);
	stop();
}

Test(virtio_net, transmit_chain_shorter_than_the_header_breaks_the_device)
{
	start(256, true);
	post(TXQ, 0, 0x100000, 4, false);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert(dev.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	cr_assert_eq(config_irqs, 1);
	cr_assert_eq(fake->nsent, 0);
	stop();
}

/* Offloads a transmit header asks for must have been negotiated: this device offers none (the
 * fake backend has no offloads), so checksum and segmentation requests are dropped and
 * counted, not handed to the backend (for a tap, the host kernel). */
Test(virtio_net, transmit_header_asking_for_unnegotiated_offloads_is_dropped)
{
	start(256, true);
	post_tx(0, 60, 0x11);
	post_tx(1, 60, 0x22);
	((uint8_t *)gpa(0x101000))[0] = 1; /* flags: NEEDS_CSUM */
	post_tx(2, 60, 0x33);
	((uint8_t *)gpa(0x102000))[1] = 1; /* gso_type: TCPV4 */
	post_tx(3, 60, 0x44);
	((uint8_t *)gpa(0x103000))[0] = 2; /* flags: DATA_VALID, receive only */
	post_tx(4, 60, 0x55);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 2, "only the plain frames reach the backend");
	cr_assert_eq(fake->sent[0][NET_HDR_LEN], 0x11);
	cr_assert_eq(fake->sent[1][NET_HDR_LEN], 0x55);
	cr_assert_eq(used_idx(TXQ), 5, "every chain is returned");
	cr_assert_not(dev.broken);
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.tx_dropped, 3);
	stop();
}

/* Receive is on (guest buffers posted, backend watched), then the device stops being live:
 * the next frame the backend reports must turn the watch off, or a level-triggered tap fd
 * wakes the I/O thread forever. */
static void receive_on(void)
{
	post(RXQ, 0, 0x200000, 2048, true);
	virtio_dev_queue_notify(&dev, RXQ);
	cr_assert(fake->rx_enabled);
}

Test(virtio_net, broken_device_stops_watching_the_backend)
{
	start(256, true);
	receive_on();
	post(TXQ, 0, 0x100000, 4, false); /* shorter than the header: breaks the device */
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert(dev.broken);
	queue_rx_frame(100, 0x42);
	client.rx_ready(client.opaque);
	cr_assert_not(fake->rx_enabled, "a device that cannot receive must not watch the backend");
	stop();
}

/* Clearing DRIVER_OK is not a way around the reset: the device is marked broken, and the
 * reset that follows still stops it (receive watch off). */
Test(virtio_net, reset_after_clearing_driver_ok_still_resets)
{
	start(256, true);
	receive_on();
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
					VIRTIO_STATUS_FEATURES_OK);
	cr_assert(dev.status & VIRTIO_STATUS_DRIVER_OK, "the driver cannot clear a status bit");
	cr_assert(dev.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	virtio_dev_set_status(&dev, 0);
	cr_assert_not(fake->rx_enabled, "the reset reached the device");
	cr_assert_eq(dev.status, 0);
	stop();
}

Test(virtio_net, default_macs_are_unique_per_index)
{
	uint8_t a[6], b2[6], c[6];
	virtio_net_default_mac("virtio-net0", a);
	virtio_net_default_mac("virtio-net10", b2);
	virtio_net_default_mac("virtio-net1", c);
	const uint8_t want0[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	const uint8_t want10[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x60};
	cr_assert_arr_eq(a, want0, 6);
	cr_assert_arr_eq(b2, want10, 6, "virtio-net10 must not collide with virtio-net0");
	cr_assert_eq(c[5], 0x57);
}

/* A backend that cannot take partially checksummed or GSO frames (the user-mode one, slirp) gets
 * none: the device offers neither CSUM nor HOST_TSO4, so a driver never sends it such a frame
 * (and one that does is dropped: transmit_header_asking_for_unnegotiated_offloads_is_dropped). */
Test(virtio_net, offloads_offered_only_where_the_backend_takes_them)
{
	const uint64_t csum = 1ull << 0, tso4 = 1ull << 11, guest_csum = 1ull << 1;
	fake_supported = (struct net_offloads){0};
	start(256, true);
	cr_assert_eq(dev.device_features & (csum | tso4 | guest_csum), 0);
	stop();
	fake_supported = (struct net_offloads){.csum = true, .tso4 = true};
	start(256, true);
	cr_assert_eq(dev.device_features & (csum | tso4), csum | tso4);
	stop();
	start_with("tap=fake,offload=off", true);
	cr_assert_eq(dev.device_features & (csum | tso4 | guest_csum), 0, "offload=off");
	stop();
	fake_supported = (struct net_offloads){0};
}

/* ---- snapshot and restore (vmm/snapshot/snapshot.c): the device's own state ---- */

/* A frame read from the backend but not delivered is held by the device, not by a chain: the
 * quiesce delivers it when the guest has posted a buffer meanwhile. */
Test(virtio_net, snapshot_quiesce_delivers_the_pending_frame)
{
	start(256, true);
	post(RXQ, 0, 0x200000, 2048, true);
	for (int i = 0; i < 2; i++)
		queue_rx_frame(100, (uint8_t)(0x30 + i));
	client.rx_ready(client.opaque);
	cr_assert_eq(used_idx(RXQ), 1);
	post(RXQ, 1, 0x201000, 2048, true); /* no kick: the snapshot comes first */
	int irqs = queue_irqs;
	virtio_net_quiesce(net);
	cr_assert_eq(used_idx(RXQ), 2, "the pending frame was not delivered");
	cr_assert_eq(((uint8_t *)gpa(0x201000))[NET_HDR_LEN], 0x31);
	cr_assert_gt(queue_irqs, irqs, "delivered without an interrupt");
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.rx_packets, 2);
	cr_assert_eq(st.rx_dropped, 0);
	stop();
}

/* Without buffers the pending frame is dropped (counted), as on a full ring: nothing of it
 * is left for a restored device to deliver twice or half. */
Test(virtio_net, snapshot_quiesce_drops_the_pending_frame_without_buffers)
{
	start(256, true);
	post(RXQ, 0, 0x200000, 2048, true);
	for (int i = 0; i < 2; i++)
		queue_rx_frame(100, (uint8_t)(0x30 + i));
	client.rx_ready(client.opaque);
	virtio_net_quiesce(net);
	cr_assert_eq(used_idx(RXQ), 1);
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.rx_dropped, 1);
	post(RXQ, 1, 0x201000, 2048, true);
	virtio_dev_queue_notify(&dev, RXQ);
	cr_assert_eq(used_idx(RXQ), 1, "the dropped frame was delivered after all");
	stop();
}

static uint8_t config_mac(int i)
{
	uint8_t mac[6];
	dev.ops->read_config(&dev, 0, mac, 6);
	return mac[i];
}

Test(virtio_net, snapshot_restore_carries_mac_link_and_counters)
{
	start_with("tap=fake,mac=52:54:00:aa:bb:cc", false);
	post_tx(0, 60, 0x11);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 1);
	struct virtio_net_state saved;
	virtio_net_save(net, &saved);
	stop();
	start(256, false); /* the default MAC: the saved one must replace it */
	char err[128];
	cr_assert_eq(virtio_net_restore(net, &saved, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_mac(3), 0xaa);
	cr_assert_eq(config_mac(5), 0xcc);
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.tx_packets, 1);
	cr_assert_eq(st.tx_bytes, 60);
	virtio_net_resignal(net);
	cr_assert_eq(config_irqs, 0, "the link did not change: no interrupt");
	stop();
	/* Saved with the link down (the old backend was lost): the new one is up, and the driver
	 * is told. */
	saved.status = 0;
	start(256, false);
	uint32_t gen = dev.config_generation;
	cr_assert_eq(virtio_net_restore(net, &saved, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(dev.config_generation, gen);
	virtio_net_resignal(net);
	cr_assert_eq(config_irqs, 1);
	uint16_t status;
	dev.ops->read_config(&dev, 6, (uint8_t *)&status, 2);
	cr_assert_eq(status, 1, "link up");
	stop();
}

Test(virtio_net, snapshot_restore_refuses_state_no_device_had)
{
	start(256, false);
	struct virtio_net_state saved;
	virtio_net_save(net, &saved);
	char err[128];
	saved.status = 3;
	cr_assert_eq(virtio_net_restore(net, &saved, err, sizeof(err)), -1);
	cr_assert(strstr(err, "link status 0x3"), "%s", err);
	saved.status = 1;
	saved.mac[0] = 0x01;
	cr_assert_eq(virtio_net_restore(net, &saved, err, sizeof(err)), -1);
	cr_assert(strstr(err, "multicast"), "%s", err);
	stop();
}

/* Saved between a kick and its transmit pass (kicks off, the ring already empty): the
 * restored device turns kicks back on, or the driver would never kick again. */
Test(virtio_net, snapshot_restore_turns_transmit_kicks_back_on)
{
	start(256, false);
	struct virtio_net_state saved;
	virtio_net_save(net, &saved);
	virtqueue_set_notification(&dev.vqs[TXQ], false); /* as the restored ring state says */
	cr_assert(dev.vqs[TXQ].notifications_off);
	char err[128];
	cr_assert_eq(virtio_net_restore(net, &saved, err, sizeof(err)), 0, "%s", err);
	event_loop_run_once(&loop, 0);
	cr_assert_not(dev.vqs[TXQ].notifications_off, "the driver is still told not to kick");
	stop();
}

/* ---- adaptive polling (poll-us): the device's poller on the loop ---- */

static struct event_poller *the_poller(void)
{
	cr_assert_not_null(loop.pollers, "poll-us= registered no poller");
	return loop.pollers;
}

/* The driver's side (virtio 1.2, 2.7.10): having moved avail->idx from old to where it is now,
 * must it kick? */
static bool guest_would_kick(int q, uint16_t old)
{
	uint16_t new_idx = avail_idx[q];
	const uint8_t *used = gpa(ring_base(q) + 0x2000);
	if (dev.vqs[q].event_idx) {
		uint16_t event = *(const uint16_t *)(used + 4 + 8 * QSIZE);
		return virtq_need_event(event, new_idx, old);
	}
	return !(*(const uint16_t *)used & VIRTQ_USED_F_NO_NOTIFY) && new_idx != old;
}

/* While the loop polls, the guest need not kick; a frame queued after the last poll, before
 * kicks are back on, is found by the last look (never stranded); then kicks are on again. */
static void poll_never_loses_a_frame(bool event_idx)
{
	extra_features = event_idx ? 1u << F_EVENT_IDX : 0;
	start_with("tap=fake,poll-us=100", true);
	extra_features = 0;
	cr_assert_eq(dev.vqs[TXQ].event_idx, event_idx);
	struct event_poller *p = the_poller();
	cr_assert_eq(p->max_ns, 100000);
	cr_assert_eq(loop.poll.max_ns, 100000);
	/* Not polling: a kick, a pass, kicks on again. */
	uint16_t old = avail_idx[TXQ];
	post_tx(0, 64, 0x10);
	cr_assert(guest_would_kick(TXQ, old), "kicks are on before polling");
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 1);
	/* The loop would sleep: it polls instead, and the guest is told not to kick. */
	p->begin(p->opaque);
	old = avail_idx[TXQ];
	post_tx(1, 64, 0x11);
	cr_assert_not(guest_would_kick(TXQ, old), "polling: the guest still has to kick");
	cr_assert(p->poll(p->opaque), "the poll does not see the frame");
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 2);
	/* After that pass kicks stay off (the loop polls on), and a frame comes after the last
	 * poll, before polling ends. */
	old = avail_idx[TXQ];
	post_tx(2, 64, 0x12);
	cr_assert_not(guest_would_kick(TXQ, old), "the pass turned kicks back on while polling");
	cr_assert(p->end(p->opaque), "the last look missed a frame queued without a kick");
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 3, "a frame was stranded when polling ended");
	cr_assert_eq(fake->sent[2][NET_HDR_LEN], 0x12);
	cr_assert_eq(used_idx(TXQ), 3);
	/* Polling over: the next frame is kicked again. */
	old = avail_idx[TXQ];
	post_tx(3, 64, 0x13);
	cr_assert(guest_would_kick(TXQ, old), "kicks stay off after polling ended");
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.poll_tx, 1);
	stop();
}

Test(virtio_net, poll_never_loses_a_frame_with_no_notify)
{
	poll_never_loses_a_frame(false);
}

Test(virtio_net, poll_never_loses_a_frame_with_event_idx)
{
	poll_never_loses_a_frame(true);
}

/* What a poll must not report, or the loop would spin on it: frames waiting for a full backend
 * (tx_ready brings them), and receive buffers it already tried (too few for the waiting frame).
 * Buffers posted after receive stalled are found without the guest's kick. */
Test(virtio_net, poll_reports_no_work_it_cannot_do)
{
	start_with("tap=fake,poll-us=100", true);
	struct event_poller *p = the_poller();
	fake->eagain_at = 0;
	post_tx(0, 64, 0x10);
	virtio_dev_queue_notify(&dev, TXQ);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(fake->nsent, 0);
	p->begin(p->opaque);
	cr_assert_not(p->poll(p->opaque), "frames held by a full backend reported as work");
	/* Receive stalls: a 1000-byte frame and no buffers. */
	queue_rx_frame(1000, 0x77);
	client.rx_ready(client.opaque);
	cr_assert_not(fake->rx_enabled);
	cr_assert_not(p->poll(p->opaque));
	/* One 256-byte buffer: new, so looked at, but too small for the frame. */
	post(RXQ, 0, 0x200000, 256, true);
	cr_assert(p->poll(p->opaque), "buffers posted after the stall not found");
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(RXQ), 0);
	cr_assert_not(p->poll(p->opaque), "the same buffers reported again: the loop would spin");
	/* Three more: the frame fits now. */
	for (uint16_t i = 1; i < 4; i++)
		post(RXQ, i, 0x200000 + (uint64_t)i * 0x1000, 256, true);
	cr_assert(p->poll(p->opaque));
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(RXQ), 4);
	cr_assert(fake->rx_enabled, "receive resumed");
	cr_assert_not(p->poll(p->opaque));
	struct virtio_net_stats st;
	virtio_net_stats(net, &st);
	cr_assert_eq(st.poll_rx, 2);
	cr_assert_eq(st.rx_packets, 1);
	p->end(p->opaque);
	stop();
}

Test(virtio_net, poll_options)
{
	struct net_options cfg;
	struct option_list opts;
	char err[160];
	cr_assert_eq(options_split("tap=x", "--net", &opts, err, sizeof(err)), 0);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(cfg.poll_us, NET_DEFAULT_POLL_US, "polling is on by default with tx=bh");
	cr_assert_eq(options_split("tap=x,poll-us=0", "--net", &opts, err, sizeof(err)), 0);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.poll_us, 0, "poll-us=0 turns it off");
	cr_assert_eq(options_split("tap=x,tx=timer", "--net", &opts, err, sizeof(err)), 0);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.poll_us, 0, "tx=timer does not poll, and needs no poll-us=0 to say so");
	cr_assert_eq(options_split("tap=x,poll-us=10001", "--net", &opts, err, sizeof(err)), 0);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), -1);
	cr_assert_eq(options_split("tap=x,tx=timer,poll-us=50", "--net", &opts, err, sizeof(err)),
		     0);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), -1);
	cr_assert(strstr(err, "poll-us= needs tx=bh"), "%s", err);
	cr_assert_eq(options_split("tap=x,poll-us=50", "--net", &opts, err, sizeof(err)), 0);
	cr_assert_eq(net_options_parse(&opts, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.poll_us, 50);
	/* Off: no poller, the loop never polls. */
	start(256, true);
	cr_assert_null(loop.pollers);
	stop();
}
