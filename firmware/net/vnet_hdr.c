/* The virtio-net header for the probe's TCP frames (vnet_hdr.h). */
#include "vnet_hdr.h"

#define HDR_FLAGS	0
#define HDR_GSO_TYPE	1
#define HDR_HDR_LEN	2
#define HDR_GSO_SIZE	4
#define HDR_CSUM_START	6
#define HDR_CSUM_OFFSET 8

static void put_le16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

void vnet_hdr_tcp4(uint8_t hdr[VNET_HDR_SIZE], unsigned l2, unsigned ip_hlen, unsigned tcp_hlen,
		   unsigned dlen, unsigned gso_size, bool needs_csum)
{
	for (unsigned i = 0; i < VNET_HDR_SIZE; i++)
		hdr[i] = 0;
	if (!needs_csum)
		return;
	hdr[HDR_FLAGS] = VNET_HDR_F_NEEDS_CSUM;
	/* the checksum covers the TCP header and data: from csum_start to the frame's end */
	put_le16(hdr + HDR_CSUM_START, l2 + ip_hlen);
	put_le16(hdr + HDR_CSUM_OFFSET, VNET_TCP_CSUM_OFFSET);
	if (gso_size && dlen > gso_size) {
		hdr[HDR_GSO_TYPE] = VNET_HDR_GSO_TCPV4;
		put_le16(hdr + HDR_GSO_SIZE, gso_size);
		/* the headers every segment repeats (a Linux guest's skb_headlen for a TSO
		 * frame; 0 without GSO, as there) */
		put_le16(hdr + HDR_HDR_LEN, l2 + ip_hlen + tcp_hlen);
	}
}
