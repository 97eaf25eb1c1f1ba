/* The virtio-console kind with named ports (--vport, vport_add): the device it builds has hvc0
 * and then each port, by its name, in order; a port's output reaches its descriptor exactly,
 * a port's input reaches the guest and its end of file closes the port's host end (after the
 * data, only on a port without output); a VM with named ports is not snapshotted. The guest is a
 * fake driver on the rings, as in test_virtio_console. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "devices/virtio/console.h"
#include "vmm/cli/config.h"
#include "vmm/kinds/device_registry.h"
#include "vmm/kinds/kinds.h"
#include "vmm/kvm/virtio_devices.h"

#define RAM_SIZE (8u << 20)
#define QSIZE	 64
#define RINGS	 0x10000u
#define BUF	 0x100000u

static uint8_t *ram;
static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_slot slot;
static struct vport_config ports[2];
static int out_pipe[2], in_pipe[2];
static uint16_t avail_idx[VIRTIO_MAX_QUEUES];

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

static uint64_t desc_gpa(int q)
{
	return RINGS + (uint64_t)q * 0x1000;
}

/* Create the kind with the nr named ports in ports[] and bring the device up as a driver
 * with MULTIPORT would. */
static void start(int nr)
{
	const struct device_env env = {
	    .mem = &mem, .loop = &loop, .vports = ports, .nr_vports = nr};
	cr_assert_eq(virtio_console_kind.create(&slot, &env, "virtio-console0"), 0);
	struct virtio_dev *dev = &slot.dev;
	dev->transport = &transport;
	virtio_dev_set_status(dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(dev, 0, 1u << VIRTIO_CONSOLE_F_MULTIPORT);
	virtio_dev_set_driver_features(dev, 1, 1u << (VIRTIO_F_VERSION_1 - 32));
	uint8_t ok = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	virtio_dev_set_status(dev, ok);
	for (int q = 0; q < dev->nr_queues; q++) {
		virtio_dev_set_queue_size(dev, q, QSIZE);
		virtio_dev_set_queue_addr(dev, q, VIRTIO_RING_DESC, 0, 64, desc_gpa(q));
		virtio_dev_set_queue_addr(dev, q, VIRTIO_RING_DRIVER, 0, 64, desc_gpa(q) + 0x400);
		virtio_dev_set_queue_addr(dev, q, VIRTIO_RING_DEVICE, 0, 64, desc_gpa(q) + 0x800);
		virtio_dev_queue_ready(dev, q, true);
	}
	virtio_dev_set_status(dev, ok | VIRTIO_STATUS_DRIVER_OK);
	cr_assert(virtio_dev_live(dev));
	event_loop_run_once(&loop, 0);
}

static void prepare(void)
{
	ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(ram != MAP_FAILED);
	guest_mem_init_with(&mem, ram, RAM_SIZE);
	cr_assert_eq(event_loop_init(&loop), 0);
	memset(avail_idx, 0, sizeof(avail_idx));
	memset(&slot, 0, sizeof(slot));
	cr_assert_eq(pipe2(out_pipe, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(in_pipe, O_CLOEXEC), 0);
}

/* Port 1 "out": output only; port 2 "in": input only. */
static void setup(void)
{
	prepare();
	ports[0] = (struct vport_config){.name = "out", .out_fd = out_pipe[1], .in_fd = -1};
	ports[1] = (struct vport_config){.name = "in", .out_fd = -1, .in_fd = in_pipe[0]};
	start(2);
}

/* Port 1 "both": output and input. */
static void setup_both(void)
{
	prepare();
	ports[0] =
	    (struct vport_config){.name = "both", .out_fd = out_pipe[1], .in_fd = in_pipe[0]};
	start(1);
}

static void teardown(void)
{
	if (slot.model)
		virtio_console_kind.destroy(&slot);
	event_loop_destroy(&loop);
	munmap(ram, RAM_SIZE);
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (in_pipe[i] >= 0)
			close(in_pipe[i]);
	}
}

TestSuite(vconsole_kind, .init = setup, .fini = teardown);
TestSuite(vconsole_kind_both, .init = setup_both, .fini = teardown);

static void one(int q, uint16_t i, uint64_t addr, uint32_t len, bool writable)
{
	uint8_t *d = ram + desc_gpa(q) + (size_t)i * 16;
	uint16_t flags = writable ? VIRTQ_DESC_F_WRITE : 0, next = 0;
	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(d + 14, &next, 2);
	uint16_t *avail = (uint16_t *)(ram + desc_gpa(q) + 0x400);
	avail[2 + avail_idx[q] % QSIZE] = i;
	avail[1] = ++avail_idx[q];
	virtio_dev_queue_notify(&slot.dev, q);
}

static uint16_t used_idx(int q)
{
	return *(uint16_t *)(ram + desc_gpa(q) + 0x800 + 2);
}

static uint32_t used_field(int q, unsigned i, unsigned off)
{
	uint32_t v;
	memcpy(&v, ram + desc_gpa(q) + 0x800 + 4 + 8 * (i % QSIZE) + off, 4);
	return v;
}

/* The guest sends a control message. */
static void guest_ctrl(uint16_t k, uint32_t id, uint16_t event, uint16_t value)
{
	uint64_t at = BUF + 0x80000 + k * 16u;
	memcpy(ram + at, &id, 4);
	memcpy(ram + at + 4, &event, 2);
	memcpy(ram + at + 6, &value, 2);
	one(3, k, at, 8, false);
}

/* The k-th message the device sent: its id, event, value, and the name after it. */
static void msg(unsigned k, uint32_t *id, uint16_t *event, uint16_t *value, char *name)
{
	cr_assert_gt(used_idx(2), k, "message %u was not sent", k);
	uint64_t at = BUF + 64u * used_field(2, k, 0);
	uint32_t len = used_field(2, k, 4);
	memcpy(id, ram + at, 4);
	memcpy(event, ram + at + 4, 2);
	memcpy(value, ram + at + 6, 2);
	memset(name, 0, 40);
	if (len > 8)
		memcpy(name, ram + at + 8, len - 8 < 39 ? len - 8 : 39);
}

/* Linux's driver: DEVICE_READY, then PORT_READY for each port; returns messages sent. */
static unsigned bring_up(void)
{
	for (uint16_t k = 0; k < 32; k++)
		one(2, k, BUF + 64u * k, 64, true);
	guest_ctrl(0, 0, VIRTIO_CONSOLE_DEVICE_READY, 1);
	for (uint16_t p = 0; p < 3; p++)
		guest_ctrl(1 + p, p, VIRTIO_CONSOLE_PORT_READY, 1);
	return used_idx(2);
}

/* Until the I/O thread's work (bottom halves) has made the used ring of q reach n. */
static void run_until(int q, uint16_t n)
{
	for (int i = 0; i < 500 && used_idx(q) < n; i++)
		event_loop_run_once(&loop, 10);
	cr_assert_geq(used_idx(q), n, "queue %d: %u used, expected %u", q, used_idx(q), n);
}

/* Whether a thread of this process has the name (/proc/self/task/T/comm). */
static bool thread_named(const char *want)
{
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			found = !strncmp(comm, want, strlen(want)) && comm[strlen(want)] == '\n';
		fclose(f);
	}
	closedir(d);
	return found;
}

Test(vconsole_kind, ports_by_name_in_order)
{
	uint8_t cfg[12];
	virtio_dev_config_access(&slot.dev, 0, cfg, sizeof(cfg), false);
	uint32_t nr;
	memcpy(&nr, cfg + 4, 4);
	cr_assert_eq(nr, 3, "hvc0 and two named ports");
	unsigned sent = bring_up();
	const char *want[3] = {NULL, "out", "in"};
	bool named[3] = {false};
	for (unsigned k = 0; k < sent; k++) {
		uint32_t id;
		uint16_t event, value;
		char name[40];
		msg(k, &id, &event, &value, name);
		if (event != VIRTIO_CONSOLE_PORT_NAME)
			continue;
		cr_assert(id >= 1 && id <= 2, "port %u named", id);
		cr_assert_str_eq(name, want[id]);
		named[id] = true;
	}
	cr_assert(named[1] && named[2], "a port lacks its name");
}

/* Port 1's output (queue 5) to its descriptor, every byte in order, written by destroy at the
 * latest; port 2's input (queue 6) from its descriptor, then its end (PORT_OPEN 0) after it. */
Test(vconsole_kind, output_and_input_with_its_end)
{
	unsigned sent = bring_up();
	static const char text[] = "to the host\n";
	memcpy(ram + BUF + 0x40000, text, sizeof(text) - 1);
	one(5, 0, BUF + 0x40000, sizeof(text) - 1, false);
	cr_assert_eq(used_idx(5), 1, "the output was held back");
	char got[64] = {0};
	/* Written by the port's own thread: wait for it (bounded, not a guess at its timing). */
	struct pollfd p = {.fd = out_pipe[0], .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 10000), 1, "port 1's output did not reach its descriptor");
	cr_assert_eq(read(out_pipe[0], got, sizeof(got)), (ssize_t)sizeof(text) - 1);
	cr_assert_str_eq(got, text);

	guest_ctrl(5, 2, VIRTIO_CONSOLE_PORT_OPEN, 1);
	one(6, 0, BUF + 0x50000, 4096, true);
	cr_assert_eq(write(in_pipe[1], "from the host", 13), 13);
	close(in_pipe[1]);
	in_pipe[1] = -1;
	run_until(6, 1);
	cr_assert_eq(used_field(6, 0, 4), 13);
	cr_assert_eq(memcmp(ram + BUF + 0x50000, "from the host", 13), 0);
	run_until(2, (uint16_t)(sent + 1));
	uint32_t id;
	uint16_t event, value;
	char name[40];
	msg(sent, &id, &event, &value, name);
	cr_assert(id == 2 && event == VIRTIO_CONSOLE_PORT_OPEN && value == 0,
		  "port %u event %u value %u: not the end of port 2's input", id, event, value);
}

/* A port with both: its input's end leaves the host end open (Linux's write would wait). */
Test(vconsole_kind_both, input_end_keeps_a_port_with_output_open)
{
	for (uint16_t k = 0; k < 16; k++)
		one(2, k, BUF + 64u * k, 64, true);
	guest_ctrl(0, 0, VIRTIO_CONSOLE_DEVICE_READY, 1);
	guest_ctrl(1, 0, VIRTIO_CONSOLE_PORT_READY, 1);
	guest_ctrl(2, 1, VIRTIO_CONSOLE_PORT_READY, 1);
	guest_ctrl(3, 1, VIRTIO_CONSOLE_PORT_OPEN, 1);
	unsigned sent = used_idx(2);
	one(4, 0, BUF + 0x50000, 4096, true);
	cr_assert_eq(write(in_pipe[1], "x", 1), 1);
	close(in_pipe[1]);
	in_pipe[1] = -1;
	run_until(4, 1);
	/* The input thread ends after it reported the end of its input. */
	for (int i = 0; i < 500 && thread_named("vport-in"); i++)
		event_loop_run_once(&loop, 10);
	cr_assert_not(thread_named("vport-in"), "the input thread did not see its end");
	event_loop_run_once(&loop, 0);
	cr_assert_eq(used_idx(2), sent, "the host end of a port with output was closed");
}

/* A VM with named ports: the snapshot's quiesce refuses, saying why. */
Test(vconsole_kind, snapshot_refused)
{
	char err[160] = "";
	cr_assert_not_null(virtio_console_kind.snapshot);
	cr_assert_not_null(virtio_console_kind.snapshot->quiesce);
	cr_assert_eq(virtio_console_kind.snapshot->quiesce(&slot, err, sizeof(err)), -1);
	cr_assert(strstr(err, "named ports (--vport) cannot be snapshotted"), "%s", err);
}
