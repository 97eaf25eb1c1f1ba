#include "log.h"

#include <stdio.h>
#include <time.h>

#include "clock.h"

/* The one piece of process-wide state outside the VM: whether --quiet was given, and where
 * lines go (stderr, unless a sink is set). */
static struct {
	bool quiet;
	log_sink *sink;
	void *opaque;
} log_state;

void log_set_quiet(bool quiet)
{
	log_state.quiet = quiet;
}

void log_set_sink(log_sink *sink, void *opaque)
{
	log_state.sink = sink;
	log_state.opaque = opaque;
}

static void vlog(const char *level, const char *fmt, va_list ap)
{
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (log_state.sink) {
		char line[1100];
		snprintf(line, sizeof(line), "minivmm: %s%s", level, buf);
		log_state.sink(log_state.opaque, line);
		return;
	}
	fprintf(stderr, "minivmm: %s%s\n", level, buf);
}

void log_info(const char *fmt, ...)
{
	if (log_state.quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog("error: ", fmt, ap);
	va_end(ap);
}

static bool vwarn_ratelimited(struct log_ratelimit *rl, uint64_t now_ns, const char *fmt,
			      va_list ap)
{
	const uint64_t interval_ns = (uint64_t)LOG_RATELIMIT_INTERVAL_S * 1000000000ULL;
	if (!rl->started || now_ns - rl->window_start_ns >= interval_ns) {
		if (rl->suppressed)
			log_warn("%llu similar messages suppressed",
				 (unsigned long long)rl->suppressed);
		rl->started = true;
		rl->window_start_ns = now_ns;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	if (rl->printed >= LOG_RATELIMIT_BURST) {
		rl->suppressed++;
		return false;
	}
	rl->printed++;
	vlog("warning: ", fmt, ap);
	return true;
}

bool log_warn_ratelimited_at(struct log_ratelimit *rl, uint64_t now_ns, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bool printed = vwarn_ratelimited(rl, now_ns, fmt, ap);
	va_end(ap);
	return printed;
}

void log_warn_ratelimited(struct log_ratelimit *rl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn_ratelimited(rl, clock_monotonic_ns(), fmt, ap);
	va_end(ap);
}
