#include "device_registry.h"

#include <stdio.h>
#include <string.h>

#include "vmm/cli/options.h"

#include "kinds.h"

const struct device_kind_desc *const device_kinds[] = {
    &virtio_rng_kind, &virtio_net_kind,	  &virtio_balloon_kind, &virtio_blk_kind,
    &virtio_fs_kind,  &virtio_share_kind, &virtio_console_kind, NULL,
};

void device_kind_usage(const struct device_kind_desc *kind)
{
	options_usage(stdout, kind->flag, kind->needs_options, kind->help, kind->options);
}

const struct device_kind_desc *device_kind_find(const char *flag)
{
	for (int k = 0; device_kinds[k]; k++)
		if (!strcmp(device_kinds[k]->flag, flag))
			return device_kinds[k];
	return NULL;
}

static const struct option_desc *find_option(const struct device_kind_desc *kind, const char *key)
{
	for (const struct option_desc *o = kind->options; o && o->key; o++)
		if (!strcmp(o->key, key))
			return o;
	return NULL;
}

int device_spec_split(const struct device_kind_desc *kind, const char *spec, char *guest,
		      char *host, size_t len, char *err, size_t errlen)
{
	char what[OPTION_KEY_MAX + 3];
	snprintf(what, sizeof(what), "--%s", kind->flag);
	struct option_list opts;
	if (options_split(spec, what, &opts, err, errlen))
		return -1;
	guest[0] = host[0] = '\0';
	for (int i = 0; i < opts.n; i++) {
		const struct option_desc *o = find_option(kind, opts.kv[i].key);
		if (!options_append(o && o->host ? host : guest, len, &opts.kv[i])) {
			snprintf(err, errlen, "%s: the options are too long", what);
			return -1;
		}
	}
	return 0;
}

void device_kind_host_keys(const struct device_kind_desc *kind, char *out, size_t len)
{
	size_t at = 0;
	out[0] = '\0';
	for (const struct option_desc *o = kind->options; o && o->key && at < len; o++)
		if (o->host) {
			int n = snprintf(out + at, len - at, "%s%s%s", at ? ", " : "", o->key,
					 o->type == OPTION_FLAG ? "" : "=");
			at += n > 0 ? (size_t)n : 0;
		}
}
