/* --fs: virtio-fs on a vhost-user back end already running (virtiofsd), connected to while the
 * command line is parsed, so a missing or unusable back end is a command-line error.
 * --share DIR: the same device on a virtiofsd that minivmm starts on DIR (virtiofsd.h) when the
 * VM is set up, and stops with it. */
#include "vmm/kinds/kinds.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "devices/backends/vhost_user.h"
#include "devices/virtio/fs.h"
#include "base/log.h"
#include "device_registry.h"
#include "vmm/cli/options.h"
#include "vmm/kvm/virtio_devices.h"
#include "vmm/sandbox/seccomp.h"
#include "vhost_user_kind.h"
#include "virtiofsd.h"

#define WHAT "--fs"
/* A back end started just before minivmm may not be listening yet. */
#define FS_CONNECT_WAIT_MS 2000

struct fs_options {
	char socket[OPTION_VALUE_MAX];
	char tag[VIRTIO_FS_TAG_MAX + 1];
	uint32_t queues;
	/* --share */
	char dir[OPTION_VALUE_MAX];
	bool readonly;
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

/* The rest of the set-up on a connection: ready (vhost_user_kind.h), with the queues asked. */
static int take_backend(struct fs_device *d, const char *what, const char *where, char *err,
			size_t errlen)
{
	if (vhost_user_kind_ready(d->vu, what, where, &d->info, err, errlen))
		return -1;
	if (d->info.queues && d->info.queues < 1 + d->o.queues) {
		snprintf(err, errlen, "%s: the back end %s has %u queues, queues=%u needs %u", what,
			 where, d->info.queues, d->o.queues, 1 + d->o.queues);
		return -1;
	}
	return 0;
}

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
	char why[192], where[OPTION_VALUE_MAX + 8];
	d->vu = vhost_user_connect(d->o.socket, FS_CONNECT_WAIT_MS, why, sizeof(why));
	if (!d->vu) {
		snprintf(err, errlen, "%s: %s", WHAT, why);
		goto fail;
	}
	snprintf(where, sizeof(where), "at '%s'", d->o.socket);
	if (take_backend(d, WHAT, where, err, errlen))
		goto fail;
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

/* The device on d's connection (the device takes it). */
static int create_on(struct fs_device *d, struct virtio_slot *slot, const struct device_env *env,
		     const char *label)
{
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

static int fs_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	return create_on(slot->cfg->parsed, slot, env, label);
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

/* ---- --share DIR[,tag=TAG][,readonly=on] ---- */

#define SHARE		  "--share"
#define SHARE_DEFAULT_TAG "share"

static const struct option_desc share_option_table[] = {
    {.key = "path",
     .type = OPTION_STRING,
     OPTION_FIELD(struct fs_options, dir),
     .min = 1,
     .arg = "DIR",
     .required = true,
     .host = true,
     .help = "the host directory (also as the first option alone: --share DIR,...)"},
    {.key = "tag",
     .type = OPTION_STRING,
     OPTION_FIELD(struct fs_options, tag),
     .min = 1,
     .arg = "TAG",
     .help = "what the guest mounts: mount -t virtiofs TAG DIR (default " SHARE_DEFAULT_TAG ")"},
    {.key = "readonly",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct fs_options, readonly),
     .bare_on = true,
     .host = true,
     .help = "the guest cannot change the directory (a read-only bind mount: needs root)"},
    {NULL},
};

/* The per-share state: the options, then virtiofsd and the device's connection to it. */
struct share {
	struct fs_device fs; /* first: the device's parsed options */
	struct virtiofsd daemon;
	bool started;
};

static int share_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct share *sh = calloc(1, sizeof(*sh));
	if (!sh) {
		snprintf(err, errlen, "%s: out of memory", SHARE);
		return -1;
	}
	sh->fs.o.queues = 1;
	snprintf(sh->fs.o.tag, sizeof(sh->fs.o.tag), SHARE_DEFAULT_TAG);
	if (options_parse(share_option_table, opts, SHARE, "transport=", &sh->fs.o, err, errlen))
		goto fail;
	struct stat st;
	if (stat(sh->fs.o.dir, &st) < 0) {
		snprintf(err, errlen, "%s: '%s': %s", SHARE, sh->fs.o.dir, strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: '%s' is not a directory", SHARE, sh->fs.o.dir);
		goto fail;
	}
	if (geteuid() != 0) {
		snprintf(err, errlen,
			 "%s: virtiofsd needs root (run minivmm as root, or start "
			 "virtiofsd yourself and use --fs socket=PATH)",
			 SHARE);
		goto fail;
	}
	*parsed = sh;
	return 0;
fail:
	free(sh);
	return -1;
}

static void share_free_parsed(void *parsed)
{
	struct share *sh = parsed;
	if (!sh)
		return;
	vhost_user_close(sh->fs.vu);
	if (sh->started)
		virtiofsd_stop(&sh->daemon, 3000);
	free(sh);
}

/* virtiofsd is started here, not while parsing: --virtiofsd may come later on the command line,
 * and nothing should run for a command line that turns out wrong. */
static int share_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	struct share *sh = slot->cfg->parsed;
	char err[320], buf[4096];
	const char *bin = virtiofsd_find(env->virtiofsd, buf, sizeof(buf), err, sizeof(err));
	if (!bin) {
		log_error("%s", err);
		return -1;
	}
	sh->fs.vu =
	    virtiofsd_start(&sh->daemon, bin, sh->fs.o.dir, sh->fs.o.readonly, err, sizeof(err));
	sh->started = true; /* stopped at the end whatever happens */
	if (!sh->fs.vu) {
		log_error("%s", err);
		return -1;
	}
	char where[OPTION_VALUE_MAX + 16];
	snprintf(where, sizeof(where), "for '%s'", sh->fs.o.dir);
	if (take_backend(&sh->fs, SHARE, where, err, sizeof(err))) {
		char why[256];
		virtiofsd_why(&sh->daemon, why, sizeof(why));
		log_error("%s%s%s", why[0] ? "--share: virtiofsd did not start: " : err, why, "");
		return -1;
	}
	return create_on(&sh->fs, slot, env, label);
}

/* The device first (closing its connection ends virtiofsd's session), then virtiofsd. */
static void share_destroy(struct virtio_slot *slot)
{
	struct share *sh = slot->cfg->parsed;
	fs_destroy(slot);
	if (sh->started)
		virtiofsd_stop(&sh->daemon, 3000);
	sh->started = false;
}

const struct device_kind_desc virtio_share_kind = {
    .flag = "share",
    .label = "virtio-fs",
    .help = "virtio-fs on a host directory, served by a virtiofsd that minivmm starts and\n"
	    "stops (root only); guest: mount -t virtiofs TAG DIR",
    .options = share_option_table,
    .needs_options = true,
    .positional = "path=",
    .shares_memory = true,
    .parse = share_parse,
    .free_parsed = share_free_parsed,
    .create = share_create,
    .destroy = share_destroy,
    .seccomp_needs = fs_seccomp_needs,
};
