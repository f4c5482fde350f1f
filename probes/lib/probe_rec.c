/* probe_rec.c - builds "|table|v1|...|vN|" record lines, checking each value against the table. */
#include "probe.h"

#include <errno.h>
#include <math.h> /* isfinite, fabs: builtins, no libm needed */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

#define KIND_BIT(k) (1u << (k))

/* Room for one formatted number. fmt_f64 prints at most 17 integer digits plus 12 decimals before
 * it switches to the exponent form ("%f" of DBL_MAX would need 316 bytes). */
#define NUM_MAX 64

static void rec_fail(struct probe_rec *r, int err)
{
	if (!r->err)
		r->err = err;
}

/* Append n bytes, or fail the record with -E2BIG; one byte is always kept for the NUL. */
static void put(struct probe_rec *r, const char *s, size_t n)
{
	if (r->err)
		return;
	if (n >= sizeof(r->buf) - r->len) {
		rec_fail(r, -E2BIG);
		return;
	}
	memcpy(r->buf + r->len, s, n);
	r->len += n;
	r->buf[r->len] = '\0';
}

static void put_c(struct probe_rec *r, char c)
{
	put(r, &c, 1);
}

/* Start the next field when its kind is one of `allowed`; returns its kind, or the record's (sticky)
 * negative errno. */
static int field_begin(struct probe_rec *r, unsigned int allowed)
{
	unsigned int kind;

	if (r->err)
		return r->err;
	if (!r->table || r->next >= r->table->nfields) {
		rec_fail(r, -EINVAL);
		return -EINVAL;
	}
	kind = r->table->kinds[r->next];
	if (kind > PROBE_F_SUMMARY || !(allowed & KIND_BIT(kind))) {
		rec_fail(r, -EINVAL);
		return -EINVAL;
	}
	return (int)kind;
}

static void field_end(struct probe_rec *r)
{
	put_c(r, '|');
	if (!r->err)
		r->next++;
}

static size_t fmt_u64(char *out, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}

static size_t fmt_i64(char *out, int64_t v)
{
	if (v < 0) {
		out[0] = '-';
		/* -(v + 1) + 1 avoids overflowing on INT64_MIN. */
		return 1 + fmt_u64(out + 1, (uint64_t)(-(v + 1)) + 1);
	}
	return fmt_u64(out, (uint64_t)v);
}

/* Drop trailing zeros of a fraction (and the '.' when nothing is left), before an exponent if any. */
static size_t trim_fraction(char *s, size_t n)
{
	char *dot = memchr(s, '.', n);
	char *e = memchr(s, 'e', n);
	char *end = e ? e : s + n;
	char *p = end;

	if (!dot)
		return n;
	while (p > dot + 1 && p[-1] == '0')
		p--;
	if (p == dot + 1)
		p = dot;
	if (e) {
		size_t elen = (size_t)(s + n - e);

		memmove(p, e, elen);
		p += elen;
	}
	*p = '\0';
	return (size_t)(p - s);
}

/*
 * Finite double -> text the validator accepts: integers exactly, otherwise 9 significant digits,
 * plain decimal for 1e-4 <= |v| < 1e17 and d.ddde[+-]XX outside that range. Returns the length, or
 * 0 when v is not finite.
 */
static size_t fmt_f64(char *out, double v)
{
	double a;
	int n;

	if (!isfinite(v))
		return 0;
	if (v == 0)
		return (size_t)snprintf(out, NUM_MAX, "0"); /* also turns -0 into 0 */
	a = fabs(v);
	if (a < 9007199254740992.0 && v == (double)(int64_t)v)
		return fmt_i64(out, (int64_t)v);
	if (a >= 1e-4 && a < 1e17) {
		/* Decimal exponent by comparison (no libm: probes do not link it). */
		static const double p10[] = {1e-3, 1e-2, 1e-1, 1e0,  1e1,  1e2,	 1e3,  1e4,  1e5,  1e6,
					     1e7,  1e8,	 1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16};
		int e10 = -4, decimals;

		while (e10 < 16 && a >= p10[e10 + 4])
			e10++;
		decimals = 8 - e10;

		if (decimals < 0)
			decimals = 0;
		if (decimals > 12)
			decimals = 12;
		n = snprintf(out, NUM_MAX, "%.*f", decimals, v);
	} else {
		n = snprintf(out, NUM_MAX, "%.8e", v);
	}
	if (n <= 0 || n >= NUM_MAX)
		return 0;
	n = (int)trim_fraction(out, (size_t)n);
	if (n == 2 && out[0] == '-' && out[1] == '0') /* a tiny negative rounded away */
		return (size_t)snprintf(out, NUM_MAX, "0");
	return (size_t)n;
}

void probe_rec__begin(struct probe_rec *r, const struct probe_table *t)
{
	r->table = t;
	r->next = 0;
	r->err = 0;
	r->len = 0;
	r->buf[0] = '\0';
	if (!t || !t->name || !t->name[0] || (t->nfields && (!t->kinds || !t->fields))) {
		rec_fail(r, -EINVAL);
		return;
	}
	put_c(r, '|');
	put(r, t->name, strlen(t->name));
	put_c(r, '|');
}

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes), 0 when the bytes there are not one.
 * Strict (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
 */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

void probe_rec__strn(struct probe_rec *r, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t i = 0, out = 0;
	int kind = field_begin(r, KIND_BIT(PROBE_F_KEY) | KIND_BIT(PROBE_F_LABEL));

	if (kind < 0)
		return;
	if (!s)
		len = 0;
	if (kind == PROBE_F_KEY && len == 0) {
		rec_fail(r, -EINVAL);
		return;
	}
	while (i < len && !r->err) {
		unsigned char c = p[i];
		size_t n = 1;
		char rep = 0;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f || c == '|')
				rep = '_';
		} else {
			n = utf8_seq_len(p + i, len - i);
			if (n == 0) {
				rep = '?';
				n = 1;
			} else if (c == 0xc2 && p[i + 1] < 0xa0) {
				rep = '_'; /* C1 control character U+0080..U+009F */
			}
		}
		if (out + (rep ? 1 : n) > META_LABEL_MAX)
			break;
		if (rep)
			put_c(r, rep);
		else
			put(r, (const char *)p + i, n);
		out += rep ? 1 : n;
		i += n;
	}
	field_end(r);
}

void probe_rec__str(struct probe_rec *r, const char *s)
{
	probe_rec__strn(r, s, s ? strlen(s) : 0);
}

/* A number field's text, formatted by the caller, and the field's end. */
static void field_put_num(struct probe_rec *r, const char *num, size_t n)
{
	put(r, num, n);
	field_end(r);
}

void probe_rec__u64(struct probe_rec *r, uint64_t v)
{
	char num[NUM_MAX];

	if (field_begin(r, KIND_BIT(PROBE_F_KEY) | KIND_BIT(PROBE_F_LABEL) | KIND_BIT(PROBE_F_GAUGE) |
				   KIND_BIT(PROBE_F_COUNTER)) < 0)
		return;
	field_put_num(r, num, fmt_u64(num, v));
}

void probe_rec__i64(struct probe_rec *r, int64_t v)
{
	char num[NUM_MAX];

	if (field_begin(r, KIND_BIT(PROBE_F_KEY) | KIND_BIT(PROBE_F_LABEL) | KIND_BIT(PROBE_F_GAUGE)) < 0)
		return;
	field_put_num(r, num, fmt_i64(num, v));
}

void probe_rec__f64(struct probe_rec *r, double v)
{
	char num[NUM_MAX];
	size_t n;
	int kind = field_begin(r, KIND_BIT(PROBE_F_GAUGE) | KIND_BIT(PROBE_F_COUNTER));

	if (kind < 0)
		return;
	if (!isfinite(v) || (kind == PROBE_F_COUNTER && v < 0)) {
		rec_fail(r, -ERANGE);
		return;
	}
	n = fmt_f64(num, v);
	if (!n) {
		rec_fail(r, -ERANGE);
		return;
	}
	field_put_num(r, num, n);
}

/* Append " <number>"; 0 or -ERANGE. The printed value is returned in *ret_v (when not NULL) so
 * callers can check orderings on what the reader will see. */
static int put_num_f64(struct probe_rec *r, double v, double *ret_v)
{
	char num[NUM_MAX];
	size_t n = fmt_f64(num, v);

	if (!n) {
		rec_fail(r, -ERANGE);
		return -ERANGE;
	}
	put_c(r, ' ');
	put(r, num, n);
	if (ret_v)
		*ret_v = strtod(num, NULL);
	return 0;
}

static void put_num_u64(struct probe_rec *r, uint64_t v)
{
	char num[NUM_MAX];
	size_t n = fmt_u64(num, v);

	put_c(r, ' ');
	put(r, num, n);
}

/* Append " <number>" of the i-th of a histogram's bounds or a summary's quantiles: they must stay
 * strictly increasing as printed, not only as given (*prev: the last one printed). 0, or the record's
 * negative errno. */
static int put_num_increasing(struct probe_rec *r, double v, unsigned int i, double *prev)
{
	double shown;
	int err = put_num_f64(r, v, &shown);

	if (err)
		return err;
	if (i > 0 && !(shown > *prev)) {
		rec_fail(r, -EINVAL);
		return -EINVAL;
	}
	*prev = shown;
	return 0;
}

/* The start of a histogram or summary field: its kind, then n buckets or quantiles (1 to
 * META_HIST_BUCKETS_MAX) and both arrays given. 0, or the record's negative errno. */
static int field_begin_series(struct probe_rec *r, unsigned int kind, unsigned int n, const void *a, const void *b)
{
	int err = field_begin(r, KIND_BIT(kind));

	if (err < 0)
		return err;
	if (n == 0 || n > META_HIST_BUCKETS_MAX || !a || !b) {
		rec_fail(r, -EINVAL);
		return -EINVAL;
	}
	return 0;
}

void probe_rec__hist(struct probe_rec *r, unsigned int n, const double *le, const uint64_t *cnt, uint64_t overflow,
		     double sum)
{
	char num[NUM_MAX];
	uint64_t cum = 0;
	double prev = 0;
	unsigned int i;

	if (field_begin_series(r, PROBE_F_HISTOGRAM, n, le, cnt) < 0)
		return;
	for (i = 0; i < n; i++) {
		if (!isfinite(le[i])) {
			rec_fail(r, -ERANGE);
			return;
		}
		if (cnt[i] > UINT64_MAX - cum) {
			rec_fail(r, -ERANGE);
			return;
		}
		cum += cnt[i];
	}
	if (!isfinite(sum) || overflow > UINT64_MAX - cum) {
		rec_fail(r, -ERANGE);
		return;
	}
	put(r, num, fmt_u64(num, n));
	cum = 0;
	for (i = 0; i < n; i++) {
		if (put_num_increasing(r, le[i], i, &prev))
			return;
		cum += cnt[i];
		put_num_u64(r, cum);
	}
	if (put_num_f64(r, sum, NULL))
		return;
	put_num_u64(r, cum + overflow);
	field_end(r);
}

void probe_rec__summary(struct probe_rec *r, unsigned int n, const double *q, const double *v, double sum,
			uint64_t count)
{
	char num[NUM_MAX];
	double prev = 0;
	unsigned int i;

	if (field_begin_series(r, PROBE_F_SUMMARY, n, q, v) < 0)
		return;
	for (i = 0; i < n; i++) {
		if (!isfinite(q[i]) || !isfinite(v[i])) {
			rec_fail(r, -ERANGE);
			return;
		}
		if (q[i] < 0 || q[i] > 1) {
			rec_fail(r, -EINVAL);
			return;
		}
	}
	if (!isfinite(sum)) {
		rec_fail(r, -ERANGE);
		return;
	}
	put(r, num, fmt_u64(num, n));
	for (i = 0; i < n; i++) {
		if (put_num_increasing(r, q[i], i, &prev) || put_num_f64(r, v[i], NULL))
			return;
	}
	if (put_num_f64(r, sum, NULL))
		return;
	put_num_u64(r, count);
	field_end(r);
}

int probe_rec__finish(struct probe_rec *r)
{
	if (!r->err && (!r->table || r->next != r->table->nfields))
		rec_fail(r, -EINVAL);
	return r->err;
}
