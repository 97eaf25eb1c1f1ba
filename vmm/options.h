/* Parsing device option strings such as "tap=tap0,mac=52:54:00:12:34:56,offload=off". */
#ifndef MINIVMM_OPTIONS_H
#define MINIVMM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OPTIONS_MAX	 16
#define OPTION_KEY_MAX	 32
#define OPTION_VALUE_MAX 256

struct option_kv {
	char key[OPTION_KEY_MAX];
	char value[OPTION_VALUE_MAX];
	bool has_value; /* "key=value" rather than a bare "key" */
};

struct option_list {
	struct option_kv kv[OPTIONS_MAX];
	int n;
};

/* Split "a=1,b,c=x" into key/value pairs. Empty entries, over-long keys or values and more than
 * OPTIONS_MAX entries are errors. what names the flag for messages ("--net"). */
int options_split(const char *s, const char *what, struct option_list *out, char *err,
		  size_t errlen);
/* Value helpers: each returns 0, or -1 with "<what>: invalid <key> '<value>' ..." in err. */
int option_bool(const struct option_kv *kv, const char *what, bool *out, char *err, size_t errlen);
int option_u32(const struct option_kv *kv, const char *what, uint32_t min, uint32_t max,
	       uint32_t *out, char *err, size_t errlen);
/* "unknown <what> option '<key>' (expected k1, k2, ...)". Always returns -1. */
int option_unknown(const struct option_kv *kv, const char *what, const char *expected, char *err,
		   size_t errlen);

#endif
