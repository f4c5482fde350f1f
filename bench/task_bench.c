/* task_bench.c - a syscall-heavy workload for the taskprobe overhead benchmark: ITER iterations of
 * one system call (pread of SIZE bytes from a cached file, or getppid), timed; prints ns per call of
 * CPU time (user + system: the kernel's and the BPF programs' work, not the time other processes on a
 * busy machine took) and of wall time. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long iter, size = 4096;
	static char buf[1 << 16];
	const char *mode;
	double t0, t1, c0, c1;
	int fd = -1;

	if (argc < 3 || (strcmp(argv[1], "pread") && strcmp(argv[1], "getppid"))) {
		fprintf(stderr, "usage: task_bench pread|getppid ITER [SIZE]\n");
		return 2;
	}
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
	}
	t0 = now_s(CLOCK_MONOTONIC);
	c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned long i = 0; i < iter; i++) {
		if (fd >= 0) {
			if (pread(fd, buf, size, 0) != (ssize_t)size)
				return 1;
		} else {
			(void)getppid();
		}
	}
	c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	t1 = now_s(CLOCK_MONOTONIC);
	printf("%s %lu %.1f %.1f\n", mode, iter, (c1 - c0) * 1e9 / (double)iter, (t1 - t0) * 1e9 / (double)iter);
	return 0;
}
