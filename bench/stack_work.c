/* stack_work.c - a fixed amount of CPU-bound work on every CPU, timed: the workload for the on-CPU
 * profiling overhead benchmark (bench/stack_overhead.py). Prints the wall time and the CPU time the
 * threads got (seconds): the second is less sensitive to other load on the machine.
 *   stack_work [ITERATIONS_PER_THREAD] [THREADS]   (default 400000000, number of online CPUs) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t g_iters;
static volatile uint64_t g_sink;
static double g_cpu[256];

static void *work(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	struct timespec ts;

	for (uint64_t i = 0; i < g_iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	g_sink += x;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	g_cpu[(uintptr_t)arg - 1] = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t th[256];
	struct timespec a, b;
	double cpu = 0;

	g_iters = argc > 1 ? strtoull(argv[1], NULL, 10) : 400000000ull;
	if (n < 1 || n > 256)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, work, (void *)(uintptr_t)(i + 1)))
			return 1;
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	for (long i = 0; i < n; i++)
		cpu += g_cpu[i];
	printf("%.4f %.4f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9, cpu);
	return 0;
}
