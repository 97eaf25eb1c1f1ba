/* The host's monotonic clock in nanoseconds: the one time base for timers, rate limits, lock
 * hold samples, idle deadlines and start-up marks. */
#ifndef MINIVMM_BASE_CLOCK_H
#define MINIVMM_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
