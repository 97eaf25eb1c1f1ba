/*
 * test=tcp_crr: netperf's TCP_CRR against net.peer:net.peer_port (an echo service that takes
 * one request per connection, such as `tcpperf crr-server`): for net.secs seconds (default 2),
 * connect (a new ephemeral port each time), send one request of net.size bytes (default 64),
 * receive its echo whole, close, and start the next. A transaction's latency runs from the
 * connect to the last byte of the echo, as netperf's does; the close goes on while the next
 * connection starts (the program releases the connection once its FIN is queued: tcp.c ends
 * it, and keeps its TIME_WAIT in a table once the slot is needed). Each request is the
 * tcp_stream pattern at the transaction's offset, so only its own echo counts. At the end it
 * waits for every close to finish: each connection must have reached TIME_WAIT (our FIN
 * acknowledged and the peer's received: time_waits= equals trans=), none reset or timed out.
 */
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define CONNECT_MS    5000
#define RR_TIMEOUT_MS 5000
#define CLOSE_MS      5000
#define CRR_MAX	      TCP_BUF_SIZE

static uint8_t req[CRR_MAX], resp[CRR_MAX];

static bool connected(int id)
{
	return tcp_state(&net_tcp, id) != TCP_SYN_SENT;
}

/* Every slot closed: the closes the program left to the stack are done. */
static bool all_closed(void)
{
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		if (tcp_state(&net_tcp, i) != TCP_CLOSED)
			return false;
	return true;
}

/* A connection once a slot is free (the earlier closes finish as the stack runs). */
static const char *connect_one(int *id)
{
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(CLOSE_MS);
	for (;;) {
		const char *err = net_tcp_connect(netif.peer, netif.peer_port, id);
		if (!err)
			return 0;
		if (rdtsc() - t0 > limit)
			return "tcp_crr: no free connection (the earlier ones do not close)";
		if (netif.nic.err)
			return netif.nic.err;
		net_tcp_poll();
	}
}

/* One transaction on a new connection: connect, the request out, its echo in, close. */
static const char *transact(unsigned size, uint64_t *bad)
{
	int id;
	const char *err = connect_one(&id);
	if (err)
		return err;
	if (!net_tcp_wait(connected, id, CONNECT_MS) ||
	    tcp_state(&net_tcp, id) != TCP_ESTABLISHED) {
		tcp_release(&net_tcp, id);
		return "tcp_crr: no connection";
	}
	if ((err = net_tcp_transact(id, req, resp, size, RR_TIMEOUT_MS)))
		return err;
	if (memcmp(req, resp, size))
		(*bad)++;
	tcp_close(&net_tcp, id);
	tcp_release(&net_tcp, id);
	return 0;
}

const char *net_tcp_crr(void)
{
	uint64_t secs = net_arg("net.secs", 2), size = net_arg("net.size", 64);
	if (size < 1 || size > CRR_MAX)
		return "net.size must be 1..65536";
	net_tcp_open();
	kprintf("probe: tcp_crr start size=%lu peer_port=%u\n", size, netif.peer_port);
	net_lat_reset();
	uint64_t window = net_secs_cycles(secs);
	uint64_t t0 = rdtsc(), trans = 0, bad = 0, sum_ns = 0, max_ns = 0;
	uint16_t first_port = net_tcp.next_port;
	const char *err = 0;
	while (rdtsc() - t0 < window) {
		for (unsigned i = 0; i < size; i++)
			req[i] = net_tcp_pattern(trans * size + i);
		uint64_t t = rdtsc();
		if ((err = transact((unsigned)size, &bad)))
			break;
		uint64_t ns = virtio_cycles_to_us((rdtsc() - t) * 1000);
		if (bad)
			break; /* not the echo of this request: not a transaction */
		net_lat_add(ns);
		sum_ns += ns;
		max_ns = ns > max_ns ? ns : max_ns;
		trans++;
	}
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	/* the last closes: every connection through TIME_WAIT */
	uint64_t c0 = rdtsc(), climit = virtio_ms_to_cycles(CLOSE_MS);
	while (!all_closed() && rdtsc() - c0 < climit && !netif.nic.err)
		net_tcp_poll();
	bool closed = all_closed();
	struct net_lat_text l;
	net_lat_text(&l, trans, us, sum_ns, max_ns);
	kprintf("probe: tcp_crr size=%lu trans=%lu secs=%s tps=%s lat_us_p50=%s p90=%s p99=%s "
		"avg=%s max=%s bad=%lu time_waits=%lu tw_recycled=%lu resets_sent=%lu "
		"first_port=%u next_port=%u\n",
		size, trans, l.secs, l.tps, l.p50, l.p90, l.p99, l.avg, l.max, bad,
		net_tcp.time_waits, net_tcp.tw_recycled, net_tcp.resets_sent, first_port,
		net_tcp.next_port);
	if (err)
		return err;
	if (bad)
		return "tcp_crr: a reply that is not the echo of its request";
	if (!trans)
		return "tcp_crr: no transaction completed";
	if (!closed)
		return "tcp_crr: connections left open";
	if (net_tcp.time_waits != trans + bad)
		return "tcp_crr: a connection did not close cleanly (time_waits != trans)";
	return 0;
}
