/*
 * The probe's TCP (firmware/net/tcp.c) on the host, with a fake clock: either two stacks wired
 * through a fake link that can drop, duplicate or reorder segments, or one stack against
 * segments crafted here. Every segment a stack sends is checked on the way out (checksum,
 * and data never past the right edge the receiver last advertised).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "firmware/net/tcp.h"

#define IP_A	0x0100000au
#define IP_B	0x0200000au
#define PORT_B	80
#define PORT_P	5555 /* the crafted peer's port */
#define QMAX	4096
#define LOGMAX	8192
#define SEG_MAX 1600
/* Modular sequence comparison of the tests' own (not tcp.h's, which a mutant may break). */
#define AFTER(a, b) ((int32_t)((uint32_t)(a) - (uint32_t)(b)) > 0)

struct pkt {
	int from; /* 0: A, 1: B */
	uint32_t src, dst;
	unsigned len;
	uint8_t data[SEG_MAX];
};

/* What a stack sent, decoded. */
struct seginfo {
	int from;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	unsigned dlen;
	bool has_mss, has_ws;
	uint16_t mss;
	uint8_t ws;
};

enum action { DELIVER, DROP, DUPLICATE, HOLD };

static struct tcp_stack A, B;
static int ctx_a = 0, ctx_b = 1;
static uint64_t fake_now;
static struct pkt q[QMAX];
static unsigned qhead, qtail;
static struct pkt held;
static bool have_held;
static struct seginfo seglog[LOGMAX];
static unsigned nlog;
static enum action (*filter)(const struct pkt *p, const struct seginfo *si);

/* The link monitor: the right edge each side advertised, and violations of the other's. */
static struct {
	bool syn_ws, edge_set;
	uint8_t ws;
	uint32_t edge;
} mon[2];
static unsigned window_violations;

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)(v >> 16));
	wr16(p + 2, (uint16_t)v);
}

static struct seginfo decode(int from, const uint8_t *s, unsigned len)
{
	struct seginfo si = {.from = from};
	unsigned hl = (s[12] >> 4) * 4u;
	si.seq = rd32(s + 4);
	si.ack = rd32(s + 8);
	si.flags = s[13];
	si.win = rd16(s + 14);
	si.dlen = len - hl;
	for (unsigned i = TCP_HLEN; i < hl;) {
		if (s[i] == 0)
			break;
		if (s[i] == 1) {
			i++;
			continue;
		}
		if (s[i] == 2) {
			si.has_mss = true;
			si.mss = rd16(s + i + 2);
		}
		if (s[i] == 3) {
			si.has_ws = true;
			si.ws = s[i + 2];
		}
		i += s[i + 1];
	}
	return si;
}

static void monitor(const struct seginfo *si)
{
	int x = si->from;
	if (si->flags & TCP_SYN) {
		mon[x].syn_ws = si->has_ws;
		mon[x].ws = si->ws;
	}
	if (si->flags & TCP_ACK) {
		bool scaled = !(si->flags & TCP_SYN) && mon[0].syn_ws && mon[1].syn_ws;
		uint32_t edge = si->ack + ((uint32_t)si->win << (scaled ? mon[x].ws : 0));
		if (!mon[x].edge_set || AFTER(edge, mon[x].edge))
			mon[x].edge = edge;
		mon[x].edge_set = true;
	}
	/* a one-byte segment may be a zero-window probe, which is past the edge on purpose */
	if (si->dlen > 1 && mon[!x].edge_set && AFTER(si->seq + si->dlen, mon[!x].edge))
		window_violations++;
}

static void out(void *ctx, uint32_t src, uint32_t dst, const void *seg, unsigned len,
		unsigned flags)
{
	int from = *(int *)ctx;
	cr_assert_eq(flags, 0);
	cr_assert(len >= TCP_HLEN && len <= SEG_MAX, "segment of %u bytes", len);
	cr_assert_eq(tcp_checksum(src, dst, seg, len), 0, "bad checksum on a sent segment");
	cr_assert_eq(src, from ? IP_B : IP_A);
	struct seginfo si = decode(from, seg, len);
	if (nlog < LOGMAX)
		seglog[nlog++] = si;
	if (getenv("TCP_TEST_TRACE")) /* a segment trace, for debugging a failure */
		fprintf(stderr, "t=%llu %c seq=%u ack=%u fl=%02x win=%u len=%u\n",
			(unsigned long long)fake_now, "AB"[from], si.seq, si.ack, si.flags, si.win,
			si.dlen);
	monitor(&si);
	cr_assert(qtail - qhead < QMAX, "link queue overflow");
	struct pkt *p = &q[qtail++ % QMAX];
	p->from = from;
	p->src = src;
	p->dst = dst;
	p->len = len;
	memcpy(p->data, seg, len);
}

static uint64_t clock_now(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static void reset_world(uint32_t isn_a, uint32_t isn_b)
{
	fake_now = 1000000;
	qhead = qtail = 0;
	nlog = 0;
	have_held = false;
	filter = 0;
	memset(mon, 0, sizeof(mon));
	window_violations = 0;
	tcp_init(&A, IP_A, out, clock_now, &ctx_a, isn_a);
	tcp_init(&B, IP_B, out, clock_now, &ctx_b, isn_b);
}

static void deliver(const struct pkt *p)
{
	tcp_input(p->from ? &A : &B, p->src, p->dst, p->data, p->len, 0);
}

/* Deliver everything in flight (and what that sends), through the filter. */
static void pump(void)
{
	unsigned guard = 0;
	while (qhead != qtail) {
		cr_assert(++guard < 1000000, "the link never goes quiet");
		struct pkt p = q[qhead++ % QMAX];
		struct seginfo si = decode(p.from, p.data, p.len);
		enum action a = filter ? filter(&p, &si) : DELIVER;
		if (a == DROP)
			continue;
		if (a == HOLD) { /* delivered after the next one: a reordering */
			cr_assert(!have_held);
			held = p;
			have_held = true;
			continue;
		}
		deliver(&p);
		if (a == DUPLICATE)
			deliver(&p);
		if (have_held) {
			have_held = false;
			deliver(&held);
		}
	}
	if (have_held) {
		have_held = false;
		deliver(&held);
	}
}

/* Let time pass in 1 ms steps, running both stacks' timers and the link. */
static void run_for(uint64_t us)
{
	uint64_t end = fake_now + us;
	pump();
	while (fake_now < end) {
		fake_now += 1000;
		tcp_timers(&A);
		tcp_timers(&B);
		pump();
	}
}

static uint8_t pattern(uint64_t i, unsigned salt)
{
	return (uint8_t)(i * 131 + (i >> 9) + salt * 17);
}

/* A connected to B's port 80, both established; returns A's id, B's in *idb. */
static int pair(uint32_t isn_a, uint32_t isn_b, int *idb)
{
	reset_world(isn_a, isn_b);
	cr_assert_eq(tcp_listen(&B, PORT_B), 0);
	int a = tcp_connect(&A, 0, IP_B, PORT_B);
	cr_assert(a >= 0);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_ESTABLISHED);
	*idb = tcp_accept(&B, PORT_B);
	cr_assert(*idb >= 0);
	cr_assert_eq(tcp_state(&B, *idb), TCP_ESTABLISHED);
	return a;
}

/*
 * Move total bytes each way that is asked (a_to_b, b_to_a), the programs writing and reading
 * in uneven chunks, until everything is read or max_us passes; every byte is checked.
 */
static void transfer(int a, int b, uint64_t a_to_b, uint64_t b_to_a, uint64_t max_us)
{
	static uint8_t buf[7001];
	uint64_t sent[2] = {0, 0}, got[2] = {0, 0}, want[2] = {a_to_b, b_to_a};
	struct tcp_stack *st[2] = {&A, &B};
	int id[2] = {a, b};
	uint64_t end = fake_now + max_us;
	unsigned step = 0;
	while ((got[0] < want[0] || got[1] < want[1]) && fake_now < end) {
		for (int d = 0; d < 2; d++) {
			unsigned chunk = 1 + (step * 2654435761u >> 7) % sizeof(buf);
			uint64_t n = want[d] - sent[d] < chunk ? want[d] - sent[d] : chunk;
			for (uint64_t i = 0; i < n; i++)
				buf[i] = pattern(sent[d] + i, (unsigned)d);
			if (n) {
				int k = tcp_send(st[d], id[d], buf, (unsigned)n);
				cr_assert(k >= 0);
				sent[d] += (unsigned)k;
			}
			pump();
			int r = tcp_recv(st[!d], id[!d], buf, chunk);
			cr_assert(r >= 0, "recv failed in direction %d", d);
			for (int i = 0; i < r; i++)
				cr_assert_eq(buf[i], pattern(got[d] + (unsigned)i, (unsigned)d),
					     "direction %d byte %llu", d,
					     (unsigned long long)(got[d] + (unsigned)i));
			got[d] += (unsigned)r;
		}
		step++;
		if (step % 4 == 0) {
			fake_now += 1000;
			tcp_timers(&A);
			tcp_timers(&B);
		}
	}
	cr_assert_eq(got[0], want[0], "A->B: %llu of %llu bytes", (unsigned long long)got[0],
		     (unsigned long long)want[0]);
	cr_assert_eq(got[1], want[1], "B->A: %llu of %llu bytes", (unsigned long long)got[1],
		     (unsigned long long)want[1]);
	cr_assert_eq(window_violations, 0, "data past the receiver's advertised window");
}

/* --- one stack (A) against a crafted peer (B's address, port PORT_P) --- */

/* B is not in these: what A sends goes nowhere. */
static enum action drop_all(const struct pkt *p, const struct seginfo *si)
{
	(void)p;
	(void)si;
	return DROP;
}

static void inject(uint32_t seq, uint32_t ack, uint8_t flags, uint16_t win, const uint8_t *opts,
		   unsigned olen, const void *data, unsigned dlen)
{
	static uint8_t s[70000];
	unsigned hl = TCP_HLEN + (olen + 3) / 4 * 4;
	memset(s, 0, hl);
	wr16(s, PORT_P);
	wr16(s + 2, PORT_B);
	wr32(s + 4, seq);
	wr32(s + 8, ack);
	s[12] = (uint8_t)(hl / 4 << 4);
	s[13] = flags;
	wr16(s + 14, win);
	if (olen)
		memcpy(s + TCP_HLEN, opts, olen);
	if (dlen)
		memcpy(s + hl, data, dlen);
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, hl + dlen));
	tcp_input(&A, IP_B, IP_A, s, hl + dlen, 0);
}

static const struct seginfo *last_sent(void)
{
	cr_assert(nlog > 0, "nothing was sent");
	return &seglog[nlog - 1];
}

#define PEER_ISN 0x10000000u
static const uint8_t peer_opts[] = {2, 4, 0x05, 0xb4, 1, 3, 3, 0}; /* MSS 1460, WS 0 */

/* A listening on PORT_B and established with the crafted peer: A's id. */
static int crafted_passive(uint32_t isn_a, const uint8_t *opts, unsigned olen)
{
	reset_world(isn_a, 0);
	cr_assert_eq(tcp_listen(&A, PORT_B), 0);
	filter = drop_all;
	inject(PEER_ISN, 0, TCP_SYN, 65535, opts, olen, 0, 0);
	const struct seginfo *sa = last_sent();
	cr_assert_eq(sa->flags, TCP_SYN | TCP_ACK);
	cr_assert_eq(sa->seq, isn_a);
	cr_assert_eq(sa->ack, PEER_ISN + 1);
	inject(PEER_ISN + 1, isn_a + 1, TCP_ACK, 65535, 0, 0, 0, 0);
	int id = tcp_accept(&A, PORT_B);
	cr_assert(id >= 0);
	cr_assert_eq(tcp_state(&A, id), TCP_ESTABLISHED);
	qhead = qtail = 0;
	return id;
}

Test(tcp, handshake_active_options)
{
	reset_world(1000, 0);
	filter = drop_all;
	int a = tcp_connect(&A, 4000, IP_B, PORT_P);
	cr_assert(a >= 0);
	const struct seginfo *syn = last_sent();
	cr_assert_eq(syn->flags, TCP_SYN);
	cr_assert_eq(syn->seq, 1000);
	cr_assert(syn->has_mss && syn->mss == TCP_MSS_DEFAULT);
	cr_assert(syn->has_ws && syn->ws == 1, "64 KiB ring: a shift of 1");
	/* The SYN-ACK (crafted with our ports swapped by hand). */
	static uint8_t s[64];
	memset(s, 0, sizeof(s));
	wr16(s, PORT_P);
	wr16(s + 2, 4000);
	wr32(s + 4, 777);
	wr32(s + 8, 1001);
	s[12] = 8 << 4;
	s[13] = TCP_SYN | TCP_ACK;
	wr16(s + 14, 5000);
	const uint8_t o[] = {1, 1, 2, 4, 0x03, 0xe8, 1, 3, 3, 3, 0, 0}; /* MSS 1000, WS 3 */
	memcpy(s + 20, o, sizeof(o));
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, 32));
	tcp_input(&A, IP_B, IP_A, s, 32, 0);
	cr_assert_eq(tcp_state(&A, a), TCP_ESTABLISHED);
	const struct seginfo *ack = last_sent();
	cr_assert_eq(ack->flags, TCP_ACK);
	cr_assert_eq(ack->seq, 1001);
	cr_assert_eq(ack->ack, 778);
	cr_assert_eq(A.conns[a].mss, 1000);
	cr_assert_eq(A.conns[a].snd_wscale, 3);
	cr_assert_eq(A.conns[a].snd_wnd, 5000, "the SYN-ACK's window is not scaled");
	/* a later window is scaled by the peer's shift */
	wr32(s + 4, 778);
	s[12] = 5 << 4;
	s[13] = TCP_ACK;
	wr16(s + 14, 100);
	wr16(s + 16, 0);
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, 20));
	tcp_input(&A, IP_B, IP_A, s, 20, 0);
	cr_assert_eq(A.conns[a].snd_wnd, 800);
	/* A sends at most 1000 bytes a segment */
	static uint8_t data[3000];
	wr16(s + 14, 1000);
	wr16(s + 16, 0);
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, 20));
	tcp_input(&A, IP_B, IP_A, s, 20, 0);
	cr_assert_eq(tcp_send(&A, a, data, sizeof(data)), (int)sizeof(data));
	cr_assert_eq(last_sent()->dlen, 1000);
}

Test(tcp, handshake_passive_options)
{
	const uint8_t o[] = {2, 4, 0x04, 0xb0, 1, 3, 3, 5}; /* MSS 1200, WS 5 */
	int id = crafted_passive(0x5000, o, sizeof(o));
	struct seginfo sa = seglog[0];
	cr_assert(sa.has_mss && sa.mss == TCP_MSS_DEFAULT);
	cr_assert(sa.has_ws && sa.ws == 1);
	cr_assert_eq(A.conns[id].mss, 1200);
	cr_assert_eq(A.conns[id].snd_wscale, 5);
	cr_assert_eq(A.conns[id].snd_wnd, 65535u << 5);
}

Test(tcp, handshake_passive_without_window_scale)
{
	const uint8_t o[] = {2, 4, 0x02, 0x00}; /* MSS 512 only */
	int id = crafted_passive(0x5000, o, sizeof(o));
	cr_assert(!seglog[0].has_ws, "no WS in the SYN-ACK to a SYN without it");
	cr_assert_eq(A.conns[id].mss, 512);
	cr_assert_eq(A.conns[id].rcv_wscale, 0);
	cr_assert_eq(A.conns[id].snd_wscale, 0);
	cr_assert_eq(seglog[0].win, 65535, "an unscaled window is capped at 65535");
}

Test(tcp, handshake_pair_and_no_listener_reset)
{
	int b;
	int a = pair(0x11111111, 0x22222222, &b);
	cr_assert_eq(A.conns[a].mss, TCP_MSS_DEFAULT);
	cr_assert_eq(A.conns[a].snd_wscale, 1);
	cr_assert_eq(B.conns[b].snd_wscale, 1);
	/* a SYN to a port nobody listens on is refused with RST+ACK */
	int c = tcp_connect(&A, 0, IP_B, 81);
	cr_assert(c >= 0);
	pump();
	cr_assert_eq(tcp_state(&A, c), TCP_CLOSED);
	cr_assert_eq(A.conns[c].err, TCP_ERR_REFUSED);
	cr_assert_eq(B.resets_sent, 1);
	cr_assert_eq(tcp_recv(&A, c, (uint8_t[4]){0}, 4), -1);
}

Test(tcp, transfer_every_byte_both_ways)
{
	int b;
	int a = pair(0x01234567, 0x89abcdef, &b);
	transfer(a, b, 1 << 20, 300000, 20000000);
	cr_assert_eq(A.conns[a].retransmits + B.conns[b].retransmits, 0);
}

Test(tcp, sender_respects_peer_window)
{
	int id = crafted_passive(0x7000, peer_opts, sizeof(peer_opts));
	uint32_t una = 0x7001;
	inject(PEER_ISN + 1, una, TCP_ACK, 3000, 0, 0, 0, 0); /* window 3000 (WS 0) */
	static uint8_t data[20000];
	cr_assert_eq(tcp_send(&A, id, data, sizeof(data)), (int)sizeof(data));
	uint32_t hi = una;
	for (unsigned i = 0; i < nlog; i++)
		if (seglog[i].dlen && AFTER(seglog[i].seq + seglog[i].dlen, hi))
			hi = seglog[i].seq + seglog[i].dlen;
	cr_assert_eq(hi - una, 2920,
		     "%u bytes past snd_una into a 3000-byte window: two full segments, not the "
		     "80-byte rest (silly window avoidance)",
		     hi - una);
	/* 1460 acknowledged, the window still 3000: 1460 more may go, no further */
	una += 1460;
	inject(PEER_ISN + 1, una, TCP_ACK, 3000, 0, 0, 0, 0);
	for (unsigned i = 0; i < nlog; i++)
		if (seglog[i].dlen)
			cr_assert(!AFTER(seglog[i].seq + seglog[i].dlen, una + 3000));
	cr_assert_eq(A.conns[id].snd_nxt, una + 2920);
	/* the window closes: nothing more until the persist timer probes with one byte */
	una += 2920;
	inject(PEER_ISN + 1, una, TCP_ACK, 0, 0, 0, 0, 0);
	unsigned n0 = nlog;
	run_for(TCP_RTO_MIN_US / 2);
	cr_assert_eq(nlog, n0);
	run_for(TCP_RTO_MIN_US); /* the RTO, 200 ms (a zero RTT sample on this link) */
	cr_assert_eq(nlog, n0 + 1);
	cr_assert_eq(last_sent()->dlen, 1);
	cr_assert_eq(last_sent()->seq, una);
	/* the probe's byte taken, the window still shut: snd_una and snd_nxt move past it */
	inject(PEER_ISN + 1, una + 1, TCP_ACK, 0, 0, 0, 0, 0);
	cr_assert_eq(A.conns[id].snd_una, una + 1);
	cr_assert_eq(A.conns[id].snd_nxt, una + 1);
	/* the window opens: sending goes on from the byte after the probe's */
	inject(PEER_ISN + 1, una + 1, TCP_ACK, 3000, 0, 0, 0, 0);
	cr_assert_eq(seglog[nlog - 2].seq, una + 1);
	cr_assert_eq(A.conns[id].snd_nxt, una + 1 + 2920);
}

static unsigned drop_first_data_left;
static enum action drop_first_data(const struct pkt *p, const struct seginfo *si)
{
	if (p->from == 0 && si->dlen && drop_first_data_left) {
		drop_first_data_left--;
		return DROP;
	}
	return DELIVER;
}

Test(tcp, retransmit_after_timeout)
{
	int b;
	int a = pair(0x3000, 0x4000, &b);
	filter = drop_first_data;
	drop_first_data_left = 1;
	static const char msg[] = "hello, the only segment";
	cr_assert_eq(tcp_send(&A, a, msg, sizeof(msg)), (int)sizeof(msg));
	pump();
	char got[64];
	cr_assert_eq(tcp_recv(&B, b, got, sizeof(got)), 0, "the segment was dropped");
	run_for(TCP_RTO_MIN_US / 2);
	cr_assert_eq(tcp_recv(&B, b, got, sizeof(got)), 0, "retransmitted too early");
	run_for(TCP_RTO_INIT_US + 1000);
	cr_assert_eq(tcp_recv(&B, b, got, sizeof(got)), (int)sizeof(msg));
	cr_assert_str_eq(got, msg);
	cr_assert_eq(A.conns[a].retransmits, 1);
	run_for(100000);
	cr_assert(tcp_send_done(&A, a));
}

Test(tcp, retransmit_backoff_then_timeout)
{
	reset_world(100, 0);
	filter = drop_all;
	int a = tcp_connect(&A, 0, IP_B, PORT_P); /* nobody answers */
	cr_assert(a >= 0);
	uint64_t t0 = fake_now, expect = t0;
	uint64_t rto = TCP_RTO_INIT_US;
	for (int i = 0; i < 4; i++) {
		expect += rto;
		unsigned before = nlog;
		fake_now = expect - 1;
		tcp_timers(&A);
		cr_assert_eq(nlog, before, "SYN %d resent before its RTO", i + 1);
		fake_now = expect;
		tcp_timers(&A);
		cr_assert_eq(nlog, before + 1);
		cr_assert_eq(last_sent()->flags, TCP_SYN);
		rto *= 2;
	}
	run_for(2 * TCP_RTO_MAX_US * TCP_MAX_RETRIES);
	cr_assert_eq(tcp_state(&A, a), TCP_CLOSED);
	cr_assert_eq(A.conns[a].err, TCP_ERR_TIMEOUT);
}

static unsigned data_seen, drop_index;
static enum action drop_nth_data(const struct pkt *p, const struct seginfo *si)
{
	if (p->from == 0 && si->dlen && ++data_seen == drop_index)
		return DROP;
	return DELIVER;
}

Test(tcp, fast_retransmit_on_three_dup_acks)
{
	int b;
	int a = pair(0x100, 0x200, &b);
	filter = drop_nth_data;
	data_seen = 0;
	drop_index = 2;
	static uint8_t buf[20 * 1460];
	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i, 0);
	cr_assert_eq(tcp_send(&A, a, buf, sizeof(buf)), (int)sizeof(buf));
	run_for(TCP_RTO_MIN_US / 2); /* less than any RTO */
	static uint8_t got[sizeof(buf)];
	int n = tcp_recv(&B, b, got, sizeof(got));
	cr_assert_eq(n, (int)sizeof(buf));
	cr_assert_arr_eq(got, buf, sizeof(buf));
	cr_assert_eq(A.conns[a].fast_retransmits, 1);
	cr_assert_eq(A.conns[a].retransmits, 0, "recovered by the RTO, not fast retransmit");
	cr_assert(B.conns[b].dup_acks_sent >= 3);
}

Test(tcp, out_of_order_kept_with_dup_ack)
{
	int id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	static uint8_t d[5000];
	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = pattern(i, 7);
	uint32_t s0 = PEER_ISN + 1;
	unsigned n0 = nlog;
	/* 0..999 missing, then 2000..2999 missing: two holes */
	inject(s0 + 1000, 0x9001, TCP_ACK, 65535, 0, 0, d + 1000, 1000);
	cr_assert_eq(nlog, n0 + 1, "an immediate duplicate ACK");
	cr_assert_eq(last_sent()->ack, s0);
	inject(s0 + 3000, 0x9001, TCP_ACK, 65535, 0, 0, d + 3000, 2000);
	cr_assert_eq(nlog, n0 + 2);
	cr_assert_eq(last_sent()->ack, s0);
	cr_assert_eq(A.conns[id].dup_acks_sent, 2);
	uint8_t got[sizeof(d)];
	cr_assert_eq(tcp_recv(&A, id, got, sizeof(got)), 0, "nothing in order yet");
	inject(s0, 0x9001, TCP_ACK, 65535, 0, 0, d, 1000); /* the first hole: an ACK at once */
	cr_assert_eq(nlog, n0 + 3);
	cr_assert_eq(last_sent()->ack, s0 + 2000, "up to the second hole");
	inject(s0 + 1500, 0x9001, TCP_ACK, 65535, 0, 0, d + 1500, 1500); /* overlaps the hole */
	cr_assert_eq(last_sent()->ack, s0 + 5000, "the second hole filled, all of it acknowledged");
	cr_assert_eq(tcp_recv(&A, id, got, sizeof(got)), (int)sizeof(d));
	cr_assert_arr_eq(got, d, sizeof(d));
	cr_assert_eq(A.conns[id].ooo_dropped, 0);
	/* a duplicate of old data: acknowledged again, nothing delivered */
	inject(s0 + 1000, 0x9001, TCP_ACK, 65535, 0, 0, d + 1000, 1000);
	cr_assert_eq(last_sent()->ack, s0 + 5000);
	cr_assert_eq(tcp_recv(&A, id, got, sizeof(got)), 0);
}

Test(tcp, out_of_order_past_the_range_table_dropped)
{
	int id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	static uint8_t d[100 * (2 * TCP_OOO_MAX + 3)];
	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = pattern(i, 8);
	uint32_t s0 = PEER_ISN + 1;
	/* every other 100 bytes from 100 on: TCP_OOO_MAX + 1 separate ranges */
	for (unsigned k = 1; k < sizeof(d) / 100; k += 2)
		inject(s0 + k * 100, 0x9001, TCP_ACK, 65535, 0, 0, d + k * 100, 100);
	cr_assert_eq(A.conns[id].nooo, TCP_OOO_MAX);
	cr_assert(A.conns[id].ooo_dropped >= 1);
	/* then everything in order: all of it arrives intact */
	inject(s0, 0x9001, TCP_ACK, 65535, 0, 0, d, sizeof(d));
	cr_assert_eq(last_sent()->ack, s0 + sizeof(d));
	static uint8_t got[sizeof(d)];
	cr_assert_eq(tcp_recv(&A, id, got, sizeof(got)), (int)sizeof(d));
	cr_assert_arr_eq(got, d, sizeof(d));
	cr_assert_eq(A.conns[id].nooo, 0);
}

static unsigned reorder_count;
static enum action reorder_some(const struct pkt *p, const struct seginfo *si)
{
	(void)p;
	if (si->dlen && !have_held && ++reorder_count % 7 == 3)
		return HOLD;
	return DELIVER;
}

static enum action duplicate_all(const struct pkt *p, const struct seginfo *si)
{
	(void)p;
	(void)si;
	return DUPLICATE;
}

Test(tcp, reordered_and_duplicated_links_keep_data_intact)
{
	int b;
	int a = pair(0xaaaa0000, 0xbbbb0000, &b);
	filter = reorder_some;
	reorder_count = 0;
	transfer(a, b, 400000, 100000, 60000000);
	filter = duplicate_all;
	transfer(a, b, 200000, 200000, 60000000);
}

Test(tcp, receiver_trims_to_window)
{
	int id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	static uint8_t d[1000];
	uint32_t seq = PEER_ISN + 1;
	unsigned fill = TCP_BUF_SIZE - 100;
	for (unsigned off = 0; off < fill;) {
		unsigned n = fill - off < sizeof(d) ? fill - off : sizeof(d);
		for (unsigned i = 0; i < n; i++)
			d[i] = pattern(off + i, 3);
		inject(seq, 0x9001, TCP_ACK, 65535, 0, 0, d, n);
		seq += n;
		off += n;
	}
	run_for(TCP_DELACK_US);
	cr_assert_eq(last_sent()->ack, seq);
	/* 1000 bytes where 100 fit (the window was rounded up): 100 kept and acknowledged */
	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = pattern(fill + i, 3);
	inject(seq, 0x9001, TCP_ACK, 65535, 0, 0, d, sizeof(d));
	cr_assert_eq(last_sent()->ack, seq + 100, "acknowledged %u bytes of the 100 kept",
		     last_sent()->ack - seq);
	cr_assert_eq(last_sent()->win, 0);
	static uint8_t got[TCP_BUF_SIZE + 10];
	cr_assert_eq(tcp_recv(&A, id, got, sizeof(got)), (int)TCP_BUF_SIZE);
	for (unsigned i = 0; i < TCP_BUF_SIZE; i++)
		cr_assert_eq(got[i], pattern(i, 3), "byte %u", i);
	/* reading opened the window: an update went out */
	cr_assert(last_sent()->win > 0);
}

Test(tcp, delayed_ack_every_second_full_segment)
{
	crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	static uint8_t d[1460];
	uint32_t seq = PEER_ISN + 1;
	inject(seq, 0x9001, TCP_ACK, 65535, 0, 0, d, 1460);
	seq += 1460;
	cr_assert_eq(nlog, 1, "no ACK for the first full segment (the SYN-ACK is 1)");
	inject(seq, 0x9001, TCP_ACK, 65535, 0, 0, d, 1460);
	seq += 1460;
	cr_assert_eq(nlog, 2, "an ACK for the second");
	cr_assert_eq(last_sent()->ack, seq);
	inject(seq, 0x9001, TCP_ACK, 65535, 0, 0, d, 10);
	fake_now += TCP_DELACK_US - 1;
	tcp_timers(&A);
	cr_assert_eq(nlog, 2);
	fake_now += 1;
	tcp_timers(&A);
	cr_assert_eq(nlog, 3, "the delayed ACK timer");
	cr_assert_eq(last_sent()->ack, seq + 10);
}

Test(tcp, rst_aborts)
{
	int id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	uint32_t rn = PEER_ISN + 1;
	/* in the window but not at rcv_nxt: a challenge ACK, nothing else (RFC 5961) */
	inject(rn + 10, 0, TCP_RST, 0, 0, 0, 0, 0);
	cr_assert_eq(tcp_state(&A, id), TCP_ESTABLISHED);
	cr_assert_eq(last_sent()->flags, TCP_ACK);
	cr_assert_eq(last_sent()->ack, rn);
	/* outside the window: ignored */
	unsigned before = nlog;
	inject(rn - 5000, 0, TCP_RST, 0, 0, 0, 0, 0);
	cr_assert_eq(tcp_state(&A, id), TCP_ESTABLISHED);
	cr_assert_eq(nlog, before, "never an answer to a RST");
	inject(rn, 0, TCP_RST, 0, 0, 0, 0, 0);
	cr_assert_eq(tcp_state(&A, id), TCP_CLOSED);
	cr_assert_eq(A.conns[id].err, TCP_ERR_RESET);
	uint8_t x[4];
	cr_assert_eq(tcp_recv(&A, id, x, 4), -1);
	cr_assert_eq(tcp_send(&A, id, x, 4), -1);
	/* and the other way: tcp_abort sends one the peer takes */
	int b;
	int a = pair(0xfffffff0, 0x10, &b);
	tcp_abort(&A, a);
	cr_assert_eq(last_sent()->flags & TCP_RST, TCP_RST);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_CLOSED);
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
	cr_assert_eq(B.conns[b].err, TCP_ERR_RESET);
}

Test(tcp, fin_both_ways_reaches_closed)
{
	int b;
	int a = pair(0x55550000, 0x66660000, &b);
	transfer(a, b, 5000, 3000, 1000000);
	tcp_close(&A, a);
	cr_assert_eq(tcp_state(&A, a), TCP_FIN_WAIT_1);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_FIN_WAIT_2);
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSE_WAIT);
	uint8_t x[16];
	cr_assert_eq(tcp_recv(&B, b, x, sizeof(x)), -1, "end of stream");
	/* B may still send after A's FIN (half-close) */
	cr_assert_eq(tcp_send(&B, b, "late", 4), 4);
	pump();
	cr_assert_eq(tcp_recv(&A, a, x, sizeof(x)), 4);
	tcp_close(&B, b);
	cr_assert_eq(tcp_state(&B, b), TCP_LAST_ACK);
	pump();
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
	cr_assert_eq(B.conns[b].err, TCP_OK);
	cr_assert_eq(tcp_state(&A, a), TCP_TIME_WAIT);
	cr_assert_eq(tcp_recv(&A, a, x, sizeof(x)), -1);
	run_for(TCP_TIME_WAIT_US + 1000);
	cr_assert_eq(tcp_state(&A, a), TCP_CLOSED);
	cr_assert_eq(A.conns[a].err, TCP_OK);
	/* the slots are reusable once released */
	tcp_release(&A, a);
	tcp_release(&B, b);
	cr_assert_eq(tcp_send(&A, a, "x", 1), -1);
}

Test(tcp, simultaneous_close)
{
	int b;
	int a = pair(0x1, 0x2, &b);
	tcp_close(&A, a);
	tcp_close(&B, b);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_TIME_WAIT);
	cr_assert_eq(tcp_state(&B, b), TCP_TIME_WAIT);
	run_for(TCP_TIME_WAIT_US + 1000);
	cr_assert_eq(tcp_state(&A, a), TCP_CLOSED);
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
}

static unsigned wrap_drops, wrap_data;
static enum action drop_some_data(const struct pkt *p, const struct seginfo *si)
{
	(void)p;
	if (si->dlen && ++wrap_data % 37 == 5 && wrap_drops < 40) {
		wrap_drops++;
		return DROP;
	}
	return DELIVER;
}

Test(tcp, sequence_wraps_around_mid_transfer)
{
	int b;
	int a = pair(0xffffff00, 0xfffff000, &b);
	transfer(a, b, 300000, 300000, 60000000);
	cr_assert(AFTER(A.conns[a].snd_una, 0xffffff00) && A.conns[a].snd_una < 0xffffff00,
		  "A's sequence numbers wrapped");
	cr_assert(B.conns[b].snd_una < 0xfffff000);
	/* and with losses across the wrap (retransmission and recovery there too) */
	int b2;
	int a2 = pair(0xfffe0000, 0xffff8000, &b2);
	filter = drop_some_data;
	wrap_drops = wrap_data = 0;
	transfer(a2, b2, 400000, 200000, 120000000);
	cr_assert(wrap_drops > 0);
	cr_assert(A.conns[a2].fast_retransmits + A.conns[a2].retransmits > 0);
}

Test(tcp, zero_window_probe_then_resume)
{
	int b;
	int a = pair(0x7777, 0x8888, &b);
	static uint8_t buf[8192];
	uint64_t sent = 0;
	for (int k = 0; k < 40; k++) {
		for (unsigned i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(sent + i, 5);
		int n = tcp_send(&A, a, buf, sizeof(buf));
		cr_assert(n >= 0);
		sent += (unsigned)n;
		pump();
	}
	cr_assert_eq(B.conns[b].rlen, TCP_BUF_SIZE, "B's ring full, B not reading");
	run_for(TCP_DELACK_US + 1000);
	cr_assert_eq(A.conns[a].snd_wnd, 0);
	unsigned before = nlog;
	run_for(10000000);
	unsigned probes = 0;
	for (unsigned i = before; i < nlog; i++)
		if (seglog[i].from == 0 && seglog[i].dlen == 1)
			probes++;
	cr_assert(probes >= 2 && probes <= 8, "%u zero-window probes in 10 s", probes);
	cr_assert_eq(tcp_state(&A, a), TCP_ESTABLISHED, "probes are not retransmissions");
	/* B reads everything: the transfer completes, every byte right */
	uint64_t got = 0;
	for (int round = 0; round < 2000 && got < sent; round++) {
		int r = tcp_recv(&B, b, buf, sizeof(buf));
		cr_assert(r >= 0);
		for (int i = 0; i < r; i++)
			cr_assert_eq(buf[i], pattern(got + (unsigned)i, 5));
		got += (unsigned)r;
		run_for(1000);
	}
	cr_assert_eq(got, sent);
	cr_assert_eq(window_violations, 0);
}

Test(tcp, several_connections_at_once)
{
	reset_world(0x10, 0x20);
	cr_assert_eq(tcp_listen(&B, PORT_B), 0);
	cr_assert_eq(tcp_listen(&B, PORT_B), -1, "already listening");
	int a[TCP_MAX_CONNS], b[TCP_MAX_CONNS];
	for (int i = 0; i < TCP_MAX_CONNS; i++) {
		a[i] = tcp_connect(&A, 0, IP_B, PORT_B);
		cr_assert(a[i] >= 0);
	}
	cr_assert_eq(tcp_connect(&A, 0, IP_B, PORT_B), -1, "the table is full");
	pump();
	for (int i = 0; i < TCP_MAX_CONNS; i++) {
		b[i] = tcp_accept(&B, PORT_B);
		cr_assert(b[i] >= 0);
	}
	cr_assert_eq(tcp_accept(&B, PORT_B), -1);
	/* interleaved: each connection its own pattern */
	static uint8_t buf[3000];
	uint64_t sent[TCP_MAX_CONNS] = {0}, got[TCP_MAX_CONNS] = {0};
	const uint64_t total = 100000;
	for (int round = 0; round < 10000; round++) {
		bool done = true;
		for (int i = 0; i < TCP_MAX_CONNS; i++) {
			uint64_t n = total - sent[i] < sizeof(buf) ? total - sent[i] : sizeof(buf);
			for (uint64_t k = 0; k < n; k++)
				buf[k] = pattern(sent[i] + k, 10u + (unsigned)i);
			if (n)
				sent[i] += (unsigned)tcp_send(&A, a[i], buf, (unsigned)n);
			pump();
			int bi = -1; /* B's id for A's connection i: by port */
			for (int j = 0; j < TCP_MAX_CONNS; j++)
				if (B.conns[b[j]].rport == A.conns[a[i]].lport)
					bi = b[j];
			cr_assert(bi >= 0);
			int r = tcp_recv(&B, bi, buf, sizeof(buf));
			cr_assert(r >= 0);
			for (int k = 0; k < r; k++)
				cr_assert_eq(buf[k],
					     pattern(got[i] + (unsigned)k, 10u + (unsigned)i));
			got[i] += (unsigned)r;
			done = done && got[i] == total;
		}
		if (done)
			break;
		run_for(1000);
	}
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		cr_assert_eq(got[i], total, "connection %d", i);
}

Test(tcp, hostile_segments)
{
	int id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	uint64_t bad = A.rx_bad;
	uint8_t s[64] = {0};
	tcp_input(&A, IP_B, IP_A, s, 10, 0); /* too short */
	wr16(s, PORT_P);
	wr16(s + 2, PORT_B);
	s[12] = 15 << 4; /* header longer than the segment */
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, 40));
	tcp_input(&A, IP_B, IP_A, s, 40, 0);
	s[12] = 5 << 4; /* bad checksum */
	wr16(s + 16, 0x1234);
	tcp_input(&A, IP_B, IP_A, s, 20, 0);
	cr_assert_eq(A.rx_bad, bad + 3);
	/* a SYN whose options run off the header, or have length 0 or 1 */
	reset_world(0x100, 0);
	cr_assert_eq(tcp_listen(&A, PORT_B), 0);
	const uint8_t o1[] = {2, 40, 1, 1}, o2[] = {3, 0, 1, 1}, o3[] = {1, 1, 1, 2};
	inject(1, 0, TCP_SYN, 1000, o1, sizeof(o1), 0, 0);
	cr_assert_eq(A.conns[0].mss, 536, "no MSS option: 536");
	inject(1000, 0, TCP_SYN, 1000, o2, sizeof(o2), 0, 0); /* same 4-tuple: in SYN_RCVD */
	inject(1, 0, TCP_SYN, 1000, o3, sizeof(o3), 0, 0);    /* the SYN again: SYN-ACK again */
	cr_assert_eq(last_sent()->flags, TCP_SYN | TCP_ACK);
	/* an ACK for data never sent on an established connection: answered, not taken */
	id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	inject(PEER_ISN + 1, 0x9001 + 5000, TCP_ACK, 1000, 0, 0, 0, 0);
	cr_assert_eq(A.conns[id].snd_una, 0x9001);
	cr_assert_eq(last_sent()->flags, TCP_ACK);
}

/* A stand-in output for the offload test: the last segment as the device would get it. */
static struct cap {
	uint8_t seg[SEG_MAX];
	unsigned len, flags;
} cap;

static void capture(void *ctx, uint32_t src, uint32_t dst, const void *seg, unsigned len,
		    unsigned flags)
{
	(void)ctx;
	(void)src;
	(void)dst;
	memcpy(cap.seg, seg, len);
	cap.len = len;
	cap.flags = flags;
}

Test(tcp, tx_checksum_offload_leaves_pseudo_header_sum)
{
	reset_world(1, 0);
	A.tx_csum_offload = true;
	A.output = capture;
	cr_assert(tcp_connect(&A, 0, IP_B, PORT_P) >= 0);
	cr_assert_eq(cap.flags, TCP_TX_NEEDS_CSUM);
	/* what a device does: the ones' complement of the sum over the segment, seeded with
	 * the field (the pseudo-header sum) */
	uint32_t sum = 0;
	for (unsigned i = 0; i + 1 < cap.len; i += 2)
		sum += rd16(cap.seg + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	wr16(cap.seg + 16, (uint16_t)~sum);
	cr_assert_eq(tcp_checksum(IP_A, IP_B, cap.seg, cap.len), 0);
}

Test(tcp, release_frees_slots)
{
	int b;
	int a = pair(0x1000, 0x2000, &b);
	/* released while open: aborted (the peer sees a reset), the slot free at once */
	tcp_release(&A, a);
	pump();
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
	cr_assert_eq(B.conns[b].err, TCP_ERR_RESET);
	tcp_release(&B, b);
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		cr_assert(tcp_connect(&A, 0, IP_B, PORT_B) >= 0, "slot %d", i);
	pump();
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		cr_assert(tcp_accept(&B, PORT_B) >= 0);
	/* released after a close the peer never answers with its FIN: gone within a minute */
	tcp_close(&A, 0);
	pump();
	cr_assert_eq(tcp_state(&A, 0), TCP_FIN_WAIT_2);
	tcp_release(&A, 0);
	run_for(30000000);
	cr_assert_eq(tcp_state(&A, 0), TCP_FIN_WAIT_2);
	run_for(31000000);
	cr_assert_eq(tcp_state(&A, 0), TCP_CLOSED);
	cr_assert(tcp_connect(&A, 0, IP_B, PORT_B) == 0, "the slot is reused");
}

/* Deterministic pseudo-random segments, near the connection's numbers so that many are taken:
 * whatever arrives, the stack's bookkeeping stays inside its bounds (and ASan/UBSan stay
 * quiet in the sanitizer build). */
Test(tcp, random_segments_keep_state_sane)
{
	int id = crafted_passive(0x9000, peer_opts, sizeof(peer_opts));
	uint32_t x = 12345;
	static uint8_t d[3000], opts[40];
	const uint8_t flag_sets[] = {TCP_ACK,		TCP_ACK, TCP_ACK | TCP_PSH,
				     TCP_ACK | TCP_FIN, TCP_RST, TCP_SYN,
				     TCP_SYN | TCP_ACK, 0,	 0xff};
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		struct tcp_conn *c = &A.conns[id];
		if (c->state == TCP_CLOSED) /* reset by a lucky RST: start again */
			id = crafted_passive(0x9000 + (uint32_t)i, peer_opts, sizeof(peer_opts));
		c = &A.conns[id];
		uint32_t seq = c->rcv_nxt + (x % 4096) - 1024;
		uint32_t ack = c->snd_una + (x >> 8) % 4096 - 1024;
		unsigned dlen = (x >> 4) % sizeof(d);
		unsigned olen = (x >> 20) % 4 == 0 ? (x >> 22) % sizeof(opts) : 0;
		for (unsigned k = 0; k < olen; k++)
			opts[k] = (uint8_t)(x >> (k % 24));
		if (i % 50 == 0) {
			uint8_t junk[100];
			cr_assert(tcp_send(&A, id, junk, sizeof(junk)) >= -1);
		}
		if (i % 7 == 0)
			cr_assert(tcp_recv(&A, id, d, (x >> 3) % 2000) >= -1);
		inject(seq, ack, flag_sets[(x >> 12) % sizeof(flag_sets)], (uint16_t)(x >> 7), opts,
		       olen, d, dlen);
		if (i % 97 == 0) {
			fake_now += (x >> 5) % 3000000;
			tcp_timers(&A);
		}
		pump(); /* into drop_all */
		cr_assert(c->rlen <= TCP_BUF_SIZE && c->slen <= TCP_BUF_SIZE);
		cr_assert(c->nooo <= TCP_OOO_MAX);
		cr_assert(!AFTER(c->snd_una, c->snd_max) && !AFTER(c->snd_nxt, c->snd_max));
		cr_assert(c->mss >= TCP_MSS_MIN && c->mss <= TCP_MSS_DEFAULT);
		for (unsigned k = 0; k < c->nooo; k++)
			cr_assert(AFTER(c->ooo[k].start, c->rcv_nxt) &&
				  c->ooo[k].end - c->rcv_nxt <= TCP_BUF_SIZE - c->rlen);
	}
}

static enum action drop_two_data(const struct pkt *p, const struct seginfo *si)
{
	if (p->from == 0 && si->dlen) {
		data_seen++;
		if (data_seen == 2 || data_seen == 5)
			return DROP;
	}
	return DELIVER;
}

Test(tcp, newreno_partial_ack_retransmits_the_next_hole)
{
	int b;
	int a = pair(0x100, 0x200, &b);
	filter = drop_two_data;
	data_seen = 0;
	static uint8_t buf[20 * 1460];
	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i, 9);
	cr_assert_eq(tcp_send(&A, a, buf, sizeof(buf)), (int)sizeof(buf));
	run_for(TCP_RTO_MIN_US / 2);
	static uint8_t got[sizeof(buf)];
	cr_assert_eq(tcp_recv(&B, b, got, sizeof(got)), (int)sizeof(buf));
	cr_assert_arr_eq(got, buf, sizeof(buf));
	cr_assert_eq(A.conns[a].fast_retransmits, 1, "one recovery for both holes");
	cr_assert_eq(A.conns[a].retransmits, 0, "no RTO");
}

Test(tcp, simultaneous_open)
{
	reset_world(0x1000, 0x2000);
	int a = tcp_connect(&A, 1000, IP_B, 2000);
	int b = tcp_connect(&B, 2000, IP_A, 1000);
	cr_assert(a >= 0 && b >= 0);
	pump(); /* the SYNs cross: each side goes SYN_RCVD, then the SYN-ACKs establish both */
	cr_assert_eq(tcp_state(&A, a), TCP_ESTABLISHED);
	cr_assert_eq(tcp_state(&B, b), TCP_ESTABLISHED);
	transfer(a, b, 10000, 10000, 1000000);
}

Test(tcp, small_window_sent_by_the_persist_timer)
{
	int id = crafted_passive(0x7000, peer_opts, sizeof(peer_opts));
	inject(PEER_ISN + 1, 0x7001, TCP_ACK, 500, 0, 0, 0, 0); /* under one MSS, ever */
	static uint8_t data[5000];
	cr_assert_eq(tcp_send(&A, id, data, sizeof(data)), (int)sizeof(data));
	/* 500 is below half the largest window seen (65535): silly window avoidance waits */
	unsigned n0 = nlog;
	cr_assert(tcp_next_timer(&A) > fake_now, "the persist timer is set");
	run_for(TCP_RTO_INIT_US - 1000);
	cr_assert_eq(nlog, n0);
	run_for(2000);
	cr_assert_eq(nlog, n0 + 1);
	cr_assert_eq(last_sent()->dlen, 500, "what the window allows, forced");
	cr_assert_eq(last_sent()->seq, 0x7001);
}

Test(tcp, reset_for_an_ack_to_no_connection)
{
	reset_world(1, 0);
	filter = drop_all;
	inject(777, 0xabcdef01, TCP_ACK, 1000, 0, 0, "xy", 2);
	const struct seginfo *r = last_sent();
	cr_assert_eq(r->flags, TCP_RST, "RST without ACK");
	cr_assert_eq(r->seq, 0xabcdef01, "its sequence number is the segment's ACK");
	cr_assert_eq(A.resets_sent, 1);
	inject(777, 0, TCP_RST, 0, 0, 0, 0, 0);
	cr_assert_eq(A.resets_sent, 1, "never a reset for a reset");
	/* nor for a segment to a broadcast address */
	uint8_t seg[TCP_HLEN] = {0};
	wr16(seg, PORT_P);
	wr16(seg + 2, PORT_B);
	seg[12] = 5 << 4;
	seg[13] = TCP_SYN;
	wr16(seg + 16, tcp_checksum(IP_B, 0xffffffffu, seg, sizeof(seg)));
	tcp_input(&A, IP_B, 0xffffffffu, seg, sizeof(seg), 0);
	cr_assert_eq(A.rx_bad, 0);
	cr_assert_eq(A.resets_sent, 1, "no reset from a broadcast address");
}

/* A lossy link with a seeded PRNG (xorshift64*): each segment, either way, is dropped,
 * duplicated or held back behind the next one with the given odds (per 10,000). */
static uint64_t lossy_rng;
static unsigned lossy_drop, lossy_dup, lossy_hold, lossy_dropped;
static enum action lossy(const struct pkt *p, const struct seginfo *si)
{
	(void)p;
	(void)si;
	lossy_rng ^= lossy_rng >> 12;
	lossy_rng ^= lossy_rng << 25;
	lossy_rng ^= lossy_rng >> 27;
	unsigned r = (unsigned)((lossy_rng * 2685821657736338717ull) >> 32) % 10000;
	if (r < lossy_drop) {
		lossy_dropped++;
		return DROP;
	}
	if (r < lossy_drop + lossy_dup)
		return DUPLICATE;
	if (r < lossy_drop + lossy_dup + lossy_hold && !have_held)
		return HOLD;
	return DELIVER;
}

/* MiB each way through the lossy link, every byte checked, then FIN both ways through it. */
static void lossy_run(uint64_t seed, unsigned drop, uint64_t bytes)
{
	int b;
	int a = pair(0x9e3779b9u * (uint32_t)seed, 0x7f4a7c15u * (uint32_t)seed, &b);
	filter = lossy;
	lossy_rng = seed;
	lossy_drop = drop;
	lossy_dup = 50;
	lossy_hold = 200;
	lossy_dropped = 0;
	transfer(a, b, bytes, bytes, 3600000000ull);
	cr_assert(lossy_dropped > 0);
	/* losses were repaired both ways, and not only by the RTO */
	cr_assert(A.conns[a].fast_retransmits > 0 && B.conns[b].fast_retransmits > 0,
		  "fast retransmits A %llu B %llu", (unsigned long long)A.conns[a].fast_retransmits,
		  (unsigned long long)B.conns[b].fast_retransmits);
	tcp_close(&A, a);
	tcp_close(&B, b);
	uint8_t x[16];
	for (int i = 0; i < 600 + TCP_TIME_WAIT_US / 100000 &&
			(tcp_state(&A, a) != TCP_CLOSED || tcp_state(&B, b) != TCP_CLOSED);
	     i++)
		run_for(100000);
	cr_assert_eq(tcp_state(&A, a), TCP_CLOSED);
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
	cr_assert_eq(A.conns[a].err, TCP_OK, "A closed with error %d", A.conns[a].err);
	cr_assert_eq(B.conns[b].err, TCP_OK, "B closed with error %d", B.conns[b].err);
	cr_assert_eq(tcp_recv(&A, a, x, sizeof(x)), -1);
	cr_assert_eq(tcp_recv(&B, b, x, sizeof(x)), -1);
	cr_assert_eq(window_violations, 0);
}

Test(tcp, lossy_link_one_percent_every_byte_and_fin, .timeout = 120)
{
	lossy_run(0x1234567, 100, 4u << 20);
}

Test(tcp, lossy_link_five_percent_every_byte_and_fin, .timeout = 120)
{
	lossy_run(0xdeadbeef, 500, 2u << 20);
}

Test(tcp, fast_retransmit_on_the_third_dup_ack_not_before)
{
	int id = crafted_passive(0x7000, peer_opts, sizeof(peer_opts));
	uint32_t una = 0x7001;
	inject(PEER_ISN + 1, una, TCP_ACK, 65535, 0, 0, 0, 0);
	static uint8_t data[4 * 1460];
	cr_assert_eq(tcp_send(&A, id, data, sizeof(data)), (int)sizeof(data));
	cr_assert(A.conns[id].snd_nxt - una >= 4 * 1460u, "four segments in flight");
	for (int k = 1; k <= 3; k++) {
		unsigned n0 = nlog;
		inject(PEER_ISN + 1, una, TCP_ACK, 65535, 0, 0, 0, 0);
		if (k < 3) {
			cr_assert_eq(nlog, n0, "a resend after %d duplicate ACK(s)", k);
			continue;
		}
		cr_assert_eq(nlog, n0 + 1, "the third duplicate ACK resends at once");
		cr_assert_eq(last_sent()->seq, una);
		cr_assert_eq(last_sent()->dlen, 1460);
	}
	cr_assert_eq(A.conns[id].fast_retransmits, 1);
}

/* --- TSO: segments of up to 64 KiB, cut by the device --- */

/* The pseudo-header sum over len bytes of TCP from src to dst, folded: the partial checksum a
 * TSO or checksum-offload segment carries (the tests' own, not tcp.c's). */
static uint16_t pseudo_folded(uint32_t src, uint32_t dst, unsigned len)
{
	uint8_t a[4], b[4];
	memcpy(a, &src, 4);
	memcpy(b, &dst, 4);
	uint32_t sum = rd16(a) + rd16(a + 2) + rd16(b) + rd16(b + 2) + IP_PROTO_TCP + len;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static unsigned tso_frames, tso_max_data;

/* A device with CSUM and HOST_TSO4, as Linux's tcp_gso_segment does it: a GSO segment is cut
 * into gso_size pieces (sequence numbers advanced, FIN and PSH on the last only), each piece
 * and any plain segment gets its full checksum; then onto the link like any other. */
static void out_tso(void *ctx, uint32_t src, uint32_t dst, const void *seg, unsigned len,
		    unsigned flags)
{
	const uint8_t *s = seg;
	cr_assert(flags & TCP_TX_NEEDS_CSUM, "offload on: every segment's checksum is partial");
	cr_assert(len >= TCP_HLEN && len <= TCP_HLEN + TCP_TSO_MAX, "segment of %u bytes", len);
	unsigned hl = (s[12] >> 4) * 4u, dlen = len - hl;
	cr_assert_eq(rd16(s + 16), pseudo_folded(src, dst, len), "partial checksum");
	static uint8_t piece[SEG_MAX];
	if (!(flags & TCP_TX_GSO)) {
		cr_assert_eq(TCP_TX_GSO_SIZE(flags), 0);
		cr_assert(dlen <= 1460, "%u bytes without GSO", dlen);
		memcpy(piece, s, len);
		wr16(piece + 16, 0);
		wr16(piece + 16, tcp_checksum(src, dst, piece, len));
		out(ctx, src, dst, piece, len, 0);
		return;
	}
	unsigned gso = TCP_TX_GSO_SIZE(flags);
	cr_assert_eq(gso, 1460, "gso_size %u: the connection's MSS", gso);
	cr_assert(dlen > gso, "a GSO segment of %u bytes: one MSS or less", dlen);
	cr_assert(dlen % gso == 0 || (s[13] & (TCP_PSH | TCP_FIN)),
		  "%u bytes: whole segments but at the end of the data", dlen);
	tso_frames++;
	if (dlen > tso_max_data)
		tso_max_data = dlen;
	for (unsigned off = 0; off < dlen; off += gso) {
		unsigned n = dlen - off < gso ? dlen - off : gso;
		memcpy(piece, s, hl);
		memcpy(piece + hl, s + hl + off, n);
		wr32(piece + 4, rd32(s + 4) + off);
		if (off + n < dlen)
			piece[13] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
		wr16(piece + 16, 0);
		wr16(piece + 16, tcp_checksum(src, dst, piece, hl + n));
		out(ctx, src, dst, piece, hl + n, 0);
	}
}

Test(tcp, tso_segments_cut_by_the_device_every_byte)
{
	int b;
	int a = pair(0x31415926, 0x27182818, &b);
	A.output = out_tso;
	A.tx_csum_offload = A.tx_tso = true;
	tso_frames = tso_max_data = 0;
	transfer(a, b, 4u << 20, 256u << 10, 60000000);
	cr_assert(tso_frames > 0);
	cr_assert(tso_max_data >= 4 * 1460, "the largest TSO segment: %u bytes", tso_max_data);
	/* and through a lossy link: the pieces are lost, the stack resends (maybe as TSO) */
	filter = lossy;
	lossy_rng = 42;
	lossy_drop = 200;
	lossy_dup = 50;
	lossy_hold = 200;
	transfer(a, b, 2u << 20, 256u << 10, 3600000000ull);
	cr_assert(A.conns[a].fast_retransmits + A.conns[a].retransmits > 0);
}

static struct {
	uint8_t seg[TCP_HLEN + TCP_TSO_MAX + 40];
	unsigned len, flags, n;
} first;

static void capture_first(void *ctx, uint32_t src, uint32_t dst, const void *seg, unsigned len,
			  unsigned flags)
{
	(void)ctx;
	(void)src;
	(void)dst;
	if (first.n++)
		return;
	memcpy(first.seg, seg, len);
	first.len = len;
	first.flags = flags;
}

Test(tcp, tso_segment_known_header_and_partial_checksum)
{
	int id = crafted_passive(0x7000, peer_opts, sizeof(peer_opts));
	A.output = capture_first;
	A.tx_csum_offload = A.tx_tso = true;
	first.n = 0;
	static uint8_t data[20000];
	cr_assert_eq(tcp_send(&A, id, data, sizeof(data)), (int)sizeof(data));
	/* the initial congestion window, 10 segments of 1460, as one TSO segment */
	cr_assert_eq(first.len, TCP_HLEN + 14600);
	cr_assert_eq(first.flags, TCP_TX_NEEDS_CSUM | TCP_TX_GSO | 1460u << 16);
	cr_assert_eq(rd32(first.seg + 4), 0x7001);
	/* 10.0.0.1 to 10.0.0.2, TCP, 14620 bytes: 0x0a00 + 0x0001 + 0x0a00 + 0x0002 + 0x0006 +
	 * 0x391c */
	cr_assert_eq(rd16(first.seg + 16), 0x4d25);
	/* offload without TSO: the same bytes in MSS-sized segments */
	id = crafted_passive(0x7000, peer_opts, sizeof(peer_opts));
	A.output = capture_first;
	A.tx_csum_offload = true;
	first.n = 0;
	cr_assert_eq(tcp_send(&A, id, data, sizeof(data)), (int)sizeof(data));
	cr_assert_eq(first.n, 10);
	cr_assert_eq(first.len, TCP_HLEN + 1460);
	cr_assert_eq(first.flags, TCP_TX_NEEDS_CSUM);
	cr_assert_eq(rd16(first.seg + 16), pseudo_folded(IP_A, IP_B, TCP_HLEN + 1460));
}

/* Small writes are small segments (no Nagle): each 64-byte tcp_send goes out at once as its own
 * segment while the windows are open, and the connection counts them; a larger write goes as
 * full segments and one short one. Every byte arrives. */
Test(tcp, small_writes_go_out_as_small_segments)
{
	int b;
	int a = pair(0x7000, 0x8000, &b);
	static uint8_t buf[3000], got[4096];
	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i, 0);
	unsigned before = nlog;
	for (unsigned w = 0; w < 10; w++) {
		cr_assert_eq(tcp_send(&A, a, buf + w * 64, 64), 64);
		cr_assert_eq(nlog, before + w + 1, "write %u went out at once", w);
		cr_assert_eq(last_sent()->dlen, 64);
	}
	cr_assert_eq(A.conns[a].data_segs, 10);
	cr_assert_eq(A.conns[a].small_segs, 10);
	cr_assert_eq(tcp_send(&A, a, buf + 640, 3000 - 640), 3000 - 640);
	cr_assert_eq(A.conns[a].data_segs, 12, "2360 bytes: one full segment and one short");
	cr_assert_eq(A.conns[a].small_segs, 11);
	pump();
	int n = tcp_recv(&B, b, got, sizeof(got));
	cr_assert_eq(n, 3000);
	cr_assert_arr_eq(got, buf, 3000);
}

/* --- many connections in sequence: TIME_WAIT after the slot, ports, RST (netperf TCP_CRR) --- */

static bool drop_next_from_a;
static enum action drop_once_from_a(const struct pkt *p, const struct seginfo *si)
{
	(void)si;
	if (p->from == 0 && drop_next_from_a) {
		drop_next_from_a = false;
		return DROP;
	}
	return DELIVER;
}

/* A closes first and reaches TIME_WAIT; its last ACK is lost. */
static int a_in_time_wait(int *b, uint16_t *port)
{
	int a = pair(0x31000000, 0x42000000, b);
	transfer(a, *b, 100, 100, 1000000); /* RTT samples: B's RTO is its minimum, < TIME_WAIT */
	*port = A.conns[a].lport;
	tcp_close(&A, a);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_FIN_WAIT_2);
	filter = drop_once_from_a;
	drop_next_from_a = true;
	tcp_close(&B, *b);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_TIME_WAIT);
	cr_assert_eq(tcp_state(&B, *b), TCP_LAST_ACK, "A's ACK of B's FIN was lost");
	cr_assert_eq(A.time_waits, 1);
	return a;
}

Test(tcp, time_wait_outlives_the_slot_and_acks_a_resent_fin)
{
	int b;
	uint16_t port;
	int a = a_in_time_wait(&b, &port);
	tcp_release(&A, a);
	cr_assert_eq(tcp_state(&A, a), TCP_CLOSED, "the slot is free at once");
	cr_assert(!A.conns[a].owned);
	/* the next connection gets the slot, on another port */
	int a2 = tcp_connect(&A, 0, IP_B, PORT_B);
	cr_assert_eq(a2, a);
	cr_assert_neq(A.conns[a2].lport, port);
	pump();
	cr_assert_eq(tcp_state(&A, a2), TCP_ESTABLISHED);
	/* B resends its FIN: the TIME_WAIT entry acknowledges it, B closes cleanly */
	cr_assert_lt(B.conns[b].rto, TCP_TIME_WAIT_US);
	unsigned before = nlog;
	run_for(TCP_TIME_WAIT_US - 1000);
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
	cr_assert_eq(B.conns[b].err, TCP_OK, "closed by the ACK, not reset");
	cr_assert_eq(A.resets_sent, 0);
	bool acked = false;
	for (unsigned i = before; i < nlog; i++)
		if (seglog[i].from == 0 && seglog[i].flags == TCP_ACK && !seglog[i].dlen)
			acked = true;
	cr_assert(acked, "an ACK from the TIME_WAIT entry");
	cr_assert_eq(tcp_state(&A, a2), TCP_ESTABLISHED, "the new connection is untouched");
}

/* TIME_WAIT must outlast the peer's retransmissions of its FIN (RFC 9293: 2 MSL): after a link
 * outage of a few seconds, in which B's backed-off FINs are all lost, the FIN that finally
 * arrives is still acknowledged, not reset, and B's close ends cleanly. */
Test(tcp, time_wait_outlasts_a_peers_backed_off_fin)
{
	int b;
	uint16_t port;
	int a = a_in_time_wait(&b, &port);
	tcp_release(&A, a);
	filter = drop_all;
	run_for(3000000); /* B resends its FIN at 0.2, 0.6, 1.4 s ...: every one lost */
	cr_assert_eq(tcp_state(&B, b), TCP_LAST_ACK);
	filter = 0;
	run_for(TCP_RTO_MAX_US);
	cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
	cr_assert_eq(B.conns[b].err, TCP_OK, "B's FIN acknowledged, not reset");
	cr_assert_eq(A.resets_sent, 0);
}

Test(tcp, time_wait_port_not_chosen_again_until_it_expires)
{
	int b;
	uint16_t port;
	int a = a_in_time_wait(&b, &port);
	tcp_release(&A, a);
	tcp_release(&B, b);
	/* the ephemeral search comes round to the port: it is skipped */
	A.next_port = port;
	int a2 = tcp_connect(&A, 0, IP_B, PORT_B);
	cr_assert(a2 >= 0);
	cr_assert_eq(A.conns[a2].lport, port + 1);
	tcp_abort(&A, a2);
	tcp_release(&A, a2);
	/* asked for by name: refused */
	cr_assert_eq(tcp_connect(&A, port, IP_B, PORT_B), -1);
	/* a reset for it is ignored (RFC 1337), and so is a bare ACK: no answer, still waiting */
	filter = drop_all;
	static uint8_t s[TCP_HLEN];
	memset(s, 0, sizeof(s));
	wr16(s, PORT_B);
	wr16(s + 2, port);
	wr32(s + 4, 0);
	s[12] = 5 << 4;
	s[13] = TCP_RST;
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, TCP_HLEN));
	unsigned before = nlog;
	tcp_input(&A, IP_B, IP_A, s, TCP_HLEN, 0);
	s[13] = TCP_ACK;
	wr16(s + 16, 0);
	wr16(s + 16, tcp_checksum(IP_B, IP_A, s, TCP_HLEN));
	tcp_input(&A, IP_B, IP_A, s, TCP_HLEN, 0);
	cr_assert_eq(nlog, before, "no answer to a RST or a bare ACK in TIME_WAIT");
	cr_assert_eq(tcp_connect(&A, port, IP_B, PORT_B), -1, "still in TIME_WAIT");
	/* once TIME_WAIT is over, the port is free */
	fake_now += TCP_TIME_WAIT_US;
	cr_assert(tcp_connect(&A, port, IP_B, PORT_B) >= 0);
}

/* Connect, one request and its response, close, 20000 times, 100 us apart (TCP_CRR): every
 * connection succeeds and closes cleanly through TIME_WAIT on a port no live TIME_WAIT entry
 * holds, no slot is left behind, and the table recycles its oldest entries when it is full. */
Test(tcp, many_connections_in_sequence)
{
	reset_world(0x1234, 0x5678);
	cr_assert_eq(tcp_listen(&B, PORT_B), 0);
	uint8_t req[64], resp[64];
	for (unsigned n = 0; n < 20000; n++) {
		int a = tcp_connect(&A, 0, IP_B, PORT_B);
		cr_assert(a >= 0, "connection %u: no slot", n);
		uint16_t port = A.conns[a].lport;
		for (int i = 0; i < TCP_TW_MAX; i++)
			cr_assert(!(A.tw[i].lport == port && fake_now < A.tw[i].until),
				  "connection %u: port %u is in TIME_WAIT", n, port);
		pump();
		int b = tcp_accept(&B, PORT_B);
		cr_assert(b >= 0, "connection %u not accepted", n);
		for (unsigned i = 0; i < sizeof(req); i++)
			req[i] = pattern(n * 64 + i, 0);
		cr_assert_eq(tcp_send(&A, a, req, sizeof(req)), (int)sizeof(req));
		pump();
		cr_assert_eq(tcp_recv(&B, b, resp, sizeof(resp)), (int)sizeof(resp));
		cr_assert_eq(tcp_send(&B, b, resp, sizeof(resp)), (int)sizeof(resp));
		pump();
		cr_assert_eq(tcp_recv(&A, a, resp, sizeof(resp)), (int)sizeof(resp));
		cr_assert_arr_eq(resp, req, sizeof(req));
		tcp_close(&A, a);
		tcp_release(&A, a);
		pump();
		cr_assert_eq(tcp_recv(&B, b, resp, sizeof(resp)), -1, "connection %u: no FIN", n);
		tcp_close(&B, b);
		pump();
		cr_assert_eq(tcp_state(&B, b), TCP_CLOSED);
		cr_assert_eq(B.conns[b].err, TCP_OK, "connection %u did not close cleanly", n);
		tcp_release(&B, b);
		cr_assert_eq(tcp_state(&A, a), TCP_CLOSED, "connection %u: its slot is not free",
			     n);
		fake_now += 100;
		tcp_timers(&A);
		tcp_timers(&B);
	}
	cr_assert_eq(A.time_waits, 20000);
	cr_assert_eq(A.resets_sent + B.resets_sent, 0);
	/* 5000 would be in TIME_WAIT at a time: once the table is full, every new entry takes
	 * the oldest one's place */
	cr_assert_eq(A.tw_recycled, 20000 - TCP_TW_MAX);
}

/* Refused connections one after another (a server that is not there yet): each RST frees its
 * slot once released, on a new port each time, with no TIME_WAIT left behind; then a
 * connection to the listener works. */
Test(tcp, refused_connections_in_sequence_free_their_slots)
{
	reset_world(0x100, 0x200);
	cr_assert_eq(tcp_listen(&B, PORT_B), 0);
	uint16_t last = 0;
	for (int n = 0; n < 3 * TCP_MAX_CONNS; n++) {
		int c = tcp_connect(&A, 0, IP_B, 81);
		cr_assert(c >= 0, "attempt %d: no slot", n);
		cr_assert_neq(A.conns[c].lport, last, "a new port each time");
		last = A.conns[c].lport;
		pump();
		cr_assert_eq(tcp_state(&A, c), TCP_CLOSED);
		cr_assert_eq(A.conns[c].err, TCP_ERR_REFUSED);
		tcp_release(&A, c);
	}
	cr_assert_eq(B.resets_sent, 3 * TCP_MAX_CONNS);
	cr_assert_eq(A.time_waits, 0);
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		cr_assert(!A.conns[i].owned && A.conns[i].state == TCP_CLOSED);
	int a = tcp_connect(&A, 0, IP_B, PORT_B);
	pump();
	cr_assert_eq(tcp_state(&A, a), TCP_ESTABLISHED);
}
