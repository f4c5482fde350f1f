/* stack_work.c - CPU-bound work on every CPU for a fixed time, one thread pinned to each CPU: the
 * workload of the on-CPU profiling overhead benchmark (bench/stack_overhead.py). Prints the work units
 * done, the wall time and the CPU time the threads got, so that the caller can compute units per wall
 * second (what a profiler takes away in total) and units per CPU second (what it costs inside the
 * workload's own time: sampling interrupts and the BPF program run on the interrupted thread).
 *   stack_work [SECONDS] [THREADS]   (default 2, number of online CPUs; thread i runs on CPU i) */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define UNIT_ITERS  100000u /* one unit: ~0.1 ms */
#define MAX_THREADS 256

struct worker {
	pthread_t th;
	int cpu;
	uint64_t units;
	double cpu_s;
};

static volatile uint64_t g_sink;
static double g_seconds;
static struct timespec g_start;

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t x = (uint64_t)w->cpu + 1;
	struct timespec now, ts;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (;;) {
		for (unsigned int i = 0; i < UNIT_ITERS; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		w->units++;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (since(&g_start, &now) >= g_seconds)
			break;
	}
	g_sink += x;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	w->cpu_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : sysconf(_SC_NPROCESSORS_ONLN);
	static struct worker w[MAX_THREADS];
	struct timespec end;
	uint64_t units = 0;
	double cpu = 0;

	g_seconds = argc > 1 ? atof(argv[1]) : 2.0;
	if (n < 1 || n > MAX_THREADS || g_seconds <= 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &g_start);
	for (long i = 0; i < n; i++) {
		w[i].cpu = (int)i;
		if (pthread_create(&w[i].th, NULL, work, &w[i]))
			return 1;
	}
	for (long i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		units += w[i].units;
		cpu += w[i].cpu_s;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("%llu %.4f %.4f\n", (unsigned long long)units, since(&g_start, &end), cpu);
	return 0;
}
