/* metric_json.c - the nested JSON form of a metric record (gala-gopher's "json" metric channel). */
#include "metric_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void member(struct gg_buf *b, int *first, const char *name, size_t n)
{
	if (!*first)
		gg_buf__putc(b, ',');
	*first = 0;
	gg_buf__put_json_str(b, name, n);
	gg_buf__putc(b, ':');
}

static int ours(const char *name)
{
	return !strcmp(name, "machine_id") || !strcmp(name, "hostname");
}

void gg_metric_json__render_nested(struct gg_buf *b, const struct meta_record *rec, uint64_t now_ms,
				   const char *machine_id, const char *hostname)
{
	const struct meta_table *t = rec->table;
	int first = 1;

	gg_buf__puts(b, "{\"timestamp\":");
	gg_buf__put_u64(b, now_ms);
	gg_buf__put_json_member(b, ",\"entity_name\":", t->entity);
	gg_buf__put_json_member(b, ",\"table_name\":", t->name);
	gg_buf__puts(b, ",\"labels\":{");
	for (unsigned int i = 0; i < rec->nvalues; i++) {
		const struct meta_field *f = &t->fields[i];

		if ((f->type != META_KEY && f->type != META_LABEL) || ours(f->name))
			continue;
		member(b, &first, f->name, strlen(f->name));
		gg_buf__put_json_str(b, rec->values[i], rec->lens[i]);
	}
	member(b, &first, "machine_id", 10);
	gg_buf__put_json_str(b, machine_id, strlen(machine_id));
	member(b, &first, "hostname", 8);
	gg_buf__put_json_str(b, hostname, strlen(hostname));
	gg_buf__puts(b, "},\"metrics\":{");
	first = 1;
	for (unsigned int i = 0; i < rec->nvalues; i++) {
		const struct meta_field *f = &t->fields[i];

		if (f->type == META_GAUGE || f->type == META_COUNTER) {
			member(b, &first, f->name, strlen(f->name));
			gg_buf__put_json_number(b, rec->values[i], rec->lens[i]);
		} else if (f->type == META_SUMMARY) {
			member(b, &first, f->name, strlen(f->name));
			gg_buf__put_json_str(b, rec->values[i], rec->lens[i]);
		}
	}
	gg_buf__puts(b, "},\"histos\":{");
	first = 1;
	for (unsigned int i = 0; i < rec->nvalues; i++) {
		const struct meta_field *f = &t->fields[i];
		struct meta_hist h;

		/* validated already: a parse error cannot happen, but a histogram that fails is left out */
		if (f->type != META_HISTOGRAM || meta_hist__parse(rec->values[i], rec->lens[i], &h))
			continue;
		member(b, &first, f->name, strlen(f->name));
		gg_buf__putc(b, '{');
		for (unsigned int k = 0; k < h.n; k++) {
			char le[40];
			int n = snprintf(le, sizeof(le), "%.15g", h.le[k]);

			if (k)
				gg_buf__putc(b, ',');
			gg_buf__put_json_str(b, le, n > 0 && (size_t)n < sizeof(le) ? (size_t)n : 0);
			gg_buf__putc(b, ':');
			gg_buf__put_u64(b, h.cum[k]);
		}
		gg_buf__puts(b, ",\"count\":");
		gg_buf__put_u64(b, h.count);
		gg_buf__puts(b, ",\"sum\":");
		if (isfinite(h.sum))
			gg_buf__put_double(b, h.sum);
		else
			gg_buf__puts(b, "null");
		gg_buf__putc(b, '}');
	}
	gg_buf__puts(b, "}}");
}
