/* IPv4 reassembly (RFC 791): one datagram at a time, enough for a host that fragments its own
 * large UDP datagrams (host -> guest streams and echoes above the MTU). Fragments may come in
 * any order; a fragment of another datagram abandons the one in progress, and overlapping,
 * oversized or inconsistent fragments drop it: never a datagram with a hole or stale bytes. */
#include "lib.h"
#include "net.h"

#define IP_MF	  0x2000
#define IP_OFFSET 0x1fff
#define MAX_DATA  (65535u - IP_HLEN)   /* the most an IPv4 datagram carries */
#define BLOCKS	  ((MAX_DATA + 7) / 8) /* fragment offsets count 8 bytes */

static struct {
	bool active;
	uint32_t src, dst;
	uint16_t id;
	uint8_t proto;
	unsigned total; /* the datagram's data length once its last fragment is in, else 0 */
	unsigned have;	/* data bytes in */
	unsigned end;	/* the furthest byte any fragment reached */
	uint8_t seen[(BLOCKS + 7) / 8];
	uint8_t data[MAX_DATA];
} r;

static void drop(void)
{
	if (r.active)
		netif.rx_reasm_drops++;
	r.active = false;
}

static bool seen(unsigned b)
{
	return r.seen[b / 8] >> (b % 8) & 1;
}

void ipv4_reasm_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *data,
		      unsigned len)
{
	unsigned frag = ntohs(ip->frag), off = (frag & IP_OFFSET) * 8u;
	bool more = frag & IP_MF;
	netif.rx_frags++;
	if (!len || off + len > MAX_DATA || (more && len % 8)) {
		netif.rx_bad++;
		return;
	}
	if (!r.active || r.src != ip->src || r.dst != ip->dst || r.id != ip->id ||
	    r.proto != ip->proto) {
		drop(); /* another datagram: the one in progress will not complete */
		r.active = true;
		r.src = ip->src;
		r.dst = ip->dst;
		r.id = ip->id;
		r.proto = ip->proto;
		r.total = r.have = r.end = 0;
		memset(r.seen, 0, sizeof(r.seen));
	}
	unsigned first = off / 8, last = (off + len - 1) / 8;
	for (unsigned b = first; b <= last; b++) {
		if (seen(b)) {
			drop(); /* overlap or duplicate */
			return;
		}
	}
	if ((r.total && off + len > r.total) || (!more && (r.total || off + len < r.end))) {
		drop(); /* past the end, or a second, inconsistent end */
		return;
	}
	for (unsigned b = first; b <= last; b++)
		r.seen[b / 8] |= (uint8_t)(1u << (b % 8));
	memcpy(r.data + off, data, len);
	r.have += len;
	if (off + len > r.end)
		r.end = off + len;
	if (!more)
		r.total = off + len;
	if (!r.total || r.have != r.total)
		return;
	r.active = false;
	struct ip_hdr whole = *ip;
	whole.len = htons((uint16_t)(IP_HLEN + r.total));
	whole.frag = 0;
	ipv4_deliver(src_mac, &whole, r.data, r.total);
}
