/* ICMP (RFC 792): echo replies, so the host can ping the guest, and echo requests out. */
#include "lib.h"
#include "net.h"

#define ICMP_ECHO_REPLY	  0
#define ICMP_ECHO_REQUEST 8
#define ICMP_HLEN	  8

void icmp_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *pkt, unsigned len)
{
	if (len >= ICMP_HLEN && pkt[0] == ICMP_ECHO_REPLY && netif.echo_reply_rx) {
		if (pkt[1] != 0 || csum_fold(csum_partial(pkt, len, 0)) != 0)
			netif.rx_bad++;
		else
			netif.echo_reply_rx(ip, pkt, len);
		return;
	}
	if (len >= ICMP_HLEN && pkt[0] != ICMP_ECHO_REQUEST) {
		netif.icmp_other++; /* e.g. port unreachable from the peer: counted, not acted on */
		return;
	}
	if (len < ICMP_HLEN || pkt[1] != 0 || csum_fold(csum_partial(pkt, len, 0)) != 0) {
		netif.rx_bad++;
		return;
	}
	/* Same identifier, sequence and data; only the type and checksum change. */
	uint8_t hdr[ICMP_HLEN];
	memcpy(hdr, pkt, ICMP_HLEN);
	hdr[0] = ICMP_ECHO_REPLY;
	hdr[2] = hdr[3] = 0;
	uint16_t csum = csum_fold(
	    csum_partial(pkt + ICMP_HLEN, len - ICMP_HLEN, csum_partial(hdr, ICMP_HLEN, 0)));
	memcpy(hdr + 2, &csum, 2);
	if (!ipv4_send(src_mac, ip->src, IP_PROTO_ICMP, hdr, ICMP_HLEN, pkt + ICMP_HLEN,
		       len - ICMP_HLEN))
		netif.echo_replies++;
	vnet_tx_flush(&netif.nic);
}

const char *icmp_echo_send(const uint8_t mac[6], uint32_t dst, uint16_t id, uint16_t seq,
			   const void *data, unsigned dlen)
{
	uint8_t hdr[ICMP_HLEN] = {ICMP_ECHO_REQUEST, 0, 0, 0};
	uint16_t v = htons(id);
	memcpy(hdr + 4, &v, 2);
	v = htons(seq);
	memcpy(hdr + 6, &v, 2);
	uint16_t csum = csum_fold(csum_partial(data, dlen, csum_partial(hdr, ICMP_HLEN, 0)));
	memcpy(hdr + 2, &csum, 2);
	const char *err = ipv4_send(mac, dst, IP_PROTO_ICMP, hdr, ICMP_HLEN, data, dlen);
	vnet_tx_flush(&netif.nic);
	return err;
}
