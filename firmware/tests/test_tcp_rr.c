/*
 * test=tcp_rr: one TCP connection to net.peer:net.peer_port (an echo service such as
 * `tcpperf rr-server`), then request/response of net.size bytes (default 64) for net.secs
 * seconds (default 2): a request is sent whole, and the next one goes once its echo is all in.
 * Each request's bytes differ (the tcp_stream pattern at the transaction's offset), so a reply
 * must be the echo of this request to count; latency per transaction from the TSC into
 * net_lat.c's histogram.
 */
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define CONNECT_MS    5000
#define RR_TIMEOUT_MS 5000
#define CLOSE_MS      2000
#define RR_MAX	      TCP_BUF_SIZE

static uint8_t req[RR_MAX], resp[RR_MAX];

static bool connected(int id)
{
	return tcp_state(&net_tcp, id) != TCP_SYN_SENT;
}

static bool peer_closed(int id)
{
	enum tcp_state s = tcp_state(&net_tcp, id);
	return s == TCP_TIME_WAIT || s == TCP_CLOSED;
}

/* One transaction: the whole request out, its whole echo in; an error or 0. */
static const char *transact(int id, unsigned size)
{
	uint64_t t = rdtsc(), timeout = virtio_ms_to_cycles(RR_TIMEOUT_MS);
	unsigned sent = 0, got = 0;
	while (got < size) {
		if (sent < size) {
			int k = tcp_send(&net_tcp, id, req + sent, size - sent);
			if (k < 0)
				return "tcp_rr: the connection is gone";
			sent += (unsigned)k;
		}
		net_tcp_poll();
		int n = tcp_recv(&net_tcp, id, resp + got, size - got);
		if (n < 0)
			return "tcp_rr: the connection is gone";
		got += (unsigned)n;
		if (netif.nic.err)
			return netif.nic.err;
		if (rdtsc() - t > timeout)
			return "tcp_rr: no reply";
	}
	return 0;
}

const char *net_tcp_rr(void)
{
	uint64_t secs = net_arg("net.secs", 2), size = net_arg("net.size", 64);
	if (size < 1 || size > RR_MAX)
		return "net.size must be 1..65536";
	net_tcp_open();
	int id;
	const char *err = net_tcp_connect(netif.peer, netif.peer_port, &id);
	if (err)
		return err;
	if (!net_tcp_wait(connected, id, CONNECT_MS) || tcp_state(&net_tcp, id) != TCP_ESTABLISHED)
		return "tcp_rr: no connection";
	struct tcp_conn *c = &net_tcp.conns[id];
	kprintf("probe: tcp_rr connected mss=%u wscale=%u/%u\n", c->mss, c->snd_wscale,
		c->rcv_wscale);
	net_lat_reset();
	uint64_t window = net_secs_cycles(secs);
	uint64_t t0 = rdtsc(), trans = 0, bad = 0, sum_ns = 0, max_ns = 0;
	while (rdtsc() - t0 < window) {
		for (unsigned i = 0; i < size; i++)
			req[i] = net_tcp_pattern(trans * size + i);
		uint64_t t = rdtsc();
		if ((err = transact(id, (unsigned)size)))
			break;
		uint64_t ns = virtio_cycles_to_us((rdtsc() - t) * 1000);
		if (memcmp(req, resp, size)) {
			bad++; /* not the echo of this request: not a transaction */
			break;
		}
		net_lat_add(ns);
		sum_ns += ns;
		max_ns = ns > max_ns ? ns : max_ns;
		trans++;
	}
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	bool closed = false;
	if (!err) {
		tcp_close(&net_tcp, id);
		closed = net_tcp_wait(peer_closed, id, CLOSE_MS);
	}
	struct net_lat_text l;
	net_lat_text(&l, trans, us, sum_ns, max_ns);
	kprintf("probe: tcp_rr size=%lu trans=%lu secs=%s tps=%s lat_us_p50=%s p90=%s p99=%s "
		"avg=%s max=%s bad=%lu retransmits=%lu srtt_us=%u\n",
		size, trans, l.secs, l.tps, l.p50, l.p90, l.p99, l.avg, l.max, bad, c->retransmits,
		c->srtt);
	if (err)
		return err;
	if (bad)
		return "tcp_rr: a reply that is not the echo of its request";
	if (!trans)
		return "tcp_rr: no transaction completed";
	if (!closed)
		return "tcp_rr: the peer did not close";
	tcp_release(&net_tcp, id);
	return 0;
}
