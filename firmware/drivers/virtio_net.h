/*
 * A polling virtio-net driver (virtio 1.2, 5.1): one RX queue (0) and one TX queue (1), no
 * control queue. Transmit offloads when the device offers them and net.offload is not off:
 * CSUM (a partial checksum the device finishes) and HOST_TSO4 (frames up to 64 KiB from a
 * few large buffers, cut by the device). On receive only with net.rx_offload=on: GUEST_CSUM
 * and GUEST_TSO4 (over MRG_RXBUF: frames of up to 64 KiB gathered from 2 KiB buffers, their
 * checksums the host's word). Every exit is dear (see PLATFORM.md),
 * so nothing here waits for an interrupt: used rings are polled, TX kicks are batched and RX is
 * refilled in batches, each kick subject to EVENT_IDX.
 */
#ifndef VIRTIO_NET_H
#define VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio.h"

#define VIRTIO_ID_NET 1

/* Feature bits (5.1.3). */
#define VIRTIO_NET_F_CSUM	0
#define VIRTIO_NET_F_GUEST_CSUM 1
#define VIRTIO_NET_F_GUEST_TSO4 7
#define VIRTIO_NET_F_HOST_TSO4	11
#define VIRTIO_NET_F_MAC	5
#define VIRTIO_NET_F_MRG_RXBUF	15
#define VIRTIO_NET_F_STATUS	16
#define VIRTIO_NET_S_LINK_UP	1

/* struct virtio_net_hdr_v1 (5.1.6): always 12 bytes with VERSION_1. */
#define VNET_HDR_LEN   12
#define VNET_BUF_LEN   2048 /* header + a 1514-byte frame, rounded up */
#define VNET_MAX_FRAME (VNET_BUF_LEN - VNET_HDR_LEN)
/* TSO buffers: a whole IPv4 datagram of 64 KiB behind Ethernet and the header, a few of
 * them (a TSO frame also holds one small buffer, so descriptors never run out). */
#define VNET_BIG_BUFS	   8
#define VNET_BIG_BUF_LEN   (VNET_HDR_LEN + 14 + 65535)
#define VNET_BIG_MAX_FRAME (VNET_BIG_BUF_LEN - VNET_HDR_LEN)

struct vnet {
	struct virtio_dev *dev;
	struct virtq *rx, *tx;
	uint8_t mac[6];
	bool link_up;
	bool mrg_rxbuf;
	bool csum, tso4;       /* negotiated: CSUM, and HOST_TSO4 with it */
	bool rx_csum, rx_tso4; /* negotiated: GUEST_CSUM, and GUEST_TSO4 with it */
	/* The frame handed to vnet_rx_fn now: the device vouched for its checksums (a partial one,
	 * NEEDS_CSUM, or DATA_VALID). */
	bool rx_csum_ok;
	/* A merged frame being gathered (rx_tso4): bytes so far, buffers still to come. */
	unsigned rx_asm_len, rx_asm_left;
	uint64_t rx_large; /* frames that took more than one buffer */
	bool tx_halt;	   /* net.txwait=halt: sleep on a TX interrupt instead of spinning */
	bool rx_halt;	 /* net.rxwait=halt: a receiver with nothing to do sleeps (vnet_rx_sleep) */
	const char *err; /* first device error seen on a used ring */
	/* TX buffers: a stack of free ones, and which buffer each in-flight head carries. */
	uint16_t tx_free[VIRTQ_MAX_SIZE];
	unsigned ntx_free, ntx;
	uint16_t tx_buf_of[VIRTQ_MAX_SIZE];
	uint8_t tx_big_of[VIRTQ_MAX_SIZE]; /* the TSO buffer a head carries, plus one; 0: none */
	uint8_t big_free[VNET_BIG_BUFS];
	unsigned nbig_free;
	bool tx_hdr_dirty; /* a small buffer's header was written (vnet_tx_send_hdr) */
	unsigned tx_unkicked, kick_batch;
	/* RX buffers: which buffer each posted head carries; used ones wait for the refill. */
	uint16_t rx_buf_of[VIRTQ_MAX_SIZE];
	uint16_t rx_refill[VIRTQ_MAX_SIZE];
	unsigned nrefill, rx_skip;
	/* What vnet_tx_wait feeds received frames to while it waits (not while nested in
	 * vnet_rx_poll): waiting on TX must not starve RX. 0: RX is left alone. */
	void (*rx_idle_fn)(const uint8_t *frame, unsigned len);
	bool in_rx;
	uint64_t tx_pkts, rx_pkts, rx_drops;
	uint64_t tx_wait_cycles; /* spent waiting for TX room: the device was the bottleneck */
};

/* Set up the first virtio-net device (either transport) and fill its RX queue. */
const char *vnet_open(struct vnet *n);
/* Re-read the link state from config space (an exit: not for hot loops). */
bool vnet_read_link(struct vnet *n);
/*
 * TX, zero-copy: vnet_tx_buf() is where the next frame goes (0 if every buffer is in
 * flight even after reclaiming), vnet_tx_send() posts it without a kick; every
 * kick_batch frames, and in vnet_tx_flush(), the device is notified if it asked.
 */
uint8_t *vnet_tx_buf(struct vnet *n);
void vnet_tx_send(struct vnet *n, unsigned len);
/* The same with a virtio-net header (VNET_HDR_LEN bytes), into a small buffer (vnet_tx_buf)
 * or, big, into a TSO buffer (vnet_tx_big_buf: VNET_BIG_MAX_FRAME bytes; 0 if none is free). */
uint8_t *vnet_tx_big_buf(struct vnet *n);
void vnet_tx_send_hdr(struct vnet *n, unsigned len, const uint8_t *hdr, bool big);
void vnet_tx_flush(struct vnet *n);
/* Return completed TX buffers to the pool (polls the used ring: no exit). */
void vnet_tx_reclaim(struct vnet *n);
/* Flush, then spin until `want` TX buffers are free (all of them: vnet_tx_drain). */
const char *vnet_tx_wait(struct vnet *n, unsigned want, unsigned timeout_ms);
const char *vnet_tx_drain(struct vnet *n, unsigned timeout_ms);
/* vnet_tx_wait for one small buffer and one TSO buffer. */
const char *vnet_tx_wait_big(struct vnet *n, unsigned timeout_ms);
/* Hand up to budget received frames (Ethernet, no virtio header) to fn, then refill the RX
 * queue with one kick. Returns how many used buffers were consumed. */
typedef void (*vnet_rx_fn)(const uint8_t *frame, unsigned len);
unsigned vnet_rx_poll(struct vnet *n, vnet_rx_fn fn, unsigned budget);
/* Sleep until `batch` frames have arrived (at most half the ring; an RX interrupt) or
 * timeout_ms pass; an error only for a device that needs reset. */
const char *vnet_rx_sleep(struct vnet *n, unsigned batch, unsigned timeout_ms);

#endif
