/* vhost-user-blk: a virtio-blk device (virtio 1.2, 5.2; device id 2) whose request queues a
 * vhost-user back end serves (qemu-storage-daemon). The guest sees an ordinary virtio-blk; this
 * model is its config space, read from the back end with GET_CONFIG once, and the front end's
 * hand-over (devices/virtio/vhost_user_frontend.h). */
#ifndef MINIVMM_VHOST_USER_BLK_H
#define MINIVMM_VHOST_USER_BLK_H

#include <stddef.h>
#include <stdint.h>

#include "devices/backends/vhost_user.h"
#include "devices/virtio/virtio.h"

/* The config space up to write_zeroes_may_unmap and its padding: the fields of every feature
 * offered (secure erase, zoned and lifetime are not). */
#define VHOST_USER_BLK_CONFIG_SIZE 60
#define VHOST_USER_BLK_QUEUE_SIZE  256

/* The virtio-blk feature bits a guest may be offered of a back end's. Not CONFIG_WCE: the
 * config space is read-only here (a write would be a SET_CONFIG from a vCPU thread); a driver
 * then takes FLUSH to mean a write-back cache. */
#define VHOST_USER_BLK_FEATURES                                                                    \
	((1ull << 1) /* SIZE_MAX */ | (1ull << 2) /* SEG_MAX */ | (1ull << 4) /* GEOMETRY */ |     \
	 (1ull << 5) /* RO */ | (1ull << 6) /* BLK_SIZE */ | (1ull << 9) /* FLUSH */ |             \
	 (1ull << 10) /* TOPOLOGY */ | (1ull << 12) /* MQ */ | (1ull << 13) /* DISCARD */ |        \
	 (1ull << 14) /* WRITE_ZEROES */)

/* What a back end offers, learnt before the device exists (at command-line parsing). */
struct vhost_user_blk_backend {
	struct vhost_user_info info;
	uint64_t features;			    /* offered to the guest */
	int queues;				    /* request queues: 1..VIRTIO_MAX_QUEUES */
	uint8_t config[VHOST_USER_BLK_CONFIG_SIZE]; /* as the guest reads it */
};

/* Check vu (handshake done: info) can serve a virtio-blk and read its config space: it must
 * offer VIRTIO_F_VERSION_1, the CONFIG protocol feature must be negotiated, GET_CONFIG must
 * answer; with VIRTIO_BLK_F_MQ, num_queues must not be 0 (it is capped at what GET_QUEUE_NUM
 * said and at VIRTIO_MAX_QUEUES, and the config the guest reads says so). 0, or -1 with a
 * one-line reason in err. */
int vhost_user_blk_probe(struct vhost_user *vu, const struct vhost_user_info *info,
			 struct vhost_user_blk_backend *out, char *err, size_t errlen);

struct vhost_user_blk;

/* Create the device on vu and what vhost_user_blk_probe learnt of it, and initialise dev. mem
 * must be shared. NULL with a one-line reason in err (vu is then still the caller's). */
struct vhost_user_blk *vhost_user_blk_create(struct virtio_dev *dev, struct vhost_user *vu,
					     const struct vhost_user_blk_backend *be,
					     struct guest_mem *mem, struct event_loop *loop,
					     const char *label, char *err, size_t errlen);
void vhost_user_blk_destroy(struct vhost_user_blk *blk);
/* The capacity in 512-byte sectors the back end gave. */
uint64_t vhost_user_blk_capacity(const struct vhost_user_blk *blk);
/* Interrupts relayed through the I/O thread (none when every queue has an irqfd). */
uint64_t vhost_user_blk_relayed_interrupts(const struct vhost_user_blk *blk);

#endif
