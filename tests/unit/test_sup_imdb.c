/* test_sup_imdb.c - unit tests of the supervisor's in-memory tables: one row per key, replacement,
 * limits (tables, records, metrics, bytes), aging, drop accounting, and bounded memory under a flood
 * of unique keys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "../../supervisor/export/imdb.h"
#include "../../supervisor/export/prom.h"
#include "test_sup_fixture.h"

static const char *META = "version = \"1.0.0\";\n"
			  "measurements: (\n"
			  " { table_name: \"t1\", entity_name: \"ent\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"k\" },\n"
			  "   { description: \"label\", type: \"label\", name: \"l\" },\n"
			  "   { description: \"a gauge\", type: \"gauge\", name: \"g\" },\n"
			  "   { description: \"a counter\", type: \"counter\", name: \"c\" } ) },\n"
			  " { table_name: \"t2\", entity_name: \"ent2\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"k\" },\n"
			  "   { description: \"v\", type: \"gauge\", name: \"v\" } ) },\n"
			  " { table_name: \"wide\", entity_name: \"wide\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"k\" },\n"
			  "   { description: \"a\", type: \"gauge\", name: \"a\" },\n"
			  "   { description: \"b\", type: \"gauge\", name: \"b\" },\n"
			  "   { description: \"c\", type: \"gauge\", name: \"c\" } ) },\n"
			  " { table_name: \"mk\", entity_name: \"mk\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"machine_id\" },\n"
			  "   { description: \"key\", type: \"key\", name: \"k\" },\n"
			  "   { description: \"v\", type: \"gauge\", name: \"v\" } ) }\n"
			  ");\n";

static const struct imdb_limits def_limits = {
	.max_tables = 8, .max_records = 100, .max_metrics = 3, .max_bytes = 64u << 20, .record_timeout_ms = 1000};

static const char *const extra_names[] = {"machine_id", "hostname", NULL};

static struct imdb *new_db(const struct imdb_limits *lim)
{
	struct imdb *db = imdb__new(lim, "machine_id=\"m1\",hostname=\"h\"", extra_names);

	assert_non_null(db);
	return db;
}

static int put(struct imdb *db, const char *line, uint64_t now, enum imdb_drop *why)
{
	struct meta_record rec;

	assert_int_equal(meta_record__parse(reg, line, strlen(line), &rec, NULL), META_OK);
	return imdb__update(db, &rec, now, why);
}

static const struct imdb_table *table_named(const struct imdb *db, const char *name)
{
	for (unsigned int i = 0; i < imdb__ntables(db); i++) {
		if (!strcmp(imdb__table(db, i)->meta->name, name))
			return imdb__table(db, i);
	}
	return NULL;
}

static char *render(const struct imdb *db, struct prom_families *fams)
{
	struct gg_buf b;

	gg_buf__init(&b, 0);
	prom_render_imdb(&b, db, fams, NULL, NULL);
	assert_false(b.oom);
	return gg_buf__steal(&b, NULL);
}

GG_TEST(test_replace_one_row_per_key)
{
	struct imdb *db = new_db(&def_limits);
	struct prom_families *fams = prom_families__new();
	const struct imdb_table *t;
	char *txt;

	assert_int_equal(put(db, "|t1|a|x|1|10|", 0, NULL), 0);
	assert_int_equal(put(db, "|t1|b|y|2|20|", 0, NULL), 0);
	assert_int_equal(put(db, "|t1|a|x2|3.5|11|", 5, NULL), 0); /* replaces a */
	t = table_named(db, "t1");
	assert_non_null(t);
	assert_int_equal(t->age.n, 2);
	assert_int_equal(t->updates, 3);
	assert_int_equal(imdb__rows(db), 2);
	txt = render(db, fams);
	/* a is the most recently updated row: rendered last; its label and values are the new ones */
	assert_string_equal(txt, "# HELP gala_gopher_ent_g a gauge\n"
				 "# TYPE gala_gopher_ent_g gauge\n"
				 "gala_gopher_ent_g{k=\"b\",l=\"y\",machine_id=\"m1\",hostname=\"h\"} 2\n"
				 "gala_gopher_ent_g{k=\"a\",l=\"x2\",machine_id=\"m1\",hostname=\"h\"} 3.5\n"
				 "# HELP gala_gopher_ent_c a counter\n"
				 "# TYPE gala_gopher_ent_c counter\n"
				 "gala_gopher_ent_c{k=\"b\",l=\"y\",machine_id=\"m1\",hostname=\"h\"} 20\n"
				 "gala_gopher_ent_c{k=\"a\",l=\"x2\",machine_id=\"m1\",hostname=\"h\"} 11\n");
	free(txt);
	/* rendering is read-only: the same text twice */
	txt = render(db, fams);
	assert_non_null(strstr(txt, "gala_gopher_ent_c{k=\"a\",l=\"x2\",machine_id=\"m1\",hostname=\"h\"} 11\n"));
	free(txt);
	assert_int_equal(imdb__rows(db), 2);
	prom_families__free(fams);
	imdb__free(db);
}

GG_TEST(test_extra_label_wins)
{
	struct imdb *db = new_db(&def_limits);
	struct prom_families *fams = prom_families__new();
	char *txt;

	/* a table with its own machine_id key: the supervisor's value is the one exported */
	assert_int_equal(put(db, "|mk|probe-said|k1|4|", 0, NULL), 0);
	assert_int_equal(put(db, "|mk|other|k1|5|", 0, NULL), 0); /* a different key (machine_id differs) */
	txt = render(db, fams);
	assert_null(strstr(txt, "probe-said"));
	assert_non_null(strstr(txt, "gala_gopher_mk_v{k=\"k1\",machine_id=\"m1\",hostname=\"h\"} 4\n"));
	free(txt);
	prom_families__free(fams);
	imdb__free(db);
}

GG_TEST(test_max_records_and_aging)
{
	struct imdb_limits lim = def_limits;
	struct imdb *db;
	const struct imdb_table *t;
	enum imdb_drop why = IMDB_DROP__COUNT;
	char line[64];

	lim.max_records = 10;
	db = new_db(&lim);
	for (int i = 0; i < 15; i++) {
		snprintf(line, sizeof(line), "|t2|k%d|%d|", i, i);
		assert_int_equal(put(db, line, (uint64_t)i * 100, i < 10 ? NULL : &why), i < 10 ? 0 : -ENOSPC);
	}
	assert_int_equal(why, IMDB_DROP_MAX_RECORDS);
	t = table_named(db, "t2");
	assert_int_equal(t->age.n, 10);
	assert_int_equal(t->dropped[IMDB_DROP_MAX_RECORDS], 5);
	/* an existing key is still updated when the table is full */
	assert_int_equal(put(db, "|t2|k0|100|", 1500, NULL), 0);
	/* rows k1..k9 were updated at 100..900 ms, k0 at 1500: at 1850 k1..k8 are older than 1000 ms */
	assert_int_equal(imdb__expire(db, 1850), 8);
	assert_int_equal(t->age.n, 2);
	assert_int_equal(t->expired, 8);
	/* room again */
	assert_int_equal(put(db, "|t2|new|1|", 1900, NULL), 0);
	assert_int_equal(t->age.n, 3);
	assert_int_equal(imdb__expire(db, 10000), 3);
	assert_int_equal(imdb__rows(db), 0);
	imdb__free(db);
}

GG_TEST(test_max_tables_and_metrics)
{
	struct imdb_limits lim = def_limits;
	struct imdb *db;
	enum imdb_drop why;

	lim.max_tables = 1;
	lim.max_metrics = 2;
	db = new_db(&lim);
	assert_int_equal(put(db, "|t1|a|x|1|1|", 0, NULL), 0);
	assert_int_equal(put(db, "|t2|a|1|", 0, &why), -ENOSPC);
	assert_int_equal(why, IMDB_DROP_MAX_TABLES);
	assert_int_equal(put(db, "|t2|b|1|", 0, &why), -ENOSPC);
	assert_int_equal(table_named(db, "t2")->dropped[IMDB_DROP_MAX_TABLES], 2);
	/* three metric fields > max_metrics 2: refused for that reason, not for max_tables */
	assert_int_equal(put(db, "|wide|a|1|2|3|", 0, &why), -ENOSPC);
	assert_int_equal(why, IMDB_DROP_MAX_METRICS);
	assert_int_equal(table_named(db, "wide")->dropped[IMDB_DROP_MAX_METRICS], 1);
	assert_int_equal(imdb__rows(db), 1);
	imdb__free(db);
}

/* A probe sending a million unique keys: the table stops at max_records, the memory at max_bytes,
 * every refusal is counted. */
GG_TEST(test_unique_key_flood_is_bounded)
{
	struct imdb_limits lim = def_limits;
	struct imdb *db;
	const struct imdb_table *t;
	char line[128];
	uint64_t stored = 0;

	lim.max_records = 1000000;
	lim.max_bytes = 4u << 20;
	db = new_db(&lim);
	for (int i = 0; i < 1000000; i++) {
		snprintf(line, sizeof(line), "|t1|flood-key-%d|some label text|%d|%d|", i, i, i);
		if (put(db, line, 0, NULL) == 0)
			stored++;
	}
	t = table_named(db, "t1");
	assert_true(imdb__bytes(db) <= lim.max_bytes);
	assert_true(stored > 1000); /* something was stored */
	assert_int_equal(t->age.n, stored);
	assert_int_equal(t->dropped[IMDB_DROP_MEMORY], 1000000 - stored);
	imdb__free(db);
}

GG_TEST(test_value_growth_within_memory_bound)
{
	struct imdb_limits lim = def_limits;
	struct imdb *db;
	char line[1200], lbl[1025];

	db = new_db(&lim);
	assert_int_equal(put(db, "|t1|a|x|1|1|", 0, NULL), 0);
	memset(lbl, 'z', 1024);
	lbl[1024] = 0;
	snprintf(line, sizeof(line), "|t1|a|%s|1|1|", lbl);
	lim.max_bytes = imdb__bytes(db) + 100;
	imdb__free(db);
	db = new_db(&lim);
	assert_int_equal(put(db, "|t1|a|x|1|1|", 0, NULL), 0);
	/* replacing the row with a 1 KiB label would cross max_bytes: refused, the old values stay */
	assert_int_equal(put(db, line, 0, NULL), -ENOSPC);
	assert_int_equal(table_named(db, "t1")->dropped[IMDB_DROP_MEMORY], 1);
	assert_int_equal(table_named(db, "t1")->age.n, 1);
	imdb__free(db);
}

GG_TEST_GROUP_REG(META, NULL);
