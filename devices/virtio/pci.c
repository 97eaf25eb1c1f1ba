#include "pci.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"

static uint64_t get_le(const uint8_t *p, uint32_t len)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < len && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, uint32_t len, uint64_t v)
{
	for (uint32_t i = 0; i < len && i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void fire(int fd)
{
	uint64_t one = 1;
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("virtio-pci: eventfd write: %s", strerror(errno));
}

/* The host gives the vectors MSI routes (all four hooks). */
static bool has_msi_routes(const struct virtio_transport_host *host)
{
	return host->msi_route_alloc && host->msi_route_free && host->msi_route_set &&
	       host->msi_route_commit;
}

int virtio_pci_intx_gsi(const struct virtio_pci *vp)
{
	return vp->pci.slot >= 0 ? pci_intx_gsi(vp->pci.slot, 1) : -1;
}

/* INTx follows ISR while MSI-X is off and the command register allows it. vp->lock held. */
static void update_intx(struct virtio_pci *vp)
{
	bool level = vp->isr && !vp->intx_disabled && !vp->msix_enabled;
	int gsi = virtio_pci_intx_gsi(vp);
	if (level == vp->intx_level || gsi < 0)
		return;
	vp->intx_level = level;
	if (vp->host.set_irq)
		vp->host.set_irq(vp->host.opaque, gsi, level);
}

static bool vector_masked(const struct virtio_pci *vp, const struct virtio_pci_vector *v)
{
	return vp->msix_masked || (v->ctrl & PCI_MSIX_ENTRY_CTRL_MASK);
}

/* Give an unmasked vector's MSI route its message, if it has not got it yet (effective at the
 * next commit). True when the route changed. */
static bool update_route(struct virtio_pci *vp, struct virtio_pci_vector *v)
{
	if (v->gsi < 0 || !vp->msix_enabled || vector_masked(vp, v))
		return false;
	if (v->routed && v->route_addr_lo == v->addr_lo && v->route_addr_hi == v->addr_hi &&
	    v->route_data == v->data)
		return false;
	if (vp->host.msi_route_set(vp->host.opaque, v->gsi, v->addr_lo, v->addr_hi, v->data))
		return false;
	v->routed = true;
	v->route_addr_lo = v->addr_lo;
	v->route_addr_hi = v->addr_hi;
	v->route_data = v->data;
	return true;
}

/* Bring the routes of vectors [first, end) up to date, then deliver what they hold pending.
 * A commit (KVM_SET_GSI_ROUTING) replaces KVM's whole table: one for all of them, and none
 * when no route changed. */
static void sync_vectors(struct virtio_pci *vp, int first, int end)
{
	uint32_t changed = 0;
	_Static_assert(VIRTIO_PCI_MAX_VECTORS <= 32, "one bit per vector");
	for (int i = first; i < end; i++)
		if (update_route(vp, &vp->vec[i]))
			changed |= 1u << i;
	if (changed && vp->host.msi_route_commit(vp->host.opaque)) {
		/* KVM kept its old table: the next write tries these routes again. */
		for (int i = first; i < end; i++)
			if (changed & (1u << i))
				vp->vec[i].routed = false;
	}
	for (int i = first; i < end; i++) {
		struct virtio_pci_vector *v = &vp->vec[i];
		if (vp->msix_enabled && !vector_masked(vp, v) && v->pending) {
			v->pending = false;
			fire(v->fd);
		}
	}
}

/* Send an interrupt: the MSI-X vector when MSI-X is on, else ISR bit and INTx. */
static void raise_irq(struct virtio_pci *vp, uint16_t vector, uint8_t isr_bit)
{
	pthread_mutex_lock(&vp->lock);
	if (isr_bit == VIRTIO_PCI_ISR_CONFIG || !vp->msix_enabled)
		vp->isr |= isr_bit;
	if (!vp->msix_enabled) {
		update_intx(vp);
	} else if (vector < vp->nr_vectors) {
		struct virtio_pci_vector *v = &vp->vec[vector];
		if (vector_masked(vp, v))
			v->pending = true;
		else
			fire(v->fd);
	}
	pthread_mutex_unlock(&vp->lock);
}

static void signal_queue(struct virtio_dev *dev, int q)
{
	struct virtio_pci *vp = dev->transport_priv;
	if (q < 0 || q >= dev->nr_queues)
		return;
	pthread_mutex_lock(&vp->lock);
	uint16_t vector = vp->queue_vector[q];
	pthread_mutex_unlock(&vp->lock);
	raise_irq(vp, vector, VIRTIO_PCI_ISR_QUEUE);
}

static void signal_config(struct virtio_dev *dev)
{
	struct virtio_pci *vp = dev->transport_priv;
	pthread_mutex_lock(&vp->lock);
	uint16_t vector = vp->config_vector;
	pthread_mutex_unlock(&vp->lock);
	raise_irq(vp, vector, VIRTIO_PCI_ISR_CONFIG);
}

static int queue_kick_fd(struct virtio_dev *dev, int q, bool external)
{
	struct virtio_pci *vp = dev->transport_priv;
	if (q < 0 || q >= dev->nr_queues)
		return -1;
	return virtio_kick_set_external(&vp->notify[q], vp->host.loop, external);
}

/* The irqfd of queue q's MSI-X vector. A vector's route, once the guest unmasked it, stays in
 * KVM's table when the guest masks it again (raise_irq holds masked interrupts back instead): so
 * a back end writing this eventfd is never lost, though it may interrupt through a mask. INTx
 * needs ISR set with each interrupt: -1, the caller relays them through signal_queue. */
static int queue_irqfd(struct virtio_dev *dev, int q)
{
	struct virtio_pci *vp = dev->transport_priv;
	int fd = -1;
	if (q < 0 || q >= dev->nr_queues)
		return -1;
	pthread_mutex_lock(&vp->lock);
	uint16_t vector = vp->queue_vector[q];
	if (vp->msix_enabled && vector < vp->nr_vectors && vp->vec[vector].gsi >= 0)
		fd = vp->vec[vector].fd;
	pthread_mutex_unlock(&vp->lock);
	return fd;
}

static const struct virtio_transport_ops transport_ops = {
    .signal_queue = signal_queue,
    .signal_config = signal_config,
    .queue_kick_fd = queue_kick_fd,
    .queue_irqfd = queue_irqfd,
};

/* A vector number the driver asks for: kept if it exists, else NO_VECTOR (4.1.5.1.2). */
static uint16_t valid_vector(const struct virtio_pci *vp, uint64_t v)
{
	return v < (uint64_t)vp->nr_vectors ? (uint16_t)v : VIRTIO_PCI_NO_VECTOR;
}

static void kick(struct virtio_pci *vp, int q)
{
	if (q < 0 || q >= vp->dev->nr_queues)
		return;
	if (vp->notify[q].watched) {
		fire(vp->notify[q].fd); /* the I/O thread runs it, as for an ioeventfd */
	} else {
		vp->dev->kicks++;
		virtio_dev_queue_notify(vp->dev, q);
	}
}

/* ---- common configuration ---- */

static void common_read(struct virtio_pci *vp, uint64_t off, uint8_t *data, uint32_t len)
{
	struct virtio_dev *dev = vp->dev;
	uint8_t c[VIRTIO_PCI_COMMON_CFG_SIZE] = {0};
	virtio_dev_lock(dev);
	pthread_mutex_lock(&vp->lock);
	put_le(c + VIRTIO_PCI_COMMON_DFSELECT, 4, vp->dfselect);
	put_le(c + VIRTIO_PCI_COMMON_DF, 4, virtio_dev_get_device_features(dev, vp->dfselect));
	put_le(c + VIRTIO_PCI_COMMON_GFSELECT, 4, vp->gfselect);
	put_le(c + VIRTIO_PCI_COMMON_GF, 4,
	       vp->gfselect <= 1 ? (uint32_t)(dev->driver_features >> (32 * vp->gfselect)) : 0);
	put_le(c + VIRTIO_PCI_COMMON_MSIX, 2, vp->config_vector);
	put_le(c + VIRTIO_PCI_COMMON_NUMQ, 2, (uint64_t)dev->nr_queues);
	c[VIRTIO_PCI_COMMON_STATUS] = virtio_dev_status(dev);
	c[VIRTIO_PCI_COMMON_CFGGEN] = (uint8_t)dev->config_generation;
	put_le(c + VIRTIO_PCI_COMMON_Q_SELECT, 2, vp->queue_select);
	int q = vp->queue_select;
	if (q < dev->nr_queues) {
		const struct virtqueue *vq = &dev->vqs[q];
		put_le(c + VIRTIO_PCI_COMMON_Q_SIZE, 2, vq->size);
		put_le(c + VIRTIO_PCI_COMMON_Q_MSIX, 2, vp->queue_vector[q]);
		put_le(c + VIRTIO_PCI_COMMON_Q_ENABLE, 2, vq->ready);
		put_le(c + VIRTIO_PCI_COMMON_Q_NOFF, 2, (uint64_t)q);
		put_le(c + VIRTIO_PCI_COMMON_Q_DESC, 8, vq->desc_gpa);
		put_le(c + VIRTIO_PCI_COMMON_Q_DRIVER, 8, vq->avail_gpa);
		put_le(c + VIRTIO_PCI_COMMON_Q_DEVICE, 8, vq->used_gpa);
	} else {
		put_le(c + VIRTIO_PCI_COMMON_Q_MSIX, 2, VIRTIO_PCI_NO_VECTOR);
	}
	pthread_mutex_unlock(&vp->lock);
	virtio_dev_unlock(dev);
	memset(data, 0, len);
	if (off < sizeof(c))
		memcpy(data, c + off, len < sizeof(c) - off ? len : sizeof(c) - off);
}

/* Forget the transport's part of the device state after a reset (status 0). */
static void transport_reset(struct virtio_pci *vp)
{
	pthread_mutex_lock(&vp->lock);
	vp->dfselect = vp->gfselect = 0;
	vp->queue_select = 0;
	vp->config_vector = VIRTIO_PCI_NO_VECTOR;
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		vp->queue_vector[q] = VIRTIO_PCI_NO_VECTOR;
	vp->isr = 0;
	update_intx(vp);
	pthread_mutex_unlock(&vp->lock);
}

/* A 64-bit queue address field, written whole or as 32-bit halves. */
static void write_queue_addr(struct virtio_pci *vp, int q, uint32_t field, uint64_t off,
			     uint32_t len, uint64_t v)
{
	enum virtio_ring_part part = field == VIRTIO_PCI_COMMON_Q_DESC	   ? VIRTIO_RING_DESC
				     : field == VIRTIO_PCI_COMMON_Q_DRIVER ? VIRTIO_RING_DRIVER
									   : VIRTIO_RING_DEVICE;
	unsigned shift = len == 8 || off == field ? 0 : 32;
	virtio_dev_set_queue_addr(vp->dev, q, part, shift, len * 8, v);
}

/* Width each field must be written with; 64-bit fields also take 32-bit halves. */
static uint32_t field_at(uint64_t off, uint32_t len, uint32_t *field)
{
	static const struct {
		uint8_t off, len;
	} fields[] = {
	    {VIRTIO_PCI_COMMON_DFSELECT, 4}, {VIRTIO_PCI_COMMON_DF, 4},
	    {VIRTIO_PCI_COMMON_GFSELECT, 4}, {VIRTIO_PCI_COMMON_GF, 4},
	    {VIRTIO_PCI_COMMON_MSIX, 2},     {VIRTIO_PCI_COMMON_NUMQ, 2},
	    {VIRTIO_PCI_COMMON_STATUS, 1},   {VIRTIO_PCI_COMMON_CFGGEN, 1},
	    {VIRTIO_PCI_COMMON_Q_SELECT, 2}, {VIRTIO_PCI_COMMON_Q_SIZE, 2},
	    {VIRTIO_PCI_COMMON_Q_MSIX, 2},   {VIRTIO_PCI_COMMON_Q_ENABLE, 2},
	    {VIRTIO_PCI_COMMON_Q_NOFF, 2},   {VIRTIO_PCI_COMMON_Q_DESC, 8},
	    {VIRTIO_PCI_COMMON_Q_DRIVER, 8}, {VIRTIO_PCI_COMMON_Q_DEVICE, 8},
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		uint32_t fo = fields[i].off, fl = fields[i].len;
		if (off == fo && len == fl) {
			*field = fo;
			return fl;
		}
		if (fl == 8 && len == 4 && (off == fo || off == fo + 4)) {
			*field = fo;
			return fl;
		}
	}
	return 0;
}

static void common_write(struct virtio_pci *vp, uint64_t off, const uint8_t *data, uint32_t len)
{
	struct virtio_dev *dev = vp->dev;
	uint32_t field;
	if (!field_at(off, len, &field))
		return; /* a partial or misaligned write: ignored */
	uint64_t v = get_le(data, len);
	pthread_mutex_lock(&vp->lock);
	int q = vp->queue_select;
	uint32_t gfselect = vp->gfselect;
	switch (field) {
	case VIRTIO_PCI_COMMON_DFSELECT:
		vp->dfselect = (uint32_t)v;
		break;
	case VIRTIO_PCI_COMMON_GFSELECT:
		vp->gfselect = (uint32_t)v;
		break;
	case VIRTIO_PCI_COMMON_MSIX:
		vp->config_vector = valid_vector(vp, v);
		break;
	case VIRTIO_PCI_COMMON_Q_SELECT:
		vp->queue_select = (uint16_t)v;
		break;
	case VIRTIO_PCI_COMMON_Q_MSIX:
		if (q < dev->nr_queues)
			vp->queue_vector[q] = valid_vector(vp, v);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&vp->lock);
	/* The rest go through the device's lock (which must not be taken under vp->lock). */
	bool queue = q < dev->nr_queues;
	switch (field) {
	case VIRTIO_PCI_COMMON_GF:
		virtio_dev_set_driver_features(dev, gfselect, (uint32_t)v);
		break;
	case VIRTIO_PCI_COMMON_STATUS:
		virtio_dev_set_status(dev, (uint8_t)v);
		if (v == 0)
			transport_reset(vp);
		break;
	case VIRTIO_PCI_COMMON_Q_SIZE:
		if (queue)
			virtio_dev_set_queue_size(dev, q, (uint32_t)v);
		break;
	case VIRTIO_PCI_COMMON_Q_ENABLE:
		/* Only 1 means anything: the driver must not write 0 (4.1.4.3.2). */
		if (queue && v == 1)
			virtio_dev_queue_ready(dev, q, true);
		break;
	case VIRTIO_PCI_COMMON_Q_DESC:
	case VIRTIO_PCI_COMMON_Q_DRIVER:
	case VIRTIO_PCI_COMMON_Q_DEVICE:
		if (queue)
			write_queue_addr(vp, q, field, off, len, v);
		break;
	default:
		break;
	}
}

/* ---- ISR, device configuration, notifications ---- */

static void isr_read(struct virtio_pci *vp, uint64_t off, uint8_t *data, uint32_t len)
{
	memset(data, 0, len);
	if (off != 0)
		return;
	pthread_mutex_lock(&vp->lock);
	data[0] = vp->isr; /* read-to-clear, and the INTx line drops */
	vp->isr = 0;
	update_intx(vp);
	pthread_mutex_unlock(&vp->lock);
}

/* ---- MSI-X table and PBA ---- */

static void msix_table_access(struct virtio_pci *vp, uint64_t off, uint8_t *data, uint32_t len,
			      bool is_write)
{
	uint64_t i = off / PCI_MSIX_ENTRY_SIZE, word = (off % PCI_MSIX_ENTRY_SIZE) / 4;
	/* Dword or qword accesses, naturally aligned (PCI 3.0, 6.8.2). */
	if ((len != 4 && len != 8) || off % len || i >= (uint64_t)vp->nr_vectors) {
		if (!is_write)
			memset(data, 0xff, len);
		return;
	}
	pthread_mutex_lock(&vp->lock);
	struct virtio_pci_vector *v = &vp->vec[i];
	uint32_t *w[4] = {&v->addr_lo, &v->addr_hi, &v->data, &v->ctrl};
	for (uint32_t k = 0; k < len / 4; k++) {
		uint32_t *p = w[word + k];
		if (!is_write) {
			put_le(data + 4 * k, 4, *p);
			continue;
		}
		uint32_t val = (uint32_t)get_le(data + 4 * k, 4);
		*p = p == &v->ctrl ? val & PCI_MSIX_ENTRY_CTRL_MASK : val;
	}
	if (is_write)
		sync_vectors(vp, (int)i, (int)i + 1);
	pthread_mutex_unlock(&vp->lock);
}

static void msix_pba_read(struct virtio_pci *vp, uint64_t off, uint8_t *data, uint32_t len)
{
	pthread_mutex_lock(&vp->lock);
	for (uint32_t b = 0; b < len; b++) {
		uint8_t byte = 0;
		for (int bit = 0; bit < 8; bit++) {
			uint64_t n = (off + b) * 8 + (uint64_t)bit;
			if (n < (uint64_t)vp->nr_vectors && vp->vec[n].pending)
				byte |= (uint8_t)(1u << bit);
		}
		data[b] = byte;
	}
	pthread_mutex_unlock(&vp->lock);
}

/* ---- BAR 0 dispatch and PCI callbacks ---- */

static bool in(uint64_t off, uint32_t len, uint64_t base, uint64_t size)
{
	return off >= base && off - base < size && len <= size - (off - base);
}

static void bar_access(struct pci_device *d, int bar, uint64_t off, uint8_t *data, uint32_t len,
		       bool is_write)
{
	struct virtio_pci *vp = d->opaque;
	uint64_t nq = (uint64_t)vp->dev->nr_queues;
	if (bar != VIRTIO_PCI_BAR || len == 0 || len > 8) {
		if (!is_write)
			memset(data, 0xff, len);
	} else if (in(off, len, VIRTIO_PCI_COMMON_OFF, VIRTIO_PCI_COMMON_CFG_SIZE)) {
		if (is_write)
			common_write(vp, off - VIRTIO_PCI_COMMON_OFF, data, len);
		else
			common_read(vp, off - VIRTIO_PCI_COMMON_OFF, data, len);
	} else if (in(off, len, VIRTIO_PCI_ISR_OFF, VIRTIO_PCI_ISR_LEN)) {
		if (!is_write)
			isr_read(vp, off - VIRTIO_PCI_ISR_OFF, data, len);
	} else if (in(off, len, VIRTIO_PCI_DEVICE_OFF, VIRTIO_PCI_DEVICE_MAX)) {
		virtio_dev_config_access(vp->dev, off - VIRTIO_PCI_DEVICE_OFF, data, len, is_write);
	} else if (in(off, len, VIRTIO_PCI_NOTIFY_OFF, nq * VIRTIO_PCI_NOTIFY_MULT)) {
		/* A trapped kick (no ioeventfd): the address names the queue, the value is moot. */
		if (is_write)
			kick(vp, (int)((off - VIRTIO_PCI_NOTIFY_OFF) / VIRTIO_PCI_NOTIFY_MULT));
		else
			memset(data, 0, len);
	} else if (in(off, len, VIRTIO_PCI_MSIX_TABLE,
		      (uint64_t)vp->nr_vectors * PCI_MSIX_ENTRY_SIZE)) {
		msix_table_access(vp, off - VIRTIO_PCI_MSIX_TABLE, data, len, is_write);
	} else if (in(off, len, VIRTIO_PCI_MSIX_PBA, VIRTIO_PCI_MSIX_PBA_LEN)) {
		if (!is_write)
			msix_pba_read(vp, off - VIRTIO_PCI_MSIX_PBA, data, len);
	} else if (!is_write) {
		memset(data, 0, len);
	}
}

/* The PCI configuration access capability (4.1.4.9): a window onto BAR 0 through config
 * space. An access to pci_cfg_data goes to cap.bar/offset/length when they make sense. */
static bool cfg_window(struct virtio_pci *vp, uint32_t offset, uint32_t len, uint64_t *at,
		       uint32_t *n)
{
	uint32_t data = vp->cfg_cap + VIRTIO_PCI_CAP_LEN;
	if (!vp->cfg_cap || offset >= data + 4 || offset + len <= data)
		return false;
	uint32_t bar = pci_cfg_get(&vp->pci, vp->cfg_cap + 4, 1);
	*at = pci_cfg_get(&vp->pci, vp->cfg_cap + 8, 4);
	*n = pci_cfg_get(&vp->pci, vp->cfg_cap + 12, 4);
	return bar == VIRTIO_PCI_BAR && (*n == 1 || *n == 2 || *n == 4) && *at % *n == 0 &&
	       *at < VIRTIO_PCI_BAR_SIZE;
}

static void bar_access(struct pci_device *d, int bar, uint64_t off, uint8_t *data, uint32_t len,
		       bool is_write);

static void config_read(struct pci_device *d, uint32_t offset, uint32_t len)
{
	struct virtio_pci *vp = d->opaque;
	uint64_t at;
	uint32_t n;
	if (cfg_window(vp, offset, len, &at, &n))
		bar_access(d, VIRTIO_PCI_BAR, at, d->cfg + vp->cfg_cap + VIRTIO_PCI_CAP_LEN, n,
			   false);
}

/* Called with the PCI bus lock held: config space is stable. */
static void config_written(struct pci_device *d, uint32_t offset, uint32_t len)
{
	struct virtio_pci *vp = d->opaque;
	uint64_t at;
	uint32_t n;
	if (cfg_window(vp, offset, len, &at, &n)) {
		bar_access(d, VIRTIO_PCI_BAR, at, d->cfg + vp->cfg_cap + VIRTIO_PCI_CAP_LEN, n,
			   true);
		return;
	}
	uint16_t cmd = (uint16_t)pci_cfg_get(d, PCI_COMMAND, 2);
	uint16_t flags = (uint16_t)pci_cfg_get(d, vp->msix_cap + PCI_MSIX_FLAGS, 2);
	(void)offset;
	(void)len;
	/* Bus mastering gates the device's access to guest memory (the device lock is taken
	 * under the bus lock, never the other way round). */
	virtio_dev_set_dma_enabled(vp->dev, cmd & PCI_COMMAND_MASTER);
	pthread_mutex_lock(&vp->lock);
	vp->intx_disabled = cmd & PCI_COMMAND_INTX_DISABLE;
	vp->msix_enabled = flags & PCI_MSIX_FLAGS_ENABLE;
	vp->msix_masked = flags & PCI_MSIX_FLAGS_MASKALL;
	sync_vectors(vp, 0, vp->nr_vectors);
	update_intx(vp);
	pthread_mutex_unlock(&vp->lock);
}

/* The notify area moved: move the ioeventfds with it. Bus lock held. */
static void bar_mapped(struct pci_device *d, int bar, uint64_t addr, bool mapped)
{
	struct virtio_pci *vp = d->opaque;
	if (bar != VIRTIO_PCI_BAR || !vp->host.ioeventfd)
		return;
	uint64_t base = mapped ? addr : vp->ioeventfd_base;
	if (!mapped && !vp->ioeventfd_base)
		return;
	for (int q = 0; q < vp->dev->nr_queues; q++) {
		if (!vp->notify[q].watched)
			continue;
		uint64_t a = base + VIRTIO_PCI_NOTIFY_OFF + (uint64_t)q * VIRTIO_PCI_NOTIFY_MULT;
		/* Any write width (length 0: KVM_CAP_IOEVENTFD_ANY_LENGTH), any value. Failing is
		 * not fatal: the kick is then trapped and handled the same way. */
		vp->host.ioeventfd(vp->host.opaque, a, 0, false, 0, vp->notify[q].fd, mapped);
	}
	vp->ioeventfd_base = mapped ? addr : 0;
}

static const struct pci_device_ops pci_ops = {
    .bar_access = bar_access,
    .config_written = config_written,
    .config_read = config_read,
    .bar_mapped = bar_mapped,
};

/* ---- construction ---- */

static uint32_t class_code(uint32_t device_id)
{
	switch (device_id) {
	case VIRTIO_ID_NET:
		return 0x020000;
	case VIRTIO_ID_BLOCK:
		return 0x010000;
	default:
		return 0xff0000;
	}
}

static bool add_virtio_cap(struct virtio_pci *vp, uint8_t type, uint8_t cap_len, uint32_t off,
			   uint32_t len)
{
	uint8_t c = pci_device_add_cap(&vp->pci, PCI_CAP_ID_VNDR, cap_len);
	if (!c)
		return false;
	pci_cfg_set(&vp->pci, c + 2, 1, cap_len);
	pci_cfg_set(&vp->pci, c + 3, 1, type);
	pci_cfg_set(&vp->pci, c + 4, 1, VIRTIO_PCI_BAR);
	pci_cfg_set(&vp->pci, c + 8, 4, off);
	pci_cfg_set(&vp->pci, c + 12, 4, len);
	if (type == VIRTIO_PCI_CAP_NOTIFY_CFG)
		pci_cfg_set(&vp->pci, c + 16, 4, VIRTIO_PCI_NOTIFY_MULT);
	if (type == VIRTIO_PCI_CAP_PCI_CFG) {
		/* The driver picks bar, offset and length, then reads or writes the data. */
		vp->cfg_cap = c;
		pci_device_set_wmask(&vp->pci, c + 4, 1, 0xff);
		pci_device_set_wmask(&vp->pci, c + 8, 4, 0xffffffff);
		pci_device_set_wmask(&vp->pci, c + 12, 4, 0xffffffff);
		pci_device_set_wmask(&vp->pci, c + VIRTIO_PCI_CAP_LEN, 4, 0xffffffff);
	}
	return true;
}

static bool add_msix_cap(struct virtio_pci *vp)
{
	uint8_t c = pci_device_add_cap(&vp->pci, PCI_CAP_ID_MSIX, PCI_MSIX_CAP_SIZE);
	if (!c)
		return false;
	vp->msix_cap = c;
	pci_cfg_set(&vp->pci, c + PCI_MSIX_FLAGS, 2, (uint32_t)(vp->nr_vectors - 1));
	pci_device_set_wmask(&vp->pci, c + PCI_MSIX_FLAGS, 2,
			     PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	pci_cfg_set(&vp->pci, c + PCI_MSIX_TABLE, 4, VIRTIO_PCI_MSIX_TABLE | VIRTIO_PCI_BAR);
	pci_cfg_set(&vp->pci, c + PCI_MSIX_PBA, 4, VIRTIO_PCI_MSIX_PBA | VIRTIO_PCI_BAR);
	return true;
}

static int setup_vectors(struct virtio_pci *vp, char *err, size_t errlen)
{
	for (int i = 0; i < vp->nr_vectors; i++) {
		struct virtio_pci_vector *v = &vp->vec[i];
		v->ctrl = PCI_MSIX_ENTRY_CTRL_MASK; /* masked at reset */
		v->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (v->fd < 0) {
			snprintf(err, errlen, "eventfd: %s", strerror(errno));
			return -1;
		}
		if (!has_msi_routes(&vp->host))
			continue;
		v->gsi = vp->host.msi_route_alloc(vp->host.opaque);
		if (v->gsi < 0) {
			snprintf(err, errlen, "no MSI route left for vector %d", i);
			return -1;
		}
		if (vp->host.irqfd && vp->host.irqfd(vp->host.opaque, v->gsi, v->fd, true)) {
			snprintf(err, errlen, "cannot bind vector %d to GSI %d", i, v->gsi);
			vp->host.msi_route_free(vp->host.opaque, v->gsi);
			v->gsi = -1;
			return -1;
		}
	}
	return 0;
}

static int setup_notify(struct virtio_pci *vp, char *err, size_t errlen)
{
	for (int q = 0; q < vp->dev->nr_queues; q++) {
		if (!vp->host.loop)
			continue;
		if (virtio_kick_open(&vp->notify[q], vp->host.loop)) {
			snprintf(err, errlen, "queue %d: cannot watch its kick eventfd", q);
			return -1;
		}
	}
	return 0;
}

int virtio_pci_init(struct virtio_pci *vp, struct virtio_dev *dev,
		    const struct virtio_transport_host *host, char *err, size_t errlen)
{
	const struct virtio_device_ops *ops = dev->ops;
	memset(vp, 0, sizeof(*vp));
	pthread_mutex_init(&vp->lock, NULL);
	vp->dev = dev;
	vp->host = *host;
	vp->nr_vectors = dev->nr_queues + 1;
	dev->dma_enabled = false; /* until the guest sets Bus Master Enable */
	for (int i = 0; i < VIRTIO_PCI_MAX_VECTORS; i++)
		vp->vec[i] = (struct virtio_pci_vector){.gsi = -1, .fd = -1};
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		virtio_kick_init(&vp->notify[q], dev, q);
	transport_reset(vp);
	if (dev->nr_queues < 1 || dev->nr_queues > VIRTIO_MAX_QUEUES ||
	    ops->config_size > VIRTIO_PCI_DEVICE_MAX || ops->device_id > 0xffff - 0x1040) {
		snprintf(err, errlen, "%s: unsupported queue count or config size", dev->label);
		return -1;
	}
	pci_device_init(&vp->pci, VIRTIO_PCI_VENDOR_ID,
			(uint16_t)(VIRTIO_PCI_DEVICE_ID_BASE + ops->device_id), VIRTIO_PCI_REVISION,
			class_code(ops->device_id), VIRTIO_PCI_VENDOR_ID, VIRTIO_PCI_SUBSYS_ID, 1,
			&pci_ops, vp);
	bool ok =
	    pci_device_add_bar(&vp->pci, VIRTIO_PCI_BAR, VIRTIO_PCI_BAR_SIZE, true, false) == 0;
	ok = ok && add_virtio_cap(vp, VIRTIO_PCI_CAP_COMMON_CFG, VIRTIO_PCI_CAP_LEN,
				  VIRTIO_PCI_COMMON_OFF, VIRTIO_PCI_COMMON_CFG_SIZE);
	ok = ok && add_virtio_cap(vp, VIRTIO_PCI_CAP_NOTIFY_CFG, VIRTIO_PCI_NOTIFY_CAP_LEN,
				  VIRTIO_PCI_NOTIFY_OFF,
				  (uint32_t)dev->nr_queues * VIRTIO_PCI_NOTIFY_MULT);
	ok = ok && add_virtio_cap(vp, VIRTIO_PCI_CAP_ISR_CFG, VIRTIO_PCI_CAP_LEN,
				  VIRTIO_PCI_ISR_OFF, VIRTIO_PCI_ISR_LEN);
	if (ops->config_size)
		ok = ok && add_virtio_cap(vp, VIRTIO_PCI_CAP_DEVICE_CFG, VIRTIO_PCI_CAP_LEN,
					  VIRTIO_PCI_DEVICE_OFF, ops->config_size);
	ok = ok && add_msix_cap(vp);
	ok = ok && add_virtio_cap(vp, VIRTIO_PCI_CAP_PCI_CFG, VIRTIO_PCI_CFG_CAP_LEN, 0, 0);
	if (!ok) {
		snprintf(err, errlen, "%s: cannot lay out the PCI function", dev->label);
		return -1;
	}
	dev->transport = &transport_ops;
	dev->transport_priv = vp;
	if (setup_vectors(vp, err, errlen) || setup_notify(vp, err, errlen)) {
		virtio_pci_cleanup(vp);
		return -1;
	}
	return 0;
}

void virtio_pci_cleanup(struct virtio_pci *vp)
{
	for (int q = 0; q < VIRTIO_MAX_QUEUES; q++)
		virtio_kick_close(&vp->notify[q], vp->host.loop);
	for (int i = 0; i < VIRTIO_PCI_MAX_VECTORS; i++) {
		struct virtio_pci_vector *v = &vp->vec[i];
		if (v->gsi >= 0) {
			if (vp->host.irqfd && v->fd >= 0)
				vp->host.irqfd(vp->host.opaque, v->gsi, v->fd, false);
			vp->host.msi_route_free(vp->host.opaque, v->gsi);
		}
		if (v->fd >= 0)
			close(v->fd);
		*v = (struct virtio_pci_vector){.gsi = -1, .fd = -1};
	}
	if (has_msi_routes(&vp->host))
		vp->host.msi_route_commit(vp->host.opaque);
	if (vp->dev && vp->dev->transport_priv == vp) {
		vp->dev->transport = NULL;
		vp->dev->transport_priv = NULL;
	}
	pthread_mutex_destroy(&vp->lock);
}

struct virtio_pci *virtio_pci_create(const struct virtio_transport_host *host, struct pci_bus *bus,
				     struct virtio_dev *dev, char *err, size_t errlen)
{
	if (!has_msi_routes(host)) {
		snprintf(err, errlen, "%s: the VM has no GSI routing table", dev->label);
		return NULL;
	}
	struct virtio_pci *vp = malloc(sizeof(*vp));
	if (!vp) {
		snprintf(err, errlen, "%s: out of memory", dev->label);
		return NULL;
	}
	if (virtio_pci_init(vp, dev, host, err, errlen)) {
		free(vp);
		return NULL;
	}
	if (pci_bus_add_device(bus, &vp->pci) < 0) {
		snprintf(err, errlen, "%s: no free PCI slot or BAR space", dev->label);
		virtio_pci_cleanup(vp);
		free(vp);
		return NULL;
	}
	return vp;
}

void virtio_pci_destroy(struct virtio_pci *vp)
{
	if (!vp)
		return;
	virtio_pci_cleanup(vp);
	free(vp);
}

void virtio_pci_save(struct virtio_pci *vp, struct virtio_pci_state *out)
{
	memset(out, 0, sizeof(*out));
	struct pci_bus *bus = vp->pci.bus;
	if (bus)
		pthread_mutex_lock(&bus->lock);
	memcpy(out->cfg, vp->pci.cfg, PCI_CFG_SIZE);
	if (bus)
		pthread_mutex_unlock(&bus->lock);
	pthread_mutex_lock(&vp->lock);
	for (int i = 0; i < vp->nr_vectors; i++) {
		const struct virtio_pci_vector *v = &vp->vec[i];
		out->msix[i][0] = v->addr_lo;
		out->msix[i][1] = v->addr_hi;
		out->msix[i][2] = v->data;
		out->msix[i][3] = v->ctrl;
		out->pending[i] = v->pending;
	}
	out->isr = vp->isr;
	out->intx_level = vp->intx_level;
	out->dfselect = vp->dfselect;
	out->gfselect = vp->gfselect;
	out->queue_select = vp->queue_select;
	out->config_vector = vp->config_vector;
	memcpy(out->queue_vector, vp->queue_vector, sizeof(out->queue_vector));
	pthread_mutex_unlock(&vp->lock);
}

/* A configuration-space write as the guest makes it (ECAM, bus 0). */
static void replay_cfg(struct virtio_pci *vp, uint32_t reg, const uint8_t *saved, uint32_t len)
{
	uint8_t b[4];
	memcpy(b, saved + reg, len);
	pci_bus_ecam_io(vp->pci.bus, ((uint64_t)vp->pci.slot << 15) | reg, b, len, true);
}

static void replay_bar(struct virtio_pci *vp, uint64_t off, uint64_t v, uint32_t len)
{
	uint8_t b[8];
	put_le(b, len, v);
	bar_access(&vp->pci, VIRTIO_PCI_BAR, off, b, len, true);
}

static void replay_common(struct virtio_pci *vp, uint32_t field, uint64_t v, uint32_t len)
{
	replay_bar(vp, VIRTIO_PCI_COMMON_OFF + field, v, len);
}

void virtio_pci_restore(struct virtio_pci *vp, const struct virtio_dev_state *dev,
			const struct virtio_pci_state *in)
{
	const uint8_t *cfg = in->cfg;
	if (vp->pci.bus) {
		for (uint32_t reg = PCI_BAR0; reg < PCI_BAR0 + 4 * PCI_NR_BARS; reg += 4)
			replay_cfg(vp, reg, cfg, 4);
		replay_cfg(vp, PCI_INTERRUPT_LINE, cfg, 1);
		if (vp->cfg_cap) /* the window's bar, offset and length, not its data */
			for (uint32_t reg = vp->cfg_cap + 4; reg < vp->cfg_cap + 16u; reg += 4)
				replay_cfg(vp, reg, cfg, 4);
		replay_cfg(vp, vp->msix_cap + PCI_MSIX_FLAGS, cfg, 2);
		replay_cfg(vp, PCI_COMMAND, cfg, 2); /* last: decoding starts on set BARs */
	}
	for (int i = 0; i < vp->nr_vectors; i++)
		for (uint32_t w = 0; w < 4; w++)
			replay_bar(
			    vp, VIRTIO_PCI_MSIX_TABLE + (uint64_t)i * PCI_MSIX_ENTRY_SIZE + 4 * w,
			    in->msix[i][w], 4);
	for (uint32_t sel = 0; sel < 2; sel++) {
		replay_common(vp, VIRTIO_PCI_COMMON_GFSELECT, sel, 4);
		replay_common(vp, VIRTIO_PCI_COMMON_GF, dev->driver_features >> (32 * sel), 4);
	}
	uint8_t want = dev->status & (uint8_t)~VIRTIO_STATUS_DEVICE_NEEDS_RESET, st = 0;
	static const uint8_t steps[] = {VIRTIO_STATUS_ACKNOWLEDGE, VIRTIO_STATUS_DRIVER,
					VIRTIO_STATUS_FEATURES_OK};
	for (size_t i = 0; i < sizeof(steps); i++)
		if (want & steps[i])
			replay_common(vp, VIRTIO_PCI_COMMON_STATUS, st |= steps[i], 1);
	for (int q = 0; q < vp->dev->nr_queues; q++) {
		const struct virtio_queue_state *vq = &dev->q[q];
		replay_common(vp, VIRTIO_PCI_COMMON_Q_SELECT, (uint64_t)q, 2);
		replay_common(vp, VIRTIO_PCI_COMMON_Q_MSIX, in->queue_vector[q], 2);
		if (!vq->ready)
			continue;
		replay_common(vp, VIRTIO_PCI_COMMON_Q_SIZE, vq->size, 2);
		replay_common(vp, VIRTIO_PCI_COMMON_Q_DESC, vq->desc, 8);
		replay_common(vp, VIRTIO_PCI_COMMON_Q_DRIVER, vq->avail, 8);
		replay_common(vp, VIRTIO_PCI_COMMON_Q_DEVICE, vq->used, 8);
		replay_common(vp, VIRTIO_PCI_COMMON_Q_ENABLE, 1, 2);
	}
	replay_common(vp, VIRTIO_PCI_COMMON_MSIX, in->config_vector, 2);
	if (want != st)
		replay_common(vp, VIRTIO_PCI_COMMON_STATUS, want, 1);
	virtio_dev_restore_rings(vp->dev, dev);
	pthread_mutex_lock(&vp->lock);
	vp->dfselect = in->dfselect;
	vp->gfselect = in->gfselect;
	vp->queue_select = in->queue_select;
	vp->isr = in->isr & (VIRTIO_PCI_ISR_QUEUE | VIRTIO_PCI_ISR_CONFIG);
	for (int i = 0; i < vp->nr_vectors; i++)
		vp->vec[i].pending = in->pending[i] & 1;
	update_intx(vp); /* the level follows the ISR, as the guest left it */
	pthread_mutex_unlock(&vp->lock);
}
