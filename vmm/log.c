#include "log.h"

#include <stdio.h>
#include <time.h>

/* The one piece of process-wide state outside the VM: whether --quiet was given. */
static bool quiet_mode;

void log_set_quiet(bool quiet)
{
	quiet_mode = quiet;
}

static void vlog(const char *level, const char *fmt, va_list ap)
{
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fprintf(stderr, "minivmm: %s%s\n", level, buf);
}

void log_info(const char *fmt, ...)
{
	if (quiet_mode)
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
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	va_list ap;
	va_start(ap, fmt);
	vwarn_ratelimited(rl, (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec, fmt, ap);
	va_end(ap);
}
