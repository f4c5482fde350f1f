/* unit_main.c - the main() of every tests/unit binary: the tests its file registered (unit.h), in the
 * order they are defined, as one cmocka group named after the binary, with the file's group fixture. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"

/* The bounds of the section (weak: a file without a test links too, and runs none) and the group fixture. */
extern const struct gg_unit_test *const __start_gg_unit_tests[] __attribute__((weak));
extern const struct gg_unit_test *const __stop_gg_unit_tests[] __attribute__((weak));
#pragma weak gg_unit_group

static int by_line(const void *a, const void *b)
{
	const struct gg_unit_test *x = *(const struct gg_unit_test *const *)a;
	const struct gg_unit_test *y = *(const struct gg_unit_test *const *)b;

	return (x->line > y->line) - (x->line < y->line);
}

int main(void)
{
	size_t n = (size_t)(__stop_gg_unit_tests - __start_gg_unit_tests);
	const struct gg_unit_test **sorted = calloc(n + 1, sizeof(*sorted));
	struct CMUnitTest *tests = calloc(n + 1, sizeof(*tests));
	CMFixtureFunction setup = NULL, teardown = NULL;
	int rc;

	if (!sorted || !tests) {
		fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		sorted[i] = __start_gg_unit_tests[i];
	qsort(sorted, n, sizeof(*sorted), by_line);
	for (size_t i = 0; i < n; i++)
		tests[i] = sorted[i]->test;
	if (&gg_unit_group) {
		setup = gg_unit_group.setup;
		teardown = gg_unit_group.teardown;
	}
	rc = _cmocka_run_group_tests(program_invocation_short_name, tests, n, setup, teardown);
	free(tests);
	free(sorted);
	return rc;
}
