#include "console_queue.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/thread_sandbox.h"

static void *writer(void *arg)
{
	struct console_queue *q = arg;
	pthread_setname_np(pthread_self(), "console-out");
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->len && !q->stop)
			pthread_cond_wait(&q->cond, &q->lock);
		if (!q->len)
			break; /* stopped, and everything written */
		/* The contiguous part from head; the sink runs without the lock, so puts go on. */
		size_t n = q->cap - q->head < q->len ? q->cap - q->head : q->len;
		const uint8_t *at = q->buf + q->head;
		pthread_mutex_unlock(&q->lock);
		/* Started before the process-wide filter: narrowed before the first write. A
		 * thread that cannot be narrowed must not write: what is queued is dropped. */
		if (!thread_sandbox_narrow(SANDBOX_CONSOLE_OUT))
			q->sink(q->sink_opaque, at, n);
		pthread_mutex_lock(&q->lock);
		q->head = (q->head + n) % q->cap;
		q->len -= n;
		bool room = q->want_room;
		q->want_room = false;
		if (room && q->room) {
			pthread_mutex_unlock(&q->lock);
			q->room(q->room_opaque);
			pthread_mutex_lock(&q->lock);
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int console_queue_start(struct console_queue *q, size_t cap,
			void (*sink)(void *opaque, const uint8_t *buf, size_t len),
			void *sink_opaque)
{
	memset(q, 0, sizeof(*q));
	q->buf = malloc(cap);
	if (!q->buf) {
		log_error("console output: out of memory");
		return -1;
	}
	q->cap = cap;
	q->sink = sink;
	q->sink_opaque = sink_opaque;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	int rc = pthread_create(&q->thread, NULL, writer, q);
	if (rc) {
		log_error("cannot start the console output thread: %s", strerror(rc));
		free(q->buf);
		q->buf = NULL;
		return -1;
	}
	q->running = true;
	return 0;
}

size_t console_queue_put(struct console_queue *q, const uint8_t *buf, size_t len)
{
	pthread_mutex_lock(&q->lock);
	size_t room = q->cap - q->len;
	size_t n = len < room ? len : room;
	size_t tail = (q->head + q->len) % q->cap;
	size_t first = q->cap - tail < n ? q->cap - tail : n;
	memcpy(q->buf + tail, buf, first);
	memcpy(q->buf, buf + first, n - first);
	bool was_empty = !q->len;
	q->len += n;
	if (n < len)
		q->want_room = true;
	if (was_empty && n)
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	return n;
}

void console_queue_stop(struct console_queue *q)
{
	if (q->running) {
		pthread_mutex_lock(&q->lock);
		q->stop = true;
		pthread_cond_signal(&q->cond);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->thread, NULL);
		q->running = false;
		pthread_cond_destroy(&q->cond);
		pthread_mutex_destroy(&q->lock);
	}
	free(q->buf);
	q->buf = NULL;
}
