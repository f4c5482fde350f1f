/* test_sup_webui.c - unit tests of the web page's server side: compiled-in assets with their headers,
 * read-only methods, the imdb rows view (label sets unescaped back to their values, newest first,
 * limits), and the recent events ring (wrap-around, cut lines, ?after=). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include <cjson/cJSON.h>

#include "../../supervisor/export/export.h"
#include "../../supervisor/rest/webui.h"
#include "supervisor.h"
#include "test_sup_fixture.h"

static const char *META = "version = \"1.0.0\";\n"
			  "measurements: (\n"
			  " { table_name: \"t1\", entity_name: \"ent\", fields: (\n"
			  "   { description: \"key\", type: \"key\", name: \"k\" },\n"
			  "   { description: \"label\", type: \"label\", name: \"l\" },\n"
			  "   { description: \"a gauge\", type: \"gauge\", name: \"g\" },\n"
			  "   { description: \"a histogram\", type: \"histogram\", name: \"h\" } ) }\n"
			  ");\n";

static const char *const extra_names[] = {"machine_id", "hostname", NULL};

struct fixture {
	struct gg_sup sup;
	struct gg_export exp;
};

static struct fixture *fixture_new(void)
{
	static const struct imdb_limits lim = {
		.max_tables = 8, .max_records = 1000, .max_metrics = 8, .max_bytes = 64u << 20};
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->sup.exp = &f->exp;
	f->exp.db = imdb__new(&lim, "machine_id=\"m1\",hostname=\"h\"", extra_names);
	assert_non_null(f->exp.db);
	f->exp.recent = gg_recent__new();
	assert_non_null(f->exp.recent);
	return f;
}

static void fixture_free(struct fixture *f)
{
	imdb__free(f->exp.db);
	gg_recent__free(f->exp.recent);
	free(f);
}

static void put(struct fixture *f, const char *line, uint64_t now)
{
	struct meta_record rec;

	assert_int_equal(meta_record__parse(reg, line, strlen(line), &rec, NULL), META_OK);
	assert_int_equal(imdb__update(f->exp.db, &rec, now, NULL), 0);
}

static cJSON *get(struct fixture *f, const char *method, const char *path, const char *arg1, const char *val1,
		  const char *arg2, const char *val2, struct gg_http_response *resp)
{
	struct gg_http_request req = {.method = method, .path = path, .body = "", .content_type = ""};
	cJSON *o;

	if (arg1) {
		req.arg_names[req.nargs] = arg1;
		req.arg_values[req.nargs++] = val1;
	}
	if (arg2) {
		req.arg_names[req.nargs] = arg2;
		req.arg_values[req.nargs++] = val2;
	}
	memset(resp, 0, sizeof(*resp));
	gg_webui__handle(&f->sup, &req, resp);
	assert_non_null(resp->body);
	o = cJSON_ParseWithLength(resp->body, resp->body_len);
	return o;
}

/* A request whose answer only its status matters for. */
static void expect_status(struct fixture *f, const char *method, const char *path, const char *arg1, const char *val1,
			  const char *arg2, const char *val2, int status)
{
	struct gg_http_response r;
	cJSON *o = get(f, method, path, arg1, val1, arg2, val2, &r);

	assert_int_equal(r.status, status);
	cJSON_Delete(o);
	free(r.body);
}

/* path answers {"enabled": false} (its part of the export is off). */
static void expect_disabled(struct fixture *f, const char *path)
{
	struct gg_http_response r;
	cJSON *o = get(f, "GET", path, NULL, NULL, NULL, NULL, &r);

	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "enabled")));
	cJSON_Delete(o);
	free(r.body);
}

static const char *header(const struct gg_http_response *r, const char *name)
{
	for (const char *const *h = r->headers; h && h[0]; h += 2) {
		if (!strcmp(h[0], name))
			return h[1];
	}
	return NULL;
}

GG_TEST(test_assets_and_methods)
{
	struct fixture *f = fixture_new();
	struct gg_http_response r;
	cJSON *o;

	assert_true(gg_webui__match("/ui"));
	assert_true(gg_webui__match("/ui/"));
	assert_true(gg_webui__match("/ui/api/status"));
	assert_false(gg_webui__match("/uix"));
	assert_false(gg_webui__match("/baseinfo"));
	assert_false(gg_webui__match("ui/"));

	o = get(f, "GET", "/ui/", NULL, NULL, NULL, NULL, &r);
	assert_null(o); /* HTML */
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/html; charset=utf-8");
	assert_non_null(strstr(header(&r, "Content-Security-Policy"), "script-src 'self'"));
	assert_string_equal(header(&r, "X-Content-Type-Options"), "nosniff");
	assert_non_null(memmem(r.body, r.body_len, "<script src=\"/ui/app.js\"", 24));
	free(r.body);

	for (unsigned int i = 0; i < gg_webui_nassets; i++) {
		char path[128];

		snprintf(path, sizeof(path), "/ui/%s", gg_webui_assets[i].name);
		o = get(f, "HEAD", path, NULL, NULL, NULL, NULL, &r);
		cJSON_Delete(o);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, gg_webui_assets[i].len);
		assert_memory_equal(r.body, gg_webui_assets[i].data, r.body_len);
		assert_string_equal(r.content_type, gg_webui_assets[i].content_type);
		free(r.body);
	}

	o = get(f, "GET", "/ui/nope.js", NULL, NULL, NULL, NULL, &r);
	assert_int_equal(r.status, 404);
	assert_string_equal(cJSON_GetObjectItem(o, "result")->valuestring, "failed");
	assert_string_equal(header(&r, "Cache-Control"), "no-store");
	cJSON_Delete(o);
	free(r.body);
	expect_status(f, "GET", "/ui/../../etc/passwd", NULL, NULL, NULL, NULL, 404);
	for (const char *const *m = (const char *const[]){"PUT", "POST", "DELETE", NULL}; *m; m++) {
		expect_status(f, *m, "/ui/api/status", NULL, NULL, NULL, NULL, 405);
	}
	expect_status(f, "GET", "/ui/api/nope", NULL, NULL, NULL, NULL, 404);
	fixture_free(f);
}

GG_TEST(test_imdb_rows)
{
	struct fixture *f = fixture_new();
	struct gg_http_response r;
	cJSON *o, *rows, *row;
	char line[256];

	/* a label value with the characters Prometheus escapes, and HTML */
	put(f, "|t1|k\"1\\x|<b>lbl</b> \"q\"|1.5|2 10 1 100 2 55 3|", 1000);
	for (int i = 0; i < 300; i++) {
		snprintf(line, sizeof(line), "|t1|key%d|l|%d|1 10 0 0 0|", i, i);
		put(f, line, 2000 + (uint64_t)i);
	}
	o = get(f, "GET", "/ui/api/imdb", NULL, NULL, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "enabled")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "tables")), 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tables"), 0), "rows")->valueint,
			 301);
	cJSON_Delete(o);
	free(r.body);

	/* default 50 rows, newest first; at most 200 */
	o = get(f, "GET", "/ui/api/imdb/rows", "table", "t1", NULL, NULL, &r);
	rows = cJSON_GetObjectItem(o, "rows");
	assert_int_equal(cJSON_GetArraySize(rows), 50);
	row = cJSON_GetArrayItem(rows, 0);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "labels"), "k")->valuestring, "key299");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(row, "values"), 0)->valuestring, "299");
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "metrics"), 1), "type")->valuestring,
		"histogram");
	cJSON_Delete(o);
	free(r.body);
	o = get(f, "GET", "/ui/api/imdb/rows", "table", "t1", "limit", "100000", &r);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "rows")), GG_WEBUI_ROWS_MAX);
	cJSON_Delete(o);
	free(r.body);
	o = get(f, "GET", "/ui/api/imdb/rows", "table", "t1", "limit", "301", &r);
	rows = cJSON_GetObjectItem(o, "rows");
	assert_int_equal(cJSON_GetArraySize(rows), GG_WEBUI_ROWS_MAX);
	cJSON_Delete(o);
	free(r.body);

	/* the oldest row, escaped in the label set, comes back as the probe sent it */
	put(f, "|t1|k\"1\\x|<b>lbl</b> \"q\"|2.5|2 10 1 100 2 55 3|", 9000);
	o = get(f, "GET", "/ui/api/imdb/rows", "table", "t1", "limit", "1", &r);
	row = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "rows"), 0);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "labels"), "k")->valuestring, "k\"1\\x");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "labels"), "l")->valuestring,
			    "<b>lbl</b> \"q\"");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "labels"), "machine_id")->valuestring, "m1");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(row, "values"), 0)->valuestring, "2.5");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(row, "values"), 1)->valuestring,
			    "2 10 1 100 2 55 3");
	cJSON_Delete(o);
	free(r.body);

	expect_status(f, "GET", "/ui/api/imdb/rows", "table", "t2", NULL, NULL, 404);
	expect_status(f, "GET", "/ui/api/imdb/rows", NULL, NULL, NULL, NULL, 404);

	/* imdb off */
	imdb__free(f->exp.db);
	f->exp.db = NULL;
	expect_disabled(f, "/ui/api/imdb");
	expect_status(f, "GET", "/ui/api/imdb/rows", "table", "t1", NULL, NULL, 404);
	fixture_free(f);
}

GG_TEST(test_recent_events)
{
	struct fixture *f = fixture_new();
	struct gg_http_response r;
	char ev[128], *big;
	cJSON *o, *arr;
	int cut = -1;

	assert_null(gg_recent__get(f->exp.recent, 1, &cut));
	for (int i = 1; i <= 300; i++) {
		int n = snprintf(ev, sizeof(ev), "{\"Body\":\"<img src=x> %d\"}", i);

		gg_recent__push(f->exp.recent, ev, (size_t)n);
	}
	assert_int_equal(gg_recent__next_seq(f->exp.recent), 301);
	assert_null(gg_recent__get(f->exp.recent, 44, &cut)); /* forgotten: 256 kept */
	assert_string_equal(gg_recent__get(f->exp.recent, 45, &cut), "{\"Body\":\"<img src=x> 45\"}");
	assert_int_equal(cut, 0);

	o = get(f, "GET", "/ui/api/events", NULL, NULL, NULL, NULL, &r);
	arr = cJSON_GetObjectItem(o, "events");
	assert_int_equal(cJSON_GetArraySize(arr), GG_RECENT_EVENTS);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "seq")->valueint, 45);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "event"), "Body")->valuestring,
		"<img src=x> 45");
	assert_int_equal(cJSON_GetObjectItem(o, "next")->valueint, 301);
	cJSON_Delete(o);
	free(r.body);
	o = get(f, "GET", "/ui/api/events", "after", "298", NULL, NULL, &r);
	arr = cJSON_GetObjectItem(o, "events");
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1), "seq")->valueint, 300);
	cJSON_Delete(o);
	free(r.body);
	o = get(f, "GET", "/ui/api/events", "after", "300", NULL, NULL, &r);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")), 0);
	cJSON_Delete(o);
	free(r.body);

	/* an event longer than a slot is kept cut, as text */
	big = malloc(GG_RECENT_LINE_MAX * 2);
	assert_non_null(big);
	memset(big, 'x', GG_RECENT_LINE_MAX * 2);
	big[0] = '{';
	gg_recent__push(f->exp.recent, big, GG_RECENT_LINE_MAX * 2);
	free(big);
	assert_int_equal(strlen(gg_recent__get(f->exp.recent, 301, &cut)), GG_RECENT_LINE_MAX);
	assert_int_equal(cut, 1);
	o = get(f, "GET", "/ui/api/events", "after", "300", NULL, NULL, &r);
	arr = cJSON_GetObjectItem(o, "events");
	assert_int_equal(cJSON_GetArraySize(arr), 1);
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "event"));
	assert_int_equal(strlen(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "text")->valuestring),
			 GG_RECENT_LINE_MAX);
	cJSON_Delete(o);
	free(r.body);

	/* events off */
	gg_recent__free(f->exp.recent);
	f->exp.recent = NULL;
	expect_disabled(f, "/ui/api/events");
	fixture_free(f);
}

static int refused(struct fixture *f, const char *method, const char *path, const char *host, const char *origin)
{
	struct gg_http_request req = {
		.method = method, .path = path, .body = "", .content_type = "", .host = host, .origin = origin};
	struct gg_http_response r = {0};
	int ret = gg_webui__refused(&f->sup, &req, &r);

	if (ret) {
		assert_int_equal(r.status, 403);
		assert_non_null(r.body);
	}
	free(r.body);
	return ret;
}

GG_TEST(test_rebinding_and_other_sites)
{
	struct fixture *f = fixture_new();

	snprintf(f->sup.hostname, sizeof(f->sup.hostname), "node7");
	/* the page by address, localhost or this host's name */
	assert_false(refused(f, "GET", "/ui/", "127.0.0.1:9999", ""));
	assert_false(refused(f, "GET", "/ui/", "[::1]:9999", ""));
	assert_false(refused(f, "GET", "/ui/api/status", "localhost:9999", ""));
	assert_false(refused(f, "GET", "/ui/", "app.localhost:9999", ""));
	assert_false(refused(f, "GET", "/ui/", "node7:9999", ""));
	assert_false(refused(f, "GET", "/ui/", "NODE7:9999", ""));
	assert_true(refused(f, "GET", "/ui/", "node7.attacker.example:9999", ""));
	assert_false(refused(f, "GET", "/ui/", "10.1.2.3", ""));
	/* another name: DNS rebinding */
	assert_true(refused(f, "GET", "/ui/", "evil.example:9999", ""));
	assert_true(refused(f, "GET", "/ui/api/status", "node7x.example:9999", ""));
	assert_true(refused(f, "GET", "/ui/", "", ""));
	assert_true(refused(f, "GET", "/ui/", NULL, NULL));
	/* curl and scripts (no Origin) on the REST API's paths: as before, whatever Host says */
	assert_false(refused(f, "PUT", "/baseinfo", "evil.example:9999", ""));
	assert_false(refused(f, "GET", "/probes", NULL, NULL));
	/* a browser's PUT: from the page itself only */
	assert_false(refused(f, "PUT", "/baseinfo", "127.0.0.1:9999", "http://127.0.0.1:9999"));
	assert_false(refused(f, "PUT", "/baseinfo", "node7:9999", "https://node7:9999"));
	assert_true(refused(f, "PUT", "/baseinfo", "127.0.0.1:9999", "http://evil.example"));
	assert_true(refused(f, "PUT", "/baseinfo", "127.0.0.1:9999", "http://127.0.0.1:8080"));
	assert_true(refused(f, "PUT", "/baseinfo", "127.0.0.1:9999", "null"));
	assert_true(refused(f, "PUT", "/baseinfo", "evil.example:9999", "http://evil.example:9999"));
	assert_true(refused(f, "POST", "/v1/profile/ProfileTracing", "127.0.0.1:9999", "http://evil.example"));
	/* a GET from another site's page changes nothing and cannot be read without CORS: served */
	assert_false(refused(f, "GET", "/probes", "127.0.0.1:9999", "http://grafana.example:3000"));
	assert_true(refused(f, "GET", "/probes", "evil.example:9999", "http://evil.example:9999"));
	fixture_free(f);
}

GG_TEST_GROUP_REG(META, NULL);
