/* bench_util.h - what the C benchmarks share: a clock in seconds and the comparisons qsort sorts samples
 * with (medians, percentiles). */
#ifndef GG_BENCH_UTIL_H
#define GG_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

/* Seconds on clock id (CLOCK_MONOTONIC: wall time; CLOCK_THREAD_CPUTIME_ID: this thread's CPU time). */
static inline double bench_now_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif
