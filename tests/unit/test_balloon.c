/* The virtio-balloon device model against a fake driver writing rings in fake guest RAM:
 * inflate releases host memory (pages read back as zeros) and is counted once per page,
 * deflate returns them, PFNs outside RAM are counted and skipped, a malformed buffer breaks
 * the device, the config space and its generation, statistics kept and re-requested. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>

#include "devices/virtio/balloon.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"

#define RAM_SIZE (4u << 20)
#define QSIZE	 8
#define RING(q)	 (0x10000u + (q)*0x4000u) /* desc, avail +0x1000, used +0x2000 */
#define BUF_GPA	 0x80000u

static uint8_t *ram;
static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static struct virtio_balloon *b;
static uint16_t avail_idx[4];
static int config_irqs, queue_irqs;

static void signal_queue(struct virtio_dev *d, int q)
{
	(void)d, (void)q;
	queue_irqs++;
}

static void signal_config(struct virtio_dev *d)
{
	(void)d;
	config_irqs++;
}

static const struct virtio_transport_ops transport = {.signal_queue = signal_queue,
						      .signal_config = signal_config};

#define STATUS_FEATURES_OK                                                                         \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK)

/* The driver's side of initialisation up to (not including) DRIVER_OK, as a transport would
 * relay it; returns the status to add DRIVER_OK to. */
static uint8_t driver_setup(void)
{
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 0, 1u << VIRTIO_BALLOON_F_STATS_VQ);
	virtio_dev_set_driver_features(&dev, 1, 1u << (VIRTIO_F_VERSION_1 - 32));
	virtio_dev_set_status(&dev, STATUS_FEATURES_OK);
	for (int q = 0; q < 3; q++) {
		dev.vqs[q].size = QSIZE;
		dev.vqs[q].desc_gpa = RING(q);
		dev.vqs[q].avail_gpa = RING(q) + 0x1000;
		dev.vqs[q].used_gpa = RING(q) + 0x2000;
		virtio_dev_queue_ready(&dev, q, true);
	}
	return STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK;
}

static void setup(void)
{
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(ram != MAP_FAILED);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	cr_assert_eq(event_loop_init(&loop), 0);
	struct balloon_options o = {.deflate_on_oom = true};
	b = virtio_balloon_create(&dev, &mem, &loop, "balloon0", &o);
	cr_assert_not_null(b);
	dev.transport = &transport;
	memset(avail_idx, 0, sizeof(avail_idx));
	config_irqs = queue_irqs = 0;
	virtio_dev_set_status(&dev, driver_setup());
	cr_assert(dev.status & VIRTIO_STATUS_DRIVER_OK);
	cr_assert(!dev.broken);
}

static void teardown(void)
{
	virtio_balloon_destroy(b);
	event_loop_destroy(&loop);
	munmap(ram, RAM_SIZE);
}

/* Post one device-readable buffer of len bytes at BUF_GPA + off on queue q and kick. */
static void post(int q, uint32_t off, uint32_t len)
{
	uint8_t *desc = ram + RING(q) + (avail_idx[q] % QSIZE) * 16;
	uint64_t addr = BUF_GPA + off;
	memcpy(desc, &addr, 8);
	memcpy(desc + 8, &len, 4);
	memset(desc + 12, 0, 4);
	uint16_t *avail = (uint16_t *)(ram + RING(q) + 0x1000);
	avail[2 + avail_idx[q] % QSIZE] = (uint16_t)(avail_idx[q] % QSIZE);
	avail[1] = ++avail_idx[q];
	virtio_dev_queue_notify(&dev, q);
}

static uint16_t used_idx(int q)
{
	return *(uint16_t *)(ram + RING(q) + 0x2000 + 2);
}

static void pfns(uint32_t off, const uint32_t *list, unsigned n)
{
	memcpy(ram + BUF_GPA + off, list, n * 4);
}

TestSuite(balloon, .init = setup, .fini = teardown);

Test(balloon, inflate_releases_and_deflate_returns)
{
	for (uint32_t p = 0x100; p < 0x110; p++)
		memset(ram + p * 4096, 0xaa, 4096);
	const uint32_t in[] = {0x100, 0x101, 0x102, 0x105, 0x100 /* again */, 0xffffff};
	pfns(0, in, 6);
	post(0, 0, sizeof(in));
	cr_assert_eq(used_idx(0), 1);
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.inflated_pages, 4);
	cr_assert_eq(bi.inflate_pfns, 6);
	cr_assert_eq(bi.invalid_pfns, 1);
	cr_assert_eq(ram[0x100 * 4096 + 7], 0, "inflated page not released");
	cr_assert_eq(ram[0x105 * 4096 + 4095], 0);
	cr_assert_eq(ram[0x103 * 4096], 0xaa, "a page outside the list was released");
	cr_assert(!dev.broken);

	const uint32_t out[] = {0x101, 0x101, 0x103};
	pfns(64, out, 3);
	post(1, 64, sizeof(out));
	cr_assert_eq(used_idx(1), 1);
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.inflated_pages, 3, "deflate counted a page twice or one never inflated");
	cr_assert_eq(bi.deflate_pfns, 3);
}

Test(balloon, malformed_buffer_breaks_the_device)
{
	const uint32_t in[] = {0x100, 0x101};
	pfns(0, in, 2);
	post(0, 0, 6);
	cr_assert(dev.broken);
	cr_assert(dev.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	virtio_dev_set_status(&dev, 0);
	cr_assert(!dev.broken);
}

Test(balloon, config_space)
{
	char err[128];
	uint32_t gen = dev.config_generation;
	cr_assert_eq(virtio_balloon_set_target(b, 512, err, sizeof(err)), 0);
	cr_assert_eq(config_irqs, 1);
	cr_assert_neq(dev.config_generation, gen);
	uint32_t v = 0;
	dev.ops->read_config(&dev, 0, (uint8_t *)&v, 4);
	cr_assert_eq(v, 512);
	cr_assert_eq(virtio_balloon_set_target(b, 512, err, sizeof(err)), 0);
	cr_assert_eq(config_irqs, 1, "an unchanged target raised an interrupt");
	cr_assert_neq(virtio_balloon_set_target(b, RAM_SIZE / 4096 + 1, err, sizeof(err)), 0);
	/* The driver owns `actual`, byte by byte too; num_pages is read-only for it. */
	uint32_t actual = 300;
	dev.ops->write_config(&dev, 4, (const uint8_t *)&actual, 4);
	uint8_t one = 0x01;
	dev.ops->write_config(&dev, 5, &one, 1);
	dev.ops->write_config(&dev, 0, (const uint8_t *)&actual, 4);
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.actual_pages, (300 & 0xff) | 0x100);
	cr_assert_eq(bi.target_pages, 512);
	cr_assert(dev.device_features >> VIRTIO_BALLOON_F_DEFLATE_ON_OOM & 1);
	cr_assert_not(dev.device_features >> VIRTIO_BALLOON_F_REPORTING & 1);
	cr_assert_eq(dev.nr_queues, 3);
}

/* Linux's virtio_balloon posts its first statistics buffer and kicks before DRIVER_OK; the kick
 * is ignored then, so the device must find the buffer once the driver is ready. */
Test(balloon, statistics_buffer_posted_before_driver_ok)
{
	virtio_dev_set_status(&dev, 0);
	uint8_t st = driver_setup();
	uint8_t entry[10] = {4}; /* free memory */
	uint64_t free_mem = 4242;
	memcpy(entry + 2, &free_mem, 8);
	memcpy(ram + BUF_GPA, entry, sizeof(entry));
	memset(avail_idx, 0, sizeof(avail_idx));
	post(2, 0, sizeof(entry));
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.stats_updates, 0, "a kick before DRIVER_OK is not served at once");
	virtio_dev_set_status(&dev, st);
	event_loop_run_once(&loop, 0); /* the I/O thread's turn */
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.stats_updates, 1, "served once the driver is ready");
	cr_assert_eq(bi.stats[4], free_mem);
}

Test(balloon, statistics)
{
	uint8_t buf[30] = {0};
	uint64_t free_mem = 123456789, unknown = 5;
	buf[0] = 4; /* free memory */
	memcpy(buf + 2, &free_mem, 8);
	buf[10] = 99; /* unknown tags are ignored */
	memcpy(buf + 12, &unknown, 8);
	buf[20] = 5; /* total memory */
	memcpy(buf + 22, &free_mem, 8);
	memcpy(ram + BUF_GPA, buf, sizeof(buf));
	post(2, 0, sizeof(buf));
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.stats_updates, 1);
	cr_assert_eq(bi.stats[4], free_mem);
	cr_assert_eq(bi.stats_valid, 1u << 4 | 1u << 5);
	cr_assert_eq(used_idx(2), 0, "the stats buffer must be held until fresh stats are wanted");
	virtio_balloon_request_stats(b);
	cr_assert_eq(used_idx(2), 1);
	virtio_balloon_request_stats(b); /* nothing held: nothing happens */
	cr_assert_eq(used_idx(2), 1);
}

/* Linux sends at most 256 PFNs per buffer; a chain may describe gigabytes. The device refuses
 * a buffer over 4096 PFNs instead of walking it (each PFN costs a lock and a bitmap update). */
Test(balloon, oversized_pfn_buffer_is_refused)
{
	post(0, 0, 4096 * 4);
	cr_assert(!dev.broken, "4096 PFNs is the limit");
	cr_assert_eq(used_idx(0), 1);
	post(0, 0, 4097 * 4);
	cr_assert(dev.broken, "one PFN more breaks the device");
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.inflate_pfns, 4096, "the refused buffer was not walked");
}

/* One kick serves a bounded number of PFNs; the I/O thread's next turn serves the rest. */
Test(balloon, inflate_work_per_pass_is_bounded)
{
	for (int i = 0; i < 3; i++)
		post(0, (uint32_t)i * 0x4000, 4096 * 4); /* 4096 PFNs each (mostly outside RAM) */
	/* post() kicks after each buffer, so each was served; now queue three and kick once. */
	cr_assert_eq(used_idx(0), 3);
	for (int i = 0; i < 3; i++) {
		uint8_t *desc = ram + RING(0) + (avail_idx[0] % QSIZE) * 16;
		uint64_t addr = BUF_GPA + (uint64_t)i * 0x4000;
		uint32_t len = 4096 * 4;
		memcpy(desc, &addr, 8);
		memcpy(desc + 8, &len, 4);
		memset(desc + 12, 0, 4);
		uint16_t *avail = (uint16_t *)(ram + RING(0) + 0x1000);
		avail[2 + avail_idx[0] % QSIZE] = (uint16_t)(avail_idx[0] % QSIZE);
		avail[1] = ++avail_idx[0];
	}
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(0), 5, "a pass stops after 8192 PFNs");
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(0), 6, "the bottom half serves the rest");
	cr_assert(!dev.broken);
}

/* Statistics buffers are read up to 64 entries; a huge buffer costs no more than that. */
Test(balloon, statistics_beyond_64_entries_are_ignored)
{
	uint8_t buf[100 * 10] = {0};
	uint64_t first = 111, late = 222;
	buf[0] = 4;
	memcpy(buf + 2, &first, 8);
	for (int i = 1; i < 100; i++)
		buf[i * 10] = 99; /* unknown tags */
	buf[70 * 10] = 4;	  /* entry 70: past the limit */
	memcpy(buf + 70 * 10 + 2, &late, 8);
	memcpy(ram + BUF_GPA, buf, sizeof(buf));
	post(2, 0, sizeof(buf));
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.stats_updates, 1);
	cr_assert_eq(bi.stats[4], first, "entry 70 must not be read");
}

/* ---- snapshot and restore (vmm/snapshot/snapshot.c): the balloon's own state ---- */

static struct virtio_balloon_state saved;
static struct virtio_dev_state saved_dev;
static uint8_t saved_map[RAM_SIZE / 4096 / 8];

/* A new process's balloon: created afresh, the driver's set-up replayed, the rings' indices
 * put back, then the balloon's state; 0 or -1 (err set). */
static int restore_into_new_device(char *err, size_t errlen)
{
	event_loop_run_once(&loop, 0); /* nothing of the old device left queued */
	virtio_balloon_destroy(b);
	memset(&dev, 0, sizeof(dev));
	struct balloon_options o = {.deflate_on_oom = true};
	b = virtio_balloon_create(&dev, &mem, &loop, "balloon0", &o);
	cr_assert_not_null(b);
	dev.transport = &transport;
	virtio_dev_set_status(&dev, driver_setup());
	virtio_dev_restore_rings(&dev, &saved_dev);
	config_irqs = 0;
	return virtio_balloon_restore(b, &saved, saved_map, err, errlen);
}

static void save_now(void)
{
	virtio_dev_save(&dev, &saved_dev);
	virtio_balloon_save(b, &saved, saved_map);
}

Test(balloon, snapshot_keeps_target_stats_buffer_and_released_pages)
{
	char err[160];
	const uint32_t in[] = {0x100, 0x101, 0x102};
	pfns(0, in, 3);
	post(0, 0, sizeof(in));
	uint8_t stat[10] = {4};
	memcpy(ram + BUF_GPA + 512, stat, sizeof(stat));
	post(2, 512, sizeof(stat));
	cr_assert_eq(virtio_balloon_set_target(b, 700, err, sizeof(err)), 0);
	uint32_t actual = 3;
	dev.ops->write_config(&dev, 4, (const uint8_t *)&actual, 4);
	save_now();
	cr_assert_eq(saved.stats_held, 1);
	cr_assert_eq(restore_into_new_device(err, sizeof(err)), 0, "%s", err);
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.target_pages, 700);
	cr_assert_eq(bi.actual_pages, 3);
	cr_assert_eq(bi.inflated_pages, 3, "the released pages are counted from the map");
	cr_assert_eq(bi.inflate_pfns, 3);
	cr_assert_eq(bi.stats_updates, 1);
	uint32_t v = 0;
	dev.ops->read_config(&dev, 0, (uint8_t *)&v, 4);
	cr_assert_eq(v, 700, "the driver reads the saved target");
	/* The target is not reached: the configuration interrupt is raised again. */
	virtio_balloon_resignal(b);
	cr_assert_eq(config_irqs, 1);
	/* The held statistics buffer goes back to the driver when fresh numbers are wanted. */
	virtio_balloon_request_stats(b);
	cr_assert_eq(used_idx(2), 1, "the stats buffer held before the snapshot is lost");
	/* Deflating a page released before the snapshot is counted against it. */
	const uint32_t out[] = {0x101};
	pfns(64, out, 1);
	post(1, 64, sizeof(out));
	virtio_balloon_get_info(b, &bi);
	cr_assert_eq(bi.inflated_pages, 2);
	/* A new target after the restore reaches the driver. */
	cr_assert_eq(virtio_balloon_set_target(b, 10, err, sizeof(err)), 0);
	cr_assert_eq(config_irqs, 2);
	cr_assert(!dev.broken);
}

Test(balloon, snapshot_reached_target_raises_nothing)
{
	char err[160];
	save_now();
	cr_assert_eq(restore_into_new_device(err, sizeof(err)), 0, "%s", err);
	virtio_balloon_resignal(b);
	cr_assert_eq(config_irqs, 0);
}

Test(balloon, restore_refuses_state_no_device_had)
{
	char err[160];
	uint8_t stat[10] = {4};
	memcpy(ram + BUF_GPA, stat, sizeof(stat));
	post(2, 0, sizeof(stat));
	save_now();
	saved.stats_head = QSIZE;
	cr_assert_eq(restore_into_new_device(err, sizeof(err)), -1);
	cr_assert(strstr(err, "statistics buffer is not in a live queue"), "%s", err);
	save_now();
	saved.stats_held = 2;
	cr_assert_eq(restore_into_new_device(err, sizeof(err)), -1);
	cr_assert(strstr(err, "statistics-buffer flag"), "%s", err);
	save_now();
	saved.num_pages = RAM_SIZE / 4096 + 1;
	cr_assert_eq(restore_into_new_device(err, sizeof(err)), -1);
	cr_assert(strstr(err, "target or statistics out of range"), "%s", err);
	save_now();
	saved.stats_valid = 1u << BALLOON_NR_STATS;
	cr_assert_eq(restore_into_new_device(err, sizeof(err)), -1);
	cr_assert(strstr(err, "target or statistics out of range"), "%s", err);
}
