/* The probe's virtio-console driver: queues and the MULTIPORT handshake (see virtio_console.h). */
#include "virtio_console.h"

#include "lib.h"
#include "printf.h"
#include "x86.h"

#define MMIO_CFG	 0x100
#define CFG_MAX_NR_PORTS 4 /* le16 cols, le16 rows, then le32 max_nr_ports */
#define Q_CTRL_RX	 2
#define Q_CTRL_TX	 3
#define CTRL_HDR	 8 /* le32 id, le16 event, le16 value */
#define CTRL_BUF	 128
#define CTRL_NBUF	 16
#define CTRL_MSGS_MAX	 1024 /* a handshake still going after this many never ends */

static uint8_t ctrl_rx[CTRL_NBUF][CTRL_BUF] __attribute__((aligned(64)));
static uint8_t ctrl_tx[CTRL_HDR] __attribute__((aligned(8)));

struct virtio_dev **vcon_devices(unsigned *n)
{
	static struct virtio_dev_set set;
	return virtio_devices_kept(&set, VIRTIO_ID_CONSOLE, n);
}

static uint32_t cfg32(struct virtio_dev *d, unsigned off)
{
	uint64_t base = d->transport == VIRTIO_MMIO ? d->base + MMIO_CFG : d->devcfg;
	return mmio_read32(base + off);
}

const char *vcon_open(struct vcon *c, struct virtio_dev *d)
{
	memset(c, 0, sizeof(*c));
	c->d = d;
	c->max_nr_ports = 1;
	const char *err = virtio_init(d, 1ull << VIRTIO_CONSOLE_F_MULTIPORT, 2);
	if (err || !(d->features >> VIRTIO_CONSOLE_F_MULTIPORT & 1))
		return err;
	if (d->transport == VIRTIO_PCI && !d->devcfg)
		return "virtio-console: MULTIPORT without a device configuration structure";
	c->max_nr_ports = cfg32(d, CFG_MAX_NR_PORTS);
	if (!c->max_nr_ports)
		return "virtio-console: MULTIPORT with max_nr_ports 0";
	/* Again, now with the control queues and the ports the probe takes. */
	unsigned ports = c->max_nr_ports < VCON_PORTS ? c->max_nr_ports : VCON_PORTS;
	if ((err = virtio_init(d, 1ull << VIRTIO_CONSOLE_F_MULTIPORT, 2 + 2 * ports)))
		return err;
	c->multiport = true;
	return 0;
}

struct virtq *vcon_txq(struct vcon *c, unsigned p)
{
	return &c->d->vq[p ? 3 + 2 * p : 1];
}

/* One control message to the device, waited for. */
static const char *ctrl_send(struct vcon *c, uint32_t id, uint16_t event, uint16_t value)
{
	struct virtq *vq = &c->d->vq[Q_CTRL_TX];
	memcpy(ctrl_tx, &id, 4);
	memcpy(ctrl_tx + 4, &event, 2);
	memcpy(ctrl_tx + 6, &value, 2);
	struct virtq_buf b = {(uint64_t)ctrl_tx, CTRL_HDR, false};
	if (virtq_add(vq, &b, 1) < 0)
		return "virtio-console: control transmit queue full";
	virtq_kick(vq, false);
	uint16_t head;
	uint32_t len;
	return virtq_wait(vq, &head, &len, VCON_TIMEOUT_MS);
}

static bool ctrl_post(struct virtq *vq, unsigned b, uint8_t *buf_of)
{
	struct virtq_buf vb = {(uint64_t)ctrl_rx[b], CTRL_BUF, true};
	int head = virtq_add(vq, &vb, 1);
	if (head < 0)
		return false;
	buf_of[head] = (uint8_t)b;
	return true;
}

/* One message from the device (every byte the device's: any id, event, length). */
static const char *ctrl_handle(struct vcon *c, const uint8_t *m, uint32_t len)
{
	uint32_t id;
	uint16_t event, value;
	if (len < CTRL_HDR || len > CTRL_BUF)
		return "virtio-console: control message of a bad length";
	memcpy(&id, m, 4);
	memcpy(&event, m + 4, 2);
	memcpy(&value, m + 6, 2);
	c->ctrl_msgs++;
	if (event == VCON_DEVICE_ADD) {
		if (id >= c->max_nr_ports)
			return "virtio-console: DEVICE_ADD of a port past max_nr_ports";
		bool take = id < VCON_PORTS;
		if (take)
			c->port[id].added = true;
		return ctrl_send(c, id, VCON_PORT_READY, take);
	}
	if (id >= VCON_PORTS)
		return 0; /* about a port the probe refused */
	struct vcon_port *p = &c->port[id];
	if (!p->added)
		return "virtio-console: control message for a port never added";
	if (event == VCON_PORT_NAME) {
		/* Up to the end of the message or a NUL (QEMU sends one, minivmm none). */
		uint32_t n = 0;
		while (CTRL_HDR + n < len && m[CTRL_HDR + n])
			n++;
		if (!n || n > VCON_NAME_MAX)
			return "virtio-console: PORT_NAME empty or too long";
		for (uint32_t i = 0; i < n; i++)
			if (m[CTRL_HDR + i] < 0x21 || m[CTRL_HDR + i] > 0x7e)
				return "virtio-console: PORT_NAME has bytes that are not printable";
		memcpy(p->name, m + CTRL_HDR, n);
		p->name[n] = 0;
	} else if (event == VCON_PORT_OPEN) {
		p->host_open = value != 0;
	} else if (event == VCON_CONSOLE_PORT) {
		p->console = true;
	}
	return 0;
}

static int match(struct vcon *c, const char *name, unsigned len)
{
	for (unsigned p = 0; p < VCON_PORTS; p++)
		if (c->port[p].added && c->port[p].host_open && strlen(c->port[p].name) == len &&
		    !memcmp(c->port[p].name, name, len))
			return (int)p;
	return -1;
}

const char *vcon_find_port(struct vcon *c, const char *name, unsigned len, unsigned *port)
{
	if (!c->multiport)
		return "virtio-console: no MULTIPORT, so no named ports";
	struct virtq *rx = &c->d->vq[Q_CTRL_RX];
	uint8_t buf_of[VIRTQ_MAX_SIZE];
	unsigned nbuf = rx->size < CTRL_NBUF ? rx->size : CTRL_NBUF;
	const char *err;
	for (unsigned b = 0; b < nbuf; b++)
		ctrl_post(rx, b, buf_of); /* cannot fail: nbuf <= the queue's size */
	virtq_kick(rx, false);
	if ((err = ctrl_send(c, 0, VCON_DEVICE_READY, 1)))
		return err;
	int p;
	while ((p = match(c, name, len)) < 0) {
		if (c->ctrl_msgs >= CTRL_MSGS_MAX)
			return "virtio-console: the handshake does not end";
		uint16_t head;
		uint32_t got;
		if ((err = virtq_wait(rx, &head, &got, VCON_TIMEOUT_MS))) {
			for (unsigned i = 0; i < VCON_PORTS; i++)
				kprintf("probe: console port %u added=%u name=%s host_open=%u\n", i,
					c->port[i].added, c->port[i].name, c->port[i].host_open);
			return err;
		}
		unsigned b = buf_of[head];
		if ((err = ctrl_handle(c, ctrl_rx[b], got)))
			return err;
		ctrl_post(rx, b, buf_of);
		virtq_kick(rx, false);
	}
	*port = (unsigned)p;
	return ctrl_send(c, (uint32_t)p, VCON_PORT_OPEN, 1);
}
