/* The guest-triggerable warning limiter: a burst passes, the rest of the window is dropped,
 * and the next window opens with one line counting what was dropped. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "log_capture.h"
#include "base/log.h"

#define SEC 1000000000ULL

/* What was logged from capture_start() to capture_end() (malloc'd, NUL-terminated). */
static void capture_start(void)
{
	log_capture_clear();
}

static char *capture_end(void)
{
	return log_captured();
}

static unsigned count_lines(const char *text, const char *needle)
{
	unsigned n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

Test(log_ratelimit, burst_then_suppressed_then_count)
{
	struct log_ratelimit rl = {0};
	uint64_t t0 = 1000 * SEC;
	capture_start();
	for (int i = 0; i < LOG_RATELIMIT_BURST; i++)
		cr_assert(log_warn_ratelimited_at(&rl, t0 + (uint64_t)i, "bad thing %d", i));
	for (int i = 0; i < 25; i++)
		cr_assert(!log_warn_ratelimited_at(&rl, t0 + SEC, "bad thing %d", 100 + i));
	/* Still inside the window (just): dropped. */
	cr_assert(!log_warn_ratelimited_at(&rl, t0 + LOG_RATELIMIT_INTERVAL_S * SEC - 1, "late"));
	char *text = capture_end();
	cr_assert_eq(count_lines(text, "minivmm: warning: bad thing "), LOG_RATELIMIT_BURST, "%s",
		     text);
	cr_assert_null(strstr(text, "suppressed"), "%s", text);
	cr_assert_null(strstr(text, "bad thing 100"), "%s", text);
	free(text);

	/* The next window opens: the count of dropped lines, then the message itself. */
	capture_start();
	cr_assert(log_warn_ratelimited_at(&rl, t0 + LOG_RATELIMIT_INTERVAL_S * SEC, "again"));
	text = capture_end();
	cr_assert_str_eq(text, "minivmm: warning: 26 similar messages suppressed\n"
			       "minivmm: warning: again\n");
	free(text);

	/* A quiet window afterwards says nothing about suppression. */
	capture_start();
	cr_assert(log_warn_ratelimited_at(&rl, t0 + 20 * SEC, "later"));
	text = capture_end();
	cr_assert_str_eq(text, "minivmm: warning: later\n");
	free(text);
}

Test(log_ratelimit, zero_initialised_at_time_zero_and_wall_clock)
{
	struct log_ratelimit rl = {0};
	capture_start();
	/* A monotonic clock may read 0-ish; the first call still opens a window. */
	cr_assert(log_warn_ratelimited_at(&rl, 0, "first"));
	struct log_ratelimit live = {0};
	for (int i = 0; i < 3 * LOG_RATELIMIT_BURST; i++)
		log_warn_ratelimited(&live, "live %d", i);
	char *text = capture_end();
	cr_assert_eq(count_lines(text, "minivmm: warning: live "), LOG_RATELIMIT_BURST, "%s", text);
	free(text);
}
