/* The virtio-net driver: negotiation, config space, RX refill and TX buffer pool (5.1). */
#include "lib.h"
#include "tsc.h"
#include "virtio_net.h"
#include "boot_info.h"
#include "cmdline.h"
#include "x86.h"

#define MMIO_CONFIG	 0x100 /* virtio-mmio device-specific config (4.2.2) */
#define CFG_MAC		 0
#define CFG_STATUS	 6
#define HDR_FLAGS	 0
#define HDR_NUM_BUFFERS	 10
#define HDR_F_NEEDS_CSUM 1
#define HDR_F_DATA_VALID 2
/* A merged frame: up to an IPv4 datagram of 64 KiB behind Ethernet and the header. */
#define RX_ASM_LEN	(VNET_HDR_LEN + 14 + 65535)
#define RX_QUEUE	0
#define TX_QUEUE	1
#define DEFAULT_BATCH	32
#define STATUS_CHECK_MS 100
#define RX_IDLE_BUDGET	32

/* One buffer per descriptor: pool and ring are the same size, so a free buffer always has
 * a free descriptor. Not zeroed at start-up (.noinit): vnet_open clears what matters. */
static uint8_t rx_pool[VIRTQ_MAX_SIZE][VNET_BUF_LEN]
    __attribute__((aligned(4096), section(".noinit")));
static uint8_t tx_pool[VIRTQ_MAX_SIZE][VNET_BUF_LEN]
    __attribute__((aligned(4096), section(".noinit")));
static uint8_t tx_big_pool[VNET_BIG_BUFS][VNET_BIG_BUF_LEN]
    __attribute__((aligned(4096), section(".noinit")));
static uint8_t rx_asm[RX_ASM_LEN] __attribute__((aligned(64), section(".noinit")));

/* The transport core has no config accessor; both windows are plain memory-mapped here. */
static volatile uint8_t *config(struct virtio_dev *d)
{
	uint64_t base = d->transport == VIRTIO_MMIO ? d->base + MMIO_CONFIG : d->devcfg;
	return (volatile uint8_t *)base;
}

static void rx_post(struct vnet *n, uint16_t b)
{
	struct virtq_buf vb = {(uint64_t)rx_pool[b], VNET_BUF_LEN, true};
	int head = virtq_add(n->rx, &vb, 1);
	n->rx_buf_of[head] = b; /* cannot fail: one descriptor per buffer */
}

const char *vnet_open(struct vnet *n)
{
	memset(n, 0, sizeof(*n));
	virtio_discover();
	for (unsigned i = 0; i < virtio_ndevs && !n->dev; i++)
		if (virtio_devs[i].device_id == VIRTIO_ID_NET)
			n->dev = &virtio_devs[i];
	if (!n->dev)
		return "no virtio-net device";
	struct virtio_dev *d = n->dev;
	uint64_t want =
	    1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS | 1ull << VIRTIO_NET_F_MRG_RXBUF;
	const char *v;
	size_t vl;
	/* net.offload=on|off (default on): transmit offloads (CSUM, HOST_TSO4) where offered,
	 * as a Linux guest takes them; no GUEST_CSUM or GUEST_TSO: received frames come whole,
	 * and checked here. Off: every checksum computed here, MSS-sized frames. */
	bool offload = true;
	if (cmdline_get(boot_info.cmdline, "net.offload", &v, &vl)) {
		if (vl == 3 && !memcmp(v, "off", 3))
			offload = false;
		else if (!(vl == 2 && !memcmp(v, "on", 2)))
			return "net.offload: on or off";
	}
	if (offload)
		want |= 1ull << VIRTIO_NET_F_CSUM | 1ull << VIRTIO_NET_F_HOST_TSO4;
	/* net.rx_offload=on|off (default off): GUEST_CSUM + GUEST_TSO4, large frames in. */
	if (cmdline_get(boot_info.cmdline, "net.rx_offload", &v, &vl)) {
		if (vl == 2 && !memcmp(v, "on", 2))
			want |= 1ull << VIRTIO_NET_F_GUEST_CSUM | 1ull << VIRTIO_NET_F_GUEST_TSO4;
		else if (!(vl == 3 && !memcmp(v, "off", 3)))
			return "net.rx_offload: on or off";
	}
	/* net.txwait=halt: wait for TX room on an interrupt, leaving the host CPU to the VMM. */
	n->tx_halt = cmdline_get(boot_info.cmdline, "net.txwait", &v, &vl) && vl == 4 &&
		     !memcmp(v, "halt", 4);
	/* net.rxwait=halt: the same for a receiver with nothing to receive. */
	n->rx_halt = cmdline_get(boot_info.cmdline, "net.rxwait", &v, &vl) && vl == 4 &&
		     !memcmp(v, "halt", 4);
	d->use_irq = n->tx_halt || n->rx_halt;
	const char *err = virtio_init(d, want, 2);
	if (err)
		return err;
	uint64_t need_cfg = 1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS;
	if (d->transport == VIRTIO_PCI && !d->devcfg && d->features & need_cfg)
		return "virtio-net over pci without a device config window";
	volatile uint8_t *cfg = config(d);
	static const uint8_t fallback_mac[6] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	for (unsigned i = 0; i < 6; i++)
		n->mac[i] =
		    d->features >> VIRTIO_NET_F_MAC & 1 ? cfg[CFG_MAC + i] : fallback_mac[i];
	vnet_read_link(n);
	n->mrg_rxbuf = d->features >> VIRTIO_NET_F_MRG_RXBUF & 1;
	n->csum = d->features >> VIRTIO_NET_F_CSUM & 1;
	n->tso4 = n->csum && d->features >> VIRTIO_NET_F_HOST_TSO4 & 1; /* TSO needs CSUM */
	n->rx_csum = d->features >> VIRTIO_NET_F_GUEST_CSUM & 1;
	n->rx_tso4 = n->rx_csum && d->features >> VIRTIO_NET_F_GUEST_TSO4 & 1;
	/* 64 KiB frames need mergeable buffers here (ours are 2 KiB each) */
	if (n->rx_tso4 && !n->mrg_rxbuf)
		return "virtio-net: GUEST_TSO4 without MRG_RXBUF";
	n->rx = &d->vq[RX_QUEUE];
	n->tx = &d->vq[TX_QUEUE];
	n->kick_batch = DEFAULT_BATCH;
	for (uint16_t b = 0; b < n->rx->size; b++)
		rx_post(n, b);
	virtq_kick(n->rx, true);
	/* TX headers stay zero (GSO_NONE, no partial checksum) but after vnet_tx_send_hdr, which
	 * vnet_tx_send then clears: only the frames behind them change. */
	n->ntx = n->tx->size;
	for (uint16_t b = 0; b < n->ntx; b++) {
		memset(tx_pool[b], 0, VNET_HDR_LEN);
		n->tx_free[n->ntx_free++] = b;
	}
	for (uint8_t b = 0; b < VNET_BIG_BUFS; b++)
		n->big_free[n->nbig_free++] = b;
	return 0;
}

bool vnet_read_link(struct vnet *n)
{
	n->link_up = true; /* without STATUS the link is assumed up (5.1.4) */
	if (n->dev->features >> VIRTIO_NET_F_STATUS & 1)
		n->link_up =
		    *(volatile uint16_t *)(config(n->dev) + CFG_STATUS) & VIRTIO_NET_S_LINK_UP;
	return n->link_up;
}

void vnet_tx_reclaim(struct vnet *n)
{
	uint16_t id;
	uint32_t len;
	const char *err;
	while (virtq_get(n->tx, &id, &len, &err)) {
		if (err) {
			n->err = n->err ? n->err : err;
			return;
		}
		n->tx_free[n->ntx_free++] = n->tx_buf_of[id];
		if (n->tx_big_of[id]) {
			n->big_free[n->nbig_free++] = (uint8_t)(n->tx_big_of[id] - 1);
			n->tx_big_of[id] = 0;
		}
	}
}

uint8_t *vnet_tx_buf(struct vnet *n)
{
	if (!n->ntx_free)
		vnet_tx_reclaim(n);
	return n->ntx_free ? tx_pool[n->tx_free[n->ntx_free - 1]] + VNET_HDR_LEN : 0;
}

uint8_t *vnet_tx_big_buf(struct vnet *n)
{
	if (!n->ntx_free || !n->nbig_free)
		vnet_tx_reclaim(n);
	return n->ntx_free && n->nbig_free
		   ? tx_big_pool[n->big_free[n->nbig_free - 1]] + VNET_HDR_LEN
		   : 0;
}

/* Posts buf (VNET_HDR_LEN + len bytes); big: a TSO buffer, which takes a small one along. */
static void tx_post(struct vnet *n, uint8_t *buf, unsigned len, bool big)
{
	uint16_t b = n->tx_free[--n->ntx_free];
	struct virtq_buf vb = {(uint64_t)(big ? buf : tx_pool[b]), VNET_HDR_LEN + len, false};
	int head = virtq_add(n->tx, &vb, 1);
	n->tx_buf_of[head] = b;
	n->tx_big_of[head] = big ? (uint8_t)(n->big_free[--n->nbig_free] + 1) : 0;
	n->tx_pkts++;
	/* Not one kick per frame: EVENT_IDX makes most of these free, and the rest are few. */
	if (++n->tx_unkicked >= n->kick_batch)
		vnet_tx_flush(n);
}

void vnet_tx_send(struct vnet *n, unsigned len)
{
	if (n->tx_hdr_dirty) /* a header left by vnet_tx_send_hdr: plain frames have none */
		memset(tx_pool[n->tx_free[n->ntx_free - 1]], 0, VNET_HDR_LEN);
	tx_post(n, 0, len, false);
}

void vnet_tx_send_hdr(struct vnet *n, unsigned len, const uint8_t *hdr, bool big)
{
	uint8_t *buf =
	    big ? tx_big_pool[n->big_free[n->nbig_free - 1]] : tx_pool[n->tx_free[n->ntx_free - 1]];
	memcpy(buf, hdr, VNET_HDR_LEN);
	n->tx_hdr_dirty |= !big;
	tx_post(n, buf, len, big);
}

void vnet_tx_flush(struct vnet *n)
{
	n->tx_unkicked = 0;
	virtq_kick(n->tx, false);
}

static bool tx_room(const struct vnet *n, unsigned want, unsigned want_big)
{
	return n->ntx_free >= want && n->nbig_free >= want_big;
}

static const char *tx_wait(struct vnet *n, unsigned want, unsigned want_big, unsigned timeout_ms)
{
	if (want > n->ntx)
		return "virtio-net tx queue too small for this datagram";
	vnet_tx_reclaim(n);
	if (tx_room(n, want, want_big))
		return n->err;
	vnet_tx_flush(n);
	uint64_t t0 = rdtsc(), last = t0, limit = virtio_ms_to_cycles(timeout_ms);
	uint64_t check = virtio_ms_to_cycles(STATUS_CHECK_MS);
	const char *err = 0;
	while (!tx_room(n, want, want_big) && !n->err) {
		if (n->tx_halt && n->tx->used->idx == n->tx->last_used) {
			/* Wake when half of what is in flight has been sent. */
			uint16_t inflight = (uint16_t)(n->ntx - n->ntx_free);
			virtq_arm(n->tx, (uint16_t)(n->tx->last_used + inflight / 2));
			if (n->tx->used->idx == n->tx->last_used &&
			    (err = virtq_sleep(n->tx, 1, timeout_ms)))
				break;
		}
		cpu_relax();
		if (n->rx_idle_fn && !n->in_rx)
			vnet_rx_poll(n, n->rx_idle_fn, RX_IDLE_BUDGET);
		vnet_tx_reclaim(n);
		uint64_t now = rdtsc();
		if (now - last > check) { /* a status read is an exit: rarely */
			last = now;
			if (virtio_status(n->dev) & VIRTIO_STATUS_DEVICE_NEEDS_RESET) {
				err = "virtio-net needs reset";
				break;
			}
		}
		if (now - t0 > limit) {
			err = "virtio-net tx stalled";
			break;
		}
	}
	n->tx_wait_cycles += rdtsc() - t0;
	return err ? err : n->err;
}

const char *vnet_tx_wait(struct vnet *n, unsigned want, unsigned timeout_ms)
{
	return tx_wait(n, want, 0, timeout_ms);
}

const char *vnet_tx_wait_big(struct vnet *n, unsigned timeout_ms)
{
	return tx_wait(n, 1, 1, timeout_ms);
}

const char *vnet_tx_drain(struct vnet *n, unsigned timeout_ms)
{
	return tx_wait(n, n->ntx, VNET_BIG_BUFS, timeout_ms);
}

const char *vnet_rx_sleep(struct vnet *n, unsigned batch, unsigned timeout_ms)
{
	struct virtq *vq = n->rx;
	if (!batch)
		batch = 1;
	if (batch > vq->size / 2u)
		batch = vq->size / 2u;
	/* One interrupt once `batch` buffers are used: a wake-up (tens of microseconds on some
	 * hosts) per batch, not per frame. */
	virtq_arm(vq, (uint16_t)(vq->last_used + batch - 1));
	const char *err = virtq_sleep(vq, (uint16_t)batch, timeout_ms);
	return err == virtq_timed_out ? 0 : err; /* a quiet link is not an error */
}

/* One whole received buffer (header and frame) to fn. */
static void rx_deliver(struct vnet *n, vnet_rx_fn fn, const uint8_t *buf, unsigned len)
{
	if (len < VNET_HDR_LEN + 14) {
		n->rx_drops++;
		return;
	}
	n->rx_pkts++;
	bool nested = n->in_rx;
	n->in_rx = true;
	n->rx_csum_ok = n->rx_csum && buf[HDR_FLAGS] & (HDR_F_NEEDS_CSUM | HDR_F_DATA_VALID);
	fn(buf + VNET_HDR_LEN, len - VNET_HDR_LEN);
	n->rx_csum_ok = false;
	n->in_rx = nested;
}

unsigned vnet_rx_poll(struct vnet *n, vnet_rx_fn fn, unsigned budget)
{
	unsigned done = 0;
	uint16_t id;
	uint32_t len;
	const char *err;
	while (done < budget && virtq_get(n->rx, &id, &len, &err)) {
		if (err) {
			n->err = n->err ? n->err : err;
			break;
		}
		uint16_t b = n->rx_buf_of[id];
		n->rx_refill[n->nrefill++] = b;
		done++;
		if (n->rx_skip) { /* the tail of a merged packet we dropped */
			n->rx_skip--;
			continue;
		}
		const uint8_t *buf = rx_pool[b];
		if (n->rx_asm_left) { /* the next piece of a merged frame */
			if (len > VNET_BUF_LEN || n->rx_asm_len + len > RX_ASM_LEN) {
				n->rx_skip = n->rx_asm_left - 1u; /* the frame is lost */
				n->rx_asm_left = 0;
				n->rx_drops++;
				continue;
			}
			memcpy(rx_asm + n->rx_asm_len, buf, len);
			n->rx_asm_len += len;
			if (--n->rx_asm_left)
				continue;
			n->rx_large++;
			rx_deliver(n, fn, rx_asm, n->rx_asm_len);
			continue;
		}
		uint16_t nbuf = (uint16_t)(buf[HDR_NUM_BUFFERS] | buf[HDR_NUM_BUFFERS + 1] << 8);
		if (n->mrg_rxbuf && nbuf > 1) {
			/* Without GUEST_TSO no frame needs more than one 2 KiB buffer: drop any
			 * that do; with it, gather them. */
			if (!n->rx_tso4 || len < VNET_HDR_LEN || len > VNET_BUF_LEN) {
				n->rx_skip = nbuf - 1u;
				n->rx_drops++;
				continue;
			}
			memcpy(rx_asm, buf, len);
			n->rx_asm_len = len;
			n->rx_asm_left = nbuf - 1u;
			continue;
		}
		if (len > VNET_BUF_LEN) { /* more than we posted */
			n->rx_drops++;
			continue;
		}
		rx_deliver(n, fn, buf, len);
	}
	if (n->nrefill) {
		for (unsigned i = 0; i < n->nrefill; i++)
			rx_post(n, n->rx_refill[i]);
		n->nrefill = 0;
		virtq_kick(n->rx, false);
	}
	return done;
}
