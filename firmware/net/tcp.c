/* TCP: connection state machine, sender, receiver and timers (see tcp.h for the scope). */
#include "tcp.h"

#define MASK	      (TCP_BUF_SIZE - 1)
#define OPT_MSS	      2
#define OPT_WS	      3
#define WS_MAX	      14
#define MSS_ASSUMED   536 /* RFC 9293: when the peer's SYN has no MSS option */
#define CONN_META_LEN __builtin_offsetof(struct tcp_conn, sbuf)
#define EPHEMERAL_LO  49152
#define CWND_MAX      (1u << 30)
#define ORPHAN_US     60000000 /* a released connection's time to finish its close */

_Static_assert((TCP_BUF_SIZE & MASK) == 0, "TCP_BUF_SIZE must be a power of two");

/* Works in the probe (lib.c provides the symbols) and on the host alike. */
#define copy(d, s, n) __builtin_memcpy(d, s, n)

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
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

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Big-endian 16-bit words, so the result does not depend on the host's byte order. */
static uint64_t sum16(const uint8_t *p, unsigned len, uint64_t sum)
{
	for (; len > 1; len -= 2, p += 2)
		sum += get16(p);
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static uint64_t pseudo_sum(uint32_t src, uint32_t dst, unsigned len)
{
	uint8_t ph[12];
	copy(ph, &src, 4);
	copy(ph + 4, &dst, 4);
	ph[8] = 0;
	ph[9] = IP_PROTO_TCP;
	put16(ph + 10, (uint16_t)len);
	return sum16(ph, sizeof(ph), 0);
}

uint16_t tcp_checksum(uint32_t src, uint32_t dst, const void *seg, unsigned len)
{
	return (uint16_t)~fold(sum16(seg, len, pseudo_sum(src, dst, len)));
}

static uint64_t now(struct tcp_stack *s)
{
	return s->now(s->ctx);
}

static void ring_put(uint8_t *ring, uint32_t pos, const uint8_t *src, uint32_t n)
{
	pos &= MASK;
	uint32_t k = min32(n, TCP_BUF_SIZE - pos);
	copy(ring + pos, src, k);
	copy(ring, src + k, n - k);
}

static void ring_get(const uint8_t *ring, uint32_t pos, uint8_t *dst, uint32_t n)
{
	pos &= MASK;
	uint32_t k = min32(n, TCP_BUF_SIZE - pos);
	copy(dst, ring + pos, k);
	copy(dst + k, ring, n - k);
}

static uint8_t our_wscale(void)
{
	uint8_t ws = 0;
	while ((TCP_BUF_SIZE >> ws) > 0xffff)
		ws++;
	return ws;
}

static struct tcp_conn *conn(struct tcp_stack *s, int id)
{
	if (id < 0 || id >= TCP_MAX_CONNS)
		return 0;
	return &s->conns[id];
}

static bool synchronized(const struct tcp_conn *c)
{
	return c->state >= TCP_SYN_RCVD;
}

static void set_closed(struct tcp_conn *c, enum tcp_err err)
{
	c->state = TCP_CLOSED;
	c->err = (uint8_t)err;
	c->rto_at = c->delack_at = c->persist_at = c->tw_at = 0;
}

/* The window to advertise, in bytes before scaling, and the right edge it sets. The right edge
 * never moves left, and moves right only by a worthwhile amount (receiver-side silly window
 * avoidance, RFC 1122 4.2.3.3). */
static uint32_t rcv_window(const struct tcp_conn *c, bool syn)
{
	uint32_t space = TCP_BUF_SIZE - c->rlen;
	if (syn)
		return min32(space, 0xffff);
	uint32_t cur = SEQ_GT(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	uint32_t step = min32(TCP_BUF_SIZE / 2, c->rcv_mss);
	uint32_t w = space >= cur + step ? space : cur;
	return min32(w, (uint32_t)0xffff << c->rcv_wscale);
}

/*
 * One segment of the connection: seq, flags, and len bytes of the send ring from snd_una +
 * off. A SYN carries our options and an unscaled window. Every segment but a SYN without
 * ACK acknowledges rcv_nxt, which settles any delayed ACK.
 */
static void emit(struct tcp_stack *s, struct tcp_conn *c, uint32_t seq, uint8_t flags, uint32_t off,
		 uint32_t len)
{
	uint8_t *h = s->txbuf;
	unsigned hl = TCP_HLEN;
	bool syn = flags & TCP_SYN;
	if (syn) {
		uint8_t *o = h + TCP_HLEN;
		o[0] = OPT_MSS;
		o[1] = 4;
		put16(o + 2, TCP_MSS_DEFAULT);
		hl += 4;
		if (!(flags & TCP_ACK) || c->ws_ok) { /* in a SYN-ACK only if the SYN had it */
			o[4] = 1;		      /* NOP */
			o[5] = OPT_WS;
			o[6] = 3;
			o[7] = c->rcv_wscale;
			hl += 4;
		}
	}
	uint32_t win = rcv_window(c, syn);
	uint32_t scaled = syn ? win : win >> c->rcv_wscale;
	if (flags & TCP_ACK) {
		/* rounding up where rounding down would move the right edge left; any excess
		 * over the ring's free space is trimmed on arrival */
		if (!syn && SEQ_LT(c->rcv_nxt + (scaled << c->rcv_wscale), c->rcv_adv))
			scaled++;
		scaled = min32(scaled, 0xffff);
		uint32_t edge = c->rcv_nxt + (syn ? scaled : scaled << c->rcv_wscale);
		if (SEQ_GT(edge, c->rcv_adv))
			c->rcv_adv = edge;
		c->unacked = 0;
		c->delack_at = 0;
	}
	put16(h, c->lport);
	put16(h + 2, c->rport);
	put32(h + 4, seq);
	put32(h + 8, (flags & TCP_ACK) ? c->rcv_nxt : 0);
	h[12] = (uint8_t)(hl / 4 << 4);
	h[13] = flags;
	put16(h + 14, (uint16_t)scaled);
	put16(h + 16, 0);
	put16(h + 18, 0);
	ring_get(c->sbuf, c->shead + off, h + hl, len);
	if (len) {
		c->data_segs++;
		c->small_segs += len < c->mss;
	}
	unsigned total = hl + len;
	unsigned oflags = 0;
	if (s->tx_csum_offload) {
		/* the pseudo-header over the whole segment, as Linux's TSO expects it too: the
		 * device's segmentation puts each piece's own length in */
		put16(h + 16, fold(pseudo_sum(c->lip, c->rip, total)));
		oflags |= TCP_TX_NEEDS_CSUM;
		if (len > c->mss)
			oflags |= TCP_TX_GSO | (unsigned)c->mss << 16;
	} else {
		put16(h + 16, tcp_checksum(c->lip, c->rip, h, total));
	}
	s->output(s->ctx, c->lip, c->rip, h, total, oflags);
}

/* snd_max, not snd_nxt: after a go-back snd_nxt may be behind what the peer has, and an ACK
 * below its window would only be answered by another. */
static void send_ack(struct tcp_stack *s, struct tcp_conn *c)
{
	emit(s, c, c->snd_max, TCP_ACK, 0, 0);
}

/* A reset for a segment that has no connection (RFC 9293 3.10.7.1): never for a reset, nor
 * for a segment sent to anything but our address (a broadcast). */
static void send_reset(struct tcp_stack *s, uint32_t src, uint32_t dst, const uint8_t *seg,
		       uint32_t seglen)
{
	uint8_t flags = seg[13];
	if ((flags & TCP_RST) || dst != s->ip)
		return;
	uint8_t *h = s->txbuf;
	copy(h, seg + 2, 2); /* our port: their destination */
	copy(h + 2, seg, 2);
	if (flags & TCP_ACK) {
		copy(h + 4, seg + 8, 4);
		put32(h + 8, 0);
		h[13] = TCP_RST;
	} else {
		put32(h + 4, 0);
		put32(h + 8, get32(seg + 4) + seglen);
		h[13] = TCP_RST | TCP_ACK;
	}
	h[12] = TCP_HLEN / 4 << 4;
	put16(h + 14, 0);
	put16(h + 16, 0);
	put16(h + 18, 0);
	put16(h + 16, tcp_checksum(dst, src, h, TCP_HLEN));
	s->resets_sent++;
	s->output(s->ctx, dst, src, h, TCP_HLEN, 0);
}

static void arm_rto(struct tcp_stack *s, struct tcp_conn *c)
{
	c->rto_at = now(s) + c->rto;
}

/* --- TIME_WAIT after the slot: the table of tcp.h's s->tw --- */

static bool tw_live(const struct tcp_tw *e, uint64_t t)
{
	return e->lport && t < e->until;
}

static struct tcp_tw *tw_find(struct tcp_stack *s, uint32_t src, uint32_t dst, uint16_t sport,
			      uint16_t dport)
{
	uint64_t t = now(s);
	for (int i = 0; i < TCP_TW_MAX; i++) {
		struct tcp_tw *e = &s->tw[i];
		if (tw_live(e, t) && e->lport == dport && e->rport == sport && e->rip == src &&
		    e->lip == dst)
			return e;
	}
	return 0;
}

/* A connection in TIME_WAIT whose program is done with it: what TIME_WAIT needs goes into the
 * table (the oldest entry makes room when it is full), and the slot closes. */
static void tw_park(struct tcp_stack *s, struct tcp_conn *c)
{
	uint64_t t = now(s);
	struct tcp_tw *e = 0;
	for (int i = 0; i < TCP_TW_MAX && !e; i++)
		if (!tw_live(&s->tw[i], t))
			e = &s->tw[i];
	if (!e) {
		e = &s->tw[0];
		for (int i = 1; i < TCP_TW_MAX; i++)
			if (s->tw[i].until < e->until)
				e = &s->tw[i];
		s->tw_recycled++;
	}
	e->lip = c->lip;
	e->rip = c->rip;
	e->lport = c->lport;
	e->rport = c->rport;
	e->snd_nxt = c->snd_max;
	e->rcv_nxt = c->rcv_nxt;
	e->win = (uint16_t)min32(rcv_window(c, false) >> c->rcv_wscale, 0xffff);
	e->until = c->tw_at ? c->tw_at : t + TCP_TIME_WAIT_US;
	set_closed(c, TCP_OK);
}

/* A segment for a TIME_WAIT entry: a retransmitted FIN (our last ACK was lost) is acknowledged
 * again and restarts the wait; so is anything else that takes sequence space (data, a SYN).
 * A bare ACK gets no answer (two ends in TIME_WAIT would ACK each other's ACKs forever), and
 * a RST is ignored (RFC 1337: it must not cut TIME_WAIT short). */
static void tw_input(struct tcp_stack *s, struct tcp_tw *e, uint8_t flags, uint32_t seglen)
{
	if ((flags & TCP_RST) || !seglen)
		return;
	if (flags & TCP_FIN)
		e->until = now(s) + TCP_TIME_WAIT_US;
	uint8_t *h = s->txbuf;
	put16(h, e->lport);
	put16(h + 2, e->rport);
	put32(h + 4, e->snd_nxt);
	put32(h + 8, e->rcv_nxt);
	h[12] = TCP_HLEN / 4 << 4;
	h[13] = TCP_ACK;
	put16(h + 14, e->win);
	put16(h + 16, 0);
	put16(h + 18, 0);
	put16(h + 16, tcp_checksum(e->lip, e->rip, h, TCP_HLEN));
	s->output(s->ctx, e->lip, e->rip, h, TCP_HLEN, 0);
}

/* Into TIME_WAIT (the caller parks a connection no program holds any more: tw_park). */
static void enter_time_wait(struct tcp_stack *s, struct tcp_conn *c)
{
	c->state = TCP_TIME_WAIT;
	c->rto_at = 0;
	c->tw_at = now(s) + TCP_TIME_WAIT_US;
	s->time_waits++;
}

/*
 * Send what the windows allow: new data from snd_nxt, bounded by the peer's window and the
 * congestion window, in segments of at most mss (smaller only for the last of the data or when
 * half the peer's largest window allows no more: sender-side silly window avoidance), then
 * the FIN once the ring is all sent. With data waiting, nothing in flight and a zero window,
 * the persist timer takes over.
 */
static void output(struct tcp_stack *s, struct tcp_conn *c)
{
	if (c->state < TCP_ESTABLISHED || c->state == TCP_FIN_WAIT_2 || c->state == TCP_TIME_WAIT)
		return;
	/* TSO: as much as fits one datagram, cut into MSS-sized segments by the device */
	uint32_t seg_max = s->tx_tso && s->tx_csum_offload ? TCP_TSO_MAX / c->mss * c->mss : c->mss;
	for (;;) {
		uint32_t off = c->snd_nxt - c->snd_una;
		if (off > c->slen)
			break; /* the FIN is out */
		uint32_t avail = c->slen - off;
		uint32_t wnd = min32(c->snd_wnd, c->cwnd);
		uint32_t usable = wnd > off ? wnd - off : 0;
		uint32_t n = min32(min32(avail, usable), seg_max);
		if (n > c->mss && n < avail)
			n -= n % c->mss; /* TSO: whole segments, a short one only at the end */
		bool fin = c->fin_queued && n == avail;
		if (!n && !fin)
			break;
		if (n && n < c->mss && n < avail && n < c->max_snd_wnd / 2)
			break;
		uint8_t flags = TCP_ACK | (fin ? TCP_FIN : 0) | (n && n == avail ? TCP_PSH : 0);
		if (!c->rtt_timing && c->snd_nxt == c->snd_max && n) {
			c->rtt_timing = true;
			c->rtt_seq = c->snd_nxt;
			c->rtt_start = now(s);
		}
		emit(s, c, c->snd_nxt, flags, off, n);
		c->snd_nxt += n + fin;
		if (SEQ_GT(c->snd_nxt, c->snd_max))
			c->snd_max = c->snd_nxt;
		if (!c->rto_at)
			arm_rto(s, c);
		if (fin)
			break;
	}
	/* Data waits, nothing is in flight to bring an ACK: a zero window, or one too small
	 * to use (silly window avoidance) that the persist timer will force. */
	if (c->snd_nxt == c->snd_una && c->slen && !c->persist_at) {
		c->persist_backoff = c->rto;
		c->persist_at = now(s) + c->persist_backoff;
	}
}

static void conn_init(struct tcp_stack *s, struct tcp_conn *c, uint32_t rip, uint16_t lport,
		      uint16_t rport)
{
	__builtin_memset(c, 0, CONN_META_LEN);
	c->lip = s->ip;
	c->rip = rip;
	c->lport = lport;
	c->rport = rport;
	c->iss = s->next_isn;
	s->next_isn += 0x01000193; /* any stride: a fresh ISN per connection */
	c->snd_una = c->snd_nxt = c->snd_max = c->iss;
	c->mss = MSS_ASSUMED;
	c->rcv_mss = MSS_ASSUMED;
	c->ssthresh = 0x7fffffff;
	c->rto = TCP_RTO_INIT_US;
	c->rcv_wscale = our_wscale();
}

static struct tcp_conn *conn_alloc(struct tcp_stack *s)
{
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		if (s->conns[i].state == TCP_CLOSED && !s->conns[i].owned)
			return &s->conns[i];
	return 0;
}

struct seg {
	uint32_t seq, ack, win;
	uint8_t flags;
	const uint8_t *data;
	uint32_t dlen;
	bool has_mss, has_ws;
	uint16_t mss;
	uint8_t ws;
};

/* MSS and window scale from a SYN's options; anything malformed ends the parse. */
static void parse_options(struct seg *g, const uint8_t *o, unsigned n)
{
	while (n > 0) {
		if (o[0] == 0)
			break;
		if (o[0] == 1) {
			o++;
			n--;
			continue;
		}
		if (n < 2 || o[1] < 2 || o[1] > n)
			break;
		if (o[0] == OPT_MSS && o[1] == 4) {
			g->has_mss = true;
			g->mss = get16(o + 2);
		} else if (o[0] == OPT_WS && o[1] == 3) {
			g->has_ws = true;
			g->ws = o[2] > WS_MAX ? WS_MAX : o[2];
		}
		n -= o[1];
		o += o[1];
	}
}

/* What the peer's SYN tells us: its MSS, and window scaling if both sides offer it. */
static void take_syn_options(struct tcp_conn *c, const struct seg *g)
{
	uint32_t mss = g->has_mss ? g->mss : MSS_ASSUMED;
	c->mss = (uint16_t)max32(min32(mss, TCP_MSS_DEFAULT), TCP_MSS_MIN);
	if (g->has_ws) {
		c->ws_ok = true;
		c->snd_wscale = g->ws;
	} else {
		c->snd_wscale = 0;
		c->rcv_wscale = 0;
	}
}

static void established(struct tcp_conn *c, const struct seg *g)
{
	c->state = TCP_ESTABLISHED;
	c->snd_wl1 = g->seq;
	c->snd_wl2 = g->ack;
	c->max_snd_wnd = c->snd_wnd;
	c->cwnd = 10u * c->mss; /* RFC 6928 */
	c->rto_at = 0;
	c->retries = 0;
}

static void rtt_sample(struct tcp_conn *c, uint64_t t)
{
	uint32_t r = (uint32_t)min32((uint32_t)(t - c->rtt_start), TCP_RTO_MAX_US);
	if (!c->have_rtt) {
		c->srtt = r;
		c->rttvar = r / 2;
		c->have_rtt = true;
	} else {
		uint32_t d = c->srtt > r ? c->srtt - r : r - c->srtt;
		c->rttvar = (3 * c->rttvar + d) / 4;
		c->srtt = (7 * c->srtt + r) / 8;
	}
	uint32_t rto = c->srtt + max32(1000, 4 * c->rttvar);
	c->rto = min32(max32(rto, TCP_RTO_MIN_US), TCP_RTO_MAX_US);
}

static void fast_retransmit(struct tcp_stack *s, struct tcp_conn *c)
{
	uint32_t n = min32(c->slen, c->mss);
	bool fin = c->fin_queued && n == c->slen && SEQ_GT(c->snd_max, c->snd_una + c->slen);
	if (!n && !fin)
		return;
	c->rtt_timing = false; /* Karn: no samples from retransmitted data */
	emit(s, c, c->snd_una, TCP_ACK | (fin ? TCP_FIN : 0), 0, n);
	arm_rto(s, c);
}

/* The ACK field of an acceptable segment; false if the segment is to be dropped. */
static bool process_ack(struct tcp_stack *s, struct tcp_conn *c, const struct seg *g)
{
	if (g->ack == c->snd_max + 1 && c->snd_nxt == c->snd_una && c->slen)
		c->snd_max = g->ack; /* a zero-window probe's byte taken */
	if (SEQ_GT(g->ack, c->snd_max)) {
		send_ack(s, c); /* acknowledges something not sent yet */
		return false;
	}
	uint32_t wnd = g->win << c->snd_wscale;
	if (SEQ_LT(g->ack, c->snd_una))
		return true; /* old: the window update check below would accept stale values */
	uint32_t acked = g->ack - c->snd_una;
	bool dup = !acked && !g->dlen && !(g->flags & (TCP_SYN | TCP_FIN)) && wnd &&
		   wnd == c->snd_wnd && c->snd_max != c->snd_una;
	/* An ACK that moves snd_una carries the receiver's current window even when its seq is
	 * old (the peer went back to resend): the old window, kept, would be applied from the
	 * new snd_una and reach past the edge the peer advertised. */
	if (acked || SEQ_LT(c->snd_wl1, g->seq) ||
	    (c->snd_wl1 == g->seq && SEQ_LEQ(c->snd_wl2, g->ack))) {
		c->snd_wnd = wnd;
		c->snd_wl1 = g->seq;
		c->snd_wl2 = g->ack;
		c->max_snd_wnd = max32(c->max_snd_wnd, wnd);
		if (wnd) {
			c->persist_at = 0;
		}
	}
	if (dup) {
		if (++c->dupacks == 3 && !c->in_recovery) {
			uint32_t flight = c->snd_max - c->snd_una;
			c->ssthresh = max32(flight / 2, 2u * c->mss);
			c->recover = c->snd_max;
			c->in_recovery = true;
			c->fast_retransmits++;
			fast_retransmit(s, c);
			c->cwnd = c->ssthresh + 3u * c->mss;
		} else if (c->dupacks > 3 && c->in_recovery) {
			c->cwnd += c->mss;
		}
		return true;
	}
	if (!acked)
		return true;
	uint64_t t = now(s);
	if (c->rtt_timing && SEQ_GT(g->ack, c->rtt_seq)) {
		rtt_sample(c, t);
		c->rtt_timing = false;
	}
	uint32_t end = c->snd_una + c->slen; /* where the FIN goes */
	uint32_t n = min32(acked, c->slen);
	c->shead = (c->shead + n) & MASK;
	c->slen -= n;
	c->snd_una = g->ack;
	if (SEQ_LT(c->snd_nxt, c->snd_una))
		c->snd_nxt = c->snd_una;
	c->dupacks = 0;
	c->retries = 0;
	if (c->in_recovery) {
		if (SEQ_GEQ(g->ack, c->recover)) {
			c->in_recovery = false;
			c->cwnd = c->ssthresh;
		} else { /* a partial ACK (NewReno): the next hole */
			fast_retransmit(s, c);
			c->cwnd = c->cwnd > acked ? c->cwnd - acked + c->mss : c->mss;
		}
	} else if (c->cwnd < c->ssthresh) {
		c->cwnd += min32(acked, c->mss);
	} else {
		c->cwnd += max32(1, c->mss * c->mss / c->cwnd);
	}
	c->cwnd = min32(c->cwnd, CWND_MAX); /* past any window: only keeps it from wrapping */
	if (c->snd_una == c->snd_nxt)
		c->rto_at = 0;
	else
		c->rto_at = t + c->rto;
	if (c->fin_queued && SEQ_GT(g->ack, end)) { /* our FIN is acknowledged */
		if (c->state == TCP_FIN_WAIT_1) {
			c->state = TCP_FIN_WAIT_2;
		} else if (c->state == TCP_CLOSING) {
			enter_time_wait(s, c);
			if (!c->owned) {
				tw_park(s, c);
				return false;
			}
		} else if (c->state == TCP_LAST_ACK) {
			set_closed(c, TCP_OK);
			return false;
		}
	}
	return true;
}

/*
 * Out-of-order data goes into the ring where it belongs (the ring maps sequence numbers from
 * the oldest unread byte on), inside the free space, and is remembered as a range; ranges that
 * touch are merged. False if it cannot be kept.
 */
static bool ooo_store(struct tcp_conn *c, const struct seg *g)
{
	uint32_t space = TCP_BUF_SIZE - c->rlen;
	uint32_t off = g->seq - c->rcv_nxt;
	if (off >= space || !g->dlen)
		return false;
	uint32_t n = min32(g->dlen, space - off);
	uint32_t start = g->seq, end = g->seq + n;
	bool merged = false;
	for (unsigned i = 0; i < c->nooo;) {
		struct tcp_range *r = &c->ooo[i];
		if (SEQ_LEQ(r->start, end) && SEQ_LEQ(start, r->end)) {
			if (SEQ_LT(r->start, start))
				start = r->start;
			if (SEQ_GT(r->end, end))
				end = r->end;
			*r = c->ooo[--c->nooo];
			merged = true;
			continue;
		}
		i++;
	}
	if (!merged && c->nooo == TCP_OOO_MAX)
		return false;
	ring_put(c->rbuf, c->rhead + c->rlen + off, g->data, n);
	c->ooo[c->nooo].start = start;
	c->ooo[c->nooo].end = end;
	c->nooo++;
	return true;
}

/* rcv_nxt has moved: take in the ranges it reached. */
static void ooo_advance(struct tcp_conn *c)
{
	for (unsigned i = 0; i < c->nooo;) {
		struct tcp_range *r = &c->ooo[i];
		if (SEQ_GT(r->start, c->rcv_nxt)) {
			i++;
			continue;
		}
		if (SEQ_GT(r->end, c->rcv_nxt)) {
			uint32_t d = r->end - c->rcv_nxt;
			c->rlen += d;
			c->unacked += d;
			c->rcv_nxt = r->end;
		}
		*r = c->ooo[--c->nooo];
		i = 0; /* rcv_nxt moved: look again */
	}
}

/* In-order data and FIN into the receive ring, out-of-order data beside it. */
static void process_data(struct tcp_stack *s, struct tcp_conn *c, struct seg *g)
{
	bool fin = g->flags & TCP_FIN;
	if (!g->dlen && !fin)
		return;
	if (c->state != TCP_ESTABLISHED && c->state != TCP_FIN_WAIT_1 && c->state != TCP_FIN_WAIT_2)
		return; /* the peer's FIN is in already: nothing may follow it */
	if (SEQ_LT(g->seq, c->rcv_nxt)) {
		uint32_t skip = min32(c->rcv_nxt - g->seq, g->dlen);
		g->data += skip;
		g->dlen -= skip;
		g->seq += skip;
	}
	if (g->seq != c->rcv_nxt) {
		/* out of order: the duplicate ACK tells the sender where we are (FIN dropped) */
		if (!ooo_store(c, g))
			c->ooo_dropped++;
		c->dup_acks_sent++;
		send_ack(s, c);
		return;
	}
	uint32_t n = min32(g->dlen, TCP_BUF_SIZE - c->rlen);
	ring_put(c->rbuf, c->rhead + c->rlen, g->data, n);
	c->rlen += n;
	c->rcv_nxt += n;
	c->unacked += n;
	if (g->dlen > c->rcv_mss)
		c->rcv_mss = (uint16_t)min32(g->dlen, TCP_MSS_DEFAULT);
	if (n < g->dlen) { /* past our window: the rest is dropped, and said so */
		send_ack(s, c);
		return;
	}
	if (fin) {
		c->nooo = 0; /* nothing follows a FIN */
		c->rcv_nxt++;
		c->peer_fin = true;
		if (c->state == TCP_ESTABLISHED) {
			c->state = TCP_CLOSE_WAIT;
		} else if (c->state == TCP_FIN_WAIT_1) {
			c->state = TCP_CLOSING;
		} else {
			enter_time_wait(s, c);
		}
		send_ack(s, c);
		if (c->state == TCP_TIME_WAIT && !c->owned)
			tw_park(s, c);
		return;
	}
	/* Filling a gap is acknowledged at once (RFC 5681 4.2): the sender is recovering. */
	bool gap = c->nooo;
	ooo_advance(c);
	if (gap || c->unacked >= 2u * c->rcv_mss)
		send_ack(s, c);
	else if (!c->delack_at)
		c->delack_at = now(s) + TCP_DELACK_US;
}

/* RFC 9293 3.10.7.4: is any of the segment inside the window we offered? */
static bool acceptable(const struct tcp_conn *c, const struct seg *g)
{
	uint32_t wnd = SEQ_GT(c->rcv_adv, c->rcv_nxt) ? c->rcv_adv - c->rcv_nxt : 0;
	uint32_t len = g->dlen + !!(g->flags & TCP_SYN) + !!(g->flags & TCP_FIN);
	uint32_t end = c->rcv_nxt + wnd;
	/* An empty segment may sit at the right edge: a sender that filled our window sends
	 * its ACKs from there (RFC 9293 has it outside, and two such ends would ACK each
	 * other's ACKs forever). */
	if (!len)
		return SEQ_LEQ(c->rcv_nxt, g->seq) && SEQ_LEQ(g->seq, end);
	if (!wnd)
		return false;
	uint32_t last = g->seq + len - 1;
	return (SEQ_LEQ(c->rcv_nxt, g->seq) && SEQ_LT(g->seq, end)) ||
	       (SEQ_LEQ(c->rcv_nxt, last) && SEQ_LT(last, end));
}

static void input_syn_sent(struct tcp_stack *s, struct tcp_conn *c, const struct seg *g,
			   uint32_t src, uint32_t dst, const uint8_t *raw, uint32_t seglen)
{
	bool ack_ok = false;
	if (g->flags & TCP_ACK) {
		ack_ok = SEQ_GT(g->ack, c->iss) && SEQ_LEQ(g->ack, c->snd_max);
		if (!ack_ok) {
			send_reset(s, src, dst, raw, seglen);
			return;
		}
	}
	if (g->flags & TCP_RST) {
		if (ack_ok)
			set_closed(c, TCP_ERR_REFUSED);
		return;
	}
	if (!(g->flags & TCP_SYN))
		return;
	c->irs = g->seq;
	c->rcv_nxt = g->seq + 1;
	c->rcv_adv = c->rcv_nxt;
	take_syn_options(c, g);
	c->snd_wnd = g->win; /* never scaled in a SYN */
	if (ack_ok) {
		c->snd_una = g->ack;
		if (SEQ_LT(c->snd_nxt, c->snd_una))
			c->snd_nxt = c->snd_una;
		established(c, g);
		send_ack(s, c);
		output(s, c);
	} else { /* simultaneous open */
		c->state = TCP_SYN_RCVD;
		emit(s, c, c->iss, TCP_SYN | TCP_ACK, 0, 0);
		arm_rto(s, c);
	}
}

static int find_conn(struct tcp_stack *s, uint32_t src, uint32_t dst, uint16_t sport,
		     uint16_t dport)
{
	for (int i = 0; i < TCP_MAX_CONNS; i++) {
		struct tcp_conn *c = &s->conns[i];
		if (c->state != TCP_CLOSED && c->lport == dport && c->rport == sport &&
		    c->rip == src && c->lip == dst)
			return i;
	}
	return -1;
}

static bool listening(const struct tcp_stack *s, uint16_t port)
{
	for (int i = 0; i < TCP_MAX_LISTEN; i++)
		if (port && s->listen[i] == port)
			return true;
	return false;
}

void tcp_input(struct tcp_stack *s, uint32_t src, uint32_t dst, const void *segp, unsigned len,
	       unsigned flags)
{
	const uint8_t *raw = segp;
	if (len < TCP_HLEN || len > 0xffff ||
	    (!(flags & TCP_RX_CSUM_OK) && tcp_checksum(src, dst, raw, len) != 0)) {
		s->rx_bad++;
		return;
	}
	unsigned hl = (raw[12] >> 4) * 4u;
	if (hl < TCP_HLEN || hl > len) {
		s->rx_bad++;
		return;
	}
	struct seg g = {
	    .seq = get32(raw + 4),
	    .ack = get32(raw + 8),
	    .win = get16(raw + 14),
	    .flags = raw[13],
	    .data = raw + hl,
	    .dlen = len - hl,
	};
	uint16_t sport = get16(raw), dport = get16(raw + 2);
	uint32_t seglen = g.dlen + !!(g.flags & TCP_SYN) + !!(g.flags & TCP_FIN);
	if (g.flags & TCP_SYN)
		parse_options(&g, raw + TCP_HLEN, hl - TCP_HLEN);
	int id = find_conn(s, src, dst, sport, dport);
	if (id < 0) {
		struct tcp_tw *e = tw_find(s, src, dst, sport, dport);
		if (e) {
			tw_input(s, e, g.flags, seglen);
			return;
		}
		struct tcp_conn *c;
		if ((g.flags & (TCP_SYN | TCP_ACK | TCP_RST)) == TCP_SYN && dst == s->ip &&
		    listening(s, dport) && sport && (c = conn_alloc(s))) {
			conn_init(s, c, src, dport, sport);
			c->passive = true;
			c->state = TCP_SYN_RCVD;
			c->irs = g.seq;
			c->rcv_nxt = g.seq + 1;
			c->rcv_adv = c->rcv_nxt;
			take_syn_options(c, &g);
			c->snd_wnd = g.win;
			emit(s, c, c->iss, TCP_SYN | TCP_ACK, 0, 0);
			c->snd_nxt = c->snd_max = c->iss + 1;
			arm_rto(s, c);
			return;
		}
		s->rx_no_conn++;
		send_reset(s, src, dst, raw, seglen);
		return;
	}
	struct tcp_conn *c = &s->conns[id];
	if (c->state == TCP_SYN_SENT) {
		input_syn_sent(s, c, &g, src, dst, raw, seglen);
		return;
	}
	if (c->state == TCP_SYN_RCVD && (g.flags & TCP_SYN) && !(g.flags & TCP_ACK) &&
	    g.seq == c->irs) { /* our SYN-ACK was lost */
		emit(s, c, c->iss, TCP_SYN | TCP_ACK, 0, 0);
		return;
	}
	if (!acceptable(c, &g)) {
		if (!(g.flags & TCP_RST))
			send_ack(s, c);
		return;
	}
	if (g.flags & TCP_RST) {
		if (g.seq == c->rcv_nxt)
			set_closed(c, TCP_ERR_RESET);
		else
			send_ack(s, c); /* RFC 5961 challenge ACK */
		return;
	}
	if (g.flags & TCP_SYN) {
		send_ack(s, c); /* RFC 5961 challenge ACK */
		return;
	}
	if (!(g.flags & TCP_ACK))
		return;
	if (c->state == TCP_SYN_RCVD) {
		if (!(SEQ_GT(g.ack, c->iss) && SEQ_LEQ(g.ack, c->snd_max))) {
			send_reset(s, src, dst, raw, seglen);
			return;
		}
		c->snd_una = c->iss + 1;
		c->snd_wnd = g.win << c->snd_wscale;
		established(c, &g);
		if (c->fin_queued)
			c->state = TCP_FIN_WAIT_1;
	}
	if (!process_ack(s, c, &g))
		return;
	process_data(s, c, &g);
	if (c->state != TCP_CLOSED)
		output(s, c);
}

static void rto_expired(struct tcp_stack *s, struct tcp_conn *c)
{
	c->rto_at = 0;
	if (++c->retries > TCP_MAX_RETRIES) {
		if (synchronized(c))
			emit(s, c, c->snd_max, TCP_RST | TCP_ACK, 0, 0);
		set_closed(c, TCP_ERR_TIMEOUT);
		return;
	}
	c->rto = min32(c->rto * 2, TCP_RTO_MAX_US);
	c->rtt_timing = false;
	c->retransmits++;
	if (c->state == TCP_SYN_SENT || c->state == TCP_SYN_RCVD) {
		emit(s, c, c->iss, c->state == TCP_SYN_SENT ? TCP_SYN : TCP_SYN | TCP_ACK, 0, 0);
		arm_rto(s, c);
		return;
	}
	uint32_t flight = c->snd_max - c->snd_una;
	c->ssthresh = max32(flight / 2, 2u * c->mss);
	c->cwnd = c->mss;
	c->in_recovery = false;
	c->dupacks = 0;
	c->snd_nxt = c->snd_una; /* go back: resend from the oldest unacknowledged byte */
	output(s, c);
}

/*
 * Data waits and nothing is in flight. A zero window: one byte past it, to learn when it
 * opens (the probe is not in flight: snd_nxt stays; an ACK for it moves snd_una past snd_nxt,
 * which catches up). A small window: what fits, sent as usual.
 */
static void persist_expired(struct tcp_stack *s, struct tcp_conn *c)
{
	c->persist_at = 0;
	if (!c->slen || c->snd_nxt != c->snd_una)
		return;
	if (c->snd_wnd) {
		uint32_t n = min32(min32(c->snd_wnd, c->slen), c->mss);
		emit(s, c, c->snd_nxt, TCP_ACK, 0, n);
		c->snd_nxt += n;
		if (SEQ_GT(c->snd_nxt, c->snd_max))
			c->snd_max = c->snd_nxt;
		arm_rto(s, c);
		return;
	}
	emit(s, c, c->snd_nxt, TCP_ACK, 0, 1);
	c->persist_backoff = min32(c->persist_backoff * 2, TCP_PERSIST_MAX_US);
	c->persist_at = now(s) + c->persist_backoff;
}

void tcp_timers(struct tcp_stack *s)
{
	uint64_t t = now(s);
	for (int i = 0; i < TCP_MAX_CONNS; i++) {
		struct tcp_conn *c = &s->conns[i];
		if (c->state == TCP_CLOSED)
			continue;
		if (c->tw_at && t >= c->tw_at) {
			set_closed(c, TCP_OK);
			continue;
		}
		if (c->delack_at && t >= c->delack_at)
			send_ack(s, c);
		if (c->rto_at && t >= c->rto_at)
			rto_expired(s, c);
		if (c->state != TCP_CLOSED && c->persist_at && t >= c->persist_at)
			persist_expired(s, c);
	}
}

static void earliest(uint64_t *m, uint64_t t)
{
	if (t && (!*m || t < *m))
		*m = t;
}

uint64_t tcp_next_timer(const struct tcp_stack *s)
{
	uint64_t m = 0;
	for (int i = 0; i < TCP_MAX_CONNS; i++) {
		const struct tcp_conn *c = &s->conns[i];
		if (c->state == TCP_CLOSED)
			continue;
		earliest(&m, c->rto_at);
		earliest(&m, c->delack_at);
		earliest(&m, c->persist_at);
		earliest(&m, c->tw_at);
	}
	return m;
}

void tcp_init(struct tcp_stack *s, uint32_t ip, tcp_output_fn out, tcp_now_fn nowfn, void *ctx,
	      uint32_t isn)
{
	__builtin_memset(s, 0, __builtin_offsetof(struct tcp_stack, conns));
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		__builtin_memset(&s->conns[i], 0, CONN_META_LEN);
	s->ip = ip;
	s->output = out;
	s->now = nowfn;
	s->ctx = ctx;
	s->next_isn = isn;
	s->next_port = EPHEMERAL_LO;
}

int tcp_listen(struct tcp_stack *s, uint16_t port)
{
	if (!port || listening(s, port))
		return -1;
	for (int i = 0; i < TCP_MAX_LISTEN; i++)
		if (!s->listen[i]) {
			s->listen[i] = port;
			return 0;
		}
	return -1;
}

int tcp_accept(struct tcp_stack *s, uint16_t port)
{
	for (int i = 0; i < TCP_MAX_CONNS; i++) {
		struct tcp_conn *c = &s->conns[i];
		if (c->passive && !c->accepted && c->lport == port && c->state >= TCP_ESTABLISHED) {
			c->accepted = c->owned = true;
			return i;
		}
	}
	return -1;
}

static bool port_in_use(struct tcp_stack *s, uint16_t port)
{
	if (listening(s, port))
		return true;
	uint64_t t = now(s);
	for (int i = 0; i < TCP_TW_MAX; i++)
		if (tw_live(&s->tw[i], t) && s->tw[i].lport == port)
			return true;
	for (int i = 0; i < TCP_MAX_CONNS; i++)
		if ((s->conns[i].state != TCP_CLOSED || s->conns[i].owned) &&
		    s->conns[i].lport == port)
			return true;
	return false;
}

int tcp_connect(struct tcp_stack *s, uint16_t lport, uint32_t dst, uint16_t dport)
{
	struct tcp_conn *c = conn_alloc(s);
	if (!c || !dport)
		return -1;
	if (!lport) {
		for (unsigned tries = 0; tries < 0x4000 && !lport; tries++) {
			uint16_t p = s->next_port++;
			if (s->next_port < EPHEMERAL_LO)
				s->next_port = EPHEMERAL_LO;
			if (!port_in_use(s, p))
				lport = p;
		}
		if (!lport)
			return -1;
	} else if (port_in_use(s, lport)) {
		return -1;
	}
	conn_init(s, c, dst, lport, dport);
	c->owned = true;
	c->state = TCP_SYN_SENT;
	emit(s, c, c->iss, TCP_SYN, 0, 0);
	c->snd_nxt = c->snd_max = c->iss + 1;
	arm_rto(s, c);
	return (int)(c - s->conns);
}

int tcp_send(struct tcp_stack *s, int id, const void *buf, unsigned len)
{
	struct tcp_conn *c = conn(s, id);
	if (!c || c->fin_queued ||
	    (c->state != TCP_ESTABLISHED && c->state != TCP_CLOSE_WAIT &&
	     c->state != TCP_SYN_SENT && c->state != TCP_SYN_RCVD))
		return -1;
	uint32_t n = min32(len, TCP_BUF_SIZE - c->slen);
	ring_put(c->sbuf, c->shead + c->slen, buf, n);
	c->slen += n;
	output(s, c);
	return (int)n;
}

int tcp_recv(struct tcp_stack *s, int id, void *buf, unsigned len)
{
	struct tcp_conn *c = conn(s, id);
	if (!c)
		return -1;
	if (!c->rlen)
		return c->peer_fin || (c->state == TCP_CLOSED && c->err) ? -1 : 0;
	uint32_t n = min32(len, c->rlen);
	ring_get(c->rbuf, c->rhead, buf, n);
	c->rhead = (c->rhead + n) & MASK;
	c->rlen -= n;
	/* A window update once the right edge can move by two segments (or half the ring). */
	if (synchronized(c) && c->state != TCP_CLOSED && !c->peer_fin) {
		uint32_t space = TCP_BUF_SIZE - c->rlen;
		uint32_t edge = c->rcv_nxt + space;
		if (SEQ_GEQ(edge, c->rcv_adv + min32(2u * c->rcv_mss, TCP_BUF_SIZE / 2)))
			send_ack(s, c);
	}
	return (int)n;
}

void tcp_close(struct tcp_stack *s, int id)
{
	struct tcp_conn *c = conn(s, id);
	if (!c || c->fin_queued)
		return;
	switch (c->state) {
	case TCP_SYN_SENT:
		set_closed(c, TCP_OK);
		return;
	case TCP_SYN_RCVD: /* FIN_WAIT_1 once established */
		break;
	case TCP_ESTABLISHED:
		c->state = TCP_FIN_WAIT_1;
		break;
	case TCP_CLOSE_WAIT:
		c->state = TCP_LAST_ACK;
		break;
	default:
		return;
	}
	c->fin_queued = true;
	output(s, c);
}

void tcp_abort(struct tcp_stack *s, int id)
{
	struct tcp_conn *c = conn(s, id);
	if (!c || c->state == TCP_CLOSED)
		return;
	if (synchronized(c))
		emit(s, c, c->snd_max, TCP_RST | TCP_ACK, 0, 0);
	set_closed(c, TCP_OK);
}

void tcp_release(struct tcp_stack *s, int id)
{
	struct tcp_conn *c = conn(s, id);
	if (!c)
		return;
	if (c->state == TCP_TIME_WAIT)
		tw_park(s, c);
	else if (c->state != TCP_CLOSED && !c->fin_queued)
		tcp_abort(s, id);
	else if (c->state != TCP_CLOSED && !c->tw_at)
		c->tw_at = now(s) + ORPHAN_US; /* a peer that never sends its FIN */
	c->owned = false;
}

enum tcp_state tcp_state(const struct tcp_stack *s, int id)
{
	if (id < 0 || id >= TCP_MAX_CONNS)
		return TCP_CLOSED;
	return (enum tcp_state)s->conns[id].state;
}

unsigned tcp_send_space(const struct tcp_stack *s, int id)
{
	if (id < 0 || id >= TCP_MAX_CONNS)
		return 0;
	return TCP_BUF_SIZE - s->conns[id].slen;
}

bool tcp_send_done(const struct tcp_stack *s, int id)
{
	if (id < 0 || id >= TCP_MAX_CONNS)
		return false;
	const struct tcp_conn *c = &s->conns[id];
	return !c->slen && c->snd_una == c->snd_max;
}
