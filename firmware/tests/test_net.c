/*
 * The network tests' common start and end, the shared helpers, and the two receive-side
 * programs: serve (ARP, ping and UDP echo forever) and udp_sink (count datagrams for net.secs).
 */
#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "test_net.h"
#include "x86.h"

#define RX_BATCH	  64
#define SINK_WAIT_DEFAULT 60 /* seconds for the first datagram to come */
#define SINK_WAKE_BATCH	  32 /* net.rxwait=halt: frames per wake-up of an idle sink */

uint64_t net_arg(const char *key, uint64_t def)
{
	const char *v;
	size_t n;
	uint64_t x;
	if (cmdline_get(boot_info.cmdline, key, &v, &n) && parse_u64(v, n, false, &x))
		return x;
	return def;
}

uint64_t net_secs_cycles(uint64_t secs)
{
	return virtio_ms_to_cycles(1000) * secs;
}

void net_fmt_fixed(char out[32], uint64_t num, uint64_t den, unsigned decimals)
{
	uint64_t scale = 1;
	for (unsigned i = 0; i < decimals; i++)
		scale *= 10;
	uint64_t v = den ? num * scale / den : 0;
	char *p = out + 31;
	*p = 0;
	for (unsigned i = 0; i < decimals; i++, v /= 10)
		*--p = (char)('0' + v % 10);
	if (decimals)
		*--p = '.';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) && p > out);
	for (unsigned i = 0;; i++) {
		out[i] = p[i];
		if (!p[i])
			break;
	}
}

void net_fmt_ratio(char out[32], uint64_t num, uint64_t den)
{
	net_fmt_fixed(out, num, den, 1);
}

void net_fmt_secs(char out[32], uint64_t us)
{
	net_fmt_fixed(out, us, 1000000, 3);
}

const char *net_peer_mac(uint8_t mac[6])
{
	const char *err = arp_resolve(netif.peer, mac);
	if (err)
		return err;
	char m[18];
	net_fmt_mac(m, mac);
	kprintf("probe: net peer_mac=%s\n", m);
	return 0;
}

void net_report_stats(void)
{
	struct vnet *n = &netif.nic;
	kprintf("probe: net stats tx=%lu rx=%lu rx_drops=%lu rx_bad=%lu rx_frags=%lu "
		"reasm_drops=%lu arp_replies=%lu echo_replies=%lu icmp_other=%lu kicks_tx=%lu "
		"kicks_rx=%lu\n",
		n->tx_pkts, n->rx_pkts, n->rx_drops, netif.rx_bad, netif.rx_frags,
		netif.rx_reasm_drops, netif.arp_replies, netif.echo_replies, netif.icmp_other,
		n->tx->kicks, n->rx->kicks);
}

static void echo(const struct udp_msg *m)
{
	udp_send(m->src_mac, m->src_ip, m->sport, m->data, m->len, -1);
}

/* Never returns: the host stops the VM. Replies are flushed once per received batch. */
static const char *serve(void)
{
	char ip[16], mac[18];
	net_fmt_ip(ip, netif.ip);
	net_fmt_mac(mac, netif.nic.mac);
	netif.udp_rx = echo;
	kprintf("probe: serve ready ip=%s mac=%s port=%u\n", ip, mac, netif.port);
	for (;;) {
		if (net_poll(RX_BATCH))
			vnet_tx_flush(&netif.nic);
		else
			cpu_relax();
		if (netif.nic.err)
			return netif.nic.err;
	}
}

static struct {
	uint64_t msgs, bytes, t_first;
} sink;

static void count(const struct udp_msg *m)
{
	if (!sink.msgs)
		sink.t_first = rdtsc();
	sink.msgs++;
	sink.bytes += m->len;
}

/* Counts for net.secs from the first datagram; waits net.wait seconds for that one. */
static const char *udp_sink(void)
{
	uint64_t secs = net_arg("net.secs", 2), wait = net_arg("net.wait", SINK_WAIT_DEFAULT);
	uint64_t window = net_secs_cycles(secs), t0 = rdtsc(), end = 0;
	netif.udp_rx = count;
	kprintf("probe: udp_sink ready port=%u secs=%lu\n", netif.port, secs);
	for (;;) {
		unsigned got = net_poll(RX_BATCH);
		vnet_tx_flush(&netif.nic); /* ARP and ping replies */
		uint64_t now = rdtsc();
		if (!sink.msgs && now - t0 > net_secs_cycles(wait))
			return "udp_sink: no datagram arrived";
		if (sink.msgs && now - sink.t_first >= window) {
			end = now;
			break;
		}
		if (netif.nic.err)
			return netif.nic.err;
		/* net.rxwait=halt: an idle sink leaves the CPU to the VMMs, woken once per batch of
		 * frames; near the end of its window by the next frame, so it ends on time while
		 * frames flow (the watchdog tick bounds the wait when none do). */
		if (!got && netif.nic.rx_halt) {
			uint64_t left = sink.msgs ? window - (now - sink.t_first) : 0;
			unsigned ms =
			    sink.msgs ? (unsigned)(left / virtio_ms_to_cycles(1)) + 1 : 100;
			const char *err = vnet_rx_sleep(&netif.nic, ms < 100 ? 1 : SINK_WAKE_BATCH,
							ms < 100 ? ms : 100);
			if (err)
				return err;
		}
	}
	netif.udp_rx = 0;
	uint64_t us = virtio_cycles_to_us(end - sink.t_first);
	char t[32], mbps[32];
	net_fmt_secs(t, us);
	net_fmt_ratio(mbps, sink.bytes * 8, us);
	kprintf("probe: udp_sink msgs=%lu bytes=%lu secs=%s mbps=%s pps=%lu\n", sink.msgs,
		sink.bytes, t, mbps, us ? sink.msgs * 1000000 / us : 0);
	return 0;
}

/* Every program: the interface up, the TX kick batch from net.batch, then the statistics. */
static const char *run(const char *(*program)(void))
{
	const char *err = net_open();
	if (err)
		return err;
	netif.nic.kick_batch = (unsigned)net_arg("net.batch", netif.nic.kick_batch);
	if (!netif.nic.kick_batch)
		netif.nic.kick_batch = 1;
	err = program();
	net_report_stats();
	return err;
}

const char *test_serve(void)
{
	return run(serve);
}

const char *test_udp_sink(void)
{
	return run(udp_sink);
}

const char *test_udp_stream(void)
{
	return run(net_udp_stream);
}

const char *test_udp_rr(void)
{
	return run(net_udp_rr);
}

const char *test_pktgen(void)
{
	return run(net_pktgen);
}

const char *test_bulk_send(void)
{
	return run(net_bulk_send);
}

const char *test_bulk_recv(void)
{
	return run(net_bulk_recv);
}

const char *test_tcp_stream(void)
{
	return run(net_tcp_stream);
}

const char *test_tcp_sink(void)
{
	return run(net_tcp_sink);
}

const char *test_tcp_rr(void)
{
	return run(net_tcp_rr);
}

const char *test_tcp_crr(void)
{
	return run(net_tcp_crr);
}
