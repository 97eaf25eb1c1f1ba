/*
 * The probe's FUSE messages (firmware/drivers/fuse.c) on the host: requests laid out as the
 * protocol says, and every reply a device could write checked before anything in it is used
 * (the length it claims, the request it answers, its error, the size of each payload, each
 * directory entry).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "firmware/drivers/fuse.h"

#define HDR sizeof(struct fuse_out_header)

static uint8_t buf[4096] __attribute__((aligned(8)));

/* A reply in buf: the out header (len = HDR + payload unless len_override), then payload. */
static uint32_t reply(uint64_t unique, int32_t error, const void *payload, uint32_t n,
		      uint32_t len_override)
{
	struct fuse_out_header h = {len_override ? len_override : (uint32_t)HDR + n, error, unique};
	memset(buf, 0xee, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	if (n)
		memcpy(buf + HDR, payload, n);
	return (uint32_t)HDR + n;
}

static const char *parse(uint32_t used, uint64_t unique, struct fuse_reply *r)
{
	return fuse_reply_parse(buf, sizeof(buf), used, unique, r);
}

Test(fuse, request_layout)
{
	uint8_t req[128];
	struct fuse_read_in in = {.fh = 7, .offset = 4096, .size = 65536};
	uint32_t n = fuse_build(req, sizeof(req), FUSE_OP_READ, 42, 9, &in, sizeof(in), 0, 0);
	cr_assert_eq(n, 40 + 40);
	struct fuse_in_header h;
	memcpy(&h, req, sizeof(h));
	cr_assert_eq(h.len, 80);
	cr_assert_eq(h.opcode, FUSE_OP_READ);
	cr_assert_eq(h.unique, 42);
	cr_assert_eq(h.nodeid, 9);
	cr_assert_eq(memcmp(req + 40, &in, sizeof(in)), 0);
	/* a LOOKUP: the name and its NUL after the header */
	n = fuse_build(req, sizeof(req), FUSE_OP_LOOKUP, 43, 1, 0, 0, "data.bin", 8);
	cr_assert_eq(n, 40 + 9);
	cr_assert_eq(memcmp(req + 40, "data.bin", 9), 0);
	/* one that does not fit is not built */
	cr_assert_eq(fuse_build(req, 48, FUSE_OP_LOOKUP, 44, 1, 0, 0, "data.bin", 8), 0);
}

Test(fuse, reply_with_payload)
{
	struct fuse_reply r;
	uint8_t p[24] = {1, 2, 3};
	cr_assert_null(parse(reply(5, 0, p, sizeof(p), 0), 5, &r));
	cr_assert_eq(r.error, 0);
	cr_assert_eq(r.len, 24);
	cr_assert_eq(r.data, buf + HDR);
	/* the device may say it wrote more than the reply's own length: only the reply counts */
	cr_assert_null(parse(HDR + 100, 5, &r));
	cr_assert_eq(r.len, 24);
}

Test(fuse, reply_error)
{
	struct fuse_reply r;
	cr_assert_null(parse(reply(6, -FUSE_ENOENT, 0, 0, 0), 6, &r));
	cr_assert_eq(r.error, FUSE_ENOENT);
	cr_assert_eq(r.len, 0);
}

Test(fuse, used_beyond_buffer)
{
	struct fuse_reply r;
	reply(5, 0, 0, 0, 0);
	cr_assert_not_null(fuse_reply_parse(buf, 64, 65, 5, &r));
	cr_assert_null(fuse_reply_parse(buf, 64, 64, 5, &r));
}

Test(fuse, shorter_than_header)
{
	struct fuse_reply r;
	reply(5, 0, 0, 0, 0);
	cr_assert_not_null(parse(HDR - 1, 5, &r));
	cr_assert_not_null(parse(0, 5, &r));
}

Test(fuse, length_past_what_was_written)
{
	struct fuse_reply r;
	uint8_t p[32] = {0};
	/* the header claims 48 bytes, the device wrote 40 */
	reply(5, 0, p, sizeof(p), 0);
	cr_assert_not_null(parse(HDR + 24, 5, &r));
	/* a length below the header's own */
	reply(5, 0, 0, 0, HDR - 1);
	cr_assert_not_null(parse(HDR, 5, &r));
	reply(5, 0, 0, 0, 0x80000000u);
	cr_assert_not_null(parse(sizeof(buf), 5, &r));
}

Test(fuse, reply_to_another_request)
{
	struct fuse_reply r;
	cr_assert_not_null(parse(reply(4, 0, 0, 0, 0), 5, &r));
	cr_assert_not_null(parse(reply(5 | 1ull << 40, 0, 0, 0, 0), 5, &r));
}

Test(fuse, invalid_error)
{
	struct fuse_reply r;
	cr_assert_not_null(parse(reply(5, 1, 0, 0, 0), 5, &r));
	cr_assert_not_null(parse(reply(5, -FUSE_ERRNO_MAX - 1, 0, 0, 0), 5, &r));
	cr_assert_not_null(parse(reply(5, INT32_MIN, 0, 0, 0), 5, &r));
	cr_assert_null(parse(reply(5, -FUSE_ERRNO_MAX, 0, 0, 0), 5, &r));
	cr_assert_eq(r.error, FUSE_ERRNO_MAX);
}

Test(fuse, error_reply_with_data)
{
	struct fuse_reply r;
	uint8_t p[8] = {0};
	cr_assert_not_null(parse(reply(5, -FUSE_ENOENT, p, sizeof(p), 0), 5, &r));
}

Test(fuse, fixed_size_payload)
{
	struct fuse_reply r;
	struct fuse_open_out o, want = {.fh = 99};
	uint8_t big[sizeof(want) + 8] = {0};
	cr_assert_null(parse(reply(5, 0, &want, sizeof(want), 0), 5, &r));
	cr_assert_null(fuse_reply_fixed(&r, &o, sizeof(o)));
	cr_assert_eq(o.fh, 99);
	cr_assert_null(parse(reply(5, 0, &want, sizeof(want) - 8, 0), 5, &r));
	cr_assert_not_null(fuse_reply_fixed(&r, &o, sizeof(o)));
	cr_assert_null(parse(reply(5, 0, big, sizeof(big), 0), 5, &r));
	cr_assert_not_null(fuse_reply_fixed(&r, &o, sizeof(o)));
	cr_assert_null(parse(reply(5, -13, 0, 0, 0), 5, &r));
	cr_assert_not_null(fuse_reply_fixed(&r, &o, sizeof(o)));
}

Test(fuse, init_reply)
{
	struct fuse_reply r;
	struct fuse_init_out in = {.major = 7, .minor = 36, .max_write = 1 << 20, .max_pages = 256},
			     out;
	uint8_t big[sizeof(in) + 8] = {0};
	cr_assert_null(parse(reply(1, 0, &in, sizeof(in), 0), 1, &r));
	cr_assert_null(fuse_init_parse(&r, &out));
	cr_assert_eq(out.max_pages, 256);
	/* an old server's 24 bytes: the rest reads as zero */
	cr_assert_null(parse(reply(1, 0, &in, FUSE_INIT_OUT_MIN, 0), 1, &r));
	cr_assert_null(fuse_init_parse(&r, &out));
	cr_assert_eq(out.max_write, 1 << 20);
	cr_assert_eq(out.max_pages, 0);
	cr_assert_null(parse(reply(1, 0, &in, FUSE_INIT_OUT_MIN - 1, 0), 1, &r));
	cr_assert_not_null(fuse_init_parse(&r, &out));
	memcpy(big, &in, sizeof(in));
	cr_assert_null(parse(reply(1, 0, big, sizeof(big), 0), 1, &r));
	cr_assert_not_null(fuse_init_parse(&r, &out));
	in.major = 8;
	cr_assert_null(parse(reply(1, 0, &in, sizeof(in), 0), 1, &r));
	cr_assert_not_null(fuse_init_parse(&r, &out));
	in.major = 7;
	in.minor = FUSE_PROTO_MINOR_MIN - 1;
	cr_assert_null(parse(reply(1, 0, &in, sizeof(in), 0), 1, &r));
	cr_assert_not_null(fuse_init_parse(&r, &out));
	cr_assert_null(parse(reply(1, -38, 0, 0, 0), 1, &r));
	cr_assert_not_null(fuse_init_parse(&r, &out));
}

Test(fuse, entry_reply)
{
	struct fuse_reply r;
	struct fuse_entry_out e = {.nodeid = 2}, out;
	uint32_t error;
	e.attr.mode = FUSE_S_IFREG | 0644;
	e.attr.size = 12345;
	cr_assert_null(parse(reply(3, 0, &e, sizeof(e), 0), 3, &r));
	cr_assert_null(fuse_entry_parse(&r, &out, &error));
	cr_assert_eq(error, 0);
	cr_assert_eq(out.nodeid, 2);
	cr_assert_eq(out.attr.size, 12345);
	/* an error passes through as the errno */
	cr_assert_null(parse(reply(3, -FUSE_ENOENT, 0, 0, 0), 3, &r));
	cr_assert_null(fuse_entry_parse(&r, &out, &error));
	cr_assert_eq(error, FUSE_ENOENT);
	/* the compat size (7.8) is not what the probe asked for */
	cr_assert_null(parse(reply(3, 0, &e, 120, 0), 3, &r));
	cr_assert_not_null(fuse_entry_parse(&r, &out, &error));
}

Test(fuse, negative_entry_is_enoent)
{
	struct fuse_reply r;
	struct fuse_entry_out e = {.nodeid = 0}, out;
	uint32_t error;
	e.attr.mode = FUSE_S_IFREG;
	cr_assert_null(parse(reply(3, 0, &e, sizeof(e), 0), 3, &r));
	cr_assert_null(fuse_entry_parse(&r, &out, &error));
	cr_assert_eq(error, FUSE_ENOENT);
}

Test(fuse, invalid_attributes)
{
	struct fuse_reply r;
	struct fuse_entry_out e = {.nodeid = 2}, out;
	struct fuse_attr_out a = {0}, aout;
	uint32_t error;
	e.attr.mode = 0; /* no file type */
	cr_assert_null(parse(reply(3, 0, &e, sizeof(e), 0), 3, &r));
	cr_assert_not_null(fuse_entry_parse(&r, &out, &error));
	e.attr.mode = FUSE_S_IFREG;
	e.attr.size = (uint64_t)INT64_MAX + 1;
	cr_assert_null(parse(reply(3, 0, &e, sizeof(e), 0), 3, &r));
	cr_assert_not_null(fuse_entry_parse(&r, &out, &error));
	a.attr.mode = 0170000;
	cr_assert_null(parse(reply(3, 0, &a, sizeof(a), 0), 3, &r));
	cr_assert_not_null(fuse_attr_parse(&r, &aout));
	a.attr.mode = FUSE_S_IFDIR | 0755;
	cr_assert_null(parse(reply(3, 0, &a, sizeof(a), 0), 3, &r));
	cr_assert_null(fuse_attr_parse(&r, &aout));
	cr_assert_null(parse(reply(3, 0, &a, sizeof(a) - 8, 0), 3, &r));
	cr_assert_not_null(fuse_attr_parse(&r, &aout));
}

Test(fuse, read_longer_than_asked)
{
	struct fuse_reply r;
	static uint8_t data[1024];
	cr_assert_null(parse(reply(8, 0, data, 1024, 0), 8, &r));
	cr_assert_null(fuse_read_check(&r, 1024));
	cr_assert_not_null(fuse_read_check(&r, 1023));
	cr_assert_null(parse(reply(8, -5, 0, 0, 0), 8, &r));
	cr_assert_not_null(fuse_read_check(&r, 1024));
}

/* A listing: entries laid out as a server does, each padded to 8 bytes. */
static uint32_t dirent_at(uint8_t *p, uint32_t pos, uint64_t ino, uint64_t off, const char *name,
			  uint32_t namelen, bool pad)
{
	struct fuse_dirent d = {ino, off, namelen, FUSE_DT_REG};
	memcpy(p + pos, &d, sizeof(d));
	memcpy(p + pos + sizeof(d), name, namelen);
	uint32_t n = (uint32_t)sizeof(d) + namelen;
	return pos + (pad ? (n + 7) & ~7u : n);
}

Test(fuse, dirent_listing)
{
	uint8_t p[256];
	uint32_t n = dirent_at(p, 0, 1, 1, ".", 1, true);
	n = dirent_at(p, n, 1, 2, "..", 2, true);
	n = dirent_at(p, n, 7, 3, "data.bin", 8, true);
	n = dirent_at(p, n, 8, 4, "x", 1, false); /* the last one unpadded */
	struct fuse_dirent_view e;
	const char *err;
	uint32_t pos = 0, count = 0;
	uint64_t last = 0;
	while (fuse_dirent_next(p, n, &pos, &e, &err)) {
		count++;
		last = e.off;
		if (count == 3) {
			cr_assert_eq(e.namelen, 8);
			cr_assert_eq(memcmp(e.name, "data.bin", 8), 0);
			cr_assert_eq(e.ino, 7);
			cr_assert_eq(e.type, FUSE_DT_REG);
		}
	}
	cr_assert_null(err);
	cr_assert_eq(count, 4);
	cr_assert_eq(last, 4);
	cr_assert_eq(pos, n);
}

static const char *one_entry(const uint8_t *p, uint32_t n)
{
	struct fuse_dirent_view e;
	const char *err;
	uint32_t pos = 0;
	while (fuse_dirent_next(p, n, &pos, &e, &err))
		;
	return err;
}

Test(fuse, dirent_cut_short)
{
	uint8_t p[64];
	uint32_t n = dirent_at(p, 0, 1, 1, "abc", 3, true);
	cr_assert_null(one_entry(p, n));
	cr_assert_not_null(one_entry(p, sizeof(struct fuse_dirent) - 1)); /* the header */
	cr_assert_not_null(one_entry(p, sizeof(struct fuse_dirent) + 2)); /* the name */
}

Test(fuse, dirent_bad_name_length)
{
	static uint8_t p[2048];
	uint32_t n = dirent_at(p, 0, 1, 1, "", 0, true);
	cr_assert_not_null(one_entry(p, n));
	static char longname[FUSE_NAME_MAX + 1];
	memset(longname, 'a', sizeof(longname));
	n = dirent_at(p, 0, 1, 1, longname, FUSE_NAME_MAX, true);
	cr_assert_null(one_entry(p, n));
	n = dirent_at(p, 0, 1, 1, longname, FUSE_NAME_MAX + 1, true);
	cr_assert_not_null(one_entry(p, n));
	/* a length that would wrap a 32-bit sum */
	struct fuse_dirent d = {1, 1, 0xfffffff0u, 0};
	memcpy(p, &d, sizeof(d));
	cr_assert_not_null(one_entry(p, 64));
}

Test(fuse, dirent_name_with_slash_or_nul)
{
	uint8_t p[64];
	uint32_t n = dirent_at(p, 0, 1, 1, "a/b", 3, true);
	cr_assert_not_null(one_entry(p, n));
	n = dirent_at(p, 0, 1, 1, "a\0b", 3, true);
	cr_assert_not_null(one_entry(p, n));
}
