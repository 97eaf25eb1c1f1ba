#include "crc32.h"

#include <pthread.h>

/* Slicing-by-4 tables, built once: guest memory is checksummed whole at save and restore. */
static uint32_t table[4][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 4; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

uint32_t crc32_update(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t c = crc ^ 0xffffffffu;
	pthread_once(&table_once, build_tables);
	while (len >= 4) {
		c ^= (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		     (uint32_t)p[3] << 24;
		c = table[3][c & 0xff] ^ table[2][(c >> 8) & 0xff] ^ table[1][(c >> 16) & 0xff] ^
		    table[0][c >> 24];
		p += 4;
		len -= 4;
	}
	while (len--)
		c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* The register's update for input bits of zero is linear over GF(2): a 32x32 matrix, kept as
 * the images of the 32 basis vectors. Appending n zero bytes applies the one-byte matrix n
 * times; n's binary digits pick which of its repeated squares to apply. */
static uint32_t gf2_apply(const uint32_t m[32], uint32_t v)
{
	uint32_t r = 0;
	for (int i = 0; v; i++, v >>= 1)
		if (v & 1)
			r ^= m[i];
	return r;
}

static void gf2_square(uint32_t out[32], const uint32_t m[32])
{
	for (int i = 0; i < 32; i++)
		out[i] = gf2_apply(m, m[i]);
}

uint32_t crc32_zeros(uint32_t crc, uint64_t len)
{
	uint32_t op[32], sq[32];
	for (int i = 0; i < 32; i++) { /* one zero byte: eight zero bits */
		uint32_t c = 1u << i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		op[i] = c;
	}
	uint32_t c = crc ^ 0xffffffffu;
	while (len) {
		if (len & 1)
			c = gf2_apply(op, c);
		len >>= 1;
		if (len) {
			gf2_square(sq, op);
			for (int i = 0; i < 32; i++)
				op[i] = sq[i];
		}
	}
	return c ^ 0xffffffffu;
}
