/* virtio-console against a fake driver: the guest's output reaches the host side exactly (in
 * order, every byte once, also when the host side takes it a piece at a time), host input fills
 * the receive buffers, a hostile driver's chains and control messages break nothing but its own
 * device, and the multiport control protocol brings ports up as Linux expects. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>

#include "devices/virtio/console.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"

#define RAM_SIZE (8u << 20)
#define QSIZE	 256
#define RINGS	 0x10000u /* queue q: desc at RINGS + q * 0x4000, avail +0x1000, used +0x2000 */
#define BUF	 0x100000u

static uint8_t *ram;
static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static struct virtio_console *con;
static uint16_t avail_idx[VIRTIO_MAX_QUEUES];
static unsigned signals[VIRTIO_MAX_QUEUES];

/* The host side of each port: what it was given, and how much more it takes (room). */
struct sink {
	uint8_t got[1u << 20];
	size_t len;
	size_t room;
	unsigned calls;
};
static struct sink sinks[2];

static size_t sink_output(void *opaque, const uint8_t *buf, size_t len)
{
	struct sink *s = opaque;
	size_t n = len < s->room ? len : s->room;
	cr_assert_leq(s->len + n, sizeof(s->got));
	memcpy(s->got + s->len, buf, n);
	s->len += n;
	s->room -= n;
	s->calls++;
	return n;
}

static unsigned input_rooms; /* port 1's input_room calls */

static void input_room(void *opaque)
{
	cr_assert_eq(opaque, &sinks[1]);
	input_rooms++;
}

static void signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	signals[q]++;
}

static void signal_config(struct virtio_dev *d)
{
	(void)d;
}

static const struct virtio_transport_ops transport = {.signal_queue = signal_queue,
						      .signal_config = signal_config};

static uint64_t desc_gpa(int q)
{
	return RINGS + (uint64_t)q * 0x4000;
}

/* Create a console of nr_ports and bring it up as a driver would (no ring features). */
static void start(unsigned nr_ports)
{
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(ram != MAP_FAILED);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	cr_assert_eq(event_loop_init(&loop), 0);
	memset(avail_idx, 0, sizeof(avail_idx));
	memset(signals, 0, sizeof(signals));
	struct virtio_console_port ports[2] = {{.output = sink_output, .opaque = &sinks[0]},
					       {.name = "stderr",
						.output = sink_output,
						.input_room = input_room,
						.opaque = &sinks[1]}};
	input_rooms = 0;
	for (int i = 0; i < 2; i++) {
		sinks[i].len = 0;
		sinks[i].calls = 0;
		sinks[i].room = SIZE_MAX;
	}
	con = virtio_console_create(&dev, &mem, &loop, "console0", ports, nr_ports);
	cr_assert_not_null(con);
	dev.transport = &transport;
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 0,
				       nr_ports > 1 ? 1u << VIRTIO_CONSOLE_F_MULTIPORT : 0);
	virtio_dev_set_driver_features(&dev, 1, 1u << (VIRTIO_F_VERSION_1 - 32));
	uint8_t ok = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	virtio_dev_set_status(&dev, ok);
	for (int q = 0; q < dev.nr_queues; q++) {
		virtio_dev_set_queue_size(&dev, q, QSIZE);
		virtio_dev_set_queue_addr(&dev, q, VIRTIO_RING_DESC, 0, 64, desc_gpa(q));
		virtio_dev_set_queue_addr(&dev, q, VIRTIO_RING_DRIVER, 0, 64, desc_gpa(q) + 0x1000);
		virtio_dev_set_queue_addr(&dev, q, VIRTIO_RING_DEVICE, 0, 64, desc_gpa(q) + 0x2000);
		virtio_dev_queue_ready(&dev, q, true);
	}
	virtio_dev_set_status(&dev, ok | VIRTIO_STATUS_DRIVER_OK);
	cr_assert(virtio_dev_live(&dev));
	event_loop_run_once(&loop, 0); /* the DRIVER_OK bottom half */
}

static void setup1(void)
{
	start(1);
}

static void setup2(void)
{
	start(2);
}

static void teardown(void)
{
	virtio_console_destroy(con);
	event_loop_destroy(&loop);
	munmap(ram, RAM_SIZE);
}

TestSuite(virtio_console, .init = setup1, .fini = teardown);
TestSuite(virtio_console_multiport, .init = setup2, .fini = teardown);

static void put_desc(int q, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	uint8_t *d = ram + desc_gpa(q) + (size_t)i * 16;
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
}

static void publish(int q, uint16_t head)
{
	uint16_t *avail = (uint16_t *)(ram + desc_gpa(q) + 0x1000);
	avail[2 + avail_idx[q] % QSIZE] = head;
	avail[1] = ++avail_idx[q];
}

/* One buffer: device-writable (rx) or device-readable (tx), as its own chain at desc i. */
static void one(int q, uint16_t i, uint64_t addr, uint32_t len, bool writable)
{
	put_desc(q, i, addr, len, writable ? VIRTQ_DESC_F_WRITE : 0, 0);
	publish(q, i);
}

static uint16_t used_idx(int q)
{
	return *(uint16_t *)(ram + desc_gpa(q) + 0x2000 + 2);
}

static uint32_t used_len(int q, unsigned i)
{
	uint32_t len;
	memcpy(&len, ram + desc_gpa(q) + 0x2000 + 4 + 8 * (i % QSIZE) + 4, 4);
	return len;
}

static uint32_t used_id(int q, unsigned i)
{
	uint32_t id;
	memcpy(&id, ram + desc_gpa(q) + 0x2000 + 4 + 8 * (i % QSIZE), 4);
	return id;
}

static uint8_t pattern(size_t k)
{
	return (uint8_t)((k * 0x9e3779b97f4a7c15ull) >> 56);
}

static void fill_pattern(uint64_t addr, size_t len, size_t from)
{
	for (size_t i = 0; i < len; i++)
		ram[addr + i] = pattern(from + i);
}

static void expect_pattern(const struct sink *s, size_t len)
{
	cr_assert_eq(s->len, len, "the host got %zu bytes, the guest wrote %zu", s->len, len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(s->got[i], pattern(i), "output byte %zu is 0x%02x, the guest's 0x%02x",
			     i, s->got[i], pattern(i));
}

/* Three buffers of odd sizes, out of address order: the host gets their bytes in chain order,
 * once each; the chain goes back with nothing written. */
Test(virtio_console, output_is_exact)
{
	const uint64_t a = BUF + 0x20000, b = BUF, c = BUF + 0x40000;
	fill_pattern(a, 1000, 0);
	fill_pattern(b, 7, 1000);
	fill_pattern(c, 4097, 1007);
	put_desc(1, 0, a, 1000, VIRTQ_DESC_F_NEXT, 5);
	put_desc(1, 5, b, 7, VIRTQ_DESC_F_NEXT, 2);
	put_desc(1, 2, c, 4097, 0, 0);
	publish(1, 0);
	virtio_dev_queue_notify(&dev, 1);
	cr_assert_eq(used_idx(1), 1);
	cr_assert_eq(used_id(1, 0), 0);
	cr_assert_eq(used_len(1, 0), 0, "a transmit buffer is only read");
	cr_assert_eq(signals[1], 1);
	expect_pattern(&sinks[0], 5104);
	struct virtio_console_stats st;
	virtio_console_get_stats(con, &st);
	cr_assert_eq(st.tx_bytes, 5104);
}

/* A host side that takes 1000 bytes at a time: the chain stays the guest's (not used) until all
 * of it is out, kicks meanwhile repeat nothing, and room again carries on where it stopped. */
Test(virtio_console, blocked_output_resumes_exactly)
{
	fill_pattern(BUF, 2500, 0);
	fill_pattern(BUF + 0x10000, 600, 2500);
	put_desc(1, 0, BUF, 2500, VIRTQ_DESC_F_NEXT, 1);
	put_desc(1, 1, BUF + 0x10000, 600, 0, 0);
	publish(1, 0);
	sinks[0].room = 1000;
	virtio_dev_queue_notify(&dev, 1);
	cr_assert_eq(sinks[0].len, 1000);
	cr_assert_eq(used_idx(1), 0, "a chain not all output stays the guest's");
	virtio_dev_queue_notify(&dev, 1); /* a kick while full: nothing new, nothing twice */
	cr_assert_eq(sinks[0].len, 1000);
	cr_assert_eq(used_idx(1), 0);
	for (int i = 0; i < 3; i++) {
		sinks[0].room = 1000;
		virtio_console_output_room(con);
		event_loop_run_once(&loop, 0);
	}
	cr_assert_eq(used_idx(1), 1);
	expect_pattern(&sinks[0], 3100);
}

/* Many chains, a host side with room for a bit more than two: output stops within the ring and
 * goes on in order. */
Test(virtio_console, many_chains_in_order)
{
	for (uint16_t i = 0; i < 10; i++) {
		fill_pattern(BUF + i * 0x1000u, 300, i * 300u);
		one(1, i, BUF + i * 0x1000u, 300, false);
	}
	sinks[0].room = 700;
	virtio_dev_queue_notify(&dev, 1);
	cr_assert_eq(used_idx(1), 2);
	sinks[0].room = SIZE_MAX;
	virtio_console_output_room(con);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(1), 10);
	expect_pattern(&sinks[0], 3000);
}

/* Host input waits for receive buffers, then fills them in order; the used length says how much
 * each holds. */
Test(virtio_console, input_fills_receive_buffers)
{
	cr_assert_eq(virtio_console_input(con, 0, (const uint8_t *)"hello, hvc0", 11), 11);
	event_loop_run_once(&loop, 0);
	memset(ram + BUF, 0xa5, 64);
	one(0, 0, BUF, 4, true);
	one(0, 1, BUF + 32, 16, true);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_idx(0), 2);
	cr_assert_eq(used_len(0, 0), 4);
	cr_assert_eq(used_len(0, 1), 7);
	cr_assert_eq(memcmp(ram + BUF, "hell", 4), 0);
	cr_assert_eq(memcmp(ram + BUF + 32, "o, hvc0", 7), 0);
	cr_assert_eq(ram[BUF + 4], 0xa5, "nothing past the used length");
	cr_assert_eq(ram[BUF + 39], 0xa5);
	/* More input with a buffer waiting: delivered by the I/O thread. */
	one(0, 2, BUF + 64, 16, true);
	cr_assert_eq(virtio_console_input(con, 0, (const uint8_t *)"ls\r", 3), 3);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(0), 3);
	cr_assert_eq(used_len(0, 2), 3);
	cr_assert_eq(memcmp(ram + BUF + 64, "ls\r", 3), 0);
}

/* The host holds a bounded amount for a guest that takes none: the rest is refused (the input
 * thread tries again later), nothing is lost or reordered. */
Test(virtio_console, input_is_bounded)
{
	static uint8_t in[3 * VIRTIO_CONSOLE_INPUT_BYTES];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = pattern(i);
	cr_assert_eq(virtio_console_input(con, 0, in, sizeof(in)), VIRTIO_CONSOLE_INPUT_BYTES);
	cr_assert_eq(virtio_console_input(con, 0, in, 1), 0);
	cr_assert_eq(virtio_console_input(con, 1, in, 1), 0, "no port 1 on a single-port console");
	one(0, 0, BUF, 1u << 16, true);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_len(0, 0), VIRTIO_CONSOLE_INPUT_BYTES);
	cr_assert_eq(virtio_console_input(con, 0, in + VIRTIO_CONSOLE_INPUT_BYTES, 10), 10);
	one(0, 1, BUF + 0x10000, 64, true);
	virtio_dev_queue_notify(&dev, 0);
	cr_assert_eq(used_len(0, 1), 10);
	for (size_t i = 0; i < VIRTIO_CONSOLE_INPUT_BYTES; i++)
		cr_assert_eq(ram[BUF + i], pattern(i), "input byte %zu", i);
	for (size_t i = 0; i < 10; i++)
		cr_assert_eq(ram[BUF + 0x10000 + i], pattern(VIRTIO_CONSOLE_INPUT_BYTES + i),
			     "input byte %zu", VIRTIO_CONSOLE_INPUT_BYTES + i);
}

/* ---- a hostile driver ---- */

static void expect_broken(void)
{
	cr_assert(dev.broken, "the device is marked as needing reset");
	cr_assert(virtio_dev_status(&dev) & VIRTIO_STATUS_DEVICE_NEEDS_RESET);
}

Test(virtio_console, writable_buffer_in_transmit_queue_breaks_it)
{
	one(1, 0, BUF, 100, true);
	virtio_dev_queue_notify(&dev, 1);
	expect_broken();
	cr_assert_eq(sinks[0].len, 0);
	cr_assert_eq(used_idx(1), 0);
}

Test(virtio_console, readable_buffer_in_receive_queue_breaks_it)
{
	virtio_console_input(con, 0, (const uint8_t *)"x", 1);
	put_desc(0, 0, BUF, 100, VIRTQ_DESC_F_NEXT, 1);
	put_desc(0, 1, BUF + 100, 100, VIRTQ_DESC_F_WRITE, 0);
	publish(0, 0);
	virtio_dev_queue_notify(&dev, 0);
	expect_broken();
	cr_assert_eq(used_idx(0), 0);
}

Test(virtio_console, looping_chain_breaks_it)
{
	put_desc(1, 0, BUF, 100, VIRTQ_DESC_F_NEXT, 1);
	put_desc(1, 1, BUF, 100, VIRTQ_DESC_F_NEXT, 0);
	publish(1, 0);
	virtio_dev_queue_notify(&dev, 1);
	expect_broken();
	cr_assert_eq(sinks[0].len, 0, "nothing of a bad chain is output");
}

Test(virtio_console, buffer_outside_ram_breaks_it)
{
	one(1, 0, RAM_SIZE - 10, 100, false);
	virtio_dev_queue_notify(&dev, 1);
	expect_broken();
	/* Broken: no more processing, whatever the guest adds, until a reset. */
	one(1, 1, BUF, 10, false);
	virtio_dev_queue_notify(&dev, 1);
	cr_assert_eq(sinks[0].len, 0);
}

/* 256 descriptors of 1 MiB over one buffer describe 256 MiB: a host side that takes a bounded
 * amount bounds the work (here 64 KiB, then the chain waits). */
Test(virtio_console, aliasing_chain_is_bounded_by_the_host_side)
{
	for (uint16_t i = 0; i < QSIZE; i++)
		put_desc(1, i, BUF, 1u << 20, i + 1 < QSIZE ? VIRTQ_DESC_F_NEXT : 0,
			 (uint16_t)(i + 1));
	publish(1, 0);
	sinks[0].room = 64u << 10;
	virtio_dev_queue_notify(&dev, 1);
	cr_assert_eq(sinks[0].len, 64u << 10);
	cr_assert_eq(sinks[0].calls, 1);
	cr_assert_not(dev.broken);
}

/* A reset forgets how far the head chain was output: the new rings start afresh. */
Test(virtio_console, reset_forgets_partial_output)
{
	fill_pattern(BUF, 100, 0);
	one(1, 0, BUF, 100, false);
	sinks[0].room = 40;
	virtio_dev_queue_notify(&dev, 1);
	cr_assert_eq(sinks[0].len, 40);
	struct virtio_console_state st;
	virtio_console_save(con, &st);
	cr_assert_eq(st.tx_skip[0], 40);
	virtio_dev_set_status(&dev, 0);
	virtio_console_save(con, &st);
	cr_assert_eq(st.tx_skip[0], 0);
}

Test(virtio_console, config_says_one_port)
{
	uint8_t cfg[12];
	virtio_dev_config_access(&dev, 0, cfg, sizeof(cfg), false);
	uint32_t ports;
	memcpy(&ports, cfg + 4, 4);
	cr_assert_eq(ports, 1);
	cr_assert_eq(dev.nr_queues, 2);
	cr_assert_not(dev.device_features & (1u << VIRTIO_CONSOLE_F_MULTIPORT));
}

/* ---- snapshot state ---- */

Test(virtio_console, state_round_trip_resumes_output)
{
	fill_pattern(BUF, 100, 0);
	one(1, 0, BUF, 100, false);
	sinks[0].room = 30;
	virtio_dev_queue_notify(&dev, 1);
	struct virtio_console_state st;
	virtio_console_save(con, &st);
	cr_assert_eq(st.tx_skip[0], 30);
	/* Restored and resumed, the output carries on where it stopped. */
	char err[160];
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), 0, "%s", err);
	sinks[0].room = SIZE_MAX;
	virtio_console_resume(con);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(1), 1);
	expect_pattern(&sinks[0], 100);
}

Test(virtio_console, bad_state_is_refused)
{
	struct virtio_console_state st, good;
	virtio_console_save(con, &good);
	char err[160];
	st = good;
	st.nr_ports = 2;
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), -1);
	cr_assert(strstr(err, "ports"), "%s", err);
	st = good;
	st.nr_ctrl = 1; /* a single-port console has no control queue */
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), -1);
	st = good;
	st.port_ready[0] = 2;
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), -1);
	st = good;
	st.tx_skip[3] = 5; /* a port it does not have */
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), -1);
	cr_assert_eq(virtio_console_restore(con, &good, err, sizeof(err)), 0);
}

/* ---- multiport: the control queues (2: to the guest, 3: from it) ---- */

static uint16_t ctrl_desc; /* the next free descriptor of the control transmit queue */

/* The guest sends a control message (len bytes of it). */
static void guest_ctrl(uint32_t id, uint16_t event, uint16_t value, uint32_t len)
{
	uint64_t at = BUF + 0x80000 + ctrl_desc * 16u;
	memcpy(ram + at, &id, 4);
	memcpy(ram + at + 4, &event, 2);
	memcpy(ram + at + 6, &value, 2);
	one(3, ctrl_desc, at, len, false);
	ctrl_desc = (uint16_t)((ctrl_desc + 1) % QSIZE);
	virtio_dev_queue_notify(&dev, 3);
}

/* Give the device n buffers for its messages (64 bytes each at BUF + 64 * k). */
static void give_ctrl_buffers(unsigned first, unsigned n)
{
	for (unsigned k = first; k < first + n; k++)
		one(2, (uint16_t)k, BUF + 64u * k, 64, true);
	virtio_dev_queue_notify(&dev, 2);
}

/* The k-th message the device sent. */
static void expect_msg(unsigned k, uint32_t id, uint16_t event, uint16_t value)
{
	cr_assert_gt(used_idx(2), k, "message %u was not sent (%u sent)", k, used_idx(2));
	uint32_t mid;
	uint16_t mevent, mvalue;
	uint64_t at = BUF + 64u * used_id(2, k);
	memcpy(&mid, ram + at, 4);
	memcpy(&mevent, ram + at + 4, 2);
	memcpy(&mvalue, ram + at + 6, 2);
	cr_assert_eq(mid, id, "message %u: port %u, expected %u", k, mid, id);
	cr_assert_eq(mevent, event, "message %u: event %u, expected %u", k, mevent, event);
	cr_assert_eq(mvalue, value, "message %u: value %u", k, mvalue);
}

/* What Linux's driver does: DEVICE_READY, then PORT_READY for each port it was told of. */
static void bring_up(void)
{
	ctrl_desc = 0;
	give_ctrl_buffers(0, 16);
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 8);
	expect_msg(0, 0, VIRTIO_CONSOLE_DEVICE_ADD, 1);
	expect_msg(1, 1, VIRTIO_CONSOLE_DEVICE_ADD, 1);
	cr_assert_eq(used_idx(2), 2);
	guest_ctrl(0, VIRTIO_CONSOLE_PORT_READY, 1, 8);
	expect_msg(2, 0, VIRTIO_CONSOLE_CONSOLE_PORT, 1);
	expect_msg(3, 0, VIRTIO_CONSOLE_PORT_OPEN, 1);
	guest_ctrl(1, VIRTIO_CONSOLE_PORT_READY, 1, 8);
	expect_msg(4, 1, VIRTIO_CONSOLE_PORT_NAME, 1);
	cr_assert_eq(used_len(2, 4), 8 + 6, "the name follows the header");
	cr_assert_eq(memcmp(ram + BUF + 64u * used_id(2, 4) + 8, "stderr", 6), 0);
	expect_msg(5, 1, VIRTIO_CONSOLE_PORT_OPEN, 1);
	cr_assert_eq(used_idx(2), 6);
	guest_ctrl(0, VIRTIO_CONSOLE_PORT_OPEN, 1, 8);
}

Test(virtio_console_multiport, ports_come_up)
{
	cr_assert_eq(dev.nr_queues, 6);
	cr_assert(dev.device_features & (1u << VIRTIO_CONSOLE_F_MULTIPORT));
	uint8_t cfg[12];
	virtio_dev_config_access(&dev, 0, cfg, sizeof(cfg), false);
	uint32_t ports;
	memcpy(&ports, cfg + 4, 4);
	cr_assert_eq(ports, 2);
	bring_up();
	/* Each once per reset: repeated READY messages are not answered again. */
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 8);
	guest_ctrl(1, VIRTIO_CONSOLE_PORT_READY, 1, 8);
	cr_assert_eq(used_idx(2), 6);
	cr_assert_not(dev.broken);
}

/* Messages wait for buffers to carry them. */
Test(virtio_console_multiport, messages_wait_for_buffers)
{
	ctrl_desc = 0;
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 8);
	cr_assert_eq(used_idx(2), 0);
	give_ctrl_buffers(0, 1);
	cr_assert_eq(used_idx(2), 1);
	give_ctrl_buffers(1, 4);
	cr_assert_eq(used_idx(2), 2);
	expect_msg(1, 1, VIRTIO_CONSOLE_DEVICE_ADD, 1);
}

/* Port 1 (queues 4 and 5): its output to its own host side; input only once the guest opened
 * it (Linux drops what arrives on a closed port). */
Test(virtio_console_multiport, second_port_is_separate)
{
	bring_up();
	fill_pattern(BUF + 0x40000, 333, 0);
	one(5, 0, BUF + 0x40000, 333, false);
	virtio_dev_queue_notify(&dev, 5);
	cr_assert_eq(used_idx(5), 1);
	expect_pattern(&sinks[1], 333);
	cr_assert_eq(sinks[0].len, 0);
	cr_assert_eq(virtio_console_input(con, 1, (const uint8_t *)"in1", 3), 3);
	one(4, 0, BUF + 0x50000, 16, true);
	virtio_dev_queue_notify(&dev, 4);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(4), 0, "port 1 is not open in the guest");
	guest_ctrl(1, VIRTIO_CONSOLE_PORT_OPEN, 1, 8);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(4), 1);
	cr_assert_eq(memcmp(ram + BUF + 0x50000, "in1", 3), 0);
	cr_assert_eq(input_rooms, 1, "the host side was not told the guest took its input");
}

/* Bad ids, events the device sends, short messages: ignored (counted), the device goes on. */
Test(virtio_console_multiport, bad_control_messages_are_ignored)
{
	ctrl_desc = 0;
	give_ctrl_buffers(0, 16);
	guest_ctrl(7, VIRTIO_CONSOLE_PORT_READY, 1, 8);
	guest_ctrl(0xffffffffu, VIRTIO_CONSOLE_PORT_OPEN, 1, 8);
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_ADD, 1, 8);
	guest_ctrl(0, 0xffff, 1, 8);
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 7);
	struct virtio_console_stats st;
	virtio_console_get_stats(con, &st);
	cr_assert_eq(st.ctrl_ignored, 5);
	cr_assert_eq(used_idx(3), 5, "every message is given back");
	cr_assert_eq(used_idx(2), 0, "none was answered");
	cr_assert_not(dev.broken);
	bring_up(); /* and a proper driver still gets its ports */
}

Test(virtio_console_multiport, writable_control_message_breaks_it)
{
	one(3, 0, BUF, 8, true);
	virtio_dev_queue_notify(&dev, 3);
	expect_broken();
}

/* A message in a buffer too small for it: what fits, never past the buffer. */
Test(virtio_console_multiport, small_control_buffer_gets_what_fits)
{
	memset(ram + BUF, 0xa5, 16);
	one(2, 0, BUF, 3, true);
	ctrl_desc = 0;
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 8);
	cr_assert_eq(used_idx(2), 1);
	cr_assert_eq(used_len(2, 0), 3);
	cr_assert_eq(ram[BUF + 3], 0xa5);
}

Test(virtio_console_multiport, state_keeps_pending_messages)
{
	ctrl_desc = 0;
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 8);
	struct virtio_console_state st;
	virtio_console_save(con, &st);
	cr_assert_eq(st.nr_ctrl, 2);
	cr_assert_eq(st.device_ready, 1);
	char err[160];
	struct virtio_console_state bad = st;
	bad.ctrl[1].id = 2; /* no port 2 */
	cr_assert_eq(virtio_console_restore(con, &bad, err, sizeof(err)), -1);
	bad = st;
	bad.ctrl[0].event = VIRTIO_CONSOLE_PORT_READY; /* the guest's, never the device's */
	cr_assert_eq(virtio_console_restore(con, &bad, err, sizeof(err)), -1);
	bad = st;
	bad.nr_ctrl = VIRTIO_CONSOLE_CTRL_MAX + 1;
	cr_assert_eq(virtio_console_restore(con, &bad, err, sizeof(err)), -1);
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), 0, "%s", err);
	give_ctrl_buffers(0, 4);
	expect_msg(1, 1, VIRTIO_CONSOLE_DEVICE_ADD, 1);
}

/* The end of the host's input on port 1: PORT_OPEN 0 only once what came before is in the
 * guest's buffers (Linux reads its ring before host_connected), once; later input goes
 * nowhere; port 0 (hvc0) has no end. */
Test(virtio_console_multiport, host_close_follows_the_input)
{
	bring_up();
	guest_ctrl(1, VIRTIO_CONSOLE_PORT_OPEN, 1, 8);
	cr_assert_eq(virtio_console_input(con, 1, (const uint8_t *)"last", 4), 4);
	virtio_console_host_close(con, 1);
	virtio_console_host_close(con, 0);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(2), 6, "told before the input was delivered");
	one(4, 0, BUF + 0x50000, 16, true);
	virtio_dev_queue_notify(&dev, 4);
	cr_assert_eq(used_idx(4), 1);
	cr_assert_eq(memcmp(ram + BUF + 0x50000, "last", 4), 0);
	cr_assert_eq(used_idx(2), 7);
	expect_msg(6, 1, VIRTIO_CONSOLE_PORT_OPEN, 0);
	cr_assert_eq(virtio_console_input(con, 1, (const uint8_t *)"more", 4), 4);
	one(4, 1, BUF + 0x50100, 16, true);
	virtio_dev_queue_notify(&dev, 4);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(4), 1, "input after the end was delivered");
	cr_assert_eq(used_idx(2), 7, "the end was told twice");
	cr_assert_not(dev.broken);
}

/* A close before the port is ready waits for PORT_READY's PORT_OPEN 1, then follows it; a
 * saved close is a valid state, on port 0 it is not. */
Test(virtio_console_multiport, host_close_waits_for_the_port)
{
	virtio_console_host_close(con, 1);
	event_loop_run_once(&loop, 0);
	ctrl_desc = 0;
	give_ctrl_buffers(0, 16);
	guest_ctrl(0, VIRTIO_CONSOLE_DEVICE_READY, 1, 8);
	cr_assert_eq(used_idx(2), 2);
	guest_ctrl(1, VIRTIO_CONSOLE_PORT_READY, 1, 8);
	expect_msg(2, 1, VIRTIO_CONSOLE_PORT_NAME, 1);
	expect_msg(3, 1, VIRTIO_CONSOLE_PORT_OPEN, 1);
	expect_msg(4, 1, VIRTIO_CONSOLE_PORT_OPEN, 0);
	cr_assert_eq(used_idx(2), 5);
	struct virtio_console_state st;
	virtio_console_save(con, &st);
	st.nr_ctrl = 1;
	st.ctrl[0] = (struct virtio_console_control){1, VIRTIO_CONSOLE_PORT_OPEN, 0};
	char err[160];
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), 0, "%s", err);
	st.ctrl[0].id = 0;
	cr_assert_eq(virtio_console_restore(con, &st, err, sizeof(err)), -1);
}
