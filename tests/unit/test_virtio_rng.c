/* virtio-rng against a fake driver: requests are filled with exactly the entropy source's bytes
 * (a fake source here), in order across the chain's buffers, and a guest cannot make one request
 * (or one pass over the ring) cost more than a bounded amount of getrandom() under the device
 * lock, however large the buffers it describes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "devices/virtio/rng.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"

#define RAM_SIZE (4u << 20)
#define QSIZE	 256
#define RING	 0x10000u /* desc; avail +0x1000; used +0x2000 */
#define BUF	 0x100000u
#define BUF_LEN	 (1u << 20)

static uint8_t *ram;
static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static struct virtio_rng *rng;
static uint16_t avail_idx;

static void signal_queue(struct virtio_dev *d, int q)
{
	(void)d, (void)q;
}

static void signal_config(struct virtio_dev *d)
{
	(void)d;
}

static const struct virtio_transport_ops transport = {.signal_queue = signal_queue,
						      .signal_config = signal_config};

static void setup(void)
{
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(ram != MAP_FAILED);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	cr_assert_eq(event_loop_init(&loop), 0);
	rng = virtio_rng_create(&dev, &mem, &loop, "rng0");
	cr_assert_not_null(rng);
	dev.transport = &transport;
	avail_idx = 0;
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 1, 1u << (VIRTIO_F_VERSION_1 - 32));
	uint8_t ok = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	virtio_dev_set_status(&dev, ok);
	virtio_dev_set_queue_size(&dev, 0, QSIZE);
	virtio_dev_set_queue_addr(&dev, 0, VIRTIO_RING_DESC, 0, 64, RING);
	virtio_dev_set_queue_addr(&dev, 0, VIRTIO_RING_DRIVER, 0, 64, RING + 0x1000);
	virtio_dev_set_queue_addr(&dev, 0, VIRTIO_RING_DEVICE, 0, 64, RING + 0x2000);
	virtio_dev_queue_ready(&dev, 0, true);
	virtio_dev_set_status(&dev, ok | VIRTIO_STATUS_DRIVER_OK);
	cr_assert(virtio_dev_live(&dev));
}

static void teardown(void)
{
	virtio_rng_destroy(rng);
	event_loop_destroy(&loop);
	munmap(ram, RAM_SIZE);
}

TestSuite(virtio_rng, .init = setup, .fini = teardown);

/* Write descriptor i: writable, len bytes at addr, chained to i + 1 when more follows. */
static void put_desc(uint16_t i, uint64_t addr, uint32_t len, bool more)
{
	uint8_t *d = ram + RING + (size_t)i * 16;
	uint16_t flags = VIRTQ_DESC_F_WRITE | (more ? VIRTQ_DESC_F_NEXT : 0);
	uint16_t next = (uint16_t)(i + 1);
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

/* Make the chain that starts at descriptor head available. */
static void publish(uint16_t head)
{
	uint16_t *avail = (uint16_t *)(ram + RING + 0x1000);
	avail[2 + avail_idx % QSIZE] = head;
	avail[1] = ++avail_idx;
}

/* A chain of n writable descriptors starting at descriptor first, each len bytes at addr. */
static void chain(uint16_t first, unsigned n, uint64_t addr, uint32_t len)
{
	for (unsigned i = 0; i < n; i++)
		put_desc((uint16_t)(first + i), addr, len, i + 1 < n);
	publish(first);
}

static uint16_t used_idx(void)
{
	return *(uint16_t *)(ram + RING + 0x2000 + 2);
}

static uint32_t used_len(unsigned i)
{
	uint32_t len;
	memcpy(&len, ram + RING + 0x2000 + 4 + 8 * i + 4, 4);
	return len;
}

Test(virtio_rng, request_is_filled)
{
	memset(ram + BUF, 0, 4096);
	chain(0, 1, BUF, 4096);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(used_len(0), 4096);
	unsigned zero = 0;
	for (unsigned i = 0; i < 4096; i++)
		zero += ram[BUF + i] == 0;
	cr_assert_lt(zero, 64, "the buffer is filled with random bytes");
}

/* 256 descriptors of 1 MiB over the same buffer: 256 MiB described. One request gets 64 KiB
 * (the device may write less than the buffers hold). */
Test(virtio_rng, aliasing_chain_is_served_64k)
{
	chain(0, 256, BUF, BUF_LEN);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(used_len(0), 64u << 10);
	cr_assert_eq(virtio_rng_bytes(rng), 64u << 10);
}

/* Eight requests of 64 KiB: one pass serves 256 KiB, the I/O thread's next turn the rest. */
Test(virtio_rng, pass_is_bounded)
{
	for (uint16_t i = 0; i < 8; i++)
		chain(i, 1, BUF, 64u << 10);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(), 4, "a pass stops after 256 KiB (served %u)", used_idx());
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(), 8);
}

/* A known byte stream, handed out in short pieces with an EINTR now and then, like getrandom()
 * may; fails once with EIO when fail_at bytes are out (0: never), then goes on. */
struct fake_source {
	uint64_t pos;
	uint64_t fail_at;
	bool failed;
	unsigned calls;
};

static uint8_t stream_byte(uint64_t k)
{
	return (uint8_t)((k * 0x9e3779b97f4a7c15ull) >> 56);
}

static ssize_t fake_entropy(void *opaque, void *buf, size_t len)
{
	struct fake_source *src = opaque;
	if (++src->calls % 3 == 0) {
		errno = EINTR;
		return -1;
	}
	bool fail_ahead = src->fail_at && !src->failed;
	if (fail_ahead && src->pos == src->fail_at) {
		src->failed = true;
		errno = EIO;
		return -1;
	}
	size_t n = len < 61 ? len : 61;
	if (fail_ahead && n > src->fail_at - src->pos)
		n = (size_t)(src->fail_at - src->pos);
	for (size_t i = 0; i < n; i++)
		((uint8_t *)buf)[i] = stream_byte(src->pos + i);
	src->pos += n;
	return (ssize_t)n;
}

/* Check that guest bytes [addr, addr + len) hold the stream from offset `from`. */
static void expect_stream(uint64_t addr, uint32_t len, uint64_t from)
{
	for (uint32_t i = 0; i < len; i++)
		cr_assert_eq(ram[addr + i], stream_byte(from + i),
			     "guest byte 0x%lx is 0x%02x, the source's byte %lu was 0x%02x",
			     (unsigned long)(addr + i), ram[addr + i], (unsigned long)(from + i),
			     stream_byte(from + i));
}

static void expect_untouched(uint64_t addr, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		cr_assert_eq(ram[addr + i], 0xa5, "byte 0x%lx outside the buffers was written",
			     (unsigned long)(addr + i));
}

/* Three buffers out of address order, odd sizes: the guest gets the source's bytes in chain
 * order, nothing else, nothing outside them; the next request continues the stream. */
Test(virtio_rng, buffers_hold_exactly_the_source_bytes_in_chain_order)
{
	struct fake_source src = {0};
	virtio_rng_set_source(rng, fake_entropy, &src);
	const uint64_t addr[3] = {BUF + 0x20000, BUF + 0x100, BUF + 0x50003};
	const uint32_t len[3] = {100, 4096, 37};
	memset(ram + BUF, 0xa5, 0x60000);
	for (uint16_t i = 0; i < 3; i++)
		put_desc(i, addr[i], len[i], i < 2);
	publish(0);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(used_len(0), 100 + 4096 + 37);
	expect_stream(addr[0], len[0], 0);
	expect_stream(addr[1], len[1], 100);
	expect_stream(addr[2], len[2], 100 + 4096);
	expect_untouched(BUF, 0x100);
	expect_untouched(addr[1] + len[1], 64);
	expect_untouched(addr[0] - 64, 64);
	expect_untouched(addr[0] + len[0], 64);
	expect_untouched(addr[2] - 64, 64);
	expect_untouched(addr[2] + len[2], 64);

	put_desc(3, BUF + 0x30000, 500, false);
	publish(3);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(), 2);
	cr_assert_eq(used_len(1), 500);
	expect_stream(BUF + 0x30000, 500, 100 + 4096 + 37);
	cr_assert_eq(virtio_rng_bytes(rng), 100 + 4096 + 37 + 500);
}

/* Two 48 KiB buffers: one request is capped at 64 KiB, so the second gets the next 16 KiB of
 * the stream and the rest of it is left as it was. */
Test(virtio_rng, capped_request_fills_from_the_start_of_the_chain)
{
	struct fake_source src = {0};
	virtio_rng_set_source(rng, fake_entropy, &src);
	memset(ram + BUF, 0xa5, 0x40000);
	put_desc(0, BUF + 0x20000, 48u << 10, true);
	put_desc(1, BUF, 48u << 10, false);
	publish(0);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_len(0), 64u << 10);
	expect_stream(BUF + 0x20000, 48u << 10, 0);
	expect_stream(BUF, 16u << 10, 48u << 10);
	expect_untouched(BUF + (16u << 10), 32u << 10);
}

/* The source fails in the middle of the first buffer: the used length covers only what it gave,
 * and the buffers after it are not filled although the source would work again (the driver
 * takes the first `len` bytes of the chain as written). */
Test(virtio_rng, source_failure_ends_the_request_without_gaps)
{
	struct fake_source src = {.fail_at = 150};
	virtio_rng_set_source(rng, fake_entropy, &src);
	memset(ram + BUF, 0xa5, 0x2000);
	put_desc(0, BUF, 200, true);
	put_desc(1, BUF + 0x1000, 200, false);
	publish(0);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(), 1);
	cr_assert_eq(used_len(0), 150);
	expect_stream(BUF, 150, 0);
	expect_untouched(BUF + 150, 50);
	expect_untouched(BUF + 0x1000, 200);
}
