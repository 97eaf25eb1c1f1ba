/* libFuzzer target: virtio-net transmit (virtio_net_hdr_v1 + frame to a fake backend, which
 * reads every byte it is handed) and receive (frames from the fake backend into the guest's
 * buffers, mergeable or not), driven by a fuzzed driver (tests/fuzz/fuzz_vdev.h describes the
 * operations; queue 0 receives, queue 1 transmits).
 * Input: u8 options (bit 0 tx=timer, bits 1-5 the backend's offloads: csum, tso4, tso6, ecn,
 * uso, bit 6 offload=off, bit 7 poll-us=20 unless tx=timer: the wait below polls first), u8 tx
 * burst (bit 7: tx-uring=on, frames to the backend in batches), u64 feature bits accepted, then
 * operations. The device operation is u8 what: 0 the backend receives a frame (u16 length, u8 count
 * and bytes, the rest a pattern), 1 the next send is refused with EAGAIN, 2 the backend can send
 * again, 3 the link goes down, 4 wait 1 ms for timers. Received frames are checked byte for byte in
 * the buffers the device returns (num_buffers aside), and their num_buffers against the buffers
 * used. */
#include <errno.h>

#include "devices/backends/net_backend.h"
#include "devices/virtio/net.h"
#include "fuzz_vdev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_MAX (NET_HDR_LEN + 65536)
#define RXQ_MAX	  8

static struct {
	struct net_backend be;
	struct net_offloads offloads;
	uint8_t *rx[RXQ_MAX];
	size_t rx_len[RXQ_MAX];
	int rx_head, rx_count;
	bool eagain;
	uint64_t sent;
} fake;

static volatile uint8_t sink;

/* Frames the device took from the backend, in order, until the guest sees them; and the one
 * being reassembled from the receive queue's used entries. */
#define GIVEN_MAX 64
static struct {
	uint8_t *f[GIVEN_MAX];
	size_t len[GIVEN_MAX];
	int head, count;
	bool unreliable; /* a frame was not recorded, or buffers' contents cannot be trusted */
	bool in_frame;
	size_t off;	  /* bytes of the current frame seen so far */
	unsigned left;	  /* used entries still to come for it (num_buffers) */
	unsigned checked; /* frames compared (FUZZ_VERBOSE) */
} given;

static void given_pop(void)
{
	free(given.f[given.head]);
	given.f[given.head] = NULL;
	given.head = (given.head + 1) % GIVEN_MAX;
	given.count--;
	given.in_frame = false;
}

static void given_clear(void)
{
	while (given.count)
		given_pop();
	given.head = 0;
}

/* A reset drops the frame the device held: start again from the next one. */
static void rx_reset(void)
{
	given_clear();
}

/* Copy the first len bytes a used chain's writable buffers hold. */
static void chain_bytes(const struct fv_chain *c, uint8_t *out, size_t len)
{
	for (unsigned i = 0; i < c->nw && len; i++) {
		size_t n = c->w_len[i] < len ? c->w_len[i] : len;
		const uint8_t *p = guest_mem_ptr(&fv.mem, c->w_addr[i], n);
		if (!p)
			abort();
		memcpy(out, p, n);
		out += n;
		len -= n;
	}
}

/* Every receive buffer the device returns holds the next frame's bytes, and num_buffers in the
 * first one's header counts the buffers the frame took; a frame too big for the buffers comes
 * back as a bare header in one buffer (dropped). */
static void check_used(int q, const struct fv_chain *c, uint32_t len)
{
	static uint8_t got[FRAME_MAX];
	if (q != 0)
		return;
	if (fv.wild || fv.wrapped)
		given.unreliable = true;
	if (given.unreliable)
		return;
	if (!given.count)
		abort(); /* a receive buffer used without a frame */
	const uint8_t *f = given.f[given.head];
	size_t flen = given.len[given.head];
	if (len > c->writable)
		abort();
	chain_bytes(c, got, len);
	if (!given.in_frame) {
		if (len < NET_HDR_LEN)
			abort();
		unsigned nb = got[10] | got[11] << 8;
		bool mergeable = fv.features & (1ULL << 15);
		if (nb == 0 || (!mergeable && nb != 1) || memcmp(got, f, 10))
			abort();
		if (len == NET_HDR_LEN && flen > NET_HDR_LEN) {
			if (nb != 1)
				abort();
			given_pop(); /* too big for the buffers: dropped */
			given.checked++;
			return;
		}
		given.in_frame = true;
		given.off = 0;
		given.left = nb;
	}
	for (size_t k = 0; k < len; k++) {
		size_t at = given.off + k;
		if (at >= flen || (at != 10 && at != 11 && got[k] != f[at]))
			abort();
	}
	given.off += len;
	if (--given.left == 0) {
		if (given.off != flen)
			abort();
		given_pop();
		given.checked++;
	}
}

static int fake_send(struct net_backend *be, const struct iovec *iov, int iovcnt)
{
	(void)be;
	if (fake.eagain) {
		fake.eagain = false;
		return -EAGAIN;
	}
	size_t total = 0;
	for (int i = 0; i < iovcnt; i++) {
		for (size_t k = 0; k < iov[i].iov_len; k++)
			sink ^= ((const uint8_t *)iov[i].iov_base)[k];
		total += iov[i].iov_len;
	}
	if (total < NET_HDR_LEN)
		abort(); /* the device checks the header is there */
	fake.sent++;
	return 0;
}

/* tx-uring=on: the frames in order, each as fake_send takes it, stopping at the refused one. */
static int fake_send_batch(struct net_backend *be, struct net_frame *frames, int n)
{
	if (n < 1)
		abort(); /* the device never asks for an empty batch */
	for (int i = 0; i < n; i++) {
		int rc = fake_send(be, frames[i].iov, frames[i].iovcnt);
		if (rc == -EAGAIN)
			return i;
		frames[i].rc = rc;
	}
	return n;
}

static ssize_t fake_recv(struct net_backend *be, uint8_t *buf, size_t len)
{
	(void)be;
	if (!fake.rx_count)
		return 0;
	int i = fake.rx_head;
	size_t n = fake.rx_len[i] < len ? fake.rx_len[i] : len;
	memcpy(buf, fake.rx[i], n);
	if (n >= NET_HDR_LEN && given.count < GIVEN_MAX) {
		int g = (given.head + given.count++) % GIVEN_MAX;
		given.f[g] = fake.rx[i];
		given.len[g] = n;
	} else {
		if (n >= NET_HDR_LEN)
			given.unreliable = true;
		free(fake.rx[i]);
	}
	fake.rx[i] = NULL;
	fake.rx_head = (i + 1) % RXQ_MAX;
	fake.rx_count--;
	return (ssize_t)n;
}

static void fake_offloads(struct net_backend *be, struct net_offloads *o)
{
	(void)be;
	*o = fake.offloads;
}

static int fake_set_rx_offloads(struct net_backend *be, const struct net_offloads *o)
{
	(void)be;
	(void)o;
	return 0;
}

static void fake_set_rx_enabled(struct net_backend *be, bool enabled)
{
	(void)be;
	(void)enabled;
}

static void fake_destroy(struct net_backend *be)
{
	(void)be;
	for (; fake.rx_count; fake.rx_count--, fake.rx_head = (fake.rx_head + 1) % RXQ_MAX) {
		free(fake.rx[fake.rx_head]);
		fake.rx[fake.rx_head] = NULL;
	}
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

static struct net_backend *open_fake(const struct net_options *cfg, struct event_loop *loop,
				     const struct net_backend_client *c, char *err, size_t errlen)
{
	(void)cfg;
	(void)err;
	(void)errlen;
	fake.be.ops = &fake_ops;
	fake.be.loop = loop;
	fake.be.client = *c;
	return &fake.be;
}

static void fv_device_op(struct fv_input *in)
{
	const struct net_backend_client *c = &fake.be.client;
	switch (fv_u8(in) % 5) {
	case 0: {
		size_t len = fv_u16(in) % (FRAME_MAX + 1);
		unsigned fill = fv_u8(in) % (FV_FILL_MAX + 1);
		uint8_t *f = malloc(len ? len : 1);
		for (size_t k = 0; k < len; k++)
			f[k] = (uint8_t)k;
		for (unsigned k = 0; k < fill; k++) {
			uint8_t v = fv_u8(in);
			if (k < len)
				f[k] = v;
		}
		if (fake.rx_count == RXQ_MAX) {
			free(f);
			break;
		}
		int slot = (fake.rx_head + fake.rx_count++) % RXQ_MAX;
		fake.rx[slot] = f;
		fake.rx_len[slot] = len;
		c->rx_ready(c->opaque);
		break;
	}
	case 1:
		fake.eagain = true;
		break;
	case 2:
		c->tx_ready(c->opaque);
		break;
	case 3:
		c->link_down(c->opaque, "fuzz");
		break;
	case 4:
		event_loop_run_once(&fv.loop, 1);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fv_global_init();
	struct fv_input in = {data, size};
	uint8_t opt = fv_u8(&in), burst = fv_u8(&in);
	fake.offloads = (struct net_offloads){
	    .csum = opt & 2, .tso4 = opt & 4, .tso6 = opt & 8, .ecn = opt & 16, .uso = opt & 32};
	fake.eagain = false;
	struct net_options cfg = {.tap = "fuzz0"};
	cfg.tx_mode = (opt & 1) ? NET_TX_TIMER : NET_TX_BH;
	cfg.tx_burst = burst & 0x7f ? burst & 0x7f : 1;
	cfg.tx_uring = burst & 0x80;
	cfg.tx_timer_us = 100;
	cfg.offload = !(opt & 64);
	cfg.poll_us = (opt & 128) && !(opt & 1) ? 20 : 0;
	fv_begin();
	struct virtio_net *net =
	    virtio_net_create(&fv.dev, &fv.mem, &fv.loop, &cfg, "fuzz-net", open_fake);
	if (!net)
		abort();
	given_clear();
	given.unreliable = false;
	given.checked = 0;
	fv.check_used = check_used;
	fv.on_reset = rx_reset;
	fv_restart_features = fv_u64(&in);
	fv_driver_start(fv_restart_features);
	fv_run_ops(&in);
	virtio_net_destroy(net);
	given_clear();
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "received frames checked: %u%s\n", given.checked,
			given.unreliable ? " (then unreliable)" : "");
	pthread_mutex_destroy(&fv.dev.lock);
	return 0;
}
