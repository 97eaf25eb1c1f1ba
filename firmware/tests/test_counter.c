/*
 * test=counter: for snapshot and restore. Fills 1 MiB of RAM with a pattern seeded from the TSC
 * (so each boot's differs) and starts the other CPUs, each counting in a loop. Then every
 * counter.ms (default 200) ms prints "probe: counter=K ap_ticks=T crc32=C cs=S": K counts up from
 * 1, T is what the APs counted, C the pattern's CRC-32, S the code selector (RPL 3: running
 * natively on PVM). counter.rng=1: each line also reads 4 KiB from every virtio-rng device
 * (rng_bytes=, all devices together), so their queues must work on after a restore.
 * counter.blk=1: line K also writes 64 KiB of the word K at byte (K - 1) * 64 KiB of the first
 * virtio-blk disk and reads it back (blk=ok); after the last line every block is read again
 * ("probe: counter blk verified=N"), so a write lost across a snapshot shows. counter.high=1:
 * the pattern lives in the last MiB of RAM above 4 GiB instead (needs --memory above 3 GiB:
 * RAM past the PCI hole), so a snapshot must carry that region too. Fails if
 * the CRC changes or, with APs, if
 * T stops growing: STALL_LINES lines in a row without progress, and at the end no progress within
 * that many more periods (one period without is a host that did not run the vCPU thread for a
 * while: an overloaded emulator in the nested suite); passes after counter.max lines (default:
 * never). counter.ap_stop=K makes the APs stop counting after line K: that check's own test. A
 * restored guest carries on from the K it was saved at with the same C, without a new banner.
 */
#include "boot_info.h"
#include "cmdline.h"
#include "paging.h"
#include "crc32.h"
#include "cpu_tables.h"
#include "printf.h"
#include "smp.h"
#include "test_counter.h"
#include "tsc.h"
#include "virtio_blk.h"
#include "virtio_rng.h"
#include "x86.h"

#define PATTERN_BYTES (1u << 20)
#define AP_TIMEOUT    4000000000ULL

#define BLK_CHUNK   65536
#define STALL_LINES 5

static uint8_t low_pattern[PATTERN_BYTES] __attribute__((aligned(4096)));
static uint64_t blk_buf[BLK_CHUNK / 8] __attribute__((aligned(4096)));
static struct vblk disk;
static volatile uint64_t ap_ticks[MAX_CPUS];
static volatile bool ap_stop; /* counter.ap_stop=K: the APs stop counting after line K */

static void ap_count(unsigned slot)
{
	for (;;) {
		if (!ap_stop)
			ap_ticks[slot]++;
		for (int i = 0; i < 1000; i++)
			cpu_relax();
	}
}

static const char *count_bytes(void *ctx, const uint8_t *p, uint32_t len)
{
	(void)p;
	*(uint64_t *)ctx += len;
	return 0;
}

/* Write block k (the word k throughout), or read it back and check it. */
static const char *blk_block(uint64_t k, bool write)
{
	uint8_t status;
	if (write)
		for (unsigned i = 0; i < BLK_CHUNK / 8; i++)
			blk_buf[i] = k;
	else
		for (unsigned i = 0; i < BLK_CHUNK / 8; i++)
			blk_buf[i] = ~k;
	const char *err =
	    vblk_sync(&disk, write ? VBLK_T_OUT : VBLK_T_IN, (k - 1) * (BLK_CHUNK / 512), blk_buf,
		      BLK_CHUNK, !write, &status);
	if (err)
		return err;
	if (status != VBLK_S_OK)
		return "blk request failed";
	for (unsigned i = 0; !write && i < BLK_CHUNK / 8; i++)
		if (blk_buf[i] != k)
			return "blk block does not hold what was written";
	return 0;
}

static void wait_ms(uint64_t ms, uint64_t khz)
{
	uint64_t start = rdtsc();
	while (rdtsc() - start < ms * khz)
		cpu_relax();
}

/* What the other CPUs counted, all together. */
static uint64_t ap_total(unsigned online)
{
	uint64_t ticks = 0;
	for (unsigned s = 1; s < online; s++)
		ticks += ap_ticks[s];
	return ticks;
}

static uint64_t param_u64(const char *key, uint64_t def)
{
	const char *v;
	size_t n;
	uint64_t x;
	if (cmdline_get(boot_info.cmdline, key, &v, &n) && parse_u64(v, n, false, &x))
		return x;
	return def;
}

/* The last MiB of the highest e820 RAM range above 4 GiB that paging maps, or 0. */
static uint8_t *high_pattern(void)
{
	uint64_t top = 0;
	for (unsigned i = 0; i < boot_info.e820_count; i++) {
		const struct e820_entry *e = &boot_info.e820[i];
		uint64_t end = (e->addr + e->size) & ~(uint64_t)(PATTERN_BYTES - 1);
		if (end > PAGING_MAP_LIMIT)
			end = PAGING_MAP_LIMIT;
		if (e->type == E820_RAM && end > top && end - PATTERN_BYTES >= e->addr &&
		    end - PATTERN_BYTES >= (4ull << 30))
			top = end;
	}
	return top ? (uint8_t *)(top - PATTERN_BYTES) : 0;
}

const char *test_counter(void)
{
	uint64_t ms = param_u64("counter.ms", 200), max = param_u64("counter.max", 0);
	uint64_t stop_after = param_u64("counter.ap_stop", 0);
	uint8_t *pattern = low_pattern;
	if (param_u64("counter.high", 0) && !(pattern = high_pattern()))
		return "counter.high: no RAM above 4 GiB";
	uint64_t khz = tsc_khz() ? tsc_khz() : 1000000;
	uint64_t seed = rdtsc() | 1;
	for (uint32_t i = 0; i < PATTERN_BYTES; i++) {
		seed ^= seed << 13; /* xorshift64 */
		seed ^= seed >> 7;
		seed ^= seed << 17;
		pattern[i] = (uint8_t)seed;
	}
	uint32_t crc = crc32(pattern, PATTERN_BYTES);
	struct cpu_list cpus;
	struct smp_result res;
	cpu_tables_find(boot_info.rsdp, &cpus);
	smp_set_ap_job(ap_count);
	smp_boot(&cpus, AP_TIMEOUT, &res);
	unsigned nrng = 0;
	struct virtio_dev **rngs = param_u64("counter.rng", 0) ? rng_devices(&nrng) : 0;
	for (unsigned i = 0; i < nrng; i++) {
		const char *err = rng_init(rngs[i]);
		if (err)
			return err;
	}
	bool blk = param_u64("counter.blk", 0);
	if (blk) {
		unsigned n = 0;
		struct virtio_dev **d = vblk_devices(&n);
		const char *err = n ? vblk_open(&disk, d[0]) : "no virtio-blk disk";
		if (err)
			return err;
		if (disk.capacity * 512 < (max ? max : 1) * BLK_CHUNK)
			return "disk too small for counter.max blocks";
	}
	kprintf("probe: counter start cpus=%u rng=%u blk=%d crc32=%08x pattern=0x%lx\n", res.online,
		nrng, blk, crc, (uint64_t)pattern);
	uint64_t last_ticks = 0;
	unsigned stalled = 0;
	for (uint64_t k = 1; !max || k <= max; k++) {
		wait_ms(ms, khz);
		uint64_t ticks = ap_total(res.online);
		uint32_t now = crc32(pattern, PATTERN_BYTES);
		uint64_t rng_bytes = 0;
		for (unsigned i = 0; i < nrng; i++) {
			struct rng_stats st;
			const char *err = rng_read(rngs[i], 4096, count_bytes, &rng_bytes, &st);
			if (err)
				return err;
		}
		const char *err;
		if (blk && ((err = blk_block(k, true)) || (err = blk_block(k, false))))
			return err;
		kprintf("probe: counter=%lu ap_ticks=%lu crc32=%08x cs=0x%02x rng_bytes=%lu%s\n", k,
			ticks, now, read_cs(), rng_bytes, blk ? " blk=ok" : "");
		if (now != crc)
			return "RAM checksum changed";
		stalled = res.online > 1 && ticks <= last_ticks ? stalled + 1 : 0;
		if (stalled >= STALL_LINES)
			return "the other CPUs stopped counting";
		last_ticks = ticks;
		if (k == stop_after)
			ap_stop = true;
	}
	/* Stalled on the last lines: they must move again within the periods left. */
	while (stalled && stalled < STALL_LINES) {
		wait_ms(ms, khz);
		stalled = ap_total(res.online) > last_ticks ? 0 : stalled + 1;
	}
	if (stalled)
		return "the other CPUs stopped counting";
	for (uint64_t k = 1; blk && k <= max; k++) {
		const char *err = blk_block(k, false);
		if (err)
			return err;
	}
	if (blk)
		kprintf("probe: counter blk verified=%lu\n", max);
	return 0;
}
