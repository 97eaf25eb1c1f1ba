/*
 * test=balloon: touch balloon.touch_mib=N MiB (default 64) of free RAM so the VMM's RSS holds
 * it, then follow the balloon target: inflate with pages from that memory (top down), deflate
 * them back, write `actual`, answer statistics requests. PASS once the target went back to 0
 * after being non-zero and the deflated memory is usable again. balloon.report=1 also reports
 * the untouched free RAM once (free page reporting). balloon.timeout=SECONDS (default 120).
 *
 * Output: probe: balloon features=0x.. deflate_on_oom=0|1 reporting=0|1
 *         probe: balloon ready touched_mib=N
 *         probe: balloon reported_mib=M            (balloon.report=1)
 *         probe: balloon actual_pages=N            (whenever the target is reached)
 *         probe: balloon deflated ok
 */
#include "boot_info.h"
#include "cmdline.h"
#include "lib.h"
#include "printf.h"
#include "test_balloon.h"
#include "virtio_balloon.h"
#include "x86.h"

#define PAGE		4096ul
#define MIB		(1ul << 20)
#define BATCH		256 /* PFNs per inflate/deflate buffer (1 KiB) */
#define CONFIG_POLL_MS	5   /* how often the target is read (each read is an exit) */
#define REPORT_CHUNK	(256 * MIB)
#define REPORT_MAX_BUFS 16
#define STAT_ENTRY	10

extern char _end[];

/* Free RAM the test owns: [pool_lo, pool_hi); the first `touched` bytes were written. */
static uint64_t pool_lo, pool_hi, touched, ram_total;
static uint8_t stats_buf[3 * STAT_ENTRY] __attribute__((aligned(16)));

static const char *find_pool(void)
{
	uint64_t lo = ((uint64_t)_end + 2 * MIB - 1) & ~(2 * MIB - 1);
	uint64_t best_lo = 0, best_hi = 0;
	for (unsigned i = 0; i < boot_info.e820_count; i++) {
		const struct e820_entry *e = &boot_info.e820[i];
		if (e->type != E820_RAM)
			continue;
		ram_total += e->size;
		uint64_t s = e->addr > lo ? e->addr : lo, end = e->addr + e->size;
		if (end > (4ull << 30))
			end = 4ull << 30; /* the probe maps the low 4 GiB */
		/* Keep clear of an initrd. */
		if (boot_info.initrd_size && boot_info.initrd_addr >= s &&
		    boot_info.initrd_addr < end)
			end = boot_info.initrd_addr;
		s = (s + PAGE - 1) & ~(PAGE - 1);
		end &= ~(PAGE - 1);
		if (end > s && end - s > best_hi - best_lo)
			best_lo = s, best_hi = end;
	}
	if (best_hi - best_lo < 4 * MIB)
		return "balloon: no free RAM to work with";
	pool_lo = best_lo;
	pool_hi = best_hi;
	return 0;
}

static uint64_t pool_pages(void)
{
	return (pool_hi - pool_lo) / PAGE;
}

/* The i-th page the balloon takes: touched memory top down first, then the rest top down. */
static uint32_t page_of(uint64_t i)
{
	uint64_t tp = touched / PAGE;
	uint64_t addr = i < tp ? pool_lo + touched - (i + 1) * PAGE : pool_hi - (i - tp + 1) * PAGE;
	return (uint32_t)(addr / PAGE);
}

static void touch(uint64_t from, uint64_t len, uint8_t pattern)
{
	for (uint64_t a = from; a < from + len; a += PAGE)
		*(volatile uint64_t *)a = pattern ^ a;
}

static bool verify(uint64_t from, uint64_t len, uint8_t pattern)
{
	for (uint64_t a = from; a < from + len; a += PAGE)
		if (*(volatile uint64_t *)a != (pattern ^ a))
			return false;
	return true;
}

static void put_stat(unsigned slot, uint16_t tag, uint64_t val)
{
	uint8_t *e = stats_buf + slot * STAT_ENTRY;
	e[0] = (uint8_t)tag;
	e[1] = (uint8_t)(tag >> 8);
	for (int i = 0; i < 8; i++)
		e[2 + i] = (uint8_t)(val >> (8 * i));
}

/* Fill the stats buffer and hand it to the device (5.5.6.3). */
static void post_stats(struct balloon *b, uint64_t balloon_pages)
{
	uint64_t free_bytes = (pool_pages() - balloon_pages) * PAGE;
	put_stat(0, BALLOON_STAT_MEMFREE, free_bytes);
	put_stat(1, BALLOON_STAT_MEMTOT, ram_total);
	put_stat(2, BALLOON_STAT_AVAIL, free_bytes);
	struct virtq_buf vb = {(uint64_t)stats_buf, sizeof(stats_buf), false};
	virtq_add(&b->vq[BALLOON_Q_STATS], &vb, 1);
	virtq_kick(&b->vq[BALLOON_Q_STATS], true);
}

/* The device returned the stats buffer: it wants fresh numbers. */
static const char *poll_stats(struct balloon *b, uint64_t balloon_pages)
{
	uint16_t id;
	uint32_t len;
	const char *err;
	if (virtq_get(&b->vq[BALLOON_Q_STATS], &id, &len, &err)) {
		if (err)
			return err;
		post_stats(b, balloon_pages);
	}
	return 0;
}

/* Report [pool_lo + touched, pool_hi) as free, in one chain of up to 16 ranges. */
static const char *report_free(struct balloon *b)
{
	if (!(b->features >> VIRTIO_BALLOON_F_REPORTING & 1))
		return "balloon: free page reporting not offered";
	struct virtq_buf bufs[REPORT_MAX_BUFS];
	unsigned n = 0;
	uint64_t a = pool_lo + touched, total = 0;
	while (a < pool_hi && n < REPORT_MAX_BUFS) {
		uint64_t len = pool_hi - a < REPORT_CHUNK ? pool_hi - a : REPORT_CHUNK;
		bufs[n++] = (struct virtq_buf){a, (uint32_t)len, true};
		a += len;
		total += len;
	}
	struct virtq *vq = &b->vq[BALLOON_Q_REPORTING];
	if (!n || virtq_add(vq, bufs, n) < 0)
		return "balloon: cannot post the free page report";
	virtq_kick(vq, true);
	uint16_t id;
	uint32_t len;
	const char *err = virtq_wait(vq, &id, &len, 3000);
	if (err)
		return err;
	kprintf("probe: balloon reported_mib=%lu\n", total / MIB);
	return 0;
}

/* Move the balloon from *have pages to want pages, one batch at a time. */
static const char *follow(struct balloon *b, uint64_t *have, uint64_t want)
{
	static uint32_t pfns[BATCH];
	while (*have != want) {
		bool inflate = want > *have;
		uint64_t n = inflate ? want - *have : *have - want;
		if (n > BATCH)
			n = BATCH;
		for (uint64_t i = 0; i < n; i++)
			pfns[i] = page_of(inflate ? *have + i : *have - 1 - i);
		const char *err = balloon_send_pfns(
		    b, inflate ? BALLOON_Q_INFLATE : BALLOON_Q_DEFLATE, pfns, (unsigned)n);
		if (err)
			return err;
		*have = inflate ? *have + n : *have - n;
		balloon_set_actual(b, (uint32_t)*have);
		if ((err = poll_stats(b, *have)))
			return err;
	}
	return 0;
}

const char *test_balloon(void)
{
	const char *v, *err;
	size_t n;
	uint64_t touch_mib = 64, report = 0, timeout_s = 120;
	if (cmdline_get(boot_info.cmdline, "balloon.touch_mib", &v, &n) &&
	    !parse_u64(v, n, false, &touch_mib))
		return "bad balloon.touch_mib";
	if (cmdline_get(boot_info.cmdline, "balloon.report", &v, &n) &&
	    !parse_u64(v, n, false, &report))
		return "bad balloon.report";
	if (cmdline_get(boot_info.cmdline, "balloon.timeout", &v, &n) &&
	    !parse_u64(v, n, false, &timeout_s))
		return "bad balloon.timeout";
	virtio_discover();
	struct virtio_dev *d = 0;
	for (unsigned i = 0; i < virtio_ndevs && !d; i++)
		if (virtio_devs[i].device_id == VIRTIO_ID_BALLOON)
			d = &virtio_devs[i];
	if (!d)
		return "no virtio-balloon device";
	static struct balloon b;
	if ((err = balloon_init(&b, d, report != 0)))
		return err;
	kprintf("probe: balloon transport=%s features=0x%lx deflate_on_oom=%lu reporting=%lu\n",
		virtio_transport_name(d), b.offered,
		b.offered >> VIRTIO_BALLOON_F_DEFLATE_ON_OOM & 1,
		b.offered >> VIRTIO_BALLOON_F_REPORTING & 1);
	if ((err = find_pool()))
		return err;
	touched = touch_mib * MIB;
	if (touched > pool_hi - pool_lo)
		return "balloon.touch_mib exceeds free RAM";
	touch(pool_lo, touched, 0x5a);
	post_stats(&b, 0);
	kprintf("probe: balloon ready touched_mib=%lu pool_mib=%lu\n", touch_mib,
		(pool_hi - pool_lo) / MIB);
	if (report && (err = report_free(&b)))
		return err;

	uint64_t have = 0, reported = (uint64_t)-1, t0 = rdtsc();
	uint64_t poll = virtio_ms_to_cycles(CONFIG_POLL_MS), last = 0;
	uint64_t limit = virtio_ms_to_cycles((unsigned)(timeout_s * 1000));
	bool was_nonzero = false;
	for (;;) {
		uint64_t now = rdtsc();
		if (now - t0 > limit)
			return "balloon: timed out following the target";
		if ((err = poll_stats(&b, have)))
			return err;
		if (now - last < poll) {
			cpu_relax();
			continue;
		}
		last = now;
		if (virtio_status(d) & VIRTIO_STATUS_DEVICE_NEEDS_RESET)
			return "virtio-balloon needs reset";
		uint64_t want = balloon_target(&b);
		if (want > pool_pages())
			want = pool_pages(); /* cannot give more than we have */
		if ((err = follow(&b, &have, want)))
			return err;
		if (have != reported) {
			kprintf("probe: balloon actual_pages=%lu\n", have);
			reported = have;
		}
		was_nonzero |= have != 0;
		if (was_nonzero && have == 0) {
			/* Every page came back: the guest can write and read all of it again. */
			touch(pool_lo, touched, 0xa5);
			if (!verify(pool_lo, touched, 0xa5))
				return "balloon: deflated memory does not hold data";
			kprintf("probe: balloon deflated ok\n");
			return 0;
		}
	}
}
