/*
 * test=tcp_sink: listen on net.port, accept one connection (waiting up to net.wait seconds,
 * default 60), receive until the peer closes and check every byte against the tcp_stream
 * pattern (net_tcp_pattern), then close our side. With net.tcp_mib=N the stream must also be
 * exactly N MiB long.
 */
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define STALL_MS 10000
#define CLOSE_MS 2000
#define CHUNK	 16384

static uint8_t buf[CHUNK];

static bool all_acked(int id)
{
	return tcp_send_done(&net_tcp, id) || tcp_state(&net_tcp, id) == TCP_CLOSED;
}

const char *net_tcp_sink(void)
{
	uint64_t wait = net_secs_cycles(net_arg("net.wait", 60));
	uint64_t want = net_arg("net.tcp_mib", 0) << 20; /* 0: any length */
	net_tcp_open();
	if (tcp_listen(&net_tcp, netif.port) < 0)
		return "tcp_sink: cannot listen";
	kprintf("probe: tcp_sink listening port=%u\n", netif.port);
	int id;
	uint64_t t0 = rdtsc();
	while ((id = tcp_accept(&net_tcp, netif.port)) < 0) {
		if (rdtsc() - t0 > wait)
			return "tcp_sink: no connection";
		if (netif.nic.err)
			return netif.nic.err;
		net_tcp_poll();
	}
	struct tcp_conn *c = &net_tcp.conns[id];
	kprintf("probe: tcp_sink connected mss=%u wscale=%u/%u\n", c->mss, c->snd_wscale,
		c->rcv_wscale);
	uint64_t bytes = 0, bad = 0, first_bad = 0, stall = virtio_ms_to_cycles(STALL_MS);
	uint64_t start = rdtsc(), last = start, end = start;
	for (;;) {
		int n = tcp_recv(&net_tcp, id, buf, CHUNK);
		if (n < 0)
			break;
		uint64_t now = rdtsc();
		if (n > 0) {
			uint64_t first = 0,
				 b = net_tcp_pattern_check(buf, bytes, (unsigned)n, &first);
			if (b && !bad)
				first_bad = first;
			bad += b;
			bytes += (unsigned)n;
			last = end = now;
		} else if (now - last > stall) {
			return "tcp_sink: no progress";
		}
		if (netif.nic.err)
			return netif.nic.err;
		net_tcp_poll();
	}
	bool reset = c->err != TCP_OK;
	tcp_close(&net_tcp, id);
	bool closed = net_tcp_wait(all_acked, id, CLOSE_MS);
	uint64_t us = virtio_cycles_to_us(end - start);
	char secs[32], mbps[32];
	net_fmt_secs(secs, us);
	net_fmt_ratio(mbps, bytes * 8, us);
	kprintf("probe: tcp_sink bytes=%lu secs=%s mbps=%s bad=%lu first_bad=%lu dup_acks_sent=%lu "
		"ooo_dropped=%lu rx_bad=%lu state=%u err=%u reentry_drops=%lu rx_large=%lu\n",
		bytes, secs, mbps, bad, bad ? first_bad : 0, c->dup_acks_sent, c->ooo_dropped,
		net_tcp.rx_bad, c->state, c->err, net_tcp_reentry_drops, netif.nic.rx_large);
	if (reset)
		return "tcp_sink: the connection was reset";
	if (bad)
		return "tcp_sink: wrong bytes in the stream";
	if (!bytes || (want && bytes != want))
		return "tcp_sink: the stream has the wrong length";
	if (!closed)
		return "tcp_sink: our close was not acknowledged";
	tcp_release(&net_tcp, id);
	return 0;
}
