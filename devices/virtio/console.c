#include "console.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/event_loop.h"
#include "base/log.h"

#define CONSOLE_QUEUE_SIZE 256
/* Queues: port 0's receive and transmit, then (MULTIPORT) the control receive and transmit
 * queues, then each further port's pair. */
#define CTRL_RX 2
#define CTRL_TX 3
/* Bytes taken from the guest per pass over a transmit ring before the I/O thread looks at its
 * other work (the rest follows in a bottom half). */
#define TX_PASS_BYTES (256u << 10)

struct console_port {
	struct virtio_console_port host;
	uint32_t tx_skip; /* bytes of the transmit ring's head chain already output */
	bool ready;	  /* the guest sent PORT_READY */
	bool guest_open;  /* the guest has the port open (PORT_OPEN): input is delivered */
	/* The host's input ended (virtio_console_host_close, under in_lock): once what it gave
	 * is delivered the guest is told (PORT_OPEN 0, close_sent) and reads end of file. */
	bool host_closed, close_sent;
	/* Host input waiting for receive buffers; guarded by in_lock (any thread adds). */
	uint8_t in[VIRTIO_CONSOLE_INPUT_BYTES];
	unsigned in_len;
};

struct virtio_console {
	struct virtio_dev *dev;
	unsigned nr_ports;
	bool multiport;
	struct console_port ports[VIRTIO_CONSOLE_MAX_PORTS];
	pthread_mutex_t in_lock;
	struct virtq_elem *elem;
	struct bottom_half work; /* serve every queue: input, room in an output, a long pass */
	/* Control messages to the guest, in order (MULTIPORT). Each is sent once per reset (the
	 * guest's DEVICE_READY and PORT_READY are answered once, a host close told once), so
	 * they always fit. */
	struct virtio_console_control ctrl[VIRTIO_CONSOLE_CTRL_MAX];
	unsigned nr_ctrl;
	bool device_ready;
	struct log_ratelimit ctrl_log;
	uint64_t tx_bytes, rx_bytes, ctrl_ignored;
};

static int rx_queue(unsigned port)
{
	return port == 0 ? 0 : 2 + 2 * (int)port;
}

static int tx_queue(unsigned port)
{
	return rx_queue(port) + 1;
}

/* An enabled queue the device may use now. */
static bool usable(struct virtio_dev *dev, int q)
{
	return q < dev->nr_queues && virtio_dev_live(dev) && dev->vqs[q].desc;
}

/* Pop the next chain of q; a chain must be all device-readable (want_in false) or all
 * device-writable. 1, 0 (empty), -1 (the device is marked broken). */
static int pop(struct virtio_console *c, int q, bool want_in)
{
	char err[160];
	int rc = virtqueue_pop(&c->dev->vqs[q], c->elem, err, sizeof(err));
	if (rc < 0) {
		virtio_dev_mark_broken(c->dev, err);
		return -1;
	}
	if (rc > 0 && (want_in ? c->elem->out_num : c->elem->in_num)) {
		snprintf(err, sizeof(err), "queue %d: a %s buffer in a %s queue", q,
			 want_in ? "device-readable" : "device-writable",
			 want_in ? "receive" : "transmit");
		virtio_dev_mark_broken(c->dev, err);
		return -1;
	}
	return rc;
}

/* The guest's output on port p, to the host side until it takes no more: a chain it took only
 * part of is put back, and the part done remembered in tx_skip. Returns true when the pass
 * ran out of budget with work left. */
static bool process_tx(struct virtio_console *c, unsigned p)
{
	struct virtio_dev *dev = c->dev;
	struct console_port *port = &c->ports[p];
	int q = tx_queue(p);
	struct virtqueue *vq = &dev->vqs[q];
	bool pushed = false, blocked = false;
	size_t pass = 0;
	unsigned n = 0;
	for (; n < vq->size && pass < TX_PASS_BYTES && !blocked; n++) {
		int rc = pop(c, q, false);
		if (rc <= 0) {
			if (rc < 0)
				return false;
			break;
		}
		uint64_t skip = port->tx_skip;
		for (unsigned i = 0; i < c->elem->out_num && !blocked; i++) {
			const struct iovec *iov = &c->elem->out[i];
			if (skip >= iov->iov_len) {
				skip -= iov->iov_len;
				continue;
			}
			size_t want = iov->iov_len - skip;
			size_t took = port->host.output
					  ? port->host.output(port->host.opaque,
							      (uint8_t *)iov->iov_base + skip, want)
					  : want;
			if (took > want)
				took = want; /* the host side's bug must not walk past the buffer */
			/* A chain's total fits in 32 bits (virtqueue_pop checks the lengths). */
			port->tx_skip += (uint32_t)took;
			c->tx_bytes += took;
			pass += took;
			blocked = took < want;
			skip = 0;
		}
		if (blocked) {
			virtqueue_unpop(vq); /* the rest when virtio_console_output_room says */
			break;
		}
		port->tx_skip = 0;
		virtqueue_push(vq, c->elem->head, 0);
		pushed = true;
	}
	if (pushed)
		virtio_dev_notify_used(dev, q);
	return !blocked && (n == vq->size || pass >= TX_PASS_BYTES || virtqueue_has_work(vq));
}

/* Copy len bytes into the chain's device-writable buffers; returns how many fitted. */
static size_t fill_chain(struct virtq_elem *elem, const uint8_t *buf, size_t len)
{
	size_t done = 0;
	for (unsigned i = 0; i < elem->in_num && done < len; i++) {
		size_t n = elem->in[i].iov_len < len - done ? elem->in[i].iov_len : len - done;
		memcpy(elem->in[i].iov_base, buf + done, n);
		done += n;
	}
	return done;
}

static void queue_ctrl(struct virtio_console *c, uint32_t id, uint16_t event, uint16_t value);
static void process_ctrl_rx(struct virtio_console *c);

/* The host's input on port p ended and all of it is in the guest's buffers: PORT_OPEN 0, once
 * per reset and after PORT_READY's PORT_OPEN 1 (Linux then reads end of file once its buffers
 * are empty). in_lock held. */
static bool host_close_due(struct virtio_console *c, unsigned p)
{
	struct console_port *port = &c->ports[p];
	if (!c->multiport || !port->host_closed || port->close_sent || port->in_len || !port->ready)
		return false;
	port->close_sent = true;
	return true;
}

/* Host input for port p into the guest's receive buffers, while both last; then the end of
 * the host's input, if it came. */
static void process_rx(struct virtio_console *c, unsigned p)
{
	struct virtio_dev *dev = c->dev;
	struct console_port *port = &c->ports[p];
	int q = rx_queue(p);
	bool pushed = false;
	pthread_mutex_lock(&c->in_lock);
	/* Linux drops what arrives on a port no process has open (the console is always). */
	while (port->in_len && (!c->multiport || port->guest_open)) {
		if (pop(c, q, true) <= 0)
			break;
		size_t n = fill_chain(c->elem, port->in, port->in_len);
		memmove(port->in, port->in + n, port->in_len - n);
		port->in_len -= (unsigned)n;
		c->rx_bytes += n;
		virtqueue_push(&dev->vqs[q], c->elem->head, (uint32_t)n);
		pushed = true;
	}
	bool close = host_close_due(c, p);
	pthread_mutex_unlock(&c->in_lock);
	if (pushed) {
		virtio_dev_notify_used(dev, q);
		if (port->host.input_room)
			port->host.input_room(port->host.opaque);
	}
	if (close) {
		/* After the data: Linux looks at its receive ring before at host_connected. */
		queue_ctrl(c, p, VIRTIO_CONSOLE_PORT_OPEN, 0);
		if (usable(dev, CTRL_RX))
			process_ctrl_rx(c);
	}
}

static void queue_ctrl(struct virtio_console *c, uint32_t id, uint16_t event, uint16_t value)
{
	if (c->nr_ctrl == VIRTIO_CONSOLE_CTRL_MAX)
		return; /* cannot happen: each message is queued once per reset */
	c->ctrl[c->nr_ctrl++] = (struct virtio_console_control){id, event, value};
}

/* Control messages to the guest while it gives buffers for them. */
static void process_ctrl_rx(struct virtio_console *c)
{
	unsigned sent = 0;
	while (sent < c->nr_ctrl) {
		if (pop(c, CTRL_RX, true) <= 0)
			break;
		const struct virtio_console_control *m = &c->ctrl[sent];
		uint8_t msg[sizeof(*m) + VIRTIO_CONSOLE_NAME_MAX];
		size_t len = sizeof(*m);
		uint32_t id = htole32(m->id);
		uint16_t event = htole16(m->event), value = htole16(m->value);
		memcpy(msg, &id, 4);
		memcpy(msg + 4, &event, 2);
		memcpy(msg + 6, &value, 2);
		if (m->event == VIRTIO_CONSOLE_PORT_NAME) {
			/* The name follows the header, without its NUL (Linux adds one). */
			const char *name = c->ports[m->id].host.name;
			size_t nlen = strnlen(name, VIRTIO_CONSOLE_NAME_MAX - 1);
			memcpy(msg + len, name, nlen);
			len += nlen;
		}
		/* A buffer too small for the message gets what fits: the guest's loss. */
		size_t n = fill_chain(c->elem, msg, len);
		virtqueue_push(&c->dev->vqs[CTRL_RX], c->elem->head, (uint32_t)n);
		sent++;
	}
	if (!sent)
		return;
	memmove(c->ctrl, c->ctrl + sent, (c->nr_ctrl - sent) * sizeof(c->ctrl[0]));
	c->nr_ctrl -= sent;
	virtio_dev_notify_used(c->dev, CTRL_RX);
}

static void ctrl_ignored(struct virtio_console *c, const char *why, uint32_t id, unsigned event)
{
	c->ctrl_ignored++;
	log_warn_ratelimited(&c->ctrl_log, "%s: control message ignored: %s (port %u, event %u)",
			     c->dev->label, why, id, event);
}

/* One control message from the guest (all of its bytes are the guest's: any id, any event). */
static void handle_ctrl(struct virtio_console *c, const struct virtio_console_control *m)
{
	if (m->event == VIRTIO_CONSOLE_DEVICE_READY) {
		if (m->value != 1) {
			ctrl_ignored(c, "the driver failed to set up", m->id, m->event);
			return;
		}
		if (c->device_ready)
			return; /* answered already */
		c->device_ready = true;
		for (unsigned p = 0; p < c->nr_ports; p++)
			queue_ctrl(c, p, VIRTIO_CONSOLE_DEVICE_ADD, 1);
		return;
	}
	if (m->event != VIRTIO_CONSOLE_PORT_READY && m->event != VIRTIO_CONSOLE_PORT_OPEN) {
		ctrl_ignored(c, "not an event a driver sends", m->id, m->event);
		return;
	}
	if (m->id >= c->nr_ports) {
		ctrl_ignored(c, "no such port", m->id, m->event);
		return;
	}
	struct console_port *port = &c->ports[m->id];
	if (m->event == VIRTIO_CONSOLE_PORT_OPEN) {
		port->guest_open = m->value != 0;
		return;
	}
	if (m->value != 1 || port->ready)
		return; /* the guest could not add it, or it is ready already */
	port->ready = true;
	if (m->id == 0)
		queue_ctrl(c, 0, VIRTIO_CONSOLE_CONSOLE_PORT, 1);
	else if (port->host.name[0])
		queue_ctrl(c, m->id, VIRTIO_CONSOLE_PORT_NAME, 1);
	/* The host side is always there: the guest may write at once. */
	queue_ctrl(c, m->id, VIRTIO_CONSOLE_PORT_OPEN, 1);
}

static void process_ctrl_tx(struct virtio_console *c)
{
	bool pushed = false;
	struct virtqueue *vq = &c->dev->vqs[CTRL_TX];
	for (unsigned n = 0; n < vq->size; n++) {
		if (pop(c, CTRL_TX, false) <= 0)
			break;
		uint8_t raw[sizeof(struct virtio_console_control)];
		size_t got = 0;
		for (unsigned i = 0; i < c->elem->out_num && got < sizeof(raw); i++) {
			size_t k = c->elem->out[i].iov_len < sizeof(raw) - got
				       ? c->elem->out[i].iov_len
				       : sizeof(raw) - got;
			memcpy(raw + got, c->elem->out[i].iov_base, k);
			got += k;
		}
		virtqueue_push(vq, c->elem->head, 0);
		pushed = true;
		if (got < sizeof(raw)) {
			ctrl_ignored(c, "shorter than a message", 0, 0);
			continue;
		}
		uint32_t id;
		uint16_t event, value;
		memcpy(&id, raw, 4);
		memcpy(&event, raw + 4, 2);
		memcpy(&value, raw + 6, 2);
		handle_ctrl(c, &(struct virtio_console_control){le32toh(id), le16toh(event),
								le16toh(value)});
	}
	if (pushed)
		virtio_dev_notify_used(c->dev, CTRL_TX);
}

/* Everything the device can do now. dev->lock held. */
static void process_all(struct virtio_console *c)
{
	struct virtio_dev *dev = c->dev;
	bool more = false;
	if (c->multiport && usable(dev, CTRL_TX))
		process_ctrl_tx(c);
	if (c->multiport && usable(dev, CTRL_RX))
		process_ctrl_rx(c);
	for (unsigned p = 0; p < c->nr_ports; p++) {
		if (usable(dev, rx_queue(p)))
			process_rx(c, p);
		if (usable(dev, tx_queue(p)))
			more |= process_tx(c, p);
	}
	/* Only a pop that finds the ring empty re-arms the driver's kicks (EVENT_IDX): come back
	 * for what a pass left. */
	if (more && virtio_dev_live(dev))
		bottom_half_schedule(dev->loop, &c->work);
}

static void queue_notify(struct virtio_dev *dev, int q)
{
	struct virtio_console *c = dev->priv;
	if (q == CTRL_TX || q == CTRL_RX) {
		/* Ports come and go with control messages: look at everything. */
		process_all(c);
		return;
	}
	unsigned p = q < 2 ? 0 : (unsigned)(q - 2) / 2;
	if (p >= c->nr_ports)
		return;
	if (q == rx_queue(p))
		process_rx(c, p);
	else if (process_tx(c, p))
		bottom_half_schedule(dev->loop, &c->work);
}

static void restart(struct virtio_dev *dev)
{
	process_all(dev->priv);
}

static void do_work(void *opaque)
{
	struct virtio_console *c = opaque;
	virtio_dev_lock(c->dev);
	if (virtio_dev_live(c->dev))
		process_all(c);
	virtio_dev_unlock(c->dev);
}

static void reset(struct virtio_dev *dev)
{
	struct virtio_console *c = dev->priv;
	/* Nothing is in flight: a chain is output whole or put back. Host input stays. */
	for (unsigned p = 0; p < c->nr_ports; p++) {
		c->ports[p].tx_skip = 0;
		c->ports[p].ready = false;
		c->ports[p].guest_open = false;
		c->ports[p].close_sent = false; /* told again once the port is ready again */
	}
	c->nr_ctrl = 0;
	c->device_ready = false;
}

static void read_config(struct virtio_dev *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	struct virtio_console *c = dev->priv;
	/* cols, rows (no VIRTIO_CONSOLE_F_SIZE: zero), max_nr_ports, emerg_wr (not offered). */
	uint8_t cfg[12] = {0};
	uint32_t ports = htole32(c->nr_ports);
	memcpy(cfg + 4, &ports, 4);
	memcpy(data, cfg + offset, len);
}

static void write_config(struct virtio_dev *dev, uint32_t offset, const uint8_t *data, uint32_t len)
{
	(void)dev, (void)offset, (void)data, (void)len; /* emerg_wr is not offered */
}

static const struct virtio_device_ops console_ops = {
    .name = "virtio-console",
    .device_id = VIRTIO_ID_CONSOLE,
    .max_queue_size = CONSOLE_QUEUE_SIZE,
    .config_size = 12,
    .read_config = read_config,
    .write_config = write_config,
    .reset = reset,
    .queue_notify = queue_notify,
    .restart = restart,
};

struct virtio_console *virtio_console_create(struct virtio_dev *dev, struct guest_mem *mem,
					     struct event_loop *loop, const char *label,
					     const struct virtio_console_port *ports,
					     unsigned nr_ports)
{
	if (nr_ports < 1 || nr_ports > VIRTIO_CONSOLE_MAX_PORTS) {
		log_error("%s: %u ports (1 to %u)", label, nr_ports, VIRTIO_CONSOLE_MAX_PORTS);
		return NULL;
	}
	struct virtio_console *c = calloc(1, sizeof(*c));
	if (c)
		c->elem = malloc(sizeof(*c->elem));
	if (!c || !c->elem) {
		free(c);
		log_error("%s: out of memory", label);
		return NULL;
	}
	c->dev = dev;
	c->nr_ports = nr_ports;
	c->multiport = nr_ports > 1;
	for (unsigned p = 0; p < nr_ports; p++) {
		c->ports[p].host = ports[p];
		c->ports[p].host.name[VIRTIO_CONSOLE_NAME_MAX - 1] = '\0';
	}
	pthread_mutex_init(&c->in_lock, NULL);
	bottom_half_init(&c->work, do_work, c);
	const struct virtio_dev_params params = {
	    .features = (1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << VIRTIO_RING_F_INDIRECT_DESC) |
			(c->multiport ? 1ULL << VIRTIO_CONSOLE_F_MULTIPORT : 0),
	    .nr_queues = c->multiport ? 2 + 2 * (int)nr_ports : 2,
	};
	virtio_dev_init(dev, &console_ops, &params, c, mem, loop, label);
	return c;
}

void virtio_console_destroy(struct virtio_console *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->in_lock);
	free(c->elem);
	free(c);
}

void virtio_console_output_room(struct virtio_console *c)
{
	bottom_half_schedule(c->dev->loop, &c->work);
}

unsigned virtio_console_input(struct virtio_console *c, unsigned port, const uint8_t *buf,
			      unsigned len)
{
	if (port >= c->nr_ports)
		return 0;
	struct console_port *p = &c->ports[port];
	pthread_mutex_lock(&c->in_lock);
	if (p->host_closed) {
		pthread_mutex_unlock(&c->in_lock);
		return len; /* after the end: nowhere to go */
	}
	unsigned room = VIRTIO_CONSOLE_INPUT_BYTES - p->in_len;
	unsigned n = len < room ? len : room;
	memcpy(p->in + p->in_len, buf, n);
	p->in_len += n;
	pthread_mutex_unlock(&c->in_lock);
	if (n)
		bottom_half_schedule(c->dev->loop, &c->work);
	return n;
}

void virtio_console_host_close(struct virtio_console *c, unsigned port)
{
	if (port == 0 || port >= c->nr_ports)
		return; /* the console (hvc0) has no end of input */
	pthread_mutex_lock(&c->in_lock);
	c->ports[port].host_closed = true;
	pthread_mutex_unlock(&c->in_lock);
	bottom_half_schedule(c->dev->loop, &c->work);
}

void virtio_console_resume(struct virtio_console *c)
{
	struct virtio_dev *dev = c->dev;
	virtio_dev_lock(dev);
	for (int q = 0; q < dev->nr_queues; q++)
		if (usable(dev, q) && dev->transport && dev->transport->signal_queue)
			dev->transport->signal_queue(dev, q);
	virtio_dev_unlock(dev);
	bottom_half_schedule(dev->loop, &c->work);
}

void virtio_console_get_stats(struct virtio_console *c, struct virtio_console_stats *out)
{
	virtio_dev_lock(c->dev);
	*out = (struct virtio_console_stats){
	    .tx_bytes = c->tx_bytes, .rx_bytes = c->rx_bytes, .ctrl_ignored = c->ctrl_ignored};
	virtio_dev_unlock(c->dev);
}

void virtio_console_save(struct virtio_console *c, struct virtio_console_state *out)
{
	memset(out, 0, sizeof(*out));
	out->nr_ports = c->nr_ports;
	for (unsigned p = 0; p < c->nr_ports; p++) {
		out->tx_skip[p] = c->ports[p].tx_skip;
		out->port_ready[p] = c->ports[p].ready;
		out->guest_open[p] = c->ports[p].guest_open;
	}
	out->device_ready = c->device_ready;
	out->nr_ctrl = (uint8_t)c->nr_ctrl;
	memcpy(out->ctrl, c->ctrl, c->nr_ctrl * sizeof(c->ctrl[0]));
}

static bool valid_state(const struct virtio_console *c, const struct virtio_console_state *in,
			char *err, size_t errlen)
{
	if (in->nr_ports != c->nr_ports) {
		snprintf(err, errlen, "the saved console has %u ports, this one %u", in->nr_ports,
			 c->nr_ports);
		return false;
	}
	if (in->device_ready > 1 || in->nr_ctrl > VIRTIO_CONSOLE_CTRL_MAX ||
	    (!c->multiport && (in->device_ready || in->nr_ctrl))) {
		snprintf(err, errlen, "the saved console's control state is invalid");
		return false;
	}
	for (unsigned p = 0; p < VIRTIO_CONSOLE_MAX_PORTS; p++) {
		bool used = p < c->nr_ports;
		if (in->port_ready[p] > used || in->guest_open[p] > used ||
		    (!used && in->tx_skip[p])) {
			snprintf(err, errlen, "the saved console's port %u is invalid", p);
			return false;
		}
	}
	for (unsigned i = 0; i < in->nr_ctrl; i++) {
		const struct virtio_console_control *m = &in->ctrl[i];
		bool ours = m->event == VIRTIO_CONSOLE_DEVICE_ADD ||
			    m->event == VIRTIO_CONSOLE_CONSOLE_PORT ||
			    m->event == VIRTIO_CONSOLE_PORT_NAME ||
			    m->event == VIRTIO_CONSOLE_PORT_OPEN;
		/* PORT_OPEN 0: the host's input on that port ended. */
		bool value_ok = m->value == 1 || (m->event == VIRTIO_CONSOLE_PORT_OPEN &&
						  m->value == 0 && m->id != 0);
		if (!ours || m->id >= c->nr_ports || !value_ok) {
			snprintf(err, errlen, "the saved console's control message %u is invalid",
				 i);
			return false;
		}
	}
	return true;
}

int virtio_console_restore(struct virtio_console *c, const struct virtio_console_state *in,
			   char *err, size_t errlen)
{
	if (!valid_state(c, in, err, errlen))
		return -1;
	for (unsigned p = 0; p < c->nr_ports; p++) {
		c->ports[p].tx_skip = in->tx_skip[p];
		c->ports[p].ready = in->port_ready[p];
		c->ports[p].guest_open = in->guest_open[p];
	}
	c->device_ready = in->device_ready;
	c->nr_ctrl = in->nr_ctrl;
	memcpy(c->ctrl, in->ctrl, c->nr_ctrl * sizeof(c->ctrl[0]));
	return 0;
}
