/* The vhost-user front end (devices/virtio/vhost_user_frontend.c): a virtio device on a fake
 * transport (per-queue kick eventfds whose hand-over it records, irqfds or none), shared guest
 * RAM, its rings set up through the virtio_dev API as a driver would, and the fake back end of
 * vhost_user_fake.h on a socketpair. What goes to the back end at DRIVER_OK (features, the
 * memory table with the memfd, each ready ring with the transport's own eventfds), the kick for
 * what was queued before, what a reset takes back, interrupts relayed by the I/O loop when the
 * transport has no irqfd, and a back end that hangs up or refuses: the device needs a reset,
 * with one log line. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "devices/virtio/vhost_user_frontend.h"
#include "log_capture.h"
#include "vhost_user_fake.h"

#define NR_QUEUES 3
#define QSIZE	  256

/* Transport features (virtio 1.2, 6) and one device-specific bit, as a back end offers them. */
#define F_DEVICE0	  (1ull << 0)
#define F_INDIRECT	  (1ull << 28)
#define F_EVENT_IDX	  (1ull << 29)
#define F_ACCESS_PLATFORM (1ull << 33)
#define F_RING_PACKED	  (1ull << 34)
#define F_RING_RESET	  (1ull << 40)

/* ---- the fake transport: what the front end asks of it, recorded ---- */

static int kick_fd[NR_QUEUES], irq_fd[NR_QUEUES];
static bool external[NR_QUEUES], with_irqfd;
static int signals[NR_QUEUES], config_signals;

static void t_signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	signals[q]++;
}

static void t_signal_config(struct virtio_dev *d)
{
	(void)d;
	config_signals++;
}

static int t_queue_kick_fd(struct virtio_dev *d, int q, bool ext)
{
	(void)d;
	external[q] = ext;
	return kick_fd[q];
}

static int t_queue_irqfd(struct virtio_dev *d, int q)
{
	(void)d;
	return with_irqfd ? irq_fd[q] : -1;
}

static const struct virtio_transport_ops transport = {
    .signal_queue = t_signal_queue,
    .signal_config = t_signal_config,
    .queue_kick_fd = t_queue_kick_fd,
    .queue_irqfd = t_queue_irqfd,
};

/* ---- the device: activate and reset are the front end's, as virtio-fs has them ---- */

static struct vhost_user_frontend fe;

static int dev_activate(struct virtio_dev *d)
{
	(void)d;
	return vhost_user_frontend_start(&fe);
}

static void dev_reset(struct virtio_dev *d)
{
	(void)d;
	vhost_user_frontend_stop(&fe);
}

static const struct virtio_device_ops ops = {
    .name = "vu-fake",
    .device_id = VIRTIO_ID_FS,
    .max_queue_size = QSIZE,
    .activate = dev_activate,
    .reset = dev_reset,
};

static struct guest_mem mem;
static struct event_loop loop;
static struct virtio_dev dev;
static struct fake f;
static struct vhost_user_info info;
static bool mem_ready, fe_ready;

static void setup(void)
{
	for (int q = 0; q < NR_QUEUES; q++) {
		kick_fd[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		irq_fd[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		cr_assert(kick_fd[q] >= 0 && irq_fd[q] >= 0);
		external[q] = false;
		signals[q] = 0;
	}
	config_signals = 0;
	with_irqfd = true;
	mem_ready = fe_ready = false;
	cr_assert_eq(event_loop_init(&loop), 0);
	log_capture_clear();
}

static void teardown(void)
{
	if (fe_ready)
		vhost_user_frontend_destroy(&fe);
	event_loop_destroy(&loop);
	if (mem_ready)
		guest_mem_destroy(&mem);
	for (int q = 0; q < NR_QUEUES; q++) {
		close(kick_fd[q]);
		close(irq_fd[q]);
	}
}

TestSuite(vhost_user_frontend, .init = setup, .fini = teardown, .timeout = 20);

#define SMALL_RAM (16ull << 20)
/* Past the MMIO hole: two regions, the second at 4 GiB (the memfd is sparse). */
#define SPLIT_RAM (MMIO_HOLE_START + (16ull << 20))

/* The back end f offers (set before), connected and handshaken; the device made on it with
 * ram bytes of shared RAM; the front end set up. */
static void connect_device(uint64_t ram)
{
	cr_assert_eq(guest_mem_init(&mem, ram, false, true), 0);
	mem_ready = true;
	struct vhost_user *vu = fake_start(&f);
	cr_assert_eq(vhost_user_handshake(vu, VHOST_USER_PROTOCOL_KNOWN, &info), 0, "%s",
		     vhost_user_error(vu));
	const struct virtio_dev_params params = {
	    .features = vhost_user_frontend_offer(info.features, 0), .nr_queues = NR_QUEUES};
	virtio_dev_init(&dev, &ops, &params, NULL, &mem, &loop, "vu0");
	dev.transport = &transport;
	char err[128];
	cr_assert_eq(vhost_user_frontend_init(&fe, &dev, vu, &info, &mem, &loop, err, sizeof(err)),
		     0, "%s", err);
	fe_ready = true;
	cr_assert(dev.external_queues);
}

/* Where queue q's rings are: the last one above 4 GiB when RAM reaches there. */
static uint64_t ring_gpa(int q)
{
	if (q == NR_QUEUES - 1 && mem.nr_regions == 2)
		return MMIO_HOLE_END + 0x100000;
	return 0x100000 * (uint64_t)(q + 1);
}

static uint64_t hva(uint64_t gpa)
{
	void *p = guest_mem_ptr(&mem, gpa, 1);
	cr_assert_not_null(p);
	return (uint64_t)(uintptr_t)p;
}

/* A driver's initialisation (virtio 1.2, 3.1.1): features accepted, the ready queues set up,
 * DRIVER_OK. */
static void driver_ok(uint64_t accepted, const bool ready[NR_QUEUES])
{
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE);
	virtio_dev_set_status(&dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&dev, 0, (uint32_t)accepted);
	virtio_dev_set_driver_features(&dev, 1, (uint32_t)(accepted >> 32));
	const uint8_t fok =
	    VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	virtio_dev_set_status(&dev, fok);
	cr_assert(virtio_dev_status(&dev) & VIRTIO_STATUS_FEATURES_OK, "features 0x%llx refused",
		  (unsigned long long)accepted);
	for (int q = 0; q < NR_QUEUES; q++) {
		if (!ready[q])
			continue;
		uint64_t base = ring_gpa(q);
		virtio_dev_set_queue_size(&dev, q, QSIZE);
		virtio_dev_set_queue_addr(&dev, q, VIRTIO_RING_DESC, 0, 64, base);
		virtio_dev_set_queue_addr(&dev, q, VIRTIO_RING_DRIVER, 0, 64, base + 0x1000);
		virtio_dev_set_queue_addr(&dev, q, VIRTIO_RING_DEVICE, 0, 64, base + 0x2000);
		virtio_dev_queue_ready(&dev, q, true);
	}
	virtio_dev_set_status(&dev, fok | VIRTIO_STATUS_DRIVER_OK);
}

static void reset(void)
{
	virtio_dev_set_status(&dev, 0);
}

static bool needs_reset(void)
{
	return virtio_dev_status(&dev) & VIRTIO_STATUS_DEVICE_NEEDS_RESET;
}

/* An eventfd's count (0 when nothing was written), which reading clears. */
static uint64_t take_count(int fd)
{
	uint64_t v = 0;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		cr_assert_eq(errno, EAGAIN);
	return v;
}

static int log_lines(const char *must_contain)
{
	char *log = log_captured();
	int n = 0;
	for (const char *p = log; *p; p++)
		n += *p == '\n';
	if (must_contain)
		cr_assert(strstr(log, must_contain), "log lacks '%s': %s", must_contain, log);
	free(log);
	return n;
}

static void destroy_and_join(void)
{
	vhost_user_frontend_destroy(&fe);
	fe_ready = false;
	fake_join(&f);
}

static const struct fake backend = {
    .features = F_VERSION_1 | F_PROTOCOL | F_INDIRECT | F_EVENT_IDX | F_DEVICE0 | F_RING_PACKED |
		F_ACCESS_PLATFORM | F_RING_RESET,
    .protocol = P_MQ | P_REPLY_ACK | P_CONFIG,
    .queues = NR_QUEUES,
    .vring_base = 77,
};

static const bool queues_0_and_2[NR_QUEUES] = {true, false, true};

/* The rings' hand-over: what goes to the back end, in order, and nothing for a queue the
 * driver left alone. RAM past the MMIO hole makes two regions of the one memfd. */
Test(vhost_user_frontend, driver_ok_hands_the_ready_rings_over)
{
	f = backend;
	connect_device(SPLIT_RAM);
	cr_assert_eq(mem.nr_regions, 2);
	const uint64_t accepted = F_VERSION_1 | F_EVENT_IDX;
	driver_ok(accepted, queues_0_and_2);
	cr_assert_eq(virtio_dev_status(&dev) &
			 (VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_DEVICE_NEEDS_RESET),
		     VIRTIO_STATUS_DRIVER_OK, "status 0x%x", virtio_dev_status(&dev));
	cr_assert_eq(log_lines(NULL), 0);
	/* The kicks went to the back end, and each started ring was kicked once for what the
	 * driver queued before. */
	for (int q = 0; q < NR_QUEUES; q++) {
		cr_assert_eq(external[q], queues_0_and_2[q], "queue %d's kicks", q);
		cr_assert_eq(take_count(kick_fd[q]), queues_0_and_2[q] ? 1 : 0, "queue %d's kick",
			     q);
	}
	destroy_and_join();

	unsigned i = fake_find(&f, 0, SET_FEATURES);
	const uint32_t ack = V1 | NEED_REPLY;
	const struct rec *m = fake_expect(&f, i++, SET_FEATURES, ack, 8);
	cr_assert_eq(rec_u64(m, 0), accepted | F_PROTOCOL, "the driver's features: 0x%llx",
		     (unsigned long long)rec_u64(m, 0));

	m = fake_expect(&f, i++, SET_MEM_TABLE, ack, 8 + 2 * 32);
	cr_assert_eq(rec_u32(m, 0), 2, "regions");
	cr_assert_eq(m->nfds, 2);
	for (unsigned r = 0; r < 2; r++) {
		const size_t at = 8 + 32 * r;
		cr_assert_eq(rec_u64(m, at), mem.regions[r].gpa, "region %u: guest address", r);
		cr_assert_eq(rec_u64(m, at + 8), mem.regions[r].size, "region %u: size", r);
		cr_assert_eq(rec_u64(m, at + 16), (uint64_t)(uintptr_t)mem.regions[r].hva,
			     "region %u: user address", r);
		cr_assert_eq(rec_u64(m, at + 24), (uint64_t)(mem.regions[r].hva - mem.mapping),
			     "region %u: mmap offset", r);
		assert_same_file(m->fds[r], mem.shared_fd);
	}
	cr_assert_eq(rec_u64(m, 8 + 32 + 24), MMIO_HOLE_START,
		     "RAM above 4 GiB is the memfd's rest");

	for (int q = 0; q < NR_QUEUES; q++) {
		if (!queues_0_and_2[q])
			continue;
		uint64_t base = ring_gpa(q);
		m = fake_expect(&f, i++, SET_VRING_NUM, ack, 8);
		cr_assert(rec_u32(m, 0) == (uint32_t)q && rec_u32(m, 4) == QSIZE);
		m = fake_expect(&f, i++, SET_VRING_BASE, ack, 8);
		cr_assert(rec_u32(m, 0) == (uint32_t)q && rec_u32(m, 4) == 0);
		m = fake_expect(&f, i++, SET_VRING_ADDR, ack, 40);
		cr_assert(rec_u32(m, 0) == (uint32_t)q && rec_u32(m, 4) == 0, "index and flags");
		cr_assert_eq(rec_u64(m, 8), hva(base), "queue %d: descriptor table", q);
		cr_assert_eq(rec_u64(m, 16), hva(base + 0x2000), "queue %d: used ring", q);
		cr_assert_eq(rec_u64(m, 24), hva(base + 0x1000), "queue %d: available ring", q);
		m = fake_expect(&f, i++, SET_VRING_CALL, ack, 8);
		cr_assert(rec_u64(m, 0) == (uint64_t)q && m->nfds == 1);
		assert_same_eventfd(m->fds[0], irq_fd[q]);
		m = fake_expect(&f, i++, SET_VRING_KICK, ack, 8);
		cr_assert(rec_u64(m, 0) == (uint64_t)q && m->nfds == 1);
		assert_same_eventfd(m->fds[0], kick_fd[q]);
		m = fake_expect(&f, i++, SET_VRING_ENABLE, ack, 8);
		cr_assert(rec_u32(m, 0) == (uint32_t)q && rec_u32(m, 4) == 1);
	}
	cr_assert_eq(f.n, i, "%u messages, expected %u: queue 1 was never made ready", f.n, i);
	fake_close_fds(&f);
}

/* A reset stops each started ring (GET_VRING_BASE: the back end answers once it is done with
 * it) and takes its kicks back; a ring never started is not asked for. */
Test(vhost_user_frontend, reset_stops_the_started_rings_and_takes_the_kicks_back)
{
	f = backend;
	connect_device(SMALL_RAM);
	driver_ok(F_VERSION_1, queues_0_and_2);
	cr_assert(external[0] && external[2]);
	reset();
	cr_assert_eq(virtio_dev_status(&dev), 0);
	for (int q = 0; q < NR_QUEUES; q++) {
		cr_assert_not(external[q], "queue %d's kicks stayed with the back end", q);
		cr_assert_not(fe.started[q]);
	}
	cr_assert_eq(log_lines(NULL), 0, "the back end answered: nothing to say");
	/* Started again, the rings go over again. */
	driver_ok(F_VERSION_1, queues_0_and_2);
	cr_assert(external[0] && external[2]);
	destroy_and_join();

	unsigned i = fake_find(&f, 0, SET_VRING_ENABLE);
	i = fake_find(&f, i + 1, SET_VRING_ENABLE) + 1;
	const struct rec *m = fake_expect(&f, i++, GET_VRING_BASE, V1, 8);
	cr_assert(rec_u32(m, 0) == 0 && rec_u32(m, 4) == 0);
	m = fake_expect(&f, i++, GET_VRING_BASE, V1, 8);
	cr_assert(rec_u32(m, 0) == 2 && rec_u32(m, 4) == 0);
	fake_expect(&f, i++, SET_FEATURES, V1 | NEED_REPLY, 8);
	cr_assert_eq(fake_find(&f, i, GET_VRING_BASE), f.n, "no ring was stopped twice");
	fake_close_fds(&f);
}

/* No irqfd from the transport (PCI INTx): the back end gets an eventfd of the front end's,
 * whose writes the I/O loop turns into the transport's signal_queue, until the reset. */
Test(vhost_user_frontend, interrupts_relayed_without_an_irqfd)
{
	with_irqfd = false;
	f = backend;
	connect_device(SMALL_RAM);
	const bool only_0[NR_QUEUES] = {true, false, false};
	driver_ok(F_VERSION_1, only_0);
	cr_assert_not(needs_reset());
	fake_lock(&f);
	unsigned i = fake_find(&f, 0, SET_VRING_CALL);
	cr_assert_lt(i, f.n);
	cr_assert_eq(f.msgs[i].nfds, 1, "no eventfd for the back end's interrupts");
	int call = f.msgs[i].fds[0];
	fake_unlock(&f);

	uint64_t one = 1;
	cr_assert_eq(write(call, &one, 8), 8);
	cr_assert_eq(signals[0], 0, "relayed by the I/O thread, not by whoever wrote");
	event_loop_run_once(&loop, 1000);
	cr_assert_eq(signals[0], 1, "the back end's interrupt was not relayed");
	cr_assert_eq(fe.relayed, 1);
	cr_assert_eq(dev.interrupts, 1);
	cr_assert(signals[1] == 0 && signals[2] == 0);

	reset();
	cr_assert_eq(fe.relay[0].fd, -1, "the relay outlived the reset");
	cr_assert_eq(write(call, &one, 8), 8);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(signals[0], 1, "an interrupt after the reset reached the guest");
	destroy_and_join();
	fake_close_fds(&f);
}

/* A transport with an irqfd for every queue: nothing relayed, nothing on the loop. */
Test(vhost_user_frontend, no_relay_with_an_irqfd)
{
	f = backend;
	connect_device(SMALL_RAM);
	driver_ok(F_VERSION_1, queues_0_and_2);
	for (int q = 0; q < NR_QUEUES; q++)
		cr_assert_eq(fe.relay[q].fd, -1);
	destroy_and_join();
	fake_close_fds(&f);
}

/* The back end closes its socket: the device needs a reset (one line), the reset does not
 * wait for the dead back end, and a new DRIVER_OK fails at once. */
Test(vhost_user_frontend, backend_hangup_marks_the_device)
{
	f = backend;
	connect_device(SMALL_RAM);
	const bool only_0[NR_QUEUES] = {true, false, false};
	driver_ok(F_VERSION_1, only_0);
	cr_assert_not(needs_reset());
	log_capture_clear();
	cr_assert_eq(shutdown(f.fd, SHUT_RDWR), 0);
	fake_join(&f);
	fake_close_fds(&f);

	cr_assert_not(needs_reset(), "seen on the I/O thread, not before");
	event_loop_run_once(&loop, 1000);
	cr_assert(needs_reset(), "status 0x%x", virtio_dev_status(&dev));
	cr_assert_eq(config_signals, 1, "the driver is told through a config interrupt");
	cr_assert_eq(log_lines("vu0: vhost-user back end closed its socket"), 1);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(log_lines(NULL), 1, "said once");

	uint64_t t0 = clock_monotonic_ns();
	reset();
	cr_assert_not(external[0]);
	driver_ok(F_VERSION_1, only_0);
	uint64_t took_ms = (clock_monotonic_ns() - t0) / 1000000;
	cr_assert_lt(took_ms, VHOST_USER_DEFAULT_TIMEOUT_MS / 2,
		     "waited %llu ms on a dead back end", (unsigned long long)took_ms);
	cr_assert(needs_reset(), "a dead back end's device came up");
	cr_assert_not(external[0], "kicks handed to a dead back end");
	cr_assert_eq(log_lines("closed its socket"), 2, "one more line for the new activation");
}

/* The back end refuses the memory table (REPLY_ACK nonzero): the device needs a reset, no ring
 * goes over. */
Test(vhost_user_frontend, refused_memory_table_marks_the_device)
{
	f = backend;
	f.nack_req = SET_MEM_TABLE;
	f.nack_status = 1;
	connect_device(SMALL_RAM);
	driver_ok(F_VERSION_1, queues_0_and_2);
	cr_assert(needs_reset(), "status 0x%x", virtio_dev_status(&dev));
	cr_assert_eq(log_lines("memory table"), 1);
	for (int q = 0; q < NR_QUEUES; q++)
		cr_assert_not(external[q]);
	destroy_and_join();
	unsigned i = fake_find(&f, 0, SET_MEM_TABLE);
	cr_assert_eq(f.n, i + 1, "messages after the refused memory table");
	fake_close_fds(&f);
}

/* What the guest is offered of the back end's features: the device's own bits asked for,
 * indirect descriptors, event index, VERSION_1; never the vhost-user protocol bit or a
 * transport feature the VMM does not implement. */
Test(vhost_user_frontend, offer)
{
	const uint64_t all = ~0ull;
	uint64_t o = vhost_user_frontend_offer(all, 0);
	cr_assert_eq(o, F_INDIRECT | F_EVENT_IDX | F_VERSION_1, "0x%llx", (unsigned long long)o);
	o = vhost_user_frontend_offer(all, F_DEVICE0 | (1ull << 5));
	cr_assert_eq(o, F_DEVICE0 | (1ull << 5) | F_INDIRECT | F_EVENT_IDX | F_VERSION_1);
	o = vhost_user_frontend_offer(all, F_PROTOCOL | F_RING_PACKED | F_ACCESS_PLATFORM |
					       F_RING_RESET | (1ull << 24));
	cr_assert_eq(o, F_INDIRECT | F_EVENT_IDX | F_VERSION_1,
		     "device bits outside 0-23 are not the device's: 0x%llx",
		     (unsigned long long)o);
	o = vhost_user_frontend_offer(F_VERSION_1 | F_PROTOCOL, F_DEVICE0);
	cr_assert_eq(o, F_VERSION_1, "only what the back end has");
}

static struct vhost_user *unused_connection(void)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	close(sv[1]);
	struct vhost_user *vu = vhost_user_from_fd(sv[0], "unused");
	cr_assert(vu);
	return vu;
}

static void init_refused(const struct vhost_user_info *in, const char *why)
{
	struct vhost_user *vu = unused_connection();
	const struct virtio_dev_params params = {.features = 0, .nr_queues = 1};
	virtio_dev_init(&dev, &ops, &params, NULL, &mem, &loop, "vu0");
	char err[128] = "";
	cr_assert_eq(vhost_user_frontend_init(&fe, &dev, vu, in, &mem, &loop, err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, why), "error '%s' lacks '%s'", err, why);
	cr_assert_not(dev.external_queues);
	vhost_user_close(vu); /* still ours */
}

Test(vhost_user_frontend, init_refuses_private_memory)
{
	cr_assert_eq(guest_mem_init(&mem, SMALL_RAM, false, false), 0);
	mem_ready = true;
	const struct vhost_user_info in = {.features = F_VERSION_1};
	init_refused(&in, "not shared");
}

Test(vhost_user_frontend, init_refuses_a_backend_without_version_1)
{
	cr_assert_eq(guest_mem_init(&mem, SMALL_RAM, false, true), 0);
	mem_ready = true;
	const struct vhost_user_info in = {.features = F_INDIRECT | F_EVENT_IDX};
	init_refused(&in, "VIRTIO_F_VERSION_1");
}
