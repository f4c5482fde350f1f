/* test_meta.c - unit tests of schema/: .meta loading and its errors, record validation, value parsers. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "meta.h"
#include "test_tmpdir.h"

/* gala-gopher's own style: a comma after every setting, also the last one of a group. */
static const char system_cpu_meta[] =
	"version = \"1.0.0\"\n"
	"\n"
	"measurements:\n"
	"(\n"
	"    {\n"
	"        table_name: \"system_cpu\",\n"
	"        entity_name: \"cpu\",\n"
	"        fields:\n"
	"        (\n"
	"            {\n"
	"                description: \"Cpu number\",\n"
	"                type: \"key\",\n"
	"                name: \"cpu\",\n"
	"            },\n"
	"            { description: \"Count of rcu lock in softirqs\", type: \"gauge\", name: \"rcu\", },\n"
	"            { description: \"Count of timer in softirqs\", type: \"gauge\", name: \"timer\", },\n"
	"            { description: \"Count of schedules in softirqs\", type: \"gauge\", name: \"sched\", },\n"
	"            { description: \"Count of network receive in softirqs\", type: \"gauge\", name: \"net_rx\", },\n"
	"            { description: \"cpu_user_total_second\", type: \"counter\", name: \"user_total_second\", },\n"
	"            { description: \"cpu_nice_total_second\", type: \"counter\", name: \"nice_total_second\", },\n"
	"            { description: \"cpu_system_total_second\", type: \"counter\", name: \"system_total_second\", },\n"
	"            { description: \"cpu_iowait_total_second\", type: \"counter\", name: \"iowait_total_second\", },\n"
	"            { description: \"cpu_irq_total_second\", type: \"counter\", name: \"irq_total_second\", },\n"
	"            { description: \"cpu_softirq_total_second\", type: \"counter\", name: \"softirq_total_second\", "
	"},\n"
	"            { description: \"Host name\", type: \"label\", name: \"host\", },\n"
	"            {\n"
	"                description: \"Run queue latency\",\n"
	"                type: \"histogram\",\n"
	"                name: \"runq_latency\",\n"
	"            }\n"
	"        )\n"
	"    },\n"
	"    {\n"
	"        table_name: \"system_cpu_util\",\n"
	"        entity_name: \"cpu\",\n"
	"        fields:\n"
	"        (\n"
	"            { description: \"Cpu number\", type: \"key\", name: \"cpu\", },\n"
	"            { description: \"utilisation\", type: \"gauge\", name: \"util\", },\n"
	"            { description: \"latency quantiles\", type: \"summary\", name: \"lat\", }\n"
	"        )\n"
	"    }\n"
	")\n";

#define CPU_REC_OK "|system_cpu|3|1|2|3|4|5.5|6|7|8|9|10|host-a|2 10 1 100 5 123.5 7|"

/* ---- helpers ---------------------------------------------------------------------------------- */

static struct meta_registry *load_ok(const char *text)
{
	struct meta_registry *reg = meta_registry__new();
	char err[512] = "";
	int r;

	assert_non_null(reg);
	r = meta_registry__load_buf(reg, "test.meta", text, strlen(text), err, sizeof(err));
	if (r != 0)
		fail_msg("load failed (%d): %s", r, err);
	return reg;
}

/* A one-table file: "t" with the given field list text. */
static char *table_text(const char *fields)
{
	char *s;

	assert_true(asprintf(&s,
			     "version = \"1\"\nmeasurements = ({ table_name = \"t\"; entity_name = \"e\";\n"
			     "fields = (%s); });\n",
			     fields) > 0);
	return s;
}

static int setup_cpu(void **state)
{
	*state = load_ok(system_cpu_meta);
	return 0;
}

static int teardown_reg(void **state)
{
	meta_registry__free(*state);
	return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static char *make_tmpdir(void)
{
	char *d = strdup("/tmp/test_meta.XXXXXX");

	assert_non_null(d);
	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_tmpdir(char *d)
{
	assert_int_equal(rm_tree(d), 0);
	free(d);
}

/* ---- loading ---------------------------------------------------------------------------------- */

GG_TEST_SETUP_TEARDOWN(test_load_gala_gopher_style, setup_cpu, teardown_reg)
{
	struct meta_registry *reg = *state;
	const struct meta_table *t;

	assert_int_equal(meta_registry__count(reg), 2);
	t = meta_registry__find(reg, "system_cpu", 10);
	assert_non_null(t);
	assert_ptr_equal(t, meta_registry__at(reg, 0));
	assert_string_equal(t->name, "system_cpu");
	assert_string_equal(t->entity, "cpu");
	assert_string_equal(t->version, "1.0.0");
	assert_string_equal(t->source, "test.meta");
	assert_int_equal(t->nfields, 13);
	assert_int_equal(t->nkeys, 1);
	assert_string_equal(t->fields[0].name, "cpu");
	assert_string_equal(t->fields[0].description, "Cpu number");
	assert_int_equal(t->fields[0].type, META_KEY);
	assert_int_equal(t->fields[1].type, META_GAUGE);
	assert_int_equal(t->fields[5].type, META_COUNTER);
	assert_string_equal(t->fields[11].name, "host");
	assert_int_equal(t->fields[11].type, META_LABEL);
	assert_int_equal(t->fields[12].type, META_HISTOGRAM);

	t = meta_registry__find(reg, "system_cpu_util", 15);
	assert_non_null(t);
	assert_ptr_equal(t, meta_registry__at(reg, 1));
	assert_int_equal(t->nfields, 3);
	assert_int_equal(t->fields[2].type, META_SUMMARY);
	assert_null(meta_registry__at(reg, 2));
}

GG_TEST_SETUP_TEARDOWN(test_find, setup_cpu, teardown_reg)
{
	struct meta_registry *reg = *state;
	const char buf[] = "system_cpu_utilXYZ";

	/* lookups by (ptr, len) in a buffer that is not NUL-terminated at len */
	assert_string_equal(meta_registry__find(reg, buf, 10)->name, "system_cpu");
	assert_string_equal(meta_registry__find(reg, buf, 15)->name, "system_cpu_util");
	assert_null(meta_registry__find(reg, buf, 9));
	assert_null(meta_registry__find(reg, buf, 16));
	assert_null(meta_registry__find(reg, buf, 0));
	assert_null(meta_registry__find(reg, "nope", 4));
	assert_null(meta_registry__find(NULL, "system_cpu", 10));
	assert_int_equal(meta_registry__count(NULL), 0);
	assert_null(meta_registry__at(NULL, 0));
}

GG_TEST(test_many_tables)
{
	struct meta_registry *reg = meta_registry__new();
	char err[256];
	char name[32];

	assert_non_null(reg);
	/* 20 files of 50 tables: the hash table grows several times */
	for (int f = 0; f < 20; f++) {
		size_t cap = 100000, len = 0;
		char *text = malloc(cap);

		assert_non_null(text);
		len += (size_t)snprintf(text + len, cap - len, "version = \"1\"\nmeasurements = (");
		for (int i = 0; i < 50; i++)
			len += (size_t)snprintf(text + len, cap - len,
						"%s{ table_name = \"tbl_%d_%d\"; entity_name = \"e\";"
						" fields = ({ name = \"k\"; type = \"key\"; }); }",
						i ? "," : "", f, i);
		len += (size_t)snprintf(text + len, cap - len, ");\n");
		assert_int_equal(meta_registry__load_buf(reg, "many.meta", text, len, err, sizeof(err)), 0);
		free(text);
	}
	assert_int_equal(meta_registry__count(reg), 1000);
	for (int f = 0; f < 20; f++) {
		for (int i = 0; i < 50; i++) {
			int n = snprintf(name, sizeof(name), "tbl_%d_%d", f, i);
			const struct meta_table *t = meta_registry__find(reg, name, (size_t)n);

			assert_non_null(t);
			assert_string_equal(t->name, name);
			assert_ptr_equal(t, meta_registry__at(reg, (unsigned int)(f * 50 + i)));
		}
	}
	assert_null(meta_registry__find(reg, "tbl_20_0", 8));
	meta_registry__free(reg);

	/* at most META_TABLES_MAX tables */
	size_t cap = (META_TABLES_MAX + 1) * 100 + 100, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	reg = meta_registry__new();
	len += (size_t)snprintf(text + len, cap - len, "version = \"1\"\nmeasurements = (");
	for (unsigned int i = 0; i <= META_TABLES_MAX; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"%s{ table_name = \"t%u\"; entity_name = \"e\"; fields = ({ name = \"k\"; type "
					"= \"key\"; }); }\n",
					i ? "," : "", i);
	len += (size_t)snprintf(text + len, cap - len, ");\n");
	assert_int_equal(meta_registry__load_buf(reg, "big.meta", text, len, err, sizeof(err)), -ENOSPC);
	assert_string_equal(err, "big.meta:2: more than 4096 tables");
	assert_int_equal(meta_registry__count(reg), 0);
	meta_registry__free(reg);
	free(text);
}

GG_TEST(test_trailing_comma_in_lists)
{
	/* accepted by libconfig >= 1.7, so upstream files may have them; also behind comments */
	struct meta_registry *reg =
		load_ok("version = \"1\"\nmeasurements = (\n"
			"  { table_name = \"t\"; entity_name = \"e\";\n"
			"    fields = ( { name = \"k\"; type = \"key\"; }, # comment\n"
			"               { name = \"v\"; type = \"gauge\"; }, /* c */ ); },\n"
			"  { table_name = \"u\"; entity_name = \"e\";\n"
			"    fields = ( { name = \"k\"; type = \"key\"; description = \"a, \" \") b\"; }, ); },\n"
			"// last\n);\nunused = [1, 2, ];\nstrs = ( \"a\", \"b\" \"c\", [ \"d\", \"e\" ], );\n");

	assert_int_equal(meta_registry__count(reg), 2);
	assert_int_equal(meta_registry__find(reg, "t", 1)->nfields, 2);
	assert_string_equal(meta_registry__find(reg, "u", 1)->fields[0].description, "a, ) b");
	meta_registry__free(reg);
}

GG_TEST(test_limits_ok)
{
	/* 63-byte names, a 511-byte description and META_FIELDS_MAX fields are all fine */
	char name63[64], desc[600], *fields, *text;
	size_t cap = META_FIELDS_MAX * 64 + 1024, len = 0;
	struct meta_registry *reg;

	memset(name63, 'n', 63);
	name63[63] = '\0';
	memset(desc, 'd', 511);
	desc[511] = '\0';
	fields = malloc(cap);
	assert_non_null(fields);
	len += (size_t)snprintf(fields, cap, "{ name = \"%s\"; type = \"key\"; description = \"%s\"; }", name63, desc);
	for (unsigned int i = 1; i < META_FIELDS_MAX; i++)
		len += (size_t)snprintf(fields + len, cap - len, ", { name = \"f%u\"; type = \"gauge\"; }", i);
	text = table_text(fields);
	reg = load_ok(text);
	assert_int_equal(meta_registry__find(reg, "t", 1)->nfields, META_FIELDS_MAX);
	assert_string_equal(meta_registry__find(reg, "t", 1)->fields[0].name, name63);
	meta_registry__free(reg);
	free(text);
	free(fields);
}

struct load_case {
	const char *text; /* NULL: fields text is in fields */
	const char *fields;
	int ret;
	const char *msg; /* expected message, exactly */
};

static void check_load_error(const struct load_case *c)
{
	struct meta_registry *reg = meta_registry__new();
	char *text = c->text ? strdup(c->text) : table_text(c->fields);
	char err[512];
	int r;

	assert_non_null(reg);
	assert_non_null(text);
	r = meta_registry__load_buf(reg, "schema/foo.meta", text, strlen(text), err, sizeof(err));
	if (r != c->ret || strcmp(err, c->msg) != 0)
		fail_msg("for:\n%s\ngot %d '%s'\nwant %d '%s'", text, r, err, c->ret, c->msg);
	assert_int_equal(meta_registry__count(reg), 0);
	free(text);
	meta_registry__free(reg);
}

GG_TEST(test_load_errors)
{
	static const char K[] = "{ name = \"k\"; type = \"key\"; }";
	char long_name[100], long_desc[600], fields[2000], *many;
	size_t cap = (META_FIELDS_MAX + 1) * 48 + 64, len = 0;
	const struct load_case cases[] = {
		{"version = \"1\"\nmeasurements = ( {\n oops }\n);\n", NULL, -EINVAL,
		 "schema/foo.meta:3: syntax error"},
		{"measurements = ();\n", NULL, -EINVAL, "schema/foo.meta: missing version"},
		{"version = 1;\nmeasurements = ();\n", NULL, -EINVAL, "schema/foo.meta:1: version is not a string"},
		{"version = \"1\";\n", NULL, -EINVAL, "schema/foo.meta: missing measurements"},
		{"version = \"1\";\n\nmeasurements = { a = 1; };\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurements is not a list ( ... )"},
		{"version = \"1\";\nmeasurements = ();\n", NULL, -EINVAL, "schema/foo.meta:2: measurements is empty"},
		{"version = \"1\";\nmeasurements = (\n 1 );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurement 1: not a group { ... }"},
		{"version = \"1\";\nmeasurements = (\n { entity_name = \"e\"; fields = (); } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurement 1: missing table_name"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"1x\"; } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurement 1: table_name '1x' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"a-b\"; } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurement 1: table_name 'a-b' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"\"; } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurement 1: table_name is empty"},
		{"version = \"1\";\nmeasurements = (\n { table_name = 3; } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: measurement 1: table_name is not a string"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"t\"; fields = (); } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: table 't': missing entity_name"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"t\"; entity_name = \"e\"; } );\n", NULL,
		 -EINVAL, "schema/foo.meta:3: table 't': missing fields"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"t\"; entity_name = \"e\";\n fields = 1; } );\n",
		 NULL, -EINVAL, "schema/foo.meta:4: table 't': fields is not a list ( ... )"},
		{NULL, "", -EINVAL, "schema/foo.meta:3: table 't': 0 fields, expected 1 to 256"},
		{NULL, "1", -EINVAL, "schema/foo.meta:3: table 't': field 1: not a group { ... }"},
		{NULL, "{ type = \"key\"; }", -EINVAL, "schema/foo.meta:3: table 't': field 1: missing name"},
		{NULL, "{ name = \"a.b\"; type = \"key\"; }", -EINVAL,
		 "schema/foo.meta:3: table 't': field 1: name 'a.b' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)"},
		{NULL, "{ name = \"k\"; }", -EINVAL, "schema/foo.meta:3: table 't': field 1: missing type"},
		{NULL, "{ name = \"k\"; type = 1; }", -EINVAL,
		 "schema/foo.meta:3: table 't': field 1: type is not a string"},
		{"version = \"1\";\nmeasurements = ({ table_name = \"x\"; entity_name = \"e\"; fields = (\n"
		 "  { name = \"k\"; type = \"key\"; },\n  { name = \"a\"; type = \"gauge\"; },\n"
		 "  { name = \"b\";\n    type = \"gauge2\"; }\n); });\n",
		 NULL, -EINVAL,
		 "schema/foo.meta:6: table 'x': field 3: unknown type 'gauge2' (key, label, gauge, counter, "
		 "histogram or summary)"},
		{NULL, "{ name = \"k\"; type = \"key\"; description = 7; }", -EINVAL,
		 "schema/foo.meta:3: table 't': field 1: description is not a string"},
		{NULL, "{ name = \"k\"; type = \"key\"; }, { name = \"k\"; type = \"gauge\"; }", -EINVAL,
		 "schema/foo.meta:3: table 't': field 2: duplicate field name 'k'"},
		{NULL, "{ name = \"g\"; type = \"gauge\"; }, { name = \"l\"; type = \"label\"; }", -EINVAL,
		 "schema/foo.meta:2: table 't': no field of type key"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"t\"; entity_name = \"e\"; fields = ({ name = "
		 "\"k\"; type = \"key\"; }); },\n { table_name = \"t\"; entity_name = \"e\"; fields = ({ name = "
		 "\"k\"; type = \"key\"; }); });\n",
		 NULL, -EEXIST, "schema/foo.meta:4: table 't' defined twice"},
		{"version = \"1\";\n@include \"/etc/passwd\"\n", NULL, -EINVAL,
		 "schema/foo.meta:2: @include is not supported in .meta files"},
		{"version = \"1\";\n\n\nmeasurements = (\n", NULL, -EINVAL,
		 "schema/foo.meta:5: syntax error"}, /* at the end */
		/* strings where libconfig 1.5 would fail on them (and leak them): caught before it */
		{"\"x\"\n", NULL, -EINVAL, "schema/foo.meta:1: syntax error"},
		{"version = \"1\";\nmeasurements = (\n { table_name = \"t\", \"u\" } );\n", NULL, -EINVAL,
		 "schema/foo.meta:3: syntax error"},
		{"version = \"1\" \n\"2\" x\n", NULL, -EINVAL, "schema/foo.meta:3: syntax error"},
		{"version = 1 \"x\";\n", NULL, -EINVAL, "schema/foo.meta:1: syntax error"},
		{"version = \"1\";\nx = [ 1 \"x\" ];\n", NULL, -EINVAL, "schema/foo.meta:2: syntax error"},
		{"version = \"1\";\nx = { \"x\" };\n", NULL, -EINVAL, "schema/foo.meta:2: syntax error"},
		{"version = \"1\";\nx \"x\";\n", NULL, -EINVAL, "schema/foo.meta:2: syntax error"},
		{"version = \"1\";\nx = \"abc\n\n", NULL, -EINVAL, "schema/foo.meta:2: unterminated string"},
		{"version = \"1\";\nx = \"abc\\\"", NULL, -EINVAL, "schema/foo.meta:2: unterminated string"},
		{"version = \"1\";\nx = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((();\n", NULL,
		 -EINVAL, "schema/foo.meta:2: nested deeper than 64"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_load_error(&cases[i]);

	/* bounds: names, descriptions, version, field count */
	memset(long_name, 'a', 64);
	long_name[64] = '\0';
	snprintf(fields, sizeof(fields), "%s, { name = \"%s\"; type = \"gauge\"; }", K, long_name);
	check_load_error(&(struct load_case){NULL, fields, -EINVAL,
					     "schema/foo.meta:3: table 't': field 2: name longer than 63 bytes"});
	memset(long_desc, 'd', 512);
	long_desc[512] = '\0';
	snprintf(fields, sizeof(fields), "{ name = \"k\"; type = \"key\"; description = \"%s\"; }", long_desc);
	check_load_error(&(struct load_case){
		NULL, fields, -EINVAL, "schema/foo.meta:3: table 't': field 1: description longer than 511 bytes"});
	snprintf(fields, sizeof(fields), "version = \"%s\";\nmeasurements = ();\n", long_name);
	check_load_error(&(struct load_case){fields, NULL, -EINVAL, "schema/foo.meta:1: version longer than 63 bytes"});
	snprintf(fields, sizeof(fields), "version = \"1\";\nmeasurements = ({ table_name = \"%s\"; });\n", long_name);
	check_load_error(&(struct load_case){fields, NULL, -EINVAL,
					     "schema/foo.meta:2: measurement 1: table_name longer than 63 bytes"});

	many = malloc(cap);
	assert_non_null(many);
	len += (size_t)snprintf(many, cap, "%s", K);
	for (unsigned int i = 1; i <= META_FIELDS_MAX; i++)
		len += (size_t)snprintf(many + len, cap - len, ", { name = \"f%u\"; type = \"gauge\"; }", i);
	check_load_error(&(struct load_case){NULL, many, -EINVAL,
					     "schema/foo.meta:3: table 't': 257 fields, expected 1 to 256"});
	free(many);
}

GG_TEST(test_load_error_nothing_added)
{
	struct meta_registry *reg = meta_registry__new();
	/* the first table is fine, the second is not: neither may be added */
	const char text[] =
		"version = \"1\";\nmeasurements = (\n"
		" { table_name = \"good\"; entity_name = \"e\"; fields = ({ name = \"k\"; type = \"key\"; }); },\n"
		" { table_name = \"bad\"; entity_name = \"e\"; fields = ({ name = \"k\"; type = \"nope\"; }); });\n";
	char err[256];

	assert_int_equal(meta_registry__load_buf(reg, "x.meta", text, strlen(text), err, sizeof(err)), -EINVAL);
	assert_int_equal(meta_registry__count(reg), 0);
	assert_null(meta_registry__find(reg, "good", 4));
	/* a cut file is a syntax error, and adds nothing either */
	assert_int_equal(
		meta_registry__load_buf(reg, "x.meta", text, (size_t)(strstr(text, ",\n {") - text), err, sizeof(err)),
		-EINVAL);
	assert_int_equal(meta_registry__count(reg), 0);
	meta_registry__free(reg);
}

GG_TEST(test_load_buf_edge)
{
	struct meta_registry *reg = meta_registry__new();
	const char nul[] = "version = \"1\";\n\0measurements = ();\n";
	char err[256];

	/* NUL byte: libconfig would stop there silently */
	assert_int_equal(meta_registry__load_buf(reg, "n.meta", nul, sizeof(nul) - 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "n.meta:2: NUL byte in file");
	/* empty buffer; NULL err is allowed */
	assert_int_equal(meta_registry__load_buf(reg, "e.meta", "", 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "e.meta: missing version");
	assert_int_equal(meta_registry__load_buf(reg, "e.meta", "", 0, NULL, 0), -EINVAL);
	/* tiny err buffer: truncated, still terminated */
	assert_int_equal(meta_registry__load_buf(reg, "e.meta", "", 0, err, 4), -EINVAL);
	assert_string_equal(err, "e.m");
	assert_int_equal(meta_registry__load_buf(NULL, "e.meta", "", 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(meta_registry__load_buf(reg, "big.meta", "", META_FILE_MAX + 1, err, sizeof(err)), -EFBIG);
	assert_int_equal(meta_registry__count(reg), 0);
	meta_registry__free(reg);
	meta_registry__free(NULL);
}

GG_TEST(test_load_file_and_duplicates)
{
	char *dir = make_tmpdir();
	struct meta_registry *reg = meta_registry__new();
	char path[512], path2[512], err[512], want[2048];

	write_file(dir, "cpu.meta", system_cpu_meta);
	write_file(
		dir, "dup.meta",
		"version = \"2\"\nmeasurements = (\n { table_name = \"other\"; entity_name = \"e\"; fields = ({ name = "
		"\"k\"; type = \"key\"; }); },\n { table_name = \"system_cpu_util\"; entity_name = \"e\"; fields = "
		"({ name = \"k\"; type = \"key\"; }); });\n");
	snprintf(path, sizeof(path), "%s/cpu.meta", dir);
	snprintf(path2, sizeof(path2), "%s/dup.meta", dir);

	assert_int_equal(meta_registry__load_file(reg, path, err, sizeof(err)), 0);
	assert_int_equal(meta_registry__count(reg), 2);
	assert_string_equal(meta_registry__find(reg, "system_cpu", 10)->source, path);

	/* a table already loaded from another file: -EEXIST, nothing of dup.meta added */
	assert_int_equal(meta_registry__load_file(reg, path2, err, sizeof(err)), -EEXIST);
	snprintf(want, sizeof(want), "%s:4: table 'system_cpu_util' already defined in %s", path2, path);
	assert_string_equal(err, want);
	assert_int_equal(meta_registry__count(reg), 2);
	assert_null(meta_registry__find(reg, "other", 5));
	/* loading the same file twice is a duplicate too */
	assert_int_equal(meta_registry__load_file(reg, path, err, sizeof(err)), -EEXIST);

	/* missing file, directory */
	snprintf(path, sizeof(path), "%s/missing.meta", dir);
	assert_int_equal(meta_registry__load_file(reg, path, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	assert_string_equal(err, want);
	assert_int_equal(meta_registry__load_file(reg, dir, err, sizeof(err)), -EINVAL);
	assert_int_equal(meta_registry__load_file(reg, "/dev/null", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "/dev/null: not a regular file");

	meta_registry__free(reg);
	rm_tmpdir(dir);
}

GG_TEST(test_load_dir)
{
	char *dir = make_tmpdir();
	struct meta_registry *reg = meta_registry__new();
	char path[512], err[512], want[2048];
	static const char tmpl[] = "version = \"1\"\nmeasurements = ({ table_name = \"%s\"; entity_name = \"e\";"
				   " fields = ({ name = \"k\"; type = \"key\"; }); });\n";
	char text[256];

	snprintf(text, sizeof(text), tmpl, "b_table");
	write_file(dir, "b.meta", text);
	snprintf(text, sizeof(text), tmpl, "a_table");
	write_file(dir, "a.meta", text);
	write_file(dir, "notes.txt", "not a meta file");
	write_file(dir, ".hidden.meta", "garbage");
	write_file(dir, "meta", "garbage");
	snprintf(path, sizeof(path), "%s/sub.meta.d", dir);
	assert_int_equal(mkdir(path, 0700), 0);

	assert_int_equal(meta_registry__load_dir(reg, dir, err, sizeof(err)), 0);
	assert_int_equal(meta_registry__count(reg), 2);
	assert_string_equal(meta_registry__at(reg, 0)->name, "a_table"); /* sorted */
	assert_string_equal(meta_registry__at(reg, 1)->name, "b_table");
	meta_registry__free(reg);

	/* a bad file stops loading; the files before it stay */
	write_file(dir, "c.meta", "version = \"1\"\nmeasurements = (\n  { table_name = \"c\" }\n);\n");
	snprintf(text, sizeof(text), tmpl, "d_table");
	write_file(dir, "d.meta", text);
	reg = meta_registry__new();
	assert_int_equal(meta_registry__load_dir(reg, dir, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s/c.meta:3: table 'c': missing entity_name", dir);
	assert_string_equal(err, want);
	assert_int_equal(meta_registry__count(reg), 2);
	assert_null(meta_registry__find(reg, "d_table", 7));
	meta_registry__free(reg);

	reg = meta_registry__new();
	snprintf(path, sizeof(path), "%s/nodir", dir);
	assert_int_equal(meta_registry__load_dir(reg, path, err, sizeof(err)), -ENOENT);
	meta_registry__free(reg);
	rm_tmpdir(dir);
}

/* One name, one meaning: a field name of one entity in two tables with other labels, or a plain
 * metric named like a histogram's or summary's series, is refused with both tables named; the
 * same label set (one family fed by two tables) and other entities are fine. */
GG_TEST(test_family_collisions)
{
	static const char *const two =
		"version = \"1\"\nmeasurements = (\n"
		" { table_name = \"a\"; entity_name = \"%s\"; fields = ({ name = \"disk\"; type = "
		"\"key\"; }, { name = \"%s\"; type = \"%s\"; }); },\n"
		" { table_name = \"b\"; entity_name = \"%s\"; fields = ({ name = \"disk\"; type = "
		"\"key\"; }, %s{ name = \"%s\"; type = \"%s\"; }); });\n";
	static const struct {
		const char *ent_a, *fa, *ta, *ent_b, *extra_b, *fb, *tb, *err;
	} cases[] = {
		{"block", "read_bytes", "counter", "block", "{ name = \"tgid\"; type = \"key\"; }, ", "read_bytes",
		 "counter",
		 "c.meta: metric gala_gopher_block_read_bytes is in table 'b' and in table 'a' (c.meta) with other "
		 "labels: rename one of the fields"},
		{"block", "read_bytes", "counter", "block", "{ name = \"comm\"; type = \"label\"; }, ", "read_bytes",
		 "gauge",
		 "c.meta: metric gala_gopher_block_read_bytes is in table 'b' and in table 'a' (c.meta) with "
		 "other labels: rename one of the fields"},
		{"block", "lat", "histogram", "block", "", "lat_sum", "counter",
		 "c.meta: counter gala_gopher_block_lat_sum of table 'b' is also the _sum series of histogram "
		 "gala_gopher_block_lat of table 'a' (c.meta): rename one of the fields"},
		{"block", "lat_bucket", "gauge", "block", "", "lat", "histogram",
		 "c.meta: gauge gala_gopher_block_lat_bucket of table 'a' is also the _bucket series of histogram "
		 "gala_gopher_block_lat of table 'b' (c.meta): rename one of the fields"},
		{"block", "q", "summary", "block", "", "q_count", "counter",
		 "c.meta: counter gala_gopher_block_q_count of table 'b' is also the _count series of summary "
		 "gala_gopher_block_q of table 'a' (c.meta): rename one of the fields"},
		/* a summary has no _bucket series; other entities, other families */
		{"block", "q", "summary", "block", "", "q_bucket", "counter", NULL},
		{"block", "read_bytes", "counter", "proc", "{ name = \"tgid\"; type = \"key\"; }, ", "read_bytes",
		 "counter", NULL},
		{"block", "lat", "histogram", "disk", "", "lat_sum", "counter", NULL},
		/* same labels: one family, two tables (allowed) */
		{"block", "read_bytes", "counter", "block", "", "read_bytes", "counter", NULL},
	};
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct meta_registry *reg = meta_registry__new();
		char *text;
		int r;

		assert_true(asprintf(&text, two, cases[i].ent_a, cases[i].fa, cases[i].ta, cases[i].ent_b,
				     cases[i].extra_b, cases[i].fb, cases[i].tb) > 0);
		assert_int_equal(meta_registry__load_buf(reg, "c.meta", text, strlen(text), err, sizeof(err)), 0);
		r = meta_registry__check_families(reg, err, sizeof(err));
		if (cases[i].err) {
			assert_int_equal(r, -EEXIST);
			assert_string_equal(err, cases[i].err);
		} else if (r) {
			fail_msg("case %zu: %s", i, err);
		}
		free(text);
		meta_registry__free(reg);
	}

	/* one table: a counter beside the histogram whose _sum it would be */
	{
		struct meta_registry *reg = meta_registry__new();
		char *text = table_text("{ name = \"k\"; type = \"key\"; }, { name = \"lat\"; type = \"histogram\"; }, "
					"{ name = \"lat_sum\"; type = \"counter\"; }");

		assert_int_equal(meta_registry__load_buf(reg, "t.meta", text, strlen(text), err, sizeof(err)), 0);
		assert_int_equal(meta_registry__check_families(reg, err, sizeof(err)), -EEXIST);
		assert_string_equal(err,
				    "t.meta: counter gala_gopher_e_lat_sum of table 't' is also the _sum series of "
				    "histogram gala_gopher_e_lat of table 't' (t.meta): rename one of the fields");
		free(text);
		meta_registry__free(reg);
	}

	/* across files: the message starts with the later file and names the earlier one */
	{
		struct meta_registry *reg = meta_registry__new();
		const char *f1 =
			"version = \"1\"\nmeasurements = ({ table_name = \"io_count\"; entity_name = \"block\"; "
			"fields = ({ name = \"disk\"; type = \"key\"; }, { name = \"read_bytes\"; type = "
			"\"counter\"; }); });\n";
		const char *f2 =
			"version = \"1\"\nmeasurements = ({ table_name = \"io_issuer\"; entity_name = \"block\"; "
			"fields = ({ name = \"disk\"; type = \"key\"; }, { name = \"tgid\"; type = \"key\"; }, "
			"{ name = \"read_bytes\"; type = \"counter\"; }); });\n";

		assert_int_equal(meta_registry__load_buf(reg, "one.meta", f1, strlen(f1), err, sizeof(err)), 0);
		assert_int_equal(meta_registry__check_families(reg, err, sizeof(err)), 0);
		assert_int_equal(meta_registry__load_buf(reg, "two.meta", f2, strlen(f2), err, sizeof(err)), 0);
		assert_int_equal(meta_registry__check_families(reg, err, sizeof(err)), -EEXIST);
		assert_string_equal(err, "two.meta: metric gala_gopher_block_read_bytes is in table 'io_issuer' and in "
					 "table 'io_count' (one.meta) with other labels: rename one of the fields");
		meta_registry__free(reg);
	}

	/* load_dir checks after its last file */
	{
		char *dir = make_tmpdir();
		struct meta_registry *reg = meta_registry__new();
		char want[1024];

		write_file(dir, "a.meta",
			   "version = \"1\"\nmeasurements = ({ table_name = \"x\"; entity_name = \"e\"; "
			   "fields = ({ name = \"k\"; type = \"key\"; }, { name = \"n\"; type = "
			   "\"histogram\"; }); });\n");
		write_file(dir, "b.meta",
			   "version = \"1\"\nmeasurements = ({ table_name = \"y\"; entity_name = \"e\"; "
			   "fields = ({ name = \"k\"; type = \"key\"; }, { name = \"n_count\"; type = "
			   "\"gauge\"; }); });\n");
		assert_int_equal(meta_registry__load_dir(reg, dir, err, sizeof(err)), -EEXIST);
		snprintf(want, sizeof(want),
			 "%s/b.meta: gauge gala_gopher_e_n_count of table 'y' is also the _count series of histogram "
			 "gala_gopher_e_n of table 'x' (%s/a.meta): rename one of the fields",
			 dir, dir);
		assert_string_equal(err, want);
		meta_registry__free(reg);
		rm_tmpdir(dir);
	}
}

/* ---- records ---------------------------------------------------------------------------------- */

GG_TEST_SETUP_TEARDOWN(test_record_ok, setup_cpu, teardown_reg)
{
	struct meta_registry *reg = *state;
	struct meta_record rec;
	const char line[] = CPU_REC_OK;
	int field = 99;

	assert_int_equal(meta_record__parse(reg, line, strlen(line), &rec, &field), META_OK);
	assert_int_equal(field, -1);
	assert_string_equal(rec.table->name, "system_cpu");
	assert_int_equal(rec.nvalues, 13);
	assert_int_equal(rec.lens[0], 1);
	assert_memory_equal(rec.values[0], "3", 1);
	assert_int_equal(rec.lens[5], 3);
	assert_memory_equal(rec.values[5], "5.5", 3);
	assert_int_equal(rec.lens[11], 6);
	assert_memory_equal(rec.values[11], "host-a", 6);
	assert_memory_equal(rec.values[12], "2 10 1 100 5 123.5 7", rec.lens[12]);
	/* validation only */
	assert_int_equal(meta_record__parse(reg, line, strlen(line), NULL, NULL), META_OK);
	/* an empty label, a summary */
	const char *l2 = "|system_cpu|0|1|2|3|4|5|6|7|8|9|10||1 1 1 1 1|";
	const char *l3 = "|system_cpu_util|x|0.5|2 0.5 1 0.99 3.5 10 4|";
	assert_int_equal(meta_record__parse(reg, l2, strlen(l2), NULL, NULL), META_OK);
	assert_int_equal(meta_record__parse(reg, l3, strlen(l3), NULL, NULL), META_OK);
}

struct rec_case {
	const char *line;
	enum meta_reject want;
	int field;
};

GG_TEST_SETUP_TEARDOWN(test_record_rejects, setup_cpu, teardown_reg)
{
	struct meta_registry *reg = *state;
	static const struct rec_case cases[] = {
		{"", META_REJ_MALFORMED, -1},
		{"|", META_REJ_MALFORMED, -1},
		{"||", META_REJ_MALFORMED, -1},
		{"|||", META_REJ_MALFORMED, -1},
		{"system_cpu_util|1|2|1 0.5 1 1 1|", META_REJ_MALFORMED, -1},
		{"|system_cpu_util|1|2|1 0.5 1 1 1", META_REJ_MALFORMED, -1},
		{"|system_cpu_util|1|2|1 0.5 1 1 1|\r", META_REJ_MALFORMED, -1},
		{"|system_cpu_util|1\n|2|1 0.5 1 1 1|", META_REJ_MALFORMED, -1},
		{"|nope|1|", META_REJ_UNKNOWN_TABLE, -1},
		{"|system_cp|1|", META_REJ_UNKNOWN_TABLE, -1},
		{"|system_cpu_util|", META_REJ_FIELD_COUNT, -1},
		{"|system_cpu_util|1|", META_REJ_FIELD_COUNT, -1},
		{"|system_cpu_util|1|2|", META_REJ_FIELD_COUNT, -1},
		{"|system_cpu_util|1|2|1 0.5 1 1 1||", META_REJ_FIELD_COUNT, -1},
		/* the count is checked before the values: a bad value does not hide a wrong count */
		{"|system_cpu_util||x|", META_REJ_FIELD_COUNT, -1},
		{"|system_cpu_util||x|y|z|", META_REJ_FIELD_COUNT, -1},
		{"|system_cpu_util||2|1 0.5 1 1 1|", META_REJ_EMPTY_KEY, 0},
		{"|system_cpu_util|1||1 0.5 1 1 1|", META_REJ_NOT_NUMERIC, 1},
		{"|system_cpu_util|1|x|1 0.5 1 1 1|", META_REJ_NOT_NUMERIC, 1},
		{"|system_cpu_util|1| 2|1 0.5 1 1 1|", META_REJ_NOT_NUMERIC, 1},
		{"|system_cpu_util|1|-2|1 0.5 1 1 1|", META_OK, -1}, /* a gauge may be negative */
		{"|system_cpu_util|1|2|1 1.5 1 1 1|", META_REJ_BAD_SUMMARY, 2},
		{"|system_cpu_util|1|2||", META_REJ_BAD_SUMMARY, 2},
		{"|system_cpu_util|a\tb|2|1 0.5 1 1 1|", META_OK, -1},
		{"|system_cpu_util|a\x01|2|1 0.5 1 1 1|", META_REJ_BAD_UTF8, 0},
		{"|system_cpu_util|\xc3\x28|2|1 0.5 1 1 1|", META_REJ_BAD_UTF8, 0},
		/* the first bad field is reported */
		{"|system_cpu_util|1|x|x|", META_REJ_NOT_NUMERIC, 1},
		{"|system_cpu|1|0|0|0|0|-1|0|0|0|0|0|h|1 1 1 1 1|", META_REJ_NEGATIVE_COUNTER, 5},
		{"|system_cpu|1|0|0|0|0|-0|0|0|0|0|0|h|1 1 1 1 1|", META_OK, -1},
		{"|system_cpu|1|0|0|0|0|1|0|0|0|0|0|h|1 1 1 1|", META_REJ_BAD_HISTOGRAM, 12},
		{"|system_cpu|1|0|0|0|0|1|0|0|0|0|0|\xff|1 1 1 1 1|", META_REJ_BAD_UTF8, 11},
		{"|system_cpu|1|0|0|0|0|1|0|0|0|0|e|h|1 1 1 1 1|", META_REJ_NOT_NUMERIC, 10},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int field = 99;
		enum meta_reject r = meta_record__parse(reg, cases[i].line, strlen(cases[i].line), NULL, &field);

		if (r != cases[i].want || field != cases[i].field)
			fail_msg("'%s': got %s field %d, want %s field %d", cases[i].line, meta_reject__str(r), field,
				 meta_reject__str(cases[i].want), cases[i].field);
	}
	assert_int_equal(meta_record__parse(NULL, "|a|b|", 5, NULL, NULL), META_REJ_MALFORMED);
	assert_int_equal(meta_record__parse(reg, NULL, 5, NULL, NULL), META_REJ_MALFORMED);
}

GG_TEST_SETUP_TEARDOWN(test_record_label_length, setup_cpu, teardown_reg)
{
	struct meta_registry *reg = *state;
	char line[META_RECORD_MAX_LEN + 64];
	const char *tail = "|2|1 0.5 1 1 1|";
	size_t n;

	/* key of exactly META_LABEL_MAX bytes is fine, one more is too long */
	n = (size_t)snprintf(line, sizeof(line), "|system_cpu_util|");
	memset(line + n, 'k', META_LABEL_MAX);
	strcpy(line + n + META_LABEL_MAX, tail);
	assert_int_equal(meta_record__parse(reg, line, strlen(line), NULL, NULL), META_OK);
	memset(line + n, 'k', META_LABEL_MAX + 1);
	strcpy(line + n + META_LABEL_MAX + 1, tail);
	int field = 99;
	assert_int_equal(meta_record__parse(reg, line, strlen(line), NULL, &field), META_REJ_LABEL_TOO_LONG);
	assert_int_equal(field, 0);
	/* UTF-8 is checked before length: a long bad label is BAD_UTF8 */
	line[n + 5] = '\x01';
	assert_int_equal(meta_record__parse(reg, line, strlen(line), NULL, NULL), META_REJ_BAD_UTF8);
}

GG_TEST_SETUP_TEARDOWN(test_record_max_len, setup_cpu, teardown_reg)
{
	struct meta_registry *reg = *state;
	char line[META_RECORD_MAX_LEN + 1];
	const char *tail = "|2|1 0.5 1 1 1|";
	size_t head = strlen("|system_cpu_util|"), tl = strlen(tail);

	/* META_RECORD_MAX_LEN bytes pass the framing check (and fail later on the long key) */
	memcpy(line, "|system_cpu_util|", head);
	memset(line + head, 'k', META_RECORD_MAX_LEN - head - tl);
	memcpy(line + META_RECORD_MAX_LEN - tl, tail, tl);
	assert_int_equal(meta_record__parse(reg, line, META_RECORD_MAX_LEN, NULL, NULL), META_REJ_LABEL_TOO_LONG);
	/* one byte more is malformed */
	memset(line + head, 'k', META_RECORD_MAX_LEN + 1 - head - tl);
	memcpy(line + META_RECORD_MAX_LEN + 1 - tl, tail, tl);
	assert_int_equal(meta_record__parse(reg, line, META_RECORD_MAX_LEN + 1, NULL, NULL), META_REJ_MALFORMED);
}

GG_TEST(test_reject_names)
{
	assert_string_equal(meta_reject__str(META_OK), "ok");
	assert_string_equal(meta_reject__str(META_REJ_MALFORMED), "malformed");
	assert_string_equal(meta_reject__str(META_REJ_UNKNOWN_TABLE), "unknown_table");
	assert_string_equal(meta_reject__str(META_REJ_FIELD_COUNT), "field_count");
	assert_string_equal(meta_reject__str(META_REJ_EMPTY_KEY), "empty_key");
	assert_string_equal(meta_reject__str(META_REJ_NOT_NUMERIC), "not_numeric");
	assert_string_equal(meta_reject__str(META_REJ_NEGATIVE_COUNTER), "negative_counter");
	assert_string_equal(meta_reject__str(META_REJ_BAD_HISTOGRAM), "bad_histogram");
	assert_string_equal(meta_reject__str(META_REJ_BAD_SUMMARY), "bad_summary");
	assert_string_equal(meta_reject__str(META_REJ_BAD_UTF8), "bad_utf8");
	assert_string_equal(meta_reject__str(META_REJ_LABEL_TOO_LONG), "label_too_long");
	assert_string_equal(meta_reject__str(META_REJ__COUNT), "unknown");
	assert_string_equal(meta_field_type__str(META_KEY), "key");
	assert_string_equal(meta_field_type__str(META_LABEL), "label");
	assert_string_equal(meta_field_type__str(META_GAUGE), "gauge");
	assert_string_equal(meta_field_type__str(META_COUNTER), "counter");
	assert_string_equal(meta_field_type__str(META_HISTOGRAM), "histogram");
	assert_string_equal(meta_field_type__str(META_SUMMARY), "summary");
	assert_string_equal(meta_field_type__str((enum meta_field_type)42), "unknown");
}

/* ---- value parsers ------------------------------------------------------------------------------ */

GG_TEST(test_numbers)
{
	static const struct {
		const char *s;
		double v;
	} good[] = {
		{"0", 0},
		{"12", 12},
		{"-3", -3},
		{"1.5", 1.5},
		{"0.25", 0.25},
		{"1e6", 1e6},
		{"1E6", 1e6},
		{"1e+6", 1e6},
		{"2.5e-3", 2.5e-3},
		{"007", 7},
		{"-0.0", -0.0},
		{"0.1", 0.1},
		{"123.456", 123.456},
		{"18446744073709551615", 18446744073709551615.0},
		{"18446744073709551616", 18446744073709551616.0},
		{"9007199254740993", 9007199254740993.0},
		{"123456789012345678901234567890", 123456789012345678901234567890.0},
		{"0.000000000000000000000000000001", 1e-30},
		{"3.14159265358979323846264338327950288", 3.14159265358979323846264338327950288},
		{"1e308", 1e308},
		{"1.7976931348623157e308", 1.7976931348623157e308},
		{"4.9e-324", 4.9e-324},
		{"1e-400", 0}, /* underflow is fine */
		{"0e999999999999", 0},
		{"1e22", 1e22},
		{"1e23", 1e23},
		{"8.589973e9", 8.589973e9},
	};
	static const char *const bad[] = {
		"",	 "-",	   "+1",    " 1",	"1 ",	"1.",  ".5",   "1e",  "1e+",
		"0x10",	 "inf",	   "-inf",  "nan",	"NaN",	"1,5", "1.5.", "--1", "1e5.5",
		"1e309", "-1e309", "1_000", "\xd9\xa3", "1..2", "e5",  "1-",   "１",
	};
	double v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = NAN;
		if (meta_parse_number(good[i].s, strlen(good[i].s), &v) != 0)
			fail_msg("'%s' rejected", good[i].s);
		if (v != good[i].v || signbit(v) != signbit(good[i].v))
			fail_msg("'%s' -> %.17g, want %.17g", good[i].s, v, good[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		if (meta_parse_number(bad[i], strlen(bad[i]), &v) == 0)
			fail_msg("'%s' accepted as %g", bad[i], v);
		assert_true(v == 42); /* untouched */
	}
	assert_int_equal(meta_parse_number("1e309", 5, &v), -ERANGE);
	assert_int_equal(meta_parse_number("x", 1, &v), -EINVAL);

	/* not NUL-terminated: only [s, s+len) counts */
	assert_int_equal(meta_parse_number("12345", 2, &v), 0);
	assert_true(v == 12);
	assert_int_equal(meta_parse_number("1.5e3|", 3, &v), 0);
	assert_true(v == 1.5);
	assert_int_equal(meta_parse_number("123456789012345678901234567890|", 25, &v), 0);
	assert_true(v == 1234567890123456789012345.0);

	/* length bound */
	char big[META_NUMBER_MAX_LEN + 2];
	memset(big, '1', sizeof(big));
	big[1] = '.';
	assert_int_equal(meta_parse_number(big, META_NUMBER_MAX_LEN, &v), 0);
	assert_int_equal(meta_parse_number(big, META_NUMBER_MAX_LEN + 1, &v), -EINVAL);
	/* every double printed by printf %.17g reads back exactly */
	static const double scale[] = {1e-30, 1e-10, 1e-3, 1, 1e3, 1e10, 1e20, 1e100};
	for (int i = 0; i < 20000; i++) {
		double x = (double)random() / RAND_MAX * scale[i % 8] * (i % 3 ? 1 : -1);
		char s[64];
		int n = snprintf(s, sizeof(s), i % 2 ? "%.17g" : "%.6f", x);

		if (i % 2 == 0)
			x = strtod(s, NULL);
		assert_int_equal(meta_parse_number(s, (size_t)n, &v), 0);
		if (v != x)
			fail_msg("%s -> %.17g", s, v);
	}
}

/* A histogram's or a summary's value text parsed: the two parsers behind one call. Both structures open
 * with n, so d.h.n is n of either (their common initial sequence). */
union dist {
	struct meta_hist h;
	struct meta_summary m;
};

static int dist_parse(int summary, const char *s, union dist *d)
{
	return summary ? meta_summary__parse(s, strlen(s), &d->m) : meta_hist__parse(s, strlen(s), &d->h);
}

/* Each text of good accepted, each of bad refused with the result left untouched. */
static void expect_dist_texts(int summary, const char *const *good, size_t ngood, const char *const *bad, size_t nbad)
{
	union dist d;

	for (size_t i = 0; i < ngood; i++) {
		if (dist_parse(summary, good[i], &d) != 0)
			fail_msg("'%s' rejected", good[i]);
	}
	for (size_t i = 0; i < nbad; i++) {
		d.h.n = 99;
		if (dist_parse(summary, bad[i], &d) == 0)
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(d.h.n, 99); /* untouched */
	}
}

GG_TEST(test_histogram)
{
	struct meta_hist h;
	static const char *const good[] = {
		"1 0.5 3 1.5 3",
		"2 10 1 100 5 123.5 7",
		"3 -1 0 0 0 1e3 5 -2.5 5",
		"1 1 18446744073709551615 0 18446744073709551615",
	};
	static const char *const bad[] = {
		"",
		"0 0 0",					       /* N out of range */
		"65 1 1 1 1",					       /* N out of range (and short) */
		"-1 1 1 1 1",					       /* N not an integer */
		"1.0 1 1 1 1",					       /* N not an integer */
		"1 0.5 3 1.5",					       /* too few tokens */
		"1 0.5 3 1.5 3 4",				       /* too many tokens */
		"2 10 1 10 5 123.5 7",				       /* bounds not increasing */
		"2 10 5 100 1 123.5 7",				       /* cumulative counts decreasing */
		"2 10 1 100 5 123.5 4",				       /* count < cum_N */
		"1 0.5 -3 1.5 3",				       /* negative count */
		"1 0.5 3.0 1.5 3",				       /* count not an integer */
		"1 0.5 3 x 3",					       /* sum not a number */
		"1 inf 3 1.5 3",				       /* infinite bound */
		"1  0.5 3 1.5 3",				       /* two spaces */
		" 1 0.5 3 1.5 3",				       /* leading space */
		"1 0.5 3 1.5 3 ",				       /* trailing space */
		"1\t0.5 3 1.5 3",				       /* tab */
		"1 0.5 18446744073709551616 1.5 18446744073709551616", /* count overflows u64 */
	};

	expect_dist_texts(0, good, sizeof(good) / sizeof(good[0]), bad, sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(meta_hist__parse(good[1], strlen(good[1]), &h), 0);
	assert_int_equal(h.n, 2);
	assert_true(h.le[0] == 10 && h.le[1] == 100);
	assert_true(h.cum[0] == 1 && h.cum[1] == 5);
	assert_true(h.sum == 123.5);
	assert_true(h.count == 7);
	assert_int_equal(meta_hist__parse(good[1], strlen(good[1]), NULL), 0);

	/* META_HIST_BUCKETS_MAX buckets */
	char s[4096];
	size_t n = (size_t)snprintf(s, sizeof(s), "%u", META_HIST_BUCKETS_MAX);
	for (unsigned int i = 0; i < META_HIST_BUCKETS_MAX; i++)
		n += (size_t)snprintf(s + n, sizeof(s) - n, " %u %u", i + 1, i);
	snprintf(s + n, sizeof(s) - n, " 100 %u", META_HIST_BUCKETS_MAX);
	assert_int_equal(meta_hist__parse(s, strlen(s), &h), 0);
	assert_int_equal(h.n, META_HIST_BUCKETS_MAX);
	assert_true(h.count == META_HIST_BUCKETS_MAX);
	/* not NUL-terminated: the length counts */
	assert_int_equal(meta_hist__parse("1 0.5 3 1.5 3|junk", 13, &h), 0);
	assert_int_equal(meta_hist__parse("1 0.5 3 1.5 3|junk", 12, &h), -EINVAL);
}

GG_TEST(test_summary)
{
	struct meta_summary m;
	static const char *const good[] = {
		"1 0.5 3 1.5 3",
		"2 0.5 1 0.99 3.5 10 4",
		"3 0 -1 0.5 0 1 7 2.5 0",
		"1 0.9 1e300 1 1",
	};
	static const char *const bad[] = {
		"",
		"0 1 1",	      /* N out of range */
		"1 1.5 3 1.5 3",      /* quantile > 1 */
		"1 -0.1 3 1.5 3",     /* quantile < 0 */
		"2 0.9 1 0.5 3 10 4", /* quantiles decreasing */
		"2 0.5 1 0.5 3 10 4", /* quantiles equal */
		"1 0.5 3 1.5",	      /* too few tokens */
		"1 0.5 3 1.5 3 3",    /* too many tokens */
		"1 0.5 3 1.5 -3",     /* negative count */
		"1 0.5 3 1.5 3.5",    /* count not an integer */
		"1 0.5 nan 1.5 3",    /* value not a number */
		"1 0.5 3 1.5 3 ",     /* trailing space */
	};

	expect_dist_texts(1, good, sizeof(good) / sizeof(good[0]), bad, sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(meta_summary__parse(good[1], strlen(good[1]), &m), 0);
	assert_int_equal(m.n, 2);
	assert_true(m.q[0] == 0.5 && m.q[1] == 0.99);
	assert_true(m.v[0] == 1 && m.v[1] == 3.5);
	assert_true(m.sum == 10 && m.count == 4);
}

GG_TEST(test_utf8)
{
	static const char *const good[] = {
		"",
		"plain ascii ~!@#$%^&*()",
		"tab\there",
		"\xc2\x80",		    /* U+0080 */
		"\xc3\xa9t\xc3\xa9",	    /* été */
		"\xdf\xbf",		    /* U+07FF */
		"\xe0\xa0\x80",		    /* U+0800 */
		"\xe4\xb8\xad\xe6\x96\x87", /* 中文 */
		"\xed\x9f\xbf",		    /* U+D7FF */
		"\xee\x80\x80",		    /* U+E000 */
		"\xef\xbf\xbf",		    /* U+FFFF */
		"\xf0\x90\x80\x80",	    /* U+10000 */
		"\xf0\x9f\x98\x80",	    /* emoji */
		"\xf4\x8f\xbf\xbf",	    /* U+10FFFF */
	};
	static const char *const bad[] = {
		"\x01",
		"a\nb",
		"a\rb",
		"\x1f",
		"\x7f",
		"\x80",
		"\xbf",
		"\xc0\x80",
		"\xc1\xbf",
		"\xc2",
		"\xc2\x41",
		"\xe0\x80\x80",
		"\xe0\x9f\xbf",
		"\xed\xa0\x80",
		"\xed\xbf\xbf",
		"\xe4\xb8",
		"\xe4\x41\x80",
		"\xe4\xb8\x41",
		"\xf0\x80\x80\x80",
		"\xf0\x8f\xbf\xbf",
		"\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80",
		"\xf8\x88\x80\x80\x80",
		"\xff",
		"\xfe",
		"\xf0\x9f\x98",
		"ok\xc3",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (meta_utf8_valid(good[i], strlen(good[i])) != 1)
			fail_msg("good %zu rejected", i);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (meta_utf8_valid(bad[i], strlen(bad[i])) != 0)
			fail_msg("bad %zu accepted", i);
	}
	assert_int_equal(meta_utf8_valid("a\0b", 3), 0);     /* NUL is a control character */
	assert_int_equal(meta_utf8_valid("\xc3\xa9", 1), 0); /* cut by the length */
}
