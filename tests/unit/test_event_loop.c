/* The I/O loop's bottom halves and timers: each scheduled callback runs exactly once per
 * scheduling, none is lost when callbacks schedule each other, timers fire once. */
#include <criterion/criterion.h>

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
