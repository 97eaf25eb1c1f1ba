/*
 * udp_rr: one request of net.size bytes at a time to the peer's echo service; latency per
 * transaction from the TSC into the histogram of net_lat.c.
 */
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define RR_TIMEOUT_MS 1000
#define MAX_LOST      10
#define SEQ_LEN	      8

static uint8_t req[UDP_MAX_PAYLOAD] __attribute__((section(".noinit")));

static struct {
	uint64_t seq;
	unsigned size;
	bool got;
} rr;

static void reply(const struct udp_msg *m)
{
	/* Only an exact copy of the request in flight (its sequence number first) counts. */
	if (m->src_ip != netif.peer || m->sport != netif.peer_port || m->len != rr.size ||
	    m->len < SEQ_LEN || memcmp(m->data, req, rr.size))
		return;
	rr.got = true;
}

const char *net_udp_rr(void)
{
	uint64_t secs = net_arg("net.secs", 2), size = net_arg("net.size", 64);
	if (size < SEQ_LEN || size > UDP_MAX_PAYLOAD)
		return "net.size must be 8..65507";
	uint8_t mac[6];
	const char *err = net_peer_mac(mac);
	if (err)
		return err;
	rr.size = (unsigned)size;
	for (unsigned i = 0; i < size; i++)
		req[i] = (uint8_t)i;
	netif.udp_rx = reply;
	net_lat_reset();
	uint64_t window = net_secs_cycles(secs), timeout = virtio_ms_to_cycles(RR_TIMEOUT_MS);
	uint64_t t0 = rdtsc(), trans = 0, lost = 0, sum_ns = 0, max_ns = 0;
	while (rdtsc() - t0 < window) {
		rr.seq++;
		memcpy(req, &rr.seq, SEQ_LEN);
		rr.got = false;
		uint64_t t = rdtsc();
		if ((err = udp_send(mac, netif.peer, netif.peer_port, req, rr.size, -1)))
			return err;
		vnet_tx_flush(&netif.nic);
		while (!rr.got && rdtsc() - t < timeout && !netif.nic.err)
			net_poll(32);
		if (netif.nic.err)
			return netif.nic.err;
		if (!rr.got) {
			if (++lost > MAX_LOST)
				return "udp_rr: too many requests without a reply";
			continue;
		}
		uint64_t ns = virtio_cycles_to_us((rdtsc() - t) * 1000);
		net_lat_add(ns);
		sum_ns += ns;
		max_ns = ns > max_ns ? ns : max_ns;
		trans++;
	}
	netif.udp_rx = 0;
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	struct net_lat_text l;
	net_lat_text(&l, trans, us, sum_ns, max_ns);
	kprintf("probe: udp_rr size=%lu trans=%lu secs=%s tps=%s lat_us_p50=%s p90=%s p99=%s "
		"avg=%s max=%s lost=%lu\n",
		size, trans, l.secs, l.tps, l.p50, l.p90, l.p99, l.avg, l.max, lost);
	return trans ? 0 : "udp_rr: no transaction completed";
}
