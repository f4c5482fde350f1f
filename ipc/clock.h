/* clock.h - the monotonic clock in nanoseconds, for the supervisor and the probes alike. */
#ifndef GG_CLOCK_H
#define GG_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gg_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
