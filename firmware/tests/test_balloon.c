/*
 * test=balloon: touch balloon.touch_mib=N MiB (default 64) of free RAM so the VMM's RSS holds
 * it, then follow the balloon target: inflate with pages from that memory (top down), deflate
 * them back, write `actual`, answer statistics requests. PASS once the target went back to 0
 * after being non-zero and the deflated memory is usable again. balloon.report=1 also reports
 * the untouched free RAM once (free page reporting). balloon.timeout=SECONDS (default 120).
 *
 * balloon.oom=MIB: once the balloon holds a non-zero target, a workload allocates every free
 * page (writing a pattern into each) and then MIB MiB more. When it runs out and
 * VIRTIO_BALLOON_F_DEFLATE_ON_OOM was negotiated, the out-of-memory path deflates 256 pages at a
 * time below the target (Linux's oom_pages), telling the device on the deflate queue and waiting
 * for it first, and the workload takes exactly those pages (every word written and read back),
 * until it has what it wants or the balloon is empty. Without the feature the balloon stays at
 * its target and the workload comes up short. Then the workload ends, and, as Linux does, the
 * balloon is not refilled until the target changes. balloon.oom_start=serial waits for a byte
 * on COM1 before the workload starts (so the host can look at the VM first).
 *
 * Output: probe: balloon features=0x.. deflate_on_oom=0|1 reporting=0|1
 *         probe: balloon ready touched_mib=N
 *         probe: balloon reported_mib=M            (balloon.report=1)
 *         probe: balloon actual_pages=N            (whenever the target is reached)
 *         probe: balloon oom waiting                (balloon.oom_start=serial)
 *         probe: balloon oom start free_pages=F balloon_pages=B want_pages=W deflate_on_oom=0|1
 *         probe: balloon oom deflated_pages=N reused_ok=1 allocated_pages=A short_pages=S
 *                actual_pages=M                      (deflate-on-oom negotiated)
 *         probe: balloon oom unavailable deflate_on_oom=0 allocated_pages=A short_pages=S
 *                actual_pages=M                      (not negotiated, and memory ran out)
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
#define OOM_PAGES	256 /* pages deflated per out-of-memory event, as Linux's oom_pages */
#define OOM_PATTERN	0x6f6f6d2d62616cull
#define COM1_DATA	0x3f8
#define COM1_LSR	0x3fd
#define LSR_DR		0x01

extern char _end[];

/* Free RAM the test owns: [pool_lo, pool_hi); the first `touched` bytes were written. */
static uint64_t pool_lo, pool_hi, touched, ram_total;
/* Pages the balloon.oom workload holds: neither free nor in the balloon. */
static uint64_t oom_held;
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
			end = 4ull << 30; /* the pool stays in the statically mapped low 4 GiB */
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

/* The inverse: the page at addr is in a balloon of n pages iff index_of(addr) < n. */
static uint64_t index_of(uint64_t addr)
{
	if (addr < pool_lo + touched)
		return (pool_lo + touched - addr) / PAGE - 1;
	return touched / PAGE + (pool_hi - addr) / PAGE - 1;
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
	uint64_t free_bytes = (pool_pages() - balloon_pages - oom_held) * PAGE;
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

/* One word per page marks a page the workload took from free RAM. */
static void oom_mark(uint64_t a)
{
	*(volatile uint64_t *)a = OOM_PATTERN ^ a;
}

/* A page that came out of the balloon: write every word, read every word back. */
static bool oom_fill_verify(uint64_t a)
{
	volatile uint64_t *p = (volatile uint64_t *)a;
	for (unsigned k = 0; k < PAGE / 8; k++)
		p[k] = OOM_PATTERN ^ (a + 8 * k);
	for (unsigned k = 0; k < PAGE / 8; k++)
		if (p[k] != (OOM_PATTERN ^ (a + 8 * k)))
			return false;
	return true;
}

/* balloon.oom_start=serial: wait for a byte on COM1, answering statistics requests meanwhile. */
static const char *oom_wait_serial(struct balloon *b, uint64_t have, uint64_t t0, uint64_t limit)
{
	kprintf("probe: balloon oom waiting\n");
	uint64_t poll = virtio_ms_to_cycles(CONFIG_POLL_MS), last = 0;
	for (;;) {
		uint64_t now = rdtsc();
		if (now - t0 > limit)
			return "balloon: timed out waiting for the oom start byte";
		const char *err = poll_stats(b, have);
		if (err)
			return err;
		if (now - last < poll) {
			cpu_relax();
			continue;
		}
		last = now;
		if (inb(COM1_LSR) & LSR_DR) {
			(void)inb(COM1_DATA);
			return 0;
		}
	}
}

/*
 * The balloon.oom workload: take every free page, then extra more. On running out, deflate
 * OOM_PAGES at a time below the target if DEFLATE_ON_OOM was negotiated and take exactly those
 * pages. Everything it took must still hold its pattern at the end; then it lets go of it all.
 */
static const char *oom_workload(struct balloon *b, uint64_t *have, uint64_t extra)
{
	static uint32_t pfns[OOM_PAGES];
	uint64_t free_pages = pool_pages() - *have, want = free_pages + extra;
	bool may = balloon_may_deflate_on_oom(b);
	const char *err;
	kprintf("probe: balloon oom start free_pages=%lu balloon_pages=%lu want_pages=%lu "
		"deflate_on_oom=%d\n",
		free_pages, *have, want, may);
	oom_held = 0;
	for (uint64_t a = pool_lo; a < pool_hi; a += PAGE) {
		if (index_of(a) < *have)
			continue; /* in the balloon */
		oom_mark(a);
		if (++oom_held % 4096 == 0 && (err = poll_stats(b, *have)))
			return err;
	}
	/* Out of free memory. */
	uint64_t deflated = 0;
	bool reused_ok = true;
	while (may && oom_held < want && *have) {
		unsigned n = *have < OOM_PAGES ? (unsigned)*have : OOM_PAGES;
		for (unsigned i = 0; i < n; i++)
			pfns[i] = page_of(*have - 1 - i);
		if ((err = balloon_deflate_on_oom(b, pfns, n, have)))
			return err;
		deflated += n;
		/* The device has let go of them: they are ours again. */
		for (unsigned i = 0; i < n; i++)
			reused_ok &= oom_fill_verify((uint64_t)pfns[i] * PAGE);
		oom_held += n;
		if ((err = poll_stats(b, *have)))
			return err;
	}
	/* Everything the workload holds (all of the pool outside the balloon) still reads back. */
	for (uint64_t a = pool_lo; a < pool_hi; a += PAGE)
		if (index_of(a) >= *have && *(volatile uint64_t *)a != (OOM_PATTERN ^ a))
			reused_ok = false;
	uint64_t short_pages = oom_held < want ? want - oom_held : 0;
	if (!may && short_pages)
		kprintf("probe: balloon oom unavailable deflate_on_oom=0 allocated_pages=%lu "
			"short_pages=%lu actual_pages=%lu\n",
			oom_held, short_pages, *have);
	else
		kprintf("probe: balloon oom deflated_pages=%lu reused_ok=%d allocated_pages=%lu "
			"short_pages=%lu actual_pages=%lu\n",
			deflated, reused_ok, oom_held, short_pages, *have);
	if (!reused_ok)
		return "balloon: memory taken back on OOM does not hold data";
	oom_held = 0; /* the workload ends */
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
	uint64_t touch_mib = 64, report = 0, timeout_s = 120, oom_mib = 0;
	bool oom_serial = false;
	if (cmdline_get(boot_info.cmdline, "balloon.touch_mib", &v, &n) &&
	    !parse_u64(v, n, false, &touch_mib))
		return "bad balloon.touch_mib";
	if (cmdline_get(boot_info.cmdline, "balloon.report", &v, &n) &&
	    !parse_u64(v, n, false, &report))
		return "bad balloon.report";
	if (cmdline_get(boot_info.cmdline, "balloon.timeout", &v, &n) &&
	    !parse_u64(v, n, false, &timeout_s))
		return "bad balloon.timeout";
	if (cmdline_get(boot_info.cmdline, "balloon.oom", &v, &n) &&
	    (!parse_u64(v, n, false, &oom_mib) || !oom_mib || oom_mib > (1ul << 20)))
		return "bad balloon.oom (MiB, 1 or more)";
	if (cmdline_get(boot_info.cmdline, "balloon.oom_start", &v, &n)) {
		if (n != 6 || memcmp(v, "serial", 6))
			return "bad balloon.oom_start (serial)";
		oom_serial = true;
	}
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
	bool was_nonzero = false, oom_done = !oom_mib, oom_hold = false;
	uint32_t oom_target = 0;
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
		uint32_t target = balloon_target(&b);
		uint64_t want = target;
		if (want > pool_pages())
			want = pool_pages(); /* cannot give more than we have */
		/* Deflated on OOM: stay below the target until the device sets a new one. */
		oom_hold &= target == oom_target;
		if (oom_hold)
			want = have;
		if ((err = follow(&b, &have, want)))
			return err;
		if (have != reported) {
			kprintf("probe: balloon actual_pages=%lu\n", have);
			reported = have;
		}
		was_nonzero |= have != 0;
		if (!oom_done && have && have == want) {
			oom_done = true;
			if (oom_serial && (err = oom_wait_serial(&b, have, t0, limit)))
				return err;
			if ((err = oom_workload(&b, &have, oom_mib * (MIB / PAGE))))
				return err;
			oom_hold = true;
			oom_target = target;
			reported = have;
			continue;
		}
		if (was_nonzero && have == 0 && target == 0) {
			/* Every page came back: the guest can write and read all of it again. */
			touch(pool_lo, touched, 0xa5);
			if (!verify(pool_lo, touched, 0xa5))
				return "balloon: deflated memory does not hold data";
			kprintf("probe: balloon deflated ok\n");
			return 0;
		}
	}
}
