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

bool options_append(char *out, size_t len, const struct option_kv *kv)
{
	size_t at = strlen(out);
	int n = snprintf(out + at, len - at, "%s%s%s%s", at ? "," : "", kv->key,
			 kv->has_value ? "=" : "", kv->has_value ? kv->value : "");
	return n >= 0 && (size_t)n < len - at;
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

/* ---- option tables ---- */

#define HELP_COLUMN 25

static const struct option_desc *find_desc(const struct option_desc *table, const char *key)
{
	for (const struct option_desc *d = table; d->key; d++)
		if (!strcmp(d->key, key))
			return d;
	return NULL;
}

static int unknown(const struct option_desc *table, const struct option_kv *kv, const char *what,
		   const char *also, char *err, size_t errlen)
{
	char expected[512] = "";
	size_t used = 0;
	for (const struct option_desc *d = table; d->key; d++) {
		int n = snprintf(expected + used, sizeof(expected) - used, "%s%s%s",
				 used ? ", " : "", d->key, d->type == OPTION_FLAG ? "" : "=");
		if (n > 0 && (size_t)n < sizeof(expected) - used)
			used += (size_t)n;
	}
	if (also)
		snprintf(expected + used, sizeof(expected) - used, "%s%s", used ? ", " : "", also);
	return option_unknown(kv, what, expected, err, errlen);
}

/* "a", "a or b", "a, b or c" */
static void choices_text(const struct option_choice *c, const char *sep, const char *last,
			 char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; c[i].name; i++) {
		const char *s = i == 0 ? "" : c[i + 1].name ? sep : last;
		int n = snprintf(buf + used, len - used, "%s%s", s, c[i].name);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

static void store(void *field, size_t size, int value)
{
	if (size == sizeof(bool))
		*(bool *)field = value != 0;
	else
		*(int *)field = value;
}

static int apply(const struct option_desc *d, const struct option_kv *kv, const char *what,
		 void *out, char *err, size_t errlen)
{
	void *field = (char *)out + d->offset;
	if (d->type == OPTION_FLAG) {
		if (kv->has_value) {
			snprintf(err, errlen, "%s: %s takes no value", what, kv->key);
			return -1;
		}
		*(bool *)field = true;
		return 0;
	}
	if (!kv->has_value) {
		if (d->type == OPTION_BOOL && d->bare_on) {
			*(bool *)field = true;
			return 0;
		}
		snprintf(err, errlen, "%s: %s needs a value", what, kv->key);
		return -1;
	}
	switch (d->type) {
	case OPTION_BOOL:
		return option_bool(kv, what, field, err, errlen);
	case OPTION_U32:
		return option_u32(kv, what, d->min, d->max, field, err, errlen);
	case OPTION_STRING: {
		size_t len = strlen(kv->value);
		if (len < d->min) {
			snprintf(err, errlen, "%s: %s needs a value", what, kv->key);
			return -1;
		}
		if (len >= d->size) {
			snprintf(err, errlen, "%s: %s '%s' is longer than %zu bytes", what, kv->key,
				 kv->value, d->size - 1);
			return -1;
		}
		memcpy(field, kv->value, len + 1);
		return 0;
	}
	case OPTION_ENUM:
		for (const struct option_choice *c = d->choices; c->name; c++)
			if (!strcmp(kv->value, c->name)) {
				store(field, d->size, c->value);
				return 0;
			}
		char names[128];
		choices_text(d->choices, ", ", " or ", names, sizeof(names));
		snprintf(err, errlen, "%s: invalid %s '%s' (expected %s)", what, kv->key, kv->value,
			 names);
		return -1;
	case OPTION_CUSTOM:
		return d->parse(kv, out, what, err, errlen);
	case OPTION_FLAG:
		break;
	}
	return 0;
}

int options_parse(const struct option_desc *table, const struct option_list *list, const char *what,
		  const char *also, void *out, char *err, size_t errlen)
{
	bool seen[OPTIONS_MAX * 2] = {false};
	for (int i = 0; i < list->n; i++) {
		const struct option_kv *kv = &list->kv[i];
		const struct option_desc *d = find_desc(table, kv->key);
		if (!d)
			return unknown(table, kv, what, also, err, errlen);
		if (apply(d, kv, what, out, err, errlen))
			return -1;
		if (d - table < (long)(sizeof(seen) / sizeof(seen[0])))
			seen[d - table] = true;
	}
	for (const struct option_desc *d = table; d->key; d++)
		if (d->required && !seen[d - table]) {
			snprintf(err, errlen, "%s: %s=%s is required", what, d->key,
				 d->arg ? d->arg : "");
			return -1;
		}
	return 0;
}

/* "key=ARG" as --help shows it. */
static void option_synopsis(const struct option_desc *d, char *buf, size_t len)
{
	char arg[128];
	if (d->type == OPTION_ENUM)
		choices_text(d->choices, "|", "|", arg, sizeof(arg));
	else if (d->type == OPTION_BOOL)
		snprintf(arg, sizeof(arg), "on|off");
	else
		snprintf(arg, sizeof(arg), "%s", d->arg ? d->arg : "VALUE");
	if (d->type == OPTION_FLAG)
		snprintf(buf, len, "%s", d->key);
	else
		snprintf(buf, len, "%s=%s", d->key, arg);
}

/* Print text at the help column: its first line after what is already on this one (col
 * characters), every further line ('\n'-separated) on its own. */
static void help_lines(FILE *f, int col, const char *text)
{
	if (col >= HELP_COLUMN) {
		fputc('\n', f);
		col = 0;
	}
	for (;;) {
		const char *nl = strchr(text, '\n');
		int len = nl ? (int)(nl - text) : (int)strlen(text);
		fprintf(f, "%*s%.*s\n", HELP_COLUMN - col, "", len, text);
		if (!nl)
			return;
		text = nl + 1;
		col = 0;
	}
}

void options_usage(FILE *f, const char *flag, bool needs_options, const char *help,
		   const struct option_desc *table)
{
	int col = fprintf(f, "  --%s%s", flag,
			  !table->key	  ? ""
			  : needs_options ? " OPTION,..."
					  : "[,OPTION,...]");
	help_lines(f, col, help);
	for (const struct option_desc *d = table; d->key; d++) {
		char syn[160], text[256];
		option_synopsis(d, syn, sizeof(syn));
		if (d->type == OPTION_U32)
			snprintf(text, sizeof(text), "%s; %u to %u", d->help, d->min, d->max);
		else if (d->type == OPTION_STRING)
			snprintf(text, sizeof(text), "%s%s; up to %zu bytes", d->help,
				 d->required ? " (required)" : "", d->size - 1);
		else
			snprintf(text, sizeof(text), "%s%s", d->help,
				 d->required ? " (required)" : "");
		help_lines(f, fprintf(f, "      %s", syn), text);
	}
}
