#include "aml.h"

#include <string.h>

#include "base/byteorder.h"

/* Resource descriptor tags and fields (ACPI 6.5, 6.4.2 and 6.4.3). */
#define RES_IRQ		    0x22 /* small item: IRQ, 2-byte mask (edge, high, exclusive) */
#define RES_IO		    0x47 /* small item: I/O port, 7 bytes */
#define RES_END		    0x79 /* small item: end tag, 1 byte of checksum follows */
#define RES_MEM32_FIXED	    0x86
#define RES_DWORD_ADDR	    0x87
#define RES_WORD_ADDR	    0x88
#define RES_EXT_IRQ	    0x89
#define RES_IRQ_CONSUMER    0x01
#define RES_IRQ_EDGE	    0x02
#define RES_TYPE_MEM	    0
#define RES_TYPE_IO	    1
#define RES_TYPE_BUS	    2
#define RES_MIN_MAX_FIXED   0x0c /* _MIF | _MAF; producer, positive decode */
#define RES_IO_ENTIRE_RANGE 0x03
#define RES_MEM_RW	    0x01 /* read-write, non-cacheable */
#define RES_IO_DECODE16	    0x01

void aml_init(struct aml *a, uint8_t *buf, size_t cap)
{
	a->buf = buf;
	a->cap = cap;
	a->len = 0;
	a->error = false;
}

void aml_bytes(struct aml *a, const void *p, size_t n)
{
	if (a->error || n > a->cap - a->len) {
		a->error = true;
		return;
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

void aml_byte(struct aml *a, uint8_t b)
{
	aml_bytes(a, &b, 1);
}

int aml_pkglength(uint32_t body_len, uint8_t out[4])
{
	/* The length counts the PkgLength bytes themselves. One byte holds 6 bits; with n follow-on
	 * bytes the lead byte holds 4 bits and each follow-on byte 8 more. */
	if (body_len + 1 <= 0x3f) {
		out[0] = (uint8_t)(body_len + 1);
		return 1;
	}
	for (int n = 2; n <= 4; n++) {
		uint64_t total = (uint64_t)body_len + (uint64_t)n;
		if (total >= (1ULL << (4 + 8 * (n - 1))))
			continue;
		out[0] = (uint8_t)(((n - 1) << 6) | (total & 0x0f));
		for (int i = 1; i < n; i++)
			out[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
		return n;
	}
	return 0;
}

size_t aml_pkg_begin(struct aml *a)
{
	return a->len;
}

void aml_pkg_end(struct aml *a, size_t mark)
{
	if (a->error || mark > a->len)
		return;
	size_t body = a->len - mark;
	uint8_t enc[4];
	int n = body > AML_PKGLENGTH_MAX ? 0 : aml_pkglength((uint32_t)body, enc);
	if (n == 0 || (size_t)n > a->cap - a->len) {
		a->error = true;
		return;
	}
	memmove(a->buf + mark + n, a->buf + mark, body);
	memcpy(a->buf + mark, enc, (size_t)n);
	a->len += (size_t)n;
}

static bool name_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

void aml_name_string(struct aml *a, const char *path)
{
	if (*path == '\\') {
		aml_byte(a, AML_ROOT_CHAR);
		path++;
	}
	char segs[255][4];
	int n = 0;
	while (*path && n < 255) {
		size_t len = strcspn(path, ".");
		if (len == 0 || len > 4 || !name_char(path[0], true)) {
			a->error = true;
			return;
		}
		for (size_t i = 0; i < 4; i++) {
			char c = i < len ? path[i] : '_';
			if (!name_char(c, i == 0)) {
				a->error = true;
				return;
			}
			segs[n][i] = c;
		}
		n++;
		path += len;
		if (*path == '.' && *++path == '\0') {
			a->error = true; /* a trailing dot */
			return;
		}
	}
	if (*path) {
		a->error = true;
		return;
	}
	if (n == 0) {
		aml_byte(a, 0x00); /* NullName */
		return;
	}
	if (n == 2)
		aml_byte(a, AML_DUAL_NAME);
	else if (n > 2) {
		aml_byte(a, AML_MULTI_NAME);
		aml_byte(a, (uint8_t)n);
	}
	aml_bytes(a, segs, (size_t)n * 4);
}

void aml_integer(struct aml *a, uint64_t v)
{
	uint8_t b[8];
	put_le64(b, v);
	if (v == 0) {
		aml_byte(a, AML_ZERO_OP);
	} else if (v == 1) {
		aml_byte(a, AML_ONE_OP);
	} else if (v <= 0xff) {
		aml_byte(a, AML_BYTE_PREFIX);
		aml_bytes(a, b, 1);
	} else if (v <= 0xffff) {
		aml_byte(a, AML_WORD_PREFIX);
		aml_bytes(a, b, 2);
	} else if (v <= 0xffffffffULL) {
		aml_byte(a, AML_DWORD_PREFIX);
		aml_bytes(a, b, 4);
	} else {
		aml_byte(a, AML_QWORD_PREFIX);
		aml_bytes(a, b, 8);
	}
}

void aml_string(struct aml *a, const char *s)
{
	for (const char *c = s; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			a->error = true;
	aml_byte(a, AML_STRING_PREFIX);
	aml_bytes(a, s, strlen(s) + 1);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

uint32_t aml_eisaid(const char *id)
{
	if (strlen(id) != 7)
		return 0;
	uint32_t vendor = 0, product = 0;
	for (int i = 0; i < 3; i++) {
		if (id[i] < 'A' || id[i] > 'Z')
			return 0;
		vendor = vendor << 5 | (uint32_t)(id[i] - 0x40);
	}
	for (int i = 3; i < 7; i++) {
		int d = hex_digit(id[i]);
		if (d < 0)
			return 0;
		product = product << 4 | (uint32_t)d;
	}
	/* Both 16-bit halves are stored big-endian in the little-endian dword. */
	return (vendor >> 8) | (vendor & 0xff) << 8 | (product >> 8) << 16 | (product & 0xff) << 24;
}

void aml_name(struct aml *a, const char *name)
{
	aml_byte(a, AML_NAME_OP);
	aml_name_string(a, name);
}

size_t aml_scope_begin(struct aml *a, const char *path)
{
	aml_byte(a, AML_SCOPE_OP);
	size_t mark = aml_pkg_begin(a);
	aml_name_string(a, path);
	return mark;
}

size_t aml_device_begin(struct aml *a, const char *name)
{
	aml_byte(a, AML_EXT_OP);
	aml_byte(a, AML_DEVICE_OP);
	size_t mark = aml_pkg_begin(a);
	aml_name_string(a, name);
	return mark;
}

size_t aml_package_begin(struct aml *a, uint8_t n)
{
	aml_byte(a, AML_PACKAGE_OP);
	size_t mark = aml_pkg_begin(a);
	aml_byte(a, n);
	return mark;
}

void aml_buffer(struct aml *a, const uint8_t *bytes, size_t n)
{
	aml_byte(a, AML_BUFFER_OP);
	size_t mark = aml_pkg_begin(a);
	aml_integer(a, n);
	aml_bytes(a, bytes, n);
	aml_pkg_end(a, mark);
}

/* Word and DWord Address Space Descriptors: granularity, min, max, translation, length. */
static void res_address(struct aml *a, uint8_t tag, int width, uint8_t type, uint8_t type_flags,
			uint64_t min, uint64_t max)
{
	uint8_t d[3 + 3 + 5 * 4];
	uint16_t body = (uint16_t)(3 + 5 * width);
	d[0] = tag;
	put_le16(d + 1, body);
	d[3] = type;
	d[4] = RES_MIN_MAX_FIXED;
	d[5] = type_flags;
	uint64_t fields[5] = {0, min, max, 0, max - min + 1};
	for (int i = 0; i < 5; i++) {
		if (width == 2)
			put_le16(d + 6 + 2 * i, (uint16_t)fields[i]);
		else
			put_le32(d + 6 + 4 * i, (uint32_t)fields[i]);
	}
	aml_bytes(a, d, (size_t)3 + body);
}

void aml_res_word_bus(struct aml *a, uint16_t min, uint16_t max)
{
	res_address(a, RES_WORD_ADDR, 2, RES_TYPE_BUS, 0, min, max);
}

void aml_res_word_io(struct aml *a, uint16_t min, uint16_t max)
{
	res_address(a, RES_WORD_ADDR, 2, RES_TYPE_IO, RES_IO_ENTIRE_RANGE, min, max);
}

void aml_res_dword_mem(struct aml *a, uint32_t min, uint32_t max)
{
	res_address(a, RES_DWORD_ADDR, 4, RES_TYPE_MEM, RES_MEM_RW, min, max);
}

void aml_res_io(struct aml *a, uint16_t min, uint16_t max, uint8_t align, uint8_t len)
{
	uint8_t d[8] = {RES_IO, RES_IO_DECODE16};
	put_le16(d + 2, min);
	put_le16(d + 4, max);
	d[6] = align;
	d[7] = len;
	aml_bytes(a, d, sizeof(d));
}

void aml_res_mem32_fixed(struct aml *a, uint32_t base, uint32_t len)
{
	uint8_t d[12] = {RES_MEM32_FIXED, 9, 0, RES_MEM_RW};
	put_le32(d + 4, base);
	put_le32(d + 8, len);
	aml_bytes(a, d, sizeof(d));
}

void aml_res_irq(struct aml *a, unsigned irq)
{
	if (irq > 15) {
		a->error = true;
		return;
	}
	uint8_t d[3] = {RES_IRQ};
	put_le16(d + 1, (uint16_t)(1u << irq));
	aml_bytes(a, d, sizeof(d));
}

void aml_res_interrupt_edge(struct aml *a, uint32_t gsi)
{
	uint8_t d[9] = {RES_EXT_IRQ, 6, 0, RES_IRQ_CONSUMER | RES_IRQ_EDGE, 1};
	put_le32(d + 5, gsi);
	aml_bytes(a, d, sizeof(d));
}

void aml_res_end(struct aml *a)
{
	const uint8_t d[2] = {RES_END, 0}; /* checksum 0: "treat as valid" */
	aml_bytes(a, d, sizeof(d));
}
