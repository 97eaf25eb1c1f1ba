/* virtio-net: the device, and its default path top to bottom (transmit in a bottom half, one
 * frame per send; receive in batches). The other transmit modes, tx=timer and tx-uring=on's
 * batches, and adaptive polling are in files of their own (net_internal.h says what crosses). */
#include "net.h"
#include "net_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices/backends/net_backend.h"
#include "devices/virtio/virtio.h"
#include "base/event_loop.h"
#include "base/log.h"

/* Feature bits (virtio 1.2, 5.1.3). */
#define VIRTIO_NET_F_CSUM	0
#define VIRTIO_NET_F_GUEST_CSUM 1
#define VIRTIO_NET_F_MTU	3
#define VIRTIO_NET_F_MAC	5
#define VIRTIO_NET_F_GUEST_TSO4 7
#define VIRTIO_NET_F_GUEST_TSO6 8
#define VIRTIO_NET_F_GUEST_ECN	9
#define VIRTIO_NET_F_HOST_TSO4	11
#define VIRTIO_NET_F_HOST_TSO6	12
#define VIRTIO_NET_F_HOST_ECN	13
#define VIRTIO_NET_F_MRG_RXBUF	15
#define VIRTIO_NET_F_STATUS	16
#define VIRTIO_NET_F_GUEST_USO4 54
#define VIRTIO_NET_F_GUEST_USO6 55
#define VIRTIO_NET_F_HOST_USO	56

#define VIRTIO_NET_S_LINK_UP 1

/* struct virtio_net_hdr_v1 fields the driver fills on transmit (virtio 1.2, 5.1.6). */
#define HDR_FLAGS		    0
#define HDR_GSO_TYPE		    1
#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_GSO_NONE	    0
#define VIRTIO_NET_HDR_GSO_TCPV4    1
#define VIRTIO_NET_HDR_GSO_TCPV6    4
#define VIRTIO_NET_HDR_GSO_UDP_L4   5
#define VIRTIO_NET_HDR_GSO_ECN	    0x80

#define NET_QUEUE_SIZE 256
#define NET_MTU	       1500
/* Largest frame a backend hands us: a 64 KiB GSO frame plus Ethernet and the header. */
#define RX_BUF_SIZE NET_RX_FRAME_MAX
/* Frames taken from the backend per wake-up before the I/O thread looks at other work. */
#define RX_BATCH 64
/* Most guest buffers one merged frame may use. */
#define RX_MAX_CHAINS 64

/* ---- transmit ---- */

/* Offloads a transmit header asks for must have been negotiated: a driver cannot hand the
 * backend (the host kernel, for a tap) checksum or segmentation work it never agreed on. */
static bool tx_header_allowed(const struct virtio_dev *dev, const uint8_t *hdr)
{
	uint8_t flags = hdr[HDR_FLAGS], gso = hdr[HDR_GSO_TYPE];
	if (flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM) /* DATA_VALID, RSC_INFO: receive only */
		return false;
	if ((flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
	    !virtio_dev_has_feature(dev, VIRTIO_NET_F_CSUM))
		return false;
	if ((gso & VIRTIO_NET_HDR_GSO_ECN) && !virtio_dev_has_feature(dev, VIRTIO_NET_F_HOST_ECN))
		return false;
	switch (gso & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN) {
	case VIRTIO_NET_HDR_GSO_NONE:
		return !(gso & VIRTIO_NET_HDR_GSO_ECN);
	case VIRTIO_NET_HDR_GSO_TCPV4:
		return virtio_dev_has_feature(dev, VIRTIO_NET_F_HOST_TSO4);
	case VIRTIO_NET_HDR_GSO_TCPV6:
		return virtio_dev_has_feature(dev, VIRTIO_NET_F_HOST_TSO6);
	case VIRTIO_NET_HDR_GSO_UDP_L4:
		return virtio_dev_has_feature(dev, VIRTIO_NET_F_HOST_USO);
	default:
		return false; /* UFO and unknown types are never offered */
	}
}

/* Build iov (room for e->out_num + 1 entries) from a popped chain: the header copied out of
 * guest memory into hdr, then the rest. Returns the iovec count. e->out_len >= NET_HDR_LEN. */
static int tx_build_iov(const struct virtq_elem *e, uint8_t *hdr, struct iovec *iov)
{
	size_t skip = NET_HDR_LEN, got = 0;
	int cnt = 1;
	for (unsigned i = 0; i < e->out_num; i++) {
		const uint8_t *base = e->out[i].iov_base;
		size_t len = e->out[i].iov_len;
		size_t take = len < skip ? len : skip;
		memcpy(hdr + got, base, take);
		got += take;
		skip -= take;
		if (len > take)
			iov[cnt++] = (struct iovec){(void *)(base + take), len - take};
	}
	iov[0] = (struct iovec){hdr, NET_HDR_LEN};
	return cnt;
}

/* A chain is done: count it, return it to the driver, and every `every` chains ask whether the
 * driver wants an interrupt, so one waiting for room wakes during the burst (used_event),
 * refills while we drain, and the ring never runs dry. */
static void tx_complete(struct virtio_net *n, uint16_t head, size_t len, int rc,
			unsigned *unchecked, unsigned every)
{
	if (rc == 0) {
		n->tx_packets++;
		n->tx_bytes += len;
	} else {
		n->tx_dropped++;
	}
	virtqueue_push(&n->dev->vqs[TX_QUEUE], head, 0);
	if (++*unchecked == every) {
		virtio_dev_notify_used(n->dev, TX_QUEUE);
		*unchecked = 0;
	}
}

/* Pop a transmit chain into n->elem: 1, 0 (ring empty) or -1 (device marked broken). */
static int tx_pop(struct virtio_net *n)
{
	char err[160];
	int rc = virtqueue_pop(&n->dev->vqs[TX_QUEUE], n->elem, err, sizeof(err));
	if (rc < 0) {
		virtio_dev_mark_broken(n->dev, err);
		return -1;
	}
	if (rc > 0 && n->elem->out_len < NET_HDR_LEN) {
		virtio_dev_mark_broken(n->dev, "transmit chain shorter than the virtio-net header");
		return -1;
	}
	return rc;
}

/* Send up to burst frames, one at a time; returns how many chains were completed. dev->lock
 * held. */
static unsigned tx_flush(struct virtio_net *n, unsigned burst, bool *more)
{
	struct virtio_dev *dev = n->dev;
	struct virtqueue *vq = &dev->vqs[TX_QUEUE];
	unsigned done = 0, unchecked = 0;
	unsigned every = vq->size > TX_NOTIFY_CHECKS ? vq->size / TX_NOTIFY_CHECKS : 1;
	*more = false;
	while (done < burst) {
		int rc = tx_pop(n);
		if (rc < 0)
			return done;
		if (rc == 0)
			break;
		int cnt = tx_build_iov(n->elem, n->tx_hdr, n->tx_iov);
		rc = tx_header_allowed(dev, n->tx_hdr)
			 ? n->backend->ops->send(n->backend, n->tx_iov, cnt)
			 : -EPROTO;
		if (rc == -EAGAIN) {
			/* Keep the frame: it goes first when the backend has room again. */
			virtqueue_unpop(vq);
			n->tx_blocked = true;
			break;
		}
		tx_complete(n, n->elem->head, n->elem->out_len - NET_HDR_LEN, rc, &unchecked,
			    every);
		done++;
	}
	if (unchecked)
		virtio_dev_notify_used(dev, TX_QUEUE);
	*more = done == burst;
	return done;
}

/* One transmit pass, from the bottom half or the timer: drain a burst; after a full one, or if
 * frames arrived while kicks were being re-enabled, ask for another pass (kicks stay off), so a
 * frame queued meanwhile is never stranded. Returns whether another pass is needed. */
static bool tx_pass(struct virtio_net *n)
{
	struct virtio_dev *dev = n->dev;
	bool again = false;
	virtio_dev_lock(dev);
	if (live(n) && !n->tx_blocked) {
		struct virtqueue *vq = &dev->vqs[TX_QUEUE];
		bool more;
		if (n->tx_batch) /* tx-uring=on: net_tx_batch.c */
			net_tx_flush_batched(n, n->cfg.tx_burst, &more);
		else
			tx_flush(n, n->cfg.tx_burst, &more);
		if (more) {
			again = true;
		} else if (n->polling) {
			/* Kicks stay off: the loop polls the ring, and turns them back on (and
			 * looks once more) before it sleeps (poll_end, net_poll.c). */
		} else if (!n->tx_blocked && !dev->broken && virtqueue_set_notification(vq, true)) {
			virtqueue_set_notification(vq, false);
			again = true;
		}
	}
	virtio_dev_unlock(dev);
	return again;
}

static void tx_bh_run(void *opaque)
{
	struct virtio_net *n = opaque;
	if (tx_pass(n))
		bottom_half_schedule(n->loop, &n->tx_bh);
}

static void tx_kick(struct virtio_net *n)
{
	struct virtio_dev *dev = n->dev;
	virtqueue_set_notification(&dev->vqs[TX_QUEUE], false);
	if (n->cfg.tx_mode == NET_TX_BH) {
		bottom_half_schedule(dev->loop, &n->tx_bh);
	} else {
		net_tx_timer_kick(n); /* tx=timer: net_timer_tx.c */
	}
}

static void backend_tx_ready(void *opaque)
{
	struct virtio_net *n = opaque;
	virtio_dev_lock(n->dev);
	n->tx_blocked = false;
	virtio_dev_unlock(n->dev);
	bottom_half_schedule(n->dev->loop, &n->tx_bh);
}

/* ---- receive ---- */

/* Copy len bytes from src into the iovecs starting at byte offset off. */
static size_t iov_copy_to(const struct iovec *iov, unsigned cnt, size_t off, const uint8_t *src,
			  size_t len)
{
	size_t done = 0;
	for (unsigned i = 0; i < cnt && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t chunk = iov[i].iov_len - off;
		if (chunk > len - done)
			chunk = len - done;
		memcpy((uint8_t *)iov[i].iov_base + off, src + done, chunk);
		done += chunk;
		off = 0;
	}
	return done;
}

/* Deliver the pending frame into guest buffers. Returns false when the guest has too few
 * buffers posted (nothing consumed: the frame stays pending). dev->lock held. */
static bool rx_deliver(struct virtio_net *n)
{
	struct virtio_dev *dev = n->dev;
	struct virtqueue *vq = &dev->vqs[RX_QUEUE];
	bool mergeable = virtio_dev_has_feature(dev, VIRTIO_NET_F_MRG_RXBUF);
	size_t len = (size_t)n->rx_pending;
	struct {
		uint16_t head;
		uint32_t len;
	} used[RX_MAX_CHAINS];
	/* Where the first chain's header lies, to set num_buffers once it is known. */
	struct iovec hdr[NET_HDR_LEN];
	unsigned hdr_cnt = 0;
	unsigned chains = 0;
	size_t copied = 0;
	char err[160];
	while (copied < len || chains == 0) {
		if (chains == RX_MAX_CHAINS || (chains == 1 && !mergeable))
			break; /* the guest's buffers are too small for this frame */
		int rc = virtqueue_pop(vq, n->elem, err, sizeof(err));
		if (rc < 0) {
			virtio_dev_mark_broken(dev, err);
			return true;
		}
		if (rc == 0) {
			while (chains--)
				virtqueue_unpop(vq);
			return false;
		}
		struct virtq_elem *e = n->elem;
		if (chains == 0) {
			if (e->in_len < NET_HDR_LEN) {
				virtio_dev_mark_broken(dev,
						       "receive buffer shorter than the header");
				return true;
			}
			size_t need = NET_HDR_LEN;
			for (unsigned i = 0; i < e->in_num && need; i++) {
				hdr[hdr_cnt++] = e->in[i];
				need -= e->in[i].iov_len < need ? e->in[i].iov_len : need;
			}
		}
		size_t n_copy = iov_copy_to(e->in, e->in_num, 0, n->rx_buf + copied, len - copied);
		used[chains].head = e->head;
		used[chains].len = (uint32_t)n_copy;
		chains++;
		copied += n_copy;
	}
	if (copied < len) {
		/* The guest's buffers are too small for this frame: drop it, returning the first
		 * buffer with just a header (drivers discard such runts) and the others unused. */
		n->rx_dropped++;
		while (chains > 1) {
			virtqueue_unpop(vq);
			chains--;
		}
		used[0].len = NET_HDR_LEN;
	} else {
		n->rx_packets++;
		n->rx_bytes += len - NET_HDR_LEN;
	}
	uint8_t num_buffers[2] = {(uint8_t)chains, (uint8_t)(chains >> 8)}; /* little-endian */
	iov_copy_to(hdr, hdr_cnt, 10, num_buffers, sizeof(num_buffers));
	for (unsigned i = 0; i < chains; i++)
		virtqueue_push(vq, used[i].head, used[i].len);
	n->rx_pending = 0;
	return true;
}

static void set_rx_enabled(struct virtio_net *n, bool enabled)
{
	if (n->rx_enabled == enabled)
		return;
	n->rx_enabled = enabled;
	n->backend->ops->set_rx_enabled(n->backend, enabled);
}

/* Move frames from the backend into the guest until either runs dry. dev->lock held. */
static void rx_process(struct virtio_net *n)
{
	struct virtio_dev *dev = n->dev;
	unsigned delivered = 0;
	bool stalled = false;
	for (unsigned i = 0; i < RX_BATCH && live(n); i++) {
		if (!n->rx_pending) {
			ssize_t got = n->backend->ops->recv(n->backend, n->rx_buf, RX_BUF_SIZE);
			if (got <= 0)
				break; /* nothing pending, or the backend is gone (link_down) */
			if (got < NET_HDR_LEN)
				continue; /* runt from the backend: nothing to deliver */
			n->rx_pending = got;
		}
		if (!rx_deliver(n)) {
			stalled = true;
			break;
		}
		delivered++;
	}
	if (delivered)
		virtio_dev_notify_used(dev, RX_QUEUE);
	if (stalled) /* a poll looks for buffers posted after this (net_poll.c) */
		rx_stall_mark(n);
	/* No guest buffers: stop reading the backend until the guest posts more (it kicks). */
	set_rx_enabled(n, live(n) && !stalled);
	if (live(n) && !stalled && delivered == RX_BATCH)
		bottom_half_schedule(dev->loop,
				     &n->rx_bh); /* more may wait: let others run first */
}

static void rx_bh_run(void *opaque)
{
	struct virtio_net *n = opaque;
	virtio_dev_lock(n->dev);
	if (live(n))
		rx_process(n);
	else
		set_rx_enabled(n, false); /* the backend would report the frame forever: stop */
	virtio_dev_unlock(n->dev);
}

static void backend_rx_ready(void *opaque)
{
	rx_bh_run(opaque);
}

static void backend_link_down(void *opaque, const char *why)
{
	struct virtio_net *n = opaque;
	struct virtio_dev *dev = n->dev;
	log_warn("%s: backend lost: %s; link down, transmitted frames are dropped", dev->label,
		 why);
	virtio_dev_lock(dev);
	n->config.status = 0;
	dev->config_generation++;
	if (dev->status & VIRTIO_STATUS_DRIVER_OK)
		dev->transport->signal_config(dev);
	virtio_dev_unlock(dev);
}

/* ---- virtio device operations ---- */

static void queue_notify(struct virtio_dev *dev, int q)
{
	struct virtio_net *n = dev->priv;
	if (q == TX_QUEUE)
		tx_kick(n);
	else
		rx_process(n); /* the guest posted receive buffers */
}

static void read_config(struct virtio_dev *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	struct virtio_net *n = dev->priv;
	memcpy(data, (const uint8_t *)&n->config + offset, len);
}

static int activate(struct virtio_dev *dev)
{
	struct virtio_net *n = dev->priv;
	struct net_offloads rx = {
	    .csum = virtio_dev_has_feature(dev, VIRTIO_NET_F_GUEST_CSUM),
	    .tso4 = virtio_dev_has_feature(dev, VIRTIO_NET_F_GUEST_TSO4),
	    .tso6 = virtio_dev_has_feature(dev, VIRTIO_NET_F_GUEST_TSO6),
	    .ecn = virtio_dev_has_feature(dev, VIRTIO_NET_F_GUEST_ECN),
	    .uso = virtio_dev_has_feature(dev, VIRTIO_NET_F_GUEST_USO4) &&
		   virtio_dev_has_feature(dev, VIRTIO_NET_F_GUEST_USO6),
	};
	n->backend->ops->set_rx_offloads(n->backend, &rx);
	n->tx_blocked = false;
	n->rx_pending = 0;
	/* Start receiving on the I/O thread (activate runs on a vCPU thread). */
	bottom_half_schedule(dev->loop, &n->rx_bh);
	return 0;
}

static void reset(struct virtio_dev *dev)
{
	struct virtio_net *n = dev->priv;
	net_tx_timer_cancel(n);
	set_rx_enabled(n, false);
	n->rx_pending = 0;
	n->tx_blocked = false;
}

static const struct virtio_device_ops net_ops = {
    .name = "virtio-net",
    .device_id = VIRTIO_ID_NET,
    .max_queue_size = NET_QUEUE_SIZE,
    .config_size = sizeof(struct virtio_net_config_space),
    .read_config = read_config,
    .activate = activate,
    .reset = reset,
    .queue_notify = queue_notify,
};

static uint64_t offered_features(const struct virtio_net *n)
{
	uint64_t f = (1ULL << VIRTIO_NET_F_MAC) | (1ULL << VIRTIO_NET_F_STATUS) |
		     (1ULL << VIRTIO_NET_F_MTU) | (1ULL << VIRTIO_NET_F_MRG_RXBUF) |
		     (1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << VIRTIO_RING_F_INDIRECT_DESC);
	if (!n->cfg.offload)
		return f;
	struct net_offloads o;
	n->backend->ops->offloads_supported(n->backend, &o);
	if (!o.csum)
		return f;
	f |= (1ULL << VIRTIO_NET_F_CSUM) | (1ULL << VIRTIO_NET_F_GUEST_CSUM);
	if (o.tso4)
		f |= (1ULL << VIRTIO_NET_F_HOST_TSO4) | (1ULL << VIRTIO_NET_F_GUEST_TSO4);
	if (o.tso6)
		f |= (1ULL << VIRTIO_NET_F_HOST_TSO6) | (1ULL << VIRTIO_NET_F_GUEST_TSO6);
	if (o.ecn)
		f |= (1ULL << VIRTIO_NET_F_HOST_ECN) | (1ULL << VIRTIO_NET_F_GUEST_ECN);
	if (o.uso)
		f |= (1ULL << VIRTIO_NET_F_HOST_USO) | (1ULL << VIRTIO_NET_F_GUEST_USO4) |
		     (1ULL << VIRTIO_NET_F_GUEST_USO6);
	return f;
}

/* ---- creation ---- */

/* Locally administered, unique per device in this VM: 52:54:00:12:xx:xx with the device's
 * index (the number ending its label, "virtio-net12") added to 0x3456. */
void virtio_net_default_mac(const char *label, uint8_t mac[6])
{
	size_t end = strlen(label), start = end;
	while (start > 0 && label[start - 1] >= '0' && label[start - 1] <= '9')
		start--;
	unsigned index = 0;
	for (size_t i = start; i < end && index < 0x10000; i++)
		index = index * 10 + (unsigned)(label[i] - '0');
	unsigned low = (0x3456 + index) & 0xffff;
	const uint8_t m[6] = {0x52, 0x54, 0x00, 0x12, (uint8_t)(low >> 8), (uint8_t)low};
	memcpy(mac, m, 6);
}

static void virtio_net_free(struct virtio_net *n)
{
	if (!n)
		return;
	if (n->poller_added)
		net_poll_del(n);
	if (n->backend)
		n->backend->ops->destroy(n->backend);
	net_tx_timer_destroy(n);
	free(n->elem);
	free(n->tx_iov);
	free(n->tx_batch);
	free(n->rx_buf);
	free(n);
}

struct virtio_net *virtio_net_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const struct net_options *cfg,
				     const char *label, virtio_net_open_fn open_backend)
{
	struct virtio_net *n = calloc(1, sizeof(*n));
	if (!n) {
		log_error("%s: out of memory", label);
		return NULL;
	}
	n->dev = dev;
	n->loop = loop;
	n->cfg = *cfg;
	n->elem = malloc(sizeof(*n->elem));
	n->tx_iov = calloc(VIRTQ_MAX_SIZE + 1, sizeof(*n->tx_iov));
	n->rx_buf = malloc(RX_BUF_SIZE);
	if (!n->elem || !n->tx_iov || !n->rx_buf) {
		log_error("%s: out of memory", label);
		virtio_net_free(n);
		return NULL;
	}
	bottom_half_init(&n->tx_bh, tx_bh_run, n);
	bottom_half_init(&n->rx_bh, rx_bh_run, n);
	if (net_tx_timer_init(n)) {
		virtio_net_free(n);
		return NULL;
	}
	struct net_backend_client client = {.rx_ready = backend_rx_ready,
					    .tx_ready = backend_tx_ready,
					    .link_down = backend_link_down,
					    .opaque = n};
	char err[200];
	n->backend = open_backend(cfg, loop, &client, err, sizeof(err));
	if (!n->backend) {
		log_error("%s: %s", label, err);
		virtio_net_free(n);
		return NULL;
	}
	if (cfg->tx_uring && n->backend->ops->send_batch && !(n->tx_batch = net_tx_batch_alloc())) {
		log_error("%s: out of memory", label);
		virtio_net_free(n);
		return NULL;
	}
	memcpy(n->config.mac, cfg->mac, 6);
	if (!cfg->mac_set)
		virtio_net_default_mac(label, n->config.mac);
	n->config.status = VIRTIO_NET_S_LINK_UP;
	n->config.max_virtqueue_pairs = 1;
	n->config.mtu = NET_MTU;
	/* Every device shares net_ops; the offered features are per device. */
	const struct virtio_dev_params params = {.features = offered_features(n), .nr_queues = 2};
	virtio_dev_init(dev, &net_ops, &params, n, mem, loop, label);
	if (cfg->poll_us)
		net_poll_add(n); /* net_poll.c */
	log_info("%s: %s backend%s%s, mac %02x:%02x:%02x:%02x:%02x:%02x, tx=%s (burst %u, %s%s), "
		 "rx by %s, poll %u us, offloads %s, features 0x%llx",
		 label, cfg->user ? "user-mode" : n->backend->ops->name, cfg->user ? "" : " ",
		 cfg->user ? "" : cfg->tap, n->config.mac[0], n->config.mac[1], n->config.mac[2],
		 n->config.mac[3], n->config.mac[4], n->config.mac[5],
		 cfg->tx_mode == NET_TX_BH ? "bh" : "timer", cfg->tx_burst, virtio_net_tx_path(n),
		 n->tx_batch ? ", batched" : "", virtio_net_rx_path(n), cfg->poll_us,
		 (dev->device_features >> VIRTIO_NET_F_CSUM) & 1 ? "on" : "off",
		 (unsigned long long)dev->device_features);
	return n;
}

void virtio_net_stats(const struct virtio_net *n, struct virtio_net_stats *out)
{
	*out = (struct virtio_net_stats){.tx_packets = n->tx_packets,
					 .tx_bytes = n->tx_bytes,
					 .tx_dropped = n->tx_dropped,
					 .rx_packets = n->rx_packets,
					 .rx_bytes = n->rx_bytes,
					 .rx_dropped = n->rx_dropped,
					 .poll_tx = n->poll_tx,
					 .poll_rx = n->poll_rx};
}

/* What the backend says of one of its paths, or its name where it does not say. */
static const char *backend_path(const struct virtio_net *n,
				const char *(*path)(struct net_backend *be))
{
	return path ? path(n->backend) : n->backend->ops->name;
}

const char *virtio_net_tx_path(const struct virtio_net *n)
{
	return backend_path(n, n->backend->ops->tx_path);
}

const char *virtio_net_rx_path(const struct virtio_net *n)
{
	return backend_path(n, n->backend->ops->rx_path);
}

void virtio_net_quiesce(struct virtio_net *n)
{
	struct virtio_dev *dev = n->dev;
	virtio_dev_lock(dev);
	if (n->rx_pending && live(n) && rx_deliver(n))
		virtio_dev_notify_used(dev, RX_QUEUE);
	if (n->rx_pending) {
		n->rx_dropped++;
		n->rx_pending = 0;
	}
	virtio_dev_unlock(dev);
}

void virtio_net_save(struct virtio_net *n, struct virtio_net_state *out)
{
	virtio_dev_lock(n->dev);
	*out = (struct virtio_net_state){.status = n->config.status,
					 .tx_packets = n->tx_packets,
					 .tx_bytes = n->tx_bytes,
					 .tx_dropped = n->tx_dropped,
					 .rx_packets = n->rx_packets,
					 .rx_bytes = n->rx_bytes,
					 .rx_dropped = n->rx_dropped};
	memcpy(out->mac, n->config.mac, 6);
	virtio_dev_unlock(n->dev);
}

int virtio_net_restore(struct virtio_net *n, const struct virtio_net_state *in, char *err,
		       size_t errlen)
{
	if (in->status & ~VIRTIO_NET_S_LINK_UP) {
		snprintf(err, errlen, "net: link status 0x%x out of range", in->status);
		return -1;
	}
	if (in->mac[0] & 1) { /* multicast: never a NIC's own (--net mac= refuses it too) */
		snprintf(err, errlen, "net: the saved MAC is a multicast address");
		return -1;
	}
	struct virtio_dev *dev = n->dev;
	virtio_dev_lock(dev);
	memcpy(n->config.mac, in->mac, 6);
	n->tx_packets = in->tx_packets;
	n->tx_bytes = in->tx_bytes;
	n->tx_dropped = in->tx_dropped;
	n->rx_packets = in->rx_packets;
	n->rx_bytes = in->rx_bytes;
	n->rx_dropped = in->rx_dropped;
	n->link_changed = in->status != n->config.status;
	if (n->link_changed)
		dev->config_generation++;
	virtio_dev_unlock(dev);
	/* Saved between a kick and its transmit pass, the driver was told not to kick (and the
	 * ring may be empty, so nothing else runs a pass): one pass turns kicks back on. */
	bottom_half_schedule(n->loop, &n->tx_bh);
	return 0;
}

void virtio_net_resignal(struct virtio_net *n)
{
	struct virtio_dev *dev = n->dev;
	virtio_dev_lock(dev);
	bool notify = n->link_changed && live(n);
	n->link_changed = false;
	virtio_dev_unlock(dev);
	if (notify && dev->transport && dev->transport->signal_config)
		dev->transport->signal_config(dev);
}

void virtio_net_destroy(struct virtio_net *n)
{
	virtio_net_free(n);
}

/* ---- for the other modes' files (net_internal.h): net.c's own steps, which the default path
 * calls directly ---- */

bool net_tx_pass(struct virtio_net *n)
{
	return tx_pass(n);
}

int net_tx_pop(struct virtio_net *n)
{
	return tx_pop(n);
}

int net_tx_build_iov(const struct virtq_elem *e, uint8_t *hdr, struct iovec *iov)
{
	return tx_build_iov(e, hdr, iov);
}

bool net_tx_header_allowed(const struct virtio_dev *dev, const uint8_t *hdr)
{
	return tx_header_allowed(dev, hdr);
}

void net_tx_complete(struct virtio_net *n, uint16_t head, size_t len, int rc, unsigned *unchecked,
		     unsigned every)
{
	tx_complete(n, head, len, rc, unchecked, every);
}
