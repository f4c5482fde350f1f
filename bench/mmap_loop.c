/* mmap_loop.c - a workload for the cost of mem_live's memory-syscall hooks: prints "pid=<pid>", waits
 * for "go" on stdin, makes N rounds of one kind, prints "ns_per_call=<x>" (wall time per system call),
 * and waits for stdin to close (so a probe can be told its pid before the work starts).
 *
 *   mmap_loop mmap N     mmap of 64 KiB anonymous + munmap of it (2 calls a round)
 *   mmap_loop brk N      sbrk(+4096) + sbrk(-4096) (2 brk calls a round)
 *   mmap_loop getppid N  getppid (no hook: what having the tracepoints on costs everything else) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	char line[64];
	unsigned long n;
	uint64_t t0, t1;
	volatile uintptr_t sink = 0;

	if (argc != 3 || (strcmp(argv[1], "mmap") && strcmp(argv[1], "brk") && strcmp(argv[1], "getppid"))) {
		fprintf(stderr, "usage: mmap_loop mmap|brk|getppid N\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid=%d\n", getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = now_ns();
	for (unsigned long i = 0; i < n; i++) {
		if (argv[1][0] == 'm') {
			void *p = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return 1;
			munmap(p, 65536);
		} else if (argv[1][0] == 'b') {
			sink += (uintptr_t)sbrk(4096);
			sink += (uintptr_t)sbrk(-4096);
		} else {
			sink += (uintptr_t)syscall(SYS_getppid);
			sink += (uintptr_t)syscall(SYS_getppid);
		}
	}
	t1 = now_ns();
	printf("ns_per_call=%.1f\n", (double)(t1 - t0) / (double)(2 * n));
	while (fgets(line, sizeof(line), stdin))
		;
	return (int)(sink & 0);
}
