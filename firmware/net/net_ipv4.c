/* IPv4 (RFC 791): checked input (fragments to net_reasm.c), output with fragmentation. */
#include "lib.h"
#include "net.h"

#define IP_MF	     0x2000
#define IP_OFFSET    0x1fff
#define IP_TTL	     64
#define FRAG_PAYLOAD ((NET_MTU - IP_HLEN) & ~7u) /* fragment offsets count 8 bytes */

void ipv4_input(const uint8_t *src_mac, const uint8_t *pkt, unsigned len)
{
	const struct ip_hdr *ip = (const struct ip_hdr *)pkt;
	unsigned hl = (ip->vhl & 0xf) * 4u, total = ntohs(ip->len);
	if (len < IP_HLEN || ip->vhl >> 4 != 4 || hl < IP_HLEN || total < hl || total > len ||
	    csum_fold(csum_partial(ip, hl, 0)) != 0) {
		netif.rx_bad++;
		return;
	}
	uint32_t bcast = netif.ip | ~netif.mask;
	if (ip->dst != netif.ip && ip->dst != 0xffffffff && ip->dst != bcast)
		return;
	if (ntohs(ip->frag) & (IP_MF | IP_OFFSET))
		ipv4_reasm_input(src_mac, ip, pkt + hl, total - hl);
	else
		ipv4_deliver(src_mac, ip, pkt + hl, total - hl);
}

void ipv4_deliver(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *data,
		  unsigned len)
{
	if (ip->proto == IP_PROTO_ICMP)
		icmp_input(src_mac, ip, data, len);
	else if (ip->proto == IP_PROTO_UDP)
		udp_input(src_mac, ip, data, len);
	else if (ip->proto == IP_PROTO_TCP)
		net_tcp_input(src_mac, ip, data, len);
}

/* Copy [off, off + n) of the concatenation hdr . data. */
static void gather(uint8_t *out, const uint8_t *hdr, unsigned hlen, const uint8_t *data,
		   unsigned off, unsigned n)
{
	if (off < hlen) {
		unsigned k = hlen - off < n ? hlen - off : n;
		memcpy(out, hdr + off, k);
		out += k;
		off += k;
		n -= k;
	}
	if (n)
		net_copy(out, data + (off - hlen), n);
}

void ipv4_hdr_fill(struct ip_hdr *ip, uint32_t dst, uint8_t proto, unsigned len, uint16_t id,
		   uint16_t frag)
{
	ip->vhl = 0x45;
	ip->tos = 0;
	ip->len = htons((uint16_t)(IP_HLEN + len));
	ip->id = id;
	ip->frag = htons(frag);
	ip->ttl = IP_TTL;
	ip->proto = proto;
	ip->csum = 0;
	ip->src = netif.ip;
	ip->dst = dst;
	ip->csum = csum_fold(csum_partial(ip, IP_HLEN, 0));
}

const char *ipv4_send(const uint8_t mac[6], uint32_t dst, uint8_t proto, const void *hdr,
		      unsigned hlen, const void *data, unsigned dlen)
{
	unsigned total = hlen + dlen;
	if (total > IP_MAX_PAYLOAD)
		return "IPv4 datagram too long";
	unsigned nfrag = (total + FRAG_PAYLOAD - 1) / FRAG_PAYLOAD;
	/* All fragments or none: a partial datagram is lost at the receiver anyway. */
	const char *err = vnet_tx_wait(&netif.nic, nfrag, NET_TX_TIMEOUT_MS);
	if (err)
		return err;
	uint16_t id = htons(netif.ip_id++);
	for (unsigned off = 0; off < total; off += FRAG_PAYLOAD) {
		unsigned n = total - off < FRAG_PAYLOAD ? total - off : FRAG_PAYLOAD;
		uint8_t *frame = vnet_tx_buf(&netif.nic);
		struct ip_hdr *ip = (struct ip_hdr *)eth_fill(frame, mac, ETH_P_IP);
		ipv4_hdr_fill(ip, dst, proto, n, id,
			      (uint16_t)(off / 8 | (off + n < total ? IP_MF : 0)));
		gather((uint8_t *)(ip + 1), hdr, hlen, data, off, n);
		unsigned len = ETH_HLEN + IP_HLEN + n;
		if (len < 60) { /* the Ethernet minimum: pad (not counted in ip->len) */
			memset(frame + len, 0, 60 - len);
			len = 60;
		}
		vnet_tx_send(&netif.nic, len);
	}
	return 0;
}
