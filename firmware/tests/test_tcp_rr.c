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
		if ((err = net_tcp_transact(id, req, resp, (unsigned)size, RR_TIMEOUT_MS)))
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
