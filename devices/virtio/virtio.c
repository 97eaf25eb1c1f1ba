#include "virtio.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

static void serve_early_buffers(void *opaque);

void virtio_dev_init(struct virtio_dev *dev, const struct virtio_device_ops *ops,
		     const struct virtio_dev_params *params, void *priv, struct guest_mem *mem,
		     struct event_loop *loop, const char *label)
{
	memset(dev, 0, sizeof(*dev));
	dev->ops = ops;
	dev->priv = priv;
	dev->mem = mem;
	dev->loop = loop;
	snprintf(dev->label, sizeof(dev->label), "%s", label);
	pthread_mutex_init(&dev->lock, NULL);
	bottom_half_init(&dev->driver_ok_bh, serve_early_buffers, dev);
	dev->nr_queues = params->nr_queues;
	dev->device_features = params->features | (1ULL << VIRTIO_F_VERSION_1);
	dev->dma_enabled = true;
	for (int q = 0; q < dev->nr_queues && q < VIRTIO_MAX_QUEUES; q++)
		dev->vqs[q].size = ops->max_queue_size;
}

uint32_t virtio_dev_get_device_features(const struct virtio_dev *dev, uint32_t sel)
{
	if (sel > 1)
		return 0;
	return (uint32_t)(dev->device_features >> (32 * sel));
}

/* Under the lock: count the take, and start a hold sample on every VIRTIO_LOCK_HOLD_SAMPLE-th. */
static void lock_taken(struct virtio_dev *dev)
{
	if (dev->lock_taken++ % VIRTIO_LOCK_HOLD_SAMPLE == 0)
		dev->lock_hold_start_ns = clock_monotonic_ns();
}

void virtio_dev_lock(struct virtio_dev *dev)
{
	if (pthread_mutex_trylock(&dev->lock) == 0) {
		lock_taken(dev);
		return;
	}
	uint64_t a = clock_monotonic_ns();
	atomic_fetch_add(&dev->lock_waiters, 1);
	pthread_mutex_lock(&dev->lock);
	atomic_fetch_sub(&dev->lock_waiters, 1);
	dev->lock_contended++;
	dev->lock_wait_ns += clock_monotonic_ns() - a;
	lock_taken(dev);
}

void virtio_dev_unlock(struct virtio_dev *dev)
{
	if (dev->lock_hold_start_ns) {
		uint64_t held = clock_monotonic_ns() - dev->lock_hold_start_ns;
		dev->lock_hold_start_ns = 0;
		dev->lock_hold_samples++;
		dev->lock_hold_ns += held;
		if (held > dev->lock_hold_max_ns)
			dev->lock_hold_max_ns = held;
	}
	pthread_mutex_unlock(&dev->lock);
}

void virtio_dev_set_driver_features(struct virtio_dev *dev, uint32_t sel, uint32_t value)
{
	virtio_dev_lock(dev);
	/* Features are fixed once FEATURES_OK is set (virtio 1.2, 3.1.1). */
	if (sel <= 1 && !(dev->status & VIRTIO_STATUS_FEATURES_OK)) {
		uint64_t mask = 0xffffffffULL << (32 * sel);
		dev->driver_features =
		    (dev->driver_features & ~mask) | ((uint64_t)value << (32 * sel));
	}
	virtio_dev_unlock(dev);
}

bool virtio_dev_has_feature(const struct virtio_dev *dev, unsigned bit)
{
	return bit < 64 && (dev->driver_features >> bit) & 1;
}

bool virtio_dev_live(const struct virtio_dev *dev)
{
	return !dev->broken && dev->dma_enabled && (dev->status & VIRTIO_STATUS_DRIVER_OK);
}

uint8_t virtio_dev_status(const struct virtio_dev *dev)
{
	uint8_t status = __atomic_load_n(&dev->status, __ATOMIC_ACQUIRE);
	if (!status && __atomic_load_n(&dev->reset_pending, __ATOMIC_ACQUIRE))
		return VIRTIO_STATUS_DEVICE_NEEDS_RESET;
	return status;
}

void virtio_dev_reset_done(struct virtio_dev *dev)
{
	__atomic_store_n(&dev->reset_pending, false, __ATOMIC_RELEASE);
}

static void reset_locked(struct virtio_dev *dev)
{
	/* Whatever the driver did to the status bits since, an activated device is reset:
	 * in-flight work must never complete into the re-initialised rings. */
	if (dev->activated && dev->ops->reset)
		dev->ops->reset(dev);
	dev->activated = false;
	for (int q = 0; q < dev->nr_queues; q++) {
		virtqueue_reset(&dev->vqs[q]);
		dev->vqs[q].size = dev->ops->max_queue_size;
	}
	/* Release: a reader without the lock that sees 0 also sees reset_pending. */
	__atomic_store_n(&dev->status, 0, __ATOMIC_RELEASE);
	dev->driver_features = 0;
	dev->broken = false;
}

static void needs_reset_locked(struct virtio_dev *dev, const char *whose, const char *reason)
{
	if (dev->broken)
		return;
	dev->broken = true;
	dev->status |= VIRTIO_STATUS_DEVICE_NEEDS_RESET;
	log_warn_ratelimited(&dev->broken_log, "%s: %s%s; device needs reset", dev->label, whose,
			     reason);
	if (dev->transport && dev->transport->signal_config)
		dev->transport->signal_config(dev);
}

static void mark_broken_locked(struct virtio_dev *dev, const char *reason)
{
	needs_reset_locked(dev, "guest driver error: ", reason);
}

void virtio_dev_mark_broken(struct virtio_dev *dev, const char *reason)
{
	/* Device models call this with dev->lock held (from queue processing). */
	mark_broken_locked(dev, reason);
}

void virtio_dev_fail(struct virtio_dev *dev, const char *reason)
{
	needs_reset_locked(dev, "", reason);
}

/* Validate and map one queue the driver made ready. */
static bool enable_queue(struct virtio_dev *dev, int q)
{
	struct virtqueue *vq = &dev->vqs[q];
	vq->event_idx = virtio_dev_has_feature(dev, VIRTIO_RING_F_EVENT_IDX);
	vq->indirect = virtio_dev_has_feature(dev, VIRTIO_RING_F_INDIRECT_DESC);
	char err[160], reason[200];
	if (vq->size > dev->ops->max_queue_size)
		snprintf(err, sizeof(err), "size %u exceeds the maximum %u", vq->size,
			 dev->ops->max_queue_size);
	else if (virtqueue_enable(vq, dev->mem, err, sizeof(err)) == 0)
		return true;
	snprintf(reason, sizeof(reason), "queue %d: %s", q, err);
	mark_broken_locked(dev, reason);
	return false;
}

static bool features_acceptable(const struct virtio_dev *dev)
{
	return !(dev->driver_features & ~dev->device_features) &&
	       (dev->driver_features >> VIRTIO_F_VERSION_1) & 1;
}

/* Bits only the driver sets, and only a reset (writing 0) clears (virtio 1.2, 2.1.2). */
#define DRIVER_STATUS_BITS                                                                         \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |            \
	 VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FAILED)

void virtio_dev_set_status(struct virtio_dev *dev, uint8_t status)
{
	virtio_dev_lock(dev);
	if (status == 0) {
		reset_locked(dev);
		virtio_dev_unlock(dev);
		return;
	}
	uint8_t old = dev->status;
	/* "The driver MUST NOT clear a device status bit": a write that tries (say, dropping
	 * FEATURES_OK to renegotiate, or DRIVER_OK to dodge the reset) keeps every bit already
	 * set, and a device that was set up is marked broken until the driver resets it. */
	uint8_t cleared = old & (uint8_t)~status & DRIVER_STATUS_BITS;
	status |= cleared;
	uint8_t added = status & ~old;
	/* Refusing FEATURES_OK: the bit does not stick, and the driver sees that on re-read. */
	if ((added & VIRTIO_STATUS_FEATURES_OK) && !features_acceptable(dev))
		status &= (uint8_t)~VIRTIO_STATUS_FEATURES_OK;
	if ((added & VIRTIO_STATUS_DRIVER_OK) && !(status & VIRTIO_STATUS_FEATURES_OK))
		status &= (uint8_t)~VIRTIO_STATUS_DRIVER_OK;
	/* NEEDS_RESET is the device's bit: the driver can neither set nor clear it. */
	status = (status & (uint8_t)~VIRTIO_STATUS_DEVICE_NEEDS_RESET) |
		 (old & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	dev->status = status;
	if (cleared & (VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK))
		mark_broken_locked(dev, "driver cleared status bits without a reset");
	if ((status & ~old) & VIRTIO_STATUS_DRIVER_OK) {
		bool ok = true;
		for (int q = 0; q < dev->nr_queues && ok; q++)
			if (dev->vqs[q].ready)
				ok = enable_queue(dev, q);
		/* From here the device may hold queue state: a reset must undo it. */
		dev->activated = ok;
		if (ok && dev->ops->activate && dev->ops->activate(dev) < 0)
			mark_broken_locked(dev, "device activation failed");
		if (ok && !dev->broken && dev->loop)
			bottom_half_schedule(dev->loop, &dev->driver_ok_bh);
	}
	virtio_dev_unlock(dev);
}

/* Kicks before DRIVER_OK are ignored, but drivers do make buffers available then: Linux's
 * virtio_balloon queues (and kicks) its first statistics buffer in probe, before DRIVER_OK,
 * and never again until the device returns it. Look at every queue once, on the I/O thread. */
static void serve_early_buffers(void *opaque)
{
	struct virtio_dev *dev = opaque;
	virtio_dev_lock(dev);
	if (dev->ops->restart) {
		if (virtio_dev_live(dev))
			dev->ops->restart(dev);
		virtio_dev_unlock(dev);
		return;
	}
	for (int q = 0; q < dev->nr_queues; q++)
		if (virtio_dev_live(dev) && dev->vqs[q].desc && dev->ops->queue_notify &&
		    virtqueue_has_work(&dev->vqs[q]))
			dev->ops->queue_notify(dev, q);
	virtio_dev_unlock(dev);
}

void virtio_dev_set_queue_size(struct virtio_dev *dev, int q, uint32_t size)
{
	virtio_dev_lock(dev);
	struct virtqueue *vq = &dev->vqs[q];
	if (vq->ready) {
		/* Frozen while live: the rings were validated for the current size. */
	} else if (size == 0 || size > dev->ops->max_queue_size || (size & (size - 1))) {
		char reason[96];
		snprintf(reason, sizeof(reason), "queue %d: size %u is not a power of two in 1..%u",
			 q, size, dev->ops->max_queue_size);
		mark_broken_locked(dev, reason);
	} else {
		vq->size = (uint16_t)size;
	}
	virtio_dev_unlock(dev);
}

void virtio_dev_set_queue_addr(struct virtio_dev *dev, int q, enum virtio_ring_part part,
			       unsigned shift, unsigned width, uint64_t value)
{
	virtio_dev_lock(dev);
	struct virtqueue *vq = &dev->vqs[q];
	uint64_t *addr = part == VIRTIO_RING_DESC     ? &vq->desc_gpa
			 : part == VIRTIO_RING_DRIVER ? &vq->avail_gpa
						      : &vq->used_gpa;
	uint64_t mask = width >= 64 ? ~0ULL : ((1ULL << width) - 1) << shift;
	if (!vq->ready && shift < 64)
		*addr = (*addr & ~mask) | ((value << shift) & mask);
	virtio_dev_unlock(dev);
}

void virtio_dev_queue_ready(struct virtio_dev *dev, int q, bool ready)
{
	virtio_dev_lock(dev);
	struct virtqueue *vq = &dev->vqs[q];
	if (!ready) {
		/* Before DRIVER_OK a queue may be torn down and set up again; after, the device
		 * may be using it, and taking it away needs VIRTIO_F_RING_RESET. */
		if (vq->ready && dev->activated)
			mark_broken_locked(dev, "driver disabled a live queue");
		else
			virtqueue_reset(vq);
	} else if (!vq->ready) {
		vq->ready = true;
		/* A queue enabled after DRIVER_OK is validated now; before, at DRIVER_OK. */
		if (dev->status & VIRTIO_STATUS_DRIVER_OK && !dev->broken)
			enable_queue(dev, q);
	}
	virtio_dev_unlock(dev);
}

void virtio_dev_set_dma_enabled(struct virtio_dev *dev, bool enabled)
{
	virtio_dev_lock(dev);
	bool was = dev->dma_enabled;
	dev->dma_enabled = enabled;
	/* Kicks were ignored while bus mastering was off: look at every queue once. */
	if (enabled && !was && virtio_dev_live(dev) && dev->loop)
		bottom_half_schedule(dev->loop, &dev->driver_ok_bh);
	virtio_dev_unlock(dev);
}

void virtio_dev_queue_notify(struct virtio_dev *dev, int q)
{
	if (q < 0 || q >= dev->nr_queues)
		return; /* a kick for a queue that does not exist: ignore it */
	virtio_dev_lock(dev);
	dev->notifications++;
	if (virtio_dev_live(dev) && dev->vqs[q].desc && dev->ops->queue_notify)
		dev->ops->queue_notify(dev, q);
	virtio_dev_unlock(dev);
}

void virtio_dev_notify_used(struct virtio_dev *dev, int q)
{
	if (virtqueue_should_notify(&dev->vqs[q])) {
		dev->interrupts++;
		dev->transport->signal_queue(dev, q);
	}
}

void virtio_dev_config_access(struct virtio_dev *dev, uint64_t offset, uint8_t *data, uint32_t len,
			      bool is_write)
{
	uint32_t size = dev->ops->config_size;
	if (offset >= size || len > size - offset) {
		if (!is_write)
			memset(data, 0, len);
		return;
	}
	if (is_write) {
		if (dev->ops->write_config)
			dev->ops->write_config(dev, (uint32_t)offset, data, len);
	} else if (dev->ops->read_config) {
		dev->ops->read_config(dev, (uint32_t)offset, data, len);
	} else {
		memset(data, 0, len);
	}
}

static void kick_handler(void *opaque, uint32_t events)
{
	struct virtio_kick *k = opaque;
	uint64_t count;
	(void)events;
	if (read(k->fd, &count, sizeof(count)) != sizeof(count))
		return;
	k->dev->kicks += count; /* the I/O thread's counter */
	virtio_dev_queue_notify(k->dev, k->queue);
}

void virtio_kick_init(struct virtio_kick *k, struct virtio_dev *dev, int queue)
{
	*k = (struct virtio_kick){.dev = dev, .queue = queue, .fd = -1};
}

int virtio_kick_open(struct virtio_kick *k, struct event_loop *loop)
{
	k->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->fd < 0 || event_loop_add_fd(loop, &k->src, k->fd, EPOLLIN, kick_handler, k))
		return -1;
	k->watched = true;
	return 0;
}

void virtio_kick_close(struct virtio_kick *k, struct event_loop *loop)
{
	if (k->watched && !k->external)
		event_loop_del_fd(loop, &k->src);
	k->watched = k->external = false;
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

int virtio_kick_set_external(struct virtio_kick *k, struct event_loop *loop, bool external)
{
	if (!k->watched)
		return -1;
	if (external != k->external) {
		/* Kicks the I/O thread already took are not lost: the new reader looks at the
		 * ring once it starts. */
		if (external)
			event_loop_del_fd(loop, &k->src);
		else if (event_loop_add_fd(loop, &k->src, k->fd, EPOLLIN, kick_handler, k))
			return -1;
		k->external = external;
	}
	return k->fd;
}

void virtio_dev_save(struct virtio_dev *dev, struct virtio_dev_state *out)
{
	memset(out, 0, sizeof(*out));
	virtio_dev_lock(dev);
	out->driver_features = dev->driver_features;
	out->config_generation = dev->config_generation;
	out->status = dev->status;
	out->broken = dev->broken;
	for (int q = 0; q < dev->nr_queues; q++) {
		const struct virtqueue *vq = &dev->vqs[q];
		out->q[q] =
		    (struct virtio_queue_state){.desc = vq->desc_gpa,
						.avail = vq->avail_gpa,
						.used = vq->used_gpa,
						.size = vq->size,
						.last_avail_idx = vq->last_avail_idx,
						.used_idx = vq->used_idx,
						.signalled_used = vq->signalled_used,
						.ready = vq->ready,
						.signalled_used_valid = vq->signalled_used_valid,
						.notifications_off = vq->notifications_off};
	}
	virtio_dev_unlock(dev);
}

void virtio_dev_restore_rings(struct virtio_dev *dev, const struct virtio_dev_state *in)
{
	virtio_dev_lock(dev);
	dev->config_generation = in->config_generation;
	for (int q = 0; q < dev->nr_queues; q++) {
		struct virtqueue *vq = &dev->vqs[q];
		if (!vq->avail)
			continue; /* not enabled by the replay: nothing to carry on */
		vq->last_avail_idx = in->q[q].last_avail_idx;
		vq->used_idx = in->q[q].used_idx;
		vq->signalled_used = in->q[q].signalled_used;
		vq->signalled_used_valid = in->q[q].signalled_used_valid;
		vq->notifications_off = in->q[q].notifications_off;
	}
	if (in->broken && !dev->broken)
		mark_broken_locked(dev, "it needed a reset when the snapshot was taken");
	virtio_dev_unlock(dev);
}
