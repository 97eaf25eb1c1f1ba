/* Installs the unit tests' log sink before any test runs (log_capture.h). */
#include "log_capture.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define CAPTURE_MAX (64 * 1024)

static struct {
	pthread_mutex_t lock; /* devices log from their own threads */
	char text[CAPTURE_MAX];
	size_t len;
	int echo;
} capture = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void capture_line(void *opaque, const char *line)
{
	(void)opaque;
	pthread_mutex_lock(&capture.lock);
	size_t n = strlen(line);
	if (capture.len + n + 1 < CAPTURE_MAX) {
		memcpy(capture.text + capture.len, line, n);
		capture.text[capture.len + n] = '\n';
		capture.len += n + 1;
	}
	if (capture.echo)
		fprintf(stderr, "%s\n", line);
	pthread_mutex_unlock(&capture.lock);
}

char *log_captured(void)
{
	pthread_mutex_lock(&capture.lock);
	char *copy = strndup(capture.text, capture.len);
	pthread_mutex_unlock(&capture.lock);
	return copy;
}

void log_capture_clear(void)
{
	pthread_mutex_lock(&capture.lock);
	capture.len = 0;
	pthread_mutex_unlock(&capture.lock);
}

__attribute__((constructor)) static void log_capture_install(void)
{
	const char *echo = getenv("MINIVMM_TEST_LOG");
	capture.echo = echo && *echo && strcmp(echo, "0");
	log_set_sink(capture_line, NULL);
}
