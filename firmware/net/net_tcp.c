/*
 * The probe's TCP (tcp.c) on this interface: segments out through ipv4_send, in from
 * ipv4_deliver, time from the TSC. One stack; programs call net_tcp_poll() in their loops.
 */
#include "lib.h"
#include "net.h"
#include "vnet_hdr.h"
#include "x86.h"

#define IP_DF 0x4000

#define RX_BATCH 64

struct tcp_stack net_tcp;
static bool up;
/* Inside ipv4_send: waiting for TX room polls RX, and a segment taken then would run the
 * stack inside itself (its transmit buffer in use): such segments are dropped, and resent. */
static bool in_output;
/* Where segments go: the MAC for one address, resolved before a connect or learnt from the
 * last segment in (for an address off the subnet, the gateway's). */
static uint32_t mac_ip;
static uint8_t mac[6];
static bool have_mac;
uint64_t net_tcp_reentry_drops, net_tcp_no_mac_drops, net_tcp_tso_frames;

/* A segment whose checksum the device finishes (and, past one MSS, cuts: TSO) as one frame
 * with its virtio-net header; never fragmented (DF, as Linux sends TCP). A segment that finds
 * no TX room is dropped: TCP sends it again. */
static void output_offload(uint32_t dst, const uint8_t *s, unsigned len, unsigned flags)
{
	struct vnet *nic = &netif.nic;
	unsigned flen = ETH_HLEN + IP_HLEN + len;
	bool big = flen > VNET_MAX_FRAME;
	uint8_t *frame = 0;
	if (!(big ? vnet_tx_wait_big(nic, NET_TX_TIMEOUT_MS)
		  : vnet_tx_wait(nic, 1, NET_TX_TIMEOUT_MS)))
		frame = big ? vnet_tx_big_buf(nic) : vnet_tx_buf(nic);
	if (!frame)
		return;
	struct ip_hdr *ip = (struct ip_hdr *)eth_fill(frame, mac, ETH_P_IP);
	ipv4_hdr_fill(ip, dst, IP_PROTO_TCP, len, htons(netif.ip_id++), IP_DF);
	net_copy(ip + 1, s, len);
	if (flen < 60) { /* the Ethernet minimum; zeros leave the device's checksum as it is */
		memset(frame + flen, 0, 60 - flen);
		flen = 60;
	}
	uint8_t hdr[VNET_HDR_SIZE];
	unsigned gso = flags & TCP_TX_GSO ? TCP_TX_GSO_SIZE(flags) : 0;
	vnet_hdr_tcp4(hdr, ETH_HLEN, IP_HLEN, (s[12] >> 4) * 4u, len - (s[12] >> 4) * 4u, gso,
		      true);
	net_tcp_tso_frames += gso != 0;
	vnet_tx_send_hdr(nic, flen, hdr, big);
}

static void output(void *ctx, uint32_t src, uint32_t dst, const void *seg, unsigned len,
		   unsigned flags)
{
	(void)ctx;
	(void)src;
	if (!have_mac || dst != mac_ip) {
		net_tcp_no_mac_drops++;
		return;
	}
	const uint8_t *s = seg;
	unsigned hl = (s[12] >> 4) * 4u;
	in_output = true;
	if (flags & TCP_TX_NEEDS_CSUM)
		output_offload(dst, s, len, flags);
	else
		ipv4_send(mac, dst, IP_PROTO_TCP, s, hl, s + hl, len - hl);
	in_output = false;
}

static uint64_t now_us(void *ctx)
{
	(void)ctx;
	return virtio_cycles_to_us(rdtsc());
}

void net_tcp_open(void)
{
	/* a new ISN each boot: the TSC's low bits */
	tcp_init(&net_tcp, netif.ip, output, now_us, 0, (uint32_t)(rdtsc() * 2654435761u));
	net_tcp.tx_csum_offload = netif.nic.csum;
	net_tcp.tx_tso = netif.nic.tso4;
	up = true;
}

const char *net_tcp_connect(uint32_t dst, uint16_t port, int *id)
{
	const char *err = arp_resolve(dst, mac);
	if (err)
		return err;
	mac_ip = dst;
	have_mac = true;
	*id = tcp_connect(&net_tcp, 0, dst, port);
	return *id < 0 ? "no free TCP connection" : 0;
}

void net_tcp_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *data,
		   unsigned len)
{
	if (!up)
		return;
	if (in_output) {
		net_tcp_reentry_drops++;
		return;
	}
	memcpy(mac, src_mac, 6);
	mac_ip = ip->src;
	have_mac = true;
	/* GUEST_CSUM: the device vouched for the checksum (a partial one is no sum at all) */
	tcp_input(&net_tcp, ip->src, ip->dst, data, len, netif.nic.rx_csum_ok ? TCP_RX_CSUM_OK : 0);
}

void net_tcp_poll(void)
{
	net_poll(RX_BATCH);
	tcp_timers(&net_tcp);
	vnet_tx_flush(&netif.nic);
}

const char *net_tcp_transact(int id, const uint8_t *req, uint8_t *resp, unsigned size,
			     uint64_t timeout_ms)
{
	uint64_t t = rdtsc(), timeout = virtio_ms_to_cycles(timeout_ms);
	unsigned sent = 0, got = 0;
	while (got < size) {
		if (sent < size) {
			int k = tcp_send(&net_tcp, id, req + sent, size - sent);
			if (k < 0)
				return "tcp: the connection is gone mid-transaction";
			sent += (unsigned)k;
		}
		net_tcp_poll();
		int n = tcp_recv(&net_tcp, id, resp + got, size - got);
		if (n < 0)
			return "tcp: the connection is gone mid-transaction";
		got += (unsigned)n;
		if (netif.nic.err)
			return netif.nic.err;
		if (rdtsc() - t > timeout)
			return "tcp: no reply in time";
	}
	return 0;
}
