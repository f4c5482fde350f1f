/* test_sup_fixture.h - the cmocka group fixture of supervisor unit tests that render or store records: one
 * meta registry for the whole group, freed at the end. Include after cmocka.h. */
#ifndef GG_TEST_SUP_FIXTURE_H
#define GG_TEST_SUP_FIXTURE_H

#include <string.h>

#include "meta.h"

static struct meta_registry *reg;

/* Group setup: a new registry with the tables of meta_text (a .meta file's content), or none when
 * it is NULL (the caller registers its own). */
static int reg_setup(const char *meta_text)
{
	char err[256];

	reg = meta_registry__new();
	assert_non_null(reg);
	if (meta_text)
		assert_int_equal(meta_registry__load_buf(reg, "t.meta", meta_text, strlen(meta_text), err, sizeof(err)),
				 0);
	return 0;
}

static int reg_teardown(void **state)
{
	(void)state;
	meta_registry__free(reg);
	return 0;
}

#endif
