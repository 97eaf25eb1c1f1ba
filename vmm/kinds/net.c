/* --net: option parsing and the device-kind entry for virtio-net. */
#include "vmm/kinds/kinds.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/backends/slirp.h"
#include "devices/backends/tap.h"
#include "devices/virtio/net.h"
#include "base/log.h"
#include "device_registry.h"
#include "vmm/api/json.h"
#include "vmm/cli/options.h"
#include "vmm/sandbox/seccomp.h"
#include "vmm/kvm/virtio_devices.h"

/* The user-mode backend's view of --net's hostfwd= rules (rules[] has room for all). */
static struct slirp_forwards forwards_of(const struct net_options *cfg, const char **rules)
{
	for (int i = 0; i < cfg->nr_hostfwd; i++)
		rules[i] = cfg->hostfwd[i];
	return (struct slirp_forwards){.rules = rules, .count = cfg->nr_hostfwd};
}

static int validate_forwards(const struct net_options *cfg, char *err, size_t errlen)
{
	const char *rules[NET_MAX_HOSTFWD];
	struct slirp_forwards fwd = forwards_of(cfg, rules);
	return slirp_validate(&fwd, err, errlen);
}

static struct net_backend *open_tap_or_user(const struct net_options *cfg, struct event_loop *loop,
					    const struct net_backend_client *client, char *err,
					    size_t errlen)
{
	if (!cfg->user)
		return tap_backend_open(cfg->tap, loop, client, cfg->tx_uring ? TAP_URING_TX : 0,
					err, errlen);
	const char *rules[NET_MAX_HOSTFWD];
	struct slirp_forwards fwd = forwards_of(cfg, rules);
	struct slirp_policy policy = {.host_loopback = cfg->host_loopback,
				      .restrict_net = cfg->restrict_net,
				      .max_sockets = cfg->max_sockets};
	return slirp_backend_open(&fwd, &policy, loop, client, err, errlen);
}

static int net_create(struct virtio_slot *slot, const struct device_env *env, const char *label)
{
	slot->model = virtio_net_create(&slot->dev, env->mem, env->loop, slot->cfg->parsed, label,
					open_tap_or_user);
	return slot->model ? 0 : -1;
}

static void net_destroy(struct virtio_slot *slot)
{
	struct virtio_net *n = slot->model;
	if (!n)
		return;
	struct virtio_net_stats s;
	virtio_net_stats(n, &s);
	log_info("%s: tx %llu packets %llu bytes (%llu dropped), rx %llu packets %llu bytes "
		 "(%llu dropped), polls found tx %llu rx %llu",
		 slot->dev.label, (unsigned long long)s.tx_packets, (unsigned long long)s.tx_bytes,
		 (unsigned long long)s.tx_dropped, (unsigned long long)s.rx_packets,
		 (unsigned long long)s.rx_bytes, (unsigned long long)s.rx_dropped,
		 (unsigned long long)s.poll_tx, (unsigned long long)s.poll_rx);
	virtio_net_destroy(n);
	slot->model = NULL;
}

/* The control socket's "net": the first net device's packet counters and what polling found. */
static void net_status(struct virtio_slot *slot, struct json_writer *w)
{
	const struct net_options *cfg = slot->cfg->parsed;
	struct virtio_net_stats s;
	virtio_net_stats(slot->model, &s);
	json_key(w, "net");
	json_begin_object(w);
	json_member_string(w, "label", slot->dev.label);
	json_member_uint(w, "tx_packets", s.tx_packets);
	json_member_uint(w, "tx_bytes", s.tx_bytes);
	json_member_uint(w, "tx_dropped", s.tx_dropped);
	json_member_uint(w, "rx_packets", s.rx_packets);
	json_member_uint(w, "rx_bytes", s.rx_bytes);
	json_member_uint(w, "rx_dropped", s.rx_dropped);
	json_member_string(w, "tx_path", virtio_net_tx_path(slot->model));
	json_member_string(w, "rx_path", virtio_net_rx_path(slot->model));
	json_member_uint(w, "poll_us", cfg->poll_us);
	json_member_uint(w, "poll_tx", s.poll_tx);
	json_member_uint(w, "poll_rx", s.poll_rx);
	json_end_object(w);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char extra;
	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &extra) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	/* A multicast address cannot be a NIC's own. */
	return (mac[0] & 1) ? -1 : 0;
}

static int mac_option(const struct option_kv *kv, void *out, const char *what, char *err,
		      size_t errlen)
{
	struct net_options *cfg = out;
	if (parse_mac(kv->value, cfg->mac)) {
		snprintf(err, errlen, "%s: invalid mac '%s' (expected a unicast 52:54:00:12:34:56)",
			 what, kv->value);
		return -1;
	}
	cfg->mac_set = true;
	return 0;
}

static int hostfwd_option(const struct option_kv *kv, void *out, const char *what, char *err,
			  size_t errlen)
{
	struct net_options *cfg = out;
	if (cfg->nr_hostfwd == NET_MAX_HOSTFWD || strlen(kv->value) >= sizeof(cfg->hostfwd[0])) {
		snprintf(err, errlen, "%s: too many or too long hostfwd=", what);
		return -1;
	}
	snprintf(cfg->hostfwd[cfg->nr_hostfwd++], sizeof(cfg->hostfwd[0]), "%s", kv->value);
	return 0;
}

static const struct option_choice tx_modes[] = {
    {"bh", NET_TX_BH},
    {"timer", NET_TX_TIMER},
    {NULL, 0},
};

static const struct option_desc net_option_table[] = {
    {.key = "tap",
     .host = true,
     .type = OPTION_STRING,
     OPTION_FIELD(struct net_options, tap),
     .min = 1,
     .arg = "NAME",
     .help = "a host tap device (opened, or created when permitted)"},
    {.key = "user",
     .host = true,
     .type = OPTION_FLAG,
     OPTION_FIELD(struct net_options, user),
     .help = "user-mode networking (libslirp) instead of a tap device"},
    {.key = "mac",
     .type = OPTION_CUSTOM,
     .parse = mac_option,
     .arg = "MAC",
     .help = "the guest's address (default 52:54:00:12:34:56 plus the index)"},
    {.key = "tx",
     .type = OPTION_ENUM,
     OPTION_FIELD(struct net_options, tx_mode),
     .choices = tx_modes,
     .help = "transmit from a bottom half (default) or a timer"},
    {.key = "tx-burst",
     .type = OPTION_U32,
     OPTION_FIELD(struct net_options, tx_burst),
     .min = 1,
     .max = 4096,
     .arg = "N",
     .help = "packets per transmit run (default 256)"},
    {.key = "tx-timer",
     .type = OPTION_U32,
     OPTION_FIELD(struct net_options, tx_timer_us),
     .min = 1,
     .max = 1000000,
     .arg = "USEC",
     .help = "tx=timer: delay from kick to flush (default 150)"},
    {.key = "poll-us",
     .type = OPTION_U32,
     OPTION_FIELD(struct net_options, poll_us),
     .min = 0,
     .max = NET_MAX_POLL_US,
     .arg = "USEC",
     .help = "tx=bh: poll the rings for up to USEC before the I/O thread\n"
	     "sleeps, the guest's transmit kicks off meanwhile (default 50;\n"
	     "0: off; with tx=timer: off)"},
    {.key = "tx-uring",
     .host = true,
     .type = OPTION_BOOL,
     OPTION_FIELD(struct net_options, tx_uring),
     .help = "tap: hand each transmit batch (up to 64 frames) to the tap in one\n"
	     "io_uring submission instead of a writev each (default off)"},
    {.key = "offload",
     .type = OPTION_BOOL,
     OPTION_FIELD(struct net_options, offload),
     .help = "checksum and segmentation offloads (default on)"},
    {.key = "hostfwd",
     .host = true,
     .type = OPTION_CUSTOM,
     .parse = hostfwd_option,
     .arg = "tcp|udp:[ADDR]:HOSTPORT-:GUESTPORT",
     .help = "user: forward HOSTPORT on the host's IPv4 ADDR (default all) to\n"
	     "GUESTPORT on the guest's 10.0.2.15 (no guest address; repeatable, up to\n"
	     "8), e.g. hostfwd=tcp::2222-:22"},
    {.key = "host-loopback",
     .host = true,
     .type = OPTION_BOOL,
     OPTION_FIELD(struct net_options, host_loopback),
     .help = "user: the guest reaches services on the host's 127.0.0.1 through\n"
	     "10.0.2.2 (default off: only DNS on 10.0.2.3 and the forwards' clients)"},
    {.key = "restrict",
     .host = true,
     .type = OPTION_BOOL,
     OPTION_FIELD(struct net_options, restrict_net),
     .help = "user: the guest opens nothing on the host or beyond (no DNS either);\n"
	     "only hostfwd rules' clients reach it (default off)"},
    {.key = "max-sockets",
     .host = true,
     .type = OPTION_U32,
     OPTION_FIELD(struct net_options, max_sockets),
     .min = 0,
     .max = 1000000,
     .arg = "N",
     .help = "user: host sockets libslirp may hold for the guest (connections,\n"
	     "UDP source ports, pings); past it new ones are refused (default 512;\n"
	     "0: no cap)"},
    {NULL},
};

int net_options_parse(const struct option_list *opts, struct net_options *cfg, char *err,
		      size_t errlen)
{
	static const char what[] = "--net";
	memset(cfg, 0, sizeof(*cfg));
	cfg->tx_mode = NET_TX_BH;
	cfg->tx_burst = NET_DEFAULT_TX_BURST;
	cfg->tx_timer_us = NET_DEFAULT_TX_TIMER_US;
	cfg->offload = true;
	cfg->poll_us = UINT32_MAX; /* not given: the default, which depends on tx= */
	cfg->max_sockets = UINT32_MAX;
	for (int i = 0; i < opts->n; i++)
		if (!strcmp(opts->kv[i].key, "rx-uring")) {
			snprintf(err, errlen,
				 "%s: rx-uring was removed: it lost to read() in every measurement "
				 "(docs/benchmarks.md, 2026-12-06); leave it out",
				 what);
			return -1;
		}
	if (options_parse(net_option_table, opts, what, "transport=", cfg, err, errlen))
		return -1;
	if (cfg->poll_us == UINT32_MAX)
		cfg->poll_us = cfg->tx_mode == NET_TX_BH ? NET_DEFAULT_POLL_US : 0;
	if (cfg->user == !!cfg->tap[0]) {
		snprintf(err, errlen, "%s: give exactly one backend: tap=NAME or user", what);
		return -1;
	}
	if (cfg->poll_us && cfg->tx_mode != NET_TX_BH) {
		snprintf(err, errlen, "%s: poll-us= needs tx=bh", what);
		return -1;
	}
	if (cfg->tx_uring && cfg->user) {
		snprintf(err, errlen, "%s: tx-uring= needs the tap backend", what);
		return -1;
	}
	if (!cfg->user && (cfg->nr_hostfwd || cfg->host_loopback || cfg->restrict_net ||
			   cfg->max_sockets != UINT32_MAX)) {
		snprintf(err, errlen, "%s: %s= needs the user backend", what,
			 cfg->nr_hostfwd      ? "hostfwd"
			 : cfg->host_loopback ? "host-loopback"
			 : cfg->restrict_net  ? "restrict"
					      : "max-sockets");
		return -1;
	}
	if (cfg->max_sockets == UINT32_MAX)
		cfg->max_sockets = SLIRP_DEFAULT_MAX_SOCKETS;
	return 0;
}

static int net_parse(const struct option_list *opts, void **parsed, char *err, size_t errlen)
{
	struct net_options *cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (net_options_parse(opts, cfg, err, errlen) ||
	    (cfg->user && validate_forwards(cfg, err, errlen))) {
		free(cfg);
		return -1;
	}
	*parsed = cfg;
	return 0;
}

static void net_seccomp_needs(const void *parsed, struct seccomp_needs *needs)
{
	const struct net_options *cfg = parsed;
	needs->user_net |= cfg->user;
	needs->tap |= !cfg->user;
	needs->io_uring |= cfg->tx_uring;
}

static int net_quiesce(struct virtio_slot *slot, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	virtio_net_quiesce(slot->model);
	return 0;
}

/* struct virtio_net_state, whole: the MAC, the link status, the counters. */
static int net_save(struct virtio_slot *slot, uint8_t **buf, size_t *len)
{
	struct virtio_net_state *st = calloc(1, sizeof(*st));
	if (!st)
		return -1;
	virtio_net_save(slot->model, st);
	*buf = (uint8_t *)st;
	*len = sizeof(*st);
	return 0;
}

static int net_restore(struct virtio_slot *slot, const uint8_t *buf, size_t len, char *err,
		       size_t errlen)
{
	struct virtio_net_state st;
	if (len != sizeof(st)) {
		snprintf(err, errlen, "the saved net state is %zu bytes, expected %zu", len,
			 sizeof(st));
		return -1;
	}
	memcpy(&st, buf, sizeof(st));
	return virtio_net_restore(slot->model, &st, err, errlen);
}

static void net_resignal(struct virtio_slot *slot)
{
	virtio_net_resignal(slot->model);
}

static const struct device_snapshot_ops net_snapshot = {
    .quiesce = net_quiesce,
    .save = net_save,
    .restore = net_restore,
    .resignal = net_resignal,
};

const struct device_kind_desc virtio_net_kind = {
    .flag = "net",
    .label = "virtio-net",
    .help = "virtio-net on a tap device or user-mode networking (libslirp)",
    .options = net_option_table,
    .needs_options = true,
    .parse = net_parse,
    .create = net_create,
    .destroy = net_destroy,
    .seccomp_needs = net_seccomp_needs,
    .status = net_status,
    .snapshot = &net_snapshot,
};
