/* hap_sess.c - HAProxy's "show sess all" into links (hap_sess.h). */
#include "hap_sess.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The value after "key=" in [s, e) up to a space or the end, or NULL. */
static const char *field(const char *s, const char *e, const char *key, size_t *ret_len)
{
	size_t kl = strlen(key);

	for (const char *p = s; p + kl <= e; p++) {
		const char *v, *ve;

		if (memcmp(p, key, kl) || (p > s && p[-1] != ' ' && p[-1] != ','))
			continue;
		v = p + kl;
		for (ve = v; ve < e && *ve != ' ' && *ve != ','; ve++)
			;
		*ret_len = (size_t)(ve - v);
		return v;
	}
	return NULL;
}

/* "IP:PORT" (IPv6 without brackets, as HAProxy prints it: the port after the last ':'). 0 or -EINVAL. */
static int addr_port(const char *v, size_t n, char *ip, uint16_t *port)
{
	const char *colon = NULL;
	unsigned long p = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i] == ':')
			colon = v + i;
	if (!colon || colon == v || (size_t)(colon - v) >= HAP_ADDR_LEN || colon + 1 == v + n)
		return -EINVAL;
	for (const char *c = colon + 1; c < v + n; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		p = p * 10 + (unsigned long)(*c - '0');
		if (p > 65535)
			return -EINVAL;
	}
	for (const char *c = v; c < colon; c++) {
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F') || *c == '.' ||
		      *c == ':'))
			return -EINVAL; /* "unix", a name: not an IP address */
	}
	memcpy(ip, v, (size_t)(colon - v));
	ip[colon - v] = 0;
	*port = (uint16_t)p;
	return 0;
}

/* One stream record [s, e): its link, or why there is none. */
static void one_stream(const char *s, const char *e, void (*cb)(void *, const struct hap_link *), void *ctx,
		       struct hap_sess_stats *st)
{
	struct hap_link l = {0};
	const char *nl = memchr(s, '\n', (size_t)(e - s)), *v, *fe = NULL, *sv = NULL;
	size_t n;
	uint16_t cport;

	st->streams++;
	if (!nl)
		nl = e;
	v = field(s, nl, "proto=", &n);
	if (!v || !((n == 5 && !memcmp(v, "tcpv4", 5)) || (n == 5 && !memcmp(v, "tcpv6", 5)))) {
		st->no_server++; /* the CLI's own stream, a UNIX socket or a QUIC one */
		return;
	}
	v = field(s, nl, "source=", &n);
	if (!v || addr_port(v, n, l.client_ip, &cport)) {
		st->malformed++;
		return;
	}
	for (const char *p = nl; p < e; p++) {
		const char *le;

		if (p[0] != '\n')
			continue;
		p++;
		le = memchr(p, '\n', (size_t)(e - p));
		if (!le)
			le = e;
		while (p < le && *p == ' ')
			p++;
		if ((size_t)(le - p) > 9 && !memcmp(p, "frontend=", 9))
			fe = p;
		else if ((size_t)(le - p) > 7 && !memcmp(p, "server=", 7))
			sv = p;
		p = le - 1;
	}
	if (!fe || !sv) {
		st->malformed++;
		return;
	}
	{
		const char *fe_end = memchr(fe, '\n', (size_t)(e - fe)), *sv_end = memchr(sv, '\n', (size_t)(e - sv));

		if (!fe_end)
			fe_end = e;
		if (!sv_end)
			sv_end = e;
		if (sv + 13 <= sv_end && !memcmp(sv, "server=<NONE>", 13)) {
			st->no_server++;
			return;
		}
		v = field(fe, fe_end, "mode=", &n);
		if (v && n >= 4 && !memcmp(v, "http", 4))
			l.mode = HAP_MODE_HTTP;
		else if (v && n >= 3 && !memcmp(v, "tcp", 3))
			l.mode = HAP_MODE_TCP;
		else {
			st->malformed++;
			return;
		}
		v = field(fe, fe_end, "addr=", &n);
		if (!v || addr_port(v, n, l.virtual_ip, &l.virtual_port)) {
			st->malformed++;
			return;
		}
		v = field(sv, sv_end, "addr=", &n);
		if (!v || addr_port(v, n, l.server_ip, &l.server_port)) {
			st->no_server++; /* a server named by a path or not resolved yet */
			return;
		}
	}
	st->links++;
	cb(ctx, &l);
}

static int is_record_start(const char *p, const char *e)
{
	const char *colon;

	if (e - p < 4 || p[0] != '0' || p[1] != 'x')
		return 0;
	colon = memchr(p, ':', (size_t)(e - p));
	return colon && colon + 2 < e && colon[1] == ' ' && colon[2] == '[';
}

int hap_sess_parse(const char *text, size_t len, void (*cb)(void *ctx, const struct hap_link *l), void *ctx,
		   struct hap_sess_stats *st)
{
	const char *p = text, *e = text + len, *rec = NULL;

	memset(st, 0, sizeof(*st));
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		const char *le = nl ? nl : e;

		if (is_record_start(p, le)) {
			if (rec)
				one_stream(rec, p - 1, cb, ctx, st);
			rec = p;
		} else if (!rec && le > p && !(le - p == 1 && *p == '\r')) {
			return -EINVAL; /* not "show sess" output: an error message, another CLI's answer */
		}
		p = nl ? nl + 1 : e;
	}
	if (rec)
		one_stream(rec, e, cb, ctx, st);
	return 0;
}
