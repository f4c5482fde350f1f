/* probe_array.h - growing arrays: the doubling realloc that the symbolizer, the probes' tables and their
 * byte buffers share. */
#ifndef GG_PROBE_ARRAY_H
#define GG_PROBE_ARRAY_H

#include <stddef.h>

/*
 * v (an array of *cap elements of size bytes, or NULL with *cap 0) with room for more: twice the
 * capacity, or first elements the first time. Returns the new array and sets *cap, or NULL (ENOMEM:
 * no memory, or the size would overflow) with v and *cap untouched.
 */
void *probe_array_grow(void *v, size_t *cap, size_t size, size_t first);

/*
 * v (as above) with room for need elements (need >= 1), or for max when need is more: v itself when
 * *cap holds that already, else the capacity doubled (from first when *cap is 0) until it does, but
 * never past max. Returns the array and sets *cap, or NULL (ENOMEM: no memory, no first size, or the
 * size would overflow) with v and *cap untouched.
 */
void *probe_array_reserve(void *v, size_t *cap, size_t size, size_t need, size_t first, size_t max);

#endif
