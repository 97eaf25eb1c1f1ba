/* Parsing device option strings such as "tap=tap0,mac=52:54:00:12:34:56,offload=off". */
#ifndef MINIVMM_OPTIONS_H
#define MINIVMM_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
/* Append "key[=value]" to the NUL-terminated out (len bytes), a comma first unless it is empty;
 * false when it does not fit. */
bool options_append(char *out, size_t len, const struct option_kv *kv);
/* Value helpers: each returns 0, or -1 with "<what>: invalid <key> '<value>' ..." in err. */
int option_bool(const struct option_kv *kv, const char *what, bool *out, char *err, size_t errlen);
int option_u32(const struct option_kv *kv, const char *what, uint32_t min, uint32_t max,
	       uint32_t *out, char *err, size_t errlen);
/* "unknown <what> option '<key>' (expected k1, k2, ...)". Always returns -1. */
int option_unknown(const struct option_kv *kv, const char *what, const char *expected, char *err,
		   size_t errlen);

/* A device's options, each described once: the table drives parsing, the error messages and the
 * --help text. */
enum option_type {
	OPTION_FLAG,   /* a bare key: sets a bool */
	OPTION_BOOL,   /* key=on|off (yes|no, 1|0) into a bool; bare_on: a bare key means on */
	OPTION_U32,    /* key=N, min to max, into a uint32_t */
	OPTION_STRING, /* key=TEXT, min to sizeof(field) - 1 bytes, into a char array */
	OPTION_ENUM,   /* key=NAME, one of choices: its value into a bool or an int-sized enum */
	OPTION_CUSTOM, /* key=VALUE handed to parse() with the whole options struct */
};

struct option_choice {
	const char *name;
	int value;
};

struct option_desc {
	const char *key;
	enum option_type type;
	size_t offset, size; /* the field in the options struct (OPTION_FIELD) */
	uint32_t min, max;   /* OPTION_U32: the range; OPTION_STRING: min is the shortest */
	const char *arg;     /* the value in --help ("NAME"); ENUM and BOOL derive theirs */
	const char *help;    /* one line for --help */
	const struct option_choice *choices; /* OPTION_ENUM, ended by {NULL, 0} */
	/* OPTION_CUSTOM: parse kv->value into out (the options struct); -1 with a reason in err. */
	int (*parse)(const struct option_kv *kv, void *out, const char *what, char *err,
		     size_t errlen);
	bool bare_on;  /* OPTION_BOOL: a bare key means on */
	bool required; /* "<what>: key=ARG is required" when missing */
	/* Names or opens a host resource (an image, a tap, a host port) or says how: a snapshot
	 * never saves it, a restore takes it from its own command line (--backend). */
	bool host;
};

#define OPTION_FIELD(type, field)                                                                  \
	.offset = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* Apply the options in list to out (already holding the defaults), as table (ended by {NULL})
 * describes them. Errors: "unknown <what> option '<key>' (expected <the keys>[, also])",
 * "<what>: <key> needs a value", "<what>: <key> takes no value", "<what>: invalid <key> '<value>'
 * (expected ...)", "<what>: <key> '<value>' is longer than N bytes", "<what>: key=ARG is
 * required". */
int options_parse(const struct option_desc *table, const struct option_list *list, const char *what,
		  const char *also, void *out, char *err, size_t errlen);
/* The --help text of a flag with these options: "  --<flag> OPTION,..." (or "[,OPTION,...]"
 * without required ones), its help lines, then one line per option. */
void options_usage(FILE *f, const char *flag, bool needs_options, const char *help,
		   const struct option_desc *table);

#endif
