// What the netbench host tools (udpperf.c, tapsend.c, tapread.c) share: stopping on a signal,
// error exits and argument parsing. Each tool defines TOOL_NAME and TOOL_USAGE before including
// this.
#ifndef NETBENCH_TOOL_H
#define NETBENCH_TOOL_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

// A failed system call: the message and errno, exit status 1.
static void die(const char *what)
{
	fprintf(stderr, TOOL_NAME ": %s: %s\n", what, strerror(errno));
	exit(1);
}

// A bad command line: the message and the usage, exit status 2.
static void usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, TOOL_NAME ": %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "%s\n", TOOL_USAGE);
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long parse_long(const char *s, long min, long max, const char *name)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error("bad value for", name);
	return v;
}

#endif
