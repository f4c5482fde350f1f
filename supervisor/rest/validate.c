/* validate.c - the REST API's PUT body decoder and the all-or-nothing validator of a configuration
 * against a probe's contract (probe_table.c). */
#include "validate.h"
#include "identity.h" /* gg_pod_label__name, gg_ident__is_label (inline) */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errmsg.h"
#include "fsutil.h"

/* ---- messages ------------------------------------------------------------------------------------- */

/* User text quoted in a message: printable ASCII only, cut to max characters. */
static const char *snip(const char *s, size_t max, char *buf, size_t buflen)
{
	size_t n = 0;

	for (; *s && n + 4 < buflen && n < max; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	if (*s && n + 4 < buflen) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/* "a, b, c" from a NULL-terminated list ("none" when empty). */
static const char *join(const char *const *list, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (; list && *list && n + 1 < len; list++) {
		int w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "", *list);

		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (!buf[0])
		snprintf(buf, len, "none");
	return buf;
}

static const char *snoop_kinds(unsigned int bits, char *buf, size_t len)
{
	const char *names[6];
	unsigned int n = 0;

	if (bits & GG_SNOOP_PROC_ID)
		names[n++] = "proc_id";
	if (bits & GG_SNOOP_PROC_NAME)
		names[n++] = "proc_name";
	if (bits & GG_SNOOP_POD_ID)
		names[n++] = "pod_id";
	if (bits & GG_SNOOP_CONTAINER_ID)
		names[n++] = "container_id";
	if (bits & GG_SNOOP_GAUSSDB)
		names[n++] = "gaussdb";
	names[n] = NULL;
	return join(names, buf, len);
}

/* ---- proc_name.comm patterns ---------------------------------------------------------------------- */

/* glibc's regcomp copies the subexpression of every '+' (x+ is xx*) and of every interval {n,m} (m+1
 * copies): nested or stacked, the copies multiply ("c++++...+" of 40 took the fuzzer past 3 GB). The
 * product of those factors over the pattern bounds the compiled size. */
#define COMM_RE_COPIES_MAX 4096u

int gg_comm_pattern__check(const char *pat, char *why, size_t whylen)
{
	unsigned int braces = 0, copies = 1;
	int prev_quant = 0;
	regex_t re;
	int r;

	if (!pat[0] || strlen(pat) > GG_REST_COMM_RE_MAX) {
		snprintf(why, whylen, "must be 1 to %u characters", GG_REST_COMM_RE_MAX);
		return -EINVAL;
	}
	for (const char *p = pat; *p; p++) {
		int quant = *p == '*' || *p == '+' || *p == '?' || *p == '{';

		if (quant && prev_quant) {
			snprintf(why, whylen, "a quantifier may not follow another (\"a++\", \"a*{2}\")");
			return -EINVAL;
		}
		prev_quant = quant;
		if (*p == '+' && (copies *= 2) > COMM_RE_COPIES_MAX) {
			snprintf(why, whylen, "too many '+' and intervals: the compiled pattern would be too large");
			return -EINVAL;
		}
		if (*p == '\\' && p[1]) {
			if (p[1] >= '1' && p[1] <= '9') {
				snprintf(why, whylen, "back-references (\\%c) are not allowed", p[1]);
				return -EINVAL;
			}
			p++;
			continue;
		}
		if (*p == '[') { /* a bracket expression: no operators inside ("[]{]" included) */
			const char *q = p + 1;

			if (*q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']') {
				if (*q == '[' && (q[1] == ':' || q[1] == '.' || q[1] == '=')) {
					const char *e = strchr(q + 2, q[1]);

					q = e && e[1] == ']' ? e + 2 : q + 1;
					continue;
				}
				q++;
			}
			if (!*q)
				break; /* regcomp reports it */
			p = q;
			continue;
		}
		if (*p == '{') {
			/* Every brace counts, whatever follows: glibc takes "{,m}" as "{0,m}", so an interval
			 * without its lower count would otherwise escape the limit, and nested ones multiply
			 * the compiled size (a few "(...{,16})" grew the fuzzer past 2 GB). */
			const char *q = p + 1;
			unsigned long a = 0, b;
			char *end;

			if (*q >= '0' && *q <= '9') {
				a = strtoul(q, &end, 10);
				q = end;
			}
			b = a;
			if (*q == ',' && q[1] >= '0' && q[1] <= '9')
				b = strtoul(q + 1, &end, 10);
			if (++braces > GG_REST_COMM_RE_BRACES || a > GG_REST_COMM_RE_BOUND ||
			    b > GG_REST_COMM_RE_BOUND) {
				snprintf(why, whylen, "at most %u intervals {n,m} with counts up to %u",
					 GG_REST_COMM_RE_BRACES, GG_REST_COMM_RE_BOUND);
				return -EINVAL;
			}
			if ((copies *= (unsigned int)(a > b ? a : b) + 1) > COMM_RE_COPIES_MAX) {
				snprintf(why, whylen,
					 "too many '+' and intervals: the compiled pattern would be too large");
				return -EINVAL;
			}
			/* the interval is one quantifier up to its '}' */
			while (*q && *q != '}')
				q++;
			if (!*q)
				break; /* regcomp reports it */
			p = q;
		}
	}
	r = regcomp(&re, pat, REG_EXTENDED | REG_NOSUB);
	if (r) {
		char msg[96];

		regerror(r, &re, msg, sizeof(msg));
		snprintf(why, whylen, "not a POSIX extended regular expression: %s", msg);
		return -EINVAL;
	}
	regfree(&re);
	return 0;
}

/* ---- body decoding -------------------------------------------------------------------------------- */

/* 0..15, or -EINVAL for a character that is not a hex digit. */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -EINVAL;
}

/* 1 when [p, p+n) is well-formed UTF-8 (shortest forms, no surrogates, at most U+10FFFF). */
static int utf8_valid(const unsigned char *p, size_t n)
{
	const unsigned char *end = p + n;

	while (p < end) {
		unsigned char c = *p++, lo = 0x80, hi = 0xbf;
		size_t need;

		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			lo = c == 0xe0 ? 0xa0 : 0x80;
			hi = c == 0xed ? 0x9f : 0xbf;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			lo = c == 0xf0 ? 0x90 : 0x80;
			hi = c == 0xf4 ? 0x8f : 0xbf;
		} else
			return 0;
		if ((size_t)(end - p) < need || p[0] < lo || p[0] > hi)
			return 0;
		for (size_t i = 1; i < need; i++)
			if (p[i] < 0x80 || p[i] > 0xbf)
				return 0;
		p += need;
	}
	return 1;
}

int gg_rest_body__decode(const char *body, size_t len, const char *content_type, char **ret_json, char *err,
			 size_t errlen)
{
	const char *p = body, *end = body + len, *v = NULL, *vend = NULL;
	int raw = 0;
	size_t n = 0;
	char *out;

	if (!len)
		return gg_errf(err, errlen, 400, "empty request body: send json=<JSON> (curl -d json='{...}')");
	if (memchr(body, '\0', len))
		return gg_errf(err, errlen, 400, "request body contains a NUL byte");
	while (p < end && isspace((unsigned char)*p))
		p++;
	if ((content_type && !strncasecmp(content_type, "application/json", 16)) || (p < end && *p == '{')) {
		v = p;
		vend = end;
		raw = 1;
	} else {
		/* Form fields: find json=... */
		while (p < end) {
			const char *amp = memchr(p, '&', (size_t)(end - p));
			const char *fend = amp ? amp : end;

			if (fend - p >= 5 && !memcmp(p, "json=", 5)) {
				const char *q = p + 5;

				while (q < end && isspace((unsigned char)*q))
					q++;
				v = p + 5;
				if (q < end && *q == '{') {
					/* curl -d json='{...}': the JSON as typed, '&', '+' and '%' included */
					vend = end;
					raw = 1;
				} else {
					vend = fend;
				}
				break;
			}
			p = amp ? amp + 1 : end;
		}
		if (!v)
			return gg_errf(err, errlen, 400, "no json=<JSON> field in the request body");
	}

	out = malloc((size_t)(vend - v) + 1);
	if (!out)
		return gg_errf(err, errlen, 500, "out of memory");
	if (raw) {
		memcpy(out, v, (size_t)(vend - v));
		n = (size_t)(vend - v);
	} else {
		for (const char *c = v; c < vend; c++) {
			if (*c == '+') {
				out[n++] = ' ';
			} else if (*c == '%') {
				int hi = c + 2 < vend ? hexval(c[1]) : -EINVAL,
				    lo = c + 2 < vend ? hexval(c[2]) : -EINVAL;

				if (hi < 0 || lo < 0) {
					free(out);
					return gg_errf(err, errlen, 400, "bad URL encoding at character %zu of the body",
						    (size_t)(c - body) + 1);
				}
				out[n] = (char)(hi << 4 | lo);
				if (!out[n]) {
					free(out);
					return gg_errf(err, errlen, 400, "the decoded configuration contains a NUL byte");
				}
				n++;
				c += 2;
			} else {
				out[n++] = *c;
			}
		}
	}
	out[n] = '\0';
	if (n > GG_REST_JSON_MAX) {
		free(out);
		return gg_errf(err, errlen, 413, "configuration too long: %zu characters (at most %u)", n,
			    GG_REST_JSON_MAX);
	}
	/* JSON is UTF-8 (RFC 8259): what is stored is returned by GET, and strict clients reject it. */
	if (!utf8_valid((const unsigned char *)out, n)) {
		free(out);
		return gg_errf(err, errlen, 400, "the configuration is not valid UTF-8");
	}
	*ret_json = out;
	return 0;
}

/* ---- validation ----------------------------------------------------------------------------------- */

/* Steps the string state (*in_str, *esc) of a JSON text over ch: 1 when ch is part of a string (its
 * quotes too), 0 when it stands outside strings. */
static int json_str_step(char ch, int *in_str, int *esc)
{
	if (*in_str) {
		if (*esc)
			*esc = 0;
		else if (ch == '\\')
			*esc = 1;
		else if (ch == '"')
			*in_str = 0;
		return 1;
	}
	if (ch == '"')
		*in_str = 1;
	return *in_str;
}

/* The first number outside strings that RFC 8259 does not allow (cJSON reads "007", "+1", "1." and ".5"
 * as numbers; a leading zero means octal to some clients): its start, or NULL. */
static const char *loose_number(const char *s)
{
	int in_str = 0, esc = 0;

	for (const char *c = s; *c; c++) {
		const char *q = c;

		if (json_str_step(*c, &in_str, &esc))
			continue;
		if (!strchr("-+.0123456789", *c))
			continue;
		/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
		if (*q == '-')
			q++;
		if (*q == '0')
			q++;
		else if (*q >= '1' && *q <= '9')
			while (isdigit((unsigned char)*q))
				q++;
		else
			return c;
		if (*q == '.') {
			if (!isdigit((unsigned char)*++q))
				return c;
			while (isdigit((unsigned char)*q))
				q++;
		}
		if (*q == 'e' || *q == 'E') {
			q++;
			if (*q == '+' || *q == '-')
				q++;
			if (!isdigit((unsigned char)*q))
				return c;
			while (isdigit((unsigned char)*q))
				q++;
		}
		if (isdigit((unsigned char)*q) || *q == '.')
			return c; /* "01", "1.2.3" */
		c = q - 1;
	}
	return NULL;
}

/* Remove // and block comments outside strings (the seed's examples carry them). */
static int strip_comments(const char *in, char *out)
{
	int in_str = 0, esc = 0;

	while (*in) {
		if (json_str_step(*in, &in_str, &esc)) {
			*out++ = *in++;
		} else if (in[0] == '/' && in[1] == '/') {
			while (*in && *in != '\n')
				in++;
		} else if (in[0] == '/' && in[1] == '*') {
			const char *e = strstr(in + 2, "*/");

			if (!e)
				return -EINVAL;
			in = e + 2;
			*out++ = ' ';
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
	return 0;
}

/* A checked object may not repeat a key (cJSON would silently keep the first). */
static int dup_key(const cJSON *obj, char *err, size_t errlen, const char *where)
{
	char b[48];

	for (const cJSON *a = obj->child; a; a = a->next) {
		for (const cJSON *b2 = a->next; b2; b2 = b2->next) {
			if (a->string && b2->string && !strcmp(a->string, b2->string))
				return gg_errf(err, errlen, 400, "%s\"%s\": given twice", where,
					    snip(a->string, 32, b, sizeof(b)));
		}
	}
	return 0;
}

/* An integral JSON number in [lo, hi] into *ret; -ERANGE out of range, -EINVAL not an integer. */
static int get_int(const cJSON *v, long long lo, long long hi, long long *ret)
{
	double d;

	if (cJSON_IsBool(v)) {
		*ret = cJSON_IsTrue(v);
	} else {
		if (!cJSON_IsNumber(v))
			return -EINVAL;
		d = v->valuedouble;
		if (d != d || d < -9e15 || d > 9e15 || d != (double)(long long)d)
			return -EINVAL;
		*ret = (long long)d;
	}
	return *ret < lo || *ret > hi ? -ERANGE : 0;
}

static int valid_chars(const char *s, const char *extra)
{
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return 0;
	}
	return 1;
}

/* Lexically canonical absolute path of the longest existing prefix, resolved with realpath, with the
 * rest appended. -EINVAL for a relative path, "." or ".." components or overflow. */
static int resolve_loose(const char *path, char *out, size_t outlen)
{
	char buf[PATH_MAX], *slash;
	const char *c;
	size_t len = strlen(path);

	if (path[0] != '/' || len >= sizeof(buf))
		return -EINVAL;
	for (c = path; *c;) {
		size_t w;

		while (*c == '/')
			c++;
		w = strcspn(c, "/");
		if ((w == 1 && c[0] == '.') || (w == 2 && c[0] == '.' && c[1] == '.'))
			return -EINVAL;
		c += w;
	}
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	for (;;) {
		char real[PATH_MAX];

		if (realpath(buf, real)) {
			const char *rest = path + strlen(buf);
			size_t rl = strlen(real);

			if (rl == 1 && *rest == '/')
				rl = 0; /* "/" + "/rest" */
			if (rl + strlen(rest) + 1 > outlen)
				return -EINVAL;
			memcpy(out, real, rl);
			memcpy(out + rl, rest, strlen(rest) + 1);
			return 0;
		}
		if (errno != ENOENT && errno != ENOTDIR)
			return -errno;
		slash = strrchr(buf, '/');
		if (!slash)
			return -EINVAL;
		if (slash == buf) {
			buf[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
}

int gg_path__confine(const char *path, const char *bases, int must_exist, int want_file)
{
	char real[PATH_MAX];
	struct stat st;
	const char *b = bases;
	int err, any_base = 0;

	err = resolve_loose(path, real, sizeof(real));
	if (err)
		return err;
	if (must_exist || want_file) {
		if (stat(real, &st) < 0)
			return -ENOENT;
		if (want_file && !S_ISREG(st.st_mode))
			return -EINVAL;
	} else if (stat(real, &st) == 0 && !S_ISDIR(st.st_mode)) {
		return -ENOTDIR;
	}
	while (b && *b) {
		size_t w = strcspn(b, ":");
		char base[PATH_MAX], rbase[PATH_MAX];

		if (w && w < sizeof(base)) {
			memcpy(base, b, w);
			base[w] = '\0';
			if (resolve_loose(base, rbase, sizeof(rbase)) == 0) {
				size_t bl = strlen(rbase);

				any_base = 1;
				if (!strcmp(rbase, "/") ||
				    (!strncmp(real, rbase, bl) && (real[bl] == '\0' || real[bl] == '/')))
					return 0;
			}
		}
		b += w;
		if (*b == ':')
			b++;
	}
	return any_base ? -EACCES : -ENOENT;
}

/*
 * path with every symbolic link resolved, walking it one component at a time, into out (PATH_MAX): 0
 * only when every directory passed, every link followed and the file reached are owned by root (or by
 * us) and no directory is writable by others without the sticky bit (nor the file at all), so that
 * nobody else can have set the path up. -EINVAL (not absolute, too long), -ELOOP, -EACCES, -errno.
 */
static int trusted_resolve(const char *path, char *out)
{
	char rest[2 * PATH_MAX], cur[PATH_MAX] = "", next[PATH_MAX], target[PATH_MAX];
	unsigned int links = 0;
	const char *p;
	struct stat st;

	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return -EINVAL;
	if (stat("/", &st) || (st.st_uid != 0 && st.st_uid != geteuid()))
		return -EACCES;
	snprintf(rest, sizeof(rest), "%s", path);
	p = rest;
	for (;;) {
		size_t n;
		ssize_t tl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			char *slash = strrchr(cur, '/');

			if (n == 2 && slash)
				*slash = '\0'; /* cur has no links in it: ".." is lexical */
			p += n;
			continue;
		}
		if (strlen(cur) + 1 + n >= sizeof(next))
			return -EINVAL;
		{
			size_t cl = strlen(cur);

			memcpy(next, cur, cl);
			next[cl] = '/';
			memcpy(next + cl + 1, p, n);
			next[cl + 1 + n] = '\0';
		}
		p += n;
		if (lstat(next, &st))
			return -errno;
		if (st.st_uid != 0 && st.st_uid != geteuid())
			return -EACCES;
		if (S_ISLNK(st.st_mode)) {
			char tmp[2 * PATH_MAX];

			if (++links > 40)
				return -ELOOP;
			tl = readlink(next, target, sizeof(target) - 1);
			if (tl <= 0)
				return tl < 0 ? -errno : -EINVAL;
			target[tl] = '\0';
			if (target[0] == '/')
				cur[0] = '\0';
			if ((size_t)snprintf(tmp, sizeof(tmp), "%s/%s", target, p) >= sizeof(tmp))
				return -EINVAL;
			memcpy(rest, tmp, sizeof(rest));
			p = rest;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
				return -EACCES;
		} else {
			while (*p == '/')
				p++;
			if (*p)
				return -ENOTDIR;
			if (st.st_mode & (S_IWGRP | S_IWOTH))
				return -EACCES;
		}
		memcpy(cur, next, sizeof(cur));
	}
	snprintf(out, PATH_MAX, "%s", cur[0] ? cur : "/");
	return 0;
}

/* bin names the same file as the registered binary reg: both resolve, through root-owned paths only,
 * to one canonical path (realpath semantics; strings are never compared). */
static int same_trusted_file(const char *bin, const char *reg)
{
	char a[PATH_MAX], b[PATH_MAX];

	return trusted_resolve(bin, a) == 0 && trusted_resolve(reg, b) == 0 && !strcmp(a, b);
}

struct check {
	const struct gg_probe_def *def;
	const struct gg_rest_check_ctx *ctx;
	char *err;
	size_t errlen;
};

/* obj is an object (else 400 "<where>: must be an object <shape>"), no key of it stands twice (the
 * message puts dup_where before the key) and, unless allowed is NULL, each is in allowed (else 400
 * "<where>.<key>: unknown field (expected a, b, ...)"). */
static int check_object(struct check *c, const cJSON *obj, const char *where, const char *shape, const char *dup_where,
			const char *const *allowed)
{
	const cJSON *k;
	char b[48], all[160];
	int err;

	if (!cJSON_IsObject(obj))
		return gg_errf(c->err, c->errlen, 400, "%s: must be an object %s", where, shape);
	err = dup_key(obj, c->err, c->errlen, dup_where);
	if (err || !allowed)
		return err;
	cJSON_ArrayForEach(k, obj)
	{
		if (!gg_in_list(allowed, k->string))
			return gg_errf(c->err, c->errlen, 400, "%s.%s: unknown field (expected %s)", where,
				    snip(k->string, 32, b, sizeof(b)), join(allowed, all, sizeof(all)));
	}
	return 0;
}

static int check_cmd(struct check *c, const cJSON *cmd, cJSON *out)
{
	static const char *const keys[] = {"bin", "check_cmd", "probe", NULL};
	const cJSON *it;
	char b1[64], b2[PATH_MAX + 8], all[512];
	int err;

	err = check_object(c, cmd, "cmd", "{\"bin\", \"check_cmd\", \"probe\": [...]}", "cmd.", keys);
	if (err)
		return err;
	it = cJSON_GetObjectItemCaseSensitive(cmd, "bin");
	if (it && !cJSON_IsNull(it)) {
		const char *bin = cJSON_GetStringValue(it);
		const char *reg = c->ctx->registered_bin;
		const char *base = strrchr(reg, '/') ? strrchr(reg, '/') + 1 : reg;
		char stock[PATH_MAX];

		if (!bin)
			return gg_errf(c->err, c->errlen, 400, "cmd.bin: must be a string");
		/* Only ever the registered binary runs; these are the ways of naming it. */
		snprintf(stock, sizeof(stock), "/opt/gala-gopher/extend_probes/%s", base);
		if (bin[0] && strcmp(bin, reg) && strcmp(bin, base) && strcmp(bin, stock) &&
		    !same_trusted_file(bin, reg))
			return gg_errf(c->err, c->errlen, 403,
				    "cmd.bin: \"%s\" is not the registered binary of probe %s (%s); only that binary "
				    "can run",
				    snip(bin, 64, b2, sizeof(b2)), c->def->rest_name, reg);
	}
	cJSON_AddStringToObject(out, "bin", c->ctx->registered_bin);
	it = cJSON_GetObjectItemCaseSensitive(cmd, "check_cmd");
	if (it && !cJSON_IsNull(it)) {
		const char *cc = cJSON_GetStringValue(it);
		const char *conf = c->ctx->check_cmd ? c->ctx->check_cmd : "";

		if (!cc)
			return gg_errf(c->err, c->errlen, 400, "cmd.check_cmd: must be a string");
		if (cc[0] && strcmp(cc, conf))
			return gg_errf(c->err, c->errlen, 403,
				    "cmd.check_cmd: only \"\" or the check_cmd of the configuration file is accepted "
				    "(the REST API never runs commands)");
	}
	cJSON_AddStringToObject(out, "check_cmd", c->ctx->check_cmd ? c->ctx->check_cmd : "");
	it = cJSON_GetObjectItemCaseSensitive(cmd, "probe");
	if (it && !cJSON_IsNull(it)) {
		cJSON *list = cJSON_AddArrayToObject(out, "probe");
		const cJSON *s;
		unsigned int i = 0;

		if (!cJSON_IsArray(it))
			return gg_errf(c->err, c->errlen, 400,
				    "cmd.probe: must be a list of sub-probe names (allowed: %s)",
				    join(c->def->subprobes, all, sizeof(all)));
		if ((unsigned int)cJSON_GetArraySize(it) > GG_REST_SUBPROBES_MAX)
			return gg_errf(c->err, c->errlen, 400, "cmd.probe: at most %u sub-probes", GG_REST_SUBPROBES_MAX);
		cJSON_ArrayForEach(s, it)
		{
			const char *name = cJSON_GetStringValue(s);
			int dup = 0;
			const cJSON *o;

			if (!name)
				return gg_errf(c->err, c->errlen, 400, "cmd.probe[%u]: must be a string (allowed: %s)", i,
					    join(c->def->subprobes, all, sizeof(all)));
			if (!c->def->subprobes)
				return gg_errf(c->err, c->errlen, 400,
					    "cmd.probe[%u]: probe %s has no sub-probes (send [] or leave it out)", i,
					    c->def->rest_name);
			if (!gg_in_list(c->def->subprobes, name))
				return gg_errf(c->err, c->errlen, 400,
					    "cmd.probe[%u]: unknown sub-probe \"%s\" of %s (allowed: %s)", i,
					    snip(name, 32, b1, sizeof(b1)), c->def->rest_name,
					    join(c->def->subprobes, all, sizeof(all)));
			cJSON_ArrayForEach(o, list)
			{
				if (!strcmp(o->valuestring, name))
					dup = 1;
			}
			if (!dup)
				cJSON_AddItemToArray(list, cJSON_CreateString(name));
			i++;
		}
	}
	return 0;
}

/* A list of snooper entries: NULL list -> nothing; checks the kind is accepted when non-empty. */
static int snoop_list(struct check *c, const cJSON *list, const char *kind, unsigned int bit, unsigned int max)
{
	char all[128];

	if (!cJSON_IsArray(list))
		return gg_errf(c->err, c->errlen, 400, "snoopers.%s: must be a list", kind);
	if (cJSON_GetArraySize(list) > 0 && !(c->def->snoopers & bit))
		return gg_errf(c->err, c->errlen, 400, "snoopers.%s: not a monitoring target of probe %s (accepted: %s)",
			    kind, c->def->rest_name, snoop_kinds(c->def->snoopers, all, sizeof(all)));
	if ((unsigned int)cJSON_GetArraySize(list) > max)
		return gg_errf(c->err, c->errlen, 400, "snoopers.%s: at most %u entries", kind, max);
	return 0;
}

static int check_str_field(struct check *c, const cJSON *obj, const char *key, const char *where, unsigned int i,
			   size_t max, int required, const char **ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	const char *s;

	*ret = "";
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return gg_errf(c->err, c->errlen, 400, "snoopers.%s[%u].%s: required", where, i, key);
		return 0;
	}
	s = cJSON_GetStringValue(v);
	if (!s)
		return gg_errf(c->err, c->errlen, 400, "snoopers.%s[%u].%s: must be a string", where, i, key);
	if (strlen(s) > max || (required && !s[0]))
		return gg_errf(c->err, c->errlen, 400, "snoopers.%s[%u].%s: must be %s%zu characters", where, i, key,
			    required ? "1 to " : "at most ", max);
	for (const char *p = s; *p; p++) {
		if ((unsigned char)*p < 0x20)
			return gg_errf(c->err, c->errlen, 400, "snoopers.%s[%u].%s: control characters are not allowed",
				    where, i, key);
	}
	*ret = s;
	return 0;
}

/* Element i of the list where: an object of no keys but allowed (the message names them). */
static int check_keys(struct check *c, const cJSON *obj, const char *const *allowed, const char *where, unsigned int i)
{
	char at[64], shape[160] = "{";

	for (size_t j = 0; allowed[j]; j++)
		snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), "%s\"%s\"", j ? ", " : "", allowed[j]);
	snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), "}");
	snprintf(at, sizeof(at), "snoopers.%s[%u]", where, i);
	return check_object(c, obj, at, shape, "", allowed);
}

/* A Prometheus label name ([A-Za-z_][A-Za-z0-9_]*, not "__..."), at most GG_REST_LABEL_NAME_MAX. */
static int prom_label_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > GG_REST_LABEL_NAME_MAX || (s[0] >= '0' && s[0] <= '9') || !strncmp(s, "__", 2))
		return 0;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	}
	return 1;
}

/* Names the supervisor adds itself: a custom or pod label may not take them. */
static int label_reserved(const char *name)
{
	return !strcmp(name, "machine_id") || !strcmp(name, "hostname") || gg_ident__is_label(name, strlen(name));
}

/* A Kubernetes label key: [prefix/]name, prefix a DNS subdomain (at most 253), name at most 63 of
 * [A-Za-z0-9._-] beginning and ending with a letter or digit. */
static int kube_label_key_ok(const char *k)
{
	const char *slash = strrchr(k, '/'), *name = slash ? slash + 1 : k;
	size_t pn = slash ? (size_t)(slash - k) : 0, nn = strlen(name);

	if (!nn || nn > 63 || !isalnum((unsigned char)name[0]) || !isalnum((unsigned char)name[nn - 1]))
		return 0;
	for (size_t i = 0; i < nn; i++) {
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
			return 0;
	}
	if (!slash)
		return 1;
	if (!pn || pn > 253 || !isalnum((unsigned char)k[0]) || !isalnum((unsigned char)k[pn - 1]))
		return 0;
	for (size_t i = 0; i < pn; i++) {
		if (!(islower((unsigned char)k[i]) || isdigit((unsigned char)k[i]) || k[i] == '-' || k[i] == '.'))
			return 0;
	}
	return 1;
}

/* snoopers.custom_labels {name: value} and snoopers.pod_labels [key] (gala-gopher's): labels added to
 * every series of the probe's tables; the pod labels' exported names must differ from every other. */
static int check_labels(struct check *c, const cJSON *sn, cJSON *out)
{
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(sn, "custom_labels");
	const cJSON *pl = cJSON_GetObjectItemCaseSensitive(sn, "pod_labels"), *e, *f;
	char b[80], name[GG_REST_LABEL_NAME_MAX + 2], other[GG_REST_LABEL_NAME_MAX + 2];
	unsigned int i = 0;

	if (cl && !cJSON_IsNull(cl)) {
		cJSON *o = cJSON_AddObjectToObject(out, "custom_labels");

		if (!cJSON_IsObject(cl))
			return gg_errf(c->err, c->errlen, 400,
				    "snoopers.custom_labels: must be an object {\"<label>\": \"<value>\", ...}");
		if (cJSON_GetArraySize(cl) > (int)GG_REST_LABELS_MAX)
			return gg_errf(c->err, c->errlen, 400, "snoopers.custom_labels: at most %u labels",
				    GG_REST_LABELS_MAX);
		cJSON_ArrayForEach(e, cl)
		{
			const char *v = cJSON_GetStringValue(e);
			size_t vn = v ? strlen(v) : 0;

			if (!prom_label_name_ok(e->string))
				return gg_errf(c->err, c->errlen, 400,
					    "snoopers.custom_labels.%s: a label name is 1 to %u of [A-Za-z0-9_], not "
					    "beginning with a digit or \"__\"",
					    snip(e->string, 32, b, sizeof(b)), GG_REST_LABEL_NAME_MAX);
			if (label_reserved(e->string))
				return gg_errf(c->err, c->errlen, 400,
					    "snoopers.custom_labels.%s: the supervisor adds this label itself",
					    e->string);
			if (!v || vn > GG_REST_LABEL_VALUE_MAX)
				return gg_errf(c->err, c->errlen, 400,
					    "snoopers.custom_labels.%s: the value must be a string of at most %u bytes",
					    e->string, GG_REST_LABEL_VALUE_MAX);
			for (const char *p = v; *p; p++) {
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					return gg_errf(c->err, c->errlen, 400,
						    "snoopers.custom_labels.%s: control characters are not allowed",
						    e->string);
			}
			cJSON_AddItemToObject(o, e->string, cJSON_CreateString(v));
		}
	}
	if (!pl || cJSON_IsNull(pl))
		return 0;
	if (!cJSON_IsArray(pl))
		return gg_errf(c->err, c->errlen, 400,
			    "snoopers.pod_labels: must be a list of Kubernetes label keys [\"app\", ...]");
	if (cJSON_GetArraySize(pl) > (int)GG_REST_LABELS_MAX)
		return gg_errf(c->err, c->errlen, 400, "snoopers.pod_labels: at most %u labels", GG_REST_LABELS_MAX);
	cJSON *o = cJSON_AddArrayToObject(out, "pod_labels");

	cJSON_ArrayForEach(e, pl)
	{
		const char *k = cJSON_GetStringValue(e);
		unsigned int j = 0;

		if (!k || strlen(k) > GG_REST_POD_LABEL_KEY_MAX || !kube_label_key_ok(k))
			return gg_errf(c->err, c->errlen, 400,
				    "snoopers.pod_labels[%u]: must be a Kubernetes label key ([prefix/]name, name 1 to "
				    "63 of [A-Za-z0-9._-] beginning and ending with a letter or digit)",
				    i);
		if (gg_pod_label__name(k, name, sizeof(name)) || strlen(name) > GG_REST_LABEL_NAME_MAX)
			return gg_errf(c->err, c->errlen, 400,
				    "snoopers.pod_labels[%u]: its label name (%s) would be longer than %u characters",
				    i, snip(k, 32, b, sizeof(b)), GG_REST_LABEL_NAME_MAX);
		if (label_reserved(name) || (cl && cJSON_IsObject(cl) && cJSON_GetObjectItemCaseSensitive(cl, name)))
			return gg_errf(c->err, c->errlen, 400,
				    "snoopers.pod_labels[%u]: label %s is taken (by the supervisor or custom_labels)",
				    i, name);
		cJSON_ArrayForEach(f, pl)
		{
			if (j++ >= i)
				break;
			if (!gg_pod_label__name(cJSON_GetStringValue(f), other, sizeof(other)) && !strcmp(other, name))
				return gg_errf(c->err, c->errlen, 400,
					    "snoopers.pod_labels[%u]: label %s is given twice (keys are exported with "
					    "every character outside [A-Za-z0-9_] as '_')",
					    i, name);
		}
		cJSON_AddItemToArray(o, cJSON_CreateString(k));
		i++;
	}
	return 0;
}

static int snoop_proc_id(struct check *c, const cJSON *e, unsigned int i, cJSON **ret)
{
	long long pid;

	if (get_int(e, 1, GG_REST_PID_MAX, &pid) || cJSON_IsBool(e))
		return gg_errf(c->err, c->errlen, 400, "snoopers.proc_id[%u]: must be a process id in [1, %d]", i,
			    GG_REST_PID_MAX);
	*ret = cJSON_CreateNumber((double)pid);
	return 0;
}

static int snoop_proc_name(struct check *c, const cJSON *e, unsigned int i, cJSON **ret)
{
	static const char *const pn_keys[] = {"comm", "cmdline", "debugging_dir", NULL};
	const char *comm, *cmdline, *dbg;
	cJSON *no;
	int err;

	err = check_keys(c, e, pn_keys, "proc_name", i);
	if (!err)
		err = check_str_field(c, e, "comm", "proc_name", i, GG_REST_COMM_RE_MAX, 1, &comm);
	if (!err) {
		char why[160];

		if (gg_comm_pattern__check(comm, why, sizeof(why)))
			return gg_errf(c->err, c->errlen, 400, "snoopers.proc_name[%u].comm: %s", i, why);
	}
	if (!err)
		err = check_str_field(c, e, "cmdline", "proc_name", i, GG_REST_CMDLINE_MAX, 0, &cmdline);
	if (!err)
		err = check_str_field(c, e, "debugging_dir", "proc_name", i, PATH_MAX - 1, 0, &dbg);
	if (err)
		return err;
	if (dbg[0] && dbg[0] != '/')
		return gg_errf(c->err, c->errlen, 400, "snoopers.proc_name[%u].debugging_dir: must be an absolute path",
			    i);
	no = cJSON_CreateObject();
	cJSON_AddStringToObject(no, "comm", comm);
	cJSON_AddStringToObject(no, "cmdline", cmdline);
	cJSON_AddStringToObject(no, "debugging_dir", dbg);
	*ret = no;
	return 0;
}

static int snoop_pod_id(struct check *c, const cJSON *e, unsigned int i, cJSON **ret)
{
	const char *s = cJSON_GetStringValue(e);

	if (!s || !s[0] || strlen(s) > 64 || !valid_chars(s, "-_"))
		return gg_errf(c->err, c->errlen, 400,
			    "snoopers.pod_id[%u]: must be a pod UID (1 to 64 letters, digits, '-' or '_')", i);
	*ret = cJSON_CreateString(s);
	return 0;
}

static int snoop_container_id(struct check *c, const cJSON *e, unsigned int i, cJSON **ret)
{
	const char *s = cJSON_GetStringValue(e);

	/* sliprobe's documentation writes entries as {"container_id": "..."} */
	if (!s && cJSON_IsObject(e) && cJSON_GetArraySize(e) == 1)
		s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "container_id"));
	if (!s || !s[0] || strlen(s) > 64 || !valid_chars(s, ""))
		return gg_errf(c->err, c->errlen, 400,
			    "snoopers.container_id[%u]: must be a container id (1 to 64 letters or digits; "
			    "a prefix of at least 12 characters, or the full id)",
			    i);
	*ret = cJSON_CreateString(s);
	return 0;
}

/* container_name: a substring of the container's name, as `docker ps --filter name=` (gala-gopher);
 * taken wherever container_id is */
static int snoop_container_name(struct check *c, const cJSON *e, unsigned int i, cJSON **ret)
{
	const char *s = cJSON_GetStringValue(e);
	size_t n = s ? strlen(s) : 0;

	if (!s || !n || n > GG_REST_CONTAINER_NAME_MAX)
		return gg_errf(c->err, c->errlen, 400,
			    "snoopers.container_name[%u]: must be a string of 1 to %u characters", i,
			    GG_REST_CONTAINER_NAME_MAX);
	for (const char *p = s; *p; p++) {
		if ((unsigned char)*p < 0x20)
			return gg_errf(c->err, c->errlen, 400,
				    "snoopers.container_name[%u]: control characters are not allowed", i);
	}
	*ret = cJSON_CreateString(s);
	return 0;
}

static int snoop_gaussdb(struct check *c, const cJSON *e, unsigned int i, cJSON **ret)
{
	static const char *const db_keys[] = {"dbip", "dbport", "dbname", "dbuser", "dbpass", NULL};
	const char *ip, *name, *user, *pass;
	long long port;
	cJSON *no;
	int err;

	err = check_keys(c, e, db_keys, "gaussdb", i);
	if (!err)
		err = check_str_field(c, e, "dbip", "gaussdb", i, 63, 1, &ip);
	if (!err)
		err = check_str_field(c, e, "dbname", "gaussdb", i, 63, 0, &name);
	if (!err)
		err = check_str_field(c, e, "dbuser", "gaussdb", i, 63, 0, &user);
	if (!err)
		err = check_str_field(c, e, "dbpass", "gaussdb", i, 127, 0, &pass);
	if (err)
		return err;
	if (get_int(cJSON_GetObjectItemCaseSensitive(e, "dbport"), 1, 65535, &port))
		return gg_errf(c->err, c->errlen, 400, "snoopers.gaussdb[%u].dbport: must be an integer in [1, 65535]", i);
	if (!valid_chars(ip, ".:-"))
		return gg_errf(c->err, c->errlen, 400, "snoopers.gaussdb[%u].dbip: must be an address or host name", i);
	no = cJSON_CreateObject();
	cJSON_AddStringToObject(no, "dbip", ip);
	cJSON_AddNumberToObject(no, "dbport", (double)port);
	cJSON_AddStringToObject(no, "dbname", name);
	cJSON_AddStringToObject(no, "dbuser", user);
	cJSON_AddStringToObject(no, "dbpass", pass);
	*ret = no;
	return 0;
}

/* The snooper lists, in the order they are written out: each element checked by check, which gives
 * 0 and the element as stored, or the error. */
static const struct snoop_list_def {
	const char *name;
	unsigned int bit, max;
	int (*check)(struct check *c, const cJSON *e, unsigned int i, cJSON **ret);
} snoop_lists[] = {
	{"proc_id", GG_SNOOP_PROC_ID, GG_REST_PROC_IDS_MAX, snoop_proc_id},
	{"proc_name", GG_SNOOP_PROC_NAME, GG_REST_PROC_NAMES_MAX, snoop_proc_name},
	{"pod_id", GG_SNOOP_POD_ID, GG_REST_PODS_MAX, snoop_pod_id},
	{"container_id", GG_SNOOP_CONTAINER_ID, GG_REST_CONTAINERS_MAX, snoop_container_id},
	{"container_name", GG_SNOOP_CONTAINER_ID, GG_REST_CONTAINERS_MAX, snoop_container_name},
	{"gaussdb", GG_SNOOP_GAUSSDB, GG_REST_GAUSSDB_MAX, snoop_gaussdb},
};

static int check_snoopers(struct check *c, const cJSON *sn, cJSON *out)
{
	static const char *const keys[] = {"proc_id",	    "proc_name",      "pod_id",
					   "container_id",  "container_name", "gaussdb",
					   "custom_labels", "pod_labels",     NULL};
	const cJSON *k, *e;
	int err;

	err = check_object(c, sn, "snoopers", "{\"proc_id\", \"proc_name\", \"pod_id\", \"container_id\"}", "snoopers.",
			   keys);
	if (err)
		return err;
	err = check_labels(c, sn, out);
	if (err)
		return err;
	if (c->ctx->extend) {
		cJSON_ArrayForEach(k, sn)
		{
			/* the labels are the supervisor's: an extend probe takes them too */
			if (!strcmp(k->string, "custom_labels") || !strcmp(k->string, "pod_labels"))
				continue;
			if (cJSON_GetArraySize(k) > 0)
				return gg_errf(
					c->err, c->errlen, 400,
					"snoopers.%s: probe %s runs as an extend probe (no control channel): it cannot "
					"be given a monitoring scope",
					k->string, c->def->rest_name);
		}
	}

	for (size_t j = 0; j < sizeof(snoop_lists) / sizeof(snoop_lists[0]); j++) {
		const struct snoop_list_def *d = &snoop_lists[j];
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(sn, d->name);
		cJSON *o;
		unsigned int i = 0;

		if (!list || cJSON_IsNull(list))
			continue;
		o = cJSON_AddArrayToObject(out, d->name);
		err = snoop_list(c, list, d->name, d->bit, d->max);
		if (err)
			return err;
		cJSON_ArrayForEach(e, list)
		{
			cJSON *item;

			err = d->check(c, e, i++, &item);
			if (err)
				return err;
			cJSON_AddItemToArray(o, item);
		}
	}
	return 0;
}

static int range_msg(struct check *c, const struct gg_param_spec *s, const char *what)
{
	char unit[32] = "";

	if (s->unit)
		snprintf(unit, sizeof(unit), " %s", s->unit);
	if (s->zero_off)
		return gg_errf(c->err, c->errlen, 400,
			    "params.%s: %s; must be 0 (off) or an integer in [%lld, %lld]%s (default %lld)", s->name,
			    what, s->min, s->max, unit, s->def);
	return gg_errf(c->err, c->errlen, 400, "params.%s: %s; must be an integer in [%lld, %lld]%s (default %lld)",
		    s->name, what, s->min, s->max, unit, s->def);
}

static int check_param(struct check *c, const struct gg_param_spec *s, const cJSON *v, cJSON *out)
{
	char all[256], b[80];
	long long x;
	int err;

	switch (s->type) {
	case GG_PT_INT:
	case GG_PT_BOOL: {
		const char *str = cJSON_GetStringValue(v);

		/* "20%" for the percentage thresholds, as gala-gopher's examples write them */
		if (str && s->unit && !strcmp(s->unit, "percent")) {
			char *end;

			errno = 0;
			x = strtoll(str, &end, 10);
			if (end == str || errno || (*end && strcmp(end, "%")))
				return range_msg(c, s, "not a percentage");
			err = x < s->min || x > s->max ? -ERANGE : 0;
		} else if (s->type == GG_PT_BOOL) {
			err = get_int(v, 0, 1, &x);
			if (err)
				return gg_errf(c->err, c->errlen, 400, "params.%s: must be 0 or 1 (default %lld)", s->name,
					    s->def);
		} else {
			err = cJSON_IsBool(v) ? -EINVAL : get_int(v, s->min, s->max, &x);
			if (err == -ERANGE && s->zero_off && x == 0)
				err = 0;
		}
		if (err == -EINVAL)
			return range_msg(c, s, "not an integer");
		if (err) {
			snprintf(b, sizeof(b), "%lld is out of range", x);
			return range_msg(c, s, b);
		}
		cJSON_AddNumberToObject(out, s->name, (double)x);
		return 0;
	}
	case GG_PT_ENUM: {
		const char *str = cJSON_GetStringValue(v);

		if (!str || !gg_in_list(s->choices, str))
			return gg_errf(c->err, c->errlen, 400, "params.%s: must be one of %s (default %s)", s->name,
				    join(s->choices, all, sizeof(all)), s->def_str);
		cJSON_AddStringToObject(out, s->name, str);
		return 0;
	}
	case GG_PT_ENUM_LIST: {
		cJSON *o;
		const cJSON *e;
		unsigned int n = 0;

		if (cJSON_IsString(v)) {
			if (!gg_in_list(s->choices, v->valuestring))
				return gg_errf(c->err, c->errlen, 400, "params.%s: \"%s\" is not one of %s", s->name,
					    snip(v->valuestring, 32, b, sizeof(b)), join(s->choices, all, sizeof(all)));
			o = cJSON_AddArrayToObject(out, s->name);
			cJSON_AddItemToArray(o, cJSON_CreateString(v->valuestring));
			return 0;
		}
		if (!cJSON_IsArray(v))
			return gg_errf(c->err, c->errlen, 400, "params.%s: must be a list of %s (default [%s])", s->name,
				    join(s->choices, all, sizeof(all)), s->def_str);
		o = cJSON_AddArrayToObject(out, s->name);
		cJSON_ArrayForEach(e, v)
		{
			const char *str = cJSON_GetStringValue(e);

			if (!str || !gg_in_list(s->choices, str))
				return gg_errf(c->err, c->errlen, 400, "params.%s[%u]: must be one of %s", s->name, n,
					    join(s->choices, all, sizeof(all)));
			if (++n > 16)
				return gg_errf(c->err, c->errlen, 400, "params.%s: too many entries", s->name);
			cJSON_AddItemToArray(o, cJSON_CreateString(str));
		}
		return 0;
	}
	case GG_PT_HOSTPORT: {
		const char *str = cJSON_GetStringValue(v), *colon;
		char *end;
		long port;

		if (!str)
			return gg_errf(c->err, c->errlen, 400,
				    "params.%s: must be a \"host:port\" string (default \"%s\")", s->name, s->def_str);
		colon = strrchr(str, ':');
		if (str[0]) {
			if (!colon || colon == str || strlen(str) > 255)
				return gg_errf(c->err, c->errlen, 400, "params.%s: must be \"host:port\" (default \"%s\")",
					    s->name, s->def_str);
			errno = 0;
			port = strtol(colon + 1, &end, 10);
			if (errno || *end || end == colon + 1 || port < 1 || port > 65535)
				return gg_errf(c->err, c->errlen, 400, "params.%s: port must be in [1, 65535]", s->name);
			for (const char *p = str; p < colon; p++) {
				if (!isalnum((unsigned char)*p) && !strchr(".-_[]:", *p))
					return gg_errf(c->err, c->errlen, 400, "params.%s: bad host name", s->name);
			}
		}
		cJSON_AddStringToObject(out, s->name, str);
		return 0;
	}
	case GG_PT_NAME: {
		const char *str = cJSON_GetStringValue(v);

		if (!str || strlen(str) > 63 || !valid_chars(str, "_-.:"))
			return gg_errf(c->err, c->errlen, 400,
				    "params.%s: must be a device name (at most 63 letters, digits, '_', '-', '.', ':'; "
				    "default \"\")",
				    s->name);
		cJSON_AddStringToObject(out, s->name, str);
		return 0;
	}
	case GG_PT_OUT_DIR:
	case GG_PT_ELF_PATH: {
		const char *str = cJSON_GetStringValue(v);
		int elf = s->type == GG_PT_ELF_PATH;
		const char *bases = elf ? c->ctx->elf_bases : c->ctx->out_base;

		if (!str)
			return gg_errf(c->err, c->errlen, 400, "params.%s: must be a path string", s->name);
		if (elf && !str[0]) {
			cJSON_AddStringToObject(out, s->name, "");
			return 0;
		}
		if (!bases || !bases[0])
			return gg_errf(c->err, c->errlen, 403, "params.%s: no base directory is configured for it",
				    s->name);
		err = gg_path__confine(str, bases, elf, elf);
		if (err == -EACCES)
			return gg_errf(c->err, c->errlen, 403, "params.%s: \"%s\" is outside %s (symbolic links resolved)",
				    s->name, snip(str, 64, all, sizeof(all)), bases);
		if (err == -ENOENT && elf)
			return gg_errf(c->err, c->errlen, 400, "params.%s: \"%s\" does not exist", s->name,
				    snip(str, 64, all, sizeof(all)));
		if (err == -ENOENT)
			return gg_errf(c->err, c->errlen, 403, "params.%s: the base directory %s does not exist", s->name,
				    bases);
		if (err == -ENOTDIR)
			return gg_errf(c->err, c->errlen, 400, "params.%s: \"%s\" exists and is not a directory", s->name,
				    snip(str, 64, all, sizeof(all)));
		if (err)
			return gg_errf(c->err, c->errlen, 400,
				    "params.%s: must be an absolute path without '.' or '..' components%s (under %s)",
				    s->name, elf ? ", naming a regular file" : "", bases);
		/* The probe writes below the base as spelled, never through a symbolic link: a path that only
		 * reaches the base through one would be refused at every write. */
		if (!elf && !gg_path_base_len(str, bases))
			return gg_errf(c->err, c->errlen, 403,
				    "params.%s: \"%s\" must be spelled below %s (not through a symbolic link to it)",
				    s->name, snip(str, 64, all, sizeof(all)), bases);
		cJSON_AddStringToObject(out, s->name, str);
		return 0;
	}
	}
	return gg_errf(c->err, c->errlen, 400, "params.%s: unsupported", s->name);
}

static int check_params(struct check *c, const cJSON *params, cJSON *out)
{
	const cJSON *k;
	char b[48], all[768];
	int err;

	err = check_object(c, params, "params", "{\"report_period\": 60, ...}", "params.", NULL);
	if (err)
		return err;
	cJSON_ArrayForEach(k, params)
	{
		const struct gg_param_spec *s = gg_param_spec__find(c->def, k->string);
		const struct gg_gala_param *g = s ? NULL : gg_gala_params__find(k->string);

		if (g) {
			/* gala-gopher ignores a parameter outside a probe's scope: accepted (and stored, so GET
			 * shows what was sent), its value checked against gala-gopher's range, and said. */
			char w[256];

			if (!cJSON_IsNull(k)) {
				err = check_param(c, &g->spec, k, out);
				if (err)
					return err;
			}
			snprintf(w, sizeof(w),
				 "params.%s: not a parameter of probe %s (gala-gopher applies it to %s); accepted and "
				 "ignored",
				 g->spec.name, c->def->rest_name, g->scope);
			if (c->ctx->warnings)
				cJSON_AddItemToArray(c->ctx->warnings, cJSON_CreateString(w));
			continue;
		}
		if (!s) {
			const char *names[40] = {NULL};
			unsigned int n = 0;

			for (unsigned int i = 0;
			     i < c->def->contract->nparams && n + 1 < sizeof(names) / sizeof(names[0]); i++) {
				if (!gg_in_list(names, c->def->contract->params[i].name)) {
					names[n++] = c->def->contract->params[i].name;
					names[n] = NULL;
				}
			}
			names[n] = NULL;
			return gg_errf(c->err, c->errlen, 400, "params.%s: not a parameter of probe %s (allowed: %s)",
				    snip(k->string, 32, b, sizeof(b)), c->def->rest_name,
				    join(names, all, sizeof(all)));
		}
		if (cJSON_IsNull(k))
			continue; /* null = the default */
		err = check_param(c, s, k, out);
		if (err)
			return err;
	}
	return 0;
}

/* blacklist (gala-gopher's): the shape of snoopers; what it matches is left out of the scope */
static int check_blacklist(struct check *c, const cJSON *v, cJSON *out)
{
	int status;

	if (cJSON_IsObject(v) &&
	    (cJSON_GetObjectItemCaseSensitive(v, "custom_labels") || cJSON_GetObjectItemCaseSensitive(v, "pod_labels")))
		return gg_errf(c->err, c->errlen, 400,
			    "blacklist: custom_labels and pod_labels belong in snoopers (a blacklist only excludes)");
	status = check_snoopers(c, v, out);
	/* the same rules, reported under the part's own name */
	if (status && c->err && !strncmp(c->err, "snoopers", 8)) {
		char tmp[512];

		snprintf(tmp, sizeof(tmp), "blacklist%s", c->err + 8);
		snprintf(c->err, c->errlen, "%s", tmp);
	}
	return status;
}

/* out: the configuration's object itself (state is a member of it, not an object) */
static int check_state(struct check *c, const cJSON *v, cJSON *out)
{
	const char *s = cJSON_GetStringValue(v);

	if (!s || (strcmp(s, "running") && strcmp(s, "stopped")))
		return gg_errf(c->err, c->errlen, 400, "state: must be \"running\" or \"stopped\"");
	cJSON_AddStringToObject(out, "state", s);
	return 0;
}

/* The parts of a probe's configuration, checked in this order; each but state into an object of its name. */
static const struct {
	const char *name;
	int (*check)(struct check *c, const cJSON *v, cJSON *out);
	int state;
} conf_parts[] = {
	{"cmd", check_cmd, 0},	     {"snoopers", check_snoopers, 0}, {"blacklist", check_blacklist, 0},
	{"params", check_params, 0}, {"state", check_state, 1},
};

int gg_rest_conf__check(const struct gg_probe_def *def, const struct gg_rest_check_ctx *ctx, const char *json,
			cJSON **ret, char *err, size_t errlen)
{
	struct check c = {.def = def, .ctx = ctx, .err = err, .errlen = errlen};
	char *text, b[48];
	const char *end = NULL;
	cJSON *root = NULL, *out = NULL;
	const cJSON *k, *v;
	int status;

	text = malloc(strlen(json) + 1);
	if (!text)
		return gg_errf(err, errlen, 500, "out of memory");
	if (strip_comments(json, text)) {
		status = gg_errf(err, errlen, 400, "invalid JSON: unterminated comment");
		goto out;
	}
	if ((end = loose_number(text)) != NULL) {
		status = gg_errf(err, errlen, 400,
			      "invalid JSON near \"%s\": numbers are written as JSON has them (no leading zeros, '+', "
			      "or bare '.')",
			      snip(end, 24, b, sizeof(b)));
		goto out;
	}
	root = cJSON_ParseWithOpts(text, &end, 1);
	if (!root) {
		status = gg_errf(err, errlen, 400, "invalid JSON near \"%s\"",
			      snip(end && *end ? end : "(end)", 24, b, sizeof(b)));
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		status = gg_errf(err, errlen, 400,
			      "the configuration must be a JSON object {\"cmd\", \"snoopers\", \"params\", \"state\"}");
		goto out;
	}
	status = dup_key(root, err, errlen, "");
	if (status)
		goto out;
	cJSON_ArrayForEach(k, root)
	{
		size_t j = 0;

		while (j < sizeof(conf_parts) / sizeof(conf_parts[0]) && strcmp(k->string, conf_parts[j].name))
			j++;
		if (j == sizeof(conf_parts) / sizeof(conf_parts[0])) {
			status = gg_errf(err, errlen, 400,
				      "%s: unknown field (expected cmd, snoopers, blacklist, params, state)",
				      snip(k->string, 32, b, sizeof(b)));
			goto out;
		}
	}
	out = cJSON_CreateObject();
	if (!out) {
		status = gg_errf(err, errlen, 500, "out of memory");
		goto out;
	}
	for (size_t j = 0; j < sizeof(conf_parts) / sizeof(conf_parts[0]); j++) {
		v = cJSON_GetObjectItemCaseSensitive(root, conf_parts[j].name);
		if (!v)
			continue;
		status = conf_parts[j].check(
			&c, v, conf_parts[j].state ? out : cJSON_AddObjectToObject(out, conf_parts[j].name));
		if (status)
			goto out;
	}
	*ret = out;
	out = NULL;
	status = 0;
out:
	cJSON_Delete(out);
	cJSON_Delete(root);
	free(text);
	return status;
}
