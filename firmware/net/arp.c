/* ARP for IPv4 over Ethernet (RFC 826): answer requests for our address, resolve others. */
#include "lib.h"
#include "net.h"
#include "x86.h"

#define ARP_REQUEST    1
#define ARP_REPLY      2
#define ARP_CACHE      4
#define ARP_TRIES      10
#define ARP_TRY_MS     200
#define ARP_POLL_BATCH 32

struct arp_pkt {
	uint16_t htype, ptype;
	uint8_t hlen, plen;
	uint16_t op;
	uint8_t sha[6];
	uint32_t spa;
	uint8_t tha[6];
	uint32_t tpa;
} __attribute__((packed));

static struct {
	uint32_t ip;
	uint8_t mac[6];
} cache[ARP_CACHE];
static unsigned next_slot;

static const uint8_t broadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static bool lookup(uint32_t ip, uint8_t mac[6])
{
	for (unsigned i = 0; i < ARP_CACHE; i++)
		if (cache[i].ip == ip && ip) {
			memcpy(mac, cache[i].mac, 6);
			return true;
		}
	return false;
}

static void learn(uint32_t ip, const uint8_t mac[6])
{
	unsigned slot = next_slot;
	for (unsigned i = 0; i < ARP_CACHE; i++)
		if (cache[i].ip == ip)
			slot = i;
	if (slot == next_slot)
		next_slot = (next_slot + 1) % ARP_CACHE; /* round-robin eviction */
	cache[slot].ip = ip;
	memcpy(cache[slot].mac, mac, 6);
}

static void send_arp(uint16_t op, const uint8_t eth_dst[6], const uint8_t tha[6], uint32_t tpa)
{
	if (vnet_tx_wait(&netif.nic, 1, NET_TX_TIMEOUT_MS))
		return;
	uint8_t *frame = vnet_tx_buf(&netif.nic);
	struct arp_pkt *a = (struct arp_pkt *)eth_fill(frame, eth_dst, ETH_P_ARP);
	a->htype = htons(1);
	a->ptype = htons(ETH_P_IP);
	a->hlen = 6;
	a->plen = 4;
	a->op = htons(op);
	memcpy(a->sha, netif.nic.mac, 6);
	a->spa = netif.ip;
	memcpy(a->tha, tha, 6);
	a->tpa = tpa;
	unsigned len = ETH_HLEN + sizeof(*a);
	memset(frame + len, 0, 60 - len); /* pad to the Ethernet minimum */
	vnet_tx_send(&netif.nic, 60);
	vnet_tx_flush(&netif.nic);
}

void arp_input(const uint8_t *pkt, unsigned len)
{
	const struct arp_pkt *a = (const struct arp_pkt *)pkt;
	if (len < sizeof(*a) || a->htype != htons(1) || a->ptype != htons(ETH_P_IP) ||
	    a->hlen != 6 || a->plen != 4)
		return;
	if (a->tpa != netif.ip)
		return;
	if (a->spa)
		learn(a->spa, a->sha);
	if (a->op == htons(ARP_REQUEST)) {
		netif.arp_replies++;
		send_arp(ARP_REPLY, a->sha, a->sha, a->spa);
	}
}

const char *arp_resolve(uint32_t ip, uint8_t mac[6])
{
	if ((ip & netif.mask) != (netif.ip & netif.mask))
		ip = netif.gw;
	if (netif.static_peer_mac && ip == netif.gw) { /* the peer, or the way to it */
		memcpy(mac, netif.peer_mac, 6);
		return 0;
	}
	if (lookup(ip, mac))
		return 0;
	static const uint8_t zero[6];
	for (unsigned t = 0; t < ARP_TRIES; t++) {
		send_arp(ARP_REQUEST, broadcast, zero, ip);
		uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(ARP_TRY_MS);
		while (rdtsc() - t0 < limit) {
			net_poll(ARP_POLL_BATCH);
			if (lookup(ip, mac))
				return 0;
			if (netif.nic.err)
				return netif.nic.err;
			cpu_relax();
		}
	}
	return "no ARP reply from the peer (or gateway)";
}
