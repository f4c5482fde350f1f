/* clock_ns.h - the test workloads' clock reading: clock c (CLOCK_MONOTONIC, a thread's CPU time) in
 * nanoseconds. */
#ifndef GG_TEST_CLOCK_NS_H
#define GG_TEST_CLOCK_NS_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
