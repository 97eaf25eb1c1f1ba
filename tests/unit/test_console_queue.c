/* The virtio console's output queue: a put never waits for the sink (a blocked stdout), takes
 * what fits and says so; once the writer made room it calls room(); every byte reaches the sink
 * once, in order; stopping writes what is queued first. */
#include <criterion/criterion.h>
#include <semaphore.h>
#include <string.h>

#include "vmm/cli/console_queue.h"

#define CAP 1000

static struct console_queue q;
static uint8_t got[64 * CAP];
static size_t got_len;
static sem_t gate;     /* the sink waits here before each write: a blocked stdout */
static sem_t in_sink;  /* posted when the sink is entered */
static sem_t room_sem; /* posted by room() */
static bool gated;

static void sink(void *opaque, const uint8_t *buf, size_t len)
{
	(void)opaque;
	sem_post(&in_sink);
	if (gated)
		sem_wait(&gate);
	cr_assert_leq(got_len + len, sizeof(got));
	memcpy(got + got_len, buf, len);
	got_len += len;
}

static void room(void *opaque)
{
	(void)opaque;
	sem_post(&room_sem);
}

static uint8_t pattern(size_t k)
{
	return (uint8_t)(k * 131 + (k >> 8));
}

static void setup(void)
{
	got_len = 0;
	gated = true;
	sem_init(&gate, 0, 0);
	sem_init(&in_sink, 0, 0);
	sem_init(&room_sem, 0, 0);
	cr_assert_eq(console_queue_start(&q, CAP, sink, NULL), 0);
	q.room = room;
}

TestSuite(console_queue, .init = setup);

Test(console_queue, blocked_sink_never_blocks_a_put)
{
	static uint8_t data[3 * CAP];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	/* The first put wakes the writer, which blocks in the sink with those 100 bytes. */
	cr_assert_eq(console_queue_put(&q, data, 100), 100);
	sem_wait(&in_sink);
	/* The writer holds them until the sink returns: 900 more fit, then no more. */
	cr_assert_eq(console_queue_put(&q, data + 100, 2000), CAP - 100);
	cr_assert_eq(console_queue_put(&q, data + CAP, 10), 0, "full: nothing taken");
	/* Unblock: the writer finishes and says there is room. */
	gated = false;
	sem_post(&gate);
	sem_wait(&room_sem);
	size_t at = CAP;
	while (at < sizeof(data))
		at += console_queue_put(&q, data + at, sizeof(data) - at);
	console_queue_stop(&q); /* writes what is queued, then ends */
	cr_assert_eq(got_len, sizeof(data));
	for (size_t i = 0; i < sizeof(data); i++)
		cr_assert_eq(got[i], pattern(i), "byte %zu", i);
}

/* The ring wraps: many puts of odd sizes arrive whole and in order. */
Test(console_queue, wraps_in_order)
{
	gated = false;
	static uint8_t data[40 * CAP];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	size_t at = 0;
	while (at < sizeof(data)) {
		size_t want = sizeof(data) - at < 337 ? sizeof(data) - at : 337;
		at += console_queue_put(&q, data + at, want);
	}
	console_queue_stop(&q);
	cr_assert_eq(got_len, sizeof(data));
	cr_assert_eq(memcmp(got, data, sizeof(data)), 0);
}
