// What the tap tools (tapsend.c, tapread.c) share: address parsing and opening a tap as
// minivmm's tap backend does (IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, a 12-byte virtio-net header).
// Include after tool.h.
#ifndef NETBENCH_TAP_H
#define NETBENCH_TAP_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define VNET_HLEN 12

static uint32_t parse_ip(const char *s, const char *name)
{
	struct in_addr a;
	if (inet_pton(AF_INET, s, &a) != 1)
		usage_error("bad IPv4 address for", name);
	return a.s_addr;
}

static void parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		usage_error("bad MAC address", s);
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			usage_error("bad MAC address", s);
		mac[i] = (uint8_t)v[i];
	}
}

// open_flags: extra open(2) flags (O_NONBLOCK, as the VMM's I/O thread has it); tun_flags:
// extra TUNSETIFF flags (IFF_NAPI: written frames go through the tap queue's NAPI context).
static int tap_open(const char *name, int open_flags, short tun_flags)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | open_flags);
	if (fd < 0)
		die("/dev/net/tun");
	struct ifreq ifr = {.ifr_flags = (short)(IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | tun_flags)};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		die("TUNSETIFF");
	int hlen = VNET_HLEN;
	if (ioctl(fd, TUNSETVNETHDRSZ, &hlen) < 0)
		die("TUNSETVNETHDRSZ");
	return fd;
}

#endif
