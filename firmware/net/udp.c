/* UDP (RFC 768): checksums always computed on send and checked on receive when present (and
 * the device, with GUEST_CSUM, did not vouch for it). */
#include "net.h"

/* The pseudo-header sum (RFC 768): addresses, protocol and UDP length. */
static uint32_t pseudo_sum(uint32_t src, uint32_t dst, unsigned udp_len, uint32_t sum)
{
	struct {
		uint32_t src, dst;
		uint8_t zero, proto;
		uint16_t len;
	} __attribute__((packed)) ph = {src, dst, 0, IP_PROTO_UDP, htons((uint16_t)udp_len)};
	return csum_partial(&ph, sizeof(ph), sum);
}

void udp_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *pkt, unsigned len)
{
	const struct udp_hdr *u = (const struct udp_hdr *)pkt;
	unsigned ulen = len >= UDP_HLEN ? ntohs(u->len) : 0;
	/* GUEST_CSUM: the device vouched for the checksum (a partial one is no sum at all) */
	if (ulen < UDP_HLEN || ulen > len ||
	    (u->csum && !netif.nic.rx_csum_ok &&
	     csum_fold(csum_partial(pkt, ulen, pseudo_sum(ip->src, ip->dst, ulen, 0))))) {
		netif.rx_bad++;
		return;
	}
	if (ntohs(u->dport) != netif.port || !netif.udp_rx)
		return;
	struct udp_msg m = {src_mac, ip->src, ntohs(u->sport), pkt + UDP_HLEN, ulen - UDP_HLEN};
	netif.udp_rx(&m);
}

const char *udp_send(const uint8_t mac[6], uint32_t dst, uint16_t dport, const void *data,
		     unsigned len, int64_t data_sum)
{
	if (len > UDP_MAX_PAYLOAD)
		return "UDP datagram too long";
	struct udp_hdr u = {htons(netif.port), htons(dport), htons((uint16_t)(UDP_HLEN + len)), 0};
	uint32_t sum = data_sum >= 0 ? (uint32_t)data_sum : csum_partial(data, len, 0);
	sum = pseudo_sum(netif.ip, dst, UDP_HLEN + len, csum_partial(&u, UDP_HLEN, sum));
	u.csum = csum_fold(sum);
	if (!u.csum)
		u.csum = 0xffff; /* 0 means "no checksum" (RFC 768) */
	return ipv4_send(mac, dst, IP_PROTO_UDP, &u, UDP_HLEN, data, len);
}
