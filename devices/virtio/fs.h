/* virtio-fs (virtio 1.2, 5.11): a file system shared with the guest, served by a vhost-user back
 * end (virtiofsd) that runs the FUSE protocol on the request queues itself. This model is the
 * config space (the tag the guest mounts by, the number of request queues) and the
 * front end's hand-over (devices/virtio/vhost_user_frontend.h). */
#ifndef MINIVMM_VIRTIO_FS_H
#define MINIVMM_VIRTIO_FS_H

#include <stddef.h>

#include "devices/backends/vhost_user.h"
#include "devices/virtio/virtio.h"

/* The tag is at most this many bytes, NUL-padded in config space (not terminated at 36). */
#define VIRTIO_FS_TAG_MAX 36
/* The hiprio queue, then the request queues. */
#define VIRTIO_FS_MAX_REQUEST_QUEUES (VIRTIO_MAX_QUEUES - 1)
#define VIRTIO_FS_QUEUE_SIZE	     1024

struct virtio_fs_options {
	char tag[VIRTIO_FS_TAG_MAX + 1];
	unsigned request_queues; /* 1..VIRTIO_FS_MAX_REQUEST_QUEUES */
};

struct virtio_fs;

/* Create the device on vu, a back end whose handshake (info) is done, and initialise dev. The
 * back end must offer VERSION_1 and, when it says how many queues it has, at least the
 * hiprio queue plus o->request_queues. mem must be shared. NULL with a one-line reason in err
 * (vu is then still the caller's). */
struct virtio_fs *virtio_fs_create(struct virtio_dev *dev, struct vhost_user *vu,
				   const struct vhost_user_info *info,
				   const struct virtio_fs_options *o, struct guest_mem *mem,
				   struct event_loop *loop, const char *label, char *err,
				   size_t errlen);
void virtio_fs_destroy(struct virtio_fs *fs);
/* Interrupts relayed through the I/O thread (none when every queue has an irqfd). */
uint64_t virtio_fs_relayed_interrupts(const struct virtio_fs *fs);

#endif
