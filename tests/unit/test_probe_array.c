/* test_probe_array.c - growing arrays (probes/lib/probe_array.c): doubling, the first size, overflow. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "probe_array.h"

static void test_grow_doubles_and_keeps(void **state)
{
	uint64_t *v = NULL, *p;
	size_t cap = 0, n = 0;

	(void)state;
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

static void test_grow_refuses_overflow(void **state)
{
	char *v = malloc(8);
	size_t cap = SIZE_MAX / 2 + 1, zero = 0;

	(void)state;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_doubles_and_keeps),
		cmocka_unit_test(test_grow_refuses_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
