/* Diagnostics on stderr, prefixed with the program name. */
#ifndef MINIVMM_LOG_H
#define MINIVMM_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

void log_set_quiet(bool quiet);
/* Hand every line ("minivmm: warning: ...", no newline) to sink instead of stderr; NULL:
 * stderr again. For the unit tests, which capture what they log (tests/unit/log_capture.h). */
typedef void log_sink(void *opaque, const char *line);
void log_set_sink(log_sink *sink, void *opaque);
/* Informational line; suppressed by --quiet. */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define LOG_RATELIMIT_BURST	 10
#define LOG_RATELIMIT_INTERVAL_S 5

/* Per-call-site limiter for guest-triggerable warnings: at most LOG_RATELIMIT_BURST lines
 * per LOG_RATELIMIT_INTERVAL_S seconds, then one "N similar messages suppressed" line when
 * the next window opens. Zero-initialised is ready to use; not thread-safe (callers hold
 * their device's lock). */
struct log_ratelimit {
	bool started;
	uint64_t window_start_ns; /* CLOCK_MONOTONIC */
	unsigned printed;	  /* lines in the current window */
	uint64_t suppressed;	  /* lines dropped in the current window */
};

void log_warn_ratelimited(struct log_ratelimit *rl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same at a given time (ns, CLOCK_MONOTONIC); returns whether the line was printed.
 * Exposed for unit tests. */
bool log_warn_ratelimited_at(struct log_ratelimit *rl, uint64_t now_ns, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
