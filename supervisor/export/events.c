/* events.c - event records -> OTel-log-shaped JSON, de-duplicated per (entity, metric) within the
 * timeout. */
#include "events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity.h"
#include "lru.h"

#define ENTITY_ID_MAX 254u /* gala-gopher's bound for entity_id and event_id */
#define LABELS_MAX    64u

static const char EVENT_META[] =
	"version = \"1.0.0\";\n"
	"measurements: (\n"
	"  { table_name: \"event\", entity_name: \"event\", fields: (\n"
	"      { description: \"entity the event is about\", type: \"key\", name: \"entity_name\" },\n"
	"      { description: \"entity instance (its keys)\", type: \"key\", name: \"entity_id\" },\n"
	"      { description: \"metric that is abnormal\", type: \"key\", name: \"metric\" },\n"
	"      { description: \"INFO, WARN, ERROR or FATAL\", type: \"label\", name: \"severity\" },\n"
	"      { description: \"9, 13, 17 or 21\", type: \"gauge\", name: \"severity_number\" },\n"
	"      { description: \"description\", type: \"label\", name: \"body\" } ) },\n"
	"  { table_name: \"event_v2\", entity_name: \"event\", fields: (\n"
	"      { description: \"entity the event is about\", type: \"key\", name: \"entity_name\" },\n"
	"      { description: \"entity instance (its keys)\", type: \"key\", name: \"entity_id\" },\n"
	"      { description: \"metric that is abnormal\", type: \"key\", name: \"metric\" },\n"
	"      { description: \"INFO, WARN, ERROR or FATAL\", type: \"label\", name: \"severity\" },\n"
	"      { description: \"description in English\", type: \"label\", name: \"body\" },\n"
	"      { description: \"description in Chinese\", type: \"label\", name: \"body_zh\" },\n"
	"      { description: \"entity labels, name=value&... URL-escaped\", type: \"label\", name: \"labels\" },\n"
	"      { description: \"sys or app\", type: \"label\", name: \"event_type\" } ) }\n"
	");\n";

enum { F_ENTITY = 0, F_ID, F_METRIC, F_SEV };
enum { V1_SEVNUM = 4, V1_BODY = 5 };
enum { V2_BODY = 4, V2_BODY_ZH, V2_LABELS, V2_TYPE };

int gg_events__register(struct meta_registry *reg, char *err, size_t errlen)
{
	return meta_registry__load_buf(reg, "(built-in event tables)", EVENT_META, sizeof(EVENT_META) - 1, err, errlen);
}

int gg_events__is_event_table(const struct meta_table *t)
{
	return t->name[0] == 'e' && (!strcmp(t->name, "event") || !strcmp(t->name, "event_v2"));
}

/* One remembered (entity, metric): when it was last reported. */
struct dedup {
	struct gg_lru_link age; /* first member; report order = expiry order (one timeout for all) */
	struct dedup *hnext;
	uint64_t hash;
	uint64_t reported_ms;
	size_t len;
	char key[];
};

struct gg_events {
	struct gg_events_opts o;
	char *machine_id, *hostname;
	struct dedup **buckets;
	size_t nbuckets;
	struct gg_lru age; /* the entries, oldest report first */
	struct gg_events_stats st;
	char key[3 * (META_LABEL_MAX + 1)];
};

struct gg_events *gg_events__new(const struct gg_events_opts *o)
{
	struct gg_events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->o = *o;
	if (!ev->o.dedup_max)
		ev->o.dedup_max = GG_EVENTS_DEDUP_MAX;
	ev->machine_id = strdup(o->machine_id ? o->machine_id : "");
	ev->hostname = strdup(o->hostname ? o->hostname : "");
	ev->nbuckets = 1024;
	while (ev->nbuckets < ev->o.dedup_max)
		ev->nbuckets *= 2;
	ev->buckets = calloc(ev->nbuckets, sizeof(*ev->buckets));
	if (!ev->machine_id || !ev->hostname || !ev->buckets) {
		gg_events__free(ev);
		errno = ENOMEM;
		return NULL;
	}
	return ev;
}

void gg_events__free(struct gg_events *ev)
{
	if (!ev)
		return;
	gg_lru__drain(&ev->age, free);
	free(ev->buckets);
	free(ev->machine_id);
	free(ev->hostname);
	free(ev);
}

const struct gg_events_stats *gg_events__stats(const struct gg_events *ev)
{
	return &ev->st;
}

uint64_t gg_events__tracked(const struct gg_events *ev)
{
	return ev->age.n;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 31);
}

static void dedup_remove(struct gg_events *ev, struct dedup *d)
{
	struct dedup **pp = &ev->buckets[d->hash & (ev->nbuckets - 1)];

	while (*pp && *pp != d)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = d->hnext;
	gg_lru__unlink(&ev->age, &d->age);
	free(d);
}

/* 0: report it (and remember now); -EALREADY: within the timeout; -ENOSPC/-ENOMEM: cannot track. */
static int dedup_check(struct gg_events *ev, const char *key, size_t len, uint64_t mono_ms)
{
	uint64_t tmo = (uint64_t)ev->o.timeout_s * 1000u, h = hash_bytes(key, len);
	struct dedup **bucket = &ev->buckets[h & (ev->nbuckets - 1)], *d;

	while (ev->age.oldest && ((struct dedup *)ev->age.oldest)->reported_ms + tmo <= mono_ms)
		dedup_remove(ev, (struct dedup *)ev->age.oldest);
	for (d = *bucket; d; d = d->hnext) {
		if (d->hash == h && d->len == len && !memcmp(d->key, key, len))
			break;
	}
	if (d)
		return -EALREADY; /* an expired entry would have been removed above */
	if (ev->age.n >= ev->o.dedup_max)
		return -ENOSPC;
	d = malloc(sizeof(*d) + len);
	if (!d)
		return -ENOMEM;
	memset(d, 0, sizeof(*d));
	memcpy(d->key, key, len);
	d->len = len;
	d->hash = h;
	d->reported_ms = mono_ms;
	d->hnext = *bucket;
	*bucket = d;
	gg_lru__push(&ev->age, &d->age);
	return 0;
}

/* 9, 13, 17 or 21 for INFO, WARN, ERROR, FATAL; -EINVAL for anything else. */
static int severity_number(const char *s, size_t n)
{
	static const struct {
		const char *text;
		int number;
	} sev[] = {{"INFO", 9}, {"WARN", 13}, {"ERROR", 17}, {"FATAL", 21}};

	for (size_t i = 0; i < sizeof(sev) / sizeof(sev[0]); i++) {
		if (strlen(sev[i].text) == n && !memcmp(sev[i].text, s, n))
			return sev[i].number;
	}
	return -EINVAL;
}

static const char *severity_text(int number)
{
	switch (number) {
	case 9:
		return "INFO";
	case 13:
		return "WARN";
	case 17:
		return "ERROR";
	case 21:
		return "FATAL";
	default:
		return NULL;
	}
}

/* gala-gopher's rule for entity_id/event_id: letters, digits and _-:.@()+,=;$!*'% kept, anything else
 * becomes ':'; at most 254 bytes. */
static void put_id(struct gg_buf *b, const char *s, size_t n, size_t *budget)
{
	static const char ok[] = "_-:.@()+,=;$!*'%";

	for (size_t i = 0; i < n && *budget; i++, (*budget)--) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(ok, c)))
			c = ':';
		gg_buf__putc(b, c);
	}
}

/* 0..15, or -EINVAL for a character that is not a hex digit. */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -EINVAL;
}

/* Decode one %XX-escaped component into dst (at least n bytes). Returns its length or -EINVAL. */
static int url_decode(const char *s, size_t n, char *dst)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -EINVAL;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			dst[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			dst[o++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	return (int)o;
}

static int label_name_ok(const char *s, size_t n)
{
	if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

/* The next pair of a label set "a=1&b=2" (p..end): its name and value decoded into name and val (at
 * least META_LABEL_MAX bytes each; a length below 0 when its escapes are bad), p past it. 0, -EINVAL
 * when the pair has no '=', -ENOENT at the end. */
static int label_next(const char **p, const char *end, char *name, int *ret_nl, char *val, int *ret_vl)
{
	const char *amp, *eq;

	if (*p >= end)
		return -ENOENT;
	amp = memchr(*p, '&', (size_t)(end - *p));
	if (!amp)
		amp = end;
	eq = memchr(*p, '=', (size_t)(amp - *p));
	if (eq) {
		*ret_nl = url_decode(*p, (size_t)(eq - *p), name);
		*ret_vl = url_decode(eq + 1, (size_t)(amp - eq - 1), val);
	}
	*p = amp + 1;
	return eq ? 0 : -EINVAL;
}

/* The process a label set names (tgid=<n>), 0 when none. */
static uint32_t labels_tgid(const char *s, size_t n)
{
	char name[META_LABEL_MAX], val[META_LABEL_MAX];
	const char *p = s, *end = s + n;
	int nl, vl, err;

	while ((err = label_next(&p, end, name, &nl, val, &vl)) != -ENOENT) {
		unsigned long v = 0;

		if (err || nl != 4 || memcmp(name, "tgid", 4))
			continue;
		if (vl <= 0 || vl > 10)
			return 0;
		for (int i = 0; i < vl; i++) {
			if (val[i] < '0' || val[i] > '9')
				return 0;
			v = v * 10 + (unsigned long)(val[i] - '0');
		}
		return v > UINT32_MAX ? 0 : (uint32_t)v;
	}
	return 0;
}

/* ,"name":"value" for every pair of "a=1&b=2"; machine_id and hostname are ours and not repeated, nor
 * the identity labels when skip_ident (the resolver's are added instead). */
static int put_labels(struct gg_buf *b, const char *s, size_t n, int skip_ident)
{
	char name[META_LABEL_MAX], val[META_LABEL_MAX];
	const char *p = s, *end = s + n;
	unsigned int count = 0;
	int nl, vl, err;

	while ((err = label_next(&p, end, name, &nl, val, &vl)) != -ENOENT) {
		if (err || nl < 0 || vl < 0 || !label_name_ok(name, (size_t)nl) || !meta_utf8_valid(val, (size_t)vl) ||
		    ++count > LABELS_MAX)
			return -EINVAL;
		if ((nl == 10 && !memcmp(name, "machine_id", 10)) || (nl == 8 && !memcmp(name, "hostname", 8)) ||
		    (skip_ident && gg_ident__is_label(name, (size_t)nl)))
			continue;
		gg_buf__putc(b, ',');
		gg_buf__put_json_str(b, name, (size_t)nl);
		gg_buf__putc(b, ':');
		gg_buf__put_json_str(b, val, (size_t)vl);
	}
	return 0;
}

int gg_events__process(struct gg_events *ev, const struct meta_record *rec, uint64_t now_ms, uint64_t mono_ms,
		       struct gg_buf *out)
{
	const int v2 = rec->table->name[5] == '_';
	const char *ent = rec->values[F_ENTITY], *id = rec->values[F_ID], *metric = rec->values[F_METRIC];
	size_t entl = rec->lens[F_ENTITY], idl = rec->lens[F_ID], metricl = rec->lens[F_METRIC];
	const char *body, *type = "sys";
	size_t bodyl, typel = 3, mark, budget, klen;
	int sev, err;
	uint32_t tgid;
	char ts[24];
	struct gg_buf idb;

	ev->st.received++;
	sev = severity_number(rec->values[F_SEV], rec->lens[F_SEV]);
	if (!v2 && sev < 0) {
		double d = 0;

		/* in range before the conversion: a huge number does not fit an int (undefined behaviour) */
		if (!meta_parse_number(rec->values[V1_SEVNUM], rec->lens[V1_SEVNUM], &d) && d >= 0 && d <= 64 &&
		    severity_text((int)d))
			sev = (int)d;
	}
	if (sev < 0)
		goto invalid;
	if (v2) {
		int zh = ev->o.zh_cn;

		if (zh && !rec->lens[V2_BODY_ZH])
			zh = 0;
		else if (!zh && !rec->lens[V2_BODY] && rec->lens[V2_BODY_ZH])
			zh = 1;
		body = rec->values[zh ? V2_BODY_ZH : V2_BODY];
		bodyl = rec->lens[zh ? V2_BODY_ZH : V2_BODY];
		if (rec->lens[V2_TYPE]) {
			type = rec->values[V2_TYPE];
			typel = rec->lens[V2_TYPE];
			if (!((typel == 3 && !memcmp(type, "sys", 3)) || (typel == 3 && !memcmp(type, "app", 3))))
				goto invalid;
		}
	} else {
		body = rec->values[V1_BODY];
		bodyl = rec->lens[V1_BODY];
	}

	/* the de-duplication key: entity name, entity id, metric (validated text without '|') */
	klen = entl + idl + metricl + 2;
	memcpy(ev->key, ent, entl);
	ev->key[entl] = '|';
	memcpy(ev->key + entl + 1, id, idl);
	ev->key[entl + 1 + idl] = '|';
	memcpy(ev->key + entl + 2 + idl, metric, metricl);

	/* render first (labels can still be invalid), commit the de-duplication state last */
	mark = out->len;
	gg_buf__init(&idb, 0);
	budget = ENTITY_ID_MAX;
	put_id(&idb, ev->machine_id, strlen(ev->machine_id), &budget);
	put_id(&idb, "_", 1, &budget);
	put_id(&idb, ent, entl, &budget);
	put_id(&idb, "_", 1, &budget);
	put_id(&idb, id, idl, &budget);
	snprintf(ts, sizeof(ts), "%llu", (unsigned long long)now_ms);

	gg_buf__puts(out, "{\"Timestamp\":");
	gg_buf__puts(out, ts);
	gg_buf__puts(out, ",\"event_id\":\"");
	gg_buf__puts(out, ts);
	gg_buf__putc(out, '_');
	gg_buf__put(out, idb.data, idb.len);
	gg_buf__puts(out, "\",\"Attributes\":{\"entity_id\":\"");
	gg_buf__put(out, idb.data, idb.len);
	gg_buf__puts(out, "\",\"event_id\":\"");
	gg_buf__puts(out, ts);
	gg_buf__putc(out, '_');
	gg_buf__put(out, idb.data, idb.len);
	gg_buf__puts(out, "\",\"event_type\":");
	gg_buf__put_json_str(out, type, typel);
	gg_buf__puts(out, "},\"Resource\":{\"metric\":");
	idb.len = 0; /* the metric name, JSON-escaped as a whole (the parts are probe text) */
	gg_buf__puts(&idb, "gala_gopher_");
	gg_buf__put(&idb, ent, entl);
	gg_buf__putc(&idb, '_');
	gg_buf__put(&idb, metric, metricl);
	gg_buf__put_json_str(out, idb.data, idb.len);
	gg_buf__puts(out, ",\"labels\":{\"machine_id\":");
	gg_buf__put_json_str(out, ev->machine_id, strlen(ev->machine_id));
	gg_buf__puts(out, ",\"hostname\":");
	gg_buf__put_json_str(out, ev->hostname, strlen(ev->hostname));
	gg_buf__puts(out, ",\"entity_name\":");
	gg_buf__put_json_str(out, ent, entl);
	gg_buf__puts(out, ",\"entity_id\":");
	gg_buf__put_json_str(out, id, idl);
	gg_buf__fini(&idb);
	tgid = v2 && ev->o.ident ? labels_tgid(rec->values[V2_LABELS], rec->lens[V2_LABELS]) : 0;
	if (v2 && rec->lens[V2_LABELS] && put_labels(out, rec->values[V2_LABELS], rec->lens[V2_LABELS], tgid != 0)) {
		out->len = mark;
		goto invalid;
	}
	if (tgid)
		ev->o.ident(ev->o.ident_ctx, tgid, out);
	gg_buf__puts(out, "}},\"SeverityText\":\"");
	gg_buf__puts(out, severity_text(sev));
	gg_buf__puts(out, "\",\"SeverityNumber\":");
	gg_buf__put_u64(out, (uint64_t)sev);
	gg_buf__puts(out, ",\"Body\":");
	gg_buf__put_json_str(out, body, bodyl);
	gg_buf__putc(out, '}');

	err = dedup_check(ev, ev->key, klen, mono_ms);
	if (err) {
		out->len = mark;
		if (out->cap)
			out->data[out->len] = 0;
		if (err == -EALREADY)
			ev->st.deduplicated++;
		else
			ev->st.dedup_full++;
		return err == -EALREADY ? -EALREADY : -ENOSPC;
	}
	ev->st.reported++;
	return 0;

invalid:
	if (out->cap)
		out->data[out->len] = 0;
	ev->st.invalid++;
	return -EINVAL;
}
