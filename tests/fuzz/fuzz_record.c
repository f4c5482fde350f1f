/* fuzz_record.c - libFuzzer target: meta_record__parse (and the value parsers behind it) on any line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "fuzz_meta_types.h"

/* One table of each field type, plus a second table to exercise the hash lookup. */
static const char fuzz_meta[] =
	FUZZ_META_HEAD_TYPES " { table_name = \"system_cpu\"; entity_name = \"cpu\"; fields = (\n"
			     "   { name = \"cpu\"; type = \"key\"; }, { name = \"rcu\"; type = \"gauge\"; },\n"
			     "   { name = \"timer\"; type = \"counter\"; }); }\n"
			     ");\n";

static struct meta_registry *reg;

static void load_once(void)
{
	char err[256];

	reg = meta_registry__new();
	if (!reg || meta_registry__load_buf(reg, "fuzz.meta", fuzz_meta, sizeof(fuzz_meta) - 1, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_record: %s\n", err);
		abort();
	}
}

/* An accepted value must pass the public parsers too: the record path's fast paths may not accept
 * anything the full checks would reject. */
static void check_accepted(enum meta_field_type type, const char *v, size_t len)
{
	double d;
	int ok;

	switch (type) {
	case META_KEY:
	case META_LABEL:
		ok = meta_utf8_valid(v, len) && len <= META_LABEL_MAX && (type == META_LABEL || len > 0);
		break;
	case META_GAUGE:
		ok = meta_parse_number(v, len, &d) == 0;
		break;
	case META_COUNTER:
		ok = meta_parse_number(v, len, &d) == 0 && !(d < 0);
		break;
	case META_HISTOGRAM:
		ok = meta_hist__parse(v, len, NULL) == 0;
		break;
	case META_SUMMARY:
		ok = meta_summary__parse(v, len, NULL) == 0;
		break;
	default:
		ok = 0;
	}
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct meta_record rec;
	int field;
	char *copy;
	enum meta_reject r;

	if (!reg)
		load_once();
	/* an exact-size heap copy so ASan sees any read past the end */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	r = meta_record__parse(reg, copy, size, &rec, &field);
	if (r == META_OK) {
		/* every value must lie inside the line */
		if (rec.nvalues != rec.table->nfields || field != -1)
			abort();
		for (unsigned int i = 0; i < rec.nvalues; i++) {
			if (rec.values[i] < copy || rec.values[i] + rec.lens[i] > copy + size)
				abort();
			check_accepted(rec.table->fields[i].type, rec.values[i], rec.lens[i]);
		}
	} else if (r >= META_REJ__COUNT || (field >= 0 && r <= META_REJ_FIELD_COUNT)) {
		abort();
	}
	/* the value parsers directly */
	double v;
	struct meta_hist h;
	struct meta_summary s;
	(void)meta_parse_number(copy, size, &v);
	(void)meta_hist__parse(copy, size, &h);
	(void)meta_summary__parse(copy, size, &s);
	(void)meta_utf8_valid(copy, size);
	free(copy);
	return 0;
}
