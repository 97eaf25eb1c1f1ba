/* virtio-console (virtio 1.2, 5.3): the guest's hvc0 (port 0), and with more than one port
 * (VIRTIO_CONSOLE_F_MULTIPORT and its control queues) named extra ports the guest sees as
 * /dev/vportNpM. The model knows nothing of the host's files: each port's output goes to a
 * callback that must not block, its input comes from virtio_console_input. */
#ifndef MINIVMM_VIRTIO_CONSOLE_H
#define MINIVMM_VIRTIO_CONSOLE_H

#include <stddef.h>
#include <stdint.h>

#include "devices/virtio/virtio.h"

#define VIRTIO_ID_CONSOLE 3

#define VIRTIO_CONSOLE_F_SIZE	   0
#define VIRTIO_CONSOLE_F_MULTIPORT 1

/* Port 0, its queues, the control queues and six more ports' fill VIRTIO_MAX_QUEUES. */
#define VIRTIO_CONSOLE_MAX_PORTS ((VIRTIO_MAX_QUEUES - 2) / 2)
#define VIRTIO_CONSOLE_NAME_MAX	 32

/* Control messages (virtio 1.2, 5.3.6.2), little-endian on the wire. */
#define VIRTIO_CONSOLE_DEVICE_READY  0
#define VIRTIO_CONSOLE_DEVICE_ADD    1
#define VIRTIO_CONSOLE_DEVICE_REMOVE 2
#define VIRTIO_CONSOLE_PORT_READY    3
#define VIRTIO_CONSOLE_CONSOLE_PORT  4
#define VIRTIO_CONSOLE_RESIZE	     5
#define VIRTIO_CONSOLE_PORT_OPEN     6
#define VIRTIO_CONSOLE_PORT_NAME     7

struct virtio_console_control {
	uint32_t id;
	uint16_t event;
	uint16_t value;
};

/* Host input kept for a port until the guest gives receive buffers. */
#define VIRTIO_CONSOLE_INPUT_BYTES 4096

/* The host side of one port. */
struct virtio_console_port {
	/* The name the guest sees (/sys/class/virtio-ports/vportNpM/name), MULTIPORT only; ""
	 * for none. Port 0 is the console (hvc0) and has none. */
	char name[VIRTIO_CONSOLE_NAME_MAX];
	/* Take up to len bytes of the guest's output, return how many were taken. I/O thread,
	 * with the device lock held: must not block. Fewer than len: the port's output waits
	 * (the guest's buffer stays unused) until virtio_console_output_room. NULL: discarded. */
	size_t (*output)(void *opaque, const uint8_t *buf, size_t len);
	/* The guest took some of the input held for the port: virtio_console_input keeps more
	 * now. I/O thread, with the device lock held: must not block. NULL: not told. */
	void (*input_room)(void *opaque);
	void *opaque;
};

struct virtio_console;

/* Create the model with nr_ports (1 to VIRTIO_CONSOLE_MAX_PORTS) ports, copied; more than one
 * offers MULTIPORT. Initialises dev. NULL (logged) on failure. */
struct virtio_console *virtio_console_create(struct virtio_dev *dev, struct guest_mem *mem,
					     struct event_loop *loop, const char *label,
					     const struct virtio_console_port *ports,
					     unsigned nr_ports);
void virtio_console_destroy(struct virtio_console *c);
/* A port's output has room again: carry on with what waited. Any thread. */
void virtio_console_output_room(struct virtio_console *c);
/* Host input for port: keep what fits (VIRTIO_CONSOLE_INPUT_BYTES are held at most) for the
 * guest's receive buffers, filled on the I/O thread. Returns how many bytes were kept (fewer
 * than len: try the rest later). Any thread. */
unsigned virtio_console_input(struct virtio_console *c, unsigned port, const uint8_t *buf,
			      unsigned len);

/* The host's input on port (not 0, the console) has ended: once what was given is delivered,
 * the guest is told the host closed its end (PORT_OPEN 0; Linux's read() returns end of file,
 * and its write() waits for the host end to come back: a port whose input ends should have no
 * output). Later input is dropped. Any thread. */
void virtio_console_host_close(struct virtio_console *c, unsigned port);

struct virtio_console_stats {
	uint64_t tx_bytes, rx_bytes;
	uint64_t ctrl_ignored; /* control messages with a bad size, port or event */
};
void virtio_console_get_stats(struct virtio_console *c, struct virtio_console_stats *out);

/* What a snapshot keeps beyond the generic virtio state (fixed layout, every byte written):
 * how far the transmit chain at each port's ring head was taken (a blocked output leaves it
 * half done), the control protocol's progress and the messages not yet delivered. Host input
 * not yet delivered is the host's, not the guest's, and is not kept. */
#define VIRTIO_CONSOLE_CTRL_MAX (4 * VIRTIO_CONSOLE_MAX_PORTS + 4)

struct virtio_console_state {
	uint32_t nr_ports;
	uint32_t tx_skip[VIRTIO_CONSOLE_MAX_PORTS];
	uint8_t port_ready[VIRTIO_CONSOLE_MAX_PORTS];
	uint8_t guest_open[VIRTIO_CONSOLE_MAX_PORTS];
	uint8_t device_ready, nr_ctrl;
	struct virtio_console_control ctrl[VIRTIO_CONSOLE_CTRL_MAX];
};

/* After a restore: interrupt the guest on every live queue (one raised just before the save may
 * be lost) and serve what waits. */
void virtio_console_resume(struct virtio_console *c);

/* The device must be quiet (vCPUs paused, I/O thread). */
void virtio_console_save(struct virtio_console *c, struct virtio_console_state *out);
/* Check (hostile input) and apply a saved state; -1 with a reason in err, nothing changed. */
int virtio_console_restore(struct virtio_console *c, const struct virtio_console_state *in,
			   char *err, size_t errlen);

#endif
