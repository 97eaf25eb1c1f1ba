/* Adaptive polling before the I/O thread sleeps, as QEMU's iothread poll-max-ns: the policy
 * alone, pure, with the clock and the checks injected (tests/unit/test_adaptive_poll.c).
 *
 * Rules:
 * - The window (how long one poll phase may spin) starts at ADAPTIVE_POLL_INITIAL_NS, or at
 *   the bound if that is smaller, and never exceeds the bound max_ns. max_ns 0: polling off.
 * - After every wait of the loop (the time from the start of a poll phase, or of a sleep, to
 *   the work that ended it), as QEMU's adjust_polling_time: a wait within the window changes
 *   nothing (polling caught it, or it was there at once); a wait longer than the bound shrinks
 *   the window (divided by shrink; shrink 0: to 0, QEMU's default), since no window allowed
 *   would have caught it; a wait between the window and the bound grows it (times grow; from
 *   0 it restarts at the initial window), capped at the bound.
 * - A poll phase ends at the first check that finds work, when the window has passed on the
 *   clock, or after a round budget (window_ns / ADAPTIVE_POLL_MIN_ROUND_NS rounds), so that a
 *   clock that stands still cannot keep it spinning. It never runs the work itself: the caller
 *   does, one batch, then serves its other sources before polling again (event_loop.c), so a
 *   burst that never ends still yields. */
#ifndef MINIVMM_ADAPTIVE_POLL_H
#define MINIVMM_ADAPTIVE_POLL_H

#include <stdbool.h>
#include <stdint.h>

#define ADAPTIVE_POLL_INITIAL_NS 4000ULL /* QEMU's first window too */
#define ADAPTIVE_POLL_MAX_NS	 1000000000ULL
#define ADAPTIVE_POLL_GROW	 2
#define ADAPTIVE_POLL_SHRINK	 0 /* reset to 0, as QEMU's poll-shrink=0 */
/* Every this many rounds the phase also asks the expensive check (a system call: fds). */
#define ADAPTIVE_POLL_FD_EVERY 8
/* No round is assumed shorter than this: the round budget is window / this. */
#define ADAPTIVE_POLL_MIN_ROUND_NS 8

struct adaptive_poll {
	uint64_t max_ns;    /* the bound; 0: never poll */
	uint64_t window_ns; /* the next phase's window, 0..max_ns */
	unsigned grow;	    /* multiplier, >= 2 */
	unsigned shrink;    /* divisor, or 0: reset to 0 */
	/* Counters: phases run, phases that found work, ns spent in phases, window changes. */
	uint64_t polls, polls_found, poll_ns, grows, shrinks;
};

struct adaptive_poll_ops {
	uint64_t (*now_ns)(void *opaque); /* monotonic */
	/* Cheap, no system call (rings in guest memory): is there work? */
	bool (*poll)(void *opaque);
	/* Expensive (one system call: the loop's fds): is anything else ready? May be NULL. */
	bool (*poll_fds)(void *opaque);
};

/* grow < 2 is taken as ADAPTIVE_POLL_GROW; max_ns is capped at ADAPTIVE_POLL_MAX_NS. */
void adaptive_poll_init(struct adaptive_poll *p, uint64_t max_ns, unsigned grow, unsigned shrink);
/* Raise the bound (several pollers on one loop: the loop polls for the largest). */
void adaptive_poll_raise_bound(struct adaptive_poll *p, uint64_t max_ns);
/* One poll phase of up to window_ns: true when a check found work. Counts it. */
bool adaptive_poll_run(struct adaptive_poll *p, const struct adaptive_poll_ops *ops, void *opaque);
/* The loop waited waited_ns for work (poll phase and sleep together): adjust the window. */
void adaptive_poll_update(struct adaptive_poll *p, uint64_t waited_ns);

#endif
