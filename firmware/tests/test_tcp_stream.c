/*
 * test=tcp_stream: net.tcp_mib MiB (default 16) of a known pattern over TCP to
 * net.peer:net.peer_port, then a close both ways. Byte i of the stream is
 * (i * 131 + (i >> 9)) mod 256 (net_tcp_pattern; tests/unit/test_tcp.c's pattern), for the host to
 * check.
 */
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define CONNECT_MS 5000
#define STALL_MS   10000
#define CLOSE_MS   2000
#define CHUNK	   65536 /* up to the whole ring: TSO segments as large as the window allows */

static uint8_t chunk[CHUNK];

static void fill(uint8_t *p, uint64_t from, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		p[i] = net_tcp_pattern(from + i);
	}
}

bool net_tcp_wait(bool (*done)(int), int id, unsigned ms)
{
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(ms);
	while (!done(id)) {
		if (rdtsc() - t0 > limit || netif.nic.err)
			return false;
		net_tcp_poll();
	}
	return true;
}

static bool connected(int id)
{
	return tcp_state(&net_tcp, id) != TCP_SYN_SENT;
}

static bool all_acked(int id)
{
	return tcp_send_done(&net_tcp, id) || tcp_state(&net_tcp, id) == TCP_CLOSED;
}

static bool peer_closed(int id)
{
	enum tcp_state s = tcp_state(&net_tcp, id);
	return s == TCP_TIME_WAIT || s == TCP_CLOSED;
}

const char *net_tcp_stream(void)
{
	uint64_t total = net_arg("net.tcp_mib", 16) << 20;
	net_tcp_open();
	int id;
	const char *err = net_tcp_connect(netif.peer, netif.peer_port, &id);
	if (err)
		return err;
	if (!net_tcp_wait(connected, id, CONNECT_MS) || tcp_state(&net_tcp, id) != TCP_ESTABLISHED)
		return "tcp_stream: no connection";
	struct tcp_conn *c = &net_tcp.conns[id];
	kprintf("probe: tcp_stream connected mss=%u wscale=%u/%u bytes=%lu\n", c->mss,
		c->snd_wscale, c->rcv_wscale, total);
	uint64_t sent = 0, t0 = rdtsc(), last = t0, stall = virtio_ms_to_cycles(STALL_MS);
	uint32_t una = c->snd_una;
	while (sent < total) {
		uint64_t n = total - sent;
		unsigned space = tcp_send_space(&net_tcp, id);
		if (n > space)
			n = space;
		if (n > CHUNK)
			n = CHUNK;
		if (n) {
			fill(chunk, sent, (unsigned)n);
			int k = tcp_send(&net_tcp, id, chunk, (unsigned)n);
			if (k < 0)
				return "tcp_stream: the connection is gone";
			sent += (unsigned)k;
		}
		net_tcp_poll();
		uint64_t now = rdtsc();
		if (c->snd_una != una) {
			una = c->snd_una;
			last = now;
		} else if (now - last > stall) {
			return "tcp_stream: no progress";
		}
		if (netif.nic.err)
			return netif.nic.err;
	}
	tcp_close(&net_tcp, id);
	bool acked = net_tcp_wait(all_acked, id, STALL_MS);
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	bool closed = net_tcp_wait(peer_closed, id, CLOSE_MS);
	char secs[32], mbps[32];
	net_fmt_ratio(secs, us, 1000000);
	net_fmt_ratio(mbps, total * 8, us);
	kprintf("probe: tcp_stream bytes=%lu secs=%s mbps=%s retransmits=%lu fast_retransmits=%lu "
		"srtt_us=%u rto_us=%u state=%u err=%u reentry_drops=%lu tso_frames=%lu\n",
		total, secs, mbps, c->retransmits, c->fast_retransmits, c->srtt, c->rto, c->state,
		c->err, net_tcp_reentry_drops, net_tcp_tso_frames);
	if (!acked || c->err)
		return "tcp_stream: not all data acknowledged";
	if (!closed)
		return "tcp_stream: the peer did not close";
	tcp_release(&net_tcp, id);
	return 0;
}
