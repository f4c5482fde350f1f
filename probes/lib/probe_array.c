/* probe_array.c - growing arrays (probe_array.h). */
#include "probe_array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

void *probe_array_grow(void *v, size_t *cap, size_t size, size_t first)
{
	size_t n;
	void *p;

	if (!size || (*cap && *cap > SIZE_MAX / 2 / size) || (!*cap && (!first || first > SIZE_MAX / size))) {
		errno = ENOMEM;
		return NULL;
	}
	n = *cap ? *cap * 2 : first;
	p = realloc(v, n * size);
	if (!p)
		return NULL;
	*cap = n;
	return p;
}

void *probe_array_reserve(void *v, size_t *cap, size_t size, size_t need, size_t first, size_t max)
{
	size_t want = need < max ? need : max, n = *cap ? *cap : first;
	void *p;

	if (want <= *cap)
		return v;
	while (n && n < want)
		n = n > SIZE_MAX / 2 ? SIZE_MAX : n * 2;
	if (n > max)
		n = max;
	if (!n || !size || n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	p = realloc(v, n * size);
	if (!p)
		return NULL;
	*cap = n;
	return p;
}
