/*
 * The virtio-net header (virtio 1.2, 5.1.6, struct virtio_net_hdr_v1) in front of one frame the
 * probe sends: checksum offload (NEEDS_CSUM) and TSO (GSO_TCPV4) as a Linux guest fills it.
 * Plain C with no dependency, so the host's unit tests build it (tests/unit/test_vnet_hdr.c).
 */
#ifndef VNET_HDR_H
#define VNET_HDR_H

#include <stdbool.h>
#include <stdint.h>

#define VNET_HDR_SIZE	      12 /* with VERSION_1; num_buffers is 0 on transmit */
#define VNET_HDR_F_NEEDS_CSUM 1
#define VNET_HDR_GSO_NONE     0
#define VNET_HDR_GSO_TCPV4    1
#define VNET_TCP_CSUM_OFFSET  16 /* the checksum field inside the TCP header */

/*
 * An Ethernet/IPv4/TCP frame of l2 + ip_hlen + tcp_hlen + dlen bytes. needs_csum: the TCP
 * checksum field holds only the pseudo-header sum, for the device to finish (else the header
 * is all zero: nothing to do). gso_size: the MSS to cut dlen into when it is longer (TSO), 0
 * for none. Fields are little-endian (VERSION_1).
 */
void vnet_hdr_tcp4(uint8_t hdr[VNET_HDR_SIZE], unsigned l2, unsigned ip_hlen, unsigned tcp_hlen,
		   unsigned dlen, unsigned gso_size, bool needs_csum);

#endif
