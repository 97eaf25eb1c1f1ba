/*
 * Reliable bulk transfer over UDP (test=bulk_send|bulk_recv), the same protocol as
 * examples/netbench/udpperf.c's bulk-send / bulk-recv:
 *   data  "BULK" u32 seq, then BULK_PAYLOAD bytes (xorshift32 seeded from seq)
 *   ack   "BACK" u32 next: cumulative, every BULK_ACK_EVERY accepted datagrams and for
 *         every datagram the receiver drops (out of order, duplicate or corrupt)
 *   end   "BEND" u32 total, u32 crc32 of all payload; answered with an ack
 * Go-back-N: the sender keeps BULK_WINDOW datagrams past the last ack in flight and goes back
 * to the acked position after BULK_RTO_MS without progress (or at once on a duplicate ack,
 * once per acked position). All words are little endian. net.bulk_mib=N (default 64).
 */
#include "crc32.h"
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define BULK_MAGIC	 0x4b4c5542u /* "BULK" */
#define BACK_MAGIC	 0x4b434142u /* "BACK" */
#define BEND_MAGIC	 0x444e4542u /* "BEND" */
#define BULK_HDR	 8
#define BULK_PAYLOAD	 1024
#define BULK_WINDOW	 128
#define BULK_ACK_EVERY	 16
#define BULK_RTO_MS	 20
#define BULK_STALL_MS	 10000 /* no progress at all: give up */
#define BULK_END_TRIES	 50
#define BULK_END_WAIT_MS 100
#define BULK_LINGER_MS	 300 /* the receiver answers repeated ends this long */
#define RX_BATCH	 64

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The payload of datagram seq: xorshift32 words from seq * 2654435761 + 1. */
static void bulk_fill(uint8_t *p, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 1;
	if (!x)
		x = 1;
	for (unsigned i = 0; i < BULK_PAYLOAD; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		put32(p + i, x);
	}
}

static uint32_t bulk_total(void)
{
	return (uint32_t)net_arg("net.bulk_mib", 64) * (1024 * 1024 / BULK_PAYLOAD);
}

static void report_rate(char t[32], char mbps[32], uint64_t cycles, uint64_t bytes)
{
	uint64_t us = virtio_cycles_to_us(cycles);
	net_fmt_secs(t, us);
	net_fmt_ratio(mbps, bytes * 8, us);
}

/* The sender (guest to host). */
static struct {
	uint32_t acked;
	bool progress, dup;
} tx;

static void sender_rx(const struct udp_msg *m)
{
	if (m->src_ip != netif.peer || m->sport != netif.peer_port || m->len < 8 ||
	    get32(m->data) != BACK_MAGIC)
		return;
	uint32_t next = get32(m->data + 4);
	if (next > tx.acked) {
		tx.acked = next;
		tx.progress = true;
	} else if (next == tx.acked) {
		tx.dup = true;
	}
}

static uint8_t dgram[BULK_HDR + BULK_PAYLOAD];

const char *net_bulk_send(void)
{
	uint32_t total = bulk_total(), mib = total / (1024 * 1024 / BULK_PAYLOAD);
	if (!total)
		return "bad net.bulk_mib";
	uint8_t mac[6];
	const char *err = net_peer_mac(mac);
	if (err)
		return err;
	netif.udp_rx = sender_rx;
	uint64_t rto = virtio_ms_to_cycles(BULK_RTO_MS), stall = virtio_ms_to_cycles(BULK_STALL_MS);
	uint64_t retransmits = 0, t0 = rdtsc(), last_progress = t0, last_rewind = t0;
	uint32_t next = 0, high = 0, crc = 0, rewound_at = UINT32_MAX;
	kprintf("probe: bulk_send start mib=%u datagrams=%u\n", mib, total);
	while (tx.acked < total) {
		for (unsigned burst = 0;
		     next < total && next < tx.acked + BULK_WINDOW && burst < 32; burst++, next++) {
			put32(dgram, BULK_MAGIC);
			put32(dgram + 4, next);
			bulk_fill(dgram + BULK_HDR, next);
			if (next == high) {
				crc = crc32_update(crc, dgram + BULK_HDR, BULK_PAYLOAD);
				high++;
			} else {
				retransmits++;
			}
			if ((err = udp_send(mac, netif.peer, netif.peer_port, dgram, sizeof(dgram),
					    -1)))
				return err;
		}
		vnet_tx_flush(&netif.nic);
		net_poll(RX_BATCH);
		if (netif.nic.err)
			return netif.nic.err;
		uint64_t now = rdtsc();
		if (tx.progress) {
			tx.progress = false;
			last_progress = last_rewind = now;
			if (next < tx.acked)
				next = tx.acked;
		}
		if (now - last_progress > stall)
			return "bulk_send: no ack progress";
		/* Go back on a timeout, or on a duplicate ack once per acked position. */
		if (next > tx.acked &&
		    (now - last_rewind > rto || (tx.dup && rewound_at != tx.acked))) {
			next = tx.acked;
			rewound_at = tx.acked;
			last_rewind = now;
		}
		tx.dup = false;
	}
	uint64_t cycles = rdtsc() - t0;
	uint8_t end[12];
	put32(end, BEND_MAGIC);
	put32(end + 4, total);
	put32(end + 8, crc);
	/* Consume acks still in flight first; the end is sent at least three times. */
	while (net_poll(RX_BATCH))
		;
	bool done = false;
	for (unsigned i = 0; i < BULK_END_TRIES && (!done || i < 3); i++) {
		tx.progress = false;
		tx.dup = false;
		if ((err = udp_send(mac, netif.peer, netif.peer_port, end, sizeof(end), -1)))
			return err;
		vnet_tx_flush(&netif.nic);
		uint64_t t = rdtsc(), wait = virtio_ms_to_cycles(BULK_END_WAIT_MS);
		while (!tx.dup && rdtsc() - t < wait && !netif.nic.err)
			net_poll(RX_BATCH);
		done |= tx.dup; /* acked == total: a BACK with next == total */
	}
	netif.udp_rx = 0;
	char t[32], mbps[32];
	report_rate(t, mbps, cycles, (uint64_t)total * BULK_PAYLOAD);
	kprintf("probe: bulk_send mib=%u datagrams=%u retransmits=%lu secs=%s mbps=%s crc32=%08x\n",
		mib, total, retransmits, t, mbps, crc);
	return done ? 0 : "bulk_send: the receiver did not answer the end";
}

/* The receiver (host to guest). */
static struct {
	uint32_t total, next, crc, end_crc;
	uint64_t out_of_order, corrupt, t_first, t_last, t_end;
	bool ended, end_ok;
} rx;

static uint8_t expect[BULK_PAYLOAD];

static void ack(const struct udp_msg *m)
{
	uint8_t a[8];
	put32(a, BACK_MAGIC);
	put32(a + 4, rx.next);
	udp_send(m->src_mac, m->src_ip, m->sport, a, sizeof(a), -1);
}

static void receiver_rx(const struct udp_msg *m)
{
	if (m->len < 4)
		return;
	uint32_t magic = get32(m->data);
	if (magic == BEND_MAGIC && m->len >= 12) {
		if (!rx.ended) {
			rx.ended = true;
			rx.end_crc = get32(m->data + 8);
			rx.end_ok = get32(m->data + 4) == rx.total && rx.next == rx.total;
		}
		rx.t_end = rdtsc();
		ack(m);
		return;
	}
	if (magic != BULK_MAGIC)
		return;
	uint32_t seq = m->len >= BULK_HDR ? get32(m->data + 4) : UINT32_MAX;
	if (seq != rx.next || rx.next >= rx.total) {
		rx.out_of_order++;
		ack(m);
		return;
	}
	bulk_fill(expect, seq);
	if (m->len != BULK_HDR + BULK_PAYLOAD || memcmp(m->data + BULK_HDR, expect, BULK_PAYLOAD)) {
		rx.corrupt++;
		ack(m);
		return;
	}
	rx.crc = crc32_update(rx.crc, m->data + BULK_HDR, BULK_PAYLOAD);
	uint64_t now = rdtsc();
	if (!rx.next)
		rx.t_first = now;
	rx.t_last = now;
	rx.next++;
	if (rx.next % BULK_ACK_EVERY == 0 || rx.next == rx.total)
		ack(m);
}

const char *net_bulk_recv(void)
{
	rx.total = bulk_total();
	uint32_t mib = rx.total / (1024 * 1024 / BULK_PAYLOAD);
	if (!rx.total)
		return "bad net.bulk_mib";
	uint64_t wait = net_secs_cycles(net_arg("net.wait", 60));
	uint64_t stall = virtio_ms_to_cycles(BULK_STALL_MS),
		 linger = virtio_ms_to_cycles(BULK_LINGER_MS);
	netif.udp_rx = receiver_rx;
	kprintf("probe: bulk_recv ready port=%u mib=%u datagrams=%u\n", netif.port, mib, rx.total);
	uint64_t t0 = rdtsc();
	const char *err = 0;
	for (;;) {
		net_poll(RX_BATCH);
		vnet_tx_flush(&netif.nic);
		if (netif.nic.err)
			return netif.nic.err;
		uint64_t now = rdtsc();
		if (rx.ended && now - rx.t_end > linger)
			break;
		if (!rx.next && !rx.ended && now - t0 > wait) {
			err = "bulk_recv: no datagram arrived";
			break;
		}
		if (rx.next && !rx.ended && now - rx.t_last > stall) {
			err = "bulk_recv: the transfer stalled";
			break;
		}
	}
	netif.udp_rx = 0;
	bool ok =
	    rx.ended && rx.end_ok && rx.end_crc == rx.crc && !rx.corrupt && rx.next == rx.total;
	char t[32], mbps[32];
	report_rate(t, mbps, rx.t_last - rx.t_first, (uint64_t)rx.next * BULK_PAYLOAD);
	kprintf("probe: bulk_recv mib=%u datagrams=%u out_of_order=%lu corrupt=%lu secs=%s "
		"mbps=%s crc32=%08x %s\n",
		mib, rx.next, rx.out_of_order, rx.corrupt, t, mbps, rx.crc, ok ? "ok" : "bad");
	if (err)
		return err;
	if (rx.corrupt)
		return "bulk_recv: corrupt datagrams";
	if (!ok)
		return "bulk_recv: the sender's end does not match (count or crc32)";
	return 0;
}
