/* test_sup_fixture.h - the cmocka group fixture of supervisor unit tests that render or store records: one
 * meta registry for the whole group, freed at the end, and the rendering of one record into JSON.
 * Include after unit.h. */
#ifndef GG_TEST_SUP_FIXTURE_H
#define GG_TEST_SUP_FIXTURE_H

#include <string.h>

#include <cjson/cJSON.h>

#include "meta.h"
#include "outbuf.h"

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

/* The group fixture of a test file: a registry holding the tables of meta_text, then the reserved tables that
 * reserved registers (either may be NULL), freed at the end. Once a file, in place of GG_TEST_GROUP. */
#define GG_TEST_GROUP_REG(meta_text, reserved)                  \
	static int reg_group_setup(void **state)                \
	{                                                       \
		return reg_group_fill((meta_text), (reserved)); \
	}                                                       \
	GG_TEST_GROUP(reg_group_setup, reg_teardown)

static inline int reg_group_fill(const char *meta_text,
				 int (*reserved)(struct meta_registry *reg, char *err, size_t errlen))
{
	char err[256];

	reg_setup(meta_text);
	if (reserved)
		assert_int_equal(reserved(reg, err, sizeof(err)), 0);
	return 0;
}

/* One record rendered into JSON: the record of a line of the registry's tables and the buffer it is
 * rendered into. */
struct rendering {
	struct meta_record rec;
	struct gg_buf b;
};

static inline void render_begin(struct rendering *r, const char *line)
{
	assert_int_equal(meta_record__parse(reg, line, strlen(line), &r->rec, NULL), META_OK);
	gg_buf__init(&r->b, 0);
}

/* The rendered line parsed (one line: no newline in it), or NULL when the rendering failed (render_err). */
static inline cJSON *render_end(struct rendering *r, int render_err)
{
	cJSON *j = NULL;

	if (!render_err) {
		assert_null(memchr(r->b.data, '\n', r->b.len));
		j = cJSON_Parse(r->b.data);
		assert_non_null(j);
	}
	gg_buf__fini(&r->b);
	return j;
}

#endif
