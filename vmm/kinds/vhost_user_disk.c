#include "vhost_user_disk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "base/log.h"
#include "devices/backends/vhost_user.h"
#include "devices/virtio/vhost_user_blk.h"
#include "device_registry.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/sandbox/seccomp.h"
#include "vhost_user_kind.h"

/* A back end started just before minivmm may not be listening yet. */
#define DISK_CONNECT_WAIT_MS 2000

struct vhost_user_disk {
	struct vhost_user *vu; /* until the device takes it */
	struct vhost_user_blk_backend be;
	char path[108]; /* for the log */
};

struct vhost_user_disk *vhost_user_disk_open(const char *path, const char *what, char *err,
					     size_t errlen)
{
	struct vhost_user_disk *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", what);
		return NULL;
	}
	snprintf(d->path, sizeof(d->path), "%s", path);
	char why[192];
	d->vu = vhost_user_connect(path, DISK_CONNECT_WAIT_MS, why, sizeof(why));
	if (!d->vu) {
		snprintf(err, errlen, "%s: %s", what, why);
		goto fail;
	}
	struct vhost_user_info info;
	char where[160];
	snprintf(where, sizeof(where), "at '%s'", path);
	if (vhost_user_kind_ready(d->vu, what, where, &info, err, errlen))
		goto fail;
	if (vhost_user_blk_probe(d->vu, &info, &d->be, why, sizeof(why))) {
		snprintf(err, errlen, "%s: vhost-user back end at '%s': %s", what, path, why);
		goto fail;
	}
	return d;
fail:
	vhost_user_disk_free(d);
	return NULL;
}

void vhost_user_disk_free(struct vhost_user_disk *d)
{
	if (!d)
		return;
	vhost_user_close(d->vu);
	free(d);
}

int vhost_user_disk_create(struct vhost_user_disk *d, struct virtio_slot *slot,
			   const struct device_env *env, const char *label)
{
	char err[192];
	slot->model = vhost_user_blk_create(&slot->dev, d->vu, &d->be, env->mem, env->loop, label,
					    err, sizeof(err));
	if (!slot->model) {
		log_error("%s: %s", label, err);
		return -1;
	}
	d->vu = NULL; /* the device's now */
	log_info("%s: vhost-user back end at %s, %llu sectors, %d queue%s%s", label, d->path,
		 vhost_user_disk_sectors(d), d->be.queues, d->be.queues == 1 ? "" : "s",
		 d->be.features >> 5 & 1 ? ", read-only" : "");
	return 0;
}

void vhost_user_disk_destroy(struct virtio_slot *slot)
{
	vhost_user_blk_destroy(slot->model);
	slot->model = NULL;
}

unsigned long long vhost_user_disk_sectors(const struct vhost_user_disk *d)
{
	return (unsigned long long)get_le64(d->be.config);
}
