/*
 * test=rng: read 1 MiB from every virtio-rng device, several 4 KiB buffers in flight, check
 * the bytes look random (byte frequencies and serial correlation), and report the rate and the
 * number of notifications (kicks). expect.rng=N: exactly N devices.
 */
#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "printf.h"
#include "test_rng.h"

#define RNG_TOTAL     (1u << 20)
#define RNG_MIN_CHECK 16 /* shorter completions are not checked for constancy */

/* Bounds on the statistics of what was read (at least 64 KiB here). For bytes from a real
 * random source, chi-square over the 256 byte values has 255 degrees of freedom: P(> 420) is
 * 3.4e-10 and P(< 140) 4.5e-10 (too even a histogram is as suspect as a skewed one). The
 * serial correlation of consecutive bytes is about normal with sd 1/sqrt(N): |r| >= 1/20 at
 * N = 64 Ki is 12.8 sd, P = 1.6e-37. So a good source fails about once in 10^9 reads. A counter
 * (i & 0xff) has a perfectly flat histogram but r near 1; a skewed source fails chi-square. */
#define RNG_CHI2_MAX	 420
#define RNG_CHI2_MIN	 140
#define RNG_CORR_MAX_DIV 20 /* |r| < 1 / RNG_CORR_MAX_DIV */

/* Running sums over the byte stream in the order it arrived. */
struct byte_stats {
	uint32_t hist[256];
	uint64_t n, sum, sum_sq, sum_lag; /* sum_lag: sum of x[i] * x[i + 1] */
	uint8_t last;
};

static void byte_stats_add(struct byte_stats *bs, const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++) {
		uint64_t x = p[i];
		bs->hist[x]++;
		if (bs->n)
			bs->sum_lag += bs->last * x;
		bs->sum += x;
		bs->sum_sq += x * x;
		bs->last = (uint8_t)x;
		bs->n++;
	}
}

/* 0 if the bytes pass both tests, else why not. Integer arithmetic only (no FPU here):
 * chi2 = 256 * sum(h^2) / n - n, and r = (n * lag - sum^2) / (n * sum_sq - sum^2), with the
 * lag sum over n - 1 pairs, which shifts r by O(1/n), far below the bound. */
static const char *byte_stats_verdict(const struct byte_stats *bs)
{
	typedef __int128 i128;
	i128 n = bs->n, hsq = 0;
	for (unsigned i = 0; i < 256; i++)
		hsq += (i128)bs->hist[i] * bs->hist[i];
	i128 chi2_n = 256 * hsq - n * n; /* chi2 * n */
	if (chi2_n > RNG_CHI2_MAX * n)
		return "rng bytes do not look random (byte frequencies: chi-square too high)";
	if (chi2_n < RNG_CHI2_MIN * n)
		return "rng bytes do not look random (byte frequencies: chi-square too low)";
	i128 sum = bs->sum, num = n * (i128)bs->sum_lag - sum * sum;
	i128 den = n * (i128)bs->sum_sq - sum * sum;
	if (num < 0)
		num = -num;
	if (den <= 0 || num * RNG_CORR_MAX_DIV >= den)
		return "rng bytes do not look random (consecutive bytes are correlated)";
	return 0;
}

/* Per completed buffer: no long run of one byte value, and into the running sums. */
static const char *check_block(void *ctx, const uint8_t *p, uint32_t len)
{
	struct byte_stats *bs = ctx;
	bool constant = len >= RNG_MIN_CHECK;
	for (uint32_t i = 0; i < len; i++)
		constant &= p[i] == p[0];
	byte_stats_add(bs, p, len);
	if (constant)
		return "rng returned a block of one repeated byte";
	return 0;
}

const char *rng_read_checked(struct virtio_dev *d, uint64_t total, struct rng_stats *st)
{
	static struct byte_stats bs;
	memset(&bs, 0, sizeof(bs));
	const char *err = rng_read(d, total, check_block, &bs, st);
	return err ? err : byte_stats_verdict(&bs);
}

void rng_report(unsigned idx, struct virtio_dev *d, const struct rng_stats *st)
{
	uint64_t us = virtio_cycles_to_us(st->cycles);
	uint64_t rate = us ? st->bytes * 1000000 / 1024 / us : 0;
	kprintf("probe: rng dev=%u transport=%s bytes=%lu ms=%lu kib_per_s=%lu kicks=%lu\n", idx,
		virtio_transport_name(d), st->bytes, us / 1000, rate, st->kicks);
}

const char *test_rng(void)
{
	const char *v, *err;
	size_t n;
	uint64_t want = 0;
	bool expect = cmdline_get(boot_info.cmdline, "expect.rng", &v, &n);
	if (expect && !parse_u64(v, n, false, &want))
		return "bad expect.rng";
	unsigned count;
	struct virtio_dev **devs = rng_devices(&count);
	for (unsigned i = 0; i < count; i++) {
		struct virtio_dev *d = devs[i];
		kprintf("probe: rng dev=%u transport=%s addr=0x%lx\n", i, virtio_transport_name(d),
			d->base);
		struct rng_stats st;
		if ((err = rng_init(d)) || (err = rng_read_checked(d, RNG_TOTAL, &st)))
			return err;
		rng_report(i, d, &st);
	}
	kprintf("probe: rng devices=%u\n", count);
	if (expect && want != count)
		return "rng device count mismatch";
	if (!expect && !count)
		return "no virtio-rng device";
	return 0;
}
