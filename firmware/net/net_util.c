/* Helpers for the IPv4 stack: the Internet checksum, a fast copy, address formatting. */
#include "lib.h"
#include "net.h"
#include "printf.h"

#include <stdarg.h>

typedef uint32_t __attribute__((may_alias, aligned(1))) u32_unaligned;

/*
 * 32-bit words into a 64-bit accumulator: the same ones'-complement sum as 16-bit words
 * (2^16 = 1 mod 0xffff), in whatever byte order the words are read, so headers written in
 * network order need no swapping. An odd tail byte is the high-order byte of a network
 * word, which is the low byte of a little-endian read.
 */
uint32_t csum_partial(const void *buf, unsigned len, uint32_t sum)
{
	const uint8_t *p = buf;
	uint64_t acc = sum;
	for (; len >= 16; len -= 16, p += 16)
		acc += (uint64_t) * (const u32_unaligned *)p + *(const u32_unaligned *)(p + 4) +
		       *(const u32_unaligned *)(p + 8) + *(const u32_unaligned *)(p + 12);
	for (; len >= 4; len -= 4, p += 4)
		acc += *(const u32_unaligned *)p;
	if (len >= 2) {
		acc += (uint32_t)(p[0] | p[1] << 8);
		p += 2;
		len -= 2;
	}
	if (len)
		acc += p[0];
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}

uint16_t csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* lib.c's memcpy is byte-wise; frames are copied per packet, so use the string unit. */
void net_copy(void *dst, const void *src, unsigned len)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
}

static void fmt(char *out, size_t size, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	vsnprintf(out, size, f, ap);
	va_end(ap);
}

void net_fmt_ip(char out[16], uint32_t ip)
{
	const uint8_t *b = (const uint8_t *)&ip;
	fmt(out, 16, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
}

void net_fmt_mac(char out[18], const uint8_t m[6])
{
	fmt(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

bool net_parse_ip(const char *s, unsigned len, uint32_t *ip)
{
	uint8_t b[4];
	unsigned i = 0;
	for (unsigned k = 0; k < 4; k++) {
		unsigned v = 0, digits = 0;
		for (; i < len && s[i] >= '0' && s[i] <= '9' && digits < 3; i++, digits++)
			v = v * 10 + (unsigned)(s[i] - '0');
		if (!digits || v > 255)
			return false;
		b[k] = (uint8_t)v;
		if (k < 3 && (i >= len || s[i++] != '.'))
			return false;
	}
	if (i != len)
		return false;
	memcpy(ip, b, 4);
	return true;
}
