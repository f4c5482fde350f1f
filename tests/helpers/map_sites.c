/* map_sites.c - ground truth for stackprobe's mem_live over mmap/munmap/mremap/brk: maps known sizes
 * from known functions, gives back a known part, grows the break by a known amount, and makes two heap
 * allocations that glibc serves with its own mmap and brk (counted once, as malloc blocks).
 *
 * Prints "pid=N", waits for "go" on stdin, then (bytes held per function when done):
 *   heap_big:   malloc(1 MiB), kept (glibc mmaps it)                          -> 1048576 (malloc block)
 *   heap_small: malloc(100000) x 5, kept (glibc grows its brk heap)          -> 500000 (malloc blocks)
 *   map_keep:   mmap 256 KiB x 4                                              -> 1048576
 *   map_part:   mmap 512 KiB x 2; munmap 128 KiB in the middle of the first, the first and the last
 *               64 KiB of the second                                          -> 786432
 *   map_all:    mmap 128 KiB x 3, all unmapped                                -> 0
 *   map_none:   mmap 1 MiB PROT_NONE (a reservation, not memory)              -> 0
 *   map_odd:    mmap 10000 bytes (whole pages are mapped)                     -> 12288
 *   map_move:   mmap 64 KiB, mremap to 192 KiB (may move)                     -> 196608
 *   map_fixed:  mmap 256 KiB, its upper half replaced by a PROT_NONE MAP_FIXED -> 131072
 *   brk_grow:   sbrk(+200000), sbrk(+100000), sbrk(-50000) (last: the heap top is ours) -> 250000
 * prints "done <function>=<bytes> ...", then waits for stdin to close. Built with frame pointers and
 * without inlining (Makefile). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KIB 1024ul

volatile uintptr_t sink;

static void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	sink += (uintptr_t)p;
	return p;
}

__attribute__((noinline)) static uint64_t heap_big(void)
{
	char *p = malloc(1 << 20);

	memset(p, 1, 4096);
	sink += (uintptr_t)p;
	return 1 << 20;
}

__attribute__((noinline)) static uint64_t heap_small(void)
{
	for (int i = 0; i < 5; i++) {
		char *p = malloc(100000);

		memset(p, 1, 100000);
		sink += (uintptr_t)p;
	}
	return 500000;
}

__attribute__((noinline)) static uint64_t map_keep(void)
{
	for (int i = 0; i < 4; i++)
		map_anon(256 * KIB, PROT_READ | PROT_WRITE);
	return 4 * 256 * KIB;
}

__attribute__((noinline)) static uint64_t map_part(void)
{
	char *a = map_anon(512 * KIB, PROT_READ | PROT_WRITE), *b = map_anon(512 * KIB, PROT_READ | PROT_WRITE);

	munmap(a + 128 * KIB, 128 * KIB); /* a hole in the middle: two pieces stay */
	munmap(b + 448 * KIB, 64 * KIB);  /* the tail */
	munmap(b, 64 * KIB);		  /* the head */
	return 1024 * KIB - 128 * KIB - 128 * KIB;
}

__attribute__((noinline)) static uint64_t map_all(void)
{
	void *p[3];

	for (int i = 0; i < 3; i++)
		p[i] = map_anon(128 * KIB, PROT_READ | PROT_WRITE);
	for (int i = 0; i < 3; i++)
		munmap(p[i], 128 * KIB);
	return 0;
}

__attribute__((noinline)) static uint64_t map_none(void)
{
	map_anon(1024 * KIB, PROT_NONE);
	return 0;
}

__attribute__((noinline)) static uint64_t map_odd(void)
{
	map_anon(10000, PROT_READ | PROT_WRITE);
	return 12288;
}

__attribute__((noinline)) static uint64_t map_move(void)
{
	void *p = map_anon(64 * KIB, PROT_READ | PROT_WRITE);

	p = mremap(p, 64 * KIB, 192 * KIB, MREMAP_MAYMOVE);
	if (p == MAP_FAILED) {
		perror("mremap");
		exit(1);
	}
	sink += (uintptr_t)p;
	return 192 * KIB;
}

__attribute__((noinline)) static uint64_t map_fixed(void)
{
	char *p = map_anon(256 * KIB, PROT_READ | PROT_WRITE);

	if (mmap(p + 128 * KIB, 128 * KIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		perror("mmap fixed");
		exit(1);
	}
	return 128 * KIB;
}

__attribute__((noinline)) static uint64_t brk_grow(void)
{
	if (sbrk(200000) == (void *)-1 || sbrk(100000) == (void *)-1 || sbrk(-50000) == (void *)-1) {
		perror("sbrk");
		exit(1);
	}
	return 250000;
}

int main(void)
{
	char line[64];
	uint64_t v[10];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("pid=%d\n", getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	v[0] = heap_big();
	v[1] = heap_small();
	v[2] = map_keep();
	v[3] = map_part();
	v[4] = map_all();
	v[5] = map_none();
	v[6] = map_odd();
	v[7] = map_move();
	v[8] = map_fixed();
	v[9] = brk_grow(); /* last: no malloc grows the heap above it */
	printf("done heap_big=%llu heap_small=%llu map_keep=%llu map_part=%llu map_all=%llu map_none=%llu "
	       "map_odd=%llu map_move=%llu map_fixed=%llu brk_grow=%llu\n",
	       (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[3],
	       (unsigned long long)v[4], (unsigned long long)v[5], (unsigned long long)v[6], (unsigned long long)v[7],
	       (unsigned long long)v[8], (unsigned long long)v[9]);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
