/* tprof_bench.c - a syscall-heavy workload for tprofiling's cost: prints "pid=<pid>", waits for "go" on
 * stdin, makes N calls of one kind, prints "cpu_ns_per_call=<x> wall_ns_per_call=<y>", and waits for stdin
 * to close (so a probe can be told its pid before the work starts).
 *
 *   tprof_bench read N     read(2) of 1 byte from /dev/zero (syscall_file: a watched syscall)
 *   tprof_bench futex N    futex(FUTEX_WAKE_PRIVATE) with no waiter (syscall_lock: a watched syscall)
 *   tprof_bench getppid N  getppid(2) (no sub-probe watches it: the cost of not being watched) */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static unsigned int word;
	unsigned long n;
	uint64_t c0, w0, c1, w1;
	char line[64], b;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (argc != 3 || fd < 0 ||
	    (strcmp(argv[1], "read") && strcmp(argv[1], "futex") && strcmp(argv[1], "getppid"))) {
		fprintf(stderr, "usage: tprof_bench read|futex|getppid N\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	w0 = now_ns(CLOCK_MONOTONIC);
	for (unsigned long i = 0; i < n; i++) {
		if (argv[1][0] == 'r') {
			if (read(fd, &b, 1) != 1)
				return 1;
		} else if (argv[1][0] == 'f') {
			syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		} else {
			syscall(SYS_getppid);
		}
	}
	c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	w1 = now_ns(CLOCK_MONOTONIC);
	printf("cpu_ns_per_call=%.1f wall_ns_per_call=%.1f\n", (double)(c1 - c0) / (double)n,
	       (double)(w1 - w0) / (double)n);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	close(fd);
	return 0;
}
