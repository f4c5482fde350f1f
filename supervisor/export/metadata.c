/* metadata.c - one table's metadata message. */
#include "metadata.h"

#include <string.h>

static void put_names(struct gg_buf *b, const struct meta_table *t, const char *first,
		      int (*want)(enum meta_field_type))
{
	gg_buf__putc(b, '[');
	gg_buf__put_json_str(b, first, strlen(first));
	for (unsigned int i = 0; i < t->nfields; i++) {
		const struct meta_field *f = &t->fields[i];

		if (!want(f->type) || !strcmp(f->name, "machine_id") || !strcmp(f->name, "hostname"))
			continue;
		gg_buf__putc(b, ',');
		gg_buf__put_json_str(b, f->name, strlen(f->name));
	}
	gg_buf__putc(b, ']');
}

static int is_key(enum meta_field_type t)
{
	return t == META_KEY;
}

static int is_label(enum meta_field_type t)
{
	return t == META_LABEL;
}

static int is_metric(enum meta_field_type t)
{
	return t != META_KEY && t != META_LABEL;
}

void gg_metadata__render(struct gg_buf *b, const struct meta_table *t, uint64_t now_ms)
{
	int first = 1;

	gg_buf__puts(b, "{\"timestamp\":");
	gg_buf__put_u64(b, now_ms);
	gg_buf__put_json_member(b, ",\"meta_name\":", t->name);
	gg_buf__put_json_member(b, ",\"entity_name\":", t->entity);
	gg_buf__put_json_member(b, ",\"version\":", t->version);
	gg_buf__puts(b, ",\"keys\":");
	put_names(b, t, "machine_id", is_key);
	gg_buf__puts(b, ",\"labels\":");
	put_names(b, t, "hostname", is_label);
	gg_buf__puts(b, ",\"metrics\":[");
	for (unsigned int i = 0; i < t->nfields; i++) {
		const struct meta_field *f = &t->fields[i];

		if (!is_metric(f->type))
			continue;
		if (!first)
			gg_buf__putc(b, ',');
		first = 0;
		gg_buf__put_json_str(b, f->name, strlen(f->name));
	}
	gg_buf__puts(b, "]}");
}
