/* unit.h - cmocka unit tests that register themselves: no main() and no list of tests in a test file.
 *
 *	GG_TEST(test_foo)
 *	{
 *		assert_int_equal(foo(), 1);	// state (void **) is there for the fixtures
 *	}
 *	GG_TEST_SETUP_TEARDOWN(test_bar, setup, teardown)	// a test with its own fixture
 *	{ ... }
 *	GG_TEST_GROUP(group_setup, group_teardown);	// at most once a file: the group fixture (either NULL)
 *
 * Each test puts a pointer to its entry (cmocka's CMUnitTest and the line it is defined on) in the section
 * gg_unit_tests; the main() of unit_main.c, linked into every tests/unit binary, runs them in the order
 * they are defined in the file (sorted by line: the linker may reorder a section), as one group named after
 * the binary. One test file a binary. */
#ifndef GG_UNIT_H
#define GG_UNIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

struct gg_unit_test {
	struct CMUnitTest test;
	int line;
};

/* The group fixture of a file, defined by GG_TEST_GROUP (a weak reference in unit_main.c: NULL when none). */
struct gg_unit_group {
	CMFixtureFunction setup;
	CMFixtureFunction teardown;
};
extern const struct gg_unit_group gg_unit_group;

/* The section holds pointers only (the entries are ordinary constants): every item is one aligned pointer,
 * and the name, a C identifier, gives __start_/__stop_ symbols (and no sanitizer redzones in it). */
#define GG_UNIT_SECTION __attribute__((used, section("gg_unit_tests"), aligned(sizeof(void *))))

#define GG_TEST_SETUP_TEARDOWN(fn, fn_setup, fn_teardown)                                                         \
	static void fn(void **state);                                                                             \
	static const struct gg_unit_test gg_unit_test__##fn = {                                                   \
		.test = {.name = #fn, .test_func = fn, .setup_func = (fn_setup), .teardown_func = (fn_teardown)}, \
		.line = __LINE__,                                                                                 \
	};                                                                                                        \
	static const struct gg_unit_test *const gg_unit_test_ref__##fn GG_UNIT_SECTION = &gg_unit_test__##fn;     \
	static void fn(void **state __attribute__((unused)))

#define GG_TEST(fn) GG_TEST_SETUP_TEARDOWN(fn, NULL, NULL)

#define GG_TEST_GROUP(group_setup, group_teardown) \
	const struct gg_unit_group gg_unit_group = {.setup = (group_setup), .teardown = (group_teardown)}

#endif
