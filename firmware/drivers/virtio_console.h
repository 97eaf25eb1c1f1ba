/*
 * virtio-console driver for the probe (virtio 1.2, 5.3). Without MULTIPORT one port: queue 0
 * receives, queue 1 transmits (the guest's hvc0). With MULTIPORT (negotiated when offered) the
 * control queues 2 and 3 carry the handshake: DEVICE_READY, then per port the device's
 * DEVICE_ADD answered by PORT_READY, its PORT_NAME and PORT_OPEN; port p >= 1 transmits on
 * queue 3 + 2p. The probe takes ports 0 and 1 (VIRTIO_MAX_QUEUES), refuses the others
 * (PORT_READY 0), and only writes: no receive buffers on the data ports.
 */
#ifndef VIRTIO_CONSOLE_H
#define VIRTIO_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio.h"

#define VIRTIO_ID_CONSOLE	   3
#define VIRTIO_CONSOLE_F_MULTIPORT 1
#define VCON_PORTS		   ((VIRTIO_MAX_QUEUES - 2) / 2) /* ports the probe takes */
#define VCON_NAME_MAX		   63
#define VCON_TIMEOUT_MS		   10000

/* Control events (5.3.6.2). */
#define VCON_DEVICE_READY 0
#define VCON_DEVICE_ADD	  1
#define VCON_PORT_READY	  3
#define VCON_CONSOLE_PORT 4
#define VCON_PORT_OPEN	  6
#define VCON_PORT_NAME	  7

struct vcon_port {
	bool added, host_open, console;
	char name[VCON_NAME_MAX + 1];
};

struct vcon {
	struct virtio_dev *d;
	bool multiport;
	uint32_t max_nr_ports; /* the device's config (MULTIPORT only, else 1) */
	struct vcon_port port[VCON_PORTS];
	unsigned ctrl_msgs; /* control messages received */
};

/* Every virtio console, in discovery order. */
struct virtio_dev **vcon_devices(unsigned *n);
/* Initialise d: MULTIPORT if offered (then its queues for VCON_PORTS ports), else one port. */
const char *vcon_open(struct vcon *c, struct virtio_dev *d);
/* MULTIPORT: the handshake until the port named name is added, named and opened by the host
 * (then the guest opens it too); *port is its number. Without MULTIPORT only port 0 exists. */
const char *vcon_find_port(struct vcon *c, const char *name, unsigned len, unsigned *port);
/* The transmit queue of port p. */
struct virtq *vcon_txq(struct vcon *c, unsigned p);

#endif
