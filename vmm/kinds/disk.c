/* --disk: option parsing and the device-kind entry for virtio-blk. The image is opened once,
 * while the command line is parsed, and the device takes the descriptor over; or, with
 * vhost-user=PATH, a back end serves the disk (vhost_user_disk.h). */
#include "vmm/kinds/kinds.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/virtio/blk.h"
#include "devices/backends/blk_io.h"
#include "device_registry.h"
#include "base/user_file.h"
#include "vmm/cli/options.h"
#include "vmm/sandbox/seccomp.h"
#include "vmm/kvm/virtio_devices.h"
#include "vhost_user_disk.h"

#define WHAT "--disk"

static const struct option_choice cache_modes[] = {
    {"none", true},
    {"writeback", false},
    {NULL, 0},
};

/* What the command line says: an image's options, or a back end's socket. */
struct disk_options {
	struct blk_options blk;
	char vhost_user[OPTION_VALUE_MAX];
};

static const struct option_desc blk_option_table[] = {
    {.key = "path",
     .type = OPTION_STRING,
     OPTION_FIELD(struct disk_options, blk.path),
     .min = 1,
     .arg = "IMAGE",
     .host = true,
     .help = "raw image: file or block device"},
    {.key = "vhost-user",
     .type = OPTION_STRING,
     OPTION_FIELD(struct disk_options, vhost_user),
     .min = 1,
     .arg = "PATH",
     .host = true,
     .help = "or a vhost-user-blk back end's socket (qemu-storage-daemon): RAM is\n"
	     "then shared with it; no snapshots"},
    {.key = "readonly",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct disk_options, blk.readonly),
     .bare_on = true,
     .host = true,
     .help = "open the image read-only and offer VIRTIO_BLK_F_RO"},
    {.key = "cache",
     .type = OPTION_ENUM,
     OPTION_FIELD(struct disk_options, blk.direct),
     .choices = cache_modes,
     .host = true,
     .help = "none: O_DIRECT; writeback (default): the host page cache"},
    {.key = "serial",
     .type = OPTION_STRING,
     OPTION_FIELD(struct disk_options, blk.serial),
     .arg = "ID",
     .help = "what the guest's GET_ID returns"},
    {NULL},
};

static bool given(const struct option_list *opts, const char *key)
{
	for (int i = 0; i < opts->n; i++)
		if (!strcmp(opts->kv[i].key, key))
			return true;
	return false;
}

/* The options, and exactly one of an image and a back end: the back end has the image, so
 * what says how to open it or what its serial is means nothing with it. */
static int disk_options_parse(const struct option_list *opts, struct disk_options *out, char *err,
			      size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (options_parse(blk_option_table, opts, WHAT, "transport=", out, err, errlen))
		return -1;
	if (!out->vhost_user[0] && !out->blk.path[0]) {
		snprintf(err, errlen, "%s: path=IMAGE or vhost-user=PATH is required", WHAT);
		return -1;
	}
	if (out->vhost_user[0] && (given(opts, "path") || given(opts, "readonly") ||
				   given(opts, "cache") || given(opts, "serial"))) {
		snprintf(err, errlen,
			 "%s: vhost-user= takes no path=, readonly=, cache= or serial= (the back "
			 "end opens the image and answers GET_ID)",
			 WHAT);
		return -1;
	}
	return 0;
}

/* Fail at the command line, not later, on an image that cannot be used as asked. */
static int open_image(struct blk_options *o, int *fd, char *err, size_t errlen)
{
	struct stat st;
	int img = open_user_file(o->path, blk_image_open_flags(o->readonly, o->direct), 0,
				 USER_FILE_REG | USER_FILE_BLK, &st);
	if (img == USER_FILE_WRONG_KIND) {
		snprintf(err, errlen, "%s: '%s' is %s: neither a regular file nor a block device",
			 WHAT, o->path, user_file_kind(st.st_mode));
		return -1;
	}
	if (img < 0) {
		snprintf(err, errlen, "%s: cannot open '%s'%s: %s", WHAT, o->path,
			 o->direct && errno == EINVAL ? " with O_DIRECT (cache=none)"
			 : o->readonly		      ? ""
						      : " for writing",
			 strerror(errno));
		return -1;
	}
	/* For the unit tests and for hosts where io_uring misbehaves. */
	o->no_uring = getenv("MINIVMM_BLK_NO_IO_URING") != NULL;
	*fd = img;
	return 0;
}

int blk_options_parse(const struct option_list *opts, struct blk_options *out, int *fd, char *err,
		      size_t errlen)
{
	struct disk_options o;
	memset(out, 0, sizeof(*out));
	*fd = -1;
	if (disk_options_parse(opts, &o, err, errlen))
		return -1;
	if (o.vhost_user[0]) {
		snprintf(err, errlen, "%s: vhost-user= is not an image", WHAT);
		return -1;
	}
	*out = o.blk;
	return open_image(out, fd, err, errlen);
}

/* The parsed options and the open image, until the device takes it over; or the back end. */
struct disk {
	struct blk_options blk; /* first: seccomp_needs reads it */
	int fd;
	struct vhost_user_disk *vu; /* vhost-user=: no image */
};

/* The parsed options belong to the configuration from here on (cli_free_config frees them). */
static int blk_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct disk *d = calloc(1, sizeof(*d));
	struct disk_options *o = malloc(sizeof(*o));
	if (!d || !o) {
		snprintf(err, errlen, "%s: out of memory", WHAT);
		goto fail;
	}
	d->fd = -1;
	if (disk_options_parse(opts, o, err, errlen))
		goto fail;
	d->blk = o->blk;
	if (o->vhost_user[0] ? !(d->vu = vhost_user_disk_open(o->vhost_user, WHAT, err, errlen))
			     : open_image(&d->blk, &d->fd, err, errlen) < 0)
		goto fail;
	free(o);
	*parsed = d;
	return 0;
fail:
	free(o);
	free(d);
	return -1;
}

static void blk_free_parsed(void *parsed)
{
	struct disk *d = parsed;
	if (d && d->fd >= 0)
		close(d->fd);
	if (d)
		vhost_user_disk_free(d->vu);
	free(d);
}

static int blk_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	struct disk *d = slot->cfg->parsed;
	if (d->vu)
		return vhost_user_disk_create(d->vu, slot, env, label);
	int fd = d->fd;
	d->fd = -1; /* the device's now, even if it fails */
	slot->model = virtio_blk_create_on(&slot->dev, env->mem, env->loop, label, &d->blk, fd);
	return slot->model ? 0 : -1;
}

static void blk_destroy(struct virtio_slot *slot)
{
	const struct disk *d = slot->cfg->parsed;
	if (d->vu) {
		vhost_user_disk_destroy(slot);
		return;
	}
	virtio_blk_destroy(slot->model);
	slot->model = NULL;
}

static void blk_seccomp_needs(const void *parsed, struct seccomp_needs *needs)
{
	const struct disk *d = parsed;
	if (d->vu)
		needs->vhost_user = true;
	else
		needs->io_uring |= !d->blk.no_uring;
}

static bool blk_shares_memory(const void *parsed)
{
	return ((const struct disk *)parsed)->vu != NULL;
}

/* The back end's state (requests in flight, its image's) is not the VMM's to save. */
static int blk_savable(const void *parsed, char *err, size_t errlen)
{
	if (!((const struct disk *)parsed)->vu)
		return 0;
	snprintf(err, errlen,
		 "a disk on a vhost-user back end cannot be saved (its state is the back end's)");
	return -1;
}

/* Requests finished while bus mastering is off cannot be saved (they are not in guest memory
 * yet): refuse until the guest turns it back on. */
static int blk_quiesce(struct virtio_slot *slot, char *err, size_t errlen)
{
	virtio_blk_quiesce(slot->model);
	unsigned held = virtio_blk_parked(slot->model);
	if (held) {
		snprintf(err, errlen,
			 "%s holds %u finished requests until the guest turns bus mastering back "
			 "on; try again then",
			 slot->dev.label, held);
		return -1;
	}
	return 0;
}

/* The image is not saved, its size is: a restore refuses an image of another size. */
static int blk_save(struct virtio_slot *slot, uint8_t **buf, size_t *len)
{
	uint64_t sectors = virtio_blk_capacity(slot->model);
	*buf = malloc(sizeof(sectors));
	if (!*buf)
		return -1;
	memcpy(*buf, &sectors, sizeof(sectors));
	*len = sizeof(sectors);
	return 0;
}

/* The image's size in sectors, as blk_save wrote it. */
static int saved_sectors(const uint8_t *buf, size_t len, uint64_t *out, char *err, size_t errlen)
{
	if (len != sizeof(*out)) {
		snprintf(err, errlen, "the saved disk state is %zu bytes, expected %zu", len,
			 sizeof(*out));
		return -1;
	}
	memcpy(out, buf, sizeof(*out));
	return 0;
}

static int same_size(uint64_t now, uint64_t saved, char *err, size_t errlen)
{
	if (saved == now)
		return 0;
	snprintf(err, errlen, "the image has %llu sectors, the snapshot %llu",
		 (unsigned long long)now, (unsigned long long)saved);
	return -1;
}

/* Before the device is built: its image is already open (blk_parse). */
static int blk_check(const void *parsed, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	if (blk_savable(parsed, err, errlen))
		return -1; /* a vhost-user back end given as the --backend of a saved image */
	uint64_t saved;
	if (saved_sectors(buf, len, &saved, err, errlen))
		return -1;
	return same_size(blk_image_fd_size(((const struct disk *)parsed)->fd) / 512, saved, err,
			 errlen);
}

static int blk_restore(struct virtio_slot *slot, const uint8_t *buf, size_t len, char *err,
		       size_t errlen)
{
	uint64_t saved;
	if (saved_sectors(buf, len, &saved, err, errlen))
		return -1;
	return same_size(virtio_blk_capacity(slot->model), saved, err, errlen);
}

static const struct device_snapshot_ops blk_snapshot = {
    .savable = blk_savable,
    .quiesce = blk_quiesce,
    .save = blk_save,
    .check = blk_check,
    .restore = blk_restore,
};

const struct device_kind_desc virtio_blk_kind = {
    .flag = "disk",
    .label = "virtio-blk",
    .help = "virtio-blk over a raw image, or served by a vhost-user back end",
    .options = blk_option_table,
    .needs_options = true,
    .parse = blk_parse,
    .free_parsed = blk_free_parsed,
    .create = blk_create,
    .destroy = blk_destroy,
    .shares_memory_of = blk_shares_memory,
    .seccomp_needs = blk_seccomp_needs,
    .snapshot = &blk_snapshot,
};
