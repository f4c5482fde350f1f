/* leak_sites.c - ground truth for stackprobe's mem_live: allocates known sizes at known call sites and
 * frees a known part, so the bytes still held per site are known exactly.
 *
 * Prints "pid=N", allocates a few blocks before the probe looks (freed later: frees of blocks the
 * probe never saw), waits for "go" on stdin, then per round:
 *   site_keep:     malloc(1000) x 100, none freed                 -> 100000 bytes held (leaf malloc)
 *   site_half:     calloc(10, 300) x 200, every second one freed  -> 300000 bytes held (leaf calloc)
 *   site_grow:     malloc(4096) x 50, each realloc'ed to 8192, 10 freed -> 327680 held (leaf realloc)
 *   site_aligned:  posix_memalign(64, 2048) x 30, all freed        -> nothing held
 *   site_shrink:   malloc(3000) x 20, realloc(p, 0) on all         -> nothing held
 * and prints "done keep=.. half=.. grow=.. aligned=.. shrink=.." (bytes held per site), then waits for
 * stdin to close. Built with frame pointers and without inlining (Makefile). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP_N	  100
#define KEEP_SZ	  1000
#define HALF_N	  200
#define HALF_SZ	  300
#define GROW_N	  50
#define GROW_FREE 10
#define ALIGN_N	  30
#define SHRINK_N  20

static void *keep[KEEP_N], *half[HALF_N], *grow[GROW_N];
volatile uintptr_t sink;

__attribute__((noinline)) static uint64_t site_keep(void)
{
	for (int i = 0; i < KEEP_N; i++) {
		keep[i] = malloc(KEEP_SZ);
		memset(keep[i], 1, KEEP_SZ);
	}
	return (uint64_t)KEEP_N * KEEP_SZ;
}

__attribute__((noinline)) static uint64_t site_half(void)
{
	uint64_t held = 0;

	for (int i = 0; i < HALF_N; i++)
		half[i] = calloc(10, HALF_SZ);
	for (int i = 0; i < HALF_N; i++) {
		if (i % 2) {
			free(half[i]);
			half[i] = NULL;
		} else {
			held += 10 * HALF_SZ;
		}
	}
	return held;
}

__attribute__((noinline)) static uint64_t site_grow(void)
{
	for (int i = 0; i < GROW_N; i++) {
		grow[i] = malloc(4096);
		sink += (uintptr_t)grow[i];
	}
	for (int i = 0; i < GROW_N; i++)
		grow[i] = realloc(grow[i], 8192);
	for (int i = 0; i < GROW_FREE; i++) {
		free(grow[i]);
		grow[i] = NULL;
	}
	return (uint64_t)(GROW_N - GROW_FREE) * 8192;
}

__attribute__((noinline)) static uint64_t site_aligned(void)
{
	void *p[ALIGN_N];

	for (int i = 0; i < ALIGN_N; i++)
		if (posix_memalign(&p[i], 64, 2048))
			p[i] = NULL;
	for (int i = 0; i < ALIGN_N; i++)
		free(p[i]);
	return 0;
}

__attribute__((noinline)) static uint64_t site_shrink(void)
{
	for (int i = 0; i < SHRINK_N; i++) {
		void *p = malloc(3000);

		sink += (uintptr_t)p;
		p = realloc(p, 0); /* glibc: frees p, returns NULL */
		sink += (uintptr_t)p;
	}
	return 0;
}

int main(void)
{
	char line[64];
	void *early[20];
	uint64_t k, h, g, a, s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 20; i++)
		early[i] = malloc(500);
	printf("pid=%d\n", getpid());
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	k = site_keep();
	h = site_half();
	g = site_grow();
	a = site_aligned();
	s = site_shrink();
	for (int i = 0; i < 20; i++)
		free(early[i]);
	printf("done keep=%llu half=%llu grow=%llu aligned=%llu shrink=%llu\n", (unsigned long long)k,
	       (unsigned long long)h, (unsigned long long)g, (unsigned long long)a, (unsigned long long)s);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
