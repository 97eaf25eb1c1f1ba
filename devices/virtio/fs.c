#include "fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "devices/virtio/vhost_user_frontend.h"

/* struct virtio_fs_config: tag[36], le32 num_request_queues. */
#define FS_CONFIG_SIZE (VIRTIO_FS_TAG_MAX + 4)

struct virtio_fs {
	struct vhost_user_frontend fe; /* first: the front end's ops find it at dev->priv */
	struct virtio_dev *dev;
	uint8_t config[FS_CONFIG_SIZE]; /* read-only (5.11.4) */
};

static const struct virtio_device_ops fs_ops = {
    .name = "virtio-fs",
    .device_id = VIRTIO_ID_FS,
    .max_queue_size = VIRTIO_FS_QUEUE_SIZE,
    .config_size = FS_CONFIG_SIZE,
    VHOST_USER_FRONTEND_OPS,
};

struct virtio_fs *virtio_fs_create(struct virtio_dev *dev, struct vhost_user *vu,
				   const struct vhost_user_info *info,
				   const struct virtio_fs_options *o, struct guest_mem *mem,
				   struct event_loop *loop, const char *label, char *err,
				   size_t errlen)
{
	size_t tag_len = strnlen(o->tag, sizeof(o->tag));
	if (tag_len == 0 || tag_len > VIRTIO_FS_TAG_MAX) {
		snprintf(err, errlen, "the tag must have 1 to %d bytes", VIRTIO_FS_TAG_MAX);
		return NULL;
	}
	if (o->request_queues < 1 || o->request_queues > VIRTIO_FS_MAX_REQUEST_QUEUES) {
		snprintf(err, errlen, "request queues must be 1 to %d",
			 VIRTIO_FS_MAX_REQUEST_QUEUES);
		return NULL;
	}
	if (info->queues && info->queues < 1 + o->request_queues) {
		snprintf(err, errlen, "the back end has %u queues, %u asked (hiprio + %u)",
			 info->queues, 1 + o->request_queues, o->request_queues);
		return NULL;
	}
	struct virtio_fs *fs = calloc(1, sizeof(*fs));
	if (!fs) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fs->dev = dev;
	memcpy(fs->config, o->tag, tag_len);
	put_le32(fs->config + VIRTIO_FS_TAG_MAX, o->request_queues);
	/* No device-specific feature: the notification queue (bit 0) is not offered. */
	const struct virtio_dev_params params = {
	    .features = vhost_user_frontend_offer(info->features, 0),
	    .nr_queues = 1 + (int)o->request_queues,
	};
	virtio_dev_init(dev, &fs_ops, &params, fs, mem, loop, label);
	if (vhost_user_frontend_init(&fs->fe, dev, vu, info, mem, loop, err, errlen)) {
		free(fs);
		return NULL;
	}
	fs->fe.config = fs->config;
	return fs;
}

void virtio_fs_destroy(struct virtio_fs *fs)
{
	if (!fs)
		return;
	vhost_user_frontend_destroy(&fs->fe);
	free(fs);
}

uint64_t virtio_fs_relayed_interrupts(const struct virtio_fs *fs)
{
	return fs->fe.relayed;
}
