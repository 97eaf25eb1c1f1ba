/* The TCP test stream's bytes (net_tcp_pattern) from a table of one period: k * 131 repeats
 * every 256 bytes and k >> 9 every 2^17, so byte k is table[k mod 2^17]. Filling and checking
 * are then copies and word compares instead of a multiply per byte, which made the guest the
 * bottleneck of tcp_stream and tcp_sink at large writes. */
#include "lib.h"
#include "test_net.h"

#define PERIOD (1u << 17)

static uint8_t table[PERIOD];
static bool made;

static void make(void)
{
	for (unsigned k = 0; k < PERIOD; k++)
		table[k] = net_tcp_pattern(k);
	made = true;
}

void net_tcp_pattern_fill(uint8_t *p, uint64_t from, unsigned n)
{
	if (!made)
		make();
	while (n) {
		unsigned off = (unsigned)(from % PERIOD), k = PERIOD - off < n ? PERIOD - off : n;
		memcpy(p, table + off, k);
		p += k;
		from += k;
		n -= k;
	}
}

/* Bytes of p[0..n) that differ from the stream at from; the first one's offset in *first. */
static uint64_t count_bad(const uint8_t *p, uint64_t from, unsigned n, uint64_t *first)
{
	uint64_t bad = 0;
	for (unsigned i = 0; i < n; i++)
		if (p[i] != net_tcp_pattern(from + i) && !bad++)
			*first = from + i;
	return bad;
}

uint64_t net_tcp_pattern_check(const uint8_t *p, uint64_t from, unsigned n, uint64_t *first)
{
	if (!made)
		make();
	uint64_t bad = 0;
	while (n) {
		unsigned off = (unsigned)(from % PERIOD), k = PERIOD - off < n ? PERIOD - off : n;
		const uint8_t *t = table + off;
		unsigned i = 0;
		for (; i + 8 <= k; i += 8) {
			uint64_t a, b;
			__builtin_memcpy(&a, p + i, 8);
			__builtin_memcpy(&b, t + i, 8);
			if (a != b)
				break;
		}
		if (i < k) { /* a difference (or the tail): byte by byte from here */
			uint64_t f = 0, b = count_bad(p + i, from + i, k - i, &f);
			if (b && !bad)
				*first = f;
			bad += b;
		}
		p += k;
		from += k;
		n -= k;
	}
	return bad;
}
