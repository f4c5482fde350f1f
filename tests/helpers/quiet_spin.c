/* quiet_spin.c - the autotrace test's workload: quiet_work() uses a little CPU (busy Q% of every 50 ms)
 * for a while, then spin_all() burns every CPU (one thread per CPU) until stdin closes or a deadline.
 *
 *   quiet_spin QUIET_S QUIET_PERCENT SPIN_S [THREADS [-w]]
 * It prints "pid=N" at start (with -w it then waits for a line on stdin), "spin" (with the monotonic ms) when the spin
 * begins, and its own CPU seconds when it ends. Built with frame pointers and no inlining, so both functions are in the
 * stacks. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"

static volatile uint64_t sink;

/* busy until the deadline (so the burn is in this function's frame) */
__attribute__((noinline)) static void quiet_work(uint64_t until)
{
	while (now_ns(CLOCK_MONOTONIC) < until)
		sink++;
}

__attribute__((noinline)) static void *spin_all(void *arg)
{
	uint64_t until = *(const uint64_t *)arg;

	while (now_ns(CLOCK_MONOTONIC) < until)
		sink++;
	return NULL;
}

int main(int argc, char **argv)
{
	double quiet_s, pct, spin_s;
	long nthreads;
	pthread_t th[64];
	uint64_t end, spin_until;
	struct timespec cpu;

	if (argc < 4) {
		fprintf(stderr, "usage: quiet_spin QUIET_S QUIET_PERCENT SPIN_S [THREADS]\n");
		return 2;
	}
	quiet_s = atof(argv[1]);
	pct = atof(argv[2]);
	spin_s = atof(argv[3]);
	nthreads = argc > 4 ? atol(argv[4]) : sysconf(_SC_NPROCESSORS_ONLN);
	if (nthreads < 1 || nthreads > 64)
		nthreads = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid=%d\n", getpid());
	if (argc > 5 && !strcmp(argv[5], "-w")) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(quiet_s * 1e9);
	while (now_ns(CLOCK_MONOTONIC) < end) {
		uint64_t period = 50000000ull, start = now_ns(CLOCK_MONOTONIC);
		struct timespec rest = {0, (long)(period - (uint64_t)(pct / 100.0 * (double)period))};

		quiet_work(start + (uint64_t)(pct / 100.0 * (double)period));
		nanosleep(&rest, NULL);
	}
	spin_until = now_ns(CLOCK_MONOTONIC) + (uint64_t)(spin_s * 1e9);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("quiet_cpu_s=%.3f\n", (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9);
	printf("spin %llu\n", (unsigned long long)(now_ns(CLOCK_MONOTONIC) / 1000000));
	for (long i = 1; i < nthreads; i++)
		pthread_create(&th[i], NULL, spin_all, &spin_until);
	spin_all(&spin_until);
	for (long i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("cpu_s=%.3f\n", (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9);
	return 0;
}
