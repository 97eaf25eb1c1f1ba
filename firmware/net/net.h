/*
 * The probe's IPv4 stack over virtio-net: Ethernet II, ARP, IPv4 (fragments sent, and
 * reassembled one datagram at a time: net_reasm.c), ICMP echo, UDP, TCP (tcp.c, net_tcp.c). One
 * interface, addresses from net.* command-line words. Addresses are kept in network byte order;
 * ports and lengths in host order.
 */
#ifndef NET_H
#define NET_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp.h"
#include "virtio_net.h"

#define ETH_HLEN	  14
#define ETH_P_IP	  0x0800
#define ETH_P_ARP	  0x0806
#define IP_HLEN		  20
#define IP_PROTO_ICMP	  1
#define IP_PROTO_UDP	  17
#define UDP_HLEN	  8
#define NET_MTU		  1500
#define IP_MAX_PAYLOAD	  65515 /* 65535 - the IPv4 header */
#define UDP_MAX_PAYLOAD	  (IP_MAX_PAYLOAD - UDP_HLEN)
#define NET_TX_TIMEOUT_MS 2000

struct eth_hdr {
	uint8_t dst[6], src[6];
	uint16_t type;
} __attribute__((packed));

struct ip_hdr {
	uint8_t vhl, tos;
	uint16_t len, id, frag;
	uint8_t ttl, proto;
	uint16_t csum;
	uint32_t src, dst;
} __attribute__((packed));

struct udp_hdr {
	uint16_t sport, dport, len, csum;
} __attribute__((packed));

/* A received datagram for our port, as the UDP layer hands it to the program. */
struct udp_msg {
	const uint8_t *src_mac;
	uint32_t src_ip;
	uint16_t sport;
	const uint8_t *data;
	unsigned len;
};

struct netif {
	struct vnet nic;
	uint32_t ip, mask, peer, gw;
	uint16_t port, peer_port;
	uint16_t ip_id;
	bool static_peer_mac; /* net.peer_mac=: no ARP for the peer */
	uint8_t peer_mac[6];
	void (*udp_rx)(const struct udp_msg *m); /* datagrams for `port`; 0: dropped */
	/* ICMP echo replies (pkt: the ICMP message, checksum verified); 0: counted in icmp_other */
	void (*echo_reply_rx)(const struct ip_hdr *ip, const uint8_t *pkt, unsigned len);
	uint64_t rx_bad, rx_frags, rx_reasm_drops, arp_replies, echo_replies, icmp_other;
};
extern struct netif netif;

static inline uint16_t htons(uint16_t v)
{
	return __builtin_bswap16(v);
}
#define ntohs htons

/* net_util.c: ones'-complement sums (RFC 1071) in any byte order, copies, formatting. */
uint32_t csum_partial(const void *buf, unsigned len, uint32_t sum);
uint16_t csum_fold(uint32_t sum); /* the checksum field: ~(folded sum) */
void net_copy(void *dst, const void *src, unsigned len);
void net_fmt_ip(char out[16], uint32_t ip);
void net_fmt_mac(char out[18], const uint8_t mac[6]);
/* "a.b.c.d" into network order. */
bool net_parse_ip(const char *s, unsigned len, uint32_t *ip);

/* net_eth.c */
const char *net_open(void); /* net_config(), the NIC, and the `probe: net` line */
unsigned net_poll(unsigned budget);
uint8_t *eth_fill(uint8_t *frame, const uint8_t dst[6], uint16_t type); /* returns payload */

/* net_cfg.c: net.ip=A/LEN net.peer=A [net.gw=A] [net.port=N] [net.peer_port=N]
 * [net.peer_mac=XX:XX:XX:XX:XX:XX] */
const char *net_config(void);
/* Used by net_config() when the command line has no net.ip / net.peer (0: required). */
extern const char *net_default_ip, *net_default_peer;

/* arp.c */
void arp_input(const uint8_t *pkt, unsigned len);
/* The MAC for an IPv4 destination (via the gateway if off-subnet), asking with retries. */
const char *arp_resolve(uint32_t ip, uint8_t mac[6]);

/* net_ipv4.c */
void ipv4_input(const uint8_t *src_mac, const uint8_t *pkt, unsigned len);
/* A whole datagram (data: len bytes after the header) to ICMP, UDP or TCP. */
void ipv4_deliver(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *data,
		  unsigned len);

/* net_reasm.c: a fragment (data: its len bytes after the header); delivers the datagram once
 * every fragment is in. */
void ipv4_reasm_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *data,
		      unsigned len);
/* The header of a datagram of len bytes after it (id in network order, frag in host order). */
void ipv4_hdr_fill(struct ip_hdr *ip, uint32_t dst, uint8_t proto, unsigned len, uint16_t id,
		   uint16_t frag);
/* hdr (hlen bytes, the L4 header) then data; fragmented above the MTU; waits for TX room. */
const char *ipv4_send(const uint8_t mac[6], uint32_t dst, uint8_t proto, const void *hdr,
		      unsigned hlen, const void *data, unsigned dlen);

/* icmp.c */
void icmp_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *pkt, unsigned len);
/* An echo request (ping) of dlen bytes of data to dst via mac; flushed. */
const char *icmp_echo_send(const uint8_t mac[6], uint32_t dst, uint16_t id, uint16_t seq,
			   const void *data, unsigned dlen);

/* udp.c */
void udp_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *pkt, unsigned len);
/* From our port; data_sum: csum_partial(data, len, 0) if the caller has it, else -1. */
const char *udp_send(const uint8_t mac[6], uint32_t dst, uint16_t dport, const void *data,
		     unsigned len, int64_t data_sum);

/* net_tcp.c: the TCP stack (tcp.h) on this interface; programs call net_tcp_poll() often. */
extern struct tcp_stack net_tcp;
extern uint64_t net_tcp_reentry_drops, net_tcp_no_mac_drops, net_tcp_tso_frames;
void net_tcp_open(void);
/* ARP for dst, then a SYN; *id: the connection. */
const char *net_tcp_connect(uint32_t dst, uint16_t port, int *id);
void net_tcp_input(const uint8_t *src_mac, const struct ip_hdr *ip, const uint8_t *data,
		   unsigned len);
void net_tcp_poll(void); /* receive, run the timers, flush what was sent */
/* One request/response on connection id: all of req out, size bytes back into resp, within
 * timeout_ms; an error or 0 (tcp_rr, tcp_crr). */
const char *net_tcp_transact(int id, const uint8_t *req, uint8_t *resp, unsigned size,
			     uint64_t timeout_ms);

#endif
