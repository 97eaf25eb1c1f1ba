/* The I/O loop's bottom halves and timers: each scheduled callback runs exactly once per
 * scheduling, none is lost when callbacks schedule each other, timers fire once; adaptive
 * polling: a poll that always finds work still serves the fds, work found when polling ends
 * is run without sleeping, and nothing is polled where the loop would not sleep. */
#include <criterion/criterion.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vmm/base/event_loop.h"

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
