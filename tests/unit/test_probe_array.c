/* test_probe_array.c - growing arrays (probe_array.c): doubling, the first size, reserving up to a bound, overflow. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "unit.h"

#include "probe_array.h"

GG_TEST(test_grow_doubles_and_keeps)
{
	uint64_t *v = NULL, *p;
	size_t cap = 0, n = 0;

	for (uint64_t i = 0; i < 1000; i++) {
		if (n == cap) {
			size_t was = cap;

			p = probe_array_grow(v, &cap, sizeof(*v), 16);
			assert_non_null(p);
			assert_int_equal(cap, was ? 2 * was : 16);
			v = p;
		}
		v[n++] = i * 7;
	}
	assert_int_equal(cap, 1024); /* 16, 32, ..., 1024 */
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(v[i], i * 7); /* what was there moved along */
	free(v);
}

GG_TEST(test_grow_refuses_overflow)
{
	char *v = malloc(8);
	size_t cap = SIZE_MAX / 2 + 1, zero = 0;

	assert_non_null(v);
	errno = 0;
	assert_null(probe_array_grow(v, &cap, 1, 16));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(cap, SIZE_MAX / 2 + 1); /* untouched, and so is v */
	cap = SIZE_MAX / 64;
	assert_null(probe_array_grow(v, &cap, 64, 16));
	assert_null(probe_array_grow(NULL, &zero, 8, 0)); /* no first size */
	assert_int_equal(zero, 0);
	free(v);
}

GG_TEST(test_reserve_doubles_to_need_within_max)
{
	char *v = NULL, *p;
	size_t cap = 0;

	p = probe_array_reserve(v, &cap, 1, 10, 256, 4096);
	assert_non_null(p);
	assert_int_equal(cap, 256); /* the first size */
	p[9] = 'x';
	v = p;
	assert_ptr_equal(probe_array_reserve(v, &cap, 1, 256, 256, 4096), v); /* room already */
	assert_int_equal(cap, 256);
	p = probe_array_reserve(v, &cap, 1, 1000, 256, 4096);
	assert_non_null(p);
	assert_int_equal(cap, 1024); /* 512, 1024 */
	assert_int_equal(p[9], 'x'); /* what was there moved along */
	v = p;
	p = probe_array_reserve(v, &cap, 1, 3000, 256, 3000);
	assert_non_null(p);
	assert_int_equal(cap, 3000); /* 2048, 4096: cut to max */
	v = p;
	assert_ptr_equal(probe_array_reserve(v, &cap, 1, 5000, 256, 3000), v); /* more than max: max is there */
	assert_int_equal(cap, 3000);
	free(v);

	v = NULL;
	cap = 0;
	p = probe_array_reserve(v, &cap, 8, 100, 4096, 50); /* a first size past max: max */
	assert_non_null(p);
	assert_int_equal(cap, 50);
	free(p);
}

GG_TEST(test_reserve_refuses_overflow)
{
	char *v = malloc(8);
	size_t cap = 8, zero = 0;

	assert_non_null(v);
	errno = 0;
	assert_null(probe_array_reserve(v, &cap, 64, SIZE_MAX / 32, 16, SIZE_MAX));
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(cap, 8); /* untouched, and so is v */
	errno = 0;
	assert_null(probe_array_reserve(NULL, &zero, 8, 4, 0, 64)); /* no first size */
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(zero, 0);
	free(v);
}
