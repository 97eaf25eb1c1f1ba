/* virtio-blk (virtio 1.2, 5.2): one request queue over a raw disk image, served
 * asynchronously by devices/backends/blk_io.c. */
#ifndef MINIVMM_VIRTIO_BLK_H
#define MINIVMM_VIRTIO_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/virtio/virtio.h"

#define VIRTIO_BLK_ID_BYTES 20
#define VIRTIO_BLK_PATH_MAX 256

struct virtio_blk;
struct event_loop;

struct blk_options {
	char path[VIRTIO_BLK_PATH_MAX];
	bool readonly;
	bool direct; /* cache=none: O_DIRECT */
	char serial[VIRTIO_BLK_ID_BYTES + 1];
	bool no_uring; /* force the worker-thread engine (tests) */
};

/* Open the image, register its completion eventfd with loop and initialise dev. Returns NULL
 * (logged) on failure. */
struct virtio_blk *virtio_blk_create(struct virtio_dev *dev, struct guest_mem *mem,
				     struct event_loop *loop, const char *label,
				     const struct blk_options *opts);
/* The same on an image already open as opts asks (fd, taken over: closed on failure). */
struct virtio_blk *virtio_blk_create_on(struct virtio_dev *dev, struct guest_mem *mem,
					struct event_loop *loop, const char *label,
					const struct blk_options *opts, int fd);
/* Waits for requests in flight, then closes the image. */
void virtio_blk_destroy(struct virtio_blk *blk);
uint64_t virtio_blk_capacity(const struct virtio_blk *blk); /* 512-byte sectors */
const char *virtio_blk_engine(const struct virtio_blk *blk);
unsigned virtio_blk_inflight(const struct virtio_blk *blk);
/* For a snapshot (vCPUs paused, on the I/O thread): finish every request in flight, so its data,
 * status and used entry are in guest memory and none is lost or repeated by a restore; requests
 * the device has not taken stay in the ring for the restored device. Raises the interrupt. */
void virtio_blk_quiesce(struct virtio_blk *blk);
/* Requests finished while the guest had bus mastering off: held (counted in flight) until it
 * is back on, since the device may not write guest memory meanwhile. A snapshot cannot save
 * them. */
unsigned virtio_blk_parked(const struct virtio_blk *blk);

#endif
