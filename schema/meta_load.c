/* meta_load.c - the table registry: loading gala-gopher .meta files (libconfig) and name lookups. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta.h"
#include "meta_impl.h"

/* One slot of the open-addressing table: idx1 is the table index + 1 (0 = empty slot); the hash and
 * the name length are kept here so a miss rarely touches the table itself. */
struct meta_slot {
	uint32_t hash;
	uint16_t idx1;
	uint16_t len;
};

struct meta_registry {
	struct meta_table **tables; /* load order */
	unsigned int count;
	unsigned int cap;
	struct meta_slot *slots;
	unsigned int nslots; /* power of two, kept at least twice count */
};

/* Loading state of one file, for error messages. */
struct meta_loader {
	const char *name;
	char *err;
	size_t errlen;
};

_Static_assert(META_TABLES_MAX < UINT16_MAX, "slot index is 16 bits");
_Static_assert(META_NAME_MAX < UINT16_MAX, "slot length is 16 bits");

static uint32_t fnv1a(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

const char *meta_field_type__str(enum meta_field_type t)
{
	static const char *const names[] = {
		[META_KEY] = "key",	    [META_LABEL] = "label",	    [META_GAUGE] = "gauge",
		[META_COUNTER] = "counter", [META_HISTOGRAM] = "histogram", [META_SUMMARY] = "summary",
	};

	if ((unsigned int)t >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[t];
}

static int field_type_parse(const char *s, enum meta_field_type *ret)
{
	for (unsigned int t = META_KEY; t <= META_SUMMARY; t++) {
		if (strcmp(s, meta_field_type__str(t)) == 0) {
			*ret = t;
			return 0;
		}
	}
	return -EINVAL;
}

struct meta_registry *meta_registry__new(void)
{
	struct meta_registry *reg = calloc(1, sizeof(*reg));

	if (!reg)
		return NULL;
	reg->nslots = 64;
	reg->slots = calloc(reg->nslots, sizeof(*reg->slots));
	if (!reg->slots)
		goto err_out;
	return reg;

err_out:
	meta_registry__free(reg);
	errno = ENOMEM;
	return NULL;
}

static struct meta_table *meta_table__new(void)
{
	struct meta_table_impl *ti = calloc(1, sizeof(*ti));

	/* freed through meta_table__impl() in meta_table__free */
	// cppcheck-suppress memleak
	return ti ? &ti->pub : NULL;
}

static void meta_table__free(struct meta_table *t)
{
	if (!t)
		return;
	free(t->fields);
	free(meta_table__impl(t));
}

void meta_registry__free(struct meta_registry *reg)
{
	if (!reg)
		return;
	for (unsigned int i = 0; i < reg->count; i++)
		meta_table__free(reg->tables[i]);
	free(reg->tables);
	free(reg->slots);
	free(reg);
}

unsigned int meta_registry__count(const struct meta_registry *reg)
{
	return reg ? reg->count : 0;
}

const struct meta_table *meta_registry__at(const struct meta_registry *reg, unsigned int i)
{
	if (!reg || i >= reg->count)
		return NULL;
	return reg->tables[i];
}

const struct meta_table *meta_registry__find(const struct meta_registry *reg, const char *name, size_t len)
{
	if (!reg || !name || len == 0 || len >= META_NAME_MAX)
		return NULL;

	uint32_t h = fnv1a(name, len);
	unsigned int mask = reg->nslots - 1;

	for (unsigned int i = h & mask;; i = (i + 1) & mask) {
		const struct meta_slot *s = &reg->slots[i];

		if (!s->idx1)
			return NULL;
		if (s->hash == h && s->len == len) {
			const struct meta_table *t = reg->tables[s->idx1 - 1];

			if (memcmp(t->name, name, len) == 0)
				return t;
		}
	}
}

static void slot_insert(struct meta_slot *slots, unsigned int nslots, uint32_t h, unsigned int idx, size_t len)
{
	unsigned int mask = nslots - 1;
	unsigned int i = h & mask;

	while (slots[i].idx1)
		i = (i + 1) & mask;
	slots[i] = (struct meta_slot){.hash = h, .idx1 = (uint16_t)(idx + 1), .len = (uint16_t)len};
}

/* Make room for n more tables so that adding them cannot fail; nothing changes on error. */
static int registry_reserve(struct meta_registry *reg, unsigned int n)
{
	unsigned int need = reg->count + n;

	if (need > reg->cap) {
		unsigned int cap = reg->cap ? reg->cap : 16;

		while (cap < need)
			cap *= 2;
		struct meta_table **tables = realloc(reg->tables, cap * sizeof(*tables));
		if (!tables)
			return -ENOMEM;
		reg->tables = tables;
		reg->cap = cap;
	}
	if (need * 2 > reg->nslots) {
		unsigned int nslots = reg->nslots;

		while (need * 2 > nslots)
			nslots *= 2;
		struct meta_slot *slots = calloc(nslots, sizeof(*slots));
		if (!slots)
			return -ENOMEM;
		for (unsigned int i = 0; i < reg->count; i++) {
			const char *name = reg->tables[i]->name;
			size_t len = strlen(name);

			slot_insert(slots, nslots, fnv1a(name, len), i, len);
		}
		free(reg->slots);
		reg->slots = slots;
		reg->nslots = nslots;
	}
	return 0;
}

static void registry_add(struct meta_registry *reg, struct meta_table *t)
{
	size_t len = strlen(t->name);

	reg->tables[reg->count] = t;
	slot_insert(reg->slots, reg->nslots, fnv1a(t->name, len), reg->count, len);
	reg->count++;
}

/* ---- error messages ---------------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static int fail(const struct meta_loader *ld, int line, int ret, const char *fmt,
						      ...)
{
	char msg[512];
	va_list ap;

	if (!ld->err || ld->errlen == 0)
		return ret;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(ld->err, ld->errlen, "%s:%d: %s", ld->name, line, msg);
	else
		snprintf(ld->err, ld->errlen, "%s: %s", ld->name, msg);
	return ret;
}

/* A user string made safe to quote in a message: at most 64 bytes, unprintable bytes as '?'. */
static const char *quote(char buf[72], const char *s)
{
	size_t len = strlen(s), n = len < 64 ? len : 64, i;

	for (i = 0; i < n; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (len > n) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* ---- validation --------------------------------------------------------------------------------- */

static bool name_valid(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (s++; *s; s++) {
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	}
	return true;
}

static int setting_line(const config_setting_t *s, int fallback)
{
	int line = s ? (int)config_setting_source_line(s) : 0;

	return line > 0 ? line : fallback;
}

/*
 * Read the string member key of group g into out (size outlen). what names the owner in messages
 * ("table 'x': field 3"). Missing or empty is an error when required; a name must match
 * [A-Za-z_][A-Za-z0-9_]*.
 */
static int get_string(const struct meta_loader *ld, const config_setting_t *g, const char *what, const char *key,
		      bool required, bool is_name, char *out, size_t outlen)
{
	const config_setting_t *s = config_setting_get_member(g, key);
	int line = setting_line(s, setting_line(g, 0));
	char q[72];
	const char *v;

	if (!s) {
		if (!required)
			return 0;
		return fail(ld, line, -EINVAL, "%smissing %s", what, key);
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return fail(ld, line, -EINVAL, "%s%s is not a string", what, key);
	v = config_setting_get_string(s);
	if (!v)
		v = "";
	if (required && !*v)
		return fail(ld, line, -EINVAL, "%s%s is empty", what, key);
	if (strlen(v) >= outlen)
		return fail(ld, line, -EINVAL, "%s%s longer than %zu bytes", what, key, outlen - 1);
	if (is_name && !name_valid(v))
		return fail(ld, line, -EINVAL, "%s%s '%s' is not a valid name ([A-Za-z_][A-Za-z0-9_]*)", what, key,
			    quote(q, v));
	strcpy(out, v);
	return 0;
}

static int load_field(const struct meta_loader *ld, const config_setting_t *g, const char *what, struct meta_field *f)
{
	const config_setting_t *ts;
	char type[32];
	char q[72];
	int r;

	if (config_setting_type(g) != CONFIG_TYPE_GROUP)
		return fail(ld, setting_line(g, 0), -EINVAL, "%snot a group { ... }", what);
	r = get_string(ld, g, what, "name", true, true, f->name, sizeof(f->name));
	if (r < 0)
		return r;
	r = get_string(ld, g, what, "description", false, false, f->description, sizeof(f->description));
	if (r < 0)
		return r;
	ts = config_setting_get_member(g, "type");
	if (!ts)
		return fail(ld, setting_line(g, 0), -EINVAL, "%smissing type", what);
	if (config_setting_type(ts) != CONFIG_TYPE_STRING)
		return fail(ld, setting_line(ts, 0), -EINVAL, "%stype is not a string", what);
	const char *tv = config_setting_get_string(ts);
	if (!tv || strlen(tv) >= sizeof(type) || field_type_parse(tv, &f->type) < 0)
		return fail(ld, setting_line(ts, 0), -EINVAL,
			    "%sunknown type '%s' (key, label, gauge, counter, histogram or summary)", what,
			    quote(q, tv ? tv : ""));
	return 0;
}

static int load_table(const struct meta_loader *ld, const config_setting_t *g, unsigned int idx, const char *version,
		      struct meta_table **ret)
{
	const config_setting_t *fs;
	struct meta_table *t;
	char what[128];
	char q[72];
	int line = setting_line(g, 0);
	int r, n;

	if (config_setting_type(g) != CONFIG_TYPE_GROUP)
		return fail(ld, line, -EINVAL, "measurement %u: not a group { ... }", idx + 1);
	t = meta_table__new();
	if (!t)
		return fail(ld, 0, -ENOMEM, "out of memory");

	snprintf(what, sizeof(what), "measurement %u: ", idx + 1);
	r = get_string(ld, g, what, "table_name", true, true, t->name, sizeof(t->name));
	if (r < 0)
		goto err_out;
	snprintf(what, sizeof(what), "table '%s': ", t->name);
	r = get_string(ld, g, what, "entity_name", true, true, t->entity, sizeof(t->entity));
	if (r < 0)
		goto err_out;
	strcpy(t->version, version);
	snprintf(t->source, sizeof(t->source), "%s", ld->name);

	fs = config_setting_get_member(g, "fields");
	if (!fs) {
		r = fail(ld, line, -EINVAL, "%smissing fields", what);
		goto err_out;
	}
	if (config_setting_type(fs) != CONFIG_TYPE_LIST) {
		r = fail(ld, setting_line(fs, line), -EINVAL, "%sfields is not a list ( ... )", what);
		goto err_out;
	}
	n = config_setting_length(fs);
	if (n <= 0 || (unsigned int)n > META_FIELDS_MAX) {
		r = fail(ld, setting_line(fs, line), -EINVAL, "%s%d fields, expected 1 to %u", what, n,
			 META_FIELDS_MAX);
		goto err_out;
	}
	t->fields = calloc((size_t)n, sizeof(*t->fields));
	if (!t->fields) {
		r = fail(ld, 0, -ENOMEM, "out of memory");
		goto err_out;
	}
	for (int i = 0; i < n; i++) {
		const config_setting_t *fg = config_setting_get_elem(fs, (unsigned int)i);
		struct meta_field *f = &t->fields[i];
		char fwhat[128];

		snprintf(fwhat, sizeof(fwhat), "table '%s': field %d: ", t->name, i + 1);
		r = load_field(ld, fg, fwhat, f);
		if (r < 0)
			goto err_out;
		for (int j = 0; j < i; j++) {
			if (strcmp(t->fields[j].name, f->name) == 0) {
				r = fail(ld, setting_line(fg, line), -EINVAL, "%sduplicate field name '%s'", fwhat,
					 quote(q, f->name));
				goto err_out;
			}
		}
		if (f->type == META_KEY)
			t->nkeys++;
		meta_table__impl(t)->kinds[i] = (unsigned char)f->type;
		t->nfields++;
	}
	if (t->nkeys == 0) {
		r = fail(ld, line, -EINVAL, "%sno field of type key", what);
		goto err_out;
	}
	*ret = t;
	return 0;

err_out:
	meta_table__free(t);
	return r;
}

/* ---- one name, one meaning ------------------------------------------------------------------------ */

static int is_metric(enum meta_field_type t)
{
	return t >= META_GAUGE;
}

/* Same key and label names (in any order): then two tables' fields of one name are one family. */
static int same_label_set(const struct meta_table *a, const struct meta_table *b)
{
	unsigned int na = 0, nb = 0;

	for (unsigned int i = 0; i < a->nfields; i++) {
		const struct meta_field *f = &a->fields[i];
		int found = 0;

		if (is_metric(f->type))
			continue;
		na++;
		for (unsigned int j = 0; j < b->nfields && !found; j++)
			found = !is_metric(b->fields[j].type) && !strcmp(b->fields[j].name, f->name);
		if (!found)
			return 0;
	}
	for (unsigned int j = 0; j < b->nfields; j++)
		nb += !is_metric(b->fields[j].type);
	return na == nb;
}

/* The suffix of a histogram's or summary's series that plain field name n would take (n = h + suffix):
 * "_sum", "_count" (both), "_bucket" (histograms). NULL when n is not one of h's series. */
static const char *series_of(const char *n, const struct meta_field *h)
{
	static const char *const sfx[] = {"_sum", "_count", "_bucket"};
	size_t hl = strlen(h->name);

	if (h->type != META_HISTOGRAM && h->type != META_SUMMARY)
		return NULL;
	if (strncmp(n, h->name, hl))
		return NULL;
	for (unsigned int i = 0; i < 3; i++) {
		if (i == 2 && h->type != META_HISTOGRAM)
			break;
		if (!strcmp(n + hl, sfx[i]))
			return sfx[i];
	}
	return NULL;
}

/* Prometheus names a field gala_gopher_<entity>_<field>: two fields of one entity that give one name
 * (or one series name) would mix two meanings in one family. Table a is new; b is a or loaded before. */
static int check_pair(const struct meta_loader *ld, const struct meta_table *a, const struct meta_table *b)
{
	char qa[72], qb[72];

	if (strcmp(a->entity, b->entity))
		return 0;
	for (unsigned int i = 0; i < a->nfields; i++) {
		const struct meta_field *fa = &a->fields[i];

		if (!is_metric(fa->type))
			continue;
		for (unsigned int j = 0; j < b->nfields; j++) {
			const struct meta_field *fb = &b->fields[j];
			const char *sfx;

			if (!is_metric(fb->type))
				continue;
			if (a != b && !strcmp(fa->name, fb->name) && !same_label_set(a, b))
				return fail(
					ld, 0, -EEXIST,
					"metric gala_gopher_%s_%s is in table '%s' and in table '%s' (%s) with other "
					"labels: rename one of the fields",
					a->entity, fa->name, quote(qa, a->name), quote(qb, b->name), b->source);
			if ((sfx = series_of(fa->name, fb)) || (sfx = series_of(fb->name, fa))) {
				const struct meta_field *plain = series_of(fa->name, fb) ? fa : fb;
				const struct meta_field *agg = plain == fa ? fb : fa;
				const struct meta_table *tp = plain == fa ? a : b, *tg = plain == fa ? b : a;

				return fail(ld, 0, -EEXIST,
					    "%s gala_gopher_%s_%s of table '%s' is also the %s series of %s "
					    "gala_gopher_%s_%s of table '%s' (%s): rename one of the fields",
					    meta_field_type__str(plain->type), a->entity, plain->name,
					    quote(qa, tp->name), sfx, meta_field_type__str(agg->type), a->entity,
					    agg->name, quote(qb, tg->name), b->source);
			}
		}
	}
	return 0;
}

static int load_config(struct meta_registry *reg, const struct meta_loader *ld, const config_t *cf)
{
	const config_setting_t *root = config_root_setting(cf);
	const config_setting_t *ms;
	struct meta_table **tables = NULL;
	char version[META_NAME_MAX];
	char q[72];
	unsigned int n = 0, done = 0;
	int r, len;

	r = get_string(ld, root, "", "version", true, false, version, sizeof(version));
	if (r < 0)
		return r;
	ms = config_setting_get_member(root, "measurements");
	if (!ms)
		return fail(ld, 0, -EINVAL, "missing measurements");
	if (config_setting_type(ms) != CONFIG_TYPE_LIST)
		return fail(ld, setting_line(ms, 0), -EINVAL, "measurements is not a list ( ... )");
	len = config_setting_length(ms);
	if (len <= 0)
		return fail(ld, setting_line(ms, 0), -EINVAL, "measurements is empty");
	n = (unsigned int)len;
	if (n > META_TABLES_MAX || reg->count + n > META_TABLES_MAX)
		return fail(ld, setting_line(ms, 0), -ENOSPC, "more than %u tables", META_TABLES_MAX);
	tables = calloc(n, sizeof(*tables));
	if (!tables)
		return fail(ld, 0, -ENOMEM, "out of memory");

	for (done = 0; done < n; done++) {
		const config_setting_t *g = config_setting_get_elem(ms, done);
		const struct meta_table *other;

		r = load_table(ld, g, done, version, &tables[done]);
		if (r < 0)
			goto out;
		const char *name = tables[done]->name;
		other = meta_registry__find(reg, name, strlen(name));
		if (other) {
			r = fail(ld, setting_line(g, 0), -EEXIST, "table '%s' already defined in %s", quote(q, name),
				 other->source);
			done++;
			goto out;
		}
		for (unsigned int j = 0; j < done; j++) {
			if (strcmp(tables[j]->name, name) == 0) {
				r = fail(ld, setting_line(g, 0), -EEXIST, "table '%s' defined twice", quote(q, name));
				done++;
				goto out;
			}
		}
	}
	r = registry_reserve(reg, n);
	if (r < 0) {
		fail(ld, 0, r, "out of memory");
		goto out;
	}
	for (unsigned int i = 0; i < n; i++)
		registry_add(reg, tables[i]);
	free(tables);
	return 0;

out:
	for (unsigned int i = 0; i < done; i++)
		meta_table__free(tables[i]);
	free(tables);
	return r;
}

/* ---- lexical pre-pass --------------------------------------------------------------------------- */

/* Skip blanks and comments (#, //, C style) from p; returns the first other character or end. */
static char *skip_blank(char *p, const char *end)
{
	while (p < end) {
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') {
			p++;
		} else if (*p == '#' || (*p == '/' && p + 1 < end && p[1] == '/')) {
			while (p < end && *p != '\n')
				p++;
		} else if (*p == '/' && p + 1 < end && p[1] == '*') {
			char *c = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);

			p = c ? c + 2 : (char *)end;
		} else {
			break;
		}
	}
	return p;
}

/* What came before a token, as far as the pre-pass needs to know. */
enum prev_tok {
	PREV_OTHER, /* a name, a number, ';', a closing bracket, '{', start of text */
	PREV_EQ,    /* '=' or ':' */
	PREV_OPEN,  /* '(' or '[' */
	PREV_COMMA,
	PREV_STRING,
};

#define META_NEST_MAX 64 /* brackets open at once; .meta files use 3 */

/*
 * A lexical pass over the text before libconfig parses it:
 * - libconfig 1.5 (Debian 12) rejects a comma after the last element of a list or array, which 1.7
 *   accepts and upstream .meta files may contain: such commas are blanked out (lines are kept).
 * - libconfig 1.5 leaks a string token on which its parser fails (its grammar has no %destructor).
 *   A string can only follow '=', ':', '(', '[', another string, or a ',' inside a list or array;
 *   elsewhere it is a syntax error found here first.
 * - @include is refused: a schema must not read other files, and a buffer has no directory.
 * - NUL bytes would silently end the text early; nesting is bounded.
 */
static int prepass(const struct meta_loader *ld, char *buf, size_t len)
{
	char *p = buf, *end = buf + len;
	enum prev_tok prev = PREV_OTHER;
	char stack[META_NEST_MAX];
	unsigned int depth = 0;
	int line = 1, sline;

	while (p < end) {
		char *q = skip_blank(p, end);
		bool in_seq;

		for (; p < q; p++)
			line += *p == '\n';
		if (p >= end)
			break;
		switch (*p) {
		case '\0':
			return fail(ld, line, -EINVAL, "NUL byte in file");
		case '@':
			return fail(ld, line, -EINVAL, "@include is not supported in .meta files");
		case '"':
			in_seq = depth > 0 && (stack[depth - 1] == '(' || stack[depth - 1] == '[');
			sline = line;
			for (p++; p < end && *p != '"'; p++) {
				if (*p == '\0')
					return fail(ld, line, -EINVAL, "NUL byte in file");
				if (*p == '\\' && p + 1 < end)
					p++;
				line += *p == '\n';
			}
			/* libconfig would silently drop the rest of the file */
			if (p >= end)
				return fail(ld, sline, -EINVAL, "unterminated string");
			p++;
			if (!(prev == PREV_EQ || prev == PREV_OPEN || prev == PREV_STRING ||
			      (prev == PREV_COMMA && in_seq)))
				return fail(ld, sline, -EINVAL, "syntax error");
			prev = PREV_STRING;
			break;
		case ',':
			q = skip_blank(p + 1, end);
			if (q < end && (*q == ')' || *q == ']'))
				*p = ' ';
			p++;
			prev = PREV_COMMA;
			break;
		case '=':
		case ':':
			p++;
			prev = PREV_EQ;
			break;
		case '(':
		case '[':
		case '{':
			if (depth == META_NEST_MAX)
				return fail(ld, line, -EINVAL, "nested deeper than %d", META_NEST_MAX);
			stack[depth++] = *p;
			prev = *p == '{' ? PREV_OTHER : PREV_OPEN;
			p++;
			break;
		case ')':
		case ']':
		case '}':
			if (depth > 0)
				depth--;
			p++;
			prev = PREV_OTHER;
			break;
		default:
			p++;
			prev = PREV_OTHER;
			break;
		}
	}
	return 0;
}

/* ---- entry points -------------------------------------------------------------------------------- */

int meta_registry__check_families(const struct meta_registry *reg, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	for (unsigned int i = 0; reg && i < meta_registry__count(reg); i++) {
		const struct meta_table *a = meta_registry__at(reg, i);
		/* messages start with the file of the table loaded last of the two */
		struct meta_loader ld = {.name = a->source, .err = err, .errlen = errlen};

		for (unsigned int j = 0; j <= i; j++) {
			int r = check_pair(&ld, a, meta_registry__at(reg, j));

			if (r < 0)
				return r;
		}
	}
	return 0;
}

int meta_registry__load_buf(struct meta_registry *reg, const char *name, const char *buf, size_t len, char *err,
			    size_t errlen)
{
	struct meta_loader ld = {.name = name ? name : "(buffer)", .err = err, .errlen = errlen};
	config_t cf;
	char *text;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!reg || (!buf && len))
		return fail(&ld, 0, -EINVAL, "invalid argument");
	if (len > META_FILE_MAX)
		return fail(&ld, 0, -EFBIG, "larger than %u bytes", META_FILE_MAX);
	text = malloc(len + 1);
	if (!text)
		return fail(&ld, 0, -ENOMEM, "out of memory");
	if (len)
		memcpy(text, buf, len);
	text[len] = '\0';
	r = prepass(&ld, text, len);
	if (r < 0) {
		free(text);
		return r;
	}

	config_init(&cf);
	if (!config_read_string(&cf, text)) {
		const char *what = config_error_text(&cf);

		r = fail(&ld, config_error_line(&cf), -EINVAL, "%s", what ? what : "syntax error");
	} else {
		r = load_config(reg, &ld, &cf);
	}
	config_destroy(&cf);
	free(text);
	return r;
}

int meta_registry__load_file(struct meta_registry *reg, const char *path, char *err, size_t errlen)
{
	struct meta_loader ld = {.name = path ? path : "(null)", .err = err, .errlen = errlen};
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, r;

	if (err && errlen)
		err[0] = '\0';
	if (!reg || !path)
		return fail(&ld, 0, -EINVAL, "invalid argument");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		return fail(&ld, 0, r, "%s", strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = fail(&ld, 0, -errno, "%s", strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = fail(&ld, 0, -EINVAL, "not a regular file");
		goto out;
	}
	if (st.st_size > (off_t)META_FILE_MAX) {
		r = fail(&ld, 0, -EFBIG, "larger than %u bytes", META_FILE_MAX);
		goto out;
	}
	/* One byte more than the size, to notice a file that grew meanwhile. */
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		r = fail(&ld, 0, -ENOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size + 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = fail(&ld, 0, -errno, "%s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > (size_t)st.st_size) {
			r = fail(&ld, 0, -EAGAIN, "file changed while being read");
			goto out;
		}
	}
	r = meta_registry__load_buf(reg, path, buf, got, err, errlen);
out:
	free(buf);
	close(fd);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int meta_registry__load_dir(struct meta_registry *reg, const char *dir, char *err, size_t errlen)
{
	struct meta_loader ld = {.name = dir ? dir : "(null)", .err = err, .errlen = errlen};
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!reg || !dir)
		return fail(&ld, 0, -EINVAL, "invalid argument");
	d = opendir(dir);
	if (!d) {
		r = -errno;
		return fail(&ld, 0, r, "%s", strerror(-r));
	}
	while ((errno = 0, de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (de->d_name[0] == '.' || l <= 5 || strcmp(de->d_name + l - 5, ".meta") != 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn;

			if (ncap > META_TABLES_MAX) {
				r = fail(&ld, 0, -ENOSPC, "more than %u .meta files", META_TABLES_MAX);
				goto out;
			}
			nn = realloc(names, ncap * sizeof(*nn));
			if (!nn) {
				r = fail(&ld, 0, -ENOMEM, "out of memory");
				goto out;
			}
			names = nn;
			cap = ncap;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = fail(&ld, 0, -ENOMEM, "out of memory");
			goto out;
		}
		n++;
	}
	if (errno) {
		r = fail(&ld, 0, -errno, "%s", strerror(errno));
		goto out;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char *path;

		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			r = fail(&ld, 0, -ENOMEM, "out of memory");
			goto out;
		}
		r = meta_registry__load_file(reg, path, err, errlen);
		free(path);
		if (r < 0)
			goto out;
	}
	r = meta_registry__check_families(reg, err, errlen);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return r;
}
