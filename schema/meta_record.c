/* meta_record.c - record validation against the registry (the supervisor's hot path) and the value
 * parsers it uses: numbers, histograms, summaries, UTF-8. Nothing here allocates. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "decimal.h"
#include "meta.h"
#include "meta_impl.h"

const char *meta_reject__str(enum meta_reject r)
{
	static const char *const names[] = {
		[META_OK] = "ok",
		[META_REJ_MALFORMED] = "malformed",
		[META_REJ_UNKNOWN_TABLE] = "unknown_table",
		[META_REJ_FIELD_COUNT] = "field_count",
		[META_REJ_EMPTY_KEY] = "empty_key",
		[META_REJ_NOT_NUMERIC] = "not_numeric",
		[META_REJ_NEGATIVE_COUNTER] = "negative_counter",
		[META_REJ_BAD_HISTOGRAM] = "bad_histogram",
		[META_REJ_BAD_SUMMARY] = "bad_summary",
		[META_REJ_BAD_UTF8] = "bad_utf8",
		[META_REJ_LABEL_TOO_LONG] = "label_too_long",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == META_REJ__COUNT, "a reject reason has no name");

	if ((unsigned int)r >= META_REJ__COUNT)
		return "unknown";
	return names[r];
}

/* ---- numbers ------------------------------------------------------------------------------------- */

static const double pow10_exact[] = {1e0,  1e1,	 1e2,  1e3,  1e4,  1e5,	 1e6,  1e7,  1e8,  1e9,	 1e10, 1e11,
				     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void c_locale_init(void)
{
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* The slow path, for what the exact fast path cannot do: many digits or a large exponent. The text
 * is already known to be well formed. strtod_l because the process may have set a locale whose
 * decimal point is not '.'. */
static int number_slow(const char *s, size_t len, double *ret)
{
	char buf[META_NUMBER_MAX_LEN + 1];
	char *end;
	double v;

	memcpy(buf, s, len);
	buf[len] = '\0';
	pthread_once(&c_locale_once, c_locale_init);
	errno = 0;
	v = c_locale ? strtod_l(buf, &end, c_locale) : strtod(buf, &end);
	if (end != buf + len)
		return -EINVAL;
	if (isinf(v) || isnan(v))
		return -ERANGE;
	*ret = v;
	return 0;
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A number as scanned: value = mant * 10^exp10 when exact (every significant digit kept), else
 * mant holds the first 19 significant digits and the rest were dropped. */
struct num {
	uint64_t mant;
	long exp10;
	int ndig; /* significant digits in mant */
	bool exact;
	bool neg;
};

/*
 * The grammar check, without floating point: -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?, the whole of
 * [s, s+len). Up to 19 significant digits are gathered in an integer for number_convert.
 */
static inline int number_scan(const char *s, size_t len, struct num *n)
{
	const char *p = s, *end = s + len, *d;

	if (len == 0 || len > META_NUMBER_MAX_LEN)
		return -EINVAL;
	*n = (struct num){.exact = true};
	if (*p == '-') {
		n->neg = true;
		p++;
	}
	for (d = p; p < end && is_digit(*p); p++) {
		if (n->ndig < 19) {
			n->mant = n->mant * 10 + (uint64_t)(*p - '0');
			n->ndig += n->mant != 0;
		} else {
			n->exact = false;
			n->exp10++;
		}
	}
	if (p == d)
		return -EINVAL;
	if (p < end && *p == '.') {
		for (d = ++p; p < end && is_digit(*p); p++) {
			if (n->ndig < 19) {
				n->mant = n->mant * 10 + (uint64_t)(*p - '0');
				n->ndig += n->mant != 0;
				n->exp10--;
			} else {
				n->exact = false;
			}
		}
		if (p == d)
			return -EINVAL;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		bool eneg = false;
		long e = 0;

		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		for (d = p; p < end && is_digit(*p); p++) {
			if (e < 100000)
				e = e * 10 + (*p - '0');
		}
		if (p == d)
			return -EINVAL;
		n->exp10 += eneg ? -e : e;
	}
	return p == end ? 0 : -EINVAL;
}

/* True when the scanned number is certainly a finite double: it is below 10^(ndig + exp10). */
static inline bool number_surely_finite(const struct num *n)
{
	return n->mant == 0 || n->ndig + n->exp10 <= 308;
}

/*
 * When the significant digits fit 2^53 and the decimal exponent is within +-22, mant * or / 10^e
 * is exact and correctly rounded (Clinger's fast path); this covers what probes print ("12",
 * "0.25", "1e6"). Anything else goes to strtod.
 */
static int number_convert(const char *s, size_t len, const struct num *n, double *ret)
{
	double v;

	if (n->mant == 0) {
		v = 0.0; /* every digit was 0 (digits are only dropped after 19 significant ones) */
	} else if (n->exact && n->exp10 == 0) {
		v = (double)n->mant; /* u64 -> double is correctly rounded */
	} else if (n->exact && n->mant <= (1ull << 53) && n->exp10 >= -22 && n->exp10 <= 22) {
		v = n->exp10 < 0 ? (double)n->mant / pow10_exact[-n->exp10] : (double)n->mant * pow10_exact[n->exp10];
	} else {
		return number_slow(s, len, ret);
	}
	*ret = n->neg ? -v : v;
	return 0;
}

static inline int parse_number(const char *s, size_t len, double *ret)
{
	struct num n;
	int r = number_scan(s, len, &n);

	return r < 0 ? r : number_convert(s, len, &n, ret);
}

int meta_parse_number(const char *s, size_t len, double *ret)
{
	double v;
	int r;

	if (!s)
		return -EINVAL;
	r = parse_number(s, len, &v);
	if (r < 0)
		return r;
	if (ret)
		*ret = v;
	return 0;
}

/* ---- histograms and summaries --------------------------------------------------------------------- */

/* Tokens separated by exactly one space; more says another token must follow. */
struct tok {
	const char *p, *end;
	bool more;
};

static int tok_next(struct tok *t, const char **ret, size_t *ret_len)
{
	const char *q;

	if (!t->more)
		return -EINVAL;
	q = memchr(t->p, ' ', (size_t)(t->end - t->p));
	if (!q)
		q = t->end;
	if (q == t->p)
		return -EINVAL;
	*ret = t->p;
	*ret_len = (size_t)(q - t->p);
	t->more = q < t->end;
	t->p = t->more ? q + 1 : q;
	return 0;
}

static int tok_number(struct tok *t, double *ret)
{
	const char *s;
	size_t len;

	if (tok_next(t, &s, &len) < 0)
		return -EINVAL;
	return parse_number(s, len, ret) < 0 ? -EINVAL : 0;
}

static int tok_u64(struct tok *t, uint64_t *ret)
{
	const char *s;
	size_t len;

	if (tok_next(t, &s, &len) < 0)
		return -EINVAL;
	return gg_parse_u64(s, len, ret) < 0 ? -EINVAL : 0;
}

/* The grammar histograms and summaries share: "<n> (<x> <y>){n} <sum> <count>" with n in
 * 1..META_HIST_BUCKETS_MAX and nothing after; pair(t, i, obj) reads and checks pair i into obj. */
static int tok_pairs(const char *s, size_t len, void *obj, int (*pair)(struct tok *t, unsigned int i, void *obj),
		     unsigned int *ret_n, double *ret_sum, uint64_t *ret_count)
{
	struct tok t;
	uint64_t n;

	if (!s)
		return -EINVAL;
	t = (struct tok){.p = s, .end = s + len, .more = len > 0};
	if (tok_u64(&t, &n) < 0 || n < 1 || n > META_HIST_BUCKETS_MAX)
		return -EINVAL;
	for (unsigned int i = 0; i < n; i++) {
		if (pair(&t, i, obj) < 0)
			return -EINVAL;
	}
	if (tok_number(&t, ret_sum) < 0 || tok_u64(&t, ret_count) < 0 || t.more)
		return -EINVAL;
	*ret_n = (unsigned int)n;
	return 0;
}

/* Bucket i: its upper bound above the last one, its cumulative count not below. */
static int hist_pair(struct tok *t, unsigned int i, void *obj)
{
	struct meta_hist *h = obj;

	if (tok_number(t, &h->le[i]) < 0 || tok_u64(t, &h->cum[i]) < 0)
		return -EINVAL;
	if (i > 0 && (!(h->le[i] > h->le[i - 1]) || h->cum[i] < h->cum[i - 1]))
		return -EINVAL;
	return 0;
}

int meta_hist__parse(const char *s, size_t len, struct meta_hist *ret)
{
	struct meta_hist h;

	if (tok_pairs(s, len, &h, hist_pair, &h.n, &h.sum, &h.count) < 0)
		return -EINVAL;
	if (h.count < h.cum[h.n - 1])
		return -EINVAL;
	if (ret)
		*ret = h;
	return 0;
}

/* Quantile i: in [0, 1], above the last one. */
static int summary_pair(struct tok *t, unsigned int i, void *obj)
{
	struct meta_summary *m = obj;

	if (tok_number(t, &m->q[i]) < 0 || tok_number(t, &m->v[i]) < 0)
		return -EINVAL;
	if (!(m->q[i] >= 0.0 && m->q[i] <= 1.0) || (i > 0 && !(m->q[i] > m->q[i - 1])))
		return -EINVAL;
	return 0;
}

int meta_summary__parse(const char *s, size_t len, struct meta_summary *ret)
{
	struct meta_summary m;

	if (tok_pairs(s, len, &m, summary_pair, &m.n, &m.sum, &m.count) < 0)
		return -EINVAL;
	if (ret)
		*ret = m;
	return 0;
}

/* ---- UTF-8 ------------------------------------------------------------------------------------------ */

int meta_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p, *end;

	if (!s)
		return len == 0;
	p = (const unsigned char *)s;
	end = p + len;
	while (p < end) {
		unsigned int c = *p;
		unsigned char lo = 0x80, hi = 0xbf;
		size_t need;

		if (c < 0x80) {
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return 0;
			p++;
			continue;
		}
		if (c < 0xc2) { /* stray continuation byte, or overlong 2-byte form */
			return 0;
		} else if (c < 0xe0) {
			need = 1;
		} else if (c < 0xf0) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0; /* overlong */
			else if (c == 0xed)
				hi = 0x9f; /* surrogates */
		} else if (c < 0xf5) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90; /* overlong */
			else if (c == 0xf4)
				hi = 0x8f; /* > U+10FFFF */
		} else {
			return 0;
		}
		if ((size_t)(end - p) <= need || p[1] < lo || p[1] > hi)
			return 0;
		for (size_t i = 2; i <= need; i++) {
			if (p[i] < 0x80 || p[i] > 0xbf)
				return 0;
		}
		p += need + 1;
	}
	return 1;
}

/* ---- records ------------------------------------------------------------------------------------------ */

static inline enum meta_reject check_value(enum meta_field_type type, const char *s, size_t len)
{
	struct num n;
	double v;

	switch (type) {
	case META_KEY:
		if (len == 0)
			return META_REJ_EMPTY_KEY;
		/* fallthrough */
	case META_LABEL:
		if (!meta_utf8_valid(s, len))
			return META_REJ_BAD_UTF8;
		if (len > META_LABEL_MAX)
			return META_REJ_LABEL_TOO_LONG;
		return META_OK;
	case META_GAUGE:
		/* Strict: an empty value is not a number. Probes that have nothing to report for a
		 * metric must print 0 (or not print the record), so that no consumer sees a gap that
		 * it would have to interpret. */
		if (number_scan(s, len, &n) < 0)
			return META_REJ_NOT_NUMERIC;
		/* the conversion is only needed to tell a huge number from an overflow */
		if (number_surely_finite(&n))
			return META_OK;
		return number_convert(s, len, &n, &v) < 0 ? META_REJ_NOT_NUMERIC : META_OK;
	case META_COUNTER:
		if (number_scan(s, len, &n) < 0)
			return META_REJ_NOT_NUMERIC;
		if (number_surely_finite(&n) && (!n.neg || n.mant == 0))
			return META_OK;
		/* "-0.0" is fine, and so is "-1e-400" (it rounds to -0) */
		if (number_convert(s, len, &n, &v) < 0)
			return META_REJ_NOT_NUMERIC;
		return v < 0 ? META_REJ_NEGATIVE_COUNTER : META_OK;
	case META_HISTOGRAM:
		return meta_hist__parse(s, len, NULL) < 0 ? META_REJ_BAD_HISTOGRAM : META_OK;
	case META_SUMMARY:
		return meta_summary__parse(s, len, NULL) < 0 ? META_REJ_BAD_SUMMARY : META_OK;
	}
	return META_REJ_MALFORMED; /* a table loaded by meta_load.c cannot have another type */
}

/*
 * Fast paths for the common shapes, scanning from p up to the next '|' (the line's closing '|' is
 * the sentinel, so no bounds checks). They return the '|' ending a value that is certainly valid,
 * or NULL when the full check must decide: any value they do not accept still goes through
 * check_value, so they only change speed, never the verdict.
 */

/* "123" or "12.5": a plain decimal of at most 308 characters is below 10^308, a finite double. */
static inline const char *fast_number(const char *p)
{
	const char *s = p;

	while (is_digit(*p))
		p++;
	if (p == s)
		return NULL;
	if (*p == '.') {
		const char *d = ++p;

		while (is_digit(*p))
			p++;
		if (p == d)
			return NULL;
	}
	return (*p == '|' && p - s <= 308) ? p : NULL;
}

/* Printable ASCII, not empty, at most META_LABEL_MAX bytes. */
static inline const char *fast_label(const char *p)
{
	const char *s = p;

	while ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f && *p != '|')
		p++;
	return (*p == '|' && p != s && (size_t)(p - s) <= META_LABEL_MAX) ? p : NULL;
}

enum meta_reject meta_record__parse(const struct meta_registry *reg, const char *line, size_t len,
				    struct meta_record *ret_rec, int *ret_field)
{
	enum meta_reject first = META_OK;
	const struct meta_table *t;
	const unsigned char *kinds;
	const char *p, *q, *end;
	unsigned int n = 0;
	int first_field = -1;

	if (ret_field)
		*ret_field = -1;
	if (!reg || !line || len < 2 || len > META_RECORD_MAX_LEN || line[0] != '|' || line[len - 1] != '|')
		return META_REJ_MALFORMED;
	if (memchr(line, '\n', len))
		return META_REJ_MALFORMED;
	end = line + len - 1; /* the closing '|', so every scan below stops there at the latest */
	p = line + 1;
	q = memchr(p, '|', (size_t)(end - p) + 1);
	if (q == p)
		return META_REJ_MALFORMED;
	t = meta_registry__find(reg, p, (size_t)(q - p));
	if (!t)
		return META_REJ_UNKNOWN_TABLE;
	kinds = meta_table__kinds(t);

	/* Each field is checked as it is split, but the first bad one is only reported once the count
	 * is known to be right: a wrong count explains everything after it. */
	while (q < end) {
		const char *fq = NULL;

		p = q + 1;
		if (n >= t->nfields)
			return META_REJ_FIELD_COUNT;
		if (first == META_OK) {
			switch (kinds[n]) {
			case META_GAUGE:
			case META_COUNTER:
				fq = fast_number(p);
				break;
			case META_KEY:
			case META_LABEL:
				fq = fast_label(p);
				break;
			}
		}
		if (fq) {
			q = fq;
		} else {
			q = memchr(p, '|', (size_t)(end - p) + 1);
			if (first == META_OK) {
				first = check_value(kinds[n], p, (size_t)(q - p));
				if (first != META_OK)
					first_field = (int)n;
			}
		}
		if (ret_rec) {
			ret_rec->values[n] = p;
			ret_rec->lens[n] = (uint16_t)(q - p);
		}
		n++;
	}
	if (n != t->nfields)
		return META_REJ_FIELD_COUNT;
	if (first != META_OK) {
		if (ret_field)
			*ret_field = first_field;
		return first;
	}
	if (ret_rec) {
		ret_rec->table = t;
		ret_rec->nvalues = n;
	}
	return META_OK;
}
