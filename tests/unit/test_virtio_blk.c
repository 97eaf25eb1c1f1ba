/* virtio-blk request handling against a fake guest (driver side written by hand) and a temp
 * image: round trips through both engines and both cache modes, every bounds and layout check,
 * the special requests, and reset with requests in flight. Completions are driven with
 * event_loop_run_once on the test thread. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devices/backends/blk_io.h"
#include "devices/virtio/blk.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "vmm/kinds/kinds.h"
#include "vmm/cli/options.h"

#define RAM_SIZE    (16u << 20)
#define QSIZE	    256
#define DESC_GPA    0x10000u
#define AVAIL_GPA   0x20000u
#define USED_GPA    0x30000u
#define HDR_GPA	    0x40000u /* 16 bytes per request slot */
#define STATUS_GPA  0x50000u /* 1 byte per request slot */
#define DATA_GPA    0x100000u
#define IMG_SECTORS 2048u /* 1 MiB image */

#define T_IN	       0
#define T_OUT	       1
#define T_FLUSH	       4
#define T_GET_ID       8
#define T_DISCARD      11
#define T_WRITE_ZEROES 13
#define S_OK	       0
#define S_IOERR	       1
#define S_UNSUPP       2
#define S_NONE	       0xee /* untouched */

static uint8_t *ram;
static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static struct virtio_blk *blk;
static char img_path[64];
static int irqs, config_irqs;
static uint16_t avail_idx, used_seen, next_desc;

static void signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	(void)q;
	irqs++;
}

static void signal_config(struct virtio_dev *d)
{
	(void)d;
	config_irqs++;
}

static const struct virtio_transport_ops fake_transport = {.signal_queue = signal_queue,
							   .signal_config = signal_config};

static void make_image(void)
{
	strcpy(img_path, "/tmp/minivmm-blk-test.XXXXXX");
	int fd = mkstemp(img_path);
	cr_assert(fd >= 0);
	uint8_t sector[512];
	for (unsigned s = 0; s < IMG_SECTORS; s++) {
		memset(sector, (int)(s & 0xff), sizeof(sector));
		cr_assert_eq(write(fd, sector, sizeof(sector)), (ssize_t)sizeof(sector));
	}
	close(fd);
}

#define F_EVENT_IDX (1u << 29)

/* A driver's initialisation (virtio 1.2, 3.1.1), accepting every feature offered but those in
 * refused, with the queue's rings where the driver side below expects them, empty;
 * driver_init first checks that the device reads status 0, as a driver waits for. */
static void driver_setup(uint32_t refused)
{
	memset(ram + AVAIL_GPA, 0, 4 + 2u * QSIZE);
	memset(ram + USED_GPA, 0, 4 + 8u * QSIZE);
	avail_idx = used_seen = next_desc = 0;
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 0, virtio_dev_get_device_features(&dev, 0) & ~refused);
	virtio_dev_set_driver_features(&dev, 1, 1); /* VERSION_1 */
	virtio_dev_set_status(&dev, 1 | 2 | VIRTIO_STATUS_FEATURES_OK);
	struct virtqueue *vq = &dev.vqs[0];
	vq->size = QSIZE;
	vq->desc_gpa = DESC_GPA;
	vq->avail_gpa = AVAIL_GPA;
	vq->used_gpa = USED_GPA;
	virtio_dev_queue_ready(&dev, 0, true);
	virtio_dev_set_status(&dev, 1 | 2 | 8 | VIRTIO_STATUS_DRIVER_OK);
	cr_assert(dev.status & VIRTIO_STATUS_DRIVER_OK);
	cr_assert(!dev.broken);
}

static void driver_init(uint32_t refused)
{
	cr_assert_eq(virtio_dev_status(&dev), 0, "initialising a device that is not reset");
	driver_setup(refused);
}

/* Create the device and bring it to DRIVER_OK, accepting every feature it offers but those in
 * refused. */
static void start_refusing(bool readonly, bool direct, bool no_uring, const char *serial,
			   uint32_t refused)
{
	struct blk_options o = {0};
	snprintf(o.path, sizeof(o.path), "%s", img_path);
	o.readonly = readonly;
	o.direct = direct;
	o.no_uring = no_uring;
	snprintf(o.serial, sizeof(o.serial), "%s", serial ? serial : "");
	blk = virtio_blk_create(&dev, &mem, &loop, "virtio-blk0", &o);
	cr_assert_not_null(blk);
	dev.transport = &fake_transport;
	driver_init(refused);
}

static void start(bool readonly, bool direct, bool no_uring, const char *serial)
{
	start_refusing(readonly, direct, no_uring, serial, 0);
}

static void setup(void)
{
	/* Page-aligned and untouched: the reset tests hold pages of it with userfaultfd. */
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(ram, MAP_FAILED);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	cr_assert_eq(event_loop_init(&loop), 0);
	make_image();
	irqs = config_irqs = 0;
	avail_idx = used_seen = next_desc = 0;
	blk = NULL;
}

static void release_faults(void);

static void teardown(void)
{
	release_faults(); /* a failed reset test must not leave the disk's workers stuck */
	if (blk)
		virtio_blk_destroy(blk);
	event_loop_destroy(&loop);
	unlink(img_path);
	munmap(ram, RAM_SIZE);
}

TestSuite(virtio_blk, .init = setup, .fini = teardown);

/* --- the driver side --- */

struct buf {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

static void put_desc(uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = ram + DESC_GPA + 16u * i;
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

/* Post one chain; returns its head. */
static uint16_t post(const struct buf *b, unsigned n)
{
	uint16_t head = next_desc;
	for (unsigned i = 0; i < n; i++) {
		uint16_t idx = (uint16_t)((next_desc + i) % QSIZE);
		uint16_t flags = (uint16_t)((b[i].write ? 2 : 0) | (i + 1 < n ? 1 : 0));
		put_desc(idx, b[i].gpa, b[i].len, flags, (uint16_t)((idx + 1) % QSIZE));
	}
	next_desc = (uint16_t)((next_desc + n) % QSIZE);
	uint16_t *avail = (uint16_t *)(ram + AVAIL_GPA);
	avail[2 + avail_idx % QSIZE] = head;
	__atomic_store_n(&avail[1], ++avail_idx, __ATOMIC_RELEASE);
	return head;
}

static uint16_t used_idx(void)
{
	return __atomic_load_n((uint16_t *)(ram + USED_GPA + 2), __ATOMIC_ACQUIRE);
}

static uint32_t used_len(uint16_t slot)
{
	uint32_t len;
	memcpy(&len, ram + USED_GPA + 4 + 8u * (slot % QSIZE) + 4, 4);
	return len;
}

/* Kick and run the I/O loop until n more requests completed (bounded: 5 s). */
static void kick_and_wait(unsigned n)
{
	virtio_dev_queue_notify(&dev, 0);
	for (int i = 0; i < 500 && (uint16_t)(used_idx() - used_seen) < n; i++)
		event_loop_run_once(&loop, 10);
	cr_assert_eq((uint16_t)(used_idx() - used_seen), n, "completions: %u of %u",
		     (uint16_t)(used_idx() - used_seen), n);
	used_seen = used_idx();
}

static void header(unsigned slot, uint32_t type, uint64_t sector)
{
	uint8_t *h = ram + HDR_GPA + 16u * slot;
	memset(h, 0, 16);
	memcpy(h, &type, 4);
	memcpy(h + 8, &sector, 8);
	ram[STATUS_GPA + slot] = S_NONE;
}

/* A well-formed request: header, optional data, status. Returns the status byte. */
static uint8_t request(uint32_t type, uint64_t sector, uint64_t data_gpa, uint32_t len,
		       bool data_writable)
{
	header(0, type, sector);
	struct buf b[3] = {{HDR_GPA, 16, false}};
	unsigned n = 1;
	if (len)
		b[n++] = (struct buf){data_gpa, len, data_writable};
	b[n++] = (struct buf){STATUS_GPA, 1, true};
	post(b, n);
	kick_and_wait(1);
	return ram[STATUS_GPA];
}

static uint8_t rd(uint64_t sector, uint64_t gpa, uint32_t len)
{
	return request(T_IN, sector, gpa, len, true);
}

static uint8_t wr(uint64_t sector, uint64_t gpa, uint32_t len)
{
	return request(T_OUT, sector, gpa, len, false);
}

static uint8_t dwz(uint32_t type, uint64_t sector, uint32_t num, uint32_t flags)
{
	uint8_t *seg = ram + DATA_GPA + 0x80000;
	memcpy(seg, &sector, 8);
	memcpy(seg + 8, &num, 4);
	memcpy(seg + 12, &flags, 4);
	return request(type, 0, DATA_GPA + 0x80000, 16, false);
}

static void read_image(uint64_t off, void *buf, size_t len)
{
	int fd = open(img_path, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void round_trip(bool direct, bool no_uring, uint64_t gpa)
{
	start(false, direct, no_uring, NULL);
	cr_assert_eq(virtio_blk_capacity(blk), IMG_SECTORS);
	for (unsigned i = 0; i < 8192; i++)
		ram[gpa + i] = (uint8_t)(i * 7 + 3);
	cr_assert_eq(wr(100, gpa, 8192), S_OK);
	uint8_t disk[8192];
	read_image(100 * 512, disk, sizeof(disk));
	cr_assert_eq(memcmp(disk, ram + gpa, sizeof(disk)), 0, "image holds the write");
	memset(ram + gpa + 0x10000, 0, 8192);
	cr_assert_eq(rd(100, gpa + 0x10000, 8192), S_OK);
	cr_assert_eq(memcmp(ram + gpa + 0x10000, disk, sizeof(disk)), 0);
	cr_assert_eq(used_len((uint16_t)(used_seen - 1)), 8192 + 1, "used len: data + status");
	/* Untouched sectors read back as made. */
	cr_assert_eq(rd(5, gpa, 512), S_OK);
	cr_assert_eq(ram[gpa], 5);
	cr_assert_eq(ram[gpa + 511], 5);
}

Test(virtio_blk, round_trip_io_uring)
{
	round_trip(false, false, DATA_GPA);
	cr_assert_str_eq(virtio_blk_engine(blk), "io_uring");
}

Test(virtio_blk, round_trip_worker_threads)
{
	round_trip(false, true, DATA_GPA);
	cr_assert_str_eq(virtio_blk_engine(blk), "worker threads");
}

Test(virtio_blk, round_trip_direct_aligned)
{
	round_trip(true, false, DATA_GPA);
}

Test(virtio_blk, round_trip_direct_unaligned_bounces)
{
	round_trip(true, false, DATA_GPA + 3);
}

Test(virtio_blk, round_trip_direct_worker_unaligned)
{
	round_trip(true, true, DATA_GPA + 100);
}

Test(virtio_blk, config_space)
{
	start(false, false, false, NULL);
	uint8_t cfg[60];
	dev.ops->read_config(&dev, 0, cfg, sizeof(cfg));
	uint64_t cap;
	uint32_t seg_max, blk_size;
	memcpy(&cap, cfg, 8);
	memcpy(&seg_max, cfg + 12, 4);
	memcpy(&blk_size, cfg + 20, 4);
	cr_assert_eq(cap, IMG_SECTORS);
	cr_assert_eq(blk_size, 512);
	cr_assert(seg_max >= 1);
	uint64_t f = dev.device_features;
	cr_assert(f & (1u << 9), "FLUSH");
	cr_assert(f & (1u << 13) && f & (1u << 14), "DISCARD, WRITE_ZEROES");
	cr_assert(f & (1u << 29) && f & (1u << 28), "EVENT_IDX, INDIRECT_DESC");
	cr_assert(!(f & (1u << 5)), "not read-only");
}

Test(virtio_blk, out_of_range)
{
	start(false, false, false, NULL);
	cr_assert_eq(rd(IMG_SECTORS - 1, DATA_GPA, 512), S_OK, "last sector");
	cr_assert_eq(rd(IMG_SECTORS, DATA_GPA, 512), S_IOERR, "one past the end");
	cr_assert_eq(rd(IMG_SECTORS - 1, DATA_GPA, 1024), S_IOERR, "straddles the end");
	cr_assert_eq(wr(IMG_SECTORS, DATA_GPA, 512), S_IOERR);
	cr_assert_eq(rd(UINT64_MAX, DATA_GPA, 512), S_IOERR, "sector near 2^64");
	cr_assert_eq(rd(UINT64_MAX / 512 + 1, DATA_GPA, 512), S_IOERR, "sector * 512 wraps");
	cr_assert_eq(wr(UINT64_MAX - 1, DATA_GPA, 1024), S_IOERR);
	cr_assert_eq(rd(0, DATA_GPA, 100), S_IOERR, "not a multiple of 512");
	cr_assert_eq(dwz(T_WRITE_ZEROES, UINT64_MAX, 2, 0), S_IOERR);
	cr_assert_eq(dwz(T_DISCARD, IMG_SECTORS - 1, 2, 0), S_IOERR);
	cr_assert(!dev.broken, "bad requests do not break the device");
}

Test(virtio_blk, readonly_refuses_writes)
{
	start(true, false, false, NULL);
	cr_assert(dev.device_features & (1u << 5), "VIRTIO_BLK_F_RO");
	memset(ram + DATA_GPA, 0xab, 4096);
	cr_assert_eq(wr(0, DATA_GPA, 4096), S_IOERR);
	cr_assert_eq(dwz(T_DISCARD, 0, 8, 0), S_IOERR);
	cr_assert_eq(dwz(T_WRITE_ZEROES, 0, 8, 0), S_IOERR);
	cr_assert_eq(request(T_FLUSH, 0, 0, 0, false), S_OK);
	cr_assert_eq(rd(0, DATA_GPA, 4096), S_OK);
	uint8_t disk[4096];
	read_image(0, disk, sizeof(disk));
	for (unsigned i = 0; i < sizeof(disk); i++)
		cr_assert_eq(disk[i], i / 512, "image unchanged at %u", i);
}

Test(virtio_blk, unknown_type_unsupported)
{
	start(false, false, false, NULL);
	cr_assert_eq(request(99, 0, 0, 0, false), S_UNSUPP);
	cr_assert_eq(request(0x80000001u, 0, DATA_GPA, 512, false), S_UNSUPP);
	cr_assert(!dev.broken);
}

Test(virtio_blk, get_id)
{
	start(false, false, false, "disk-serial-7");
	memset(ram + DATA_GPA, 0xff, 20);
	cr_assert_eq(request(T_GET_ID, 0, DATA_GPA, 20, true), S_OK);
	cr_assert_eq(memcmp(ram + DATA_GPA, "disk-serial-7\0\0\0\0\0\0\0", 20), 0);
	cr_assert_eq(used_len((uint16_t)(used_seen - 1)), 21);
}

/* cachestat(2) (Linux 6.5; Debian 12's headers lack it): dirty pages of the image in the host
 * page cache, or -1 where the kernel lacks the call. */
static long dirty_pages(void)
{
	struct {
		uint64_t off, len; /* len 0: to the end of the file */
	} range = {0, 0};
	struct {
		uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
	} cs;
	int fd = open(img_path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	long rc = syscall(451 /* __NR_cachestat */, fd, &range, &cs, 0);
	close(fd);
	return rc < 0 ? -1 : (long)(cs.nr_dirty + cs.nr_writeback);
}

/* What a FLUSH promises: once it completes, every write completed before it is on stable
 * storage. Through the page cache (cache=writeback) that is observable: none of the image's
 * pages may still be dirty (or under writeback) when the FLUSH completes. SIGKILLing the VMM
 * cannot show this (the page cache outlives the process), and the status byte alone is the
 * same for a FLUSH that does nothing. */
static void flush_writes_back(bool no_uring)
{
	int fd = open(img_path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(fdatasync(fd), 0); /* so that what is dirty below is the guest's write */
	close(fd);
	if (dirty_pages() < 0)
		cr_skip_test("no cachestat(2) (Linux before 6.5): cannot see a FLUSH write back");
	cr_assert_eq(dirty_pages(), 0);
	start(false, false, no_uring, NULL);
	for (unsigned i = 0; i < 65536; i++)
		ram[DATA_GPA + i] = (uint8_t)(i * 13 + 1);
	cr_assert_eq(wr(0, DATA_GPA, 65536), S_OK);
	long dirty = dirty_pages();
	if (dirty == 0)
		cr_skip_test("the host wrote the image back before the FLUSH: nothing to observe");
	cr_assert_eq(request(T_FLUSH, 0, 0, 0, false), S_OK);
	cr_assert_eq(dirty_pages(), 0, "%ld dirty pages were not written back by the FLUSH", dirty);
}

Test(virtio_blk, flush_writes_back_io_uring)
{
	flush_writes_back(false);
	cr_assert_str_eq(virtio_blk_engine(blk), "io_uring");
}

Test(virtio_blk, flush_writes_back_worker_threads)
{
	flush_writes_back(true);
	cr_assert_str_eq(virtio_blk_engine(blk), "worker threads");
}

Test(virtio_blk, flush_with_data_is_refused)
{
	start(false, false, false, NULL);
	cr_assert_eq(request(T_FLUSH, 0, DATA_GPA, 512, true), S_IOERR);
	cr_assert(!dev.broken);
}

Test(virtio_blk, discard_and_write_zeroes)
{
	start(false, false, false, NULL);
	cr_assert_eq(dwz(T_WRITE_ZEROES, 16, 8, 0), S_OK);
	cr_assert_eq(dwz(T_WRITE_ZEROES, 32, 8, 1), S_OK, "with unmap");
	uint8_t disk[512 * 32];
	read_image(8 * 512, disk, sizeof(disk));
	for (unsigned i = 0; i < sizeof(disk); i++) {
		unsigned s = 8 + i / 512;
		bool zero = (s >= 16 && s < 24) || (s >= 32 && s < 40);
		cr_assert_eq(disk[i], zero ? 0 : s, "byte %u of sector %u", i % 512, s);
	}
	cr_assert_eq(dwz(T_DISCARD, 64, 8, 0), S_OK);
	cr_assert_eq(dwz(T_DISCARD, 64, 8, 1), S_UNSUPP, "unmap on discard");
	cr_assert_eq(dwz(T_WRITE_ZEROES, 64, 8, 2), S_UNSUPP, "reserved flag");
	cr_assert_eq(dwz(T_DISCARD, 64, 0, 0), S_OK, "empty range");
	cr_assert_eq(dwz(T_DISCARD, 0, (1u << 22) + 1, 0), S_IOERR, "above max_discard_sectors");
	/* A segment list that is not one 16-byte segment. */
	header(0, T_DISCARD, 0);
	struct buf b[3] = {{HDR_GPA, 16, false}, {DATA_GPA, 8, false}, {STATUS_GPA, 1, true}};
	post(b, 3);
	kick_and_wait(1);
	cr_assert_eq(ram[STATUS_GPA], S_IOERR);
	cr_assert(!dev.broken);
}

Test(virtio_blk, bad_layouts)
{
	start(false, false, false, NULL);
	/* Header too short. */
	header(0, T_IN, 0);
	struct buf short_hdr[2] = {{HDR_GPA, 8, false}, {STATUS_GPA, 1, true}};
	post(short_hdr, 2);
	kick_and_wait(1);
	cr_assert_eq(ram[STATUS_GPA], S_IOERR);
	/* Header device-writable. */
	header(0, T_IN, 0);
	struct buf w_hdr[2] = {{HDR_GPA, 16, true}, {STATUS_GPA, 1, true}};
	post(w_hdr, 2);
	kick_and_wait(1);
	cr_assert_eq(ram[STATUS_GPA], S_IOERR);
	/* A read whose data buffer is device-readable. */
	cr_assert_eq(request(T_IN, 0, DATA_GPA, 512, false), S_IOERR);
	/* A write whose data buffer is device-writable. */
	cr_assert_eq(request(T_OUT, 0, DATA_GPA, 512, true), S_IOERR);
	/* Header and data in one descriptor, status in the data's last byte: legal. */
	header(0, T_OUT, 3);
	memcpy(ram + DATA_GPA, ram + HDR_GPA, 16);
	memset(ram + DATA_GPA + 16, 0x5a, 512);
	struct buf merged[2] = {{DATA_GPA, 16 + 512, false}, {STATUS_GPA, 1, true}};
	post(merged, 2);
	kick_and_wait(1);
	cr_assert_eq(ram[STATUS_GPA], S_OK);
	uint8_t disk[512];
	read_image(3 * 512, disk, sizeof(disk));
	cr_assert_eq(disk[0], 0x5a);
	cr_assert(!dev.broken);
	/* No device-writable byte at all: nowhere to put a status, a protocol violation. */
	header(0, T_IN, 0);
	struct buf no_status[1] = {{HDR_GPA, 16, false}};
	post(no_status, 1);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert(dev.broken);
	cr_assert(dev.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	cr_assert_eq(config_irqs, 1);
}

/* Interrupt batching, with EVENT_IDX refused: the driver leaves interrupts on (no NO_INTERRUPT
 * flag), so nothing but the device's own batching keeps an interrupt from being raised for every
 * completed request. (With EVENT_IDX and used_event left at 0, suppression alone would hide an
 * interrupt per request.) */
Test(virtio_blk, requests_completed_at_once_share_one_interrupt)
{
	start_refusing(false, false, false, "batch", F_EVENT_IDX);
	for (unsigned i = 0; i < 32; i++) {
		header(i, T_GET_ID, 0);
		struct buf b[3] = {{HDR_GPA + 16u * i, 16, false},
				   {DATA_GPA + 32u * i, 20, true},
				   {STATUS_GPA + i, 1, true}};
		post(b, 3);
	}
	kick_and_wait(32);
	for (unsigned i = 0; i < 32; i++)
		cr_assert_eq(ram[STATUS_GPA + i], S_OK);
	cr_assert_eq(irqs, 1, "32 requests finished in one pass: one interrupt, not %d", irqs);
}

Test(virtio_blk, batch_gets_few_interrupts)
{
	start_refusing(false, false, false, NULL, F_EVENT_IDX);
	for (unsigned i = 0; i < 32; i++) {
		header(i, T_IN, i);
		struct buf b[3] = {{HDR_GPA + 16u * i, 16, false},
				   {DATA_GPA + 4096u * i, 4096, true},
				   {STATUS_GPA + i, 1, true}};
		post(b, 3);
	}
	kick_and_wait(32);
	for (unsigned i = 0; i < 32; i++) {
		cr_assert_eq(ram[STATUS_GPA + i], S_OK);
		cr_assert_eq(ram[DATA_GPA + 4096u * i], i);
	}
	cr_assert(irqs >= 1 && irqs < 32, "one interrupt per batch, not per request (%d)", irqs);
}

static unsigned untouched(unsigned n)
{
	unsigned c = 0;
	for (unsigned i = 0; i < n; i++)
		c += ram[STATUS_GPA + i] == S_NONE;
	return c;
}

/* Run the I/O loop until the status register reads 0 (bounded: 5 s): a driver's reset wait. */
static void await_reset_done(void)
{
	for (int i = 0; i < 500 && virtio_dev_status(&dev); i++)
		event_loop_run_once(&loop, 10);
	cr_assert_eq(virtio_dev_status(&dev), 0, "the reset never completed");
}

/* Requests the device already finished may be pushed before the reset (the device completes
 * what it can at once); those still in flight at the reset must never reach the guest, and the
 * status register reads non-zero until they are gone. */
static void reset_in_flight(bool no_uring)
{
	start(false, true, no_uring, NULL); /* O_DIRECT: reads really wait for the disk */
	memset(ram + DATA_GPA, 0xcc, 64 * 8192);
	for (unsigned i = 0; i < 64; i++) {
		header(i, T_IN, 8 * i);
		struct buf b[3] = {{HDR_GPA + 16u * i, 16, false},
				   {DATA_GPA + 8192u * i, 8192, true},
				   {STATUS_GPA + i, 1, true}};
		post(b, 3);
	}
	virtio_dev_queue_notify(&dev, 0);
	uint16_t pushed = used_idx();
	unsigned pending = untouched(64);
	cr_assert_eq(pending, 64u - pushed);
	virtio_dev_set_status(&dev, 0); /* disowns the rest, without waiting */
	cr_assert_eq(virtio_dev_status(&dev) != 0, virtio_blk_inflight(blk) != 0,
		     "status reads 0 only once nothing is in flight");
	await_reset_done();
	cr_assert_eq(virtio_blk_inflight(blk), 0);
	cr_assert_eq(used_idx(), pushed, "nothing pushed after reset");
	cr_assert_eq(untouched(64), pending, "no status written after reset");
}

Test(virtio_blk, reset_with_requests_in_flight)
{
	reset_in_flight(false);
}

Test(virtio_blk, reset_with_requests_in_flight_workers)
{
	reset_in_flight(true);
}

/* A request queued in the same pass as a chain that breaks the device (io_uring: prepared, not
 * yet submitted) is still started, so the reset that follows completes. */
Test(virtio_blk, reset_after_break_completes)
{
	start(false, false, false, NULL);
	header(0, T_IN, 1);
	struct buf r[3] = {{HDR_GPA, 16, false}, {DATA_GPA, 4096, true}, {STATUS_GPA, 1, true}};
	post(r, 3);
	struct buf bad[1] = {{HDR_GPA + 16, 16, false}}; /* no status byte: breaks the device */
	post(bad, 1);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert(dev.broken);
	virtio_dev_set_status(&dev, 0);
	await_reset_done();
	cr_assert_eq(virtio_blk_inflight(blk), 0);
	driver_init(0);
	cr_assert_eq(rd(3, DATA_GPA, 512), S_OK);
	cr_assert_eq(ram[DATA_GPA], 3);
}

/* Requests held in flight for as long as a test wants: their data buffers lie in pages of
 * guest RAM registered with userfaultfd, so the disk's worker threads block in preadv() on the
 * first byte they copy, until the pages are released (the userfaultfd closed). A watchdog
 * thread releases them anyway after HOLD_LIMIT_S, so a reset that waits for the disk cannot
 * hang the test: it fails it (fault.watchdog). */
#define HOLD_LIMIT_S 5
#define HELD_GPA     0x400000u /* 64 KiB per request */
#define HELD_LEN     (64u << 10)
#define HELD_REQS    8

static struct {
	int uffd;
	bool running, release, watchdog;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
} fault = {.uffd = -1, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *fault_holder(void *opaque)
{
	(void)opaque;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += HOLD_LIMIT_S;
	pthread_mutex_lock(&fault.lock);
	while (!fault.release)
		if (pthread_cond_timedwait(&fault.cond, &fault.lock, &deadline)) {
			fault.watchdog = true;
			break;
		}
	close(fault.uffd); /* unregisters the range and wakes the blocked faults */
	fault.uffd = -1;
	pthread_mutex_unlock(&fault.lock);
	return NULL;
}

/* Register [gpa, gpa + len) and start the holder. */
static void hold_pages(uint64_t gpa, uint64_t len)
{
	fault.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	cr_assert_geq(fault.uffd, 0, "userfaultfd: %s", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API};
	cr_assert_eq(ioctl(fault.uffd, UFFDIO_API, &api), 0, "UFFDIO_API: %s", strerror(errno));
	cr_assert_eq(madvise(ram + gpa, len, MADV_DONTNEED), 0);
	struct uffdio_register reg = {.range = {(uintptr_t)(ram + gpa), len},
				      .mode = UFFDIO_REGISTER_MODE_MISSING};
	cr_assert_eq(ioctl(fault.uffd, UFFDIO_REGISTER, &reg), 0, "UFFDIO_REGISTER: %s",
		     strerror(errno));
	fault.release = fault.watchdog = false;
	cr_assert_eq(pthread_create(&fault.thread, NULL, fault_holder, NULL), 0);
	fault.running = true;
}

/* Wait (bounded: 5 s) until n threads are blocked on held pages. */
static void await_faults(unsigned n)
{
	unsigned seen = 0;
	struct pollfd p = {.fd = fault.uffd, .events = POLLIN};
	while (seen < n && poll(&p, 1, 5000) == 1) {
		struct uffd_msg msg;
		if (read(fault.uffd, &msg, sizeof(msg)) == sizeof(msg) &&
		    msg.event == UFFD_EVENT_PAGEFAULT)
			seen++;
	}
	cr_assert_eq(seen, n, "%u of %u disk reads blocked on held pages", seen, n);
}

static void release_faults(void)
{
	if (!fault.running)
		return;
	pthread_mutex_lock(&fault.lock);
	fault.release = true;
	pthread_cond_signal(&fault.cond);
	pthread_mutex_unlock(&fault.lock);
	pthread_join(fault.thread, NULL);
	fault.running = false;
}

/* n reads (read i from sector 128 * i) into held pages (worker engine), kicked, and every
 * worker blocked in one. */
static void start_held_reads(unsigned n)
{
	start(false, false, true, NULL);
	hold_pages(HELD_GPA, n * HELD_LEN);
	for (unsigned i = 0; i < n; i++) {
		header(i, T_IN, 128 * i);
		struct buf b[3] = {{HDR_GPA + 16u * i, 16, false},
				   {HELD_GPA + HELD_LEN * i, HELD_LEN, true},
				   {STATUS_GPA + i, 1, true}};
		post(b, 3);
	}
	virtio_dev_queue_notify(&dev, 0);
	await_faults(BLK_IO_WORKERS);
}

/* HELD_REQS held reads, then a reset: it returns at once, with the requests still in flight. */
static void reset_with_held_reads(void)
{
	start_held_reads(HELD_REQS);
	cr_assert_eq(virtio_blk_inflight(blk), HELD_REQS);
	virtio_dev_set_status(&dev, 0);
	pthread_mutex_lock(&fault.lock);
	bool waited = fault.watchdog;
	pthread_mutex_unlock(&fault.lock);
	cr_assert(!waited, "the reset waited for the disk (on the vCPU thread, under the lock)");
	cr_assert_eq(virtio_blk_inflight(blk), HELD_REQS);
	cr_assert_eq(virtio_dev_status(&dev), VIRTIO_STATUS_DEVICE_NEEDS_RESET,
		     "status reads non-zero while the reset is pending");
	cr_assert_eq(dev.status, 0);
}

/* A driver that waits for status 0 (as Linux's virtio-pci and the probe do): it reads non-zero
 * until the last old request finished, none of which reaches the rings; then a new
 * initialisation works. */
Test(virtio_blk, reset_does_not_wait_for_the_disk)
{
	reset_with_held_reads();
	for (int i = 0; i < 5; i++)
		event_loop_run_once(&loop, 10);
	cr_assert_eq(virtio_dev_status(&dev), VIRTIO_STATUS_DEVICE_NEEDS_RESET,
		     "the reset completed with requests still blocked");
	release_faults();
	await_reset_done();
	cr_assert_eq(virtio_blk_inflight(blk), 0);
	cr_assert_eq(used_idx(), 0, "an old request was pushed after the reset");
	cr_assert_eq(untouched(HELD_REQS), HELD_REQS, "an old status byte was written");
	driver_init(0);
	cr_assert_eq(rd(5, DATA_GPA, 512), S_OK);
	cr_assert_eq(ram[DATA_GPA], 5);
	cr_assert_eq(ram[DATA_GPA + 511], 5);
}

/* A driver that does not wait (older Linux virtio-mmio) and sets the queue up again at once,
 * at the same addresses, while the old requests are still in flight: its new requests
 * complete, and the old ones never land in the new rings when they finish. */
Test(virtio_blk, reset_then_reinit_without_waiting)
{
	reset_with_held_reads();
	virtio_dev_set_status(&dev, 0); /* a second reset meanwhile changes nothing */
	cr_assert_eq(virtio_dev_status(&dev), VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	/* As a driver that ORs bits into what it reads would write them. */
	virtio_dev_set_status(&dev, virtio_dev_status(&dev) | VIRTIO_STATUS_ACKNOWLEDGE);
	cr_assert_eq(virtio_dev_status(&dev), VIRTIO_STATUS_ACKNOWLEDGE);
	driver_setup(0);
	/* New requests at the old ones' descriptors: GET_ID completes at once, a read once the
	 * workers are free. */
	header(HELD_REQS, T_GET_ID, 0);
	struct buf id[3] = {{HDR_GPA + 16u * HELD_REQS, 16, false},
			    {DATA_GPA, 20, true},
			    {STATUS_GPA + HELD_REQS, 1, true}};
	uint16_t id_head = post(id, 3);
	kick_and_wait(1);
	cr_assert_eq(ram[STATUS_GPA + HELD_REQS], S_OK);
	header(HELD_REQS + 1, T_IN, 7);
	struct buf r[3] = {{HDR_GPA + 16u * (HELD_REQS + 1), 16, false},
			   {DATA_GPA + 4096, 512, true},
			   {STATUS_GPA + HELD_REQS + 1, 1, true}};
	uint16_t rd_head = post(r, 3);
	virtio_dev_queue_notify(&dev, 0);
	release_faults();
	for (int i = 0; i < 500 && virtio_blk_inflight(blk); i++)
		event_loop_run_once(&loop, 10);
	cr_assert_eq(virtio_blk_inflight(blk), 0);
	cr_assert_eq(used_idx(), 2, "only the new driver's two requests are used (%u)", used_idx());
	uint32_t e0, e1;
	memcpy(&e0, ram + USED_GPA + 4, 4);
	memcpy(&e1, ram + USED_GPA + 12, 4);
	cr_assert_eq(e0, id_head);
	cr_assert_eq(e1, rd_head);
	cr_assert_eq(ram[STATUS_GPA + HELD_REQS + 1], S_OK);
	cr_assert_eq(ram[DATA_GPA + 4096], 7);
	cr_assert_eq(untouched(HELD_REQS), HELD_REQS, "an old status byte was written");
	cr_assert_eq(virtio_dev_status(&dev), 1 | 2 | 8 | VIRTIO_STATUS_DRIVER_OK);
}

/* --disk's parser on an option string; the image it opened is closed again. */
static int parse_disk(const char *options, struct blk_options *o, char *err, size_t errlen)
{
	struct option_list opts;
	int fd;
	if (options_split(options, "--disk", &opts, err, errlen))
		return -1;
	int rc = blk_options_parse(&opts, o, &fd, err, errlen);
	if (rc == 0) {
		cr_assert_geq(fd, 0);
		close(fd);
	}
	return rc;
}

Test(virtio_blk, options)
{
	struct blk_options o;
	char err[300];
	char opt[200];
	snprintf(opt, sizeof(opt), "path=%s,readonly=on,cache=none,serial=abc", img_path);
	cr_assert_eq(parse_disk(opt, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(o.readonly && o.direct);
	cr_assert_str_eq(o.serial, "abc");
	snprintf(opt, sizeof(opt), "path=%s,readonly,cache=writeback", img_path);
	cr_assert_eq(parse_disk(opt, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert(o.readonly && !o.direct);
	cr_assert_eq(parse_disk("readonly=on", &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "path=IMAGE or vhost-user=PATH is required"), "%s", err);
	cr_assert_eq(parse_disk("path=/nonexistent/x.img", &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot open"), "%s", err);
	snprintf(opt, sizeof(opt), "path=%s,serial=123456789012345678901", img_path);
	cr_assert_eq(parse_disk(opt, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "serial '123456789012345678901' is longer than 20 bytes"), "%s", err);
	snprintf(opt, sizeof(opt), "path=%s,cache=sometimes", img_path);
	cr_assert_eq(parse_disk(opt, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "--disk: invalid cache 'sometimes' (expected none or writeback)"),
		  "%s", err);
	snprintf(opt, sizeof(opt), "path=%s,bogus=1", img_path);
	cr_assert_eq(parse_disk(opt, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "unknown --disk option 'bogus'"), "%s", err);
	cr_assert_eq(parse_disk("path", &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "--disk: path needs a value"), "%s", err);
}

static void *quiesce_thread(void *opaque)
{
	virtio_blk_quiesce(opaque);
	return NULL;
}

/* A snapshot's quiesce (I/O thread, vCPUs paused) finishes the requests in flight itself: with
 * every worker blocked in a held read, it returns only once they are done, and their status
 * bytes, data and used entries are in guest memory although the event loop never ran (a
 * snapshot taken then would otherwise lose them). The interrupt is raised for them. */
Test(virtio_blk, quiesce_finishes_requests_in_flight)
{
	start_refusing(false, false, true, NULL, F_EVENT_IDX); /* every completion interrupts */
	int irqs_before = irqs;
	hold_pages(HELD_GPA, BLK_IO_WORKERS * HELD_LEN);
	for (unsigned i = 0; i < BLK_IO_WORKERS; i++) {
		header(i, T_IN, 128 * i);
		struct buf b[3] = {{HDR_GPA + 16u * i, 16, false},
				   {HELD_GPA + HELD_LEN * i, HELD_LEN, true},
				   {STATUS_GPA + i, 1, true}};
		post(b, 3);
	}
	virtio_dev_queue_notify(&dev, 0);
	await_faults(BLK_IO_WORKERS);
	cr_assert_eq(virtio_blk_inflight(blk), BLK_IO_WORKERS);
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, quiesce_thread, blk), 0);
	release_faults();
	pthread_join(t, NULL);
	cr_assert_eq(virtio_blk_inflight(blk), 0, "requests still in flight after quiesce");
	cr_assert_eq((uint16_t)(used_idx() - used_seen), BLK_IO_WORKERS, "used entries: %u of %u",
		     (uint16_t)(used_idx() - used_seen), BLK_IO_WORKERS);
	for (unsigned i = 0; i < BLK_IO_WORKERS; i++)
		cr_assert_eq(ram[STATUS_GPA + i], S_OK, "request %u: status %u", i,
			     ram[STATUS_GPA + i]);
	cr_assert_gt(irqs, irqs_before, "no interrupt for the finished requests");
}

/* One read per disk worker into held pages, every worker blocked in one, then the guest turns
 * bus mastering off and the reads finish: the device may not write guest memory now, so it holds
 * them (a snapshot's quiesce included), and nothing reaches the ring. */
static void finish_reads_with_bus_mastering_off(void)
{
	start_held_reads(BLK_IO_WORKERS);
	virtio_dev_set_dma_enabled(&dev, false);
	release_faults();
	for (int i = 0; i < 500 && virtio_blk_parked(blk) < BLK_IO_WORKERS; i++)
		event_loop_run_once(&loop, 10);
	cr_assert_eq(virtio_blk_parked(blk), BLK_IO_WORKERS, "%u of %u reads held",
		     virtio_blk_parked(blk), BLK_IO_WORKERS);
	virtio_blk_quiesce(blk);
	cr_assert_eq(virtio_blk_parked(blk), BLK_IO_WORKERS, "quiesce handed them over");
	cr_assert_eq(virtio_blk_inflight(blk), BLK_IO_WORKERS);
	cr_assert_eq(used_idx(), 0, "a used entry written with bus mastering off");
	cr_assert_eq(untouched(BLK_IO_WORKERS), BLK_IO_WORKERS, "a status written with it off");
}

/* ... and once it is back on they complete, with their data, and an interrupt; the ring's
 * notifications, off while the reads were in flight, are on again (else the next request,
 * added without a kick, would wait forever), and the disk goes on working. */
Test(virtio_blk, bus_mastering_off_holds_completions_until_it_is_back_on)
{
	finish_reads_with_bus_mastering_off();
	int irqs_before = irqs;
	virtio_dev_set_dma_enabled(&dev, true);
	for (int i = 0; i < 100 && used_idx() < BLK_IO_WORKERS; i++)
		event_loop_run_once(&loop, 10);
	cr_assert_eq(used_idx(), BLK_IO_WORKERS, "%u of %u reads completed", used_idx(),
		     BLK_IO_WORKERS);
	for (unsigned i = 0; i < BLK_IO_WORKERS; i++) {
		cr_assert_eq(ram[STATUS_GPA + i], S_OK, "read %u: status %u", i,
			     ram[STATUS_GPA + i]);
		cr_assert_eq(ram[HELD_GPA + HELD_LEN * i], (128 * i) & 0xff, "read %u: data", i);
	}
	cr_assert_gt(irqs, irqs_before, "no interrupt for the held reads");
	cr_assert_eq(virtio_blk_parked(blk), 0);
	cr_assert_eq(virtio_blk_inflight(blk), 0);
	cr_assert_not(dev.vqs[0].notifications_off, "kicks left off with nothing in flight");
	used_seen = used_idx();
	cr_assert_eq(rd(7, DATA_GPA, 512), S_OK);
	cr_assert_eq(ram[DATA_GPA], 7);
}

/* A reset meanwhile drops them (they belong to the old rings) and completes at once: nothing
 * of theirs reaches the guest, and a new initialisation works. */
Test(virtio_blk, reset_with_completions_held_for_bus_mastering)
{
	finish_reads_with_bus_mastering_off();
	virtio_dev_set_status(&dev, 0);
	await_reset_done();
	cr_assert_eq(virtio_blk_parked(blk), 0);
	cr_assert_eq(virtio_blk_inflight(blk), 0);
	virtio_dev_set_dma_enabled(&dev, true);
	for (int i = 0; i < 5; i++)
		event_loop_run_once(&loop, 1);
	cr_assert_eq(used_idx(), 0, "a held read reached the ring after the reset");
	cr_assert_eq(untouched(BLK_IO_WORKERS), BLK_IO_WORKERS);
	driver_init(0);
	cr_assert_eq(rd(5, DATA_GPA, 512), S_OK);
	cr_assert_eq(ram[DATA_GPA], 5);
}
