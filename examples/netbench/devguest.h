// tapread --device: minivmm's whole receive path, tap to guest memory, without a guest.
// The real virtio-net device (devices/virtio/net.c) on the real tap backend and event loop, as
// `--net tap=NAME` makes it, driven by a fake driver on the same thread: RX_SIZE
// receive buffers of BUF_LEN bytes posted (MRG_RXBUF and EVENT_IDX, as Linux's driver takes
// them, no offloads), kicks through the device's real kick eventfds (as KVM's ioeventfd signals
// them), interrupts counted and written to an eventfd (as the VMM's irqfd write). After each
// turn of the loop the driver takes what the device used, hands each frame to the caller,
// posts the buffers again, asks for an interrupt at the next used entry and kicks when the
// device's avail event says so (virtio 1.2, 2.7.10). Frames the caller sends (ARP answers) go out
// through the transmit queue. What it leaves out: the guest's own time, its interrupt and exit
// costs, and the vCPU thread (the driver's work runs on the I/O thread here, a few percent of it).
// Also the backend-only modes' opening (dg_backend_open). Include after tool.h; needs
// minivmm's objects linked in (the Makefile's rule for tapread and tapwake).
#ifndef NETBENCH_DEVGUEST_H
#define NETBENCH_DEVGUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "devices/backends/net_backend.h"
#include "devices/backends/tap.h"
#include "devices/virtio/net.h"
#include "devices/virtio/virtio.h"
#include "devices/virtio/virtqueue.h"
#include "base/event_loop.h"
#include "base/guest_mem.h"
#include "vmm/kinds/kinds.h"
#include "vmm/cli/options.h"

#define DG_RXQ	    0
#define DG_TXQ	    1
#define DG_QSIZE    256
#define DG_BUF_LEN  2048 // a Linux driver's mergeable buffers are about this size
#define DG_RAM	    (16u << 20)
#define DG_RING(q)  (0x10000 + (uint64_t)(q)*0x10000)
#define DG_RXBUF(i) (0x100000 + (uint64_t)(i)*DG_BUF_LEN)
#define DG_TXBUF(i) (0x400000 + (uint64_t)(i)*DG_BUF_LEN)

struct devguest {
	uint8_t *ram;
	struct guest_mem mem;
	struct virtio_dev dev;
	struct virtio_net *net;
	struct virtio_kick kick[2];
	int irqfd;
	bool irq[2];	       // the device signalled the queue since the driver last looked
	uint16_t avail_idx[2]; // the driver's next avail index per queue
	uint16_t used_seen[2]; // used entries the driver has taken per queue
	uint16_t kicked[2];    // avail index at the driver's last kick decision
	unsigned long long irqs, kicks;
	void (*take)(const uint8_t *frame, size_t len); // header + frame, as the tap gives it
};

static struct devguest *devguest_now; // the transport's callbacks find it here

// --backend / --mode backend: minivmm's tap backend alone on loop (initialised here), its
// frames announced to rx_ready; exits unless it receives by read().
static inline void dg_backend_nothing(void *opaque)
{
	(void)opaque;
}

static inline void dg_backend_link_down(void *opaque, const char *why)
{
	(void)opaque;
	fprintf(stderr, TOOL_NAME ": the tap backend went down: %s\n", why);
	exit(1);
}

static inline struct net_backend *dg_backend_open(struct event_loop *loop, const char *tap,
						  void (*rx_ready)(void *))
{
	if (event_loop_init(loop) < 0)
		die("event_loop_init");
	struct net_backend_client client = {.rx_ready = rx_ready,
					    .tx_ready = dg_backend_nothing,
					    .link_down = dg_backend_link_down};
	char err[256];
	struct net_backend *be = tap_backend_open(tap, loop, &client, 0, err, sizeof(err));
	if (!be) {
		fprintf(stderr, TOOL_NAME ": %s\n", err);
		exit(1);
	}
	const char *path = be->ops->rx_path(be);
	if (strcmp(path, "read")) {
		fprintf(stderr, TOOL_NAME ": the backend receives by %s\n", path);
		exit(1);
	}
	return be;
}

static inline void *dg_gpa(struct devguest *g, uint64_t a)
{
	return g->ram + a;
}

static inline void dg_signal_queue(struct virtio_dev *d, int q)
{
	(void)d;
	struct devguest *g = devguest_now;
	uint64_t one = 1;
	g->irq[q & 1] = true;
	g->irqs++;
	if (write(g->irqfd, &one, sizeof(one)) < 0) // the irqfd write the VMM would do
		die("write the interrupt eventfd");
}

static inline void dg_signal_config(struct virtio_dev *d)
{
	(void)d;
}

static const struct virtio_transport_ops dg_transport = {.signal_queue = dg_signal_queue,
							 .signal_config = dg_signal_config};

static inline struct net_backend *dg_open_tap(const struct net_options *cfg,
					      struct event_loop *loop,
					      const struct net_backend_client *client, char *err,
					      size_t errlen)
{
	return tap_backend_open(cfg->tap, loop, client, 0, err, errlen);
}

// One chain of one descriptor on queue q, made available.
static inline void dg_post(struct devguest *g, int q, uint16_t desc, uint64_t addr, uint32_t len,
			   bool writable)
{
	struct virtq_desc *d = dg_gpa(g, DG_RING(q));
	d[desc] = (struct virtq_desc){
	    .addr = addr, .len = len, .flags = writable ? VIRTQ_DESC_F_WRITE : 0};
	uint16_t *avail = dg_gpa(g, DG_RING(q) + 0x1000);
	avail[2 + g->avail_idx[q] % DG_QSIZE] = desc;
	g->avail_idx[q]++;
	__atomic_store_n(&avail[1], g->avail_idx[q], __ATOMIC_RELEASE);
}

// The driver's kick, when the device's avail event lies among the entries made available
// since the last decision (EVENT_IDX: vring_need_event).
static inline void dg_kick(struct devguest *g, int q)
{
	uint16_t *used = dg_gpa(g, DG_RING(q) + 0x2000);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); // the new avail index before the event is read
	uint16_t event = __atomic_load_n(&used[2 + 4 * DG_QSIZE], __ATOMIC_ACQUIRE);
	uint16_t now = g->avail_idx[q], old = g->kicked[q];
	g->kicked[q] = now;
	if ((uint16_t)(now - event - 1) >= (uint16_t)(now - old))
		return;
	uint64_t one = 1;
	g->kicks++;
	if (write(g->kick[q].fd, &one, sizeof(one)) < 0)
		die("kick");
}

// Opens the device on tap `options` ("tap=NAME[,...]") and drives it to DRIVER_OK
// with every receive buffer posted.
static inline void devguest_open(struct devguest *g, struct event_loop *loop, const char *options,
				 void (*take)(const uint8_t *, size_t))
{
	memset(g, 0, sizeof(*g));
	devguest_now = g;
	g->take = take;
	g->ram = calloc(1, DG_RAM);
	g->irqfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!g->ram || g->irqfd < 0)
		die("guest memory");
	guest_mem_init_with(&g->mem, g->ram, DG_RAM);
	struct option_list opts;
	struct net_options cfg;
	char err[256];
	if (options_split(options, "--net", &opts, err, sizeof(err)) < 0 ||
	    net_options_parse(&opts, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "tapread: %s\n", err);
		exit(2);
	}
	g->net = virtio_net_create(&g->dev, &g->mem, loop, &cfg, "virtio-net0", dg_open_tap);
	if (!g->net)
		exit(1); // logged
	g->dev.transport = &dg_transport;
	for (int q = 0; q < 2; q++) {
		virtio_kick_init(&g->kick[q], &g->dev, q);
		if (virtio_kick_open(&g->kick[q], loop) < 0)
			die("the kick eventfds");
	}
	virtio_dev_set_status(&g->dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_dev_set_driver_features(&g->dev, 0, 1u << 15 | 1u << 29); // MRG_RXBUF, EVENT_IDX
	virtio_dev_set_driver_features(&g->dev, 1, 1);			 // VERSION_1
	for (int q = 0; q < 2; q++) {
		g->dev.vqs[q].size = DG_QSIZE;
		g->dev.vqs[q].desc_gpa = DG_RING(q);
		g->dev.vqs[q].avail_gpa = DG_RING(q) + 0x1000;
		g->dev.vqs[q].used_gpa = DG_RING(q) + 0x2000;
		virtio_dev_queue_ready(&g->dev, q, true);
	}
	virtio_dev_set_status(&g->dev, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
					   VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK);
	if (!(g->dev.status & VIRTIO_STATUS_DRIVER_OK)) {
		fprintf(stderr, "tapread: the device refused DRIVER_OK\n");
		exit(1);
	}
	for (uint16_t i = 0; i < DG_QSIZE; i++)
		dg_post(g, DG_RXQ, i, DG_RXBUF(i), DG_BUF_LEN, true);
	uint64_t one = 1; // the first kick, whatever the event says (the device has not looked)
	g->kicked[DG_RXQ] = g->avail_idx[DG_RXQ];
	g->kicks++;
	if (write(g->kick[DG_RXQ].fd, &one, sizeof(one)) < 0)
		die("kick");
}

// Sends one frame (header + frame) through the transmit queue; its buffer is reused DG_QSIZE
// frames later (a driver reclaims as it goes; nothing here sends that many at once).
static inline void devguest_send(struct devguest *g, const uint8_t *frame, size_t len)
{
	uint16_t slot = g->avail_idx[DG_TXQ] % DG_QSIZE;
	if (len > DG_BUF_LEN)
		return;
	memcpy(dg_gpa(g, DG_TXBUF(slot)), frame, len);
	dg_post(g, DG_TXQ, slot, DG_TXBUF(slot), (uint32_t)len, false);
	dg_kick(g, DG_TXQ);
}

// After a turn of the loop: every frame the device put in the receive queue, to take(), its
// buffer posted again; then one kick if the device wants it. Returns frames taken.
static inline int devguest_poll(struct devguest *g)
{
	int got = 0;
	g->irq[DG_RXQ] = g->irq[DG_TXQ] = false;
	uint8_t *used = dg_gpa(g, DG_RING(DG_RXQ) + 0x2000);
	uint16_t idx = __atomic_load_n((uint16_t *)(used + 2), __ATOMIC_ACQUIRE);
	while (g->used_seen[DG_RXQ] != idx) {
		const uint32_t *e =
		    (const uint32_t *)(used + 4 + 8 * (g->used_seen[DG_RXQ] % DG_QSIZE));
		uint32_t id = e[0] % DG_QSIZE, len = e[1] < DG_BUF_LEN ? e[1] : DG_BUF_LEN;
		g->used_seen[DG_RXQ]++;
		g->take(dg_gpa(g, DG_RXBUF(id)), len);
		dg_post(g, DG_RXQ, (uint16_t)id, DG_RXBUF(id), DG_BUF_LEN, true);
		got++;
	}
	// An interrupt at the next used entry (used_event, after the avail ring's entries).
	uint16_t *avail = dg_gpa(g, DG_RING(DG_RXQ) + 0x1000);
	__atomic_store_n(&avail[2 + DG_QSIZE], g->used_seen[DG_RXQ], __ATOMIC_RELEASE);
	if (got)
		dg_kick(g, DG_RXQ);
	return got;
}

static inline const char *devguest_rx_path(struct devguest *g)
{
	return virtio_net_rx_path(g->net);
}

static inline void devguest_close(struct devguest *g, struct event_loop *loop)
{
	virtio_dev_set_status(&g->dev, 0);
	for (int q = 0; q < 2; q++)
		virtio_kick_close(&g->kick[q], loop);
	virtio_net_destroy(g->net);
	close(g->irqfd);
	free(g->ram);
}

#endif
