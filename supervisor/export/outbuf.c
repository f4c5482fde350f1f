/* outbuf.c - the exporters' output buffer: growable, out-of-memory sticky, with JSON and Prometheus
 * text escaping (Prometheus text, Kafka and log messages, status.json are written with it). */
#include "outbuf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "meta.h"

/* ---- buffer ---------------------------------------------------------------------------------------- */

void gg_buf__init(struct gg_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void gg_buf__fini(struct gg_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int gg_buf__reserve(struct gg_buf *b, size_t n)
{
	size_t need, cap;
	char *nd;

	if (b->oom)
		return -ENOMEM;
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	if (need < b->len || (b->max && need > b->max + 1)) {
		b->oom = 1;
		return -ENOMEM;
	}
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	if (b->max && cap > b->max + 1)
		cap = b->max + 1;
	nd = realloc(b->data, cap);
	if (!nd) {
		b->oom = 1;
		return -ENOMEM;
	}
	b->data = nd;
	b->cap = cap;
	return 0;
}

void gg_buf__printf(struct gg_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (gg_buf__reserve(b, 64))
		return;
	/* at most twice: once into what is there, once more after growing to the length it said */
	for (int pass = 0; pass < 2; pass++) {
		va_start(ap, fmt);
		n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		if (pass || gg_buf__reserve(b, (size_t)n))
			return;
	}
}

void gg_buf__put_u64(struct gg_buf *b, uint64_t v)
{
	char tmp[GG_U64_DIGITS];
	const char *d = gg_u64_digits(tmp + sizeof(tmp), v);

	gg_buf__put(b, d, (size_t)(tmp + sizeof(tmp) - d));
}

void gg_buf__put_double(struct gg_buf *b, double v)
{
	char tmp[40];
	int n;

	if (isnan(v)) {
		gg_buf__puts(b, "NaN");
		return;
	}
	if (isinf(v)) {
		gg_buf__puts(b, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == (double)(int64_t)v && fabs(v) < 9e15) {
		n = snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
	} else {
		n = snprintf(tmp, sizeof(tmp), "%.15g", v);
		if (strtod(tmp, NULL) != v)
			n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	}
	gg_buf__put(b, tmp, (size_t)n);
}

char *gg_buf__steal(struct gg_buf *b, size_t *ret_len)
{
	char *d;

	if (b->oom) {
		gg_buf__fini(b);
		return NULL;
	}
	if (gg_buf__reserve(b, 0))
		return NULL;
	d = b->data;
	if (ret_len)
		*ret_len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}

void gg_buf__put_json_str(struct gg_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *o;

	/* worst case every byte becomes \u00XX */
	if (gg_buf__reserve(b, 6 * n + 2))
		return;
	o = b->data + b->len;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			if (c == '\n') {
				*o++ = '\\';
				*o++ = 'n';
			} else if (c == '\t') {
				*o++ = '\\';
				*o++ = 't';
			} else {
				memcpy(o, "\\u00", 4);
				o += 4;
				*o++ = hex[c >> 4];
				*o++ = hex[c & 15];
			}
		} else {
			*o++ = (char)c;
		}
	}
	*o++ = '"';
	b->len = (size_t)(o - b->data);
	b->data[b->len] = 0;
}

void gg_buf__put_json_member(struct gg_buf *b, const char *key, const char *s)
{
	gg_buf__puts(b, key);
	gg_buf__put_json_str(b, s, strlen(s));
}

/* The exposition format's escapes: backslash and newline, and in label values the double quote too. */
static inline void put_prom_escaped(struct gg_buf *b, const char *s, size_t n, int quote)
{
	char *o;

	if (gg_buf__reserve(b, 2 * n))
		return;
	o = b->data + b->len;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' || (quote && c == '"')) {
			*o++ = '\\';
			*o++ = c;
		} else if (c == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else {
			*o++ = c;
		}
	}
	b->len = (size_t)(o - b->data);
	b->data[b->len] = 0;
}

void gg_buf__put_prom_label(struct gg_buf *b, const char *s, size_t n)
{
	put_prom_escaped(b, s, n, 1);
}

void gg_buf__put_prom_help(struct gg_buf *b, const char *s, size_t n)
{
	put_prom_escaped(b, s, n, 0);
}

/* A validated number is valid JSON unless it has leading zeros (the validator refuses '+', a bare '.',
 * hex, inf and nan). */
static int json_number_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i >= n || s[i] < '0' || s[i] > '9')
		return 0;
	if (s[i] == '0' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')
		return 0;
	for (; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+'))
			return 0;
	}
	return 1;
}

void gg_buf__put_json_number(struct gg_buf *b, const char *s, size_t n)
{
	double d = 0;

	if (json_number_ok(s, n)) {
		gg_buf__put(b, s, n);
		return;
	}
	(void)meta_parse_number(s, n, &d);
	gg_buf__put_double(b, d);
}
