/* test_probe_rec.c - record building (probes/lib/probe_rec.c) and its agreement with the validator. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "meta.h"
#include "probe.h"

/* The same tables twice: as a probe sees them and as the supervisor loads them. */
static const char *const basic_fields[] = {"k", "l", "g", "c"};
static const unsigned char basic_kinds[] = {PROBE_F_KEY, PROBE_F_LABEL, PROBE_F_GAUGE, PROBE_F_COUNTER};
static const struct probe_table TBL_basic = {"t_basic", 4, basic_fields, basic_kinds};

/* A t_basic record with its key "k" and label "l" given: the gauge and the counter come next. */
static void begin_basic_kl(struct probe_rec *r)
{
	probe_rec__begin(r, &TBL_basic);
	probe_rec__str(r, "k");
	probe_rec__str(r, "l");
}

static const char *const hist_fields[] = {"k", "h", "s"};
static const unsigned char hist_kinds[] = {PROBE_F_KEY, PROBE_F_HISTOGRAM, PROBE_F_SUMMARY};
static const struct probe_table TBL_hist = {"t_hist", 3, hist_fields, hist_kinds};

#define NLABELS 12
static const char *const wide_fields[NLABELS] = {"k",  "l1", "l2", "l3", "l4",	"l5",
						 "l6", "l7", "l8", "l9", "l10", "l11"};
static const unsigned char wide_kinds[NLABELS] = {PROBE_F_KEY,	 PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL,
						  PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL,
						  PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL};
static const struct probe_table TBL_wide = {"t_wide", NLABELS, wide_fields, wide_kinds};

static const char schema_text[] = "version = \"1.0.0\";\n"
				  "measurements:\n"
				  "(\n"
				  "  { table_name: \"t_basic\", entity_name: \"e\", fields: (\n"
				  "      { description: \"key\", type: \"key\", name: \"k\" },\n"
				  "      { description: \"label\", type: \"label\", name: \"l\" },\n"
				  "      { description: \"gauge\", type: \"gauge\", name: \"g\" },\n"
				  "      { description: \"counter\", type: \"counter\", name: \"c\" } ) },\n"
				  "  { table_name: \"t_hist\", entity_name: \"e\", fields: (\n"
				  "      { description: \"key\", type: \"key\", name: \"k\" },\n"
				  "      { description: \"histogram\", type: \"histogram\", name: \"h\" },\n"
				  "      { description: \"summary\", type: \"summary\", name: \"s\" } ) }\n"
				  ");\n";

static struct meta_registry *load_registry(void)
{
	struct meta_registry *reg = meta_registry__new();
	char err[512] = "";

	assert_non_null(reg);
	if (meta_registry__load_buf(reg, "inline", schema_text, strlen(schema_text), err, sizeof(err))) {
		fprintf(stderr, "schema: %s\n", err);
		fail();
	}
	return reg;
}

/* The record is accepted by the validator, with the values given. */
static void assert_valid(const struct meta_registry *reg, const struct probe_rec *r)
{
	struct meta_record mr;
	int field = -2;
	enum meta_reject rej = meta_record__parse(reg, r->buf, r->len, &mr, &field);

	if (rej != META_OK)
		fprintf(stderr, "rejected (%s, field %d): %s\n", meta_reject__str(rej), field, r->buf);
	assert_int_equal(rej, META_OK);
	assert_int_equal(strlen(r->buf), r->len);
}

GG_TEST(test_basic)
{
	struct probe_rec r;

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__str(&r, "host-1");
	probe_rec__u64(&r, 42);
	probe_rec__i64(&r, -5);
	probe_rec__f64(&r, 1.5);
	assert_int_equal(probe_rec__finish(&r), 0);
	assert_string_equal(r.buf, "|t_basic|host-1|42|-5|1.5|");
	assert_int_equal(r.len, strlen("|t_basic|host-1|42|-5|1.5|"));

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__i64(&r, INT64_MIN);
	probe_rec__str(&r, "");
	probe_rec__u64(&r, UINT64_MAX);
	probe_rec__u64(&r, 0);
	assert_int_equal(probe_rec__finish(&r), 0);
	assert_string_equal(r.buf, "|t_basic|-9223372036854775808||18446744073709551615|0|");
}

/* Every appender with a field kind it does not take. */
GG_TEST(test_wrong_kind)
{
	struct probe_rec r;
	const double le[1] = {1};
	const uint64_t cnt[1] = {1};
	const double q[1] = {0.5}, v[1] = {1};

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__f64(&r, 1.0); /* f64 into the key */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__str(&r, "k");
	probe_rec__f64(&r, 2.0); /* f64 into the label */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	begin_basic_kl(&r);
	probe_rec__str(&r, "3"); /* string into the gauge */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	begin_basic_kl(&r);
	probe_rec__u64(&r, 3);
	probe_rec__i64(&r, 4); /* i64 into the counter */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__str(&r, "k");
	probe_rec__hist(&r, 1, le, cnt, 0, 1); /* histogram into the label */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	begin_basic_kl(&r);
	probe_rec__summary(&r, 1, q, v, 1, 1); /* summary into the gauge */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_hist);
	probe_rec__str(&r, "k");
	probe_rec__u64(&r, 1); /* u64 into the histogram */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_hist);
	probe_rec__str(&r, "k");
	probe_rec__hist(&r, 1, le, cnt, 0, 1);
	probe_rec__hist(&r, 1, le, cnt, 0, 1); /* histogram into the summary */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_hist);
	probe_rec__str(&r, "k");
	probe_rec__f64(&r, 1); /* f64 into the histogram */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);
}

GG_TEST(test_field_count)
{
	struct probe_rec r;

	begin_basic_kl(&r);
	probe_rec__u64(&r, 1);
	assert_int_equal(probe_rec__finish(&r), -EINVAL); /* one missing */

	begin_basic_kl(&r);
	probe_rec__u64(&r, 1);
	probe_rec__u64(&r, 2);
	probe_rec__u64(&r, 3); /* one too many */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, NULL);
	assert_int_equal(probe_rec__finish(&r), -EINVAL);
}

/* After the first error nothing changes. */
GG_TEST(test_sticky)
{
	struct probe_rec r;
	char before[64];
	size_t len;

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__str(&r, "k");
	probe_rec__f64(&r, 1); /* wrong kind: label */
	assert_int_equal(r.err, -EINVAL);
	len = r.len;
	memcpy(before, r.buf, len + 1);
	probe_rec__str(&r, "l");
	probe_rec__u64(&r, 1);
	probe_rec__f64(&r, -1); /* would be -ERANGE */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);
	assert_int_equal(r.len, len);
	assert_memory_equal(r.buf, before, len + 1);
}

GG_TEST(test_empty_key)
{
	struct probe_rec r;

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__str(&r, "");
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__str(&r, NULL);
	assert_int_equal(probe_rec__finish(&r), -EINVAL);

	probe_rec__begin(&r, &TBL_basic);
	probe_rec__strn(&r, "abc", 0);
	assert_int_equal(probe_rec__finish(&r), -EINVAL);
}

GG_TEST(test_range)
{
	struct probe_rec r;

	begin_basic_kl(&r);
	probe_rec__u64(&r, 1);
	probe_rec__f64(&r, -0.5); /* negative counter */
	assert_int_equal(probe_rec__finish(&r), -ERANGE);

	begin_basic_kl(&r);
	probe_rec__f64(&r, NAN);
	assert_int_equal(probe_rec__finish(&r), -ERANGE);

	begin_basic_kl(&r);
	probe_rec__f64(&r, -INFINITY);
	assert_int_equal(probe_rec__finish(&r), -ERANGE);

	begin_basic_kl(&r);
	probe_rec__f64(&r, 0);
	probe_rec__f64(&r, INFINITY);
	assert_int_equal(probe_rec__finish(&r), -ERANGE);

	/* -0 is not negative, and is printed as 0 */
	begin_basic_kl(&r);
	probe_rec__f64(&r, -0.0);
	probe_rec__f64(&r, -0.0);
	assert_int_equal(probe_rec__finish(&r), 0);
	assert_string_equal(r.buf, "|t_basic|k|l|0|0|");
}

/* Guard bytes around the record: nothing is written outside it, even on overflow. */
struct guarded_rec {
	unsigned char pre[64];
	struct probe_rec r;
	unsigned char post[64];
};

GG_TEST(test_overflow)
{
	struct guarded_rec *g = malloc(sizeof(*g));
	char *big = malloc(META_LABEL_MAX + 1);
	unsigned int i;

	assert_non_null(g);
	assert_non_null(big);
	memset(g, 0xa5, sizeof(*g));
	memset(big, 'x', META_LABEL_MAX);
	big[META_LABEL_MAX] = '\0';

	/* 12 fields of 1 KiB do not fit in 8 KiB */
	probe_rec__begin(&g->r, &TBL_wide);
	for (i = 0; i < NLABELS; i++)
		probe_rec__str(&g->r, big);
	assert_int_equal(probe_rec__finish(&g->r), -E2BIG);
	assert_true(g->r.len < sizeof(g->r.buf));
	assert_int_equal(strlen(g->r.buf), g->r.len);
	for (i = 0; i < sizeof(g->pre); i++) {
		assert_int_equal(g->pre[i], 0xa5);
		assert_int_equal(g->post[i], 0xa5);
	}
	/* 7 of them do */
	probe_rec__begin(&g->r, &TBL_wide);
	for (i = 0; i < NLABELS; i++)
		probe_rec__str(&g->r, i < 7 ? big : "");
	assert_int_equal(probe_rec__finish(&g->r), 0);
	free(big);
	free(g);
}

/* A t_basic record of key, the label's len bytes, gauge 1 and counter 2, accepted. */
static void build_key_label(struct probe_rec *r, const char *key, const char *label, size_t len)
{
	probe_rec__begin(r, &TBL_basic);
	probe_rec__str(r, key);
	probe_rec__strn(r, label, len);
	probe_rec__u64(r, 1);
	probe_rec__u64(r, 2);
	assert_int_equal(probe_rec__finish(r), 0);
}

static void expect_label(const char *in, size_t inlen, const char *want)
{
	struct probe_rec r;
	char expect[4096];

	build_key_label(&r, "k", in, inlen);
	snprintf(expect, sizeof(expect), "|t_basic|k|%s|1|2|", want);
	assert_string_equal(r.buf, expect);
	assert_true(meta_utf8_valid(r.buf, r.len));
}

/* Literal input (NULs included) -> expected label text. */
#define EXPECT_LABEL(lit, want) expect_label(lit, sizeof(lit) - 1, want)

GG_TEST(test_sanitise)
{
	EXPECT_LABEL("a|b", "a_b");
	EXPECT_LABEL("t\tab\nnl\rcr\x7f"
		     "del",
		     "t_ab_nl_cr_del");
	EXPECT_LABEL("nul\0x", "nul_x");
	EXPECT_LABEL("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80", "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80");
	EXPECT_LABEL("\xff\xfe", "??");
	EXPECT_LABEL("\xc3(", "?(");
	EXPECT_LABEL("\xc0\xaf", "??");		  /* overlong '/' */
	EXPECT_LABEL("\xe0\x80\xaf", "???");	  /* overlong */
	EXPECT_LABEL("\xed\xa0\x80", "???");	  /* surrogate */
	EXPECT_LABEL("\xf4\x90\x80\x80", "????"); /* above U+10FFFF */
	EXPECT_LABEL("\xe2\x82", "??");		  /* cut short */
	EXPECT_LABEL("\xc2\x85next", "_next");	  /* C1 control */
	EXPECT_LABEL("\x80", "?");		  /* stray continuation byte */

	/* A key is sanitised the same way. */
	{
		struct probe_rec r;

		build_key_label(&r, "|", "", 0);
		assert_string_equal(r.buf, "|t_basic|_||1|2|");
	}
}

GG_TEST(test_label_cut)
{
	struct probe_rec r;
	char *s = malloc(META_LABEL_MAX + 8);

	assert_non_null(s);
	memset(s, 'a', META_LABEL_MAX + 7);
	s[META_LABEL_MAX + 7] = '\0';
	build_key_label(&r, "k", s, strlen(s));
	assert_int_equal(r.len, strlen("|t_basic|k|") + META_LABEL_MAX + strlen("|1|2|"));

	/* a 2-byte character across the limit is dropped whole */
	s[META_LABEL_MAX - 1] = '\xc3';
	s[META_LABEL_MAX] = '\xa9';
	s[META_LABEL_MAX + 1] = '\0';
	build_key_label(&r, "k", s, strlen(s));
	assert_int_equal(r.len, strlen("|t_basic|k|") + META_LABEL_MAX - 1 + strlen("|1|2|"));
	assert_true(meta_utf8_valid(r.buf, r.len));
	free(s);
}

static void expect_f64(double v, const char *want)
{
	struct probe_rec r;
	char expect[256];
	double back;
	const char *val;
	size_t vlen;

	begin_basic_kl(&r);
	probe_rec__f64(&r, v);
	probe_rec__u64(&r, 0);
	assert_int_equal(probe_rec__finish(&r), 0);
	snprintf(expect, sizeof(expect), "|t_basic|k|l|%s|0|", want);
	assert_string_equal(r.buf, expect);
	val = r.buf + strlen("|t_basic|k|l|");
	vlen = strlen(want);
	assert_int_equal(meta_parse_number(val, vlen, &back), 0);
	assert_true(fabs(back - v) <= fabs(v) * 1e-8);
}

GG_TEST(test_f64_format)
{
	expect_f64(0, "0");
	expect_f64(1, "1");
	expect_f64(-7, "-7");
	expect_f64(1.5, "1.5");
	expect_f64(0.25, "0.25");
	expect_f64(0.1 + 0.2, "0.3");
	expect_f64(1234.5678, "1234.5678");
	expect_f64(3.14159265358979, "3.14159265");
	expect_f64(-2.75, "-2.75");
	expect_f64(0.0001, "0.0001");
	expect_f64(0.000123456789, "0.000123456789");
	expect_f64(1e-7, "1e-07");
	expect_f64(-1.5e-9, "-1.5e-09");
	expect_f64(123456789.123, "123456789");
	expect_f64(9007199254740991.0, "9007199254740991");
	expect_f64(9007199254740994.0, "9007199254740994");
	expect_f64(1e20, "1e+20");
	expect_f64(1.23456789e200, "1.23456789e+200");
	expect_f64(5e-324, "4.94065646e-324");
	expect_f64(1.7976931348623157e308, "1.79769313e+308");
}

GG_TEST(test_hist)
{
	struct probe_rec r;
	const double le[3] = {1, 2.5, 10};
	const uint64_t cnt[3] = {3, 0, 2};
	const double q[3] = {0.5, 0.9, 0.99};
	const double v[3] = {1.25, 8, 9.5};
	const double le_bad[2] = {2, 2};
	const double le_close[2] = {1.0000000001, 1.0000000002};
	const double le_nan[2] = {1, NAN};
	const uint64_t cnt2[2] = {1, 1};
	const uint64_t cnt_huge[2] = {UINT64_MAX, 1};
	double many[META_HIST_BUCKETS_MAX + 1];
	uint64_t many_cnt[META_HIST_BUCKETS_MAX + 1] = {0};
	struct meta_hist h;

	probe_rec__begin(&r, &TBL_hist);
	probe_rec__str(&r, "k");
	probe_rec__hist(&r, 3, le, cnt, 1, 20.5);
	probe_rec__summary(&r, 3, q, v, 42, 7);
	assert_int_equal(probe_rec__finish(&r), 0);
	assert_string_equal(r.buf, "|t_hist|k|3 1 3 2.5 3 10 5 20.5 6|3 0.5 1.25 0.9 8 0.99 9.5 42 7|");
	assert_int_equal(meta_hist__parse("3 1 3 2.5 3 10 5 20.5 6", 23, &h), 0);
	assert_int_equal(h.count, 6);
	assert_int_equal(h.cum[2], 5);

	for (unsigned int i = 0; i <= META_HIST_BUCKETS_MAX; i++)
		many[i] = i + 1;
	probe_rec__begin(&r, &TBL_hist);
	probe_rec__str(&r, "k");
	probe_rec__hist(&r, META_HIST_BUCKETS_MAX, many, many_cnt, 0, 0);
	assert_int_equal(r.err, 0);
	probe_rec__hist(&r, META_HIST_BUCKETS_MAX + 1, many, many_cnt, 0, 0); /* into the summary anyway */
	assert_int_equal(r.err, -EINVAL);

	struct {
		unsigned int n;
		const double *le;
		const uint64_t *cnt;
		uint64_t overflow;
		double sum;
		int err;
	} bad[] = {
		{0, le, cnt, 0, 0, -EINVAL},	  {META_HIST_BUCKETS_MAX + 1, many, many_cnt, 0, 0, -EINVAL},
		{2, le_bad, cnt2, 0, 0, -EINVAL}, {2, le_close, cnt2, 0, 0, -EINVAL}, /* equal once printed */
		{2, le_nan, cnt2, 0, 0, -ERANGE}, {2, le, cnt2, 0, INFINITY, -ERANGE},
		{2, le, cnt_huge, 0, 0, -ERANGE}, {2, le, cnt2, UINT64_MAX, 0, -ERANGE},
		{2, NULL, cnt2, 0, 0, -EINVAL},
	};
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		probe_rec__begin(&r, &TBL_hist);
		probe_rec__str(&r, "k");
		probe_rec__hist(&r, bad[i].n, bad[i].le, bad[i].cnt, bad[i].overflow, bad[i].sum);
		assert_int_equal(r.err, bad[i].err);
	}

	/* summary: quantiles outside [0, 1] or not increasing */
	{
		const double q_out[2] = {0.5, 1.5}, q_dec[2] = {0.9, 0.5}, vv[2] = {1, 2};

		probe_rec__begin(&r, &TBL_hist);
		probe_rec__str(&r, "k");
		probe_rec__hist(&r, 3, le, cnt, 1, 20.5);
		probe_rec__summary(&r, 2, q_out, vv, 3, 2);
		assert_int_equal(probe_rec__finish(&r), -EINVAL);
		probe_rec__begin(&r, &TBL_hist);
		probe_rec__str(&r, "k");
		probe_rec__hist(&r, 3, le, cnt, 1, 20.5);
		probe_rec__summary(&r, 2, q_dec, vv, 3, 2);
		assert_int_equal(probe_rec__finish(&r), -EINVAL);
	}
}

/* Deterministic pseudo-random numbers for the round trip. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double rng_double(void)
{
	static const double scale[] = {1e-12, 1e-6, 1e-3, 1, 1e3, 1e9, 1e15, 1e18, 1e100};
	double unit = (double)(rng() >> 11) / 9007199254740992.0;

	return unit * scale[rng() % (sizeof(scale) / sizeof(scale[0]))];
}

static void random_str(char *s, size_t *len, int nonempty)
{
	static const char *const pieces[] = {"a",
					     "Z",
					     "9",
					     " ",
					     "|",
					     "\t",
					     "\n",
					     "\x01",
					     "\x7f",
					     "\xc3\xa9",
					     "\xe2\x9c\x93",
					     "\xf0\x9f\x98\x80",
					     "\xff",
					     "\xc0",
					     "\xed\xa0\x80",
					     "\xc2\x85",
					     "\xe2\x82",
					     "\0",
					     "-",
					     "."};
	size_t n = 0, count = rng() % 40 + (nonempty ? 1 : 0);

	for (size_t i = 0; i < count; i++) {
		size_t k = rng() % (sizeof(pieces) / sizeof(pieces[0]));
		size_t plen = pieces[k][0] ? strlen(pieces[k]) : 1;

		memcpy(s + n, pieces[k], plen);
		n += plen;
	}
	*len = n;
}

/* Every record probe_rec builds is accepted by the supervisor's validator, values intact. */
GG_TEST(test_round_trip)
{
	struct meta_registry *reg = load_registry();
	struct probe_rec r;
	struct meta_record mr;
	char s[256], l[256];
	size_t slen, llen;

	for (unsigned int iter = 0; iter < 20000; iter++) {
		double g = rng_double() * ((rng() & 1) ? -1 : 1), c = rng_double(), back;
		int64_t gi = (int64_t)rng();
		unsigned int how = (unsigned int)(rng() % 4);

		random_str(s, &slen, 1);
		random_str(l, &llen, 0);
		probe_rec__begin(&r, &TBL_basic);
		if (how == 0)
			probe_rec__u64(&r, rng());
		else if (how == 1)
			probe_rec__i64(&r, gi);
		else
			probe_rec__strn(&r, s, slen);
		probe_rec__strn(&r, l, llen);
		if (how == 1)
			probe_rec__i64(&r, gi);
		else
			probe_rec__f64(&r, g);
		if (how == 2)
			probe_rec__u64(&r, rng());
		else
			probe_rec__f64(&r, c);
		assert_int_equal(probe_rec__finish(&r), 0);
		assert_valid(reg, &r);
		assert_int_equal(meta_record__parse(reg, r.buf, r.len, &mr, NULL), META_OK);
		assert_int_equal(mr.nvalues, 4);
		assert_int_equal(meta_parse_number(mr.values[2], mr.lens[2], &back), 0);
		if (how == 1)
			assert_true(back == (double)gi);
		else
			assert_true(fabs(back - g) <= fabs(g) * 1e-8 || fabs(g) < 1e-300);
		if (how != 2) {
			assert_int_equal(meta_parse_number(mr.values[3], mr.lens[3], &back), 0);
			assert_true(fabs(back - c) <= c * 1e-8 || c < 1e-300);
		}
	}
	for (unsigned int iter = 0; iter < 5000; iter++) {
		unsigned int n = (unsigned int)(rng() % META_HIST_BUCKETS_MAX) + 1;
		double le[META_HIST_BUCKETS_MAX], q[META_HIST_BUCKETS_MAX], v[META_HIST_BUCKETS_MAX];
		uint64_t cnt[META_HIST_BUCKETS_MAX];
		double x = rng_double() * ((rng() & 1) ? -1 : 1);
		struct meta_hist h;
		struct meta_summary sm;

		for (unsigned int i = 0; i < n; i++) {
			x += 1e-6 + fabs(x) * 0.001 + rng_double();
			le[i] = x;
			cnt[i] = rng() >> 20;
			q[i] = (double)(i + 1) / (n + 1);
			v[i] = rng_double();
		}
		probe_rec__begin(&r, &TBL_hist);
		probe_rec__u64(&r, iter);
		probe_rec__hist(&r, n, le, cnt, rng() >> 20, rng_double());
		probe_rec__summary(&r, n, q, v, rng_double(), rng() >> 10);
		if (probe_rec__finish(&r) == -E2BIG)
			continue; /* 64 buckets of long numbers may not fit with the summary: fine */
		assert_int_equal(r.err, 0);
		assert_valid(reg, &r);
		assert_int_equal(meta_record__parse(reg, r.buf, r.len, &mr, NULL), META_OK);
		assert_int_equal(meta_hist__parse(mr.values[1], mr.lens[1], &h), 0);
		assert_int_equal(h.n, n);
		assert_int_equal(meta_summary__parse(mr.values[2], mr.lens[2], &sm), 0);
		assert_int_equal(sm.n, n);
	}
	meta_registry__free(reg);
}

GG_TEST(test_log_level)
{
	enum probe_log_level l = PLOG_ERROR;

	assert_int_equal(probe_log_level__parse("debug", &l), 0);
	assert_int_equal(l, PLOG_DEBUG);
	assert_int_equal(probe_log_level__parse("WARN", &l), 0);
	assert_int_equal(l, PLOG_WARN);
	assert_int_equal(probe_log_level__parse("warning", &l), 0);
	assert_int_equal(probe_log_level__parse("error", &l), 0);
	assert_int_equal(l, PLOG_ERROR);
	assert_int_equal(probe_log_level__parse("loud", &l), -EINVAL);
	assert_int_equal(l, PLOG_ERROR);
}

GG_TEST(test_read_file)
{
	struct probe_buf b = {0};

	assert_int_equal(probe_read_file("/proc/self/status", &b, 1 << 20), 0);
	assert_true(b.len > 0);
	assert_int_equal(strlen(b.data), b.len);
	assert_non_null(strstr(b.data, "Name:"));
	assert_int_equal(probe_read_file("/proc/self/status", &b, 16), -EFBIG);
	assert_int_equal(b.len, 0);
	assert_int_equal(probe_read_file("/nonexistent/file", &b, 1 << 20), -ENOENT);
	/* A file of more than one page, read through buffer growth */
	assert_int_equal(probe_read_file("/proc/self/maps", &b, 16 << 20), 0);
	assert_int_equal(strlen(b.data), b.len);
	probe_buf__free(&b);
	probe_buf__free(&b);
	probe_buf__free(NULL);
}

/* probe_parse_uint: the command-line numbers of every probe (-t, -c, thresholds, -m). */
GG_TEST(test_parse_uint)
{
	unsigned int v = 7;

	assert_int_equal(probe_parse_uint("5", 1, 3600, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(probe_parse_uint("3600", 1, 3600, &v), 0);
	assert_int_equal(v, 3600);
	assert_int_equal(probe_parse_uint("0", 0, 1, &v), 0);
	assert_int_equal(v, 0);
	v = 9;
	/* Out of range, signs, junk, empty, overflow: refused, the value untouched. */
	assert_int_equal(probe_parse_uint("3601", 1, 3600, &v), -ERANGE);
	assert_int_equal(probe_parse_uint("0", 1, 3600, &v), -ERANGE);
	assert_int_equal(probe_parse_uint("-1", 0, 3600, &v), -ERANGE);
	assert_int_equal(probe_parse_uint(" -1", 0, 3600, &v), -ERANGE);
	assert_int_equal(probe_parse_uint("5s", 0, 3600, &v), -ERANGE);
	assert_int_equal(probe_parse_uint("", 0, 3600, &v), -ERANGE);
	assert_int_equal(probe_parse_uint("99999999999999999999", 0, 0xffffffffu, &v), -ERANGE);
	assert_int_equal(probe_parse_uint("4294967296", 0, 0xffffffffu, &v), -ERANGE);
	assert_int_equal(v, 9);
}

/* probe_rt__run_ticking: ticks keep their own pace between reports, and a report still comes on
 * time. One report at 1 s (it stops the loop); ticks asked every 50 ms in between. */
struct tick_count {
	struct probe_rt *rt;
	unsigned int ticks, reports, ticks_at_report;
	uint64_t start_ms, report_ms;
};

static unsigned int count_tick(void *arg)
{
	struct tick_count *t = arg;

	t->ticks++;
	return 50;
}

static void stop_report(void *arg)
{
	struct tick_count *t = arg;

	t->reports++;
	t->ticks_at_report = t->ticks;
	t->report_ms = probe_now_mono_ms();
	probe_rt__stop(t->rt);
}

/* A runtime that logs errors only. */
static struct probe_rt *quiet_rt(void)
{
	const struct probe_rt_opts opts = {.name = "unit", .log_level = PLOG_ERROR};
	struct probe_rt *rt = probe_rt__new(&opts);

	assert_non_null(rt);
	return rt;
}

GG_TEST(test_run_ticking)
{
	struct tick_count t = {0};
	unsigned int period_s = 1;

	t.rt = quiet_rt();
	t.start_ms = probe_now_mono_ms();
	probe_rt__run_ticking(t.rt, &period_s, stop_report, count_tick, &t);
	assert_int_equal(t.reports, 1);
	/* ~1000 ms / 50 ms, plus the first tick at start; a slow machine may drop a few */
	assert_in_range(t.ticks_at_report, 12, 22);
	assert_in_range(t.report_ms - t.start_ms, 1000, 1500);
	probe_rt__free(t.rt);
}

/* probe_rt__watch_fd: a readable fd runs the tick at once (no timer asked: the tick wants an hour);
 * the tick consumes the byte and writes another four times: five ticks right after the start, then
 * none until the report. */
struct watch_count {
	struct probe_rt *rt;
	int fds[2];
	unsigned int ticks, ticks_at_report;
	uint64_t start_ms, last_tick_ms;
};

static unsigned int watch_tick(void *arg)
{
	struct watch_count *w = arg;
	char c;

	if (read(w->fds[0], &c, 1) == 1 && ++w->ticks < 5)
		assert_int_equal(write(w->fds[1], "x", 1), 1);
	w->last_tick_ms = probe_now_mono_ms();
	return 3600000u;
}

static void watch_report(void *arg)
{
	struct watch_count *w = arg;

	w->ticks_at_report = w->ticks;
	probe_rt__stop(w->rt);
}

GG_TEST(test_run_ticking_watch_fd)
{
	struct watch_count w = {0};
	unsigned int period_s = 1;

	w.rt = quiet_rt();
	assert_int_equal(pipe2(w.fds, O_NONBLOCK | O_CLOEXEC), 0);
	assert_int_equal(write(w.fds[1], "x", 1), 1);
	probe_rt__watch_fd(w.rt, w.fds[0]);
	w.start_ms = probe_now_mono_ms();
	probe_rt__run_ticking(w.rt, &period_s, watch_report, watch_tick, &w);
	assert_int_equal(w.ticks_at_report, 5);
	assert_true(w.last_tick_ms - w.start_ms < 500);
	probe_rt__watch_fd(w.rt, -1);
	probe_rt__free(w.rt);
	close(w.fds[0]);
	close(w.fds[1]);
}
