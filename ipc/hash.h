/* hash.h - the integer mixers of the hash tables of the supervisor and the probes (MurmurHash3's
 * finalizer), one copy. */
#ifndef GG_HASH_H
#define GG_HASH_H

#include <stdint.h>

/* A pointer's slot in an open-addressing table (the first half of the finalizer: enough for the
 * alignment bits of heap pointers). */
static inline uint64_t gg_ptr_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* The whole finalizer: every bit of x moves every bit of the result. */
static inline uint64_t gg_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#endif
