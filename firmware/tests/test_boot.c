/* test=boot: e820 against expect.mem, a pattern in every RAM range, initrd CRC, CPU bring-up,
 * and a timed compute loop. */
#include "boot_info.h"
#include "cmdline.h"
#include "cpu_tables.h"
#include "crc32.h"
#include "paging.h"
#include "printf.h"
#include "pvm.h"
#include "smp.h"
#include "test_boot.h"
#include "tsc.h"
#include "x86.h"

#define MIB	       (1ull << 20)
#define AP_TIMEOUT_MIN 4000000000ull /* TSC cycles */
#define LOW_RAM_MAX    (3ull << 30)  /* RAM above this sits above 4 GiB (MMIO hole) */
#define PAGE	       4096ull
#define RAM_PAGES      8 /* pages checked per RAM range: first, last and 6 spread between */
#define RAM_WORDS      (E820_MAX * RAM_PAGES * 2)

extern char __image_start[], _end[];

struct boot_summary boot_summary;

static bool param(const char *key, const char **val, size_t *len)
{
	return cmdline_get(boot_info.cmdline, key, val, len);
}

/* Is [start, end) covered by the union of RAM entries? Repeatedly extend the covered prefix. */
static bool ram_covers(uint64_t start, uint64_t end)
{
	bool progress = true;
	while (start < end && progress) {
		progress = false;
		for (unsigned i = 0; i < boot_info.e820_count; i++) {
			const struct e820_entry *e = &boot_info.e820[i];
			if (e->type == E820_RAM && e->addr <= start && e->addr + e->size > start) {
				start = e->addr + e->size;
				progress = true;
			}
		}
	}
	return start >= end;
}

static uint64_t ram_total(void)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < boot_info.e820_count; i++)
		if (boot_info.e820[i].type == E820_RAM)
			total += boot_info.e820[i].size;
	return total;
}

static const char *check_e820(void)
{
	const char *v;
	size_t n;
	uint64_t want;
	if (!param("expect.mem", &v, &n))
		return 0;
	if (!parse_u64(v, n, true, &want) || want < 2 * MIB)
		return "bad expect.mem";
	uint64_t top = want < LOW_RAM_MAX ? want : LOW_RAM_MAX;
	if (!ram_covers(MIB, top))
		return "e820 does not cover expect.mem";
	uint64_t total = ram_total();
	if (total > want || total < want - MIB)
		return "e820 total differs from expect.mem";
	kprintf("probe: e820 ok\n");
	return 0;
}

/* Words of RAM written with a pattern, and what they held (restored afterwards). */
struct ram_word {
	volatile uint64_t *p;
	uint64_t saved;
};
static struct ram_word ram_words[RAM_WORDS] __attribute__((section(".noinit")));

static uint64_t ram_pattern(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) ^ 0x5a5aa5a5c3c33c3cull;
}

/* Queue the first and last word of a page, unless the page is the probe's own. */
static unsigned ram_add_page(uint64_t page, unsigned n)
{
	if (page < (uint64_t)_end && page + PAGE > (uint64_t)__image_start)
		return n;
	ram_words[n++].p = (volatile uint64_t *)page;
	ram_words[n++].p = (volatile uint64_t *)(page + PAGE - 8);
	return n;
}

/* Every RAM range of the e820 map, above 4 GiB included: write a pattern to the first and last
 * word of a few pages of each (all of them first, so two addresses that reach the same memory
 * show up), read it all back, then restore what was there. Before the APs run, so nothing
 * else is using those words; the loader's structures were copied into the image. */
static const char *check_ram(void)
{
	unsigned n = 0, ranges = 0, high_words = 0;
	for (unsigned i = 0; i < boot_info.e820_count; i++) {
		const struct e820_entry *e = &boot_info.e820[i];
		uint64_t first = (e->addr + PAGE - 1) & ~(PAGE - 1);
		uint64_t end = (e->addr + e->size) & ~(PAGE - 1);
		if (e->type != E820_RAM || end <= first)
			continue;
		if (first >= PAGING_MAP_LIMIT) {
			kprintf("probe: ram range addr=0x%lx size=0x%lx not mapped: skipped\n",
				e->addr, e->size);
			continue;
		}
		if (end > PAGING_MAP_LIMIT)
			end = PAGING_MAP_LIMIT; /* the pages below the limit are checked */
		uint64_t pages = (end - first) / PAGE;
		unsigned before = n;
		for (uint64_t k = 0; k < RAM_PAGES && k < pages; k++) {
			uint64_t idx = pages <= RAM_PAGES ? k : k * (pages - 1) / (RAM_PAGES - 1);
			n = ram_add_page(first + idx * PAGE, n);
		}
		if (first >= (4ull << 30))
			high_words += n - before;
		ranges++;
		kprintf("probe: ram range addr=0x%lx size=0x%lx words=%u\n", e->addr, e->size,
			n - before);
	}
	for (unsigned i = 0; i < n; i++) {
		ram_words[i].saved = *ram_words[i].p;
		*ram_words[i].p = ram_pattern((uint64_t)ram_words[i].p);
	}
	const char *err = 0;
	for (unsigned i = 0; i < n && !err; i++)
		if (*ram_words[i].p != ram_pattern((uint64_t)ram_words[i].p)) {
			kprintf("probe: ram word 0x%lx reads 0x%lx\n", (uint64_t)ram_words[i].p,
				*ram_words[i].p);
			err = "RAM does not hold what was written";
		}
	for (unsigned i = 0; i < n; i++)
		*ram_words[i].p = ram_words[i].saved;
	if (!err)
		kprintf("probe: ram ok ranges=%u words=%u above_4g=%u\n", ranges, n, high_words);
	return err;
}

static const char *check_initrd(void)
{
	const char *v;
	size_t n;
	uint64_t size = boot_info.initrd_size;
	bool want_crc = param("initrd.crc32", &v, &n);
	uint32_t crc_want = 0;
	if (want_crc && !parse_hex32(v, n, &crc_want))
		return "bad initrd.crc32";
	uint64_t size_want = 0;
	bool want_size = param("initrd.size", &v, &n);
	if (want_size && !parse_u64(v, n, false, &size_want))
		return "bad initrd.size";
	if (!boot_info.initrd_addr || !size)
		return (want_crc || want_size) ? "no initrd" : 0;
	uint32_t crc = crc32((const void *)boot_info.initrd_addr, size);
	kprintf("probe: initrd addr=0x%lx size=%lu crc32=%08x\n", boot_info.initrd_addr, size, crc);
	if (want_crc && crc != crc_want)
		return "initrd crc32 mismatch";
	if (want_size && size != size_want)
		return "initrd size mismatch";
	return 0;
}

static const char *check_cpus(uint32_t khz)
{
	struct cpu_list cpus;
	struct smp_result res;
	cpu_tables_find(boot_info.rsdp, &cpus);
	/* Generous: 2 s per AP, and never under 4e9 cycles (1 s at 4 GHz) should khz be off. */
	uint64_t timeout = (uint64_t)khz * 2000;
	if (timeout < AP_TIMEOUT_MIN)
		timeout = AP_TIMEOUT_MIN;
	smp_boot(&cpus, timeout, &res);
	boot_summary.cpus_online = res.online;
	for (unsigned i = 0; i < res.online; i++)
		kprintf("probe: cpu %u apic_id=%u online\n", i, res.apic_id[i]);
	unsigned listed = cpus.count ? cpus.count : 1;
	kprintf("probe: cpus=%u online=%u\n", listed, res.online);
	const char *v;
	size_t n;
	uint64_t want;
	if (param("expect.cpus", &v, &n)) {
		if (!parse_u64(v, n, false, &want))
			return "bad expect.cpus";
		if (want != res.online)
			return "cpu count mismatch";
	}
	if (res.online != listed)
		return "cpus did not come online";
	return 0;
}

static void compute(enum exec_mode mode, uint32_t khz)
{
	uint64_t iters = mode == MODE_EMULATED ? 1000000 : 1000000000;
	uint64_t n = iters;
	uint64_t t0 = rdtsc();
	__asm__ volatile("1: dec %0; jnz 1b" : "+r"(n));
	uint64_t cycles = rdtsc() - t0;
	if (!khz) {
		kprintf("probe: compute iterations=%lu tsc_cycles=%lu ns=unknown\n", iters, cycles);
		return;
	}
	uint64_t ns = cycles * 1000000 / khz;
	uint64_t rate = ns ? iters * 1000 / ns : 0;
	boot_summary.miter_per_s = rate;
	kprintf("probe: compute iterations=%lu tsc_cycles=%lu ns=%lu miter_per_s=%lu\n", iters,
		cycles, ns, rate);
}

const char *test_boot(void)
{
	const char *err;
	uint32_t khz = tsc_khz();
	boot_summary.tsc_khz = khz;
	boot_summary.ram_bytes = ram_total();
	if ((err = check_e820()) || (err = check_ram()) || (err = check_initrd()) ||
	    (err = check_cpus(khz)))
		return err;
	compute(exec_mode(), khz);
	return 0;
}
