#include "vhost_user_frontend.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/guest_mem.h"
#include "base/log.h"
#include "devices/virtio/virtqueue.h"

#define VIRTIO_F_RING_INDIRECT_DESC 28
#define VIRTIO_F_RING_EVENT_IDX	    29

uint64_t vhost_user_frontend_offer(uint64_t backend_features, uint64_t device_bits)
{
	const uint64_t transport = (1ull << VIRTIO_F_RING_INDIRECT_DESC) |
				   (1ull << VIRTIO_F_RING_EVENT_IDX) | (1ull << VIRTIO_F_VERSION_1);
	return backend_features & ((device_bits & 0xffffffull) | transport);
}

/* The back end closed its socket or died: every later call fails at once, and the driver is
 * told the device needs a reset. I/O thread. */
static void on_hangup(void *opaque, uint32_t events)
{
	struct vhost_user_frontend *fe = opaque;
	(void)events;
	virtio_dev_lock(fe->dev);
	if (fe->hangup_watched) {
		event_loop_del_fd(fe->loop, &fe->hangup);
		fe->hangup_watched = false;
	}
	vhost_user_mark_broken(fe->vu, "the back end closed its socket");
	virtio_dev_fail(fe->dev, "vhost-user back end closed its socket");
	virtio_dev_unlock(fe->dev);
}

int vhost_user_frontend_init(struct vhost_user_frontend *fe, struct virtio_dev *dev,
			     struct vhost_user *vu, const struct vhost_user_info *info,
			     struct guest_mem *mem, struct event_loop *loop, char *err,
			     size_t errlen)
{
	memset(fe, 0, sizeof(*fe));
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		fe->relay[q] = (struct vhost_user_call_relay){.fe = fe, .queue = q, .fd = -1};
	if (mem->shared_fd < 0) {
		snprintf(err, errlen, "guest memory is not shared");
		return -1;
	}
	if (!(info->features >> VIRTIO_F_VERSION_1 & 1)) {
		snprintf(err, errlen, "the back end does not offer VIRTIO_F_VERSION_1");
		return -1;
	}
	fe->dev = dev;
	fe->info = *info;
	fe->mem = mem;
	fe->loop = loop;
	if (loop &&
	    event_loop_add_fd(loop, &fe->hangup, vhost_user_fd(vu), EPOLLRDHUP, on_hangup, fe)) {
		snprintf(err, errlen, "cannot watch the back end's socket");
		return -1;
	}
	fe->hangup_watched = loop != NULL;
	fe->vu = vu;
	dev->external_queues = true;
	return 0;
}

static void fail(struct vhost_user_frontend *fe, const char *what)
{
	char reason[256];
	snprintf(reason, sizeof(reason), "vhost-user back end: %s: %s", what,
		 vhost_user_error(fe->vu));
	virtio_dev_fail(fe->dev, reason);
}

static void relay_handler(void *opaque, uint32_t events)
{
	struct vhost_user_call_relay *r = opaque;
	struct virtio_dev *dev = r->fe->dev;
	uint64_t count;
	(void)events;
	if (read(r->fd, &count, sizeof(count)) != sizeof(count))
		return;
	r->fe->relayed++;
	dev->interrupts++;
	dev->transport->signal_queue(dev, r->queue);
}

/* The eventfd the back end writes for queue q's interrupts: the transport's irqfd, else one
 * the I/O thread relays. -1 when neither could be had. */
static int call_fd(struct vhost_user_frontend *fe, int q)
{
	struct virtio_dev *dev = fe->dev;
	int fd = dev->transport->queue_irqfd ? dev->transport->queue_irqfd(dev, q) : -1;
	if (fd >= 0 || !fe->loop)
		return fd;
	struct vhost_user_call_relay *r = &fe->relay[q];
	r->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->fd < 0)
		return -1;
	if (event_loop_add_fd(fe->loop, &r->src, r->fd, EPOLLIN, relay_handler, r)) {
		close(r->fd);
		r->fd = -1;
	}
	return r->fd;
}

static void relay_close(struct vhost_user_frontend *fe, int q)
{
	struct vhost_user_call_relay *r = &fe->relay[q];
	if (r->fd < 0)
		return;
	event_loop_del_fd(fe->loop, &r->src);
	close(r->fd);
	r->fd = -1;
}

static int start_ring(struct vhost_user_frontend *fe, int q)
{
	struct virtio_dev *dev = fe->dev;
	struct virtqueue *vq = &dev->vqs[q];
	int call = call_fd(fe, q);
	int kick = dev->transport->queue_kick_fd ? dev->transport->queue_kick_fd(dev, q, true) : -1;
	if (call < 0 || kick < 0) {
		char reason[96];
		snprintf(reason, sizeof(reason), "queue %d: no %s eventfd to hand over", q,
			 call < 0 ? "interrupt" : "kick");
		virtio_dev_fail(dev, reason);
		return -1;
	}
	fe->started[q] = true; /* from here a reset must stop it */
	const struct vhost_user_vring vr = {
	    .index = (unsigned)q,
	    .size = vq->size,
	    .desc_addr = (uint64_t)(uintptr_t)vq->desc,
	    .avail_addr = (uint64_t)(uintptr_t)vq->avail,
	    .used_addr = (uint64_t)(uintptr_t)vq->used,
	    .base = vq->last_avail_idx,
	    .kick_fd = kick,
	    .call_fd = call,
	};
	if (vhost_user_setup_vring(fe->vu, &vr) ||
	    vhost_user_enable_vring(fe->vu, (unsigned)q, true)) {
		fail(fe, "setting up a ring");
		return -1;
	}
	/* Buffers made available before the back end had the ring: one kick for them (a
	 * spurious one costs it a look at the ring). */
	uint64_t one = 1;
	if (write(kick, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("%s: queue %d: kick lost: %s", dev->label, q, strerror(errno));
	return 0;
}

int vhost_user_frontend_start(struct vhost_user_frontend *fe)
{
	struct virtio_dev *dev = fe->dev;
	if (vhost_user_set_features(fe->vu, dev->driver_features)) {
		fail(fe, "features");
		return -1;
	}
	struct vhost_user_region regions[GUEST_MEM_MAX_REGIONS];
	for (int i = 0; i < fe->mem->nr_regions; i++) {
		const struct mem_region *r = &fe->mem->regions[i];
		regions[i] = (struct vhost_user_region){
		    .guest_addr = r->gpa,
		    .size = r->size,
		    .user_addr = (uint64_t)(uintptr_t)r->hva,
		    .mmap_offset = (uint64_t)(r->hva - fe->mem->mapping),
		    .fd = fe->mem->shared_fd,
		};
	}
	if (vhost_user_set_mem_table(fe->vu, regions, (unsigned)fe->mem->nr_regions)) {
		fail(fe, "memory table");
		return -1;
	}
	for (int q = 0; q < dev->nr_queues; q++)
		if (dev->vqs[q].ready && start_ring(fe, q))
			return -1;
	return 0;
}

void vhost_user_frontend_stop(struct vhost_user_frontend *fe)
{
	struct virtio_dev *dev = fe->dev;
	for (int q = 0; q < dev->nr_queues; q++) {
		if (!fe->started[q])
			continue;
		/* The back end answers once it has stopped the ring: nothing of it is in flight
		 * when the driver sees the reset done. A broken connection fails at once. */
		uint16_t base;
		if (vhost_user_get_vring_base(fe->vu, (unsigned)q, &base) &&
		    !vhost_user_broken(fe->vu))
			log_warn("%s: queue %d: vhost-user back end did not stop it: %s",
				 dev->label, q, vhost_user_error(fe->vu));
		dev->transport->queue_kick_fd(dev, q, false);
		relay_close(fe, q);
		fe->started[q] = false;
	}
}

void vhost_user_frontend_destroy(struct vhost_user_frontend *fe)
{
	if (fe->hangup_watched)
		event_loop_del_fd(fe->loop, &fe->hangup);
	fe->hangup_watched = false;
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		relay_close(fe, q);
	vhost_user_close(fe->vu);
	fe->vu = NULL;
}

/* ---- the ops of a model built on the front end (its first member) ---- */

int vhost_user_frontend_activate(struct virtio_dev *dev)
{
	return vhost_user_frontend_start(dev->priv);
}

void vhost_user_frontend_reset(struct virtio_dev *dev)
{
	vhost_user_frontend_stop(dev->priv);
}

void vhost_user_frontend_read_config(struct virtio_dev *dev, uint32_t offset, uint8_t *data,
				     uint32_t len)
{
	const struct vhost_user_frontend *fe = dev->priv;
	memcpy(data, fe->config + offset, len);
}

void vhost_user_frontend_write_config(struct virtio_dev *dev, uint32_t offset, const uint8_t *data,
				      uint32_t len)
{
	(void)dev;
	(void)offset;
	(void)data;
	(void)len;
}

/* Kicks reach the back end, not the VMM, once the rings are handed over; before DRIVER_OK
 * there is nothing to do with them (the hand-over kicks every ring once). */
void vhost_user_frontend_queue_notify(struct virtio_dev *dev, int q)
{
	(void)dev;
	(void)q;
}

void vhost_user_frontend_restart(struct virtio_dev *dev)
{
	(void)dev;
}
