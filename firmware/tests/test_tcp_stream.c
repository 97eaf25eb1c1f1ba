/*
 * test=tcp_stream: net.tcp_mib MiB (default 16) of a known pattern over TCP to
 * net.peer:net.peer_port, then a close both ways. Byte i of the stream is
 * (i * 131 + (i >> 9)) mod 256 (net_tcp_pattern; tests/unit/test_tcp.c's pattern), for the host to
 * check.
 *
 * net.write=N (1..65536, default 65536): the application's write size, netperf's -m. Each
 * write hands the TCP layer N bytes in one tcp_send call, once the send ring has room for all
 * of them (a write of more than half the 64 KiB ring goes in pieces as the ring drains, as a
 * blocking send() into a full socket buffer does). The TCP has no Nagle algorithm: a write goes out
 * at once as its own segment while the peer's and the congestion window allow, and only what waits
 * for the window is sent together (as Linux with TCP_NODELAY). `sends=` counts the tcp_send calls,
 * `segs=` the data segments sent (a TSO segment once) and `small_segs=` those shorter than the MSS.
 */
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define CONNECT_MS 5000
#define STALL_MS   10000
#define CLOSE_MS   2000
#define CHUNK	   65536 /* the largest write: the whole ring */

static uint8_t chunk[CHUNK];

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
	uint64_t wsize = net_arg("net.write", CHUNK);
	if (wsize < 1 || wsize > CHUNK)
		return "net.write must be 1..65536";
	net_tcp_open();
	int id;
	const char *err = net_tcp_connect(netif.peer, netif.peer_port, &id);
	if (err)
		return err;
	if (!net_tcp_wait(connected, id, CONNECT_MS) || tcp_state(&net_tcp, id) != TCP_ESTABLISHED)
		return "tcp_stream: no connection";
	struct tcp_conn *c = &net_tcp.conns[id];
	kprintf("probe: tcp_stream connected mss=%u wscale=%u/%u bytes=%lu write=%lu\n", c->mss,
		c->snd_wscale, c->rcv_wscale, total, wsize);
	uint64_t sent = 0, sends = 0, t0 = rdtsc(), last = t0,
		 stall = virtio_ms_to_cycles(STALL_MS);
	uint64_t wleft = 0; /* what is left of the current write */
	uint32_t una = c->snd_una;
	while (sent < total) {
		if (!wleft)
			wleft = total - sent < wsize ? total - sent : wsize;
		uint64_t n = wleft;
		unsigned space = tcp_send_space(&net_tcp, id);
		/* a write goes whole once the ring has room for it; past half the ring, in
		 * pieces as it drains (a write waiting for an empty ring would drain the pipe) */
		if (n > space)
			n = n <= TCP_BUF_SIZE / 2 ? 0 : space;
		if (n) {
			net_tcp_pattern_fill(chunk, sent, (unsigned)n);
			int k = tcp_send(&net_tcp, id, chunk, (unsigned)n);
			if (k < 0)
				return "tcp_stream: the connection is gone";
			sent += (unsigned)k;
			wleft -= (unsigned)k;
			sends += k > 0;
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
	net_fmt_secs(secs, us);
	net_fmt_ratio(mbps, total * 8, us);
	kprintf("probe: tcp_stream bytes=%lu secs=%s mbps=%s write=%lu sends=%lu segs=%lu "
		"small_segs=%lu retransmits=%lu fast_retransmits=%lu srtt_us=%u rto_us=%u state=%u "
		"err=%u reentry_drops=%lu tso_frames=%lu\n",
		total, secs, mbps, wsize, sends, c->data_segs, c->small_segs, c->retransmits,
		c->fast_retransmits, c->srtt, c->rto, c->state, c->err, net_tcp_reentry_drops,
		net_tcp_tso_frames);
	if (!acked || c->err)
		return "tcp_stream: not all data acknowledged";
	if (!closed)
		return "tcp_stream: the peer did not close";
	tcp_release(&net_tcp, id);
	return 0;
}
