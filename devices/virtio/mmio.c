#include "mmio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"

#define REG_MAGIC	      0x000
#define REG_VERSION	      0x004
#define REG_DEVICE_ID	      0x008
#define REG_VENDOR_ID	      0x00c
#define REG_DEVICE_FEATURES   0x010
#define REG_DEVICE_FEAT_SEL   0x014
#define REG_DRIVER_FEATURES   0x020
#define REG_DRIVER_FEAT_SEL   0x024
#define REG_QUEUE_SEL	      0x030
#define REG_QUEUE_NUM_MAX     0x034
#define REG_QUEUE_NUM	      0x038
#define REG_QUEUE_READY	      0x044
#define REG_QUEUE_NOTIFY      0x050
#define REG_INTERRUPT_STATUS  0x060
#define REG_INTERRUPT_ACK     0x064
#define REG_STATUS	      0x070
#define REG_QUEUE_DESC_LOW    0x080
#define REG_QUEUE_DESC_HIGH   0x084
#define REG_QUEUE_DRIVER_LOW  0x090
#define REG_QUEUE_DRIVER_HIGH 0x094
#define REG_QUEUE_DEVICE_LOW  0x0a0
#define REG_QUEUE_DEVICE_HIGH 0x0a4
#define REG_SHM_LEN_LOW	      0x0b0
#define REG_SHM_LEN_HIGH      0x0b4
#define REG_QUEUE_RESET	      0x0c0
#define REG_CONFIG_GENERATION 0x0fc
#define REG_CONFIG	      0x100

#define MMIO_MAGIC   0x74726976 /* "virt" */
#define MMIO_VERSION 2
#define MMIO_VENDOR  0x4d4d564d /* "MVMM" */

#define INT_USED_BUFFER 1
#define INT_CONFIG	2

static void raise_interrupt(struct virtio_mmio *t, uint32_t bit)
{
	__atomic_fetch_or(&t->interrupt_status, bit, __ATOMIC_SEQ_CST);
	uint64_t one = 1;
	if (t->irq_fd >= 0 && write(t->irq_fd, &one, sizeof(one)) < 0)
		log_warn("%s: interrupt lost: %s", t->dev->label, strerror(errno));
}

static void signal_queue(struct virtio_dev *dev, int q)
{
	(void)q;
	raise_interrupt(dev->transport_priv, INT_USED_BUFFER);
}

static void signal_config(struct virtio_dev *dev)
{
	raise_interrupt(dev->transport_priv, INT_CONFIG);
}

static int queue_kick_fd(struct virtio_dev *dev, int q, bool external)
{
	struct virtio_mmio *t = dev->transport_priv;
	if (q < 0 || q >= dev->nr_queues)
		return -1;
	return virtio_kick_set_external(&t->kick[q], t->host.loop, external);
}

/* Every queue shares the device's one interrupt; a back end writing it directly leaves the
 * interrupt status as it was, which is why read_reg shows a used buffer for such devices. */
static int queue_irqfd(struct virtio_dev *dev, int q)
{
	struct virtio_mmio *t = dev->transport_priv;
	(void)q;
	return t->irq_fd;
}

static const struct virtio_transport_ops mmio_transport_ops = {
    .signal_queue = signal_queue,
    .signal_config = signal_config,
    .queue_kick_fd = queue_kick_fd,
    .queue_irqfd = queue_irqfd,
};

/* The selected queue's number, or -1 when the driver selected one that does not exist. Read
 * once: another vCPU may write QueueSel between a bounds check and a second load. */
static int selected_index(struct virtio_mmio *t)
{
	uint32_t sel = __atomic_load_n(&t->queue_sel, __ATOMIC_RELAXED);
	return sel < (uint32_t)t->dev->nr_queues ? (int)sel : -1;
}

static struct virtqueue *selected_queue(struct virtio_mmio *t)
{
	int q = selected_index(t);
	return q < 0 ? NULL : &t->dev->vqs[q];
}

static uint32_t read_reg(struct virtio_mmio *t, uint64_t offset)
{
	struct virtio_dev *dev = t->dev;
	struct virtqueue *vq = selected_queue(t);
	switch (offset) {
	case REG_MAGIC:
		return MMIO_MAGIC;
	case REG_VERSION:
		return MMIO_VERSION;
	case REG_DEVICE_ID:
		return dev->ops->device_id;
	case REG_VENDOR_ID:
		return MMIO_VENDOR;
	case REG_DEVICE_FEATURES:
		return virtio_dev_get_device_features(dev, t->device_features_sel);
	case REG_QUEUE_NUM_MAX:
		return vq ? dev->ops->max_queue_size : 0;
	case REG_QUEUE_READY:
		return vq ? vq->ready : 0;
	case REG_INTERRUPT_STATUS:
		/* Queues served elsewhere interrupt through the irqfd without setting the bit: say
		 * a buffer may have been used, and the driver looks at its rings (a spurious look
		 * costs it an index read). */
		return __atomic_load_n(&t->interrupt_status, __ATOMIC_SEQ_CST) |
		       (dev->external_queues ? INT_USED_BUFFER : 0);
	case REG_STATUS:
		return virtio_dev_status(dev);
	case REG_SHM_LEN_LOW:
	case REG_SHM_LEN_HIGH:
		return 0xffffffff; /* no shared memory regions */
	case REG_CONFIG_GENERATION:
		return dev->config_generation;
	default:
		return 0;
	}
}

/* A ring address half: QueueDescLow/High and the like. Stored under the device's lock. */
static void set_queue_addr(struct virtio_mmio *t, enum virtio_ring_part part, bool high, uint32_t v)
{
	int q = selected_index(t);
	if (q >= 0)
		virtio_dev_set_queue_addr(t->dev, q, part, high ? 32 : 0, 32, v);
}

static void write_reg(struct virtio_mmio *t, uint64_t offset, uint32_t v)
{
	struct virtio_dev *dev = t->dev;
	switch (offset) {
	case REG_DEVICE_FEAT_SEL:
		t->device_features_sel = v;
		break;
	case REG_DRIVER_FEATURES:
		virtio_dev_set_driver_features(dev, t->driver_features_sel, v);
		break;
	case REG_DRIVER_FEAT_SEL:
		t->driver_features_sel = v;
		break;
	case REG_QUEUE_SEL:
		__atomic_store_n(&t->queue_sel, v, __ATOMIC_RELAXED);
		break;
	case REG_QUEUE_NUM: {
		int q = selected_index(t);
		if (q >= 0)
			virtio_dev_set_queue_size(dev, q, v);
		break;
	}
	case REG_QUEUE_READY: {
		int q = selected_index(t);
		if (q >= 0)
			virtio_dev_queue_ready(dev, q, v == 1);
		break;
	}
	case REG_QUEUE_NOTIFY:
		/* Only reached when the ioeventfd is missing: hand the kick to the I/O thread. */
		if (v < (uint32_t)dev->nr_queues && t->kick[v].fd >= 0) {
			uint64_t one = 1;
			if (write(t->kick[v].fd, &one, sizeof(one)) < 0)
				log_warn("%s: kick lost", dev->label);
		}
		break;
	case REG_INTERRUPT_ACK:
		__atomic_fetch_and(&t->interrupt_status, ~v, __ATOMIC_SEQ_CST);
		break;
	case REG_STATUS:
		virtio_dev_set_status(dev, (uint8_t)v);
		if (v == 0) {
			__atomic_store_n(&t->interrupt_status, 0, __ATOMIC_SEQ_CST);
			__atomic_store_n(&t->queue_sel, 0, __ATOMIC_RELAXED);
			t->device_features_sel = t->driver_features_sel = 0;
		}
		break;
	case REG_QUEUE_DESC_LOW:
	case REG_QUEUE_DESC_HIGH:
		set_queue_addr(t, VIRTIO_RING_DESC, offset == REG_QUEUE_DESC_HIGH, v);
		break;
	case REG_QUEUE_DRIVER_LOW:
	case REG_QUEUE_DRIVER_HIGH:
		set_queue_addr(t, VIRTIO_RING_DRIVER, offset == REG_QUEUE_DRIVER_HIGH, v);
		break;
	case REG_QUEUE_DEVICE_LOW:
	case REG_QUEUE_DEVICE_HIGH:
		set_queue_addr(t, VIRTIO_RING_DEVICE, offset == REG_QUEUE_DEVICE_HIGH, v);
		break;
	case REG_QUEUE_RESET: {
		int q = selected_index(t);
		if (v == 1 && q >= 0)
			virtio_dev_queue_ready(dev, q, false);
		break;
	}
	default:
		break; /* read-only or unknown: ignored */
	}
}

void virtio_mmio_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct virtio_mmio *t = opaque;
	if (offset >= REG_CONFIG) {
		virtio_dev_config_access(t->dev, offset - REG_CONFIG, data, len, is_write);
		return;
	}
	/* Registers are 32-bit and aligned (virtio 1.2, 4.2.2.2); anything else is ignored. */
	if (len != 4 || (offset & 3)) {
		if (!is_write)
			memset(data, 0, len);
		return;
	}
	if (is_write) {
		uint32_t v;
		memcpy(&v, data, 4);
		write_reg(t, offset, v);
	} else {
		uint32_t v = read_reg(t, offset);
		memcpy(data, &v, 4);
	}
}

void virtio_mmio_init(struct virtio_mmio *t, struct virtio_dev *dev, uint64_t base, int irq)
{
	memset(t, 0, sizeof(*t));
	t->irq_fd = -1;
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		virtio_kick_init(&t->kick[q], dev, q);
	t->dev = dev;
	t->base = base;
	t->irq = irq;
	dev->transport = &mmio_transport_ops;
	dev->transport_priv = t;
}

int virtio_mmio_attach(struct virtio_mmio *t, const struct virtio_transport_host *host,
		       struct virtio_dev *dev, uint64_t base, int irq)
{
	virtio_mmio_init(t, dev, base, irq);
	t->host = *host;

	t->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->irq_fd < 0 || (host->irqfd && host->irqfd(host->opaque, t->irq, t->irq_fd, true))) {
		log_error("%s: cannot set up its interrupt", dev->label);
		return -1;
	}
	for (int q = 0; q < dev->nr_queues && host->loop; q++) {
		if (virtio_kick_open(&t->kick[q], host->loop))
			return -1;
		/* Without the ioeventfd kicks still work, through a trapped write: slower. */
		if (host->ioeventfd && host->ioeventfd(host->opaque, t->base + REG_QUEUE_NOTIFY, 4,
						       true, (uint64_t)q, t->kick[q].fd, true))
			log_warn("%s: queue %d kicks will trap to the VMM", dev->label, q);
	}
	if (host->register_mmio &&
	    host->register_mmio(host->opaque, t->base, VIRTIO_MMIO_SIZE, virtio_mmio_io, t)) {
		log_error("%s: MMIO window 0x%llx is taken", dev->label,
			  (unsigned long long)t->base);
		return -1;
	}
	return 0;
}

void virtio_mmio_detach(struct virtio_mmio *t)
{
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		virtio_kick_close(&t->kick[q], t->host.loop);
	if (t->irq_fd >= 0)
		close(t->irq_fd);
	t->irq_fd = -1;
}

void virtio_mmio_cmdline_entry(const struct virtio_mmio *t, char *buf, size_t len)
{
	snprintf(buf, len, "virtio_mmio.device=%lluK@0x%llx:%d",
		 (unsigned long long)(VIRTIO_MMIO_SIZE >> 10), (unsigned long long)t->base, t->irq);
}

void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *out)
{
	*out = (struct virtio_mmio_state){
	    .device_features_sel = __atomic_load_n(&t->device_features_sel, __ATOMIC_RELAXED),
	    .driver_features_sel = __atomic_load_n(&t->driver_features_sel, __ATOMIC_RELAXED),
	    .queue_sel = __atomic_load_n(&t->queue_sel, __ATOMIC_RELAXED),
	    .interrupt_status = __atomic_load_n(&t->interrupt_status, __ATOMIC_SEQ_CST)};
}

static void replay(struct virtio_mmio *t, uint64_t reg, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	virtio_mmio_io(t, reg, b, 4, true);
}

void virtio_mmio_restore(struct virtio_mmio *t, const struct virtio_dev_state *dev,
			 const struct virtio_mmio_state *in)
{
	for (uint32_t sel = 0; sel < 2; sel++) {
		replay(t, REG_DRIVER_FEAT_SEL, sel);
		replay(t, REG_DRIVER_FEATURES, (uint32_t)(dev->driver_features >> (32 * sel)));
	}
	/* The driver's order: ACKNOWLEDGE, DRIVER, FEATURES_OK, the queues, DRIVER_OK. */
	uint8_t want = dev->status & (uint8_t)~VIRTIO_STATUS_DEVICE_NEEDS_RESET, st = 0;
	static const uint8_t steps[] = {VIRTIO_STATUS_ACKNOWLEDGE, VIRTIO_STATUS_DRIVER,
					VIRTIO_STATUS_FEATURES_OK};
	for (size_t i = 0; i < sizeof(steps); i++)
		if (want & steps[i])
			replay(t, REG_STATUS, st |= steps[i]);
	for (int q = 0; q < t->dev->nr_queues; q++) {
		const struct virtio_queue_state *vq = &dev->q[q];
		if (!vq->ready)
			continue;
		replay(t, REG_QUEUE_SEL, (uint32_t)q);
		replay(t, REG_QUEUE_NUM, vq->size);
		replay(t, REG_QUEUE_DESC_LOW, (uint32_t)vq->desc);
		replay(t, REG_QUEUE_DESC_HIGH, (uint32_t)(vq->desc >> 32));
		replay(t, REG_QUEUE_DRIVER_LOW, (uint32_t)vq->avail);
		replay(t, REG_QUEUE_DRIVER_HIGH, (uint32_t)(vq->avail >> 32));
		replay(t, REG_QUEUE_DEVICE_LOW, (uint32_t)vq->used);
		replay(t, REG_QUEUE_DEVICE_HIGH, (uint32_t)(vq->used >> 32));
		replay(t, REG_QUEUE_READY, 1);
	}
	if (want != st)
		replay(t, REG_STATUS, want);
	virtio_dev_restore_rings(t->dev, dev);
	__atomic_store_n(&t->device_features_sel, in->device_features_sel, __ATOMIC_RELAXED);
	__atomic_store_n(&t->driver_features_sel, in->driver_features_sel, __ATOMIC_RELAXED);
	__atomic_store_n(&t->queue_sel, in->queue_sel, __ATOMIC_RELAXED);
	/* A raised interrupt is already in the saved irqchip; the driver acks it here. */
	__atomic_store_n(&t->interrupt_status, in->interrupt_status & 3, __ATOMIC_SEQ_CST);
}
