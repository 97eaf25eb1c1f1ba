/* The probe's virtio-rng driver: one queue, a ring of 4 KiB buffers kept full until done. */
#include "virtio_rng.h"

#include <stdbool.h>

#include "lib.h"
#include "x86.h"

#define RNG_BUF	       4096
#define RNG_NBUF       16
#define RNG_TIMEOUT_MS 3000 /* no completion for this long: the device is dead */

static uint8_t rng_buf[RNG_NBUF][RNG_BUF] __attribute__((aligned(4096), section(".noinit")));

struct virtio_dev **rng_devices(unsigned *n)
{
	static struct virtio_dev_set set;
	return virtio_devices_kept(&set, VIRTIO_ID_RNG, n);
}

const char *rng_init(struct virtio_dev *d)
{
	return virtio_init(d, 0, 1);
}

static void post(struct virtq *vq, unsigned b, uint8_t *buf_of)
{
	memset(rng_buf[b], 0, RNG_BUF);
	struct virtq_buf vb = {(uint64_t)rng_buf[b], RNG_BUF, true};
	int head = virtq_add(vq, &vb, 1);
	buf_of[head] = (uint8_t)b; /* cannot fail: RNG_NBUF <= queue size is checked */
}

const char *rng_read(struct virtio_dev *d, uint64_t total, rng_sink *sink, void *ctx,
		     struct rng_stats *st)
{
	struct virtq *vq = &d->vq[0];
	uint8_t buf_of[VIRTQ_MAX_SIZE], free_bufs[RNG_NBUF];
	unsigned nbuf = vq->size < RNG_NBUF ? vq->size : RNG_NBUF, nfree = nbuf, inflight = 0;
	const char *err;
	for (unsigned i = 0; i < nbuf; i++)
		free_bufs[i] = (uint8_t)i;
	uint64_t got = 0, kicks0 = vq->kicks, t0 = rdtsc();
	for (;;) {
		bool posted = false;
		while (nfree && got + (uint64_t)inflight * RNG_BUF < total) {
			post(vq, free_bufs[--nfree], buf_of);
			inflight++;
			posted = true;
		}
		if (posted)
			virtq_kick(vq, false);
		if (got >= total)
			break;
		uint16_t id;
		uint32_t len;
		if ((err = virtq_wait(vq, &id, &len, RNG_TIMEOUT_MS)))
			return err;
		/* Then everything else already there: one refill and one kick per batch. */
		do {
			if (len > RNG_BUF)
				return "rng used length exceeds the buffer";
			unsigned b = buf_of[id];
			if ((err = sink(ctx, rng_buf[b], len)))
				return err;
			got += len;
			inflight--;
			free_bufs[nfree++] = (uint8_t)b;
		} while (virtq_get(vq, &id, &len, &err) && !err);
		if (err)
			return err;
	}
	/* Wait for the buffers still in flight so the queue is idle (and reusable). */
	while (inflight) {
		uint16_t id;
		uint32_t len;
		if ((err = virtq_wait(vq, &id, &len, RNG_TIMEOUT_MS)))
			return err;
		inflight--;
	}
	st->cycles = rdtsc() - t0;
	st->bytes = got;
	st->kicks = vq->kicks - kicks0;
	return 0;
}
