// tapsend: the ceiling of a tap-backed VMM's guest-to-host path on this host.
//
//   tapsend --tap NAME --mac MAC --src IP --dest IP [--port P] [--size S] [--secs N] [--napi]
//           [--uring | --uring-linked]
//
// Writes the frames the probe's udp_stream sends (Ethernet, IPv4 fragmented at a 1500-byte
// MTU like the probe, UDP with its checksum, behind a zeroed 12-byte virtio-net header) into
// the tap with one write() per frame, as a VMM's I/O thread does, for --secs seconds. No
// guest, no virtqueue: what the host kernel's tap -> IP -> UDP path alone lets a VMM reach,
// and (through netbench's VMM CPU column) what that path costs per packet. --napi attaches
// with IFF_NAPI: each write() queues the frame for the tap queue's NAPI poll (GRO) instead of
// handing it straight to the stack, the candidate a VMM could take up (netbench's tapwrite:napi).
// --uring hands the writes to io_uring, 64 frames per io_uring_enter (netbench's tapwrite:uring):
// what a VMM would gain by submitting a batch in one system call instead of a write() each.
// --uring-linked submits them as minivmm's tx-uring=on does (netbench's tapwrite:uring-linked):
// one linked chain of WRITEVs on the tap (not a registered file), in a SINGLE_ISSUER and
// DEFER_TASKRUN ring, so what keeps the frames in order can be priced against plain --uring.
// Output: "tapsend: msgs=N frames=N secs=S pps=N size=S mode=write|napi|uring|uring-linked" on
// stdout; exit 1 on an error, 2 on a usage error.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOOL_NAME "tapsend"
#define TOOL_USAGE                                                                                 \
	"usage: tapsend --tap NAME --mac MAC --src IP --dest IP [--port P] [--size S] "            \
	"[--secs N] [--napi] [--uring | --uring-linked]"
#include "tool.h"
#include "tap.h"

#define ETH_HLEN     14
#define IP_HLEN	     20
#define UDP_HLEN     8
#define MTU	     1500
#define FRAG_PAYLOAD ((MTU - IP_HLEN) & ~7u)
#define MAX_PAYLOAD  (65535 - IP_HLEN - UDP_HLEN)
#define MAX_FRAGS    ((UDP_HLEN + MAX_PAYLOAD + FRAG_PAYLOAD - 1) / FRAG_PAYLOAD)
#define FRAME_MAX    (VNET_HLEN + ETH_HLEN + MTU)

// One's-complement sum, folded by csum_fold.
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (; n > 1; n -= 2, p += 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (n)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

// The tap's own MAC: the destination the host kernel accepts as its own.
static void tap_mac(const char *name, uint8_t mac[6])
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(s, SIOCGIFHWADDR, &ifr) < 0)
		die("SIOCGIFHWADDR");
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
}

struct datagram {
	uint8_t frame[MAX_FRAGS][FRAME_MAX];
	size_t len[MAX_FRAGS];
	unsigned nfrag;
};

// The frames of one UDP datagram of `size` bytes (payload bytes 0, 1, 2 ... like the probe's).
static void build(struct datagram *d, const uint8_t src_mac[6], const uint8_t dst_mac[6],
		  uint32_t src, uint32_t dst, int port, unsigned size)
{
	static uint8_t udp[UDP_HLEN + MAX_PAYLOAD];
	unsigned total = UDP_HLEN + size;
	put16(udp, (uint16_t)port);
	put16(udp + 2, (uint16_t)port);
	put16(udp + 4, (uint16_t)total);
	put16(udp + 6, 0);
	for (unsigned i = 0; i < size; i++)
		udp[UDP_HLEN + i] = (uint8_t)i;
	uint8_t pseudo[12];
	memcpy(pseudo, &src, 4);
	memcpy(pseudo + 4, &dst, 4);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP;
	put16(pseudo + 10, (uint16_t)total);
	uint16_t c = csum_fold(csum_add(csum_add(0, pseudo, 12), udp, total));
	put16(udp + 6, c ? c : 0xffff);

	d->nfrag = 0;
	for (unsigned off = 0; off < total; off += FRAG_PAYLOAD, d->nfrag++) {
		unsigned n = total - off < FRAG_PAYLOAD ? total - off : FRAG_PAYLOAD;
		uint8_t *f = d->frame[d->nfrag];
		memset(f, 0, VNET_HLEN);
		uint8_t *eth = f + VNET_HLEN;
		memcpy(eth, dst_mac, 6);
		memcpy(eth + 6, src_mac, 6);
		put16(eth + 12, 0x0800);
		uint8_t *ip = eth + ETH_HLEN;
		ip[0] = 0x45;
		ip[1] = 0;
		put16(ip + 2, (uint16_t)(IP_HLEN + n));
		put16(ip + 4, 1);
		put16(ip + 6, (uint16_t)(off / 8 | (off + n < total ? 0x2000 : 0)));
		ip[8] = 64;
		ip[9] = IPPROTO_UDP;
		put16(ip + 10, 0);
		memcpy(ip + 12, &src, 4);
		memcpy(ip + 16, &dst, 4);
		put16(ip + 10, csum_fold(csum_add(0, ip, IP_HLEN)));
		memcpy(ip + IP_HLEN, udp + off, n);
		size_t len = ETH_HLEN + IP_HLEN + n;
		if (len < 60) { // the Ethernet minimum, as the probe pads
			memset(eth + len, 0, 60 - len);
			len = 60;
		}
		d->len[d->nfrag] = VNET_HLEN + len;
	}
}

// A new IPv4 ID for every fragment of the datagram (the header checksum follows).
static void next_id(struct datagram *d)
{
	for (unsigned f = 0; f < d->nfrag; f++) {
		uint8_t *ip = d->frame[f] + VNET_HLEN + ETH_HLEN;
		put16(ip + 4, (uint16_t)((ip[4] << 8 | ip[5]) + 1));
		put16(ip + 10, 0);
		put16(ip + 10, csum_fold(csum_add(0, ip, IP_HLEN)));
	}
}

// n writes of one frame through io_uring: one io_uring_enter submits them and waits for all.
// linked: WRITEVs, each linked to the next, as minivmm's tap backend submits.
static void write_batch(struct io_uring *ring, int fd, const uint8_t *frame, size_t len, unsigned n,
			bool linked)
{
	static struct iovec iov;
	iov = (struct iovec){(void *)frame, len};
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		if (!linked) {
			io_uring_prep_write(sqe, fd, frame, (unsigned)len, 0);
			continue;
		}
		io_uring_prep_writev(sqe, fd, &iov, 1, 0);
		sqe->flags = i + 1 < n ? IOSQE_IO_LINK : 0;
	}
	int rc = io_uring_submit_and_wait(ring, n);
	if (rc < 0) {
		errno = -rc;
		die("io_uring_submit_and_wait");
	}
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		if (io_uring_wait_cqe(ring, &cqe) < 0 || cqe->res != (int)len) {
			errno = cqe && cqe->res < 0 ? -cqe->res : EIO;
			die("io_uring write to the tap");
		}
		io_uring_cqe_seen(ring, cqe);
	}
}

int main(int argc, char **argv)
{
	const char *tap = NULL, *mac = NULL, *src = NULL, *dest = NULL;
	long port = 9000, size = 1024, secs = 2;
	bool napi = false, uring = false, linked = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--napi") || !strcmp(a, "--uring")) {
			*(a[2] == 'n' ? &napi : &uring) = true;
			continue;
		}
		if (!strcmp(a, "--uring-linked")) {
			uring = linked = true;
			continue;
		}
		if (i + 1 >= argc)
			usage_error("missing value for", a);
		const char *v = argv[++i];
		if (!strcmp(a, "--tap"))
			tap = v;
		else if (!strcmp(a, "--mac"))
			mac = v;
		else if (!strcmp(a, "--src"))
			src = v;
		else if (!strcmp(a, "--dest"))
			dest = v;
		else if (!strcmp(a, "--port"))
			port = parse_long(v, 1, 65535, a);
		else if (!strcmp(a, "--size"))
			size = parse_long(v, 1, MAX_PAYLOAD, a);
		else if (!strcmp(a, "--secs"))
			secs = parse_long(v, 1, 3600, a);
		else
			usage_error("unknown option", a);
	}
	if (!tap || !mac || !src || !dest)
		usage_error("--tap, --mac, --src and --dest are required", NULL);
	if (strlen(tap) >= IFNAMSIZ)
		usage_error("tap name too long", tap);
	uint8_t src_mac[6], dst_mac[6];
	parse_mac(mac, src_mac);
	uint32_t src_ip = parse_ip(src, "--src"), dst_ip = parse_ip(dest, "--dest");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	int fd = tap_open(tap, 0, napi ? IFF_NAPI : 0);
	tap_mac(tap, dst_mac);
	static struct datagram d;
	build(&d, src_mac, dst_mac, src_ip, dst_ip, (int)port, (unsigned)size);

	struct io_uring ring;
	if (uring) {
		unsigned flags =
		    linked ? IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN : 0;
		int rc = io_uring_queue_init(64, &ring, flags);
		if (rc < 0) {
			errno = -rc;
			die("io_uring_queue_init");
		}
	}
	unsigned long long msgs = 0;
	double start = now_s(), t = start;
	while (!stop_flag && t - start < (double)secs) {
		if (uring && d.nfrag == 1) { // the same frame: a batch's worth in one system call
			write_batch(&ring, fd, d.frame[0], d.len[0], 64, linked);
			msgs += 64;
			t = now_s();
			continue;
		}
		for (int k = 0; k < 64; k++, msgs++) {
			if (d.nfrag > 1) // fragments of different datagrams must not share an ID
				next_id(&d);
			for (unsigned f = 0; f < d.nfrag; f++) {
				if (uring)
					write_batch(&ring, fd, d.frame[f], d.len[f], 1, linked);
				else if (write(fd, d.frame[f], d.len[f]) != (ssize_t)d.len[f])
					die("write to the tap");
			}
		}
		t = now_s();
	}
	double el = t - start;
	printf("tapsend: msgs=%llu frames=%llu secs=%.3f pps=%.0f size=%ld mode=%s\n", msgs,
	       msgs * d.nfrag, el, el > 0 ? (double)msgs / el : 0, size,
	       linked  ? "uring-linked"
	       : uring ? "uring"
	       : napi  ? "napi"
		       : "write");
	close(fd);
	return 0;
}
