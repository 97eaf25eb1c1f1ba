/* virtio-net (virtio 1.2, 5.1): one RX/TX queue pair over a tap or user-mode backend. Transmit
 * runs in a bottom half (default) or from a timer (the older algorithm, kept for comparison). */
#ifndef MINIVMM_VIRTIO_NET_H
#define MINIVMM_VIRTIO_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct device_kind_desc;

/* --net tap=NAME|user[,...] */
extern const struct device_kind_desc virtio_net_kind;

enum net_tx_mode { NET_TX_BH, NET_TX_TIMER };

struct net_config {
	char tap[16]; /* tap name, or "" for the user-mode backend */
	bool user;    /* user-mode networking (libslirp) */
	char hostfwd[8][64];
	int nr_hostfwd;
	uint8_t mac[6];
	bool mac_set;
	enum net_tx_mode tx_mode;
	uint32_t tx_burst;    /* packets per bottom-half run */
	uint32_t tx_timer_us; /* tx=timer: delay from kick to flush */
	bool offload;
};

#define NET_DEFAULT_TX_BURST	256
#define NET_DEFAULT_TX_TIMER_US 150

int net_config_parse(const char *options, struct net_config *cfg, char *err, size_t errlen);

#endif
