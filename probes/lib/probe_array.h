/* probe_array.h - growing arrays: the doubling realloc that the symbolizer and stackprobe's tables share. */
#ifndef GG_PROBE_ARRAY_H
#define GG_PROBE_ARRAY_H

#include <stddef.h>

/*
 * v (an array of *cap elements of size bytes, or NULL with *cap 0) with room for more: twice the
 * capacity, or first elements the first time. Returns the new array and sets *cap, or NULL (ENOMEM:
 * no memory, or the size would overflow) with v and *cap untouched.
 */
void *probe_array_grow(void *v, size_t *cap, size_t size, size_t first);

#endif
