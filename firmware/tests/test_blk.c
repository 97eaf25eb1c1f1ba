/*
 * test=blk: for every virtio-blk disk, write a pattern over blk.bytes (default min(disk, 64 MiB))
 * in 1 MiB requests, FLUSH, read it back into poisoned buffers and verify; check that a sector
 * past the end gets IOERR and an unknown request type UNSUPP; then measure 4 KiB random reads
 * (32 in flight, for blk.secs) and 1 MiB sequential reads and writes (the writes timed up to
 * the end of the FLUSH that follows them). blk.expect=N disks; blk.ro=1: the disks are
 * read-only (a write must get IOERR and leave the data unchanged); blk.write=0: no writes.
 *
 * test=blk-durable: write the pattern for blk.seed over blk.bytes of the first disk, FLUSH,
 * print "probe: blk durable flushed ...", then spin forever so the host can kill the VMM and
 * check that the image holds the pattern.
 */
#include "test_blk.h"

#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "printf.h"
#include "virtio_blk.h"
#include "x86.h"

#define CHUNK	      (1u << 20)
#define NCHUNK	      8
#define RR_SIZE	      4096
#define RR_DEPTH      32
#define DEFAULT_BYTES (64ull << 20)
/* Read buffers are filled with this before every verified read, so a read that does not land in
 * guest memory cannot pass for one that does: vblk_pattern gives every word of a stream a
 * different value, and a disk is never this one word over and over. */
#define READ_POISON 0x0bad0bad0bad0badull

static uint8_t chunk_buf[NCHUNK][CHUNK] __attribute__((aligned(4096), section(".noinit")));
static uint8_t rr_buf[RR_DEPTH][RR_SIZE] __attribute__((aligned(4096), section(".noinit")));

/* 1 MiB requests in flight in the sequential streams (blk.depth). */
static unsigned seq_depth = NCHUNK;

struct blk_opts {
	uint64_t bytes, secs, expect, seed, depth;
	bool bytes_set, expect_set, ro, write;
};

static bool opt_u64(const char *key, uint64_t *out)
{
	const char *v;
	size_t n;
	return cmdline_get(boot_info.cmdline, key, &v, &n) && parse_u64(v, n, true, out);
}

static const char *parse_opts(struct blk_opts *o)
{
	const char *v;
	size_t n;
	memset(o, 0, sizeof(*o));
	o->secs = 1;
	o->write = true;
	o->seed = 1;
	o->depth = NCHUNK;
	o->bytes_set = opt_u64("blk.bytes", &o->bytes);
	o->expect_set = opt_u64("blk.expect", &o->expect);
	uint64_t x;
	if (cmdline_get(boot_info.cmdline, "blk.secs", &v, &n) && !opt_u64("blk.secs", &o->secs))
		return "bad blk.secs";
	if (cmdline_get(boot_info.cmdline, "blk.seed", &v, &n) && !opt_u64("blk.seed", &o->seed))
		return "bad blk.seed";
	if (cmdline_get(boot_info.cmdline, "blk.depth", &v, &n) &&
	    (!opt_u64("blk.depth", &o->depth) || !o->depth || o->depth > NCHUNK))
		return "bad blk.depth (1 to 8)";
	seq_depth = (unsigned)o->depth;
	if (opt_u64("blk.ro", &x))
		o->ro = x != 0;
	if (opt_u64("blk.write", &x))
		o->write = x != 0;
	return 0;
}

static void fill(uint8_t *buf, uint64_t off, uint32_t len, uint64_t seed)
{
	uint64_t *w = (uint64_t *)buf;
	for (uint32_t i = 0; i < len / 8; i++)
		w[i] = vblk_pattern(seed, off + 8ull * i);
}

static void poison(uint8_t *buf, uint32_t len)
{
	uint64_t *w = (uint64_t *)buf;
	for (uint32_t i = 0; i < len / 8; i++)
		w[i] = READ_POISON;
}

/* Did a read into a poisoned buffer land? */
static bool still_poisoned(const uint8_t *buf, uint32_t len)
{
	const uint64_t *w = (const uint64_t *)buf;
	for (uint32_t i = 0; i < len / 8; i++)
		if (w[i] != READ_POISON)
			return false;
	return true;
}

static bool matches(const uint8_t *buf, uint64_t off, uint32_t len, uint64_t seed)
{
	const uint64_t *w = (const uint64_t *)buf;
	for (uint32_t i = 0; i < len / 8; i++)
		if (w[i] != vblk_pattern(seed, off + 8ull * i))
			return false;
	return true;
}

enum stream_mode { READ_ONLY, READ_VERIFY, WRITE_PATTERN, WRITE_AS_IS };

/* Kick what was just posted, then wait for one completion. Returns 0 with *slot set, *idle
 * when nothing was in flight (the caller is done), or an error (`failed` if the device did not
 * say OK). */
static const char *kick_and_wait(struct vblk *b, bool posted, const char *failed, unsigned *slot,
				 bool *idle)
{
	if (posted)
		vblk_kick(b);
	*idle = !b->inflight;
	if (*idle)
		return 0;
	uint8_t status;
	const char *err = vblk_wait(b, slot, &status);
	if (err)
		return err;
	return status == VBLK_S_OK ? 0 : failed;
}

/* [0, bytes) in 1 MiB requests, up to NCHUNK in flight. */
static const char *stream(struct vblk *b, enum stream_mode mode, uint64_t bytes, uint64_t seed,
			  uint64_t *cycles)
{
	bool write = mode == WRITE_PATTERN || mode == WRITE_AS_IS;
	uint64_t off_of[VBLK_MAX_INFLIGHT];
	uint32_t len_of[VBLK_MAX_INFLIGHT];
	unsigned buf_of[VBLK_MAX_INFLIGHT], free_bufs[NCHUNK], nfree = seq_depth;
	for (unsigned i = 0; i < seq_depth; i++)
		free_bufs[i] = i;
	uint64_t next = 0, t0 = rdtsc();
	const char *err;
	for (;;) {
		bool posted = false;
		while (nfree && next < bytes) {
			uint32_t len = bytes - next < CHUNK ? (uint32_t)(bytes - next) : CHUNK;
			unsigned bi = free_bufs[nfree - 1];
			if (mode == WRITE_PATTERN)
				fill(chunk_buf[bi], next, len, seed);
			else if (mode == READ_VERIFY)
				poison(chunk_buf[bi], len);
			int s = vblk_post(b, write ? VBLK_T_OUT : VBLK_T_IN, next / 512,
					  chunk_buf[bi], len, !write);
			if (s < 0)
				break;
			nfree--;
			off_of[s] = next;
			len_of[s] = len;
			buf_of[s] = bi;
			next += len;
			posted = true;
		}
		unsigned s;
		bool idle;
		if ((err = kick_and_wait(b, posted, write ? "blk write failed" : "blk read failed",
					 &s, &idle)))
			return err;
		if (idle)
			break;
		if (mode == READ_VERIFY &&
		    !matches(chunk_buf[buf_of[s]], off_of[s], len_of[s], seed)) {
			kprintf("probe: blk mismatch in [%lu, +%u)\n", off_of[s], len_of[s]);
			return "blk data read back differs from what was written";
		}
		free_bufs[nfree++] = buf_of[s];
	}
	*cycles = rdtsc() - t0;
	return 0;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* 4 KiB reads at random aligned offsets in [0, bytes), RR_DEPTH in flight, for secs. */
static const char *randread(struct vblk *b, uint64_t bytes, uint64_t secs, uint64_t *iops)
{
	uint64_t rnd = 0x2545f4914f6cdd1dull, blocks = bytes / RR_SIZE, done = 0;
	uint64_t t0 = rdtsc(), limit = virtio_ms_to_cycles((unsigned)(secs * 1000));
	unsigned buf_of[VBLK_MAX_INFLIGHT], free_bufs[RR_DEPTH], nfree = RR_DEPTH;
	for (unsigned i = 0; i < RR_DEPTH; i++)
		free_bufs[i] = i;
	bool stop = false;
	const char *err;
	if (!blocks)
		return "blk region too small for 4 KiB reads";
	for (;;) {
		bool posted = false;
		stop = stop || rdtsc() - t0 > limit;
		while (!stop && nfree) {
			uint64_t blk_no = xorshift(&rnd) % blocks;
			unsigned bi = free_bufs[nfree - 1];
			int s = vblk_post(b, VBLK_T_IN, blk_no * (RR_SIZE / 512), rr_buf[bi],
					  RR_SIZE, true);
			if (s < 0)
				break;
			nfree--;
			buf_of[s] = bi;
			posted = true;
		}
		unsigned s;
		bool idle;
		if ((err = kick_and_wait(b, posted, "blk random read failed", &s, &idle)))
			return err;
		if (idle)
			break;
		free_bufs[nfree++] = buf_of[s];
		done++;
	}
	uint64_t us = virtio_cycles_to_us(rdtsc() - t0);
	*iops = us ? done * 1000000 / us : 0;
	return 0;
}

static uint64_t mbps(uint64_t bytes, uint64_t cycles)
{
	uint64_t us = virtio_cycles_to_us(cycles);
	return us ? bytes / us : 0;
}

/* One read of the first RR_SIZE bytes into a poisoned buffer, which it must overwrite. */
static const char *read_head(struct vblk *b, uint8_t *buf)
{
	uint8_t status;
	poison(buf, RR_SIZE);
	const char *err = vblk_sync(b, VBLK_T_IN, 0, buf, RR_SIZE, true, &status);
	if (err)
		return err;
	if (status != VBLK_S_OK)
		return "blk read of a read-only disk failed";
	return still_poisoned(buf, RR_SIZE) ? "blk read did not reach guest memory" : 0;
}

/* A read-only disk: a write must fail with IOERR and change nothing. */
static const char *check_readonly(struct vblk *b)
{
	uint8_t status;
	const char *err;
	if (!b->ro)
		return "blk.ro=1 but the disk does not offer VIRTIO_BLK_F_RO";
	if ((err = read_head(b, rr_buf[0])))
		return err;
	memset(rr_buf[1], 0xa5, RR_SIZE);
	if ((err = vblk_sync(b, VBLK_T_OUT, 0, rr_buf[1], RR_SIZE, false, &status)))
		return err;
	if (status != VBLK_S_IOERR)
		return "blk write to a read-only disk did not get IOERR";
	if ((err = read_head(b, rr_buf[2])))
		return err;
	if (memcmp(rr_buf[0], rr_buf[2], RR_SIZE))
		return "blk read-only disk changed after a refused write";
	return 0;
}

/* Requests the device must refuse without breaking. */
static const char *check_bad(struct vblk *b, unsigned idx)
{
	uint8_t past, straddle, unknown;
	const char *err;
	if ((err = vblk_sync(b, VBLK_T_IN, b->capacity, rr_buf[0], 512, true, &past)) ||
	    (err = vblk_sync(b, VBLK_T_IN, b->capacity - 1, rr_buf[0], 1024, true, &straddle)) ||
	    (err = vblk_sync(b, 0x77, 0, 0, 0, false, &unknown)))
		return err;
	kprintf("probe: blk dev=%u bad_sector=%s bad_type=%s\n", idx,
		past == VBLK_S_IOERR && straddle == VBLK_S_IOERR ? "ioerr" : "WRONG",
		unknown == VBLK_S_UNSUPP ? "unsupp" : "WRONG");
	if (past != VBLK_S_IOERR || straddle != VBLK_S_IOERR)
		return "blk request past the end did not get IOERR";
	if (unknown != VBLK_S_UNSUPP)
		return "blk request of an unknown type did not get UNSUPP";
	return 0;
}

static const char *region(const struct vblk *b, const struct blk_opts *o, uint64_t *bytes)
{
	uint64_t disk = b->capacity * 512;
	*bytes = o->bytes_set ? o->bytes : (disk < DEFAULT_BYTES ? disk : DEFAULT_BYTES);
	*bytes &= ~511ull;
	if (*bytes > disk)
		return "blk.bytes exceeds the disk";
	if (!*bytes)
		return "blk disk is empty";
	return 0;
}

static const char *flush(struct vblk *b)
{
	uint8_t status;
	const char *err = vblk_sync(b, VBLK_T_FLUSH, 0, 0, 0, false, &status);
	return err ? err : status != VBLK_S_OK ? "blk flush failed" : 0;
}

/* The sequential write figure counts the closing FLUSH: until it completes the data may be
 * nowhere but a host cache, and a VMM that writes back lazily must not look faster for it. */
static const char *write_and_flush(struct vblk *b, uint64_t bytes, uint64_t *cycles)
{
	uint64_t t0 = rdtsc(), stream_cycles;
	const char *err = stream(b, WRITE_AS_IS, bytes, 0, &stream_cycles);
	if (err || (err = flush(b)))
		return err;
	*cycles = rdtsc() - t0;
	return 0;
}

static const char *one_disk(unsigned idx, struct virtio_dev *d, const struct blk_opts *o)
{
	static struct vblk b;
	const char *err, *verify = "skipped";
	uint64_t bytes, cycles, wcycles = 0, rcycles, iops;
	if ((err = vblk_open(&b, d)) || (err = region(&b, o, &bytes)))
		return err;
	bool write = o->write && !o->ro;
	if (o->ro) {
		if ((err = check_readonly(&b)))
			return err;
		verify = "ok";
	} else if (b.ro) {
		return "blk disk is read-only (use blk.ro=1)";
	} else if (write) {
		uint64_t seed = o->seed + idx;
		if ((err = stream(&b, WRITE_PATTERN, bytes, seed, &cycles)) || (err = flush(&b)) ||
		    (err = stream(&b, READ_VERIFY, bytes, seed, &cycles)))
			return err;
		verify = "ok";
	}
	kprintf("probe: blk dev=%u transport=%s capacity=%lu serial=%s bytes=%lu verify=%s\n", idx,
		virtio_transport_name(d), b.capacity, b.serial[0] ? b.serial : "-", bytes, verify);
	if ((err = check_bad(&b, idx)) || (err = randread(&b, bytes, o->secs, &iops)) ||
	    (err = stream(&b, READ_ONLY, bytes, 0, &rcycles)))
		return err;
	if (write && (err = write_and_flush(&b, bytes, &wcycles)))
		return err;
	kprintf("probe: blk dev=%u randread_4k_iops=%lu seq_read_mbps=%lu seq_write_mbps=%lu "
		"kicks=%lu\n",
		idx, iops, mbps(bytes, rcycles), write ? mbps(bytes, wcycles) : 0, d->vq[0].kicks);
	return 0;
}

static const char *durable(struct virtio_dev **devs, unsigned count, const struct blk_opts *o)
{
	static struct vblk b;
	const char *err;
	uint64_t bytes, cycles;
	if (!count)
		return "no virtio-blk device";
	if ((err = vblk_open(&b, devs[0])) || (err = region(&b, o, &bytes)) ||
	    (err = stream(&b, WRITE_PATTERN, bytes, o->seed, &cycles)) || (err = flush(&b)))
		return err;
	kprintf("probe: blk durable flushed bytes=%lu seed=%lu\n", bytes, o->seed);
	for (;;)
		cpu_relax(); /* the host kills the VMM now */
}

static const char *run(bool durable_only)
{
	struct blk_opts o;
	const char *err = parse_opts(&o);
	if (err)
		return err;
	unsigned count;
	struct virtio_dev **devs = vblk_devices(&count);
	if (durable_only)
		return durable(devs, count, &o);
	for (unsigned i = 0; i < count; i++)
		if ((err = one_disk(i, devs[i], &o)))
			return err;
	kprintf("probe: blk devices=%u\n", count);
	if (o.expect_set && o.expect != count)
		return "blk device count mismatch";
	if (!o.expect_set && !count)
		return "no virtio-blk device";
	return 0;
}

const char *test_blk(void)
{
	return run(false);
}

const char *test_blk_durable(void)
{
	return run(true);
}
