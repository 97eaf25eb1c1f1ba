/*
 * TCP (RFC 9293) for the probe, in plain C with no dependency on the rest of the stack: it
 * sees IP payloads and addresses, sends through a callback and reads time from a callback, so
 * the host's unit tests drive it with crafted segments and a fake clock (tests/unit/test_tcp.c).
 *
 * What it does: active and passive open with the MSS and window scale options; in-order
 * receive into a fixed ring with a real advertised window (never shrunk) and delayed ACKs
 * (every second full segment, else after TCP_DELACK_US); a sender bounded by the peer's window
 * and a congestion window (slow start, congestion avoidance, NewReno fast retransmit and
 * recovery on three duplicate ACKs), zero-window probes on a persist timer, retransmission on
 * an RTO from RFC 6298 estimates with Karn's rule and exponential backoff; FIN and RST both
 * ways, TIME_WAIT of 60 s; a small table of connections and listening ports.
 * TIME_WAIT outlives the connection's slot: a connection released by its program (or closed
 * after its release) that reaches TIME_WAIT leaves only its addresses, ports and sequence
 * numbers in a table of TCP_TW_MAX entries, and the slot is free for the next connection, so
 * a program can open and close connections one after another (netperf's TCP_CRR). An entry
 * answers a retransmitted FIN (or anything but a RST, which it ignores: RFC 1337) with an ACK
 * and keeps its local port from being chosen again until it expires; when the table is full
 * the oldest entry is dropped early (counted in tw_recycled). Ephemeral ports are taken in
 * turn from 49152 up, skipping any in use or in TIME_WAIT.
 * Out-of-order segments are kept (up to TCP_OOO_MAX separate ranges, inside the window; past
 * that they are dropped) and answered with an immediate duplicate ACK, which drives the
 * sender's fast retransmit; the ACK for data that fills a gap goes at once too.
 * Offloads: with tx_csum_offload every segment leaves with only the pseudo-header sum in its
 * checksum (TCP_TX_NEEDS_CSUM); with tx_tso as well, segments of up to TCP_TSO_MAX bytes of
 * data, whole MSS-sized pieces but at the end, for the device to cut (TCP_TX_GSO).
 * What it does not: no SACK, timestamps or urgent data; data carried on a SYN is not accepted
 * (the peer sends it again).
 *
 * Sequence numbers are compared modulo 2^32 (SEQ_LT and friends). Addresses are opaque 32-bit
 * values (network byte order in the probe) used for the pseudo-header and demultiplexing;
 * ports are in host order. No allocation: a stack is one caller-owned struct.
 */
#ifndef TCP_H
#define TCP_H

#include <stdbool.h>
#include <stdint.h>

#define IP_PROTO_TCP	   6
#define TCP_HLEN	   20
#define TCP_MAX_CONNS	   4
#define TCP_MAX_LISTEN	   4
#define TCP_OOO_MAX	   8	  /* out-of-order ranges kept per connection */
#define TCP_BUF_SIZE	   65536u /* per connection, each way; a power of two */
#define TCP_MSS_DEFAULT	   1460	  /* what we announce: a 1500-byte MTU less IPv4 and TCP */
#define TCP_MSS_MIN	   64	  /* a peer's MSS below this is raised to it */
#define TCP_DELACK_US	   20000
#define TCP_RTO_INIT_US	   1000000
#define TCP_RTO_MIN_US	   200000
#define TCP_RTO_MAX_US	   60000000
#define TCP_MAX_RETRIES	   10	    /* RTO expiries in a row before the connection is dropped */
#define TCP_TIME_WAIT_US   60000000 /* 2 MSL as Linux takes it: outlasts a peer's backed-off FIN */
#define TCP_TW_MAX	   1024	    /* released connections remembered in TIME_WAIT */
#define TCP_PERSIST_MAX_US 5000000

#define SEQ_LT(a, b)  ((int32_t)((uint32_t)(a) - (uint32_t)(b)) < 0)
#define SEQ_LEQ(a, b) (!SEQ_LT(b, a))
#define SEQ_GT(a, b)  SEQ_LT(b, a)
#define SEQ_GEQ(a, b) (!SEQ_LT(a, b))

/* Header flags. */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_PSH 0x08
#define TCP_ACK 0x10

/* tcp_output_fn flags: the checksum field holds only the pseudo-header sum (offload). */
#define TCP_TX_NEEDS_CSUM 0x1
/* ... and the data is longer than one MSS (TSO): the device cuts it into segments of
 * TCP_TX_GSO_SIZE(flags) bytes (the connection's MSS, in the flags' upper 16 bits). */
#define TCP_TX_GSO	   0x2
#define TCP_TX_GSO_SIZE(f) ((unsigned)(f) >> 16)
/* The most data in one TSO segment: an IPv4 datagram of at most 65535 bytes. */
#define TCP_TSO_MAX (65535 - 20 - TCP_HLEN)
/* tcp_input flags: the checksum was verified already (offload). */
#define TCP_RX_CSUM_OK 0x1

enum tcp_state {
	TCP_CLOSED,
	TCP_LISTEN,
	TCP_SYN_SENT,
	TCP_SYN_RCVD,
	TCP_ESTABLISHED,
	TCP_FIN_WAIT_1,
	TCP_FIN_WAIT_2,
	TCP_CLOSE_WAIT,
	TCP_CLOSING,
	TCP_LAST_ACK,
	TCP_TIME_WAIT,
};

enum tcp_err { TCP_OK, TCP_ERR_RESET, TCP_ERR_REFUSED, TCP_ERR_TIMEOUT };

struct tcp_hdr {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t off; /* data offset in 32-bit words, high nibble */
	uint8_t flags;
	uint16_t win, csum, urg;
} __attribute__((packed));

/* One segment out: an IP payload (TCP header and data) from src to dst. */
typedef void (*tcp_output_fn)(void *ctx, uint32_t src, uint32_t dst, const void *seg, unsigned len,
			      unsigned flags);
typedef uint64_t (*tcp_now_fn)(void *ctx); /* microseconds, monotonic */

struct tcp_conn {
	uint8_t state;		/* enum tcp_state */
	uint8_t err;		/* enum tcp_err, why it closed */
	bool owned;		/* the program holds its id (tcp_connect, tcp_accept) */
	bool passive, accepted; /* from a listening port; handed out by tcp_accept */
	bool fin_queued;	/* tcp_close called: FIN after the send ring */
	bool peer_fin;		/* the peer's FIN is in (tcp_recv returns -1 once drained) */
	uint32_t lip, rip;
	uint16_t lport, rport;

	/* Send side. The ring holds [snd_una, snd_una + slen); a FIN follows it. */
	uint32_t iss, snd_una, snd_nxt, snd_max;
	uint32_t snd_wnd, snd_wl1, snd_wl2, max_snd_wnd;
	uint32_t cwnd, ssthresh, recover;
	uint16_t mss;	  /* the most data we put in one segment */
	uint16_t rcv_mss; /* the largest segment seen from the peer: "full-sized" for ACKs */
	uint8_t snd_wscale, rcv_wscale, dupacks;
	bool ws_ok; /* both SYNs carried the window scale option */
	bool in_recovery;
	uint32_t shead, slen;

	/* Receive side. The ring holds bytes [rcv_nxt - rlen, rcv_nxt) not yet read. */
	uint32_t irs, rcv_nxt, rcv_adv; /* rcv_adv: the right edge last advertised */
	uint32_t rhead, rlen;
	uint32_t unacked; /* bytes received since our last ACK */
	/* Out-of-order data, in the ring at its place past the unread bytes: its ranges. */
	struct tcp_range {
		uint32_t start, end;
	} ooo[TCP_OOO_MAX];
	uint8_t nooo;

	/* Timers: absolute microseconds, 0 when off. */
	uint64_t rto_at, delack_at, persist_at, tw_at;
	uint32_t rto, srtt, rttvar; /* microseconds */
	bool have_rtt;
	uint32_t persist_backoff;
	uint8_t retries;
	bool rtt_timing;
	uint32_t rtt_seq;
	uint64_t rtt_start;

	uint64_t retransmits, fast_retransmits, dup_acks_sent, ooo_dropped;
	/* Segments sent with data (a TSO segment counts once), and those of them with less
	 * than one MSS: what a program's small writes became on the wire. */
	uint64_t data_segs, small_segs;

	uint8_t sbuf[TCP_BUF_SIZE], rbuf[TCP_BUF_SIZE];
};

struct tcp_stack {
	uint32_t ip; /* our address: what segments must be sent to */
	tcp_output_fn output;
	tcp_now_fn now;
	void *ctx;
	bool tx_csum_offload; /* leave the data checksum to the device (TCP_TX_NEEDS_CSUM) */
	bool tx_tso;	      /* with tx_csum_offload: segments of up to TCP_TSO_MAX (TCP_TX_GSO) */
	uint32_t next_isn;    /* the next connection's initial sequence number */
	uint16_t next_port;   /* the next ephemeral port */
	uint16_t listen[TCP_MAX_LISTEN]; /* listening ports, 0: unused */
	uint64_t rx_bad, rx_no_conn, resets_sent;
	/* connections that reached TIME_WAIT; TIME_WAIT entries dropped early (table full) */
	uint64_t time_waits, tw_recycled;
	struct tcp_tw {
		uint32_t lip, rip;
		uint16_t lport, rport; /* lport 0: a free entry */
		uint32_t snd_nxt, rcv_nxt;
		uint16_t win; /* the window field of its ACKs */
		uint64_t until;
	} tw[TCP_TW_MAX];
	struct tcp_conn conns[TCP_MAX_CONNS];
	uint8_t txbuf[60 + TCP_TSO_MAX];
};

void tcp_init(struct tcp_stack *s, uint32_t ip, tcp_output_fn output, tcp_now_fn now, void *ctx,
	      uint32_t isn);
/* One received IP payload from src to dst (flags: TCP_RX_CSUM_OK). */
void tcp_input(struct tcp_stack *s, uint32_t src, uint32_t dst, const void *seg, unsigned len,
	       unsigned flags);
/* Run the timers that are due; call it often (every millisecond or so). */
void tcp_timers(struct tcp_stack *s);
/* The earliest timer deadline (microseconds), or 0 if none is set. */
uint64_t tcp_next_timer(const struct tcp_stack *s);

/* Returns 0, or -1 if the table is full or the port is taken. */
int tcp_listen(struct tcp_stack *s, uint16_t port);
/* An established connection from a listening port not handed out yet (its id), or -1. */
int tcp_accept(struct tcp_stack *s, uint16_t port);
/* Sends a SYN (lport 0: an ephemeral port); the connection's id, or -1 if the table is full. */
int tcp_connect(struct tcp_stack *s, uint16_t lport, uint32_t dst, uint16_t dport);
/* Queues up to len bytes; returns how many (0 when the ring is full), -1 if it cannot send. */
int tcp_send(struct tcp_stack *s, int id, const void *buf, unsigned len);
/* Up to len bytes; 0 if none are in yet, -1 at the end of the stream (FIN) or on error. */
int tcp_recv(struct tcp_stack *s, int id, void *buf, unsigned len);
/* No more data from us: a FIN once the ring is sent. Receiving goes on. */
void tcp_close(struct tcp_stack *s, int id);
/* Reset the connection now (RST). */
void tcp_abort(struct tcp_stack *s, int id);
/* The program is done with id: the slot is reused once the connection is closed or in
 * TIME_WAIT (a connection never closed with tcp_close is aborted; one closed gets a minute to
 * finish, and its TIME_WAIT goes on in the stack's table). */
void tcp_release(struct tcp_stack *s, int id);

enum tcp_state tcp_state(const struct tcp_stack *s, int id);
unsigned tcp_send_space(const struct tcp_stack *s, int id);
/* True when everything queued (and the FIN, if any) is acknowledged. */
bool tcp_send_done(const struct tcp_stack *s, int id);

/* The checksum over the pseudo-header and seg: 0 when a received segment is intact. */
uint16_t tcp_checksum(uint32_t src, uint32_t dst, const void *seg, unsigned len);

#endif
