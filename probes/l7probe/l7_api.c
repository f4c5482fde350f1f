/* l7_api.c - the api of a request as l7_rpc_api and traces report it: path normalisation, SQL
 * statement type + table, operation/target split, client or server error (see l7_api.h). */
#include "l7_api.h"

#include <string.h>

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_upper(unsigned char c)
{
	return c >= 'A' && c <= 'Z';
}

static int is_token_char(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || is_upper(c) || c == '_' || c == '-' || c == '.' || c == '~' ||
	       c == '=' || c == '+' || c == '%';
}

/* 8-4-4-4-12 hex digits */
static int is_uuid(const char *s, size_t n)
{
	if (n != 36)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!is_hex((unsigned char)s[i])) {
			return 0;
		}
	}
	return 1;
}

/* Whether a path segment names one of many things (an id) rather than a route. */
static int is_variable(const char *s, size_t n)
{
	size_t digits = 0, hex = 0, token = 0;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		digits += is_digit(c);
		hex += is_hex(c);
		token += is_token_char(c);
	}
	if (digits == n)
		return 1;
	if (is_uuid(s, n))
		return 1;
	if (hex == n && n >= 12 && digits)
		return 1;
	if (token == n && n >= 20 && digits)
		return 1;
	return n >= 4 && digits * 2 > n;
}

/* "METHOD " (1-16 upper-case letters, '-' or '_', then a space) followed by a path or absolute URI:
 * the length of "METHOD " or 0. */
static size_t http_like(const char *s)
{
	size_t i = 0;

	for (const char *p = s; i < 16 && *p && (is_upper((unsigned char)*p) || *p == '-' || *p == '_'); p++)
		i++;
	if (!i || s[i] != ' ')
		return 0;
	if (s[i + 1] == '/' || s[i + 1] == '*' || !strncmp(s + i + 1, "http://", 7) ||
	    !strncmp(s + i + 1, "https://", 8))
		return i + 1;
	return 0;
}

static size_t put(char *out, size_t outlen, size_t k, const char *s, size_t n)
{
	while (n-- && k + 1 < outlen)
		out[k++] = *s++;
	return k;
}

size_t l7_api__normalize(enum l7_proto proto, const char *raw, char *out, size_t outlen)
{
	size_t k = 0, m;
	const char *p, *end;

	(void)proto;
	if (!out || outlen < 2)
		return 0;
	if (!raw)
		raw = "";
	m = http_like(raw);
	if (!m) {
		for (; *raw && k + 1 < outlen; raw++)
			out[k++] = (unsigned char)*raw < 0x20 || *raw == 0x7f ? '_' : *raw;
		out[k] = '\0';
		return k;
	}
	k = put(out, outlen, 0, raw, m);
	p = raw + m;
	if (!strncmp(p, "http://", 7) || !strncmp(p, "https://", 8)) {
		/* absolute URI (a proxy's request): the path only */
		p = strchr(strstr(p, "://") + 3, '/');
		if (!p)
			p = "/";
	}
	end = p + strcspn(p, "?# \t");
	while (p < end) {
		const char *seg;
		size_t n;

		if (*p == '/') {
			k = put(out, outlen, k, "/", 1);
			p++;
			continue;
		}
		seg = p;
		while (p < end && *p != '/')
			p++;
		n = (size_t)(p - seg);
		if (is_variable(seg, n)) {
			k = put(out, outlen, k, L7_API_ID, sizeof(L7_API_ID) - 1);
		} else {
			for (size_t i = 0; i < n && k + 1 < outlen; i++)
				out[k++] = (unsigned char)seg[i] < 0x20 || seg[i] == 0x7f ? '_' : seg[i];
		}
	}
	out[k] = '\0';
	return k;
}

/* ---- SQL ----------------------------------------------------------------------------------------- */

size_t l7_api__sql_skip(const uint8_t *t, size_t n, size_t i)
{
	while (i < n) {
		uint8_t c = t[i];

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '(' || c == ';') {
			i++;
		} else if (c == '-' && i + 1 < n && t[i + 1] == '-') {
			while (i < n && t[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(t[i] == '*' && t[i + 1] == '/'))
				i++;
			i += 2;
		} else {
			break;
		}
	}
	return i;
}

/* The word at i (letters and '_'), upper-cased into w: its length (0: none); *i moves past it. */
static size_t sql_word(const uint8_t *t, size_t n, size_t *i, char *w, size_t wlen)
{
	size_t k = 0, j = *i;

	while (j < n) {
		uint8_t c = t[j];

		if (c >= 'a' && c <= 'z')
			c = (uint8_t)(c - 'a' + 'A');
		if (!(c >= 'A' && c <= 'Z') && c != '_')
			break;
		if (k + 1 < wlen)
			w[k++] = (char)c;
		j++;
	}
	w[k] = '\0';
	*i = j;
	return k;
}

static int sql_ident_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
	       c == '$' || c == '"' || c == '`' || c == '[' || c == ']';
}

/* Position after the keyword kw (a whole word, outside quotes and parentheses opened after from),
 * or n. */
static size_t sql_find(const uint8_t *t, size_t n, size_t from, const char *kw)
{
	size_t kl = strlen(kw), depth = 0;
	uint8_t quote = 0;

	for (size_t i = from; i < n; i++) {
		uint8_t c = t[i];

		if (quote) {
			if (c == quote)
				quote = 0;
			continue;
		}
		if (c == '\'' || c == '"' || c == '`') {
			quote = c;
		} else if (c == '(') {
			depth++;
		} else if (c == ')') {
			if (depth)
				depth--;
		} else if (!depth && i + kl <= n && (i == 0 || !sql_ident_char(t[i - 1])) &&
			   (i + kl == n || !sql_ident_char(t[i + kl]))) {
			size_t j = 0;

			while (j < kl && (t[i + j] | 0x20) == (kw[j] | 0x20))
				j++;
			if (j == kl)
				return i + kl;
		}
	}
	return n;
}

size_t l7_api__sql(char *dst, size_t max, const uint8_t *text, size_t n)
{
	char kw[25], w[16];
	size_t i, k, at = 0;

	if (!dst || !max)
		return 0;
	dst[0] = '\0';
	if (!text)
		return 0;
	i = l7_api__sql_skip(text, n, 0);
	if (!sql_word(text, n, &i, kw, sizeof(kw)))
		return 0;
	k = 0;
	for (const char *s = kw; *s && k + 1 < max; s++)
		dst[k++] = *s;
	dst[k] = '\0';
	if (!strcmp(kw, "SELECT") || !strcmp(kw, "DELETE")) {
		at = sql_find(text, n, i, "FROM");
	} else if (!strcmp(kw, "INSERT") || !strcmp(kw, "REPLACE")) {
		at = sql_find(text, n, i, "INTO");
	} else if (!strcmp(kw, "UPDATE")) {
		at = i;
	} else if (!strcmp(kw, "TRUNCATE") || !strcmp(kw, "CREATE") || !strcmp(kw, "DROP") || !strcmp(kw, "ALTER")) {
		/* CREATE [TEMPORARY|UNLOGGED|...] TABLE [IF NOT EXISTS] t */
		at = sql_find(text, n, i, "TABLE");
		if (at < n) {
			size_t j = l7_api__sql_skip(text, n, at), save = j;

			if (sql_word(text, n, &j, w, sizeof(w)) && !strcmp(w, "IF")) {
				at = sql_find(text, n, j, "EXISTS");
			} else {
				at = save;
			}
		} else if (!strcmp(kw, "TRUNCATE")) {
			at = i;
		}
	} else {
		return k;
	}
	if (at >= n)
		return k;
	at = l7_api__sql_skip(text, n, at);
	{
		/* ONLY (PostgreSQL), LOW_PRIORITY/IGNORE (MySQL) before the table */
		size_t j = at;

		if (sql_word(text, n, &j, w, sizeof(w)) &&
		    (!strcmp(w, "ONLY") || !strcmp(w, "LOW_PRIORITY") || !strcmp(w, "IGNORE") || !strcmp(w, "INTO")))
			at = l7_api__sql_skip(text, n, j);
	}
	if (at >= n || !sql_ident_char(text[at]))
		return k;
	if (k + 2 >= max)
		return k;
	dst[k++] = ' ';
	for (size_t j = 0; at + j < n && sql_ident_char(text[at + j]) && j < 32 && k + 1 < max; j++)
		dst[k++] = (char)text[at + j];
	dst[k] = '\0';
	return k;
}

void l7_api__split(const char *api, char *op, size_t oplen, const char **ret_target)
{
	const char *sp = api ? strchr(api, ' ') : NULL;
	size_t n = sp ? (size_t)(sp - api) : (api ? strlen(api) : 0);

	if (oplen) {
		if (n >= oplen)
			n = oplen - 1;
		if (n)
			memcpy(op, api, n);
		op[n] = '\0';
	}
	if (ret_target)
		*ret_target = sp ? sp + 1 : "";
}

int l7_api__client_error(enum l7_proto proto, const char *api, int status)
{
	if (proto == L7_PROTO_DNS)
		return status == 1 || status == 3;
	if (api && http_like(api))
		return status >= 400 && status < 500;
	return 0;
}

size_t l7__sql_keyword(char *dst, size_t max, const uint8_t *text, size_t n)
{
	size_t i = l7_api__sql_skip(text, n, 0), k = 0;

	if (max == 0)
		return 0;
	while (i < n && k + 1 < max && k < 24) {
		uint8_t c = text[i++];

		if (c >= 'a' && c <= 'z')
			c = (uint8_t)(c - 'a' + 'A');
		if (!(c >= 'A' && c <= 'Z') && c != '_')
			break;
		dst[k++] = (char)c;
	}
	dst[k] = '\0';
	return k;
}
