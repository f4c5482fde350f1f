/* task_bench.c - a syscall-heavy workload for the taskprobe overhead benchmark: ITER iterations of
 * one system call (pread of SIZE bytes from a cached file, getppid, or write: buffered writes of SIZE
 * bytes appended to a file in DIR (default /var/tmp), truncated every 16 MiB so that every write
 * brings new page-cache pages; or pingpong: ITER round trips of one byte over two pipes between this
 * process and a child, two context switches each way), timed; prints ns per call of
 * CPU time (user + system: the kernel's and the BPF programs' work, not the time other processes on a
 * busy machine took) and of wall time. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "bench_util.h"

/* pingpong: round trips with a child; CPU time of both processes. */
static int pingpong(unsigned long iter)
{
	int up[2], down[2];
	double t0, t1, c0, c1, child_cpu;
	struct rusage ru;
	char b = 0;
	pid_t pid;
	int status;

	cpu_set_t one;

	/* Both on one CPU: every round trip is exactly two context switches, no idle or IPI in between. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) || pipe(up) || pipe(down))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		while (read(down[0], &b, 1) == 1 && b != 'q')
			if (write(up[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	t0 = bench_now_s(CLOCK_MONOTONIC);
	c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned long i = 0; i < iter; i++)
		if (write(down[1], &b, 1) != 1 || read(up[0], &b, 1) != 1)
			return 1;
	c1 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
	t1 = bench_now_s(CLOCK_MONOTONIC);
	b = 'q';
	if (write(down[1], &b, 1) != 1 || wait4(pid, &status, 0, &ru) != pid)
		return 1;
	child_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		    (double)ru.ru_stime.tv_usec / 1e6;
	printf("pingpong %lu %.1f %.1f\n", iter, (c1 - c0 + child_cpu) * 1e9 / (double)iter,
	       (t1 - t0) * 1e9 / (double)iter);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long iter, size = 4096;
	static char buf[1 << 16];
	const char *mode;
	double t0, t1, c0, c1;
	int fd = -1, writing = 0;
	off_t off = 0;

	if (argc < 3 || (strcmp(argv[1], "pread") && strcmp(argv[1], "getppid") && strcmp(argv[1], "write") &&
			 strcmp(argv[1], "pingpong"))) {
		fprintf(stderr, "usage: task_bench pread|getppid|write|pingpong ITER [SIZE [DIR]]\n");
		return 2;
	}
	if (!strcmp(argv[1], "pingpong"))
		return pingpong(strtoul(argv[2], NULL, 10));
	mode = argv[1];
	iter = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		size = strtoul(argv[3], NULL, 10);
	if (size == 0 || size > sizeof(buf))
		size = 4096;
	if (!strcmp(mode, "pread")) {
		char path[] = "/tmp/task_bench.XXXXXX";

		fd = mkstemp(path);
		if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			fprintf(stderr, "task_bench: %s\n", strerror(errno));
			return 1;
		}
		unlink(path);
	} else if (!strcmp(mode, "write")) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/task_bench.XXXXXX", argc > 4 ? argv[4] : "/var/tmp");
		fd = mkstemp(path);
		if (fd < 0) {
			fprintf(stderr, "task_bench: %s: %s\n", path, strerror(errno));
			return 1;
		}
		unlink(path);
		writing = 1;
	}
	t0 = bench_now_s(CLOCK_MONOTONIC);
	c0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned long i = 0; i < iter; i++) {
		if (writing) {
			if (off >= (16 << 20)) {
				if (ftruncate(fd, 0))
					return 1;
				off = 0;
			}
			if (pwrite(fd, buf, size, off) != (ssize_t)size)
				return 1;
			off += (off_t)size;
		} else if (fd >= 0) {
			if (pread(fd, buf, size, 0) != (ssize_t)size)
				return 1;
		} else {
			(void)getppid();
		}
	}
	c1 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
	t1 = bench_now_s(CLOCK_MONOTONIC);
	printf("%s %lu %.1f %.1f\n", mode, iter, (c1 - c0) * 1e9 / (double)iter, (t1 - t0) * 1e9 / (double)iter);
	return 0;
}
