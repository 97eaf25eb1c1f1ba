/* A small strict JSON subset for the control socket: parse one flat object whose values are
 * strings, integers or booleans; write objects and arrays with proper string escaping. */
#ifndef MINIVMM_JSON_H
#define MINIVMM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_MEMBERS 16
#define JSON_MAX_KEY	 64
#define JSON_MAX_STRING	 256
#define JSON_MAX_DEPTH	 8

enum json_type { JSON_STRING, JSON_INT, JSON_BOOL };

struct json_member {
	char key[JSON_MAX_KEY];
	enum json_type type;
	char str[JSON_MAX_STRING]; /* JSON_STRING: UTF-8, NUL-terminated (\u0000 is refused) */
	int64_t num;		   /* JSON_INT */
	bool boolean;		   /* JSON_BOOL */
};

struct json_object {
	int n;
	struct json_member m[JSON_MAX_MEMBERS];
};

/* Parse exactly one object (surrounding whitespace allowed) from text[0..len). Nested values,
 * arrays, null, fractions and exponents, duplicate keys, invalid UTF-8 and over-long keys or
 * strings are refused. Returns 0, or -1 with a one-line reason in err. */
int json_parse_object(const char *text, size_t len, struct json_object *out, char *err,
		      size_t errlen);
/* The member named key, or NULL. */
const struct json_member *json_get(const struct json_object *o, const char *key);

/* A growing output buffer; errors (allocation, nesting) are sticky and reported by
 * json_writer_finish. */
struct json_writer {
	char *buf;
	size_t len, cap;
	bool failed;
	int depth;
	bool first[JSON_MAX_DEPTH]; /* no member/element written yet at this level */
	bool after_key;
};

void json_writer_init(struct json_writer *w);
/* NUL-terminated text (the caller frees it), or NULL if anything failed. */
char *json_writer_finish(struct json_writer *w, size_t *len);
void json_writer_free(struct json_writer *w);

void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);
void json_key(struct json_writer *w, const char *key);
void json_string(struct json_writer *w, const char *s);
void json_int(struct json_writer *w, int64_t v);
void json_uint(struct json_writer *w, uint64_t v);
void json_bool(struct json_writer *w, bool v);
/* An object member: key then value. */
void json_member_string(struct json_writer *w, const char *key, const char *s);
void json_member_int(struct json_writer *w, const char *key, int64_t v);
void json_member_uint(struct json_writer *w, const char *key, uint64_t v);
void json_member_bool(struct json_writer *w, const char *key, bool v);

#endif
