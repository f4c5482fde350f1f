/* fuzz_export.c - libFuzzer target: record lines -> validation -> imdb (tight limits, aging), event,
 * trace span or log (tprofiling) translation -> Prometheus rendering and metric JSON. Checks that the exposition stays
 * line-structured (no raw newline inside a sample, every sample "name[{...}] value") and that refusals are counted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exporters' sources, compiled straight in (the fuzz build links only schema/ and ipc/). */
#include "../../supervisor/export/events.c"
#include "../../supervisor/export/imdb.c"
#include "../../supervisor/export/metadata.c"
#include "../../supervisor/export/outbuf.c"
#include "../../supervisor/export/prom.c"
#include "../../supervisor/export/otel_logs.c"
#include "../../supervisor/export/traces.c"
#include "fuzz_meta_types.h"

static const char fuzz_meta[] =
	FUZZ_META_HEAD_TYPES " { table_name = \"t2\"; entity_name = \"e\"; fields = (\n"
			     "   { name = \"k\"; type = \"key\"; }, { name = \"hostname\"; type = \"label\"; },\n"
			     "   { name = \"g\"; type = \"counter\"; }, { name = \"x\"; type = \"gauge\"; }); }\n"
			     ");\n";

static struct meta_registry *reg;

static void load_once(void)
{
	char err[256];

	reg = meta_registry__new();
	if (!reg || gg_events__register(reg, err, sizeof(err)) || gg_traces__register(reg, err, sizeof(err)) ||
	    gg_otel_logs__register(reg, err, sizeof(err)) ||
	    meta_registry__load_buf(reg, "fuzz.meta", fuzz_meta, sizeof(fuzz_meta) - 1, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_export: %s\n", err);
		abort();
	}
}

static void check_exposition(const char *s, size_t n)
{
	const char *p = s, *end = s + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;

		if (!nl)
			abort(); /* every line ends with a newline */
		if (*p != '#') {
			if (strncmp(p, "gala_gopher_e_", 14))
				abort();
			sp = nl;
			while (sp > p && sp[-1] != ' ')
				sp--;
			if (sp == p || sp == nl) /* "<series> <value>" */
				abort();
		}
		p = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const extra_names[] = {"machine_id", "hostname", NULL};
	struct imdb_limits lim = {2, 4, 8, 64 << 10, 1000};
	struct gg_events_opts eo = {1, (int)(size & 1), "m\"id", "h\\n", 4};
	struct imdb *db;
	struct gg_events *ev;
	struct prom_families *fams;
	struct gg_buf b, j;
	const char *p = (const char *)data, *end = p + size;
	uint64_t now = 0, stored = 0, refused = 0, dropped = 0;

	if (!reg)
		load_once();
	db = imdb__new(&lim, "machine_id=\"m\\\"id\",hostname=\"h\"", extra_names);
	ev = gg_events__new(&eo);
	fams = prom_families__new();
	if (!db || !ev || !fams)
		abort();
	gg_buf__init(&j, 1 << 20);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct meta_record rec;

		if (meta_record__parse(reg, p, len, &rec, NULL) == META_OK) {
			if (gg_events__is_event_table(rec.table)) {
				(void)gg_events__process(ev, &rec, now, now, &j);
			} else if (gg_traces__is_trace_table(rec.table)) {
				const struct gg_otel_opts to = {.machine_id = "m\"id", .hostname = "h", .version = "v"};
				size_t at = j.len;

				/* one JSON object on one line: no raw control character inside */
				if (gg_traces__render(&to, &rec, &j) == 0)
					for (size_t i = at; i < j.len && !j.oom; i++)
						if ((unsigned char)j.data[i] < 0x20)
							abort();
			} else if (gg_otel_logs__is_log_table(rec.table)) {
				const struct gg_otel_opts lo = {.machine_id = "m\"id", .hostname = "h"};
				size_t at = j.len;

				/* one JSON object on one line that parses */
				if (gg_otel_logs__render(&lo, &rec, &j) == 0 && !j.oom) {
					cJSON *o = cJSON_ParseWithLength(j.data + at, j.len - at);

					if (!cJSON_IsObject(o))
						abort();
					cJSON_Delete(o);
					for (size_t i = at; i < j.len; i++)
						if ((unsigned char)j.data[i] < 0x20)
							abort();
				}
			} else if (imdb__update(db, &rec, now, NULL) == 0) {
				stored++;
			} else {
				refused++;
			}
			gg_metadata__render(&j, rec.table, now);
		}
		now += 300;
		if ((now / 300) % 7 == 0)
			(void)imdb__expire(db, now);
		p += len + 1;
	}
	for (unsigned int i = 0; i < imdb__ntables(db); i++) {
		const struct imdb_table *t = imdb__table(db, i);

		for (int r = 0; r < IMDB_DROP__COUNT; r++)
			dropped += t->dropped[r];
	}
	if (dropped != refused || imdb__bytes(db) > lim.max_bytes)
		abort();
	gg_buf__init(&b, 0);
	(void)prom_render_imdb(&b, db, fams, NULL, NULL);
	if (b.oom)
		abort();
	check_exposition(b.data ? b.data : "", b.len);
	gg_buf__fini(&b);
	gg_buf__fini(&j);
	prom_families__free(fams);
	gg_events__free(ev);
	imdb__free(db);
	(void)stored;
	return 0;
}
