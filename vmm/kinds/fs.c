/* --fs: virtio-fs on a vhost-user back end already running (virtiofsd), connected to while the
 * command line is parsed, so a missing or unusable back end is a command-line error. */
#include "vmm/kinds/kinds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/backends/vhost_user.h"
#include "devices/virtio/fs.h"
#include "base/log.h"
#include "device_registry.h"
#include "vmm/cli/options.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/sandbox/seccomp.h"

#define WHAT "--fs"
/* A back end started just before minivmm may not be listening yet. */
#define FS_CONNECT_WAIT_MS 2000

struct fs_options {
	char socket[OPTION_VALUE_MAX];
	char tag[VIRTIO_FS_TAG_MAX + 1];
	uint32_t queues;
};

static const struct option_desc fs_option_table[] = {
    {.key = "socket",
     .type = OPTION_STRING,
     OPTION_FIELD(struct fs_options, socket),
     .min = 1,
     .arg = "PATH",
     .required = true,
     .host = true,
     .help = "the vhost-user back end's socket (virtiofsd --socket-path=PATH)"},
    {.key = "tag",
     .type = OPTION_STRING,
     OPTION_FIELD(struct fs_options, tag),
     .min = 1,
     .arg = "TAG",
     .required = true,
     .help = "what the guest mounts: mount -t virtiofs TAG DIR"},
    {.key = "queues",
     .type = OPTION_U32,
     OPTION_FIELD(struct fs_options, queues),
     .min = 1,
     .max = VIRTIO_FS_MAX_REQUEST_QUEUES,
     .arg = "N",
     .help = "request queues (default 1; the back end must have as many)"},
    {NULL},
};

/* The parsed options and the back end's connection, until the device takes it. */
struct fs_device {
	struct fs_options o;
	struct vhost_user *vu;
	struct vhost_user_info info;
};

static int fs_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct fs_device *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", WHAT);
		return -1;
	}
	d->o.queues = 1;
	if (options_parse(fs_option_table, opts, WHAT, "transport=", &d->o, err, errlen))
		goto fail;
	char why[192];
	d->vu = vhost_user_connect(d->o.socket, FS_CONNECT_WAIT_MS, why, sizeof(why));
	if (!d->vu) {
		snprintf(err, errlen, "%s: %s", WHAT, why);
		goto fail;
	}
	if (vhost_user_move_fd(d->vu, SECCOMP_VHOST_USER_FD_BASE, SECCOMP_VHOST_USER_FDS)) {
		snprintf(err, errlen,
			 "%s: no descriptor left in %d..%d for the back end's socket: %s", WHAT,
			 SECCOMP_VHOST_USER_FD_BASE,
			 SECCOMP_VHOST_USER_FD_BASE + SECCOMP_VHOST_USER_FDS - 1, strerror(errno));
		goto fail;
	}
	if (vhost_user_handshake(d->vu, VHOST_USER_PROTOCOL_KNOWN, &d->info)) {
		snprintf(err, errlen, "%s: vhost-user back end at '%s': %s", WHAT, d->o.socket,
			 vhost_user_error(d->vu));
		goto fail;
	}
	if (!(d->info.features >> VIRTIO_F_VERSION_1 & 1)) {
		snprintf(err, errlen, "%s: the back end at '%s' does not offer VIRTIO_F_VERSION_1",
			 WHAT, d->o.socket);
		goto fail;
	}
	if (d->info.queues && d->info.queues < 1 + d->o.queues) {
		snprintf(err, errlen, "%s: the back end at '%s' has %u queues, queues=%u needs %u",
			 WHAT, d->o.socket, d->info.queues, d->o.queues, 1 + d->o.queues);
		goto fail;
	}
	*parsed = d;
	return 0;
fail:
	vhost_user_close(d->vu);
	free(d);
	return -1;
}

static void fs_free_parsed(void *parsed)
{
	struct fs_device *d = parsed;
	if (d)
		vhost_user_close(d->vu);
	free(d);
}

static int fs_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	struct fs_device *d = slot->cfg->parsed;
	struct virtio_fs_options o = {.request_queues = d->o.queues};
	memcpy(o.tag, d->o.tag, sizeof(o.tag));
	char err[192];
	slot->model = virtio_fs_create(&slot->dev, d->vu, &d->info, &o, env->mem, env->loop, label,
				       err, sizeof(err));
	if (!slot->model) {
		log_error("%s: %s", label, err);
		return -1;
	}
	d->vu = NULL; /* the device's now */
	return 0;
}

static void fs_destroy(struct virtio_slot *slot)
{
	virtio_fs_destroy(slot->model);
	slot->model = NULL;
}

static void fs_seccomp_needs(const void *parsed, struct seccomp_needs *needs)
{
	(void)parsed;
	needs->vhost_user = true;
}

const struct device_kind_desc virtio_fs_kind = {
    .flag = "fs",
    .label = "virtio-fs",
    .help = "virtio-fs served by a running vhost-user back end (virtiofsd); the guest's RAM\n"
	    "is then shared with it (a memfd); a VM with one cannot be snapshotted",
    .options = fs_option_table,
    .needs_options = true,
    .shares_memory = true,
    .parse = fs_parse,
    .free_parsed = fs_free_parsed,
    .create = fs_create,
    .destroy = fs_destroy,
    .seccomp_needs = fs_seccomp_needs,
};
