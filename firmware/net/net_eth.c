/* The interface: bring-up, Ethernet II framing and the receive demultiplexer. */
#include "lib.h"
#include "net.h"
#include "printf.h"
#include "tsc.h"
#include "x86.h"

#define LINK_WAIT_MS 1000

struct netif netif;

uint8_t *eth_fill(uint8_t *frame, const uint8_t dst[6], uint16_t type)
{
	struct eth_hdr *e = (struct eth_hdr *)frame;
	memcpy(e->dst, dst, 6);
	memcpy(e->src, netif.nic.mac, 6);
	e->type = htons(type);
	return frame + ETH_HLEN;
}

static void net_input(const uint8_t *frame, unsigned len)
{
	const struct eth_hdr *e = (const struct eth_hdr *)frame;
	uint16_t type = ntohs(e->type);
	if (type == ETH_P_IP)
		ipv4_input(e->src, frame + ETH_HLEN, len - ETH_HLEN);
	else if (type == ETH_P_ARP)
		arp_input(frame + ETH_HLEN, len - ETH_HLEN);
}

unsigned net_poll(unsigned budget)
{
	return vnet_rx_poll(&netif.nic, net_input, budget);
}

/* Each read of the link bit is an exit: poll it every 10 ms. */
static bool wait_link(void)
{
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles(LINK_WAIT_MS);
	while (!vnet_read_link(&netif.nic)) {
		if (rdtsc() - t0 > limit)
			return false;
		uint64_t t1 = rdtsc();
		while (rdtsc() - t1 < virtio_ms_to_cycles(10))
			cpu_relax();
	}
	return true;
}

const char *net_open(void)
{
	const char *err;
	if ((err = net_config()) || (err = vnet_open(&netif.nic)))
		return err;
	netif.nic.rx_idle_fn = net_input;
	char ip[16], peer[16], mac[18];
	net_fmt_ip(ip, netif.ip);
	net_fmt_ip(peer, netif.peer);
	net_fmt_mac(mac, netif.nic.mac);
	bool up = wait_link();
	struct virtio_dev *d = netif.nic.dev;
	/* offload=: what transmit offloads were negotiated (net.offload, and what was offered) */
	const char *offload = netif.nic.tso4 ? "csum,tso4" : netif.nic.csum ? "csum" : "off";
	const char *rx_offload = netif.nic.rx_tso4   ? "csum,tso4"
				 : netif.nic.rx_csum ? "csum"
						     : "off";
	kprintf("probe: net transport=%s mac=%s ip=%s peer=%s port=%u peer_port=%u link=%s "
		"features=0x%lx offered=0x%lx offload=%s rx_offload=%s rxq=%u txq=%u tsc_khz=%u\n",
		virtio_transport_name(d), mac, ip, peer, netif.port, netif.peer_port,
		up ? "up" : "down", d->features, d->offered, offload, rx_offload,
		netif.nic.rx->size, netif.nic.tx->size, tsc_khz());
	return up ? 0 : "virtio-net link is down";
}
