/* virtio-net (virtio 1.2, 5.1): one RX/TX queue pair over a tap or user-mode backend. Transmit
 * runs in a bottom half (default) or from a timer (the older algorithm, kept for comparison). */
#ifndef MINIVMM_VIRTIO_NET_H
#define MINIVMM_VIRTIO_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum net_tx_mode { NET_TX_BH, NET_TX_TIMER };

#define NET_MAX_HOSTFWD 8

struct net_options {
	char tap[16]; /* tap name, or "" for the user-mode backend */
	bool user;    /* user-mode networking (libslirp) */
	char hostfwd[NET_MAX_HOSTFWD][64];
	int nr_hostfwd;
	bool host_loopback;   /* user: the guest reaches the host's 127.0.0.1 as 10.0.2.2 */
	bool restrict_net;    /* user: the guest reaches nothing but its forwards' clients */
	uint32_t max_sockets; /* user: libslirp's host sockets at most (0: no cap) */
	uint8_t mac[6];
	bool mac_set;
	enum net_tx_mode tx_mode;
	uint32_t tx_burst;    /* packets per bottom-half run */
	uint32_t tx_timer_us; /* tx=timer: delay from kick to flush */
	bool offload;
	uint32_t poll_us; /* adaptive polling's bound on the I/O thread; 0: off */
	bool tx_uring;	  /* tap: each transmit batch in one io_uring submission */
};

#define NET_DEFAULT_TX_BURST	256
#define NET_DEFAULT_TX_TIMER_US 150
#define NET_MAX_POLL_US		10000
/* Adaptive polling's default bound with tx=bh: request/response 2-2.5x the transactions/s
 * and half the p50 latency, streams within run-to-run noise (docs/performance.md). */
#define NET_DEFAULT_POLL_US 50

struct virtio_dev;
struct guest_mem;
struct event_loop;
struct net_backend;
struct net_backend_client;
struct virtio_net;

/* Opens the backend for cfg, whose callbacks (client) lead back into the device. */
typedef struct net_backend *(*virtio_net_open_fn)(const struct net_options *cfg,
						  struct event_loop *loop,
						  const struct net_backend_client *client,
						  char *err, size_t errlen);

/* The device model on the backend open_backend gives (tap, user, or a test's fake); it
 * initialises dev. Returns NULL (logged) on failure. */
struct virtio_net *virtio_net_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const struct net_options *cfg,
				     const char *label, virtio_net_open_fn open_backend);
void virtio_net_destroy(struct virtio_net *n);

/* The MAC a device gets without mac=: 52:54:00:12:34:56 plus the index ending its label. */
void virtio_net_default_mac(const char *label, uint8_t mac[6]);

struct virtio_net_stats {
	uint64_t tx_packets, tx_bytes, tx_dropped, rx_packets, rx_bytes, rx_dropped;
	/* Adaptive polling (poll-us): polls that found transmit frames the guest queued without a
	 * kick (its kicks were off), and receive buffers it posted after receive had stalled. */
	uint64_t poll_tx, poll_rx;
};
void virtio_net_stats(const struct virtio_net *n, struct virtio_net_stats *out);
/* How the backend writes transmitted frames ("writev", "io_uring"; the backend's name where it
 * does not say), and whether frames go to it in batches (tx-uring=on). */
const char *virtio_net_tx_path(const struct virtio_net *n);
/* How the backend reads received frames ("read"; its name where it does not say). */
const char *virtio_net_rx_path(const struct virtio_net *n);

/* The device's own state, as a snapshot stores it (fixed layout, no padding holes): the MAC the
 * driver read, the link status it was told, the counters. Features, offloads and queues are the
 * generic virtio state; the backend is opened again from the options. */
struct virtio_net_state {
	uint8_t mac[6];
	uint16_t status;
	uint64_t tx_packets, tx_bytes, tx_dropped, rx_packets, rx_bytes, rx_dropped;
};

/* Before a snapshot (vCPUs paused, on the I/O thread): no chain is ever held between calls
 * (a frame the backend refused stays in the ring), but a frame read from the backend and not
 * yet delivered is: it goes to the guest if it has buffers, else it is dropped (counted), as
 * a full ring would. Raises the interrupt for what was delivered. */
void virtio_net_quiesce(struct virtio_net *n);
void virtio_net_save(struct virtio_net *n, struct virtio_net_state *out);
/* After the transport's replay: the saved MAC and counters, and a transmit pass scheduled
 * (it turns the driver's kicks back on if the save came between a kick and its pass). The new
 * backend's link is up: a device saved with the link down raises a configuration interrupt at
 * virtio_net_resignal.
 * Returns 0, or -1 with a one-line reason in err (a status or MAC no device could have had). */
int virtio_net_restore(struct virtio_net *n, const struct virtio_net_state *in, char *err,
		       size_t errlen);
/* Once the interrupt controllers are restored: the configuration interrupt when the link
 * status changed across the restore. */
void virtio_net_resignal(struct virtio_net *n);

#endif
