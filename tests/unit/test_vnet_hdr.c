/* The probe's virtio-net header for TCP frames (firmware/net/vnet_hdr.c): the fields a Linux
 * guest would put there, byte for byte (little-endian, struct virtio_net_hdr_v1). */
#include <criterion/criterion.h>

#include "firmware/net/vnet_hdr.h"

static unsigned le16(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}

Test(vnet_hdr, tso_frame)
{
	uint8_t h[VNET_HDR_SIZE];
	memset(h, 0xa5, sizeof(h));
	vnet_hdr_tcp4(h, 14, 20, 20, 43800, 1460, true);
	cr_assert_eq(h[0], VNET_HDR_F_NEEDS_CSUM, "flags");
	cr_assert_eq(h[1], VNET_HDR_GSO_TCPV4, "gso_type");
	cr_assert_eq(le16(h + 2), 54, "hdr_len: Ethernet, IPv4 and TCP headers");
	cr_assert_eq(le16(h + 4), 1460, "gso_size: the MSS");
	cr_assert_eq(le16(h + 6), 34, "csum_start: the TCP header");
	cr_assert_eq(le16(h + 8), 16, "csum_offset: TCP's checksum field");
	cr_assert_eq(le16(h + 10), 0, "num_buffers");
	/* another MSS, options in the TCP header: every field follows */
	vnet_hdr_tcp4(h, 14, 24, 32, 3 * 536 + 1, 536, true);
	cr_assert_eq(le16(h + 2), 14 + 24 + 32);
	cr_assert_eq(le16(h + 4), 536);
	cr_assert_eq(le16(h + 6), 38);
	cr_assert_eq(le16(h + 8), 16);
}

Test(vnet_hdr, one_segment_checksum_only)
{
	uint8_t h[VNET_HDR_SIZE];
	memset(h, 0xa5, sizeof(h));
	vnet_hdr_tcp4(h, 14, 20, 20, 1460, 1460, true); /* exactly one MSS: no GSO */
	cr_assert_eq(h[0], VNET_HDR_F_NEEDS_CSUM);
	cr_assert_eq(h[1], VNET_HDR_GSO_NONE);
	cr_assert_eq(le16(h + 2), 0);
	cr_assert_eq(le16(h + 4), 0);
	cr_assert_eq(le16(h + 6), 34);
	cr_assert_eq(le16(h + 8), 16);
	vnet_hdr_tcp4(h, 14, 20, 20, 0, 0, true); /* a pure ACK */
	cr_assert_eq(h[0], VNET_HDR_F_NEEDS_CSUM);
	cr_assert_eq(h[1], VNET_HDR_GSO_NONE);
}

Test(vnet_hdr, no_offload_all_zero)
{
	uint8_t h[VNET_HDR_SIZE], zero[VNET_HDR_SIZE] = {0};
	memset(h, 0xa5, sizeof(h));
	vnet_hdr_tcp4(h, 14, 20, 20, 43800, 1460, false);
	cr_assert_arr_eq(h, zero, sizeof(h));
}
