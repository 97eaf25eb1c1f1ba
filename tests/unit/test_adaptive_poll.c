/* Adaptive polling's policy (base/adaptive_poll.h) on a fake clock: the window's start,
 * growth, shrinking and bound; a poll phase that finds nothing ends at its window, one whose
 * clock stands still ends at its round budget, one that finds work ends at once; the fds are
 * asked every ADAPTIVE_POLL_FD_EVERY rounds. */
#include <criterion/criterion.h>

#include "base/adaptive_poll.h"

/* ---- a fake clock and fake checks ---- */

static uint64_t clock_ns, tick_ns; /* each clock read advances the clock by tick_ns */
static unsigned polls, fd_polls;
static unsigned work_at, fds_at; /* the poll (fd poll) with this number finds work; 0: never */

static uint64_t fake_now(void *o)
{
	(void)o;
	clock_ns += tick_ns;
	return clock_ns;
}

static bool fake_poll(void *o)
{
	(void)o;
	/* A poll that never ends would spin here for ever: fail instead. */
	cr_assert_lt(++polls, 1000000, "the poll phase does not end");
	return polls == work_at;
}

static bool fake_poll_fds(void *o)
{
	(void)o;
	return ++fd_polls == fds_at;
}

static const struct adaptive_poll_ops ops = {
    .now_ns = fake_now, .poll = fake_poll, .poll_fds = fake_poll_fds};

static void reset_fakes(uint64_t tick)
{
	clock_ns = 1000000;
	tick_ns = tick;
	polls = fd_polls = work_at = fds_at = 0;
}

Test(adaptive_poll, off_never_polls_and_never_grows)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 0, 0, 0);
	cr_assert_eq(p.window_ns, 0);
	for (int i = 0; i < 10; i++)
		adaptive_poll_update(&p, 100);
	cr_assert_eq(p.window_ns, 0, "a bound of 0 means no polling at all");
}

Test(adaptive_poll, window_starts_at_the_initial_window_within_the_bound)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	cr_assert_eq(p.window_ns, ADAPTIVE_POLL_INITIAL_NS);
	adaptive_poll_init(&p, 1000, 0, 0);
	cr_assert_eq(p.window_ns, 1000, "never beyond the bound, from the start");
	adaptive_poll_init(&p, 5ULL * ADAPTIVE_POLL_MAX_NS, 0, 0);
	cr_assert_eq(p.max_ns, ADAPTIVE_POLL_MAX_NS);
}

/* A wait between the window and the bound: a longer window would have caught it. */
Test(adaptive_poll, grows_by_grow_up_to_the_bound_and_never_beyond)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	adaptive_poll_update(&p, 5000);
	cr_assert_eq(p.window_ns, 8000, "4 us times 2");
	adaptive_poll_update(&p, 9000);
	cr_assert_eq(p.window_ns, 16000);
	adaptive_poll_update(&p, 49000);
	cr_assert_eq(p.window_ns, 32000);
	for (int i = 0; i < 100; i++) {
		adaptive_poll_update(&p, 50000);
		cr_assert_leq(p.window_ns, 50000, "the window passed the bound: %llu",
			      (unsigned long long)p.window_ns);
	}
	cr_assert_eq(p.window_ns, 50000, "it grows to the bound itself");
	cr_assert_eq(p.grows, 4);
	adaptive_poll_init(&p, 50000, 4, 0);
	adaptive_poll_update(&p, 5000);
	cr_assert_eq(p.window_ns, 16000, "grow=4");
}

/* A wait within the window: polling caught it (or it was there at once); nothing changes. */
Test(adaptive_poll, a_wait_within_the_window_changes_nothing)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	adaptive_poll_update(&p, 0);
	adaptive_poll_update(&p, 3000);
	adaptive_poll_update(&p, ADAPTIVE_POLL_INITIAL_NS);
	cr_assert_eq(p.window_ns, ADAPTIVE_POLL_INITIAL_NS);
	cr_assert_eq(p.grows + p.shrinks, 0);
}

/* A wait beyond the bound: no window allowed would have caught it. */
Test(adaptive_poll, shrinks_after_a_wait_beyond_the_bound_and_regrows)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	adaptive_poll_update(&p, 20000);
	adaptive_poll_update(&p, 20000);
	cr_assert_eq(p.window_ns, 16000);
	adaptive_poll_update(&p, 50001);
	cr_assert_eq(p.window_ns, 0, "shrink 0: reset, as QEMU's default");
	cr_assert_eq(p.shrinks, 1);
	adaptive_poll_update(&p, 1000000);
	cr_assert_eq(p.shrinks, 1, "already 0: no change counted");
	adaptive_poll_update(&p, 10);
	cr_assert_eq(p.window_ns, ADAPTIVE_POLL_INITIAL_NS, "short waits again: polling restarts");
	adaptive_poll_init(&p, 50000, 0, 2);
	adaptive_poll_update(&p, 20000);
	adaptive_poll_update(&p, 20000);
	adaptive_poll_update(&p, 60000);
	cr_assert_eq(p.window_ns, 8000, "shrink=2 halves it");
}

/* Several pollers on one loop: the largest bound holds; a smaller one changes nothing. */
Test(adaptive_poll, raising_the_bound)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 0, 0, 0);
	adaptive_poll_raise_bound(&p, 20000);
	cr_assert_eq(p.window_ns, ADAPTIVE_POLL_INITIAL_NS);
	adaptive_poll_raise_bound(&p, 10000);
	cr_assert_eq(p.max_ns, 20000);
}

Test(adaptive_poll, a_phase_that_finds_nothing_ends_at_its_window)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	reset_fakes(100);
	uint64_t start = clock_ns + tick_ns;
	cr_assert_not(adaptive_poll_run(&p, &ops, NULL));
	cr_assert_geq(clock_ns - start, ADAPTIVE_POLL_INITIAL_NS, "ended early");
	/* One clock read per round, 100 ns each: 40 rounds in 4 us. */
	cr_assert_eq(polls, ADAPTIVE_POLL_INITIAL_NS / 100, "%u polls in a 4 us window", polls);
	cr_assert_eq(fd_polls, polls / ADAPTIVE_POLL_FD_EVERY, "fds every %d rounds",
		     ADAPTIVE_POLL_FD_EVERY);
	cr_assert_eq(p.polls, 1);
	cr_assert_eq(p.polls_found, 0);
	cr_assert_eq(p.poll_ns, ADAPTIVE_POLL_INITIAL_NS);
}

/* A clock that stands still (or a round faster than any real one) cannot keep it spinning. */
Test(adaptive_poll, a_phase_on_a_stopped_clock_ends_at_its_round_budget)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	reset_fakes(0);
	cr_assert_not(adaptive_poll_run(&p, &ops, NULL));
	cr_assert_eq(polls, ADAPTIVE_POLL_INITIAL_NS / ADAPTIVE_POLL_MIN_ROUND_NS + 1);
	/* A clock that goes back ends it at once. */
	reset_fakes((uint64_t)-1);
	cr_assert_not(adaptive_poll_run(&p, &ops, NULL));
	cr_assert_eq(polls, 1);
}

Test(adaptive_poll, a_phase_ends_at_the_first_work_found)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	reset_fakes(100);
	work_at = 5;
	cr_assert(adaptive_poll_run(&p, &ops, NULL));
	cr_assert_eq(polls, 5, "it must not go on polling after finding work");
	cr_assert_eq(p.polls_found, 1);
	cr_assert_eq(p.poll_ns, 500);
	/* Found by the fd check (a tap frame, a kick of another device). */
	reset_fakes(100);
	fds_at = 2;
	cr_assert(adaptive_poll_run(&p, &ops, NULL));
	cr_assert_eq(polls, 2 * ADAPTIVE_POLL_FD_EVERY);
	cr_assert_eq(p.polls, 2);
	cr_assert_eq(p.polls_found, 2);
}

/* A phase after the window shrank to 0 polls once (one round), and ends. */
Test(adaptive_poll, a_zero_window_polls_once)
{
	struct adaptive_poll p;
	adaptive_poll_init(&p, 50000, 0, 0);
	adaptive_poll_update(&p, 60000);
	cr_assert_eq(p.window_ns, 0);
	reset_fakes(100);
	cr_assert_not(adaptive_poll_run(&p, &ops, NULL));
	cr_assert_eq(polls, 1);
}
