#include "startup_timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

static const char *const step_names[STARTUP_NR_STEPS] = {
    [STARTUP_EXEC] = "exec",	   [STARTUP_ARGS] = "args",	  [STARTUP_KVM] = "kvm",
    [STARTUP_MEMORY] = "memory",   [STARTUP_DEVICES] = "devices", [STARTUP_LOAD] = "load",
    [STARTUP_TABLES] = "tables",   [STARTUP_VCPUS] = "vcpus",	  [STARTUP_OTHER] = "other",
    [STARTUP_SECCOMP] = "seccomp", [STARTUP_THREADS] = "threads", [STARTUP_GUEST] = "guest",
};

const char *startup_step_name(enum startup_step step)
{
	return (unsigned)step < STARTUP_NR_STEPS ? step_names[step] : "?";
}

/* A decimal number of nanoseconds, nothing else, that fits in int64_t. */
static bool parse_ns(const char *s, int64_t *out)
{
	int64_t v = 0;
	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (INT64_MAX - (*s - '0')) / 10)
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

void startup_timing_begin(struct startup_timing *t, int64_t main_ns, const char *t0_text)
{
	int64_t t0;
	*t = (struct startup_timing){.last_ns = main_ns};
	if (parse_ns(t0_text, &t0) && t0 <= main_ns) {
		t->from_exec = true;
		t->last_ns = t0;
		startup_timing_charge(t, STARTUP_EXEC, main_ns);
	}
}

void startup_timing_charge(struct startup_timing *t, enum startup_step step, int64_t now_ns)
{
	if (t->first_byte || (unsigned)step >= STARTUP_NR_STEPS)
		return;
	if (now_ns > t->last_ns) {
		t->step_ns[step] += now_ns - t->last_ns;
		t->last_ns = now_ns;
	}
	if (step == STARTUP_GUEST)
		t->first_byte = true;
}

/* "U.UUU" microseconds from nanoseconds (never negative here). */
static int format_us(char *buf, size_t len, int64_t ns)
{
	return snprintf(buf, len, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

int startup_timing_format(const struct startup_timing *t, char *buf, size_t len)
{
	char tmp[640];
	size_t n = 0;
	int64_t total = 0;
	n += (size_t)snprintf(tmp, sizeof(tmp), "startup-us:");
	for (int i = 0; i < STARTUP_NR_STEPS; i++) {
		n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, " %s=", step_names[i]);
		if (i == STARTUP_EXEC && !t->from_exec) {
			n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "-");
			continue;
		}
		n += (size_t)format_us(tmp + n, sizeof(tmp) - n, t->step_ns[i]);
		total += t->step_ns[i];
	}
	n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, " total=");
	n += (size_t)format_us(tmp + n, sizeof(tmp) - n, total);
	snprintf(tmp + n, sizeof(tmp) - n, " from=%s first_byte=%s", t->from_exec ? "exec" : "main",
		 t->first_byte ? "yes" : "no");
	return snprintf(buf, len, "%s", tmp);
}

bool startup_timing_enabled;
static struct startup_timing chain;
static bool first_byte_seen;

int64_t startup_now_ns(void)
{
	return (int64_t)clock_monotonic_ns();
}

void startup_timing_enable(int64_t main_ns)
{
	startup_timing_begin(&chain, main_ns, getenv(STARTUP_T0_ENV));
	startup_timing_enabled = true;
}

void startup_mark_slow(enum startup_step step)
{
	startup_timing_charge(&chain, step, startup_now_ns());
}

void startup_first_byte_slow(void)
{
	/* Any vCPU may write bytes; the first one ends the chain, once. */
	if (__atomic_exchange_n(&first_byte_seen, true, __ATOMIC_ACQ_REL))
		return;
	startup_timing_charge(&chain, STARTUP_GUEST, startup_now_ns());
}

void startup_timing_report(void)
{
	char line[640];
	if (!startup_timing_enabled)
		return;
	startup_timing_format(&chain, line, sizeof(line));
	fprintf(stderr, "minivmm: %s\n", line);
}
