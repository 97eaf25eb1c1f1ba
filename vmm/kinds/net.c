/* --net: option parsing and the device-kind entry for virtio-net. */
#include "vmm/kinds/kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/net/slirp.h"
#include "devices/net/tap.h"
#include "devices/virtio/net.h"
#include "vmm/device_registry.h"
#include "vmm/log.h"
#include "vmm/options.h"
#include "vmm/seccomp.h"
#include "vmm/virtio_devices.h"

static struct net_backend *open_tap_or_user(const struct net_config *cfg, struct event_loop *loop,
					    const struct net_backend_client *client, char *err,
					    size_t errlen)
{
	return cfg->user ? slirp_backend_open(cfg, loop, client, err, errlen)
			 : tap_backend_open(cfg->tap, loop, client, err, errlen);
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
		 "(%llu dropped)",
		 slot->dev.label, (unsigned long long)s.tx_packets, (unsigned long long)s.tx_bytes,
		 (unsigned long long)s.tx_dropped, (unsigned long long)s.rx_packets,
		 (unsigned long long)s.rx_bytes, (unsigned long long)s.rx_dropped);
	virtio_net_destroy(n);
	slot->model = NULL;
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

int net_config_parse(const char *options, struct net_config *cfg, char *err, size_t errlen)
{
	static const char what[] = "--net";
	static const char expected[] =
	    "tap=NAME or user, mac=, tx=bh|timer, tx-burst=, tx-timer=, offload=, hostfwd=";
	memset(cfg, 0, sizeof(*cfg));
	cfg->tx_mode = NET_TX_BH;
	cfg->tx_burst = NET_DEFAULT_TX_BURST;
	cfg->tx_timer_us = NET_DEFAULT_TX_TIMER_US;
	cfg->offload = true;
	struct option_list opts;
	if (options_split(options, what, &opts, err, errlen))
		return -1;
	for (int i = 0; i < opts.n; i++) {
		const struct option_kv *kv = &opts.kv[i];
		if (!strcmp(kv->key, "tap") && kv->has_value) {
			if (!kv->value[0] || strlen(kv->value) >= sizeof(cfg->tap)) {
				snprintf(err, errlen, "%s: invalid tap name '%s'", what, kv->value);
				return -1;
			}
			snprintf(cfg->tap, sizeof(cfg->tap), "%s", kv->value);
		} else if (!strcmp(kv->key, "user") && !kv->has_value) {
			cfg->user = true;
		} else if (!strcmp(kv->key, "hostfwd") && kv->has_value) {
			if (cfg->nr_hostfwd == 8 || strlen(kv->value) >= sizeof(cfg->hostfwd[0])) {
				snprintf(err, errlen, "%s: too many or too long hostfwd=", what);
				return -1;
			}
			snprintf(cfg->hostfwd[cfg->nr_hostfwd++], sizeof(cfg->hostfwd[0]), "%s",
				 kv->value);
		} else if (!strcmp(kv->key, "mac")) {
			if (parse_mac(kv->value, cfg->mac)) {
				snprintf(
				    err, errlen,
				    "%s: invalid mac '%s' (expected a unicast 52:54:00:12:34:56)",
				    what, kv->value);
				return -1;
			}
			cfg->mac_set = true;
		} else if (!strcmp(kv->key, "tx")) {
			if (!strcmp(kv->value, "bh"))
				cfg->tx_mode = NET_TX_BH;
			else if (!strcmp(kv->value, "timer"))
				cfg->tx_mode = NET_TX_TIMER;
			else {
				snprintf(err, errlen, "%s: invalid tx '%s' (expected bh or timer)",
					 what, kv->value);
				return -1;
			}
		} else if (!strcmp(kv->key, "tx-burst")) {
			if (option_u32(kv, what, 1, 4096, &cfg->tx_burst, err, errlen))
				return -1;
		} else if (!strcmp(kv->key, "tx-timer")) {
			if (option_u32(kv, what, 1, 1000000, &cfg->tx_timer_us, err, errlen))
				return -1;
		} else if (!strcmp(kv->key, "offload")) {
			if (option_bool(kv, what, &cfg->offload, err, errlen))
				return -1;
		} else {
			return option_unknown(kv, what, expected, err, errlen);
		}
	}
	if (cfg->user == !!cfg->tap[0]) {
		snprintf(err, errlen, "%s: give exactly one backend: tap=NAME or user", what);
		return -1;
	}
	if (cfg->nr_hostfwd && !cfg->user) {
		snprintf(err, errlen, "%s: hostfwd= needs the user backend", what);
		return -1;
	}
	return 0;
}

static int net_parse(const char *options, void **parsed, char *err, size_t errlen)
{
	struct net_config *cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (net_config_parse(options, cfg, err, errlen) ||
	    (cfg->user && slirp_validate(cfg, err, errlen))) {
		free(cfg);
		return -1;
	}
	*parsed = cfg;
	return 0;
}

static void net_seccomp_needs(const void *parsed, struct seccomp_needs *needs)
{
	const struct net_config *cfg = parsed;
	needs->user_net |= cfg->user;
	needs->tap |= !cfg->user;
}

const struct device_kind_desc virtio_net_kind = {
    .flag = "net",
    .label = "virtio-net",
    .usage = " tap=NAME|user[,mac=MAC][,tx=bh|timer][,tx-burst=N][,tx-timer=USEC]\n"
	     "        [,offload=on|off][,hostfwd=tcp|udp::HOSTPORT-:GUESTPORT][,transport=..]\n"
	     "                         virtio-net on a tap device (opened, or created when\n"
	     "                         permitted) or user-mode networking (libslirp)",
    .needs_options = true,
    .parse = net_parse,
    .create = net_create,
    .destroy = net_destroy,
    .seccomp_needs = net_seccomp_needs,
};
