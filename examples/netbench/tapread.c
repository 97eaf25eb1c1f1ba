// tapread: the ceiling of a tap-backed VMM's host-to-guest path on this host.
//
//   tapread --tap NAME --mac MAC --ip IP [--port P] [--secs N] [--wait-secs N]
//           [--ready-file FILE]
//
// Stands where a VMM's I/O thread stands: attaches to the tap as minivmm does (IFF_VNET_HDR,
// non-blocking, no offloads, as for the probe, which takes none) and reads one frame per
// read(), polling when the tap is empty; no guest, no virtqueue, no copy into guest memory.
// It counts the UDP datagrams to IP:PORT (fragments reassembled by position, in order, as the
// tap delivers them) for --secs seconds from the first one, like the probe's udp_sink, and
// answers ARP for IP with MAC, as the guest would. Whatever else arrives is read and ignored.
// Output: "tapread: msgs=N bytes=N secs=S mbps=M pps=N frames=N" on stdout (bytes: UDP
// payload; frames: every frame read); exit 1 on an error or when no datagram arrived within
// --wait-secs (default 30), 2 on a usage error. --ready-file FILE is written once attached.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOOL_NAME "tapread"
#define TOOL_USAGE                                                                                 \
	"usage: tapread --tap NAME --mac MAC --ip IP [--port P] [--secs N] [--wait-secs N] "       \
	"[--ready-file FILE]"
#include "tool.h"
#include "tap.h"

#define ETH_HLEN  14
#define ARP_LEN	  28
#define UDP_HLEN  8
#define CHECK_GAP 64 // frames between two looks at the clock while frames flow

static uint8_t my_mac[6];
static uint32_t my_ip; // network order
static unsigned my_port;

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

// Answers an ARP request for my_ip, so that the host resolves the "guest" as it would a VM.
static void arp(int fd, const uint8_t *eth, size_t n)
{
	if (n < ETH_HLEN + ARP_LEN)
		return;
	const uint8_t *a = eth + ETH_HLEN;
	if (get16(a) != 1 || get16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4 ||
	    get16(a + 6) != 1 || memcmp(a + 24, &my_ip, 4))
		return;
	uint8_t r[VNET_HLEN + 60] = {0}; // a zeroed header, then a minimum-size frame
	uint8_t *e = r + VNET_HLEN, *ra = e + ETH_HLEN;
	memcpy(e, a + 8, 6);
	memcpy(e + 6, my_mac, 6);
	e[12] = 0x08;
	e[13] = 0x06;
	static const uint8_t reply[8] = {0, 1, 8, 0, 6, 4, 0, 2};
	memcpy(ra, reply, sizeof(reply));
	memcpy(ra + 8, my_mac, 6);
	memcpy(ra + 14, &my_ip, 4);
	memcpy(ra + 18, a + 8, 10); // the requester's MAC and IP
	if (write(fd, r, sizeof(r)) != (ssize_t)sizeof(r) && errno != EAGAIN)
		die("write to the tap");
}

// The datagram being reassembled: fragments arrive in order, each where the last one ended.
static struct {
	bool active;
	unsigned id, next, total;
} frag;

// The UDP payload length of the datagram to my_ip:my_port this frame completes, or -1.
static long udp_datagram(const uint8_t *eth, size_t n)
{
	if (n < ETH_HLEN + 20)
		return -1;
	const uint8_t *ip = eth + ETH_HLEN;
	unsigned ihl = (ip[0] & 15u) * 4, tot = get16(ip + 2);
	if (ip[0] >> 4 != 4 || ihl < 20 || tot < ihl || ETH_HLEN + (size_t)tot > n ||
	    ip[9] != IPPROTO_UDP || memcmp(ip + 16, &my_ip, 4))
		return -1;
	unsigned fo = get16(ip + 6), off = (fo & 0x1fff) * 8, id = get16(ip + 4);
	unsigned len = tot - ihl;
	const uint8_t *udp = ip + ihl;
	if (off == 0) {
		frag.active =
		    len >= UDP_HLEN && get16(udp + 2) == my_port && get16(udp + 4) >= UDP_HLEN;
		frag.id = id;
		frag.next = len;
		frag.total = frag.active ? get16(udp + 4) : 0;
	} else if (frag.active && id == frag.id && off == frag.next) {
		frag.next += len;
	} else {
		frag.active = false;
	}
	if (fo & 0x2000 || !frag.active)
		return -1;
	frag.active = false;
	return frag.next == frag.total ? (long)frag.total - UDP_HLEN : -1;
}

int main(int argc, char **argv)
{
	const char *tap = NULL, *mac = NULL, *ip = NULL, *ready = NULL;
	long port = 9000, secs = 2, wait_secs = 30;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage_error("missing value for", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--tap"))
			tap = v;
		else if (!strcmp(a, "--mac"))
			mac = v;
		else if (!strcmp(a, "--ip"))
			ip = v;
		else if (!strcmp(a, "--port"))
			port = parse_long(v, 1, 65535, a);
		else if (!strcmp(a, "--secs"))
			secs = parse_long(v, 1, 3600, a);
		else if (!strcmp(a, "--wait-secs"))
			wait_secs = parse_long(v, 1, 3600, a);
		else if (!strcmp(a, "--ready-file"))
			ready = v;
		else
			usage_error("unknown option", a);
	}
	if (!tap || !mac || !ip)
		usage_error("--tap, --mac and --ip are required", NULL);
	if (strlen(tap) >= IFNAMSIZ)
		usage_error("tap name too long", tap);
	parse_mac(mac, my_mac);
	my_ip = parse_ip(ip, "--ip");
	my_port = (unsigned)port;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	int fd = tap_open(tap, O_NONBLOCK, 0);
	if (ioctl(fd, TUNSETOFFLOAD, 0) < 0) // plain frames, IP fragments above the MTU
		die("TUNSETOFFLOAD");
	if (ready) {
		FILE *f = fopen(ready, "w");
		if (!f)
			die("ready file");
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}

	static uint8_t buf[VNET_HLEN + 65536];
	unsigned long long msgs = 0, bytes = 0, frames = 0;
	unsigned since_check = 0;
	double start = now_s(), first = 0, t = start;
	while (!stop_flag) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				die("read from the tap");
			struct pollfd p = {.fd = fd, .events = POLLIN};
			if (poll(&p, 1, 100) < 0 &&
			    errno != EINTR) // 100 ms: to see the clock and signals
				die("poll");
			since_check = CHECK_GAP;
		} else {
			frames++;
			since_check++;
			if ((size_t)n >= VNET_HLEN + ETH_HLEN) {
				const uint8_t *eth = buf + VNET_HLEN;
				size_t len = (size_t)n - VNET_HLEN;
				unsigned type = get16(eth + 12);
				long payload = type == 0x0800 ? udp_datagram(eth, len) : -1;
				if (type == 0x0806)
					arp(fd, eth, len);
				if (payload >= 0) {
					if (!msgs++)
						first = now_s();
					bytes += (unsigned long long)payload;
				}
			}
		}
		if (since_check < CHECK_GAP)
			continue;
		since_check = 0;
		t = now_s();
		if (msgs ? t - first >= (double)secs : t - start >= (double)wait_secs)
			break;
	}
	close(fd);
	if (!msgs) {
		fprintf(stderr, "tapread: no datagram to %s port %ld arrived\n", ip, port);
		return 1;
	}
	double el = t - first;
	printf("tapread: msgs=%llu bytes=%llu secs=%.3f mbps=%.2f pps=%.0f frames=%llu\n", msgs,
	       bytes, el, el > 0 ? (double)bytes * 8 / el / 1e6 : 0, el > 0 ? (double)msgs / el : 0,
	       frames);
	return 0;
}
