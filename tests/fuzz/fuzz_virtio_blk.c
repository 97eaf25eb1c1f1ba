/* libFuzzer target: virtio-blk request parsing and I/O against an in-memory image (a memfd,
 * opened through /proc/self/fd like any image path), driven by a fuzzed driver
 * (tests/fuzz/fuzz_vdev.h describes the operations). Requests are a 16-byte header (type,
 * sector), data and a status byte; discard and write-zeroes carry 16-byte segments; get-id a
 * 20-byte buffer. Each completed request must have its status byte set to OK, IOERR or
 * UNSUPP, only a valid request may succeed, reads must return what a shadow copy of the image
 * holds (except where writes raced), get-id the serial.
 * Input: u8 image size in sectors (0: 1 sector less 1 byte), u8 options (bit 0 read-only,
 * bit 1 worker threads instead of io_uring), u32 feature bits accepted, then operations. The
 * device operation waits (at most 100 ms) for the requests in flight to complete. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devices/virtio/blk.h"
#include "fuzz_vdev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct virtio_blk *blk;

/* ---- a shadow of the image: what reads must return ---- */

#define SECTOR	  512u
#define T_IN	  0
#define T_OUT	  1
#define T_GET_ID  8
#define T_DISCARD 11
#define T_WZ	  13
#define HIST_MAX  1024

static uint8_t shadow[255 * SECTOR];
static bool uncertain[255]; /* sectors two writes raced on, or a discard or reset left unknown */
static uint64_t nsect;	    /* capacity */
static bool readonly, unreliable;
static char serial[VIRTIO_BLK_ID_BYTES];
/* Writes the device completed: [posted, done) in fv.clock time, sectors [first, end). */
static struct {
	uint64_t posted, done, first, end;
} hist[HIST_MAX];
static int nhist;
static unsigned compared; /* sectors read back and compared (FUZZ_VERBOSE) */

/* len bytes from offset skip of a buffer list; false if it is not all in RAM. */
static bool gather(const uint64_t *addr, const uint32_t *blen, unsigned n, size_t skip,
		   uint8_t *out, size_t len)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (skip >= blen[i]) {
			skip -= blen[i];
			continue;
		}
		size_t k = blen[i] - skip < len ? blen[i] - skip : len;
		const uint8_t *p = guest_mem_ptr(&fv.mem, addr[i] + skip, k);
		if (!p)
			return false;
		memcpy(out, p, k);
		out += k;
		len -= k;
		skip = 0;
	}
	return true;
}

struct req {
	uint32_t type;
	uint64_t sector, bytes; /* data bytes of a read or write */
	uint64_t first, end;	/* sectors a write, write-zeroes or discard may change */
	bool writes;
};

static uint64_t readable_len(const struct fv_chain *c)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < c->nr; i++)
		n += c->r_len[i];
	return n;
}

/* The request as the device must read it; false without a header. */
static bool parse_req(const struct fv_chain *c, struct req *r)
{
	uint64_t out = readable_len(c);
	*r = (struct req){0};
	if (out < 16)
		return false;
	uint8_t h[16];
	if (!gather(c->r_addr, c->r_len, c->nr, 0, h, 16))
		return false; /* posted but never taken: outside RAM */
	memcpy(&r->type, h, 4);
	memcpy(&r->sector, h + 8, 8);
	uint64_t start = r->sector, count = 0;
	if (r->type == T_OUT || r->type == T_IN) {
		r->bytes = r->type == T_OUT ? out - 16 : (c->writable ? c->writable - 1 : 0);
		count = r->bytes / SECTOR;
		r->writes = r->type == T_OUT;
	} else if ((r->type == T_DISCARD || r->type == T_WZ) && out >= 32) {
		uint8_t seg[16];
		if (!gather(c->r_addr, c->r_len, c->nr, 16, seg, 16))
			return false;
		uint32_t num;
		memcpy(&start, seg, 8);
		memcpy(&num, seg + 8, 4);
		count = num;
		r->writes = true;
	}
	r->first = start < nsect ? start : nsect;
	r->end = count < nsect - r->first ? r->first + count : nsect;
	return true;
}

/* Did a write to [first, end) run at any time since `since` (other than c itself)? */
static bool raced(const struct fv_chain *self, uint64_t since, uint64_t first, uint64_t end)
{
	for (int i = 0; i < nhist; i++)
		if (hist[i].done > since && hist[i].first < end && first < hist[i].end)
			return true;
	for (int h = 0; h < FV_QSIZE; h++) {
		const struct fv_chain *o = &fv.chain[0][h];
		struct req r;
		if (o != self && o->busy && parse_req(o, &r) && r.writes && r.first < end &&
		    first < r.end)
			return true;
	}
	return false;
}

static void set_uncertain(uint64_t first, uint64_t end, bool v)
{
	for (uint64_t s = first; s < end; s++)
		uncertain[s] = v;
}

/* Every completed request has its status byte, the last device-writable one, set; an OK
 * request was a valid one; reads return what the shadow holds where no write raced with them;
 * get-id returns the serial. */
static void check_used(int q, const struct fv_chain *c, uint32_t len)
{
	(void)q;
	if (fv.wild || fv.wrapped)
		unreliable = true;
	if (unreliable)
		return;
	const uint8_t *status = guest_mem_ptr(&fv.mem, c->last_byte, 1);
	if (!c->writable || len < 1 || !status || *status > 2)
		abort();
	struct req r;
	if (!parse_req(c, &r)) {
		if (readable_len(c) >= 16)
			abort(); /* the device used buffers outside RAM */
		return;
	}
	if (*status != 0)
		return; /* refused: nothing may have changed (checked by later reads) */
	bool in_range = r.sector <= nsect && r.bytes / SECTOR <= nsect - r.sector;
	if (r.type == T_IN || r.type == T_OUT) {
		if (r.bytes % SECTOR || !in_range || (r.type == T_OUT && readonly) ||
		    (r.type == T_IN && readable_len(c) != 16) ||
		    (r.type == T_OUT && c->writable != 1))
			abort(); /* accepted an invalid request */
	}
	static uint8_t buf[8 << 20];
	switch (r.type) {
	case T_IN:
		if (r.bytes > sizeof(buf))
			return;
		if (!gather(c->w_addr, c->w_len, c->nw, 0, buf, r.bytes))
			abort(); /* the device used buffers outside RAM */
		for (uint64_t s = r.first; s < r.end; s++)
			if (!uncertain[s] && !raced(c, c->posted, s, s + 1) && ++compared &&
			    memcmp(buf + (s - r.first) * SECTOR, shadow + s * SECTOR, SECTOR))
				abort(); /* read back something never written there */
		break;
	case T_OUT:
	case T_WZ:
	case T_DISCARD:
		if (r.type == T_OUT && r.bytes > sizeof(buf))
			return;
		if (r.type != T_OUT)
			memset(buf, 0, (r.end - r.first) * SECTOR);
		else if (!gather(c->r_addr, c->r_len, c->nr, 16, buf, r.bytes))
			abort();
		memcpy(shadow + r.first * SECTOR, buf, (r.end - r.first) * SECTOR);
		set_uncertain(r.first, r.end,
			      r.type == T_DISCARD || raced(c, c->posted, r.first, r.end));
		if (nhist == HIST_MAX)
			unreliable = true;
		else
			hist[nhist++] = (typeof(hist[0])){c->posted, fv.clock, r.first, r.end};
		break;
	case T_GET_ID: {
		uint8_t id[VIRTIO_BLK_ID_BYTES];
		size_t n = c->writable - 1 < sizeof(id) ? c->writable - 1 : sizeof(id);
		if (!gather(c->w_addr, c->w_len, c->nw, 0, id, n))
			abort();
		if (memcmp(id, serial, n))
			abort();
		break;
	}
	}
}

/* The reset dropped what was in flight, perhaps after writing it. */
static void on_reset(void)
{
	for (int h = 0; h < FV_QSIZE; h++) {
		struct req r;
		if (fv.chain[0][h].busy && parse_req(&fv.chain[0][h], &r) && r.writes)
			set_uncertain(r.first, r.end, true);
	}
}

static void fv_device_op(struct fv_input *in)
{
	(void)in;
	for (int i = 0; i < 10 && virtio_blk_inflight(blk); i++)
		event_loop_run_once(&fv.loop, 10);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int img_fd = -1;
	static char path[64];
	fv_global_init();
	if (img_fd < 0) {
		img_fd = memfd_create("fuzz-blk", MFD_CLOEXEC);
		if (img_fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", img_fd);
	}
	struct fv_input in = {data, size};
	uint8_t sectors = fv_u8(&in), opt = fv_u8(&in);
	/* A fresh image each time: zeroes, of the size asked for. */
	if (ftruncate(img_fd, 0) || ftruncate(img_fd, sectors ? sectors * 512 : 511))
		abort();
	struct blk_options o = {.readonly = opt & 1, .no_uring = opt & 2};
	snprintf(o.path, sizeof(o.path), "%s", path);
	snprintf(o.serial, sizeof(o.serial), "fuzz-serial-%u", opt >> 2);
	fv_begin();
	blk = virtio_blk_create(&fv.dev, &fv.mem, &fv.loop, "fuzz-blk", &o);
	if (!blk)
		abort();
	memset(shadow, 0, sizeof(shadow));
	memset(uncertain, 0, sizeof(uncertain));
	nsect = sectors;
	readonly = o.readonly;
	unreliable = false;
	nhist = 0;
	compared = 0;
	memset(serial, 0, sizeof(serial));
	memcpy(serial, o.serial, strnlen(o.serial, sizeof(serial)));
	fv.check_used = check_used;
	fv.on_reset = on_reset;
	fv_restart_features = fv_u32(&in);
	fv_driver_start(fv_restart_features);
	fv_run_ops(&in);
	if (virtio_blk_inflight(blk))
		abort(); /* status read 0: nothing from before the reset is left */
	virtio_blk_destroy(blk);
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "sectors read back and compared: %u%s\n", compared,
			unreliable ? " (then unreliable)" : "");
	pthread_mutex_destroy(&fv.dev.lock);
	return 0;
}
