/*
 * Network benchmark programs for the probe (test=serve|udp_stream|udp_rr|udp_sink|pktgen|
 * bulk_send|bulk_recv|tcp_stream) on the first virtio-net device; see net.h for the stack and its
 * net.* words.
 */
#ifndef TEST_NET_H
#define TEST_NET_H

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

/* Shared by the programs (test_net.c). */
uint64_t net_arg(const char *key, uint64_t def);
uint64_t net_secs_cycles(uint64_t secs);
/* num / den with one decimal, as "X.Y", into out. */
void net_fmt_ratio(char out[32], uint64_t num, uint64_t den);
/* Resolve the peer's MAC (ARP), printing `probe: net peer_mac=...`. */
const char *net_peer_mac(uint8_t mac[6]);
void net_report_stats(void);

const char *net_udp_stream(void);
const char *net_pktgen(void);
const char *net_udp_rr(void);
const char *net_bulk_send(void); /* test_net_bulk.c */
const char *net_bulk_recv(void);
const char *net_tcp_stream(void); /* test_tcp_stream.c */

#endif
