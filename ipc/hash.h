/* hash.h - the hashes of the hash tables of the supervisor and the probes: integer mixers (MurmurHash3's
 * finalizer) and FNV-1a over bytes, one copy each. */
#ifndef GG_HASH_H
#define GG_HASH_H

#include <stddef.h>
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

#define GG_FNV1A_INIT 14695981039346656037ull

/* 64-bit FNV-1a over len bytes at p, continuing from h (GG_FNV1A_INIT to start). */
static inline uint64_t gg_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

#endif
