/* The part of a virtio device that hands its queues to a vhost-user back end (another
 * process, devices/backends/vhost_user.h): at DRIVER_OK the driver's features, guest memory
 * (shared: base/guest_mem.h) and every ready ring go to the back end, each ring's kick eventfd
 * (KVM's ioeventfd) and interrupt eventfd (KVM's irqfd) with it, so no request passes through
 * the VMM; at reset the rings are stopped and their kicks come back. A device model (virtio-fs)
 * keeps its config space and calls these from its ops.
 *
 * The back end is hostile and may die: every failure marks the device DEVICE_NEEDS_RESET with
 * one line (virtio_dev_fail), and the VM and every other device go on. */
#ifndef MINIVMM_VHOST_USER_FRONTEND_H
#define MINIVMM_VHOST_USER_FRONTEND_H

#include <stdbool.h>
#include <stdint.h>

#include "base/event_loop.h"
#include "devices/backends/vhost_user.h"
#include "devices/virtio/virtio.h"

/* A queue's interrupts relayed through the I/O thread: when the transport has no irqfd for it
 * (PCI INTx, where ISR must be set with each interrupt). */
struct vhost_user_call_relay {
	struct vhost_user_frontend *fe;
	int queue;
	int fd; /* -1: none */
	struct event_source src;
};

struct vhost_user_frontend {
	struct virtio_dev *dev;
	struct vhost_user *vu; /* owned */
	struct vhost_user_info info;
	struct guest_mem *mem;
	struct event_loop *loop;
	struct event_source hangup; /* the socket, watched for the back end's end */
	bool hangup_watched;
	bool started[VIRTIO_MAX_QUEUES];
	struct vhost_user_call_relay relay[VIRTIO_MAX_QUEUES];
	uint64_t relayed;      /* interrupts that went through the I/O thread */
	const uint8_t *config; /* the device's config space, the model's, read-only to the guest */
};

/* The ops of a device model whose first member is its struct vhost_user_frontend (dev->priv)
 * with fe.config set: the config space read from fe.config (writes ignored: read-only), the
 * rings handed over at DRIVER_OK and taken back at reset; kicks are the back end's. */
int vhost_user_frontend_activate(struct virtio_dev *dev);
void vhost_user_frontend_reset(struct virtio_dev *dev);
void vhost_user_frontend_read_config(struct virtio_dev *dev, uint32_t offset, uint8_t *data,
				     uint32_t len);
void vhost_user_frontend_write_config(struct virtio_dev *dev, uint32_t offset, const uint8_t *data,
				      uint32_t len);
void vhost_user_frontend_queue_notify(struct virtio_dev *dev, int q);
void vhost_user_frontend_restart(struct virtio_dev *dev);
#define VHOST_USER_FRONTEND_OPS                                                                    \
	.read_config = vhost_user_frontend_read_config,                                            \
	.write_config = vhost_user_frontend_write_config,                                          \
	.activate = vhost_user_frontend_activate, .reset = vhost_user_frontend_reset,              \
	.queue_notify = vhost_user_frontend_queue_notify, .restart = vhost_user_frontend_restart

/* The features to offer the guest of a back end's: the device-specific ones in device_bits
 * (a kind offers only those it knows what to do with), indirect descriptors, event index and
 * VERSION_1. Never the vhost-user protocol bit (30) or a transport feature the VMM does not
 * implement (packed rings, IOMMU, ring reset). */
uint64_t vhost_user_frontend_offer(uint64_t backend_features, uint64_t device_bits);

/* Take vu (connected, handshake done: info) for dev, which virtio_dev_init set up with the
 * offered features; sets dev->external_queues and watches the socket on loop. mem must be
 * shared (mem->shared_fd). Returns 0, or -1 with a reason in err (vu is then still the
 * caller's). */
int vhost_user_frontend_init(struct vhost_user_frontend *fe, struct virtio_dev *dev,
			     struct vhost_user *vu, const struct vhost_user_info *info,
			     struct guest_mem *mem, struct event_loop *loop, char *err,
			     size_t errlen);
/* DRIVER_OK (ops->activate, dev->lock held, a vCPU thread): features, memory table, rings.
 * Waits for the back end's acknowledgements (at most the connection's timeout each). 0, or -1
 * with the device marked as needing reset. */
int vhost_user_frontend_start(struct vhost_user_frontend *fe);
/* Device reset (ops->reset, dev->lock held): stop each started ring (GET_VRING_BASE, which
 * returns once the back end is done with it) and take its kicks back. */
void vhost_user_frontend_stop(struct vhost_user_frontend *fe);
/* Stop watching, close the connection (the back end sees the session end). */
void vhost_user_frontend_destroy(struct vhost_user_frontend *fe);

#endif
