/*
 * Network benchmark programs for the probe (test=serve|udp_stream|udp_rr|udp_sink|pktgen|
 * bulk_send|bulk_recv|tcp_stream|tcp_sink|tcp_rr|tcp_crr) on the first virtio-net device; see net.h
 * for the stack and its net.* words.
 */
#ifndef TEST_NET_H
#define TEST_NET_H

#include <stdbool.h>
#include <stdint.h>

/* The test= programs: each brings the interface up first and reports its statistics last. */
const char *test_serve(void);
const char *test_udp_sink(void);
const char *test_udp_stream(void);
const char *test_udp_rr(void);
const char *test_pktgen(void);
const char *test_bulk_send(void);
const char *test_bulk_recv(void);
const char *test_tcp_stream(void);
const char *test_tcp_sink(void);
const char *test_tcp_rr(void);
const char *test_tcp_crr(void);

/* Shared by the programs (test_net.c). */
uint64_t net_arg(const char *key, uint64_t def);
uint64_t net_secs_cycles(uint64_t secs);
/* num / den with one decimal, as "X.Y", into out. */
void net_fmt_ratio(char out[32], uint64_t num, uint64_t den);
/* num/den with `decimals` digits after the point (net_fmt_ratio: one). */
void net_fmt_fixed(char out[32], uint64_t num, uint64_t den, unsigned decimals);
/* Microseconds as seconds to the millisecond ("0.094"): a short transfer is not "0.0". */
void net_fmt_secs(char out[32], uint64_t us);
/* Resolve the peer's MAC (ARP), printing `probe: net peer_mac=...`. */
const char *net_peer_mac(uint8_t mac[6]);
void net_report_stats(void);

const char *net_udp_stream(void);
const char *net_pktgen(void);
const char *net_udp_rr(void);
const char *net_bulk_send(void); /* test_net_bulk.c */
const char *net_bulk_recv(void);
const char *net_tcp_stream(void); /* test_tcp_stream.c */
const char *net_tcp_sink(void);	  /* test_tcp_sink.c */
const char *net_tcp_rr(void);	  /* test_tcp_rr.c */
const char *net_tcp_crr(void);	  /* test_tcp_crr.c */

/* Byte k of the TCP test stream (tcp_stream sends it, tcp_sink and tcpperf check it). */
static inline uint8_t net_tcp_pattern(uint64_t k)
{
	return (uint8_t)(k * 131 + (k >> 9));
}
/* tcp_pattern.c: p[0..n) = the stream's bytes from `from`; and how many of p[0..n) differ
 * from them (the first such byte's position in *first). */
void net_tcp_pattern_fill(uint8_t *p, uint64_t from, unsigned n);
uint64_t net_tcp_pattern_check(const uint8_t *p, uint64_t from, unsigned n, uint64_t *first);
/* Poll the TCP stack until done(id) or ms pass; false on a timeout or a NIC error. */
bool net_tcp_wait(bool (*done)(int), int id, unsigned ms);

/* net_lat.c: a latency histogram (ns) and its percentiles, for the rr programs. */
void net_lat_reset(void);
void net_lat_add(uint64_t ns);
uint64_t net_lat_percentile(unsigned pct);
/* An rr program's figures as text: seconds, transactions/s, p50/p90/p99, mean and max (us). */
struct net_lat_text {
	char secs[32], tps[32], p50[32], p90[32], p99[32], avg[32], max[32];
};
void net_lat_text(struct net_lat_text *t, uint64_t trans, uint64_t us, uint64_t sum_ns,
		  uint64_t max_ns);

#endif
