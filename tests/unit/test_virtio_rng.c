/* virtio-rng against a fake driver: requests are filled, and a guest cannot make one request
 * (or one pass over the ring) cost more than a bounded amount of getrandom() under the device
 * lock, however large the buffers it describes. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>

#include "devices/virtio/rng.h"
#include "vmm/event_loop.h"
#include "vmm/guest_mem.h"

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

static const struct virtio_transport_ops transport = {signal_queue, signal_config};

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

/* A chain of n writable descriptors starting at descriptor first, each len bytes at addr. */
static void chain(uint16_t first, unsigned n, uint64_t addr, uint32_t len)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t *d = ram + RING + (size_t)(first + i) * 16;
		uint16_t flags = VIRTQ_DESC_F_WRITE | (i + 1 < n ? VIRTQ_DESC_F_NEXT : 0);
		uint16_t next = (uint16_t)(first + i + 1);
		memcpy(d, &addr, 8);
		memcpy(d + 8, &len, 4);
		memcpy(d + 12, &flags, 2);
		memcpy(d + 14, &next, 2);
	}
	uint16_t *avail = (uint16_t *)(ram + RING + 0x1000);
	avail[2 + avail_idx % QSIZE] = first;
	avail[1] = ++avail_idx;
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
