#include "json.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

struct parser {
	const unsigned char *p, *end;
	char *err;
	size_t errlen;
};

static int perr(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ps->err, ps->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		len = 2, cp = c & 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		len = 3, cp = c & 0x0f, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		len = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int hex4(struct parser *ps, uint32_t *out)
{
	if (ps->end - ps->p < 4)
		return perr(ps, "truncated \\u escape");
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char c = *ps->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return perr(ps, "invalid \\u escape");
	}
	*out = v;
	return 0;
}

/* Append a code point as UTF-8 to out (capacity cap, keeping room for the NUL). */
static int put_cp(char *out, size_t cap, size_t *n, uint32_t cp)
{
	unsigned char b[4];
	size_t k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	static const unsigned char lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
	for (size_t i = k - 1; i > 0; i--) {
		b[i] = (unsigned char)(0x80 | (cp & 0x3f));
		cp >>= 6;
	}
	b[0] = (unsigned char)(lead[k] | cp);
	if (*n + k >= cap)
		return -1;
	memcpy(out + *n, b, k);
	*n += k;
	return 0;
}

static int parse_string(struct parser *ps, char *out, size_t cap, const char *what)
{
	size_t n = 0;
	ps->p++; /* opening quote */
	for (;;) {
		if (ps->p >= ps->end)
			return perr(ps, "unterminated string");
		unsigned char c = *ps->p;
		if (c == '"') {
			ps->p++;
			out[n] = '\0';
			return 0;
		}
		if (c < 0x20)
			return perr(ps, "control character in string");
		if (c == '\\') {
			ps->p++;
			if (ps->p >= ps->end)
				return perr(ps, "unterminated string");
			uint32_t cp;
			switch (*ps->p++) {
			case '"':
				cp = '"';
				break;
			case '\\':
				cp = '\\';
				break;
			case '/':
				cp = '/';
				break;
			case 'b':
				cp = '\b';
				break;
			case 'f':
				cp = '\f';
				break;
			case 'n':
				cp = '\n';
				break;
			case 'r':
				cp = '\r';
				break;
			case 't':
				cp = '\t';
				break;
			case 'u':
				if (hex4(ps, &cp))
					return -1;
				if (cp >= 0xdc00 && cp <= 0xdfff)
					return perr(ps, "unpaired surrogate in \\u escape");
				if (cp >= 0xd800 && cp <= 0xdbff) {
					uint32_t lo;
					if (ps->end - ps->p < 2 || ps->p[0] != '\\' ||
					    ps->p[1] != 'u')
						return perr(ps, "unpaired surrogate in \\u escape");
					ps->p += 2;
					if (hex4(ps, &lo))
						return -1;
					if (lo < 0xdc00 || lo > 0xdfff)
						return perr(ps, "unpaired surrogate in \\u escape");
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				}
				if (cp == 0)
					return perr(ps, "\\u0000 is not allowed in strings");
				break;
			default:
				return perr(ps, "invalid escape in string");
			}
			if (put_cp(out, cap, &n, cp))
				return perr(ps, "%s too long (at most %zu bytes)", what, cap - 1);
			continue;
		}
		size_t k = utf8_len(ps->p, (size_t)(ps->end - ps->p));
		if (!k)
			return perr(ps, "invalid UTF-8 in string");
		if (n + k >= cap)
			return perr(ps, "%s too long (at most %zu bytes)", what, cap - 1);
		memcpy(out + n, ps->p, k);
		n += k;
		ps->p += k;
	}
}

/* JSON number grammar, integers only: -?(0|[1-9][0-9]*), within int64. */
static int parse_int(struct parser *ps, int64_t *out)
{
	bool neg = false;
	if (*ps->p == '-') {
		neg = true;
		ps->p++;
	}
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		return perr(ps, "invalid number");
	if (*ps->p == '0' && ps->p + 1 < ps->end && ps->p[1] >= '0' && ps->p[1] <= '9')
		return perr(ps, "invalid number (leading zero)");
	uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		unsigned d = *ps->p++ - '0';
		if (v > (limit - d) / 10)
			return perr(ps, "number out of range");
		v = v * 10 + d;
	}
	if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))
		return perr(ps, "only integer numbers are supported");
	/* -(INT64_MAX + 1) without signed overflow. */
	*out = neg ? (v ? -(int64_t)(v - 1) - 1 : 0) : (int64_t)v;
	return 0;
}

static bool literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return false;
	ps->p += n;
	return true;
}

static int parse_value(struct parser *ps, struct json_member *m)
{
	if (ps->p >= ps->end)
		return perr(ps, "missing value");
	unsigned char c = *ps->p;
	if (c == '"') {
		m->type = JSON_STRING;
		return parse_string(ps, m->str, sizeof(m->str), "string");
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		m->type = JSON_INT;
		return parse_int(ps, &m->num);
	}
	if (literal(ps, "true") || literal(ps, "false")) {
		m->type = JSON_BOOL;
		m->boolean = ps->p[-1] == 'e' && ps->p[-2] == 'u';
		return 0;
	}
	if (literal(ps, "null"))
		return perr(ps, "null values are not supported");
	if (c == '{' || c == '[')
		return perr(ps, "nested objects and arrays are not supported");
	return perr(ps, "invalid value");
}

int json_parse_object(const char *text, size_t len, struct json_object *out, char *err,
		      size_t errlen)
{
	struct parser ps = {(const unsigned char *)text, (const unsigned char *)text + len, err,
			    errlen};
	out->n = 0;
	skip_ws(&ps);
	if (ps.p >= ps.end || *ps.p != '{')
		return perr(&ps, "expected a JSON object");
	ps.p++;
	skip_ws(&ps);
	if (ps.p < ps.end && *ps.p == '}') {
		ps.p++;
	} else {
		for (;;) {
			skip_ws(&ps);
			if (ps.p >= ps.end || *ps.p != '"')
				return perr(&ps, "expected a string key");
			if (out->n == JSON_MAX_MEMBERS)
				return perr(&ps, "too many members (at most %d)", JSON_MAX_MEMBERS);
			struct json_member *m = &out->m[out->n];
			memset(m, 0, sizeof(*m));
			if (parse_string(&ps, m->key, sizeof(m->key), "key"))
				return -1;
			if (json_get(out, m->key))
				return perr(&ps, "duplicate key \"%s\"", m->key);
			skip_ws(&ps);
			if (ps.p >= ps.end || *ps.p != ':')
				return perr(&ps, "expected ':' after a key");
			ps.p++;
			skip_ws(&ps);
			if (parse_value(&ps, m))
				return -1;
			out->n++;
			skip_ws(&ps);
			if (ps.p < ps.end && *ps.p == ',') {
				ps.p++;
				continue;
			}
			if (ps.p < ps.end && *ps.p == '}') {
				ps.p++;
				break;
			}
			return perr(&ps, "expected ',' or '}'");
		}
	}
	skip_ws(&ps);
	if (ps.p != ps.end)
		return perr(&ps, "unexpected data after the object");
	return 0;
}

const struct json_member *json_get(const struct json_object *o, const char *key)
{
	for (int i = 0; i < o->n; i++)
		if (!strcmp(o->m[i].key, key))
			return &o->m[i];
	return NULL;
}

/* ---- writing ---- */

#define JSON_WRITER_MAX (1u << 20) /* far above any response; bounds a runaway writer */

void json_writer_init(struct json_writer *w)
{
	memset(w, 0, sizeof(*w));
	w->first[0] = true;
}

void json_writer_free(struct json_writer *w)
{
	free(w->buf);
	w->buf = NULL;
}

char *json_writer_finish(struct json_writer *w, size_t *len)
{
	if (w->failed || w->depth != 0 || !w->buf) {
		json_writer_free(w);
		return NULL;
	}
	if (len)
		*len = w->len;
	char *b = w->buf;
	w->buf = NULL;
	return b;
}

static void put(struct json_writer *w, const char *s, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n + 1)
			cap *= 2;
		char *b = cap <= JSON_WRITER_MAX ? realloc(w->buf, cap) : NULL;
		if (!b) {
			w->failed = true;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

/* Comma before a member or element, unless it is the first or follows its key. */
static void separate(struct json_writer *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (!w->first[w->depth])
		put(w, ",", 1);
	w->first[w->depth] = false;
}

static void open(struct json_writer *w, const char *c)
{
	separate(w);
	put(w, c, 1);
	if (w->depth + 1 >= JSON_MAX_DEPTH) {
		w->failed = true;
		return;
	}
	w->first[++w->depth] = true;
}

static void close_(struct json_writer *w, const char *c)
{
	if (w->depth == 0) {
		w->failed = true;
		return;
	}
	w->depth--;
	put(w, c, 1);
}

void json_begin_object(struct json_writer *w)
{
	open(w, "{");
}

void json_end_object(struct json_writer *w)
{
	close_(w, "}");
}

void json_begin_array(struct json_writer *w)
{
	open(w, "[");
}

void json_end_array(struct json_writer *w)
{
	close_(w, "]");
}

/* Quoted and escaped; invalid UTF-8 bytes become U+FFFD so the output is always valid. */
static void put_string(struct json_writer *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);
	put(w, "\"", 1);
	while (*p) {
		unsigned char c = *p;
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(w, esc, 2);
			p++, n--;
		} else if (c < 0x20 || c == 0x7f) {
			const char *short_form = c == '\n'   ? "\\n"
						 : c == '\r' ? "\\r"
						 : c == '\t' ? "\\t"
							     : NULL;
			if (short_form)
				put(w, short_form, 2);
			else {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				put(w, esc, 6);
			}
			p++, n--;
		} else {
			size_t k = utf8_len(p, n);
			if (k)
				put(w, (const char *)p, k);
			else
				put(w, "\\ufffd", 6);
			k = k ? k : 1;
			p += k, n -= k;
		}
	}
	put(w, "\"", 1);
}

void json_key(struct json_writer *w, const char *key)
{
	separate(w);
	put_string(w, key);
	put(w, ":", 1);
	w->after_key = true;
}

void json_string(struct json_writer *w, const char *s)
{
	separate(w);
	put_string(w, s);
}

void json_int(struct json_writer *w, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRId64, v);
	separate(w);
	put(w, b, (size_t)n);
}

void json_uint(struct json_writer *w, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRIu64, v);
	separate(w);
	put(w, b, (size_t)n);
}

void json_bool(struct json_writer *w, bool v)
{
	separate(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void json_member_string(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_string(w, s);
}

void json_member_int(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	json_int(w, v);
}

void json_member_uint(struct json_writer *w, const char *key, uint64_t v)
{
	json_key(w, key);
	json_uint(w, v);
}

void json_member_bool(struct json_writer *w, const char *key, bool v)
{
	json_key(w, key);
	json_bool(w, v);
}
