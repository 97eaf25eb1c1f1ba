#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int options_split(const char *s, const char *what, struct option_list *out, char *err,
		  size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return 0;
	const char *p = s;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0) {
			snprintf(err, errlen, "%s: empty option in '%s'", what, s);
			return -1;
		}
		if (out->n == OPTIONS_MAX) {
			snprintf(err, errlen, "%s: too many options", what);
			return -1;
		}
		struct option_kv *kv = &out->kv[out->n++];
		const char *eq = memchr(p, '=', len);
		size_t klen = eq ? (size_t)(eq - p) : len;
		size_t vlen = eq ? len - klen - 1 : 0;
		if (klen == 0 || klen >= OPTION_KEY_MAX || vlen >= OPTION_VALUE_MAX) {
			snprintf(err, errlen, "%s: invalid option '%.*s'", what, (int)len, p);
			return -1;
		}
		memcpy(kv->key, p, klen);
		if (eq) {
			memcpy(kv->value, eq + 1, vlen);
			kv->has_value = true;
		}
		if (!end)
			return 0;
		p = end + 1;
	}
}

int option_bool(const struct option_kv *kv, const char *what, bool *out, char *err, size_t errlen)
{
	if (!strcmp(kv->value, "on") || !strcmp(kv->value, "yes") || !strcmp(kv->value, "1")) {
		*out = true;
		return 0;
	}
	if (!strcmp(kv->value, "off") || !strcmp(kv->value, "no") || !strcmp(kv->value, "0")) {
		*out = false;
		return 0;
	}
	snprintf(err, errlen, "%s: invalid %s '%s' (expected on or off)", what, kv->key, kv->value);
	return -1;
}

int option_u32(const struct option_kv *kv, const char *what, uint32_t min, uint32_t max,
	       uint32_t *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(kv->value, &end, 10);
	if (!isdigit((unsigned char)kv->value[0]) || *end || errno || v < min || v > max) {
		snprintf(err, errlen, "%s: invalid %s '%s' (expected %u to %u)", what, kv->key,
			 kv->value, min, max);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int option_unknown(const struct option_kv *kv, const char *what, const char *expected, char *err,
		   size_t errlen)
{
	snprintf(err, errlen, "unknown %s option '%s' (expected %s)", what, kv->key, expected);
	return -1;
}
