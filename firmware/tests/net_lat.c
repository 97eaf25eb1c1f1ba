/*
 * Latency percentiles for the request/response programs (udp_rr, tcp_rr): a log-linear
 * histogram of nanoseconds, 16 buckets per power of two, so no sample is kept.
 */
#include "lib.h"
#include "test_net.h"

#define SUB_BITS 4
#define NBUCKETS (64 << SUB_BITS)

static uint32_t hist[NBUCKETS];
static uint64_t count;

static unsigned bucket(uint64_t ns)
{
	if (ns < (1u << SUB_BITS))
		return (unsigned)ns;
	unsigned msb = 63 - (unsigned)__builtin_clzll(ns);
	unsigned sub = (unsigned)(ns >> (msb - SUB_BITS)) & ((1u << SUB_BITS) - 1);
	return (msb - SUB_BITS + 1) << SUB_BITS | sub;
}

/* The middle of a bucket, in ns. */
static uint64_t bucket_mid(unsigned b)
{
	if (b < (1u << SUB_BITS))
		return b;
	unsigned msb = (b >> SUB_BITS) + SUB_BITS - 1, sub = b & ((1u << SUB_BITS) - 1);
	uint64_t lo = (1ull << msb) | (uint64_t)sub << (msb - SUB_BITS);
	return lo + (1ull << (msb - SUB_BITS)) / 2;
}

void net_lat_reset(void)
{
	memset(hist, 0, sizeof(hist));
	count = 0;
}

void net_lat_add(uint64_t ns)
{
	hist[bucket(ns)]++;
	count++;
}

uint64_t net_lat_percentile(unsigned pct)
{
	uint64_t want = (count * pct + 99) / 100, seen = 0;
	for (unsigned b = 0; b < NBUCKETS; b++)
		if ((seen += hist[b]) >= want && want)
			return bucket_mid(b);
	return 0;
}

void net_lat_text(struct net_lat_text *t, uint64_t trans, uint64_t us, uint64_t sum_ns,
		  uint64_t max_ns)
{
	net_fmt_secs(t->secs, us);
	net_fmt_ratio(t->tps, trans * 1000000, us);
	net_fmt_ratio(t->p50, net_lat_percentile(50), 1000);
	net_fmt_ratio(t->p90, net_lat_percentile(90), 1000);
	net_fmt_ratio(t->p99, net_lat_percentile(99), 1000);
	net_fmt_ratio(t->avg, trans ? sum_ns / trans : 0, 1000);
	net_fmt_ratio(t->max, max_ns, 1000);
}
