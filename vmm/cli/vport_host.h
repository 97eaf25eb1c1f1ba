/* The host end of one named virtio-console port (vport.h) while the VM runs. The guest's output
 * goes through a console_queue whose own thread writes it to the port's descriptor, so a slow
 * or stopped reader holds back only that port's guest writes (never a vCPU or the I/O thread),
 * in order and every byte once (up to the port's cap). The port's input is read by a thread of
 * its own, handed to the device as fast as the guest takes it (woken by input_room, no
 * polling), and its end of file reported once. */
#ifndef MINIVMM_VPORT_HOST_H
#define MINIVMM_VPORT_HOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "console_queue.h"

struct vport_host {
	const struct vport_config *cfg;
	struct console_queue out;
	bool queued;
	uint64_t written; /* bytes out_fd took (its cap) */
	bool capped, failed;
	pthread_t in_thread;
	bool input, in_running; /* input: the two eventfds are open */
	int wake_fd;		/* eventfd: stop the input thread */
	int room_fd;		/* eventfd: the device took held input */
	/* Input to the device: how many bytes it kept (fewer: the rest after input_room). */
	unsigned (*deliver)(struct vport_host *h, const uint8_t *buf, unsigned len);
	/* The input's end of file (or a read error), once; the input thread. */
	void (*end)(struct vport_host *h);
	void *opaque; /* the caller's */
};

/* Start the output side when the port has one (cfg->out_fd >= 0): room(room_opaque) on the
 * queue's thread once there is room after a put that did not fit (must not block). h must
 * stay where it is until vport_host_stop. 0, or -1 (logged). */
int vport_host_start_output(struct vport_host *h, const struct vport_config *cfg,
			    void (*room)(void *), void *room_opaque);
/* Queue what fits of the guest's output; how many bytes that was. Never blocks. */
size_t vport_host_output(struct vport_host *h, const uint8_t *buf, size_t len);
/* Start the input side when the port has one (cfg->in_fd >= 0), once deliver, end and opaque
 * are set. 0, or -1 (logged). */
int vport_host_start_input(struct vport_host *h);
/* The device took some held input: the input thread goes on. Must not block (it does not). */
void vport_host_input_room(struct vport_host *h);
/* Stop the input first (before what it feeds goes), then write all queued output and stop
 * that. Safe on a zeroed or half-started h. */
void vport_host_stop(struct vport_host *h);

#endif
