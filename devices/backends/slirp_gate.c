#include "slirp_gate.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"

/* The user-mode network's addresses (slirp.c gives libslirp the same). */
#define NET_ADDR      0x0a000200u /* 10.0.2.0/24 */
#define NET_MASK      0xffffff00u
#define HOST_ADDR     0x0a000202u /* the gateway, libslirp itself */
#define DNS_ADDR      0x0a000203u
#define BROADCAST     0xffffffffu
#define ETH_HLEN      14
#define IPPROTO_ICMP_ 1
#define IPPROTO_TCP_  6
#define IPPROTO_UDP_  17
#define TH_SYN	      0x02
#define TH_RST	      0x04
#define TH_ACK	      0x10
#define ICMP_ECHO     8

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* What of a guest frame the gate looks at. */
struct frame {
	uint8_t proto;
	uint32_t src, dst;
	uint16_t sport, dport;
	uint8_t tcp_flags, icmp_type;
	bool first;    /* fragment offset 0: the transport header is in it */
	bool complete; /* ... and whole, as far as the gate reads it */
};

/* False for a frame libslirp takes for no IPv4 packet it would act on (not IPv4, or an IPv4
 * header it drops as bad): those pass. The offsets are libslirp's: IHL, then the total length
 * bounds what follows the header. */
static bool parse(const uint8_t *f, size_t len, struct frame *p)
{
	memset(p, 0, sizeof(*p));
	if (len < ETH_HLEN + 20 || get16(f + 12) != 0x0800)
		return false;
	const uint8_t *ip = f + ETH_HLEN;
	size_t hl = (size_t)(ip[0] & 0xf) * 4, total = get16(ip + 2);
	if (ip[0] >> 4 != 4 || hl < 20 || ETH_HLEN + hl > len || total < hl)
		return false;
	p->proto = ip[9];
	p->src = get32(ip + 12);
	p->dst = get32(ip + 16);
	p->first = (get16(ip + 6) & 0x1fff) == 0;
	size_t avail = len - ETH_HLEN - hl;
	if (total - hl < avail)
		avail = total - hl;
	const uint8_t *l4 = ip + hl;
	switch (p->proto) {
	case IPPROTO_TCP_:
		p->complete = avail >= 14;
		if (p->complete)
			p->tcp_flags = l4[13];
		break;
	case IPPROTO_UDP_:
		p->complete = avail >= 8;
		break;
	case IPPROTO_ICMP_:
		p->complete = avail >= 1;
		if (p->complete)
			p->icmp_type = l4[0];
		break;
	default:
		p->complete = true;
	}
	if ((p->proto == IPPROTO_TCP_ || p->proto == IPPROTO_UDP_) && p->complete) {
		p->sport = get16(l4);
		p->dport = get16(l4 + 2);
	}
	return true;
}

/* libslirp answers these itself, with no host socket: DHCP and TFTP on the gateway (or DHCP's
 * broadcast), pings to the gateway. */
static bool internal(const struct frame *p)
{
	if (p->proto == IPPROTO_UDP_)
		return (p->dport == 67 && (p->dst == HOST_ADDR || p->dst == BROADCAST)) ||
		       (p->dport == 69 && p->dst == HOST_ADDR);
	return p->proto == IPPROTO_ICMP_ && p->icmp_type == ICMP_ECHO && p->dst == HOST_ADDR;
}

static bool is_syn(const struct frame *p)
{
	return p->proto == IPPROTO_TCP_ && (p->tcp_flags & (TH_SYN | TH_ACK)) == TH_SYN;
}

static struct slirp_gate_reply *reply_slot(struct slirp_gate *g, uint32_t peer, uint16_t peer_port,
					   uint16_t guest_port)
{
	uint32_t h = peer * 2654435761u ^ (uint32_t)peer_port * 40503u ^ guest_port;
	return &g->replies[(h ^ h >> 16) % SLIRP_GATE_REPLIES];
}

static bool reply_allowed(struct slirp_gate *g, const struct frame *p)
{
	const struct slirp_gate_reply *r = reply_slot(g, p->dst, p->dport, p->sport);
	return r->peer == p->dst && r->peer && r->peer_port == p->dport &&
	       r->guest_port == p->sport;
}

/* A destination the guest may not open anything to: is the frame still fine? */
static enum slirp_gate_verdict held_destination(struct slirp_gate *g, const struct frame *p)
{
	bool dns = !g->cfg.restrict_net && p->dst == DNS_ADDR && p->dport == 53;
	switch (p->proto) {
	case IPPROTO_UDP_:
		return dns || reply_allowed(g, p) ? SLIRP_GATE_PASS : SLIRP_GATE_DROP;
	case IPPROTO_TCP_:
		return !is_syn(p) || dns ? SLIRP_GATE_PASS : SLIRP_GATE_REFUSE;
	case IPPROTO_ICMP_:
		return p->icmp_type == ICMP_ECHO ? SLIRP_GATE_DROP : SLIRP_GATE_PASS;
	default:
		return SLIRP_GATE_PASS; /* libslirp drops other protocols */
	}
}

static bool udp_socket_open(const struct slirp_gate *g, uint32_t addr, uint16_t port)
{
	if (addr == (NET_ADDR | 15))
		for (int i = 0; i < g->cfg.nr_udp_forward_ports; i++)
			if (g->cfg.udp_forward_ports[i] == port)
				return true;
	for (int fd = 0; fd < g->nfds; fd++)
		if (g->fds[fd].open && g->fds[fd].udp && g->fds[fd].addr == addr &&
		    g->fds[fd].port == port)
			return true;
	return false;
}

/* At the cap: would libslirp open a socket for this frame? */
static bool opens_socket(const struct slirp_gate *g, const struct frame *p)
{
	switch (p->proto) {
	case IPPROTO_TCP_:
		return is_syn(p);
	case IPPROTO_UDP_:
		return !udp_socket_open(g, p->src, p->sport);
	case IPPROTO_ICMP_:
		return p->icmp_type == ICMP_ECHO;
	default:
		return false;
	}
}

static enum slirp_gate_verdict hold(struct slirp_gate *g, enum slirp_gate_verdict v,
				    enum slirp_gate_reason why)
{
	g->last_reason = why;
	return v;
}

void slirp_gate_init(struct slirp_gate *g, const struct slirp_gate_config *cfg)
{
	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
}

void slirp_gate_destroy(struct slirp_gate *g)
{
	free(g->fds);
	g->fds = NULL;
	g->nfds = 0;
}

enum slirp_gate_verdict slirp_gate_check(struct slirp_gate *g, const uint8_t *frame, size_t len)
{
	struct frame p;
	g->pending_udp = false;
	g->last_reason = SLIRP_GATE_NONE;
	if (!parse(frame, len, &p) || !p.first || internal(&p))
		return SLIRP_GATE_PASS;
	bool held =
	    g->cfg.restrict_net || (!g->cfg.host_loopback && (p.dst & NET_MASK) == NET_ADDR);
	enum slirp_gate_reason why =
	    g->cfg.restrict_net ? SLIRP_GATE_RESTRICT : SLIRP_GATE_LOOPBACK;
	bool at_cap = g->cfg.max_sockets && g->open >= g->cfg.max_sockets;
	if (!p.complete)
		return held || at_cap ? hold(g, SLIRP_GATE_DROP, held ? why : SLIRP_GATE_CAP)
				      : SLIRP_GATE_PASS;
	if (held) {
		enum slirp_gate_verdict v = held_destination(g, &p);
		if (v != SLIRP_GATE_PASS)
			return hold(g, v, why);
	}
	if (at_cap && opens_socket(g, &p))
		return hold(g, is_syn(&p) ? SLIRP_GATE_REFUSE : SLIRP_GATE_DROP, SLIRP_GATE_CAP);
	if (p.proto == IPPROTO_UDP_) {
		g->pending_udp = true;
		g->pending_addr = p.src;
		g->pending_port = p.sport;
	}
	return SLIRP_GATE_PASS;
}

void slirp_gate_input_done(struct slirp_gate *g)
{
	g->pending_udp = false;
}

void slirp_gate_to_guest(struct slirp_gate *g, const uint8_t *frame, size_t len)
{
	struct frame p;
	if (!parse(frame, len, &p) || p.proto != IPPROTO_UDP_ || !p.first || !p.complete)
		return;
	/* Only what the gate holds back needs remembering: the source as the guest sees it. */
	if (!g->cfg.restrict_net && (g->cfg.host_loopback || (p.src & NET_MASK) != NET_ADDR))
		return;
	*reply_slot(g, p.src, p.sport, p.dport) =
	    (struct slirp_gate_reply){.peer = p.src, .peer_port = p.sport, .guest_port = p.dport};
}

void slirp_gate_socket_opened(struct slirp_gate *g, int fd)
{
	if (fd < 0)
		return;
	if (fd >= g->nfds) {
		int n = g->nfds ? g->nfds : 64;
		while (n <= fd && n <= (1 << 24))
			n *= 2;
		struct slirp_gate_fd *t = n > fd ? realloc(g->fds, (size_t)n * sizeof(*t)) : NULL;
		if (!t) {
			/* Counted all the same: a socket the cap cannot see would not be capped. */
			if (!g->table_full_logged)
				log_error("user-mode network: out of memory for its socket table");
			g->table_full_logged = true;
			g->open++;
			return;
		}
		memset(t + g->nfds, 0, (size_t)(n - g->nfds) * sizeof(*t));
		g->fds = t;
		g->nfds = n;
	}
	struct slirp_gate_fd *s = &g->fds[fd];
	if (s->open)
		return;
	*s = (struct slirp_gate_fd){
	    .open = true, .udp = g->pending_udp, .addr = g->pending_addr, .port = g->pending_port};
	g->open++;
}

void slirp_gate_socket_closed(struct slirp_gate *g, int fd)
{
	if (fd < 0 || fd >= g->nfds || !g->fds[fd].open)
		return;
	g->fds[fd].open = false;
	g->open--;
}

static uint16_t csum(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

size_t slirp_gate_build_rst(const uint8_t *syn, size_t len, uint8_t *out, size_t outlen)
{
	struct frame p;
	enum { RST_LEN = ETH_HLEN + 20 + 20 };
	if (outlen < RST_LEN || !parse(syn, len, &p) || p.proto != IPPROTO_TCP_ || !p.complete)
		return 0;
	const uint8_t *ip = syn + ETH_HLEN, *tcp = ip + (ip[0] & 0xf) * 4;
	size_t tcp_hl = (size_t)(tcp[12] >> 4) * 4;
	size_t total = get16(ip + 2), hl = (size_t)(ip[0] & 0xf) * 4;
	/* RFC 793's reset for a segment in CLOSED: ACK of SEQ + SYN + data. */
	uint32_t data = total > hl + tcp_hl ? (uint32_t)(total - hl - tcp_hl) : 0;
	memset(out, 0, RST_LEN);
	memcpy(out, syn + 6, 6); /* to the guest, from the MAC it addressed */
	memcpy(out + 6, syn, 6);
	put16(out + 12, 0x0800);
	uint8_t *rip = out + ETH_HLEN, *rtcp = rip + 20;
	rip[0] = 0x45;
	put16(rip + 2, 40);
	rip[8] = 64;
	rip[9] = IPPROTO_TCP_;
	put32(rip + 12, p.dst);
	put32(rip + 16, p.src);
	put16(rip + 10, csum(0, rip, 20));
	put16(rtcp, p.dport);
	put16(rtcp + 2, p.sport);
	put32(rtcp + 8, get32(tcp + 4) + 1 + data);
	rtcp[12] = 5 << 4;
	rtcp[13] = TH_RST | TH_ACK;
	uint8_t pseudo[12] = {0};
	memcpy(pseudo, rip + 12, 8);
	pseudo[9] = IPPROTO_TCP_;
	put16(pseudo + 10, 20);
	uint32_t sum = 0;
	for (int i = 0; i < 12; i += 2)
		sum += get16(pseudo + i);
	put16(rtcp + 16, csum(sum, rtcp, 20));
	return RST_LEN;
}
