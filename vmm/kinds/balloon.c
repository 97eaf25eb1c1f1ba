/* --balloon: option parsing and the device-kind entry for virtio-balloon. */
#include "vmm/kinds/kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB_PAGES ((1u << 20) / BALLOON_PAGE_SIZE)

#include "devices/virtio/balloon.h"
#include "vmm/api/requests.h"
#include "base/guest_mem.h"
#include "device_registry.h"
#include "vmm/api/json.h"
#include "vmm/cli/options.h"
#include "vmm/kvm/virtio_devices.h"

static const struct option_desc balloon_option_table[] = {
    {.key = "deflate-on-oom",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct balloon_options, deflate_on_oom),
     .help = "the guest may take pages back when it runs out of memory"},
    {.key = "free-page-reporting",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct balloon_options, reporting),
     .help = "the guest reports free pages, whose host memory is released"},
    {NULL},
};

int balloon_options_parse(const struct option_list *opts, struct balloon_options *out, char *err,
			  size_t errlen)
{
	memset(out, 0, sizeof(*out));
	return options_parse(balloon_option_table, opts, "--balloon", "transport=", out, err,
			     errlen);
}

static int balloon_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct balloon_options o;
	if (balloon_options_parse(opts, &o, err, errlen))
		return -1;
	/* Owned by the configuration from here on (cli_free_config frees it). */
	struct balloon_options *copy = malloc(sizeof(*copy));
	if (!copy) {
		snprintf(err, errlen, "--balloon: out of memory");
		return -1;
	}
	*copy = o;
	*parsed = copy;
	return 0;
}

static int balloon_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	static const struct balloon_options defaults;
	const struct balloon_options *o = slot->cfg->parsed ? slot->cfg->parsed : &defaults;
	slot->model = virtio_balloon_create(&slot->dev, env->mem, env->loop, label, o);
	return slot->model ? 0 : -1;
}

static void balloon_destroy(struct virtio_slot *slot)
{
	virtio_balloon_destroy(slot->model);
}

static void balloon_status(struct virtio_slot *slot, struct json_writer *w)
{
	struct virtio_balloon *b = slot->model;
	struct balloon_info bi;
	virtio_balloon_get_info(b, &bi);
	json_key(w, "balloon");
	json_begin_object(w);
	json_member_uint(w, "target_pages", bi.target_pages);
	json_member_uint(w, "target_mib", bi.target_pages / MIB_PAGES);
	json_member_uint(w, "actual_pages", bi.actual_pages);
	json_member_uint(w, "actual_mib", bi.actual_pages / MIB_PAGES);
	json_member_uint(w, "released_pages", bi.inflated_pages);
	json_member_uint(w, "inflated_pfns", bi.inflate_pfns);
	json_member_uint(w, "deflated_pfns", bi.deflate_pfns);
	json_member_uint(w, "invalid_pfns", bi.invalid_pfns);
	json_member_uint(w, "reported_bytes", bi.reported_bytes);
	json_member_bool(w, "deflate_on_oom", bi.deflate_on_oom);
	json_member_bool(w, "free_page_reporting", bi.reporting);
	json_member_uint(w, "stats_updates", bi.stats_updates);
	json_key(w, "stats");
	json_begin_object(w);
	for (unsigned t = 0; t < BALLOON_NR_STATS; t++) {
		if (!(bi.stats_valid & 1u << t))
			continue;
		json_member_uint(w, virtio_balloon_stat_name(t), bi.stats[t]);
	}
	json_end_object(w);
	json_end_object(w);
	/* The next status shows fresher numbers. */
	virtio_balloon_request_stats(b);
}

static char *balloon_set(struct virtio_slot *slot, const struct device_env *env,
			 const struct json_object *req)
{
	const struct json_member *mib = json_get(req, "mib");
	if (!mib || mib->type != JSON_INT)
		return api_error_response("balloon-set needs an integer \"mib\"");
	uint64_t ram_mib = env->ram_bytes >> 20;
	if (mib->num < 0 || (uint64_t)mib->num > ram_mib) {
		char msg[96];
		snprintf(msg, sizeof(msg), "mib must be 0 to %llu (the guest's RAM)",
			 (unsigned long long)ram_mib);
		return api_error_response(msg);
	}
	if (!slot)
		return api_error_response("no balloon device (start with --balloon)");
	char err[128];
	/* Stop the pre-faulting first: it must not refault what the guest is about to free. */
	guest_mem_stop_populate(env->mem);
	if (virtio_balloon_set_target(slot->model, (uint64_t)mib->num * MIB_PAGES, err,
				      sizeof(err)))
		return api_error_response(err);
	return api_ok_response("target_mib", mib->num);
}

static const struct device_command balloon_commands[] = {
    {.name = "balloon-set", .member = "mib", .run = balloon_set},
    {NULL},
};

/* struct virtio_balloon_state, then the released-page map (virtio_balloon_map_bytes of RAM). */
static size_t balloon_state_bytes(const struct virtio_slot *slot)
{
	return sizeof(struct virtio_balloon_state) +
	       (size_t)virtio_balloon_map_bytes(slot->dev.mem->ram_size);
}

static int balloon_save(struct virtio_slot *slot, uint8_t **buf, size_t *len)
{
	struct virtio_balloon_state st;
	*len = balloon_state_bytes(slot);
	*buf = malloc(*len);
	if (!*buf)
		return -1;
	virtio_balloon_save(slot->model, &st, *buf + sizeof(st));
	memcpy(*buf, &st, sizeof(st));
	return 0;
}

static int balloon_restore(struct virtio_slot *slot, const uint8_t *buf, size_t len, char *err,
			   size_t errlen)
{
	struct virtio_balloon_state st;
	if (len != balloon_state_bytes(slot)) {
		snprintf(err, errlen, "the saved balloon state is %zu bytes, expected %zu", len,
			 balloon_state_bytes(slot));
		return -1;
	}
	memcpy(&st, buf, sizeof(st));
	return virtio_balloon_restore(slot->model, &st, buf + sizeof(st), err, errlen);
}

static void balloon_resignal(struct virtio_slot *slot)
{
	virtio_balloon_resignal(slot->model);
}

static const struct device_snapshot_ops balloon_snapshot = {
    .save = balloon_save,
    .restore = balloon_restore,
    .resignal = balloon_resignal,
};

const struct device_kind_desc virtio_balloon_kind = {
    .flag = "balloon",
    .label = "virtio-balloon",
    .help = "virtio-balloon: memory given back by the guest is released\n"
	    "(target set with the control socket, see --api-sock)",
    .options = balloon_option_table,
    .parse = balloon_parse,
    .create = balloon_create,
    .destroy = balloon_destroy,
    .status = balloon_status,
    .commands = balloon_commands,
    .snapshot = &balloon_snapshot,
};
