/* pgs_targets.c - pg_stat_probe's servers: from the "gaussdb" snoopers or from pg_stat_probe.conf. */
#include "pgs_targets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"

/* An address or a host name: letters, digits, '.', ':', '-', '_' (libpq would take a leading '/' as
 * the directory of a Unix socket, and '=' or spaces do not belong in a host name). */
static int valid_host(const char *s)
{
	if (!s[0])
		return 0;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == ':' || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/* No control characters (they would end up in log lines and labels). */
static int valid_text(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

static int copy_field(char *dst, size_t size, const char *src, const char *name, char *err, size_t errlen)
{
	size_t n = strlen(src);

	if (n >= size)
		return gg_errf(err, errlen, -EINVAL, "%s: longer than %zu bytes", name, size - 1);
	if (!valid_text(src))
		return gg_errf(err, errlen, -EINVAL, "%s: control characters are not allowed", name);
	memcpy(dst, src, n + 1);
	return 0;
}

/* Append t unless its server (ip, port) is there already (counted in dup). */
static int add(struct pgs_targets *ts, const struct pgs_target *t, char *err, size_t errlen)
{
	if (!valid_host(t->ip))
		return gg_errf(err, errlen, -EINVAL, "ip: must be an address or a host name");
	if (t->port < 1 || t->port > 65535)
		return gg_errf(err, errlen, -EINVAL, "port: must be an integer in [1, 65535]");
	for (unsigned int i = 0; i < ts->n; i++) {
		if (ts->t[i].port == t->port && !strcmp(ts->t[i].ip, t->ip)) {
			ts->dup++;
			return 0;
		}
	}
	if (ts->n >= PGS_TARGETS_MAX)
		return gg_errf(err, errlen, -EINVAL, "more than %u servers", PGS_TARGETS_MAX);
	ts->t[ts->n++] = *t;
	return 0;
}

static const char *json_str(const cJSON *o, const char *name)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(x) ? x->valuestring : x == NULL || cJSON_IsNull(x) ? "" : NULL;
}

int pgs_targets__from_snoopers(const cJSON *snoopers, struct pgs_targets *ret, char *err, size_t errlen)
{
	struct pgs_targets ts = {0};
	const cJSON *list = snoopers ? cJSON_GetObjectItemCaseSensitive(snoopers, "gaussdb") : NULL, *e;
	unsigned int i = 0;
	char msg[160];

	if (list && !cJSON_IsArray(list) && !cJSON_IsNull(list))
		return gg_errf(err, errlen, -EINVAL, "snoopers.gaussdb: not a list");
	cJSON_ArrayForEach(e, list)
	{
		struct pgs_target t = {0};
		const char *ip = json_str(e, "dbip"), *db = json_str(e, "dbname"), *user = json_str(e, "dbuser"),
			   *pass = json_str(e, "dbpass");
		const cJSON *port = cJSON_GetObjectItemCaseSensitive(e, "dbport");
		int r;

		if (!cJSON_IsObject(e) || !ip || !db || !user || !pass)
			return gg_errf(err, errlen, -EINVAL, "snoopers.gaussdb[%u]: not an object of strings", i);
		if (cJSON_IsNumber(port) && port->valuedouble >= 1 && port->valuedouble <= 65535 &&
		    port->valuedouble == (double)(unsigned int)port->valuedouble)
			t.port = (unsigned int)port->valuedouble;
		r = copy_field(t.ip, sizeof(t.ip), ip, "dbip", msg, sizeof(msg));
		if (!r)
			r = copy_field(t.dbname, sizeof(t.dbname), db, "dbname", msg, sizeof(msg));
		if (!r)
			r = copy_field(t.user, sizeof(t.user), user, "dbuser", msg, sizeof(msg));
		if (!r)
			r = copy_field(t.password, sizeof(t.password), pass, "dbpass", msg, sizeof(msg));
		if (!r)
			r = add(&ts, &t, msg, sizeof(msg));
		if (r)
			return gg_errf(err, errlen, -EINVAL, "snoopers.gaussdb[%u]: %s", i, msg);
		i++;
	}
	*ret = ts;
	return 0;
}

/* ---- pg_stat_probe.conf ------------------------------------------------------------------------- */

#define CONF_LINE_MAX 512u

/* Trim spaces at both ends of [*s, *e). */
static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t' || (*e)[-1] == '\r'))
		(*e)--;
}

/* A scalar: "text", 'text' or plain (up to a " #" comment). Into buf (NUL-terminated), 0 or -EINVAL. */
static int scalar(const char *s, const char *e, char *buf, size_t size)
{
	size_t n;

	trim(&s, &e);
	if (s < e && (*s == '"' || *s == '\'')) {
		const char *q = memchr(s + 1, *s, (size_t)(e - s - 1));
		const char *rest;

		if (!q)
			return -EINVAL;
		rest = q + 1;
		trim(&rest, &e);
		if (rest < e && *rest != '#')
			return -EINVAL;
		e = q;
		s++;
	} else {
		for (const char *p = s; p < e; p++) {
			if (*p == '#' && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
				e = p;
				break;
			}
		}
		trim(&s, &e);
	}
	n = (size_t)(e - s);
	if (n >= size)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	return 0;
}

/* One "key: value" of a server entry into t. */
static int server_field(struct pgs_target *t, const char *s, const char *e, char *msg, size_t msglen)
{
	const char *colon = memchr(s, ':', (size_t)(e - s)), *ke;
	char key[16], val[CONF_LINE_MAX];

	if (!colon)
		return gg_errf(msg, msglen, -EINVAL, "expected \"key: value\"");
	ke = colon;
	trim(&s, &ke);
	if ((size_t)(ke - s) >= sizeof(key))
		return gg_errf(msg, msglen, -EINVAL, "unknown key");
	memcpy(key, s, (size_t)(ke - s));
	key[ke - s] = 0;
	if (scalar(colon + 1, e, val, sizeof(val)))
		return gg_errf(msg, msglen, -EINVAL, "%s: malformed or too long value", key);
	if (!strcmp(key, "ip"))
		return copy_field(t->ip, sizeof(t->ip), val, "ip", msg, msglen);
	if (!strcmp(key, "dbname"))
		return copy_field(t->dbname, sizeof(t->dbname), val, "dbname", msg, msglen);
	if (!strcmp(key, "user"))
		return copy_field(t->user, sizeof(t->user), val, "user", msg, msglen);
	if (!strcmp(key, "password"))
		return copy_field(t->password, sizeof(t->password), val, "password", msg, msglen);
	if (!strcmp(key, "port")) {
		char *end;
		unsigned long p = strtoul(val, &end, 10);

		if (!val[0] || *end || val[0] == '-' || val[0] == '+' || p < 1 || p > 65535)
			return gg_errf(msg, msglen, -EINVAL, "port: must be an integer in [1, 65535]");
		t->port = (unsigned int)p;
		return 0;
	}
	return gg_errf(msg, msglen, -EINVAL, "unknown key \"%s\" (ip, port, dbname, user, password)", key);
}

int pgs_targets__from_conf(const char *text, size_t len, struct pgs_targets *ret, char *err, size_t errlen)
{
	struct pgs_targets ts = {0};
	struct pgs_target cur;
	const char *p = text, *end = text + len;
	unsigned int line = 0;
	int in_servers = 0, in_item = 0;
	char msg[160];

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *s = p, *e = le;
		int indented, item;

		line++;
		p = nl ? nl + 1 : end;
		if ((size_t)(le - s) > CONF_LINE_MAX)
			return gg_errf(err, errlen, -EINVAL, "line %u: longer than %u bytes", line, CONF_LINE_MAX);
		if (memchr(s, 0, (size_t)(le - s)))
			return gg_errf(err, errlen, -EINVAL, "line %u: a NUL byte", line);
		indented = s < e && (*s == ' ' || *s == '\t');
		trim(&s, &e);
		if (s == e || *s == '#')
			continue;
		item = *s == '-' && (s + 1 == e || s[1] == ' ' || s[1] == '\t');
		if (!indented && !(item && in_servers)) {
			/* a top-level key: only "servers:" is ours */
			int is_servers = (size_t)(e - s) >= 8 && !memcmp(s, "servers:", 8);
			char rest[2];

			if (in_item && add(&ts, &cur, msg, sizeof(msg)))
				return gg_errf(err, errlen, -EINVAL, "line %u: server %u: %s", line, ts.n + ts.dup + 1, msg);
			in_item = in_servers = 0;
			if (!is_servers)
				continue;
			if (scalar(s + 8, e, rest, sizeof(rest)) || rest[0])
				return gg_errf(err, errlen, -EINVAL, "line %u: \"servers:\" must be followed by a list", line);
			in_servers = 1;
			continue;
		}
		if (!in_servers)
			continue;
		if (item) {
			if (in_item && add(&ts, &cur, msg, sizeof(msg)))
				return gg_errf(err, errlen, -EINVAL, "line %u: server %u: %s", line, ts.n + ts.dup + 1, msg);
			memset(&cur, 0, sizeof(cur));
			in_item = 1;
			s++;
			trim(&s, &e);
			if (s == e || *s == '#')
				continue;
		}
		if (!in_item)
			return gg_errf(err, errlen, -EINVAL, "line %u: expected a list item (\"-\")", line);
		if (server_field(&cur, s, e, msg, sizeof(msg)))
			return gg_errf(err, errlen, -EINVAL, "line %u: %s", line, msg);
	}
	if (in_item && add(&ts, &cur, msg, sizeof(msg)))
		return gg_errf(err, errlen, -EINVAL, "line %u: server %u: %s", line, ts.n + ts.dup + 1, msg);
	*ret = ts;
	return 0;
}

int pgs_target__equal(const struct pgs_target *a, const struct pgs_target *b)
{
	return a->port == b->port && !strcmp(a->ip, b->ip) && !strcmp(a->dbname, b->dbname) &&
	       !strcmp(a->user, b->user) && !strcmp(a->password, b->password);
}

int pgs_targets__equal(const struct pgs_targets *a, const struct pgs_targets *b)
{
	if (a->n != b->n)
		return 0;
	for (unsigned int i = 0; i < a->n; i++)
		if (!pgs_target__equal(&a->t[i], &b->t[i]))
			return 0;
	return 1;
}
