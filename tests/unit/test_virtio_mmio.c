/* virtio-mmio register semantics (virtio 1.2, 4.2.2) against a fake device: identification,
 * status sequence, feature negotiation, queue set-up and enable, reset, config bounds. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/virtio/mmio.h"

#define RAM_SIZE (16u << 20)

static uint8_t *ram;
static struct guest_mem mem;
static struct virtio_dev dev;
static struct virtio_mmio t;
static int activations, resets;
static uint8_t config[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static void read_config(struct virtio_dev *d, uint32_t off, uint8_t *data, uint32_t len)
{
	(void)d;
	memcpy(data, config + off, len);
}

static int activate(struct virtio_dev *d)
{
	(void)d;
	activations++;
	return 0;
}

static void reset(struct virtio_dev *d)
{
	(void)d;
	resets++;
}

static const struct virtio_device_ops fake_ops = {
    .name = "fake",
    .device_id = 4,
    .max_queue_size = 64,
    .config_size = sizeof(config),
    .read_config = read_config,
    .activate = activate,
    .reset = reset,
};

static const struct virtio_dev_params fake_params = {
    .features = (1ULL << VIRTIO_RING_F_EVENT_IDX) | (1ULL << 3),
    .nr_queues = 2,
};

static void setup(void)
{
	ram = calloc(1, RAM_SIZE);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	virtio_dev_init(&dev, &fake_ops, &fake_params, NULL, &mem, NULL, "fake0");
	virtio_mmio_init(&t, &dev, 0xd0000000, 5);
	activations = resets = 0;
}

static void teardown(void)
{
	free(ram);
}

TestSuite(virtio_mmio, .init = setup, .fini = teardown);

static uint32_t rd(uint64_t off)
{
	uint32_t v;
	virtio_mmio_io(&t, off, (uint8_t *)&v, 4, false);
	return v;
}

static void wr(uint64_t off, uint32_t v)
{
	virtio_mmio_io(&t, off, (uint8_t *)&v, 4, true);
}

static void setup_queue(uint32_t q, uint32_t size, uint64_t base)
{
	wr(0x030, q);
	wr(0x038, size);
	wr(0x080, (uint32_t)base);
	wr(0x084, (uint32_t)(base >> 32));
	wr(0x090, (uint32_t)(base + 0x1000));
	wr(0x094, 0);
	wr(0x0a0, (uint32_t)(base + 0x2000));
	wr(0x0a4, 0);
	wr(0x044, 1);
}

Test(virtio_mmio, identification)
{
	cr_assert_eq(rd(0x000), 0x74726976);
	cr_assert_eq(rd(0x004), 2);
	cr_assert_eq(rd(0x008), 4);
	wr(0x014, 0);
	cr_assert_eq(rd(0x010), (1u << 29) | (1u << 3));
	wr(0x014, 1);
	cr_assert_eq(rd(0x010), 1u, "VERSION_1 is bit 32");
	wr(0x014, 2);
	cr_assert_eq(rd(0x010), 0);
}

Test(virtio_mmio, features_not_offered_are_refused)
{
	wr(0x070, 1);
	wr(0x070, 1 | 2);
	wr(0x024, 0);
	wr(0x020, 1u << 5); /* never offered */
	wr(0x024, 1);
	wr(0x020, 1);
	wr(0x070, 1 | 2 | 8);
	cr_assert_eq(rd(0x070) & 8, 0, "FEATURES_OK must not stick");
}

Test(virtio_mmio, version_1_is_required)
{
	wr(0x070, 1 | 2);
	wr(0x024, 0);
	wr(0x020, 1u << 3);
	wr(0x070, 1 | 2 | 8);
	cr_assert_eq(rd(0x070) & 8, 0, "a legacy-only driver is refused");
}

Test(virtio_mmio, full_initialisation_and_reset)
{
	wr(0x070, 1);
	wr(0x070, 1 | 2);
	wr(0x024, 0);
	wr(0x020, 1u << 29);
	wr(0x024, 1);
	wr(0x020, 1);
	wr(0x070, 1 | 2 | 8);
	cr_assert_eq(rd(0x070), 1 | 2 | 8);
	cr_assert_eq(rd(0x034), 64, "QueueNumMax");
	setup_queue(0, 64, 0x100000);
	cr_assert_eq(rd(0x044), 1);
	wr(0x070, 1 | 2 | 8 | 4);
	cr_assert_eq(rd(0x070), 1 | 2 | 8 | 4);
	cr_assert_eq(activations, 1);
	cr_assert(dev.vqs[0].event_idx, "EVENT_IDX negotiated reaches the queue");
	cr_assert_not_null(dev.vqs[0].desc);
	/* Features are frozen after FEATURES_OK. */
	wr(0x024, 0);
	wr(0x020, 0);
	cr_assert(virtio_dev_has_feature(&dev, VIRTIO_RING_F_EVENT_IDX));
	/* Reset. */
	wr(0x070, 0);
	cr_assert_eq(rd(0x070), 0);
	cr_assert_eq(resets, 1);
	wr(0x030, 0);
	cr_assert_eq(rd(0x044), 0, "queues are disabled by reset");
	cr_assert_eq(dev.driver_features, 0);
}

Test(virtio_mmio, bad_queue_marks_device_broken)
{
	wr(0x070, 1 | 2);
	wr(0x024, 1);
	wr(0x020, 1);
	wr(0x070, 1 | 2 | 8);
	setup_queue(0, 64, RAM_SIZE - 0x800); /* rings past the end of RAM */
	wr(0x070, 1 | 2 | 8 | 4);
	cr_assert(rd(0x070) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	cr_assert_eq(activations, 0);
	cr_assert_eq(rd(0x060) & 2, 2, "configuration-change interrupt raised");
	wr(0x064, 2);
	cr_assert_eq(rd(0x060), 0, "InterruptACK clears it");
	wr(0x070, 0);
	cr_assert_eq(rd(0x070), 0, "reset clears NEEDS_RESET");
}

Test(virtio_mmio, queue_size_not_power_of_two_is_refused)
{
	wr(0x070, 1 | 2);
	wr(0x024, 1);
	wr(0x020, 1);
	wr(0x070, 1 | 2 | 8);
	setup_queue(0, 48, 0x100000);
	wr(0x070, 1 | 2 | 8 | 4);
	cr_assert(rd(0x070) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
}

Test(virtio_mmio, out_of_range_queue_and_odd_accesses)
{
	wr(0x030, 7);
	cr_assert_eq(rd(0x034), 0, "a queue that does not exist has QueueNumMax 0");
	wr(0x044, 1);
	cr_assert_eq(rd(0x044), 0);
	uint16_t half = 0xffff;
	virtio_mmio_io(&t, 0x070, (uint8_t *)&half, 2, true);
	cr_assert_eq(rd(0x070), 0, "16-bit register writes are ignored");
	uint8_t b[4] = {0};
	virtio_mmio_io(&t, 0x100 + 6, b, 2, false);
	cr_assert_eq(b[0], 7);
	cr_assert_eq(b[1], 8);
	memset(b, 0xaa, 4);
	virtio_mmio_io(&t, 0x100 + 6, b, 4, false);
	cr_assert_eq(b[0], 0, "config reads past the end return zeroes");
	virtio_mmio_io(&t, 0x100 + 0xffffff00ULL, b, 4, false);
	cr_assert_eq(b[0], 0);
}

static void features_ok(void)
{
	wr(0x070, 1 | 2);
	wr(0x024, 1);
	wr(0x020, 1);
	wr(0x070, 1 | 2 | 8);
}

Test(virtio_mmio, queue_num_above_queue_num_max_is_refused)
{
	features_ok();
	wr(0x030, 0);
	wr(0x038, 128); /* QueueNumMax is 64 */
	cr_assert(rd(0x070) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	cr_assert_eq(dev.vqs[0].size, 64, "the refused size is not stored");
}

/* Once a queue is ready its size and ring addresses are the ones that were validated. */
Test(virtio_mmio, live_queue_geometry_is_frozen)
{
	features_ok();
	setup_queue(0, 16, 0x100000);
	wr(0x070, 1 | 2 | 8 | 4);
	cr_assert(dev.vqs[0].desc);
	wr(0x030, 0);
	wr(0x038, 64);
	wr(0x080, 0x200000);
	wr(0x090, 0x200000);
	wr(0x0a0, 0x200000);
	cr_assert_eq(dev.vqs[0].size, 16);
	cr_assert_eq(dev.vqs[0].desc_gpa, 0x100000);
	cr_assert_eq(dev.vqs[0].avail_gpa, 0x101000);
	cr_assert_eq(dev.vqs[0].used_gpa, 0x102000);
	cr_assert_not(dev.broken);
}

/* Status rules (virtio 1.2, 2.1.2): the driver never clears a bit; trying to (to renegotiate
 * features, or to skip the device's reset) keeps the bits and breaks the device until a
 * reset, and that reset reaches the device model. */
Test(virtio_mmio, driver_cannot_clear_status_bits)
{
	features_ok();
	setup_queue(0, 16, 0x100000);
	wr(0x070, 1 | 2 | 8 | 4);
	wr(0x070, 1 | 2 | 4); /* drop FEATURES_OK while running */
	cr_assert_eq(rd(0x070) & 0x0f, 1 | 2 | 8 | 4);
	cr_assert(rd(0x070) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	wr(0x024, 0);
	wr(0x020, 1u << 3);
	cr_assert_eq(dev.driver_features, 1ULL << 32, "features stay fixed");
	wr(0x070, 1 | 2 | 8); /* drop DRIVER_OK, then reset */
	wr(0x070, 0);
	cr_assert_eq(resets, 1, "an activated device is reset whatever the driver did since");
	cr_assert_eq(rd(0x070), 0);
}

/* Disabling a live queue would need VIRTIO_F_RING_RESET; before DRIVER_OK it is allowed. */
Test(virtio_mmio, disabling_a_live_queue_breaks_the_device)
{
	features_ok();
	setup_queue(0, 16, 0x100000);
	wr(0x044, 0);
	cr_assert_eq(rd(0x044), 0, "before DRIVER_OK a queue can be torn down");
	cr_assert_not(dev.broken);
	setup_queue(0, 16, 0x100000);
	wr(0x070, 1 | 2 | 8 | 4);
	wr(0x044, 0);
	cr_assert(dev.broken);
	cr_assert_eq(rd(0x044), 1, "the live queue stays as it was");
	cr_assert(dev.vqs[0].desc);
}

/* Two vCPUs: one keeps writing QueueNum (a valid size, larger than the rings laid out at the
 * end of RAM), the other enables the queue after DRIVER_OK. Whatever the interleaving, a
 * queue the device maps must fit its rings in RAM at the size it uses. */
static volatile bool racing;

static void *queue_num_writer(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&racing, __ATOMIC_RELAXED)) {
		wr(0x030, 0);
		wr(0x038, 64);
	}
	return NULL;
}

Test(virtio_mmio, queue_num_racing_queue_ready_never_outgrows_the_rings)
{
	/* Rings for a 1-entry queue in the last bytes of RAM: 16 + 6 + 2 + 6 + 8 bytes. */
	const uint64_t desc = RAM_SIZE - 64, avail = RAM_SIZE - 48, used = RAM_SIZE - 16;
	racing = true;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, queue_num_writer, NULL), 0);
	unsigned mapped = 0;
	for (int i = 0; i < 1000000; i++) {
		wr(0x070, 0);
		features_ok();
		wr(0x070, 1 | 2 | 8 | 4);
		wr(0x030, 0);
		wr(0x038, 1);
		wr(0x080, (uint32_t)desc);
		wr(0x090, (uint32_t)avail);
		wr(0x0a0, (uint32_t)used);
		wr(0x044, 1);
		for (int k = 0; k < 20; k++)
			(void)rd(0x044); /* let a store that raced the enable land */
		pthread_mutex_lock(&dev.lock);
		const struct virtqueue *vq = &dev.vqs[0];
		if (vq->desc) {
			mapped++;
			uint64_t n = vq->size;
			cr_assert(guest_mem_ptr(&mem, vq->desc_gpa, 16 * n) &&
				      guest_mem_ptr(&mem, vq->avail_gpa, 6 + 2 * n) &&
				      guest_mem_ptr(&mem, vq->used_gpa, 6 + 8 * n),
				  "iteration %d: a mapped queue of size %u overruns RAM", i,
				  vq->size);
		}
		pthread_mutex_unlock(&dev.lock);
	}
	racing = false;
	pthread_join(th, NULL);
	cr_assert_gt(mapped, 0, "the race never let the queue be enabled");
}

/* A reset whose device-model work is still in flight (virtio-blk's requests) reads non-zero
 * until the device model is done: the driver waits for 0 (virtio 1.2, 4.1.4.3.2). */
Test(virtio_mmio, pending_reset_reads_non_zero)
{
	wr(0x070, 1 | 2);
	wr(0x070, 0);
	dev.reset_pending = true; /* as virtio-blk's reset leaves it with requests in flight */
	cr_assert_eq(rd(0x070), VIRTIO_STATUS_DEVICE_NEEDS_RESET);
	virtio_dev_reset_done(&dev);
	cr_assert_eq(rd(0x070), 0);
}

/* ---- a device whose queues another process serves (vhost-user: dev->external_queues) ---- */

/* Its back end interrupts through the irqfd without setting the interrupt status: every read
 * shows a used buffer, so the driver always looks at its rings. Other devices show only what
 * was raised. */
Test(virtio_mmio, interrupt_status_shows_a_used_buffer_for_external_queues)
{
	cr_assert_eq(rd(0x060), 0);
	dev.transport->signal_config(&dev);
	cr_assert_eq(rd(0x060), 2, "a config change is no used buffer");
	wr(0x064, 2);
	cr_assert_eq(rd(0x060), 0);
	dev.external_queues = true;
	cr_assert_eq(rd(0x060), 1);
	wr(0x064, 1);
	cr_assert_eq(rd(0x060), 1, "acknowledged, still shown: the back end may have used one");
	dev.transport->signal_config(&dev);
	cr_assert_eq(rd(0x060), 3);
}

/* The transport hooks the front end uses: the device's one interrupt eventfd for every queue;
 * each queue's kick eventfd, off the I/O loop while handed over (a trapped notify write still
 * reaches it, for the back end to read) and on it again when taken back. */
Test(virtio_mmio, kick_and_interrupt_eventfds_for_a_back_end)
{
	static struct event_loop loop;
	cr_assert_eq(event_loop_init(&loop), 0);
	const struct virtio_transport_host host = {.loop = &loop};
	cr_assert_eq(virtio_mmio_attach(&t, &host, &dev, 0xd0000000, 5), 0);
	cr_assert_geq(t.irq_fd, 0);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 0), t.irq_fd);
	cr_assert_eq(dev.transport->queue_irqfd(&dev, 1), t.irq_fd);

	int kick = dev.transport->queue_kick_fd(&dev, 1, true);
	cr_assert_eq(kick, t.kick[1].fd);
	cr_assert_geq(kick, 0);
	cr_assert_eq(dev.transport->queue_kick_fd(&dev, 2, true), -1, "no queue 2");
	cr_assert_eq(dev.transport->queue_kick_fd(&dev, -1, true), -1);
	wr(0x050, 1);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(dev.kicks, 0, "a handed-over kick reached the I/O thread");
	uint64_t n = 0;
	cr_assert_eq(read(kick, &n, 8), 8);
	cr_assert_eq(n, 1, "the back end's eventfd got the trapped kick");

	cr_assert_eq(dev.transport->queue_kick_fd(&dev, 1, false), kick);
	wr(0x050, 1);
	event_loop_run_once(&loop, 1000);
	cr_assert_eq(dev.kicks, 1, "taken back: kicks reach the I/O thread again");
	virtio_mmio_detach(&t);
	event_loop_destroy(&loop);
}
