/* --disk: option parsing and the device-kind entry for virtio-blk. The image is opened once,
 * while the command line is parsed, and the device takes the descriptor over. */
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

#define WHAT "--disk"

static const struct option_choice cache_modes[] = {
    {"none", true},
    {"writeback", false},
    {NULL, 0},
};

static const struct option_desc blk_option_table[] = {
    {.key = "path",
     .type = OPTION_STRING,
     OPTION_FIELD(struct blk_options, path),
     .min = 1,
     .arg = "IMAGE",
     .required = true,
     .host = true,
     .help = "raw image: file or block device"},
    {.key = "readonly",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct blk_options, readonly),
     .bare_on = true,
     .host = true,
     .help = "open the image read-only and offer VIRTIO_BLK_F_RO"},
    {.key = "cache",
     .type = OPTION_ENUM,
     OPTION_FIELD(struct blk_options, direct),
     .choices = cache_modes,
     .host = true,
     .help = "none: O_DIRECT; writeback (default): the host page cache"},
    {.key = "serial",
     .type = OPTION_STRING,
     OPTION_FIELD(struct blk_options, serial),
     .arg = "ID",
     .help = "what the guest's GET_ID returns"},
    {NULL},
};

int blk_options_parse(const struct option_list *opts, struct blk_options *out, int *fd, char *err,
		      size_t errlen)
{
	memset(out, 0, sizeof(*out));
	*fd = -1;
	if (options_parse(blk_option_table, opts, WHAT, "transport=", out, err, errlen))
		return -1;
	/* Fail at the command line, not later, on an image that cannot be used as asked. */
	struct stat st;
	int img = open_user_file(out->path, blk_image_open_flags(out->readonly, out->direct), 0,
				 USER_FILE_REG | USER_FILE_BLK, &st);
	if (img == USER_FILE_WRONG_KIND) {
		snprintf(err, errlen, "%s: '%s' is %s: neither a regular file nor a block device",
			 WHAT, out->path, user_file_kind(st.st_mode));
		return -1;
	}
	if (img < 0) {
		snprintf(err, errlen, "%s: cannot open '%s'%s: %s", WHAT, out->path,
			 out->direct && errno == EINVAL ? " with O_DIRECT (cache=none)"
			 : out->readonly		? ""
							: " for writing",
			 strerror(errno));
		return -1;
	}
	/* For the unit tests and for hosts where io_uring misbehaves. */
	out->no_uring = getenv("MINIVMM_BLK_NO_IO_URING") != NULL;
	*fd = img;
	return 0;
}

/* The parsed options and the open image, until the device takes it over. */
struct disk {
	struct blk_options blk; /* first: seccomp_needs reads it */
	int fd;
};

/* The parsed options belong to the configuration from here on (cli_free_config frees them). */
static int blk_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct disk *d = malloc(sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", WHAT);
		return -1;
	}
	if (blk_options_parse(opts, &d->blk, &d->fd, err, errlen)) {
		free(d);
		return -1;
	}
	*parsed = d;
	return 0;
}

static void blk_free_parsed(void *parsed)
{
	struct disk *d = parsed;
	if (d && d->fd >= 0)
		close(d->fd);
	free(d);
}

static int blk_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	struct disk *d = slot->cfg->parsed;
	int fd = d->fd;
	d->fd = -1; /* the device's now, even if it fails */
	slot->model = virtio_blk_create_on(&slot->dev, env->mem, env->loop, label, &d->blk, fd);
	return slot->model ? 0 : -1;
}

static void blk_destroy(struct virtio_slot *slot)
{
	virtio_blk_destroy(slot->model);
	slot->model = NULL;
}

static void blk_seccomp_needs(const void *parsed, struct seccomp_needs *needs)
{
	needs->io_uring |= !((const struct disk *)parsed)->blk.no_uring;
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
    .quiesce = blk_quiesce,
    .save = blk_save,
    .check = blk_check,
    .restore = blk_restore,
};

const struct device_kind_desc virtio_blk_kind = {
    .flag = "disk",
    .label = "virtio-blk",
    .help = "virtio-blk over a raw image",
    .options = blk_option_table,
    .needs_options = true,
    .parse = blk_parse,
    .free_parsed = blk_free_parsed,
    .create = blk_create,
    .destroy = blk_destroy,
    .seccomp_needs = blk_seccomp_needs,
    .snapshot = &blk_snapshot,
};
