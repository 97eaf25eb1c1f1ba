/*
 * FUSE as the probe speaks it over virtio-fs (virtio 1.2, 5.11): the message layouts of the
 * FUSE protocol 7.31 (as Linux's include/uapi/linux/fuse.h defines them), building requests,
 * and checking replies. A reply comes from the device and is hostile: nothing in it is used
 * before its length, its request id and its error have been checked here. Plain C, no driver
 * code: the unit tests build it for the host (tests/unit/test_fuse.c).
 */
#ifndef FUSE_H
#define FUSE_H

#include <stdbool.h>
#include <stdint.h>

#define FUSE_PROTO_MAJOR 7
#define FUSE_PROTO_MINOR 31
/* The oldest minor whose entry and attribute replies have the sizes below (7.9). */
#define FUSE_PROTO_MINOR_MIN 9
#define FUSE_ROOT_NODE	     1
#define FUSE_NAME_MAX	     1024 /* Linux refuses longer names in a directory listing */

#define FUSE_OP_LOOKUP	   1
#define FUSE_OP_GETATTR	   3
#define FUSE_OP_OPEN	   14
#define FUSE_OP_READ	   15
#define FUSE_OP_RELEASE	   18
#define FUSE_OP_INIT	   26
#define FUSE_OP_OPENDIR	   27
#define FUSE_OP_READDIR	   28
#define FUSE_OP_RELEASEDIR 29

/* FUSE_INIT flag: the reply's max_pages is the largest request in pages. */
#define FUSE_INIT_MAX_PAGES (1u << 22)

#define FUSE_ENOENT    2
#define FUSE_ERRNO_MAX 4095 /* an error is -1 .. -4095 */

#define FUSE_S_IFMT  0170000
#define FUSE_S_IFREG 0100000
#define FUSE_S_IFDIR 0040000
#define FUSE_DT_REG  8

struct fuse_in_header {
	uint32_t len; /* the whole request */
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid, gid, pid;
	uint16_t total_extlen;
	uint16_t padding;
};

struct fuse_out_header {
	uint32_t len; /* the whole reply */
	int32_t error;
	uint64_t unique;
};

struct fuse_init_in {
	uint32_t major, minor, max_readahead, flags, flags2;
	uint32_t unused[11];
};

struct fuse_init_out {
	uint32_t major, minor, max_readahead, flags;
	uint16_t max_background, congestion_threshold;
	uint32_t max_write, time_gran;
	uint16_t max_pages, map_alignment;
	uint32_t flags2;
	uint32_t unused[7];
};
/* The shortest init reply a server of 7.23 or later sends is the whole structure; older ones
 * stop after max_write (24 bytes), which is all the probe needs. */
#define FUSE_INIT_OUT_MIN 24

struct fuse_attr {
	uint64_t ino, size, blocks, atime, mtime, ctime;
	uint32_t atimensec, mtimensec, ctimensec;
	uint32_t mode, nlink, uid, gid, rdev, blksize, flags;
};

struct fuse_entry_out {
	uint64_t nodeid, generation, entry_valid, attr_valid;
	uint32_t entry_valid_nsec, attr_valid_nsec;
	struct fuse_attr attr;
};

struct fuse_getattr_in {
	uint32_t getattr_flags, dummy;
	uint64_t fh;
};

struct fuse_attr_out {
	uint64_t attr_valid;
	uint32_t attr_valid_nsec, dummy;
	struct fuse_attr attr;
};

struct fuse_open_in {
	uint32_t flags, open_flags;
};

struct fuse_open_out {
	uint64_t fh;
	uint32_t open_flags, padding;
};

struct fuse_release_in {
	uint64_t fh;
	uint32_t flags, release_flags;
	uint64_t lock_owner;
};

/* READ and READDIR. */
struct fuse_read_in {
	uint64_t fh, offset;
	uint32_t size, read_flags;
	uint64_t lock_owner;
	uint32_t flags, padding;
};

/* A directory entry in a READDIR reply: this header, the name, padding to 8 bytes. */
struct fuse_dirent {
	uint64_t ino, off; /* off: where the next READDIR goes on after this entry */
	uint32_t namelen, type;
};

_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct fuse_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct fuse_init_in) == 64, "fuse_init_in");
_Static_assert(sizeof(struct fuse_init_out) == 64, "fuse_init_out");
_Static_assert(sizeof(struct fuse_attr) == 88, "fuse_attr");
_Static_assert(sizeof(struct fuse_entry_out) == 128, "fuse_entry_out");
_Static_assert(sizeof(struct fuse_attr_out) == 104, "fuse_attr_out");
_Static_assert(sizeof(struct fuse_open_out) == 16, "fuse_open_out");
_Static_assert(sizeof(struct fuse_release_in) == 24, "fuse_release_in");
_Static_assert(sizeof(struct fuse_read_in) == 40, "fuse_read_in");
_Static_assert(sizeof(struct fuse_dirent) == 24, "fuse_dirent");

/*
 * A request in buf (cap bytes): the header, arglen bytes of arg, then name with its NUL when
 * name is not 0 (namelen bytes, no NUL among them). Returns its length, 0 if it does not fit.
 */
uint32_t fuse_build(void *buf, uint32_t cap, uint32_t opcode, uint64_t unique, uint64_t nodeid,
		    const void *arg, uint32_t arglen, const char *name, uint32_t namelen);

/* A reply that passed fuse_reply_parse: an error, or a payload inside the reply buffer. */
struct fuse_reply {
	uint32_t error; /* 0, or the errno (1 .. FUSE_ERRNO_MAX) */
	const uint8_t *data;
	uint32_t len;
};

/*
 * The reply in buf (cap bytes) to the request `unique`, of which the device says it wrote
 * `used` bytes: its header must fit in what was written, say no more than that, answer this
 * request, and carry either a valid error and nothing else or a payload. 0, or why not.
 */
const char *fuse_reply_parse(const void *buf, uint32_t cap, uint32_t used, uint64_t unique,
			     struct fuse_reply *r);
/* A successful reply's payload is exactly size bytes, copied to out. */
const char *fuse_reply_fixed(const struct fuse_reply *r, void *out, uint32_t size);
/* FUSE_INIT's reply: a protocol the probe speaks (major 7, minor 9 or later), into out. */
const char *fuse_init_parse(const struct fuse_reply *r, struct fuse_init_out *out);
/* LOOKUP's: a node (nodeid 0 is a negative entry: ENOENT in *error) with valid attributes. */
const char *fuse_entry_parse(const struct fuse_reply *r, struct fuse_entry_out *out,
			     uint32_t *error);
/* GETATTR's: valid attributes. */
const char *fuse_attr_parse(const struct fuse_reply *r, struct fuse_attr_out *out);
/* READ's: no more than the size asked. */
const char *fuse_read_check(const struct fuse_reply *r, uint32_t asked);

/* One entry of a directory listing. */
struct fuse_dirent_view {
	uint64_t ino, off;
	uint32_t type, namelen;
	const char *name; /* namelen bytes inside the reply, not terminated */
};
/*
 * The entry at *pos of a READDIR payload (data, len): false at the end, else true with the
 * entry in *e and *pos past it; *err is set (and false returned) when the entry does not fit
 * the payload or its name is empty, too long, or holds '/' or NUL.
 */
bool fuse_dirent_next(const uint8_t *data, uint32_t len, uint32_t *pos, struct fuse_dirent_view *e,
		      const char **err);

#endif
