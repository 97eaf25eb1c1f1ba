/* The I/O loop's bottom halves and timers: each scheduled callback runs exactly once per
 * scheduling, none is lost when callbacks schedule each other, timers fire once; adaptive
 * polling: a poll that always finds work still serves the fds, work found when polling ends
 * is run without sleeping, and nothing is polled where the loop would not sleep. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/event_loop.h"

static struct event_loop loop;
static struct bottom_half a, b, c;
static int ran_a, ran_b, ran_c;

static void run_b(void *o)
{
	(void)o;
	ran_b++;
}

static void run_c(void *o)
{
	(void)o;
	ran_c++;
}

/* A reschedules B (queued after A) and C: neither may be lost or run twice in this pass. */
static void run_a(void *o)
{
	(void)o;
	ran_a++;
	bottom_half_schedule(&loop, &b);
	bottom_half_schedule(&loop, &c);
}

static void setup(void)
{
	cr_assert_eq(event_loop_init(&loop), 0);
	bottom_half_init(&a, run_a, NULL);
	bottom_half_init(&b, run_b, NULL);
	bottom_half_init(&c, run_c, NULL);
	ran_a = ran_b = ran_c = 0;
}

static void teardown(void)
{
	event_loop_destroy(&loop);
}

TestSuite(event_loop, .init = setup, .fini = teardown);

Test(event_loop, bottom_halves_scheduling_each_other_are_not_lost)
{
	bottom_half_schedule(&loop, &a);
	bottom_half_schedule(&loop, &b);
	bottom_half_schedule(&loop, &a); /* already queued: no effect */
	event_loop_run_once(&loop, 0);
	cr_assert_eq(ran_a, 1);
	cr_assert_eq(ran_b, 1, "B was queued when A rescheduled it: it runs once, now");
	cr_assert_eq(ran_c, 0, "C was scheduled during the pass: it runs in the next one");
	event_loop_run_once(&loop, 0);
	cr_assert_eq(ran_c, 1, "C must not be lost");
	cr_assert_eq(ran_b, 1);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(ran_a + ran_b + ran_c, 3, "nothing runs without being scheduled");
}

static struct bottom_half self;
static int self_runs;

static void run_self(void *o)
{
	(void)o;
	if (++self_runs < 3)
		bottom_half_schedule(&loop, &self);
}

Test(event_loop, a_self_rescheduling_bottom_half_runs_once_per_pass)
{
	bottom_half_init(&self, run_self, NULL);
	bottom_half_schedule(&loop, &self);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(self_runs, 1);
	event_loop_run_once(&loop, 0);
	event_loop_run_once(&loop, 0);
	event_loop_run_once(&loop, 0);
	cr_assert_eq(self_runs, 3);
}

static int timer_fired;

static void on_timer(void *o)
{
	(void)o;
	timer_fired++;
}

Test(event_loop, timer_fires_once)
{
	struct event_timer t;
	cr_assert_eq(event_timer_init(&loop, &t, on_timer, NULL), 0);
	event_timer_arm(&t, 1000000); /* 1 ms */
	cr_assert(t.armed);
	while (!timer_fired)
		cr_assert_geq(event_loop_run_once(&loop, 1000), 0);
	cr_assert_eq(timer_fired, 1);
	cr_assert_not(t.armed);
	cr_assert_eq(event_loop_run_once(&loop, 20), 0, "a one-shot timer does not fire again");
	event_timer_arm(&t, 1000000);
	event_timer_cancel(&t);
	cr_assert_eq(event_loop_run_once(&loop, 20), 0, "a cancelled timer does not fire");
	cr_assert_eq(timer_fired, 1);
	event_timer_destroy(&loop, &t);
}

/* ---- adaptive polling (event_poller): the loop's side of the rules ---- */

static int begins, ends, fd_events;
static bool poll_finds, end_finds;
static struct event_poller poller;

static void p_begin(void *o)
{
	(void)o;
	begins++;
}

static bool p_poll(void *o)
{
	(void)o;
	return poll_finds;
}

/* Work that came after the last poll, before notifications were back on: schedule it. */
static bool p_end(void *o)
{
	(void)o;
	ends++;
	if (end_finds)
		bottom_half_schedule(&loop, &a);
	return end_finds;
}

static void on_fd(void *o, uint32_t events)
{
	(void)events;
	uint64_t v;
	cr_assert_eq(read(*(int *)o, &v, sizeof(v)), (ssize_t)sizeof(v));
	fd_events++;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void add_poller(bool finds, bool at_end)
{
	begins = ends = fd_events = 0;
	poll_finds = finds;
	end_finds = at_end;
	poller =
	    (struct event_poller){.begin = p_begin, .poll = p_poll, .end = p_end, .max_ns = 50000};
	event_loop_add_poller(&loop, &poller);
}

/* A guest that keeps its ring busy makes every poll find work: the loop still serves its fds in
 * the same pass (a tap frame, a kick, the control socket), and stays in poll mode. */
Test(event_loop, a_poll_that_always_finds_work_still_yields_to_fds)
{
	add_poller(true, false);
	int fd = eventfd(0, EFD_NONBLOCK);
	struct event_source src;
	cr_assert_eq(event_loop_add_fd(&loop, &src, fd, EPOLLIN, on_fd, &fd), 0);
	uint64_t one = 1;
	for (int i = 1; i <= 3; i++) {
		cr_assert_eq(write(fd, &one, sizeof(one)), (ssize_t)sizeof(one));
		event_loop_run_once(&loop, 2000);
		cr_assert_eq(fd_events, i, "pass %d: the ready fd was not served", i);
	}
	cr_assert_eq(begins, 1, "polling began once and went on");
	cr_assert_eq(ends, 0, "the loop never slept, so polling never ended");
	cr_assert_eq(loop.poll.polls_found, 3);
	event_loop_del_poller(&loop, &poller);
	event_loop_del_fd(&loop, &src);
	close(fd);
}

/* Polling ends before the loop sleeps; work the last look finds means no sleep. */
Test(event_loop, work_found_when_polling_ends_is_run_without_sleeping)
{
	add_poller(false, true);
	/* As on the I/O thread: scheduling a bottom half there does not wake the loop. */
	loop.tid = (pid_t)syscall(SYS_gettid);
	uint64_t t0 = mono_ms();
	event_loop_run_once(&loop, 3000);
	cr_assert_lt(mono_ms() - t0, 1500, "the loop slept with work found at the end of polling");
	cr_assert_eq(begins, 1);
	cr_assert_eq(ends, 1);
	cr_assert_eq(ran_a, 1, "the work scheduled at the end of polling ran");
	cr_assert_eq(loop.poll.polls, 1);
	cr_assert_eq(loop.poll.polls_found, 0);
	/* Without pollers the loop does not poll. */
	event_loop_del_poller(&loop, &poller);
	end_finds = false;
	event_loop_run_once(&loop, 1);
	cr_assert_eq(begins, 1);
	cr_assert_eq(loop.poll.polls, 1);
}

/* Only where the loop would sleep: with work already queued (timeout 0) nothing is polled. */
Test(event_loop, no_poll_phase_when_the_loop_would_not_sleep)
{
	add_poller(false, false);
	bottom_half_schedule(&loop, &b);
	event_loop_run_once(&loop, 1000);
	cr_assert_eq(ran_b, 1);
	cr_assert_eq(begins, 0);
	cr_assert_eq(loop.poll.polls, 0);
	event_loop_del_poller(&loop, &poller);
}

/* The events epoll has for fd in this process's epoll fd (its fdinfo), or -1 when not watched. */
static long epoll_mask_of(int fd)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", loop.epoll_fd);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	long mask = -1;
	while (fgets(line, sizeof(line), f)) {
		int tfd;
		unsigned events;
		if (sscanf(line, "tfd: %d events: %x", &tfd, &events) == 2 && tfd == fd)
			mask = events & (EPOLLIN | EPOLLOUT); /* ERR and HUP are always on */
	}
	fclose(f);
	return mask;
}

#define WATCH_TOGGLES 100000

struct toggler {
	struct event_watch *w;
	uint32_t bit;
	int wrong; /* times the bit was not what this thread had just made it */
};

/* Turns its own bit on and off; nobody else touches it, so after each change it must be as set. */
static void *toggle(void *opaque)
{
	struct toggler *t = opaque;
	for (int i = 0; i < WATCH_TOGGLES; i++) {
		bool on = !(i & 1);
		event_watch_change(t->w, on ? t->bit : 0, on ? 0 : t->bit);
		if (!!(event_watch_events(t->w) & t->bit) != on)
			t->wrong++;
	}
	return NULL;
}

static void no_event(void *opaque, uint32_t events)
{
	(void)opaque;
	(void)events;
}

/* A backend's watch has its EPOLLIN changed by one thread and its EPOLLOUT by another: no change
 * may undo the other's (a lost EPOLLIN stops receive for good), and epoll has what the mask says.
 */
Test(event_loop, two_threads_changing_a_watch_lose_no_change)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	struct event_watch w;
	event_watch_init(&w, &loop);
	cr_assert_eq(event_watch_add(&w, fd, 0, no_event, NULL), 0);
	struct toggler in = {.w = &w, .bit = EPOLLIN}, out = {.w = &w, .bit = EPOLLOUT};
	pthread_t a, b;
	cr_assert_eq(pthread_create(&a, NULL, toggle, &in), 0);
	cr_assert_eq(pthread_create(&b, NULL, toggle, &out), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	cr_expect_eq(in.wrong, 0, "EPOLLIN was undone %d times", in.wrong);
	cr_expect_eq(out.wrong, 0, "EPOLLOUT was undone %d times", out.wrong);
	/* Both ended off; now one on, and epoll agrees. */
	cr_assert_eq(event_watch_events(&w), 0);
	cr_assert_eq(epoll_mask_of(fd), 0);
	event_watch_change(&w, EPOLLIN, 0);
	cr_assert_eq(epoll_mask_of(fd), EPOLLIN);
	/* Removed once: the first remover says so, later changes do nothing. */
	cr_assert(event_watch_remove(&w));
	cr_assert_not(event_watch_remove(&w));
	event_watch_change(&w, EPOLLOUT, 0);
	cr_assert_eq(event_watch_events(&w), 0);
	cr_assert_eq(epoll_mask_of(fd), -1);
	event_watch_destroy(&w);
	close(fd);
}

/* ---- event_loop_flush: what was ready when it was called is handled before it returns ---- */

static int gate[2];	    /* the loop thread waits in a bottom half until the test writes it */
static int at_gate[2];	    /* ... after saying it is there */
static _Atomic int handled; /* the watched eventfd's handler ran */

static void wait_at_gate(void *o)
{
	(void)o;
	char c;
	cr_assert_eq(write(at_gate[1], "x", 1), 1);
	cr_assert_eq(read(gate[0], &c, 1), 1);
}

static void count_event(void *o, uint32_t events)
{
	(void)events;
	uint64_t v;
	if (read(*(int *)o, &v, sizeof(v)) == sizeof(v))
		handled++;
}

Test(event_loop, flush_returns_once_what_was_ready_is_handled)
{
	cr_assert_eq(pipe(gate), 0);
	cr_assert_eq(pipe(at_gate), 0);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct event_source src;
	cr_assert_eq(event_loop_add_fd(&loop, &src, efd, EPOLLIN, count_event, &efd), 0);
	cr_assert_eq(event_loop_start(&loop, NULL, NULL, NULL), 0);
	struct bottom_half hold;
	bottom_half_init(&hold, wait_at_gate, NULL);
	bottom_half_schedule(&loop, &hold);
	char c;
	cr_assert_eq(read(at_gate[0], &c, 1), 1); /* the loop is held from here */
	uint64_t one = 1;
	cr_assert_eq(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	/* The loop is held: a flush cannot have been reached, however long it is given. */
	cr_assert_eq(event_loop_flush(&loop, 100), -1, "flush returned while the loop was held");
	cr_assert_eq(handled, 0);
	cr_assert_eq(write(gate[1], "x", 1), 1);
	cr_assert_eq(event_loop_flush(&loop, 5000), 0);
	cr_assert_eq(handled, 1, "the event ready before the flush was not handled by its end");
	/* A second event, then a flush: handled too (the timed-out flush's bottom half is gone). */
	cr_assert_eq(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	cr_assert_eq(event_loop_flush(&loop, 5000), 0);
	cr_assert_eq(handled, 2);
	event_loop_stop(&loop);
	event_loop_del_fd(&loop, &src);
	close(efd);
	close(gate[0]);
	close(gate[1]);
	close(at_gate[0]);
	close(at_gate[1]);
}
