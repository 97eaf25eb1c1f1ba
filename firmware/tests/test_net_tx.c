/*
 * The sending programs: udp_stream (each of net.sizes for net.secs, fragmenting above the
 * MTU like netperf UDP_STREAM) and pktgen (minimum-size frames). Both keep the TX ring full
 * and leave kicks to EVENT_IDX and the driver's batching.
 */
#include "boot_info.h"
#include "cmdline.h"
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define DRAIN_MS    2000
#define POLL_EVERY  64 /* messages between RX polls (ARP requests, ring refills) */
#define PKTGEN_DATA 18 /* 14 + 20 + 8 + 18 = a 60-byte frame */
#define MAX_SIZES   32

static const unsigned default_sizes[] = {32,   64,   128,  256,	  512,	 1024,
					 2048, 4096, 8192, 16384, 32768, 65507};

static uint8_t payload[UDP_MAX_PAYLOAD] __attribute__((section(".noinit")));

static unsigned parse_sizes(unsigned *sizes)
{
	const char *v;
	size_t n;
	unsigned count = 0;
	if (!cmdline_get(boot_info.cmdline, "net.sizes", &v, &n)) {
		for (; count < sizeof(default_sizes) / sizeof(default_sizes[0]); count++)
			sizes[count] = default_sizes[count];
		return count;
	}
	for (size_t i = 0; i < n && count < MAX_SIZES;) {
		size_t j = i;
		while (j < n && v[j] != ',')
			j++;
		uint64_t s;
		if (!parse_u64(v + i, j - i, false, &s) || !s || s > UDP_MAX_PAYLOAD)
			return 0;
		sizes[count++] = (unsigned)s;
		i = j + 1;
	}
	return count;
}

struct run {
	uint64_t msgs, frames, kicks, cycles, wait;
};

/* Send `size`-byte datagrams for `window` cycles, then wait for the ring to drain (timed). */
static const char *blast(const uint8_t mac[6], unsigned size, uint64_t window, struct run *r)
{
	struct vnet *n = &netif.nic;
	int64_t sum = csum_partial(payload, size, 0); /* the same payload every time */
	uint64_t frames0 = n->tx_pkts, kicks0 = n->tx->kicks, wait0 = n->tx_wait_cycles;
	uint64_t t0 = rdtsc(), msgs = 0;
	const char *err;
	while (rdtsc() - t0 < window) {
		if ((err = udp_send(mac, netif.peer, netif.peer_port, payload, size, sum)))
			return err;
		if (++msgs % POLL_EVERY == 0)
			net_poll(POLL_EVERY);
	}
	if ((err = vnet_tx_drain(n, DRAIN_MS)))
		return err;
	r->cycles = rdtsc() - t0;
	r->msgs = msgs;
	r->frames = n->tx_pkts - frames0;
	r->kicks = n->tx->kicks - kicks0;
	r->wait = n->tx_wait_cycles - wait0;
	net_poll(POLL_EVERY);
	return 0;
}

const char *net_udp_stream(void)
{
	unsigned sizes[MAX_SIZES], count = parse_sizes(sizes);
	if (!count)
		return "bad net.sizes";
	uint64_t secs = net_arg("net.secs", 2);
	uint8_t mac[6];
	const char *err = net_peer_mac(mac);
	if (err)
		return err;
	for (unsigned i = 0; i < UDP_MAX_PAYLOAD; i++)
		payload[i] = (uint8_t)i;
	for (unsigned i = 0; i < count; i++) {
		struct run r;
		if ((err = blast(mac, sizes[i], net_secs_cycles(secs), &r)))
			return err;
		uint64_t us = virtio_cycles_to_us(r.cycles), bytes = r.msgs * sizes[i];
		char t[32], mbps[32];
		net_fmt_secs(t, us);
		net_fmt_ratio(mbps, bytes * 8, us);
		kprintf("probe: udp_stream size=%u secs=%s msgs=%lu bytes=%lu mbps=%s pps=%lu "
			"frames=%lu kicks=%lu tx_wait_pct=%lu\n",
			sizes[i], t, r.msgs, bytes, mbps, us ? r.msgs * 1000000 / us : 0, r.frames,
			r.kicks, r.cycles ? r.wait * 100 / r.cycles : 0);
	}
	return 0;
}

const char *net_pktgen(void)
{
	uint64_t secs = net_arg("net.secs", 2);
	uint8_t mac[6];
	const char *err = net_peer_mac(mac);
	if (err)
		return err;
	for (unsigned i = 0; i < PKTGEN_DATA; i++)
		payload[i] = (uint8_t)i;
	struct run r;
	if ((err = blast(mac, PKTGEN_DATA, net_secs_cycles(secs), &r)))
		return err;
	uint64_t us = virtio_cycles_to_us(r.cycles);
	char t[32];
	net_fmt_secs(t, us);
	kprintf("probe: pktgen pkts=%lu secs=%s pps=%lu frame=60 kicks=%lu tx_wait_pct=%lu\n",
		r.frames, t, us ? r.frames * 1000000 / us : 0, r.kicks,
		r.cycles ? r.wait * 100 / r.cycles : 0);
	return 0;
}
