/* webui.c - the built-in web page: serves the compiled-in assets under /ui/ with a strict
 * Content-Security-Policy, and the read-only JSON views the page reads (status, contracts, imdb rows,
 * recent events). Every value goes out as JSON (cJSON escapes it); the page puts it in the DOM as text. */
#include "webui.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "export.h"
#include "supervisor.h"
#include "validate.h"

#define API "/ui/api/"

/* The page: its own scripts, styles and images only (no inline script or style, no eval), talks to its
 * own origin only, cannot be framed, sends no referrer. */
#define CSP_PAGE                                                                                        \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " \
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/* Name/value pairs that the page and the JSON views both send (one list, so they cannot drift apart). */
#define NO_SNIFF_FRAME_REFERRER \
	"X-Content-Type-Options", "nosniff", "X-Frame-Options", "DENY", "Referrer-Policy", "no-referrer"

static const char *const page_headers[] = {
	"Content-Security-Policy",
	CSP_PAGE,
	NO_SNIFF_FRAME_REFERRER,
	"Cross-Origin-Opener-Policy",
	"same-origin",
	"Cross-Origin-Resource-Policy",
	"same-origin",
	"Permissions-Policy",
	"camera=(), microphone=(), geolocation=(), usb=(), payment=()",
	"Cache-Control",
	"no-cache",
	NULL,
};

const char *const gg_webui_api_headers[] = {
	"Content-Security-Policy",
	"default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
	NO_SNIFF_FRAME_REFERRER,
	"Cross-Origin-Resource-Policy",
	"same-origin",
	"Cache-Control",
	"no-store",
	NULL,
};

int gg_webui__match(const char *path)
{
	return path && !strncmp(path, "/ui", 3) && (path[3] == '\0' || path[3] == '/');
}

static void reply_text(struct gg_http_response *resp, unsigned int status, const char *msg)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "result", "failed");
	cJSON_AddStringToObject(o, "message", msg);
	resp->status = status;
	resp->content_type = "application/json";
	resp->headers = gg_webui_api_headers;
	resp->body = cJSON_PrintUnformatted(o);
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	cJSON_Delete(o);
	if (!resp->body)
		resp->status = 500;
}

static void reply_json(struct gg_http_response *resp, cJSON *o)
{
	resp->status = 200;
	resp->content_type = "application/json";
	resp->headers = gg_webui_api_headers;
	resp->body = o ? cJSON_PrintUnformatted(o) : NULL;
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	cJSON_Delete(o);
	if (!resp->body)
		reply_text(resp, 500, "out of memory");
}

/* ---- /ui/api/contracts: what each REST probe offers (sub-probes, parameters, snooper kinds) ---------- */

static cJSON *contracts_json(void)
{
	static const char *const kinds[] = {"proc_id", "proc_name", "pod_id", "container_id", "gaussdb"};
	cJSON *arr = cJSON_CreateArray();

	for (unsigned int i = 0; i < gg_probe_defs__count(); i++) {
		const struct gg_probe_def *d = gg_probe_defs__at(i);
		const struct gg_contract *c = d->contract;
		cJSON *o = cJSON_CreateObject(), *sp, *ps, *sn;

		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "rest_name", d->rest_name);
		cJSON_AddStringToObject(o, "bin", d->bin);
		cJSON_AddStringToObject(o, "summary", c && c->summary ? c->summary : "");
		sp = cJSON_AddArrayToObject(o, "subprobes");
		for (unsigned int j = 0; c && j < c->nsubprobes; j++) {
			cJSON *e;

			if (c->subprobes[j].cli_only)
				continue;
			e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "name", c->subprobes[j].name);
			cJSON_AddBoolToObject(e, "default", c->subprobes[j].def_on);
			cJSON_AddItemToArray(sp, e);
		}
		ps = cJSON_AddArrayToObject(o, "params");
		for (unsigned int j = 0; c && j < c->nparams; j++) {
			const struct gg_param_spec *s = &c->params[j];
			char desc[512];
			cJSON *e = cJSON_CreateObject();

			gg_param__describe(s, 0, desc, sizeof(desc));
			cJSON_AddStringToObject(e, "name", s->name);
			cJSON_AddStringToObject(e, "accepts", desc);
			cJSON_AddStringToObject(e, "help", s->help ? s->help : "");
			cJSON_AddBoolToObject(e, "restart", s->restart);
			cJSON_AddItemToArray(ps, e);
		}
		sn = cJSON_AddArrayToObject(o, "snoopers");
		for (unsigned int k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			if (d->snoopers & (1u << k))
				cJSON_AddItemToArray(sn, cJSON_CreateString(kinds[k]));
		}
	}
	return arr;
}

/* ---- /ui/api/imdb: the imdb's tables, and one table's latest rows ---------------------------------- */

static cJSON *imdb_tables_json(struct gg_sup *sup)
{
	const struct imdb *db = sup->exp ? sup->exp->db : NULL;
	cJSON *o = cJSON_CreateObject(), *arr;

	cJSON_AddBoolToObject(o, "enabled", db != NULL);
	arr = cJSON_AddArrayToObject(o, "tables");
	if (!db)
		return o;
	gg_json_add_u64(o, "rows", imdb__rows(db));
	gg_json_add_u64(o, "bytes", imdb__bytes(db));
	for (unsigned int i = 0; i < imdb__ntables(db); i++) {
		const struct imdb_table *t = imdb__table(db, i);
		cJSON *e = cJSON_CreateObject();
		uint64_t dropped = 0;

		for (int k = 0; k < IMDB_DROP__COUNT; k++)
			dropped += t->dropped[k];
		cJSON_AddStringToObject(e, "table", t->meta->name);
		cJSON_AddStringToObject(e, "entity", t->meta->entity);
		gg_json_add_u64(e, "rows", t->age.n);
		gg_json_add_u64(e, "updates", t->updates);
		gg_json_add_u64(e, "expired", t->expired);
		gg_json_add_u64(e, "dropped", dropped);
		cJSON_AddBoolToObject(e, "refused", t->refused);
		cJSON_AddItemToArray(arr, e);
	}
	return o;
}

/* The row's label set `{a="x",b="y\"z"}` (Prometheus escapes: \\ \" \n) into name -> value members. */
static void labels_json(const char *s, size_t len, cJSON *out)
{
	const char *end = s + len;
	char name[256], *val = malloc(len + 1);

	if (!val)
		return;
	if (s < end && *s == '{')
		s++;
	while (s < end && *s != '}') {
		const char *eq = memchr(s, '=', (size_t)(end - s));
		size_t n, vl = 0;

		if (!eq || eq + 1 >= end || eq[1] != '"')
			break;
		n = (size_t)(eq - s);
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, s, n);
		name[n] = '\0';
		for (s = eq + 2; s < end && *s != '"'; s++) {
			if (*s == '\\' && s + 1 < end) {
				s++;
				val[vl++] = *s == 'n' ? '\n' : *s;
			} else {
				val[vl++] = *s;
			}
		}
		val[vl] = '\0';
		cJSON_AddStringToObject(out, name, val);
		s++; /* the closing quote */
		if (s < end && *s == ',')
			s++;
	}
	free(val);
}

static void imdb_rows(struct gg_sup *sup, const char *table, const char *limit_s, struct gg_http_response *resp)
{
	const struct imdb *db = sup->exp ? sup->exp->db : NULL;
	const struct imdb_table *t = NULL;
	unsigned long limit = limit_s ? strtoul(limit_s, NULL, 10) : 50;
	uint64_t now = gg_now_ms();
	cJSON *o, *fields, *rows;
	unsigned int n = 0;
	char *v;

	if (!db) {
		reply_text(resp, 404, "the imdb is off (metric.out_channel is not web_server)");
		return;
	}
	for (unsigned int i = 0; table && i < imdb__ntables(db) && !t; i++) {
		if (!strcmp(imdb__table(db, i)->meta->name, table))
			t = imdb__table(db, i);
	}
	if (!t) {
		reply_text(resp, 404, "no such table in the imdb");
		return;
	}
	if (!limit || limit > GG_WEBUI_ROWS_MAX)
		limit = GG_WEBUI_ROWS_MAX;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "table", t->meta->name);
	cJSON_AddStringToObject(o, "entity", t->meta->entity);
	gg_json_add_u64(o, "rows_total", t->age.n);
	fields = cJSON_AddArrayToObject(o, "metrics");
	for (unsigned int j = 0; j < t->nmetrics; j++) {
		const struct meta_field *f = &t->meta->fields[t->metric_idx[j]];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "name", f->name);
		cJSON_AddStringToObject(e, "type", meta_field_type__str(f->type));
		cJSON_AddStringToObject(e, "description", f->description);
		cJSON_AddItemToArray(fields, e);
	}
	rows = cJSON_AddArrayToObject(o, "rows");
	v = malloc(65536);
	for (const struct gg_lru_link *l = t->age.newest; l && v && n < limit; l = l->older, n++) {
		const struct imdb_row *r = (const struct imdb_row *)l;
		cJSON *e = cJSON_CreateObject(), *vals;

		gg_json_add_u64(e, "age_ms", now >= r->updated_ms ? now - r->updated_ms : 0);
		labels_json(r->buf + r->lbl_off, r->lbl_len, cJSON_AddObjectToObject(e, "labels"));
		vals = cJSON_AddArrayToObject(e, "values");
		for (unsigned int j = 0; j < t->nmetrics; j++) {
			memcpy(v, r->buf + r->voff[j], r->vlen[j]);
			v[r->vlen[j]] = '\0';
			cJSON_AddItemToArray(vals, cJSON_CreateString(v));
		}
		cJSON_AddItemToArray(rows, e);
	}
	free(v);
	reply_json(resp, o);
}

/* ---- /ui/api/events: the last events reported ------------------------------------------------------- */

static cJSON *events_json(struct gg_sup *sup, const char *after_s)
{
	const struct gg_recent *rc = sup->exp ? sup->exp->recent : NULL;
	uint64_t next = gg_recent__next_seq(rc), from = after_s ? strtoull(after_s, NULL, 10) + 1 : 1;
	cJSON *o = cJSON_CreateObject(), *arr;

	cJSON_AddBoolToObject(o, "enabled", rc != NULL);
	gg_json_add_u64(o, "next", next);
	arr = cJSON_AddArrayToObject(o, "events");
	if (next > GG_RECENT_EVENTS && from < next - GG_RECENT_EVENTS)
		from = next - GG_RECENT_EVENTS;
	for (uint64_t s = from; s < next; s++) {
		int cut = 0;
		const char *txt = gg_recent__get(rc, s, &cut);
		cJSON *e, *ev;

		if (!txt)
			continue;
		e = cJSON_CreateObject();
		gg_json_add_u64(e, "seq", s);
		ev = cut ? NULL : cJSON_Parse(txt);
		if (ev)
			cJSON_AddItemToObject(e, "event", ev);
		else
			cJSON_AddStringToObject(e, "text", txt);
		cJSON_AddItemToArray(arr, e);
	}
	return o;
}

/* ---- who may ask: DNS rebinding and other sites ---------------------------------------------------- */

/* The host part of "host[:port]" or "[v6]:port" is an address, localhost, or this machine's host name
 * as gethostname() gives it. A site whose name an attacker points at 127.0.0.1 (DNS rebinding) has its
 * own name there, so a browser on this machine cannot be used to read or change the agent. A longer
 * name (the host name followed by a domain) is refused too: "node7.attacker.example" would pass. */
static int host_ok(const struct gg_sup *sup, const char *h, size_t n)
{
	char name[256], addr[16];
	size_t hl = strlen(sup->hostname);
	const char *colon;

	if (n && h[0] == '[')
		return memchr(h, ']', n) != NULL; /* an IPv6 literal */
	colon = memchr(h, ':', n);
	if (colon)
		n = (size_t)(colon - h);
	if (!n || n >= sizeof(name))
		return 0;
	memcpy(name, h, n);
	name[n] = '\0';
	if (inet_pton(AF_INET, name, addr) == 1 || !strcasecmp(name, "localhost"))
		return 1;
	if (n > 10 && !strcasecmp(name + n - 10, ".localhost"))
		return 1;
	return hl && !strcasecmp(name, sup->hostname);
}

int gg_webui__refused(struct gg_sup *sup, const struct gg_http_request *req, struct gg_http_response *resp)
{
	const char *host = req->host ? req->host : "", *origin = req->origin ? req->origin : "", *auth;

	/* curl and scripts send no Origin: only the page's paths and browsers' requests are checked */
	if (!gg_webui__match(req->path) && !origin[0])
		return 0;
	if (!host_ok(sup, host, strlen(host))) {
		reply_text(resp, 403,
			   "refused: the Host header must be an IP address, localhost or this machine's host name "
			   "(DNS rebinding protection); open the page by address or through an SSH tunnel");
		return 1;
	}
	/* a GET changes nothing, and without CORS headers another site cannot read the answer */
	if (!origin[0] || !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD"))
		return 0;
	/* a browser says where the page that asks comes from: it must be this server (same host:port) */
	auth = strstr(origin, "://");
	if (!auth || strcasecmp(auth + 3, host)) {
		reply_text(resp, 403, "a request from another site (Origin differs from Host) is refused");
		return 1;
	}
	return 0;
}

/* ---- dispatch ---------------------------------------------------------------------------------------- */

static void serve_asset(const char *name, struct gg_http_response *resp)
{
	for (unsigned int i = 0; i < gg_webui_nassets; i++) {
		const struct gg_webui_asset *a = &gg_webui_assets[i];

		if (strcmp(a->name, name))
			continue;
		resp->body = malloc(a->len ? a->len : 1);
		if (!resp->body) {
			reply_text(resp, 500, "out of memory");
			return;
		}
		memcpy(resp->body, a->data, a->len);
		resp->body_len = a->len;
		resp->status = 200;
		resp->content_type = a->content_type;
		resp->headers = page_headers;
		return;
	}
	reply_text(resp, 404, "no such file in the web page");
}

void gg_webui__handle(struct gg_sup *sup, const struct gg_http_request *req, struct gg_http_response *resp)
{
	const char *path = req->path;

	if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
		reply_text(resp, 405, "the web page is read-only (GET); changes go through PUT /<probe>");
		return;
	}
	if (!strcmp(path, "/ui") || !strcmp(path, "/ui/")) {
		serve_asset("index.html", resp);
		return;
	}
	if (strncmp(path, API, strlen(API))) {
		serve_asset(path + 4, resp); /* after "/ui/" */
		return;
	}
	path += strlen(API);
	if (!strcmp(path, "status"))
		reply_json(resp, gg_status__json(sup));
	else if (!strcmp(path, "contracts"))
		reply_json(resp, contracts_json());
	else if (!strcmp(path, "imdb"))
		reply_json(resp, imdb_tables_json(sup));
	else if (!strcmp(path, "imdb/rows"))
		imdb_rows(sup, gg_http_request__arg(req, "table"), gg_http_request__arg(req, "limit"), resp);
	else if (!strcmp(path, "events"))
		reply_json(resp, events_json(sup, gg_http_request__arg(req, "after")));
	else
		reply_text(resp, 404, "unknown /ui/api path (status, contracts, imdb, imdb/rows, events)");
}
