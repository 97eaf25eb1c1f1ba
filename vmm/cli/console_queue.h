/* A bounded byte queue with its own writer thread: the virtio console's output goes through one,
 * so that a slow or blocked stdout (a stopped terminal, a pipe nobody reads) stalls neither a
 * vCPU nor the I/O thread. The guest is held back instead: while the queue is full its
 * buffers stay unused, and the writer says when there is room again. */
#ifndef MINIVMM_CONSOLE_QUEUE_H
#define MINIVMM_CONSOLE_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONSOLE_QUEUE_BYTES (256u << 10)

struct console_queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint8_t *buf;
	size_t cap, head, len; /* a ring: len bytes from head */
	bool stop, running;
	bool want_room; /* a put found it full: call room() once the writer made some */
	pthread_t thread;
	/* Where the bytes go, on the queue's thread (it may block there). */
	void (*sink)(void *opaque, const uint8_t *buf, size_t len);
	void *sink_opaque;
	/* Room after a put that did not fit: on the queue's thread; must not block. */
	void (*room)(void *opaque);
	void *room_opaque;
};

/* cap bytes; the thread starts at once (before the seccomp filters: it narrows its own before
 * its first write). 0, or -1 (logged). */
int console_queue_start(struct console_queue *q, size_t cap,
			void (*sink)(void *opaque, const uint8_t *buf, size_t len),
			void *sink_opaque);
/* Copy what fits of buf; returns how many bytes that was. Never blocks on the sink. */
size_t console_queue_put(struct console_queue *q, const uint8_t *buf, size_t len);
/* Write everything queued, then stop the thread and free the queue. */
void console_queue_stop(struct console_queue *q);

#endif
