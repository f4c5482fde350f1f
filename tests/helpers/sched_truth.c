/* sched_truth.c - a thread pinned to one CPU that sleeps, spins or waits in D a known number of times, and
 * says how long it was off CPU by the kernel's own clocks: the ground truth of the sched_switch probes'
 * tests (on some kernels a task waking on an idle CPU comes on it without any sched_switch event).
 *   sched_truth CPU sleep N MS          N sleeps of MS
 *   sched_truth CPU mixed N MS SPIN     N times: a sleep of MS, then SPIN ms of CPU time
 *   sched_truth CPU vfork N MS          N vfork()s whose child moves to the other CPU and sleeps MS: the
 *                                       parent waits in D and is woken from that CPU
 * It prints "ready", runs when a line comes on stdin, prints "wall_ns=W cpu_ns=C rundelay_ns=R nivcsw=P"
 * (the phase's wall time, its CPU time, its run-queue wait from /proc/thread-self/schedstat, the times
 * it was preempted) and exits at the next line or end of input. */

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock_ns.h"

static uint64_t run_delay_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

static long preempted(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_nivcsw;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

static void spin_ms(long ms)
{
	uint64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)ms * 1000000u;
	volatile uint64_t x = 0;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		x++;
}

/* The child of vfork() shares the parent's memory: raw system calls only, then _exit. */
static void vfork_wait(int other_cpu, long ms)
{
	cpu_set_t set;
	pid_t pid;

	CPU_ZERO(&set);
	CPU_SET(other_cpu, &set);
	pid = vfork();
	if (pid == 0) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

		syscall(SYS_sched_setaffinity, 0, sizeof(set), &set);
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	uint64_t wall, cpu, rd;
	long nivcsw;
	char line[64];
	cpu_set_t set;
	long n, ms, spin = 0;
	int c;

	if (argc < 5) {
		fprintf(stderr, "usage: sched_truth CPU sleep|mixed|vfork N MS [SPIN_MS]\n");
		return 2;
	}
	c = atoi(argv[1]);
	n = atol(argv[3]);
	ms = atol(argv[4]);
	if (argc > 5)
		spin = atol(argv[5]);
	CPU_ZERO(&set);
	CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	wall = now_ns(CLOCK_MONOTONIC);
	cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	rd = run_delay_ns();
	nivcsw = preempted();
	for (long i = 0; i < n; i++) {
		if (!strcmp(argv[2], "vfork")) {
			vfork_wait(c ? 0 : 1, ms);
			continue;
		}
		sleep_ms(ms);
		if (!strcmp(argv[2], "mixed"))
			spin_ms(spin);
	}
	wall = now_ns(CLOCK_MONOTONIC) - wall;
	cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	rd = run_delay_ns() - rd;
	nivcsw = preempted() - nivcsw;
	printf("wall_ns=%llu cpu_ns=%llu rundelay_ns=%llu nivcsw=%ld\n", (unsigned long long)wall,
	       (unsigned long long)cpu, (unsigned long long)rd, nivcsw);
	(void)fgets(line, sizeof(line), stdin);
	return 0;
}
