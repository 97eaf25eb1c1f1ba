/*
 * test=virtio-bench: on the first virtio-rng device of each transport, with and without
 * VIRTIO_RING_F_EVENT_IDX (the device is reset and re-initialised for each mode):
 *  - notify: one 64-byte buffer at a time, always kicked, completion by polling -> kicks/s;
 *  - irq: the same with a used-buffer interrupt requested for each buffer and the probe
 *    halted until it arrives -> interrupts/s and the mean kick-to-completion round trip;
 *  - stream: vbench.m buffers through the queue kept full, kicks and interrupts exactly as
 *    the spec's suppression rules allow (2.7.10, 2.7.7) -> kicks and interrupts per 1000.
 * One line per transport and mode:
 *   probe: vbench transport=mmio notify_per_s=N irq_per_s=N irq_rtt_us=X event_idx=on
 *          kicks_per_1000=K irqs_per_1000=I stalls=S n=N m=M
 * vbench.n=N (default 2000) and vbench.m=M (default 4096) set the counts.
 */
#include "boot_info.h"
#include "cmdline.h"
#include "irq.h"
#include "printf.h"
#include "test_virtio_bench.h"
#include "virtio_rng.h"
#include "x86.h"

#define BUF_LEN	   64
#define DEFAULT_N  2000
#define DEFAULT_M  4096
#define TIMEOUT_MS 3000
#define STALL_MS   50 /* no used buffer for this long with the ring full: the device stalled */
#define MAX_STALLS 200

static uint8_t bufs[VIRTQ_MAX_SIZE][BUF_LEN] __attribute__((aligned(64), section(".noinit")));

struct result {
	uint64_t notify_per_s, irq_per_s, rtt_us10; /* rtt in tenths of a microsecond */
	uint64_t kicks, irqs, stalls;		    /* in the stream phase */
};

static uint64_t param(const char *key, uint64_t dflt)
{
	const char *v;
	size_t n;
	uint64_t x;
	if (cmdline_get(boot_info.cmdline, key, &v, &n) && parse_u64(v, n, false, &x) && x)
		return x;
	return dflt;
}

/* One device-writable buffer; the descriptor id picks the buffer, so any free one will do. */
static const char *post(struct virtq *vq)
{
	struct virtq_buf b = {(uint64_t)bufs[vq->free_head % VIRTQ_MAX_SIZE], BUF_LEN, true};
	return virtq_add(vq, &b, 1) < 0 ? "vbench: queue full" : 0;
}

static uint64_t per_s(uint64_t count, uint64_t cycles)
{
	uint64_t us = virtio_cycles_to_us(cycles);
	return us ? count * 1000000 / us : 0;
}

/* Polling: every kick forced, even where EVENT_IDX would suppress it. */
static const char *bench_notify(struct virtq *vq, uint64_t n, struct result *r)
{
	const char *err;
	uint16_t id;
	uint32_t len;
	vq->use_irq = false;
	virtq_disarm(vq);
	uint64_t kicks0 = vq->kicks, t0 = rdtsc();
	for (uint64_t i = 0; i < n; i++) {
		if ((err = post(vq)))
			return err;
		virtq_kick(vq, true);
		if ((err = virtq_wait(vq, &id, &len, TIMEOUT_MS)))
			return err;
	}
	r->notify_per_s = per_s(vq->kicks - kicks0, rdtsc() - t0);
	vq->use_irq = true;
	return 0;
}

/* An interrupt requested before each kick; the probe halts until it has been handled. */
static const char *bench_irq(struct virtq *vq, uint64_t n, struct result *r)
{
	struct virtio_dev *d = vq->dev;
	const char *err;
	uint16_t id;
	uint32_t len;
	uint64_t irqs0 = d->irqs, t0 = rdtsc(), limit = virtio_ms_to_cycles(TIMEOUT_MS);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t before = d->irqs, t1 = rdtsc();
		virtq_arm(vq, vq->last_used); /* the entry this buffer will take */
		if ((err = post(vq)))
			return err;
		virtq_kick(vq, true);
		while (d->irqs == before) {
			if (rdtsc() - t1 > limit)
				return "vbench: no used-buffer interrupt";
			irq_wait();
		}
		if (!virtq_get(vq, &id, &len, &err))
			return "vbench: interrupt without a used buffer";
		if (err)
			return err;
	}
	uint64_t cycles = rdtsc() - t0;
	r->irq_per_s = per_s(d->irqs - irqs0, cycles);
	r->rtt_us10 = virtio_cycles_to_us(cycles * 10) / n;
	virtq_disarm(vq);
	return 0;
}

/* Add one buffer and notify exactly when the suppression rules say so (virtq_kick). */
static const char *add_one(struct virtq *vq, uint64_t *posted)
{
	const char *err = post(vq);
	if (err)
		return err;
	++*posted;
	virtq_kick(vq, false);
	return 0;
}

/* Take everything the device has used, putting a fresh buffer back for each one. */
static const char *drain_refill(struct virtq *vq, uint64_t m, uint64_t *posted, uint64_t *done)
{
	const char *err;
	uint16_t id;
	uint32_t len;
	while (virtq_get(vq, &id, &len, &err)) {
		if (err)
			return err;
		++*done;
		if (*posted < m && (err = add_one(vq, posted)))
			return err;
	}
	return 0;
}

/*
 * Halt until the device uses something. A device that drained the ring but left avail_event
 * behind never hears the driver's next (correctly suppressed) additions: after STALL_MS
 * without progress, kick anyway and count it as a stall. stalls=0 is what a correct device
 * gives; each rescue kick is also counted in kicks (it is an exit).
 */
static const char *sleep_or_rescue(struct virtq *vq, struct result *r)
{
	uint64_t t1 = rdtsc(), stall = virtio_ms_to_cycles(STALL_MS);
	while (vq->used->idx == vq->last_used) {
		if (rdtsc() - t1 > stall) {
			if (virtio_status(vq->dev) & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
				return "virtio device needs reset";
			if (++r->stalls > MAX_STALLS)
				return "vbench: device stops using buffers (see stalls)";
			virtq_kick(vq, true);
			t1 = rdtsc();
		}
		irq_wait(); /* the 100 ms watchdog tick (irq.c) bounds each halt */
	}
	return 0;
}

/*
 * The ring kept full, one buffer at a time: each used buffer is replaced at once and the
 * driver notifies only when the device asked for it (EVENT_IDX: avail_event crossed; without:
 * used->flags lacks NO_NOTIFY). It sleeps with an interrupt requested half-way through what
 * is in flight (EVENT_IDX) or at the next used buffer (without), and turns interrupts off
 * again while it works, as Linux's virtqueue_disable_cb() does.
 */
static const char *bench_stream(struct virtq *vq, uint64_t m, struct result *r)
{
	struct virtio_dev *d = vq->dev;
	const char *err;
	uint64_t posted = 0, done = 0, kicks0 = vq->kicks, irqs0 = d->irqs;
	virtq_disarm(vq);
	while (posted < m && vq->num_free)
		if ((err = add_one(vq, &posted)))
			return err;
	while (done < m) {
		uint64_t before = done;
		if ((err = drain_refill(vq, m, &posted, &done)))
			return err;
		if (done != before || done == m)
			continue;
		uint16_t inflight = (uint16_t)(posted - done);
		virtq_arm(vq, (uint16_t)(vq->last_used + (inflight - 1) / 2));
		if ((err = sleep_or_rescue(vq, r)))
			return err;
		virtq_disarm(vq);
	}
	r->kicks = vq->kicks - kicks0;
	r->irqs = d->irqs - irqs0;
	return 0;
}

static void report(struct virtio_dev *d, bool eidx, const struct result *r, uint64_t n, uint64_t m)
{
	uint64_t k10 = r->kicks * 10000 / m, i10 = r->irqs * 10000 / m;
	kprintf(
	    "probe: vbench transport=%s notify_per_s=%lu irq_per_s=%lu irq_rtt_us=%lu.%lu "
	    "event_idx=%s kicks_per_1000=%lu.%lu irqs_per_1000=%lu.%lu stalls=%lu n=%lu m=%lu\n",
	    virtio_transport_name(d), r->notify_per_s, r->irq_per_s, r->rtt_us10 / 10,
	    r->rtt_us10 % 10, eidx ? "on" : "off", k10 / 10, k10 % 10, i10 / 10, i10 % 10,
	    r->stalls, n, m);
}

static const char *bench_device(struct virtio_dev *d, uint64_t n, uint64_t m)
{
	const char *err;
	for (int mode = 1; mode >= 0; mode--) {
		bool eidx = mode;
		if (eidx && !virtio_event_idx_allowed())
			continue;
		d->use_irq = true;
		d->no_event_idx = !eidx;
		if ((err = virtio_init(d, 0, 1)))
			return err;
		struct virtq *vq = &d->vq[0];
		if (eidx && !vq->event_idx) {
			kprintf("probe: vbench transport=%s event_idx=unavailable\n",
				virtio_transport_name(d));
			continue;
		}
		struct result r = {0};
		if ((err = bench_notify(vq, n, &r)) || (err = bench_irq(vq, n, &r)) ||
		    (err = bench_stream(vq, m, &r)))
			return err;
		report(d, eidx, &r, n, m);
	}
	/* Leave it as the other tests expect to find a device: polled, defaults. */
	d->use_irq = false;
	d->no_event_idx = false;
	return virtio_reset(d);
}

const char *test_virtio_bench(void)
{
	uint64_t n = param("vbench.n", DEFAULT_N), m = param("vbench.m", DEFAULT_M);
	unsigned count, done = 0;
	struct virtio_dev **devs = rng_devices(&count);
	bool seen[2] = {false, false};
	for (unsigned i = 0; i < count; i++) {
		struct virtio_dev *d = devs[i];
		if (seen[d->transport])
			continue;
		seen[d->transport] = true;
		const char *err = bench_device(d, n, m);
		if (err)
			return err;
		done++;
	}
	return done ? 0 : "no virtio-rng device";
}
