/* cpu_split.c - a workload with known answers for the flame graph tests: the main thread spends ~70 %
 * of its CPU in spin_hot() and ~30 % in spin_cold() (in a pseudo-random order); a second thread sleeps
 * in short nanosleeps for the whole run (its blocked time is measured here); touch_pages() faults in N
 * fresh pages; alloc_here() requests a known number of bytes from malloc, calloc and realloc. Built
 * with frame pointers and symbols; a stripped copy (cpu_split_stripped) tests degradation to module
 * names. With -T, the burn is periodic instead, as a timer-driven program's (a frame loop, a 10 ms
 * tick): every period of the monotonic clock, periodic_hot() until 70 % of it, periodic_cold() until its
 * end, with absolute deadlines, so that the work stays phase-locked to the clock.
 *
 *   cpu_split [-d SECONDS | -c CPU_SECONDS] [-p PAGES] [-m ROUNDS] [-s] [-w] [-T PERIOD_US] [-n NAME]
 *     -d  how long to burn CPU (default 5)     -c  burn until this much CPU time was used instead
 *     -p  pages to touch first (default 0)     -m  allocation rounds first (default 0)
 *     -s  run the sleeper thread               -w  wait for a line on stdin before starting
 *     -T  periodic burn with this period (with -T, -d is CPU time too)
 *     -n  process name (comm) to take, so that a test can select it by name alone
 * Tests use -c: on a busy machine a wall-clock duration gives too few samples.
 * It first prints "pid=.. malloc_addr=.." (the malloc it calls, decimal). At the end it prints one line
 * of measured facts: hot_ns=.. cold_ns=.. sleeper_blocked_us=.. sleeper_sleeps=.. pages=.. alloc_bytes=..
 * malloc_addr=.. elapsed_us=.. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"

#define UNIT_ITERS 200000u   /* one unit of work, ~0.1-0.5 ms */
#define SLEEP_NS   20000000L /* 20 ms per nanosleep */

static volatile int g_stop;
static volatile uint64_t g_sink;
static uint64_t g_sleeper_blocked_ns, g_sleeper_sleeps;

/* A function of its own (with a frame): a sample taken inside clock_gettime, which has no frame
 * pointer, still unwinds to the periodic_* function that called this. */
__attribute__((noinline)) uint64_t mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

/* Non-leaf on purpose: GCC sets up no frame in leaf functions even with -fno-omit-frame-pointer, and
 * the caller of a frameless leaf is lost when unwinding by frame pointers. */
__attribute__((noinline)) void sink(uint64_t x)
{
	g_sink = x;
}

/* The work: n steps of a linear congruential generator from x. The hot and cold functions use
 * different constants, so that no compiler folds them into one symbol; always inlined (-fno-inline
 * notwithstanding), so that the time is spent, and sampled, in their own frames. */
#define HOT_A  6364136223846793005ull
#define HOT_C  1442695040888963407ull
#define COLD_A 2862933555777941757ull
#define COLD_C 3037000493ull

static inline __attribute__((always_inline)) uint64_t lcg(uint64_t x, uint64_t n, uint64_t a, uint64_t c)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * a + c;
	return x;
}

/* The same work in two functions: time spent is proportional to the units each is given. */
__attribute__((noinline)) void spin_hot(unsigned int units)
{
	sink(lcg(g_sink, (uint64_t)units * UNIT_ITERS, HOT_A, HOT_C));
}

__attribute__((noinline)) void spin_cold(unsigned int units)
{
	sink(lcg(g_sink, (uint64_t)units * UNIT_ITERS, COLD_A, COLD_C));
}

/*
 * Until the deadline (or until cpu_s of CPU time was used), one unit at a time: spin_hot with probability 7/10, else
 * spin_cold, in a pseudo-random order; the CPU time of each call is measured around it. A fixed pattern (7 hot, 3 cold)
 * would repeat every ~2 ms, a divisor of the 10 ms sampling period: samples would land at the same
 * phase of it every time (aliasing) and the split seen by any sampler, perf too, would drift with it.
 */
__attribute__((noinline)) void burn_loop(double seconds, double cpu_s, uint64_t *hot_ns, uint64_t *cold_ns)
{
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9), want = (uint64_t)(cpu_s * 1e9);
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	while (cpu_s > 0 ? *hot_ns + *cold_ns < want : now_ns(CLOCK_MONOTONIC) < end) {
		for (int k = 0; k < 10; k++) {
			uint64_t t0, t1;

			rnd ^= rnd << 13; /* xorshift64 */
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
			if (rnd % 10 < 7) {
				spin_hot(1);
				t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
				*hot_ns += t1 - t0;
			} else {
				spin_cold(1);
				t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
				*cold_ns += t1 - t0;
			}
		}
	}
}

/* Periodic mode: spin until the monotonic clock reaches `until`, looking at it every ~2-5 us (the
 * clock read is ~1 % of the time). */
__attribute__((noinline)) void periodic_hot(uint64_t until)
{
	uint64_t x = g_sink;

	do
		x = lcg(x, 2048, HOT_A, HOT_C);
	while (mono_ns() < until);
	sink(x);
}

__attribute__((noinline)) void periodic_cold(uint64_t until)
{
	uint64_t x = g_sink;

	do
		x = lcg(x, 2048, COLD_A, COLD_C);
	while (mono_ns() < until);
	sink(x);
}

/* Every period (aligned to multiples of it on the monotonic clock, as timers are): periodic_hot for the
 * first 70 %, periodic_cold for the rest, until the two together used cpu_s of CPU time. The CPU time
 * of each is measured around its calls. A period missed (the thread was preempted) is skipped, as a
 * timer-driven loop skips late frames. */
__attribute__((noinline)) void periodic_loop(uint64_t period_ns, double cpu_s, uint64_t *hot_ns, uint64_t *cold_ns)
{
	uint64_t want = (uint64_t)(cpu_s * 1e9), p0 = (mono_ns() / period_ns + 1) * period_ns;

	while (*hot_ns + *cold_ns < want) {
		uint64_t t0, t1, t2, now;

		t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		periodic_hot(p0 + period_ns * 7 / 10);
		t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		periodic_cold(p0 + period_ns);
		t2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		*hot_ns += t1 - t0;
		*cold_ns += t2 - t1;
		now = mono_ns();
		p0 += period_ns;
		if (now >= p0 + period_ns)
			p0 = now / period_ns * period_ns;
	}
}

__attribute__((noinline)) void sleeper_loop(void)
{
	while (!g_stop) {
		struct timespec ts = {0, SLEEP_NS};
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		nanosleep(&ts, NULL);
		g_sleeper_blocked_ns += now_ns(CLOCK_MONOTONIC) - t0;
		g_sleeper_sleeps++;
	}
}

__attribute__((noinline)) void *sleeper_thread(void *arg)
{
	(void)arg;
	sleeper_loop();
	return NULL;
}

/* Per round: malloc 4096 + calloc 16 x 256 + realloc to 8192 = 16384 bytes requested. */
#define ALLOC_ROUND_BYTES 16384u

__attribute__((noinline)) uint64_t alloc_here(long rounds)
{
	uint64_t bytes = 0;

	for (long i = 0; i < rounds; i++) {
		char *p = malloc(4096), *q = calloc(16, 256), *r;

		if (!p || !q)
			abort();
		p[0] = q[0] = 1;
		r = realloc(p, 8192);
		if (!r)
			abort();
		g_sink += (uint64_t)(unsigned char)r[0] + (uint64_t)(unsigned char)q[100];
		free(r);
		free(q);
		bytes += ALLOC_ROUND_BYTES;
	}
	return bytes;
}

/* One write per fresh page: one user page fault each (no huge pages). */
__attribute__((noinline)) long touch_pages(long n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(n * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	(void)madvise(p, (size_t)(n * page), MADV_NOHUGEPAGE);
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * page] = 1;
	munmap(p, (size_t)(n * page));
	return n;
}

int main(int argc, char **argv)
{
	double seconds = 5;
	double cpu_s = 0;
	long pages = 0, touched = 0, alloc_rounds = 0, period_us = 0;
	uint64_t alloc_bytes = 0;
	int sleeper = 0, wait_go = 0, c;
	uint64_t hot = 0, cold = 0, t0;
	pthread_t th;

	while ((c = getopt(argc, argv, "d:p:m:swT:c:n:")) != -1) {
		switch (c) {
		case 'd':
			seconds = atof(optarg);
			break;
		case 'p':
			pages = atol(optarg);
			break;
		case 'm':
			alloc_rounds = atol(optarg);
			break;
		case 's':
			sleeper = 1;
			break;
		case 'w':
			wait_go = 1;
			break;
		case 'T':
			period_us = atol(optarg);
			break;
		case 'c':
			cpu_s = atof(optarg);
			break;
		case 'n':
			/* other tests run cpu_split at the same time: a name of this test's own */
			if (prctl(PR_SET_NAME, optarg, 0, 0, 0))
				return 1;
			break;
		default:
			fprintf(stderr,
				"usage: cpu_split [-d SECONDS | -c CPU_SECONDS] [-p PAGES] [-m ROUNDS] [-s] [-w] "
				"[-T PERIOD_US]\n");
			return 2;
		}
	}
	printf("pid=%d malloc_addr=%llu\n", getpid(), (unsigned long long)(uintptr_t)dlsym(RTLD_DEFAULT, "malloc"));
	fflush(stdout);
	if (wait_go) {
		char line[64];

		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	t0 = now_ns(CLOCK_MONOTONIC);
	if (sleeper && pthread_create(&th, NULL, sleeper_thread, NULL))
		return 1;
	if (pages > 0)
		touched = touch_pages(pages);
	if (alloc_rounds > 0)
		alloc_bytes = alloc_here(alloc_rounds);
	if (period_us > 0)
		periodic_loop((uint64_t)period_us * 1000u, cpu_s > 0 ? cpu_s : seconds, &hot, &cold);
	else
		burn_loop(seconds, cpu_s, &hot, &cold);
	g_stop = 1;
	if (sleeper)
		pthread_join(th, NULL);
	/* the malloc the process calls (libc's, or an interposer's): the tests look for a uprobe there */
	printf("hot_ns=%llu cold_ns=%llu sleeper_blocked_us=%llu sleeper_sleeps=%llu pages=%ld alloc_bytes=%llu "
	       "malloc_addr=%llu elapsed_us=%llu\n",
	       (unsigned long long)hot, (unsigned long long)cold, (unsigned long long)(g_sleeper_blocked_ns / 1000),
	       (unsigned long long)g_sleeper_sleeps, touched, (unsigned long long)alloc_bytes,
	       (unsigned long long)(uintptr_t)dlsym(RTLD_DEFAULT, "malloc"),
	       (unsigned long long)((now_ns(CLOCK_MONOTONIC) - t0) / 1000));
	fflush(stdout);
	/* stay until told (EOF or a line), so the probe can still read /proc/<pid>/maps */
	if (wait_go) {
		char line[64];

		(void)!fgets(line, sizeof(line), stdin);
	}
	return 0;
}
