#include "log.h"

#include <stdarg.h>
#include <stdio.h>

/* The one piece of process-wide state outside the VM: whether --quiet was given. */
static bool quiet_mode;

void log_set_quiet(bool quiet)
{
	quiet_mode = quiet;
}

bool log_is_quiet(void)
{
	return quiet_mode;
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
