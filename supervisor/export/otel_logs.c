/* otel_logs.c - `log` records (tprofiling's OpenTelemetry log lines) -> the seed's event JSON. */
#include "otel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char LOG_META[] =
	"version = \"1.0.0\";\n"
	"measurements: (\n"
	"  { table_name: \"log\", entity_name: \"log\", fields: (\n"
	"      { description: \"when the log was made, ms since the epoch\", type: \"key\", name: \"timestamp\" },\n"
	"      { description: \"INFO, WARN, ERROR or FATAL\", type: \"label\", name: \"severity\" },\n"
	"      { description: \"9, 13, 17 or 21\", type: \"gauge\", name: \"severity_number\" },\n"
	"      { description: \"the source, a JSON object\", type: \"label\", name: \"resource\" },\n"
	"      { description: \"the attributes, a JSON object\", type: \"label\", name: \"attributes\" },\n"
	"      { description: \"body\", type: \"label\", name: \"body\" } ) }\n"
	");\n";

enum { LF_TS = 0, LF_SEV, LF_SEVNUM, LF_RES, LF_ATTRS, LF_BODY, LF__COUNT };

int gg_otel_logs__register(struct meta_registry *reg, char *err, size_t errlen)
{
	return meta_registry__load_buf(reg, "(built-in log table)", LOG_META, sizeof(LOG_META) - 1, err, errlen);
}

int gg_otel_logs__is_log_table(const struct meta_table *t)
{
	return t->name[0] == 'l' && !strcmp(t->name, "log");
}

static int digits(const char *s, size_t n, size_t max)
{
	if (!n || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* A JSON object from a record's value (not NUL-terminated): NULL when it is not one. */
static cJSON *parse_object(const char *s, size_t n)
{
	const char *end = NULL;
	cJSON *o = cJSON_ParseWithLengthOpts(s, n, &end, 0);

	while (o && end && end < s + n && (*end == ' ' || *end == '\t'))
		end++;
	if (o && (!cJSON_IsObject(o) || end != s + n)) {
		cJSON_Delete(o);
		o = NULL;
	}
	return o;
}

/* Set key to s when the object lacks it or has it empty. */
static int fill(cJSON *o, const char *key, const char *s)
{
	cJSON *cur = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!s || !s[0])
		return 0;
	if (cur && !(cJSON_IsString(cur) && !cur->valuestring[0]))
		return 0;
	if (cur)
		cJSON_DeleteItemFromObjectCaseSensitive(o, key);
	return cJSON_AddStringToObject(o, key, s) ? 0 : -ENOMEM;
}

static void put_json(struct gg_buf *out, const cJSON *o, int *err)
{
	char *s = cJSON_PrintUnformatted(o);

	if (!s) {
		*err = -ENOMEM;
		return;
	}
	gg_buf__puts(out, s);
	cJSON_free(s);
}

int gg_otel_logs__render(const struct gg_otel_opts *o, const struct meta_record *rec, struct gg_buf *out)
{
	cJSON *res = NULL, *attrs = NULL;
	const cJSON *tg;
	int err = 0;

	if (rec->nvalues != LF__COUNT || !digits(rec->values[LF_TS], rec->lens[LF_TS], 19) ||
	    !digits(rec->values[LF_SEVNUM], rec->lens[LF_SEVNUM], 2))
		return -EINVAL;
	res = parse_object(rec->values[LF_RES], rec->lens[LF_RES]);
	attrs = parse_object(rec->values[LF_ATTRS], rec->lens[LF_ATTRS]);
	if (!res || !attrs) {
		err = -EINVAL;
		goto cleanup;
	}
	if (fill(res, "host.id", o->machine_id) || fill(res, "host.name", o->hostname)) {
		err = -ENOMEM;
		goto cleanup;
	}
	tg = cJSON_GetObjectItemCaseSensitive(res, "thread.tgid");
	if (o->container && cJSON_IsNumber(tg) && tg->valuedouble > 0 && tg->valuedouble < 4294967296.0) {
		const char *id = NULL, *name = NULL;

		o->container(o->ctx, (uint32_t)tg->valuedouble, &id, &name);
		if (fill(res, "container.id", id) || fill(res, "container.name", name)) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	gg_buf__puts(out, "{\"Timestamp\":");
	gg_buf__put(out, rec->values[LF_TS], rec->lens[LF_TS]);
	gg_buf__puts(out, ",\"SeverityText\":");
	gg_buf__put_json_str(out, rec->values[LF_SEV], rec->lens[LF_SEV]);
	gg_buf__puts(out, ",\"SeverityNumber\":");
	gg_buf__put(out, rec->values[LF_SEVNUM], rec->lens[LF_SEVNUM]);
	gg_buf__puts(out, ",\"Body\":");
	gg_buf__put_json_str(out, rec->values[LF_BODY], rec->lens[LF_BODY]);
	gg_buf__puts(out, ",\"Resource\":");
	put_json(out, res, &err);
	gg_buf__puts(out, ",\"Attributes\":");
	put_json(out, attrs, &err);
	gg_buf__putc(out, '}');
cleanup:
	cJSON_Delete(res);
	cJSON_Delete(attrs);
	return err;
}
