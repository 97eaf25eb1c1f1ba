/* Adaptive polling's policy (adaptive_poll.h has the rules). */
#include "base/adaptive_poll.h"

static uint64_t initial_window(const struct adaptive_poll *p)
{
	return p->max_ns < ADAPTIVE_POLL_INITIAL_NS ? p->max_ns : ADAPTIVE_POLL_INITIAL_NS;
}

void adaptive_poll_init(struct adaptive_poll *p, uint64_t max_ns, unsigned grow, unsigned shrink)
{
	*p = (struct adaptive_poll){.grow = grow < 2 ? ADAPTIVE_POLL_GROW : grow, .shrink = shrink};
	adaptive_poll_raise_bound(p, max_ns);
}

void adaptive_poll_raise_bound(struct adaptive_poll *p, uint64_t max_ns)
{
	if (max_ns > ADAPTIVE_POLL_MAX_NS)
		max_ns = ADAPTIVE_POLL_MAX_NS;
	if (max_ns <= p->max_ns)
		return;
	bool started = p->max_ns != 0;
	p->max_ns = max_ns;
	if (!started)
		p->window_ns = initial_window(p);
}

bool adaptive_poll_run(struct adaptive_poll *p, const struct adaptive_poll_ops *ops, void *opaque)
{
	uint64_t window = p->window_ns;
	uint64_t budget = window / ADAPTIVE_POLL_MIN_ROUND_NS + 1;
	uint64_t start = ops->now_ns(opaque), now = start;
	bool found = false;
	for (uint64_t round = 1; !found; round++) {
		found = ops->poll(opaque);
		if (!found && ops->poll_fds && round % ADAPTIVE_POLL_FD_EVERY == 0)
			found = ops->poll_fds(opaque);
		now = ops->now_ns(opaque);
		/* A clock that went back reads as a huge elapsed time: the phase ends. */
		if (now - start >= window || round >= budget)
			break;
	}
	p->polls++;
	p->polls_found += found;
	if (now > start)
		p->poll_ns += now - start;
	return found;
}

void adaptive_poll_update(struct adaptive_poll *p, uint64_t waited_ns)
{
	if (!p->max_ns || waited_ns <= p->window_ns)
		return; /* off, or the sweet spot: polling caught it, or it was there at once */
	if (waited_ns > p->max_ns) {
		/* No window allowed would have caught it: poll less. */
		uint64_t w = p->shrink ? p->window_ns / p->shrink : 0;
		if (w != p->window_ns) {
			p->window_ns = w;
			p->shrinks++;
		}
	} else if (p->window_ns < p->max_ns) {
		/* A longer window would have caught it: poll longer, up to the bound. */
		uint64_t w = p->window_ns ? p->window_ns * p->grow : initial_window(p);
		p->window_ns = w > p->max_ns ? p->max_ns : w;
		p->grows++;
	}
}
