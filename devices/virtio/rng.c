#include "rng.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/event_loop.h"
#include "base/log.h"

#define RNG_QUEUE_SIZE 256
/* Bytes served per request: a chain may describe up to 4 GiB of buffers (aliasing one page
 * over and over), and Linux asks for 64 bytes at a time. The device may write less than the
 * buffers hold (virtio 1.2, 5.4.6.2). */
#define RNG_MAX_CHAIN_BYTES (64u << 10)
/* Bytes served per pass over the ring before the I/O thread looks at other work. */
#define RNG_PASS_BYTES (256u << 10)

struct virtio_rng {
	struct virtio_dev *dev;
	virtio_rng_source_fn source; /* where the bytes come from: getrandom() unless a test says */
	void *source_opaque;
	struct virtq_elem *elem; /* one request at a time; allocated once */
	struct bottom_half more; /* continue a long ring drain in the next loop iteration */
	uint64_t bytes;
};

static ssize_t host_getrandom(void *opaque, void *buf, size_t len)
{
	(void)opaque;
	return getrandom(buf, len, 0);
}

/* Fill up to max bytes of one iovec from the entropy source; returns the bytes written. */
static size_t fill(struct virtio_rng *rng, struct iovec *iov, size_t max)
{
	size_t done = 0, want = iov->iov_len < max ? iov->iov_len : max;
	while (done < want) {
		ssize_t n =
		    rng->source(rng->source_opaque, (uint8_t *)iov->iov_base + done, want - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

/* Serve at most one ring's worth of requests, and RNG_PASS_BYTES, per call, so one guest cannot
 * monopolise the I/O thread (or hold dev->lock, which its vCPUs need, for long); what is left is
 * picked up by a bottom half. Called with dev->lock held. */
static void process_queue(struct virtio_rng *rng)
{
	struct virtio_dev *dev = rng->dev;
	struct virtqueue *vq = &dev->vqs[0];
	char err[160];
	bool pushed = false;
	unsigned n = 0;
	size_t pass = 0;
	for (; n < vq->size && pass < RNG_PASS_BYTES; n++) {
		int rc = virtqueue_pop(vq, rng->elem, err, sizeof(err));
		if (rc < 0) {
			virtio_dev_mark_broken(dev, err);
			return;
		}
		if (rc == 0)
			break;
		/* The used length says the first `written` bytes of the chain are filled: stop at
		 * the first buffer the source could not fill, so none is left with a gap. */
		size_t written = 0;
		for (unsigned i = 0; i < rng->elem->in_num && written < RNG_MAX_CHAIN_BYTES; i++) {
			size_t want = RNG_MAX_CHAIN_BYTES - written;
			size_t got = fill(rng, &rng->elem->in[i], want);
			written += got;
			if (got < rng->elem->in[i].iov_len && got < want)
				break;
		}
		rng->bytes += written;
		pass += written;
		virtqueue_push(vq, rng->elem->head, (uint32_t)written);
		pushed = true;
	}
	if (pushed)
		virtio_dev_notify_used(dev, 0);
	/* Out of budget: come back even if the ring looks empty now, because only a pop that
	 * finds it empty re-arms the driver's kicks (EVENT_IDX). */
	if (n == vq->size || pass >= RNG_PASS_BYTES || virtqueue_has_work(vq))
		bottom_half_schedule(dev->loop, &rng->more);
}

static void queue_notify(struct virtio_dev *dev, int q)
{
	(void)q;
	process_queue(dev->priv);
}

static void continue_drain(void *opaque)
{
	struct virtio_rng *rng = opaque;
	struct virtio_dev *dev = rng->dev;
	virtio_dev_lock(dev);
	if (virtio_dev_live(dev) && dev->vqs[0].desc)
		process_queue(rng);
	virtio_dev_unlock(dev);
}

static const struct virtio_device_ops rng_ops = {
    .name = "virtio-rng",
    .device_id = VIRTIO_ID_RNG,
    .max_queue_size = RNG_QUEUE_SIZE,
    .config_size = 0,
    .queue_notify = queue_notify,
};

struct virtio_rng *virtio_rng_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const char *label)
{
	struct virtio_rng *rng = calloc(1, sizeof(*rng));
	if (rng)
		rng->elem = malloc(sizeof(*rng->elem));
	if (!rng || !rng->elem) {
		free(rng);
		log_error("%s: out of memory", label);
		return NULL;
	}
	rng->dev = dev;
	rng->source = host_getrandom;
	bottom_half_init(&rng->more, continue_drain, rng);
	const struct virtio_dev_params params = {
	    .features = (1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << VIRTIO_RING_F_INDIRECT_DESC),
	    .nr_queues = 1,
	};
	virtio_dev_init(dev, &rng_ops, &params, rng, mem, loop, label);
	return rng;
}

void virtio_rng_destroy(struct virtio_rng *rng)
{
	if (!rng)
		return;
	free(rng->elem);
	free(rng);
}

void virtio_rng_set_source(struct virtio_rng *rng, virtio_rng_source_fn source, void *opaque)
{
	rng->source = source;
	rng->source_opaque = opaque;
}

uint64_t virtio_rng_bytes(const struct virtio_rng *rng)
{
	return rng->bytes;
}
