/* FUSE requests and the checks on their replies (see fuse.h). */
#include "fuse.h"

/* Works in the probe (lib.c provides the symbols) and on the host alike. */
#define copy(d, s, n) __builtin_memcpy(d, s, n)
#define zero(d, n)    __builtin_memset(d, 0, n)

uint32_t fuse_build(void *buf, uint32_t cap, uint32_t opcode, uint64_t unique, uint64_t nodeid,
		    const void *arg, uint32_t arglen, const char *name, uint32_t namelen)
{
	uint64_t len = sizeof(struct fuse_in_header) + (uint64_t)arglen;
	if (name)
		len += (uint64_t)namelen + 1;
	if (len > cap)
		return 0;
	struct fuse_in_header h;
	zero(&h, sizeof(h));
	h.len = (uint32_t)len;
	h.opcode = opcode;
	h.unique = unique;
	h.nodeid = nodeid;
	uint8_t *p = buf;
	copy(p, &h, sizeof(h));
	p += sizeof(h);
	if (arglen)
		copy(p, arg, arglen);
	p += arglen;
	if (name) {
		copy(p, name, namelen);
		p[namelen] = 0;
	}
	return (uint32_t)len;
}

const char *fuse_reply_parse(const void *buf, uint32_t cap, uint32_t used, uint64_t unique,
			     struct fuse_reply *r)
{
	struct fuse_out_header h;
	zero(r, sizeof(*r));
	if (used > cap)
		return "fuse: the device wrote more than the reply buffer holds";
	if (used < sizeof(h))
		return "fuse: reply shorter than its header";
	copy(&h, buf, sizeof(h));
	if (h.len < sizeof(h) || h.len > used)
		return "fuse: reply length does not match what the device wrote";
	if (h.unique != unique)
		return "fuse: reply to another request";
	if (h.error > 0 || h.error < -FUSE_ERRNO_MAX)
		return "fuse: reply with an invalid error";
	if (h.error) {
		if (h.len != sizeof(h))
			return "fuse: error reply carries data";
		r->error = (uint32_t)-h.error;
		return 0;
	}
	r->data = (const uint8_t *)buf + sizeof(h);
	r->len = h.len - (uint32_t)sizeof(h);
	return 0;
}

const char *fuse_reply_fixed(const struct fuse_reply *r, void *out, uint32_t size)
{
	if (r->error)
		return "fuse: unexpected error reply";
	if (r->len != size)
		return "fuse: reply of the wrong size";
	copy(out, r->data, size);
	return 0;
}

const char *fuse_init_parse(const struct fuse_reply *r, struct fuse_init_out *out)
{
	zero(out, sizeof(*out));
	if (r->error)
		return "fuse: INIT refused";
	if (r->len < FUSE_INIT_OUT_MIN || r->len > sizeof(*out))
		return "fuse: INIT reply of the wrong size";
	copy(out, r->data, r->len);
	if (out->major != FUSE_PROTO_MAJOR)
		return "fuse: the server speaks another major version";
	if (out->minor < FUSE_PROTO_MINOR_MIN)
		return "fuse: the server's minor version is too old";
	return 0;
}

/* Linux's rule: a known file type, and a size that fits a signed 64-bit offset. */
static const char *attr_check(const struct fuse_attr *a)
{
	switch (a->mode & FUSE_S_IFMT) {
	case 0140000: /* socket */
	case 0120000: /* symbolic link */
	case FUSE_S_IFREG:
	case 0060000: /* block device */
	case FUSE_S_IFDIR:
	case 0020000: /* character device */
	case 0010000: /* FIFO */
		break;
	default:
		return "fuse: attributes with an invalid file type";
	}
	if (a->size > (uint64_t)INT64_MAX)
		return "fuse: attributes with an invalid size";
	return 0;
}

const char *fuse_entry_parse(const struct fuse_reply *r, struct fuse_entry_out *out,
			     uint32_t *error)
{
	zero(out, sizeof(*out));
	*error = r->error;
	if (r->error)
		return 0;
	const char *err = fuse_reply_fixed(r, out, sizeof(*out));
	if (err)
		return err;
	if (!out->nodeid) {
		*error = FUSE_ENOENT;
		return 0;
	}
	return attr_check(&out->attr);
}

const char *fuse_attr_parse(const struct fuse_reply *r, struct fuse_attr_out *out)
{
	const char *err = fuse_reply_fixed(r, out, sizeof(*out));
	return err ? err : attr_check(&out->attr);
}

const char *fuse_read_check(const struct fuse_reply *r, uint32_t asked)
{
	if (r->error)
		return "fuse: READ failed";
	if (r->len > asked)
		return "fuse: READ returned more than asked";
	return 0;
}

bool fuse_dirent_next(const uint8_t *data, uint32_t len, uint32_t *pos, struct fuse_dirent_view *e,
		      const char **err)
{
	*err = 0;
	if (*pos >= len)
		return false;
	struct fuse_dirent d;
	if (len - *pos < sizeof(d)) {
		*err = "fuse: directory entry cut short";
		return false;
	}
	copy(&d, data + *pos, sizeof(d));
	if (!d.namelen || d.namelen > FUSE_NAME_MAX) {
		*err = "fuse: directory entry with a bad name length";
		return false;
	}
	/* Each record is padded to 8 bytes; the last one's padding may be left off. */
	uint32_t need = (uint32_t)sizeof(d) + d.namelen;
	if (need > len - *pos) {
		*err = "fuse: directory entry runs past the reply";
		return false;
	}
	const char *name = (const char *)data + *pos + sizeof(d);
	for (uint32_t i = 0; i < d.namelen; i++)
		if (name[i] == '/' || name[i] == 0) {
			*err = "fuse: directory entry name holds '/' or NUL";
			return false;
		}
	e->ino = d.ino;
	e->off = d.off;
	e->type = d.type;
	e->namelen = d.namelen;
	e->name = name;
	uint32_t padded = (need + 7) & ~7u;
	*pos = padded < len - *pos ? *pos + padded : len;
	return true;
}
