/* --disk: option parsing and the device-kind entry for virtio-blk. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/kinds/kinds.h"

#include "devices/virtio/blk.h"
#include "vmm/device_registry.h"
#include "vmm/options.h"
#include "vmm/seccomp.h"
#include "vmm/virtio_devices.h"

#define WHAT	 "--disk"
#define EXPECTED "path=, readonly=, cache=, serial=, transport="

int virtio_blk_parse_options(const char *options, struct virtio_blk_options *out, char *err,
			     size_t errlen)
{
	struct option_list opts;
	memset(out, 0, sizeof(*out));
	if (options_split(options, WHAT, &opts, err, errlen))
		return -1;
	bool have_path = false;
	for (int i = 0; i < opts.n; i++) {
		const struct option_kv *kv = &opts.kv[i];
		if (!strcmp(kv->key, "path") && kv->has_value && kv->value[0]) {
			snprintf(out->path, sizeof(out->path), "%s", kv->value);
			have_path = true;
		} else if (!strcmp(kv->key, "readonly")) {
			out->readonly = true; /* a bare "readonly" means on */
			if (kv->has_value && option_bool(kv, WHAT, &out->readonly, err, errlen))
				return -1;
		} else if (!strcmp(kv->key, "cache") && kv->has_value) {
			if (!strcmp(kv->value, "none")) {
				out->direct = true;
			} else if (!strcmp(kv->value, "writeback")) {
				out->direct = false;
			} else {
				snprintf(err, errlen,
					 "%s: invalid cache '%s' (expected none or writeback)",
					 WHAT, kv->value);
				return -1;
			}
		} else if (!strcmp(kv->key, "serial") && kv->has_value) {
			if (strlen(kv->value) > VIRTIO_BLK_ID_BYTES) {
				snprintf(err, errlen, "%s: serial '%s' is longer than %d bytes",
					 WHAT, kv->value, VIRTIO_BLK_ID_BYTES);
				return -1;
			}
			snprintf(out->serial, sizeof(out->serial), "%s", kv->value);
		} else if (!strcmp(kv->key, "path") || !strcmp(kv->key, "cache") ||
			   !strcmp(kv->key, "serial")) {
			snprintf(err, errlen, "%s: %s needs a value", WHAT, kv->key);
			return -1;
		} else {
			return option_unknown(kv, WHAT, EXPECTED, err, errlen);
		}
	}
	if (!have_path) {
		snprintf(err, errlen, "%s: path=IMAGE is required", WHAT);
		return -1;
	}
	/* Fail at the command line, not later, on an image that cannot be used as asked. */
	int fd = open(out->path, (out->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: cannot open '%s'%s: %s", WHAT, out->path,
			 out->readonly ? "" : " for writing", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		snprintf(err, errlen, "%s: '%s' is neither a regular file nor a block device", WHAT,
			 out->path);
		return -1;
	}
	/* For the unit tests and for hosts where io_uring misbehaves. */
	out->no_uring = getenv("MINIVMM_BLK_NO_IO_URING") != NULL;
	return 0;
}

/* The parsed options belong to the configuration from here on (cli_free_config frees them). */
static int blk_parse(const char *options, void **parsed, char *err, size_t errlen)
{
	struct virtio_blk_options *o = malloc(sizeof(*o));
	if (!o) {
		snprintf(err, errlen, "%s: out of memory", WHAT);
		return -1;
	}
	if (virtio_blk_parse_options(options, o, err, errlen)) {
		free(o);
		return -1;
	}
	*parsed = o;
	return 0;
}

static int blk_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	slot->model = virtio_blk_create(&slot->dev, env->mem, env->loop, label, slot->cfg->parsed);
	return slot->model ? 0 : -1;
}

static void blk_destroy(struct virtio_slot *slot)
{
	virtio_blk_destroy(slot->model);
	slot->model = NULL;
}

static void blk_seccomp_needs(const void *parsed, struct seccomp_needs *needs)
{
	needs->io_uring |= !((const struct virtio_blk_options *)parsed)->no_uring;
}

const struct device_kind_desc virtio_blk_kind = {
    .flag = "disk",
    .label = "virtio-blk",
    .usage = " path=IMAGE[,readonly=on][,cache=none|writeback][,serial=ID]"
	     "[,transport=mmio|pci]\n"
	     "                         virtio-blk over a raw image (cache=none: O_DIRECT)",
    .needs_options = true,
    .parse = blk_parse,
    .create = blk_create,
    .destroy = blk_destroy,
    .seccomp_needs = blk_seccomp_needs,
};
