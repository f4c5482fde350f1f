/* test_sup_prom.c - unit tests of the exporters' text encoders: Prometheus exposition of the imdb
 * (escaping, histograms and summaries, families shared by tables of one entity, type conflicts,
 * reserved names), JSON escaping, number formatting, the output buffer's bound, metadata messages. */
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
#include "../../supervisor/export/metadata.h"
#include "../../supervisor/export/prom.h"
#include "test_sup_fixture.h"

static const char *META = "version = \"2.1.0\";\n"
			  "measurements: (\n"
			  " { table_name: \"h\", entity_name: \"h\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"k\" },\n"
			  "   { description: \"latency (us)\", type: \"histogram\", name: \"lat\" },\n"
			  "   { description: \"quantiles\", type: \"summary\", name: \"q\" } ) },\n"
			  " { table_name: \"link_a\", entity_name: \"link\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"id\" },\n"
			  "   { description: \"rx \\\\ bytes\\nline2\", type: \"counter\", name: \"rx\" },\n"
			  "   { description: \"state\", type: \"gauge\", name: \"state\" } ) },\n"
			  " { table_name: \"link_b\", entity_name: \"link\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"id\" },\n"
			  "   { description: \"a label\", type: \"label\", name: \"comm\" },\n"
			  "   { description: \"rx again\", type: \"counter\", name: \"rx\" },\n"
			  "   { description: \"state as a counter\", type: \"counter\", name: \"state\" },\n"
			  "   { description: \"reserved\", type: \"gauge\", name: \"up\" } ) }\n"
			  ");\n";

static const struct imdb_limits lim = {16, 100, 16, 64u << 20, 0};
static const char *const extra_names[] = {"machine_id", "hostname", NULL};

static void put(struct imdb *db, const char *line)
{
	struct meta_record rec;

	assert_int_equal(meta_record__parse(reg, line, strlen(line), &rec, NULL), META_OK);
	assert_int_equal(imdb__update(db, &rec, 0, NULL), 0);
}

static int reserved_up(const char *name)
{
	return !strcmp(name, "gala_gopher_link_up");
}

GG_TEST(test_escaping)
{
	struct gg_buf b;

	gg_buf__init(&b, 0);
	gg_buf__put_prom_label(&b, "a\"b\\c\nd", 7);
	assert_string_equal(b.data, "a\\\"b\\\\c\\nd");
	b.len = 0;
	gg_buf__put_prom_help(&b, "x\\y\nz\"", 6);
	assert_string_equal(b.data, "x\\\\y\\nz\"");
	b.len = 0;
	gg_buf__put_json_str(&b, "q\"b\\s\x01t\tn\n", 10);
	assert_string_equal(b.data, "\"q\\\"b\\\\s\\u0001t\\tn\\n\"");
	b.len = 0;
	gg_buf__put_json_number(&b, "007", 3); /* not JSON as it stands */
	gg_buf__putc(&b, ' ');
	gg_buf__put_json_number(&b, "-1.5e3", 6);
	gg_buf__putc(&b, ' ');
	gg_buf__put_double(&b, 0.1);
	gg_buf__putc(&b, ' ');
	gg_buf__put_double(&b, 1e300);
	gg_buf__putc(&b, ' ');
	gg_buf__put_u64(&b, 18446744073709551615ull);
	assert_string_equal(b.data, "7 -1.5e3 0.1 1e+300 18446744073709551615");
	gg_buf__fini(&b);
}

GG_TEST(test_buffer_bound)
{
	struct gg_buf b;
	char big[200];

	memset(big, 'x', sizeof(big));
	gg_buf__init(&b, 100);
	gg_buf__put(&b, big, 60);
	assert_false(b.oom);
	gg_buf__put(&b, big, 60); /* 120 > 100 */
	assert_true(b.oom);
	gg_buf__puts(&b, "more");
	assert_null(gg_buf__steal(&b, NULL));
	gg_buf__fini(&b);
}

GG_TEST(test_histogram_and_summary)
{
	struct imdb *db = imdb__new(&lim, "machine_id=\"m\",hostname=\"h\"", extra_names);
	struct prom_families *f = prom_families__new();
	struct gg_buf b;
	uint64_t lines;

	put(db, "|h|a\"b|3 10 1 100 4 1000 6 12345.5 9|2 0.5 1.25 0.99 7 30 20|");
	gg_buf__init(&b, 0);
	lines = prom_render_imdb(&b, db, f, NULL, NULL);
	assert_string_equal(b.data,
			    "# HELP gala_gopher_h_lat latency (us)\n"
			    "# TYPE gala_gopher_h_lat histogram\n"
			    "gala_gopher_h_lat_bucket{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\",le=\"10\"} 1\n"
			    "gala_gopher_h_lat_bucket{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\",le=\"100\"} 4\n"
			    "gala_gopher_h_lat_bucket{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\",le=\"1000\"} 6\n"
			    "gala_gopher_h_lat_bucket{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\",le=\"+Inf\"} 9\n"
			    "gala_gopher_h_lat_sum{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\"} 12345.5\n"
			    "gala_gopher_h_lat_count{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\"} 9\n"
			    "# HELP gala_gopher_h_q quantiles\n"
			    "# TYPE gala_gopher_h_q summary\n"
			    "gala_gopher_h_q{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\",quantile=\"0.5\"} 1.25\n"
			    "gala_gopher_h_q{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\",quantile=\"0.99\"} 7\n"
			    "gala_gopher_h_q_sum{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\"} 30\n"
			    "gala_gopher_h_q_count{k=\"a\\\"b\",machine_id=\"m\",hostname=\"h\"} 20\n");
	assert_int_equal(lines, 10);
	gg_buf__fini(&b);
	prom_families__free(f);
	imdb__free(db);
}

/* Two tables of entity "link": rx is one family with both tables' rows; state is a gauge in link_a and
 * a counter in link_b, so link_b's state is left out (a conflict); link_b's up is reserved. */
GG_TEST(test_shared_families)
{
	struct imdb *db = imdb__new(&lim, "machine_id=\"m\",hostname=\"h\"", extra_names);
	struct prom_families *f = prom_families__new();
	struct gg_buf b;
	uint64_t conflicts = 0;

	put(db, "|link_a|1|100|1|");
	put(db, "|link_b|2|nginx|200|5|1|");
	gg_buf__init(&b, 0);
	prom_render_imdb(&b, db, f, reserved_up, &conflicts);
	assert_string_equal(b.data, "# HELP gala_gopher_link_rx rx \\\\ bytes\\nline2\n"
				    "# TYPE gala_gopher_link_rx counter\n"
				    "gala_gopher_link_rx{id=\"1\",machine_id=\"m\",hostname=\"h\"} 100\n"
				    "gala_gopher_link_rx{id=\"2\",comm=\"nginx\",machine_id=\"m\",hostname=\"h\"} 200\n"
				    "# HELP gala_gopher_link_state state\n"
				    "# TYPE gala_gopher_link_state gauge\n"
				    "gala_gopher_link_state{id=\"1\",machine_id=\"m\",hostname=\"h\"} 1\n");
	assert_int_equal(conflicts, 2);
	/* the family cache is rebuilt when a table appears: same answer from a fresh cache */
	b.len = 0;
	put(db, "|h|x|1 1 1 1 1|1 0.5 1 1 1|");
	prom_render_imdb(&b, db, f, reserved_up, &conflicts);
	assert_non_null(
		strstr(b.data, "gala_gopher_h_lat_bucket{k=\"x\",machine_id=\"m\",hostname=\"h\",le=\"+Inf\"} 1\n"));
	assert_non_null(strstr(b.data, "gala_gopher_link_rx{id=\"2\""));
	gg_buf__fini(&b);
	prom_families__free(f);
	imdb__free(db);
}

GG_TEST(test_metadata)
{
	struct gg_buf b;

	gg_buf__init(&b, 0);
	gg_metadata__render(&b, meta_registry__find(reg, "link_b", 6), 1234);
	assert_string_equal(
		b.data, "{\"timestamp\":1234,\"meta_name\":\"link_b\",\"entity_name\":\"link\",\"version\":\"2.1.0\","
			"\"keys\":[\"machine_id\",\"id\"],\"labels\":[\"hostname\",\"comm\"],"
			"\"metrics\":[\"rx\",\"state\",\"up\"]}");
	gg_buf__fini(&b);
}

GG_TEST_GROUP_REG(META, NULL);
