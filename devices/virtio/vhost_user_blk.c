#include "vhost_user_blk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "devices/virtio/vhost_user_frontend.h"

#define VIRTIO_BLK_F_MQ 12

/* struct virtio_blk_config (5.2.4): le64 capacity at 0, le16 num_queues at 34. */
#define CFG_CAPACITY   0
#define CFG_NUM_QUEUES 34

struct vhost_user_blk {
	struct vhost_user_frontend fe; /* first: the front end's ops find it at dev->priv */
	struct virtio_dev *dev;
	/* Read-only: writeback (the one writable field) needs CONFIG_WCE, which is not offered. */
	uint8_t config[VHOST_USER_BLK_CONFIG_SIZE];
};

int vhost_user_blk_probe(struct vhost_user *vu, const struct vhost_user_info *info,
			 struct vhost_user_blk_backend *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!(info->features >> VIRTIO_F_VERSION_1 & 1)) {
		snprintf(err, errlen, "the back end does not offer VIRTIO_F_VERSION_1");
		return -1;
	}
	/* The config space (the capacity above all) is the back end's to say. */
	if (!(info->protocol_features >> VHOST_USER_PROTOCOL_F_CONFIG & 1)) {
		snprintf(err, errlen,
			 "the back end does not offer the CONFIG protocol feature (GET_CONFIG)");
		return -1;
	}
	if (vhost_user_get_config(vu, 0, out->config, sizeof(out->config))) {
		snprintf(err, errlen, "GET_CONFIG: %s", vhost_user_error(vu));
		return -1;
	}
	out->info = *info;
	out->features = vhost_user_frontend_offer(info->features, VHOST_USER_BLK_FEATURES);
	out->queues = 1;
	if (out->features >> VIRTIO_BLK_F_MQ & 1) {
		unsigned n = get_le16(out->config + CFG_NUM_QUEUES);
		if (n == 0) {
			snprintf(err, errlen,
				 "the back end offers VIRTIO_BLK_F_MQ with num_queues 0 in its "
				 "config");
			return -1;
		}
		/* Without the MQ protocol feature a back end serves one ring. */
		unsigned served = info->queues ? info->queues : 1;
		if (n > served)
			n = served;
		if (n > VIRTIO_MAX_QUEUES)
			n = VIRTIO_MAX_QUEUES;
		out->queues = (int)n;
		put_le16(out->config + CFG_NUM_QUEUES, (uint16_t)n); /* what the guest may use */
	}
	return 0;
}

static const struct virtio_device_ops vublk_ops = {
    .name = "vhost-user-blk",
    .device_id = VIRTIO_ID_BLOCK,
    .max_queue_size = VHOST_USER_BLK_QUEUE_SIZE,
    .config_size = VHOST_USER_BLK_CONFIG_SIZE,
    VHOST_USER_FRONTEND_OPS,
};

struct vhost_user_blk *vhost_user_blk_create(struct virtio_dev *dev, struct vhost_user *vu,
					     const struct vhost_user_blk_backend *be,
					     struct guest_mem *mem, struct event_loop *loop,
					     const char *label, char *err, size_t errlen)
{
	if (be->queues < 1 || be->queues > VIRTIO_MAX_QUEUES) {
		snprintf(err, errlen, "%d queues: not 1 to %d", be->queues, VIRTIO_MAX_QUEUES);
		return NULL;
	}
	struct vhost_user_blk *blk = calloc(1, sizeof(*blk));
	if (!blk) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	blk->dev = dev;
	memcpy(blk->config, be->config, sizeof(blk->config));
	const struct virtio_dev_params params = {
	    .features = be->features & vhost_user_frontend_offer(~0ull, VHOST_USER_BLK_FEATURES),
	    .nr_queues = be->queues,
	};
	virtio_dev_init(dev, &vublk_ops, &params, blk, mem, loop, label);
	if (vhost_user_frontend_init(&blk->fe, dev, vu, &be->info, mem, loop, err, errlen)) {
		free(blk);
		return NULL;
	}
	blk->fe.config = blk->config;
	return blk;
}

void vhost_user_blk_destroy(struct vhost_user_blk *blk)
{
	if (!blk)
		return;
	vhost_user_frontend_destroy(&blk->fe);
	free(blk);
}

uint64_t vhost_user_blk_capacity(const struct vhost_user_blk *blk)
{
	return get_le64(blk->config + CFG_CAPACITY);
}

uint64_t vhost_user_blk_relayed_interrupts(const struct vhost_user_blk *blk)
{
	return blk->fe.relayed;
}
