/* The user-mode backend's gate (devices/backends/slirp_gate.c) on crafted frames: which guest
 * frames reach libslirp with host-loopback=off (the default), restrict=on and at the socket
 * cap, and the RST that refuses a SYN. (test_slirp.c runs the same against libslirp.) */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <string.h>

#include "devices/backends/slirp.h"
#include "devices/backends/slirp_gate.h"
#include "devices/virtio/net.h"
#include "vmm/kinds/kinds.h"
#include "vmm/cli/options.h"

#define TCP  6
#define UDP  17
#define ICMP 1

static uint8_t frame[128];
static size_t frame_len;

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A guest frame to dst: proto, ports (or ICMP type in sport), TCP flags, fragment offset. */
static void make(uint8_t proto, const char *dst, uint16_t sport, uint16_t dport, uint8_t flags,
		 uint16_t frag)
{
	memset(frame, 0, sizeof(frame));
	memcpy(frame, "\x52\x55\x0a\x00\x02\x02\x52\x54\x00\x12\x34\x56\x08\x00", 14);
	uint8_t *ip = frame + 14, *l4 = ip + 20;
	size_t l4len = proto == TCP ? 20 : 8;
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(20 + l4len));
	put16(ip + 6, frag);
	ip[8] = 64;
	ip[9] = proto;
	cr_assert_eq(inet_pton(AF_INET, "10.0.2.15", ip + 12), 1);
	cr_assert_eq(inet_pton(AF_INET, dst, ip + 16), 1);
	if (proto == ICMP) {
		l4[0] = (uint8_t)sport;
	} else {
		put16(l4, sport);
		put16(l4 + 2, dport);
	}
	if (proto == TCP) {
		put16(l4 + 4, 0x1234);
		l4[12] = 5 << 4;
		l4[13] = flags;
	}
	frame_len = 14 + 20 + l4len;
}

static enum slirp_gate_verdict check(struct slirp_gate *g)
{
	return slirp_gate_check(g, frame, frame_len);
}

static struct slirp_gate gate;

static void fini(void)
{
	slirp_gate_destroy(&gate);
}

TestSuite(slirp_gate, .fini = fini);

Test(slirp_gate, host_loopback_off)
{
	slirp_gate_init(&gate, &(struct slirp_gate_config){0});
	make(TCP, "10.0.2.2", 40000, 22, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_REFUSE, "a SYN to 10.0.2.2");
	cr_assert_eq(gate.last_reason, SLIRP_GATE_LOOPBACK);
	make(TCP, "10.0.2.2", 40000, 22, 0x12, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "a SYN-ACK (a forward's connection)");
	make(TCP, "10.0.2.2", 40000, 22, 0x10, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "a segment of a connection");
	make(TCP, "10.0.2.3", 40000, 53, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "DNS over TCP");
	make(TCP, "10.0.2.3", 40000, 80, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_REFUSE, "the DNS address's other ports");
	make(TCP, "192.0.2.1", 40000, 80, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "beyond the host");
	make(UDP, "10.0.2.3", 40000, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "DNS");
	make(UDP, "10.0.2.77", 40000, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP, "another alias of the loopback");
	make(UDP, "255.255.255.255", 68, 67, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "DHCP");
	make(ICMP, "10.0.2.2", 8, 0, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "a ping to the gateway (libslirp answers)");
	make(ICMP, "10.0.2.9", 8, 0, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP, "a ping to another alias");
	/* fragments: a first one must hold the header; later ones cannot change it */
	make(TCP, "10.0.2.2", 40000, 22, 0x02, 0x2000);
	cr_assert_eq(check(&gate), SLIRP_GATE_REFUSE, "a first fragment");
	make(UDP, "10.0.2.2", 40000, 22, 0, 0);
	frame_len = 14 + 20 + 4;
	put16(frame + 16, 24);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP, "a first fragment short of the UDP header");
	make(UDP, "10.0.2.2", 40000, 22, 0, 0x0001);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "a later fragment");
}

Test(slirp_gate, host_loopback_on_passes_all)
{
	slirp_gate_init(&gate, &(struct slirp_gate_config){.host_loopback = true});
	make(TCP, "10.0.2.2", 40000, 22, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS);
	make(UDP, "10.0.2.77", 40000, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS);
}

/* A datagram from a held-back address to the guest may be answered, from that guest port to
 * that address and port only. */
Test(slirp_gate, answers_to_a_forwards_client)
{
	slirp_gate_init(&gate, &(struct slirp_gate_config){0});
	make(UDP, "10.0.2.15", 5555, 9000, 0, 0); /* from slirp: swap the addresses */
	memcpy(frame + 14 + 16, (uint8_t[]){10, 0, 2, 15}, 4);
	memcpy(frame + 14 + 12, (uint8_t[]){10, 0, 2, 2}, 4);
	slirp_gate_to_guest(&gate, frame, frame_len);
	make(UDP, "10.0.2.2", 9000, 5555, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS);
	make(UDP, "10.0.2.2", 9000, 5556, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP);
	make(UDP, "10.0.2.2", 9001, 5555, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP);
}

Test(slirp_gate, restrict_holds_every_destination)
{
	slirp_gate_init(&gate,
			&(struct slirp_gate_config){.restrict_net = true, .host_loopback = true});
	make(TCP, "192.0.2.1", 40000, 80, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_REFUSE);
	cr_assert_eq(gate.last_reason, SLIRP_GATE_RESTRICT);
	make(UDP, "10.0.2.3", 40000, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP, "no DNS");
	make(UDP, "255.255.255.255", 68, 67, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "DHCP");
	make(TCP, "192.0.2.1", 40000, 80, 0x10, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "a forward's connection");
}

/* At the cap: nothing that opens a socket; a UDP flow with one goes on; a close makes room. */
Test(slirp_gate, socket_cap)
{
	slirp_gate_init(&gate, &(struct slirp_gate_config){.host_loopback = true,
							   .max_sockets = 2,
							   .udp_forward_ports = {7000},
							   .nr_udp_forward_ports = 1});
	make(UDP, "192.0.2.1", 40000, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS);
	slirp_gate_socket_opened(&gate, 10); /* libslirp opens the flow's socket */
	slirp_gate_input_done(&gate);
	slirp_gate_socket_opened(&gate, 10); /* seen in the poll set: counted once */
	slirp_gate_socket_opened(&gate, 11); /* a connection */
	cr_assert_eq(gate.open, 2);
	make(UDP, "192.0.2.1", 40001, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP, "a new flow");
	cr_assert_eq(gate.last_reason, SLIRP_GATE_CAP);
	make(TCP, "192.0.2.1", 40002, 80, 0x02, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_REFUSE, "a new connection");
	make(ICMP, "192.0.2.1", 8, 0, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_DROP, "a ping (a socket each)");
	make(UDP, "192.0.2.9", 40000, 9, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "the flow that has its socket");
	make(UDP, "10.0.2.2", 7000, 5555, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "from a forwarded port (its listener)");
	make(TCP, "192.0.2.1", 40002, 80, 0x10, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "a segment of a connection");
	slirp_gate_socket_closed(&gate, 11);
	slirp_gate_socket_closed(&gate, 11);
	cr_assert_eq(gate.open, 1);
	make(UDP, "192.0.2.1", 40001, 53, 0, 0);
	cr_assert_eq(check(&gate), SLIRP_GATE_PASS, "room again");
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static uint32_t add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	return sum;
}

/* The RST: to the guest's MAC and port, from the address it called, ACK of its SYN, and both
 * checksums right (a guest drops a RST whose checksum is wrong). */
Test(slirp_gate, rst_answers_the_syn)
{
	make(TCP, "10.0.2.2", 40000, 22, 0x02, 0);
	uint8_t rst[64];
	cr_assert_eq(slirp_gate_build_rst(frame, frame_len, rst, sizeof(rst)), 54);
	cr_assert_eq(memcmp(rst, frame + 6, 6), 0);
	cr_assert_eq(memcmp(rst + 6, frame, 6), 0);
	const uint8_t *ip = rst + 14, *tcp = ip + 20;
	cr_assert_eq(memcmp(ip + 12, frame + 14 + 16, 4), 0);
	cr_assert_eq(memcmp(ip + 16, frame + 14 + 12, 4), 0);
	cr_assert_eq(fold(add(0, ip, 20)), 0xffff, "IP checksum");
	uint8_t pseudo[12] = {0};
	memcpy(pseudo, ip + 12, 8);
	pseudo[9] = TCP;
	pseudo[11] = 20;
	cr_assert_eq(fold(add(add(0, pseudo, 12), tcp, 20)), 0xffff, "TCP checksum");
	cr_assert_eq(tcp[0] << 8 | tcp[1], 22);
	cr_assert_eq(tcp[2] << 8 | tcp[3], 40000);
	cr_assert_eq(tcp[13], 0x14, "RST|ACK");
	cr_assert_eq(tcp[8] << 24 | tcp[9] << 16 | tcp[10] << 8 | tcp[11], 0x12340000 + 1);
	cr_assert_eq(slirp_gate_build_rst(frame, frame_len, rst, 40), 0, "no room");
}

/* --net user's options: the loopback is off and the cap 512 unless given; they need the user
 * backend. */
static int parse_net(const char *spec, struct net_options *cfg, char *err, size_t errlen)
{
	struct option_list opts;
	if (options_split(spec, "--net", &opts, err, errlen))
		return -1;
	return net_options_parse(&opts, cfg, err, errlen);
}

Test(net_user_options, defaults_and_values)
{
	struct net_options cfg;
	char err[256];
	cr_assert_eq(parse_net("user", &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert(!cfg.host_loopback && !cfg.restrict_net);
	cr_assert_eq(cfg.max_sockets, SLIRP_DEFAULT_MAX_SOCKETS);
	cr_assert_eq(
	    parse_net("user,host-loopback=on,restrict=on,max-sockets=0", &cfg, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert(cfg.host_loopback && cfg.restrict_net);
	cr_assert_eq(cfg.max_sockets, 0);
	const char *bad[] = {"tap=t0,host-loopback=on", "tap=t0,restrict=on",
			     "tap=t0,max-sockets=9", "user,max-sockets=-1",
			     "user,host-loopback=maybe"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse_net(bad[i], &cfg, err, sizeof(err)), -1, "accepted %s", bad[i]);
	cr_assert_eq(parse_net("tap=t0,max-sockets=9", &cfg, err, sizeof(err)), -1);
	cr_assert(strstr(err, "max-sockets= needs the user backend"), "%s", err);
}
