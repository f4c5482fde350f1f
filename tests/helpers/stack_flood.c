/* stack_flood.c - autotrace's per-CPU ring test workload: floods the sampler with distinct on-CPU stacks
 * (flood_descend() recursing to a new pseudo-random depth every 200 us, burning CPU in flood_leaf() at the
 * bottom), so that its CPU's share of every ring second overflows.
 *
 *   stack_flood SECONDS
 * It prints "pid=N" at start. Built with frame pointers, no inlining and no sibling calls, so every level
 * of the recursion is a frame of the stack. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"

static volatile uint64_t sink;

__attribute__((noinline)) static void flood_leaf(uint64_t until)
{
	while (now_ns(CLOCK_MONOTONIC) < until)
		sink++;
}

__attribute__((noinline)) static void flood_descend(unsigned int depth, uint64_t until)
{
	if (depth)
		flood_descend(depth - 1, until);
	else
		flood_leaf(until);
	sink++; /* after the call: no tail call, every level stays a frame */
}

int main(int argc, char **argv)
{
	uint64_t end, x = 88172645463325252ull;

	if (argc != 2) {
		fprintf(stderr, "usage: stack_flood SECONDS\n");
		return 2;
	}
	end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(atof(argv[1]) * 1e9);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	while (now_ns(CLOCK_MONOTONIC) < end) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		flood_descend((unsigned int)(x % 100u), now_ns(CLOCK_MONOTONIC) + 200000u);
	}
	return 0;
}
