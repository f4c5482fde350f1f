/* test_hw_decode.c - hwprobe's decoding and counting: the tracefs formats of ras:mc_event and
 * net:net_dev_xmit_timeout recorded from this kernel (tests/unit/data/tp_*.format), and raw records laid
 * out as the kernel writes them (fixed fields at the format's offsets, __data_loc strings after them). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "hw_decode.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = calloc(1, 65536);

	assert_non_null(f);
	assert_non_null(b);
	*len = fread(b, 1, 65535, f);
	fclose(f);
	return b;
}

static void load(const char *path, struct tp_format *ret)
{
	size_t len;
	char *t = slurp(path, &len);

	assert_int_equal(tp_format__parse(t, len, ret), 0);
	free(t);
}

/* ---- records as the kernel lays them out (offsets from the recorded format files) ---------------- */

struct rec {
	unsigned char b[512];
	size_t len; /* where the next string goes */
};

static void put(struct rec *r, size_t off, const void *v, size_t n)
{
	memcpy(r->b + off, v, n);
}

/* a __data_loc field at off: (len << 16) | offset, the string (NUL included) appended */
static void put_str(struct rec *r, size_t off, const char *s)
{
	uint32_t n = (uint32_t)strlen(s) + 1, loc = n << 16 | (uint32_t)r->len;

	put(r, off, &loc, 4);
	memcpy(r->b + r->len, s, n);
	r->len += n;
}

/* mc_event: error_type@8 u32, msg@12, label@16, error_count@20 u16, mc_index@22 u8, top@23 s8, mid@24 s8,
 * low@25 s8, address@32 long, grain_bits@40 u8, syndrome@48 long, driver_detail@56; strings from 60. */
static void mc_record(struct rec *r, uint32_t type, const char *msg, const char *label, uint16_t count, uint8_t mc,
		      int8_t top, int8_t mid, int8_t low, int64_t addr)
{
	uint16_t common_type = 2206;
	uint8_t grain = 6;
	int64_t syndrome = 0x55;

	memset(r, 0, sizeof(*r));
	r->len = 60;
	put(r, 0, &common_type, 2);
	put(r, 8, &type, 4);
	put_str(r, 12, msg);
	put_str(r, 16, label);
	put(r, 20, &count, 2);
	put(r, 22, &mc, 1);
	put(r, 23, &top, 1);
	put(r, 24, &mid, 1);
	put(r, 25, &low, 1);
	put(r, 32, &addr, 8);
	put(r, 40, &grain, 1);
	put(r, 48, &syndrome, 8);
	put_str(r, 56, "APEI location: node:0 card:1");
}

/* net_dev_xmit_timeout: name@8, driver@12, queue_index@16 int; strings from 20. */
static void xmit_record(struct rec *r, const char *dev, const char *driver, int32_t queue)
{
	memset(r, 0, sizeof(*r));
	r->len = 20;
	put_str(r, 8, dev);
	put_str(r, 12, driver);
	put(r, 16, &queue, 4);
}

/* The tracepoint formats recorded from this kernel. */
#define MC_FORMAT   "tests/unit/data/tp_mc_event.format"
#define XMIT_FORMAT "tests/unit/data/tp_net_dev_xmit_timeout.format"

/* An empty aggregate that has read both formats, as hwprobe's after its start. */
static void agg_new(struct hw_agg *a)
{
	memset(a, 0, sizeof(*a));
	load(MC_FORMAT, &a->mc_fmt);
	load(XMIT_FORMAT, &a->xmit_fmt);
	a->has_mc_fmt = 1;
	a->has_xmit_fmt = 1;
}

GG_TEST(test_formats)
{
	struct tp_format f;
	const struct tp_field *x;

	load(MC_FORMAT, &f);
	assert_string_equal(f.name, "mc_event");
	assert_int_equal(f.id, 2206);
	assert_int_equal(f.nfields, 4 + 12);
	x = tp_format__field(&f, "msg");
	assert_non_null(x);
	assert_int_equal(x->offset, 12);
	assert_int_equal(x->loc, 1);
	x = tp_format__field(&f, "top_layer");
	assert_int_equal(x->offset, 23);
	assert_int_equal(x->size, 1);
	assert_int_equal(x->is_signed, 1);
	x = tp_format__field(&f, "address");
	assert_int_equal(x->offset, 32);
	assert_int_equal(x->size, 8);
	assert_null(tp_format__field(&f, "nope"));

	load(XMIT_FORMAT, &f);
	assert_string_equal(f.name, "net_dev_xmit_timeout");
	assert_int_equal(tp_format__field(&f, "queue_index")->offset, 16);
	assert_int_equal(tp_format__field(&f, "driver")->loc, 1);

	assert_int_equal(tp_format__parse("junk\n", 5, &f), -EINVAL);
	assert_int_equal(tp_format__parse("name: x\nformat:\n", 16, &f), -EINVAL);
}

GG_TEST(test_mc_decode_and_count)
{
	static struct hw_agg a;
	struct hw_mc_rec d;
	struct hw_mc *m;
	struct rec r;

	agg_new(&a);

	/* 3 corrected errors on one DIMM, reported as one record with error_count 3 */
	mc_record(&r, 0, "memory read error", "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", 3, 0, 1, 0, -1, 0x12345000);
	assert_int_equal(hw_agg__mc_event(&a, r.b, sizeof(r.b), &d, &m), 0);
	assert_string_equal(d.err_type, "CE");
	assert_string_equal(d.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
	assert_string_equal(d.msg, "memory read error");
	assert_string_equal(d.detail, "APEI location: node:0 card:1");
	assert_int_equal(d.error_count, 3);
	assert_int_equal(d.top, 1);
	assert_int_equal(d.mid, 0);
	assert_int_equal(d.low, -1);
	assert_int_equal(d.address, 0x12345000);
	assert_int_equal(d.grain_bits, 6);
	assert_int_equal(d.syndrome, 0x55);
	assert_int_equal(m->errors, 3);

	/* one more on the same DIMM: the same tally */
	mc_record(&r, 0, "memory read error", "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", 1, 0, 1, 0, -1, 0x12346000);
	assert_int_equal(hw_agg__mc_event(&a, r.b, sizeof(r.b), &d, &m), 0);
	assert_int_equal(m->errors, 4);
	assert_int_equal(m->records, 2);
	assert_int_equal(a.nmcs, 1);

	/* uncorrected on another controller; fatal with error_count 0 counts as one */
	mc_record(&r, 1, "", "DIMM_B1", 1, 1, 2, 3, 0, 0);
	assert_int_equal(hw_agg__mc_event(&a, r.b, sizeof(r.b), &d, &m), 0);
	assert_string_equal(d.err_type, "UE");
	assert_int_equal(m->mc_index, 1);
	mc_record(&r, 3, "", "DIMM_B1", 0, 1, 2, 3, 0, 0);
	assert_int_equal(hw_agg__mc_event(&a, r.b, sizeof(r.b), &d, &m), 0);
	assert_string_equal(d.err_type, "Fatal");
	assert_int_equal(m->errors, 1);
	assert_int_equal(a.nmcs, 3);

	/* a record cut before its label, and one whose label points outside it: not counted */
	mc_record(&r, 0, "x", "DIMM_A0", 1, 0, 0, 0, 0, 0);
	assert_int_equal(hw_agg__mc_event(&a, r.b, 20, &d, &m), -EINVAL);
	r.b[19] = 0xff; /* label's length past the record */
	assert_int_equal(hw_agg__mc_event(&a, r.b, sizeof(r.b), &d, &m), -EINVAL);
	assert_int_equal(a.undecodable, 2);
	assert_int_equal(a.nmcs, 3);
}

GG_TEST(test_xmit_timeout)
{
	static struct hw_agg a;
	struct hw_nic *n;
	struct rec r;

	agg_new(&a);
	for (int i = 0; i < 5; i++) {
		xmit_record(&r, "eth7", "e1000e", i % 2);
		assert_int_equal(hw_agg__xmit_timeout(&a, r.b, sizeof(r.b), &n), 0);
	}
	assert_string_equal(n->dev, "eth7");
	assert_string_equal(n->driver, "e1000e");
	assert_int_equal(n->timeouts, 5);
	assert_int_equal(n->queue, 0);
	xmit_record(&r, "a-name-longer-than-ifnamsiz", "x", 0);
	assert_int_equal(hw_agg__xmit_timeout(&a, r.b, sizeof(r.b), &n), -ENOSPC);
	xmit_record(&r, "eth8", "x", 0);
	assert_int_equal(hw_agg__xmit_timeout(&a, r.b, 10, &n), -EINVAL);
	assert_int_equal(a.nnics, 1);
	/* without the format (no tracepoint): nothing decodes */
	a.has_xmit_fmt = 0;
	xmit_record(&r, "eth7", "e1000e", 0);
	assert_int_equal(hw_agg__xmit_timeout(&a, r.b, sizeof(r.b), &n), -EINVAL);
}

/* Integers of every size, signed and not; __rel_loc strings. */
GG_TEST(test_fields)
{
	static const char fmt[] = "name: t\nID: 7\nformat:\n"
				  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
				  "\tfield:s8 a;\toffset:8;\tsize:1;\tsigned:1;\n"
				  "\tfield:short b;\toffset:10;\tsize:2;\tsigned:1;\n"
				  "\tfield:u32 c;\toffset:12;\tsize:4;\tsigned:0;\n"
				  "\tfield:char comm[16];\toffset:16;\tsize:16;\tsigned:0;\n"
				  "\tfield:__rel_loc char[] s;\toffset:32;\tsize:4;\tsigned:0;\n";
	struct tp_format f;
	unsigned char rec[64] = {0};
	int64_t v;
	char s[8];
	uint32_t loc = 3u << 16 | 4u; /* 4 bytes after the field's end: offset 40 */

	assert_int_equal(tp_format__parse(fmt, sizeof(fmt) - 1, &f), 0);
	assert_int_equal(f.nfields, 6);
	assert_string_equal(f.fields[4].name, "comm");
	rec[8] = 0xfe;
	rec[10] = 0x00, rec[11] = 0x80;
	rec[12] = 0xff, rec[13] = 0xff, rec[14] = 0xff, rec[15] = 0xff;
	memcpy(rec + 32, &loc, 4);
	memcpy(rec + 40, "ok", 3);
	assert_int_equal(tp_rec__int(tp_format__field(&f, "a"), rec, sizeof(rec), &v), 0);
	assert_int_equal(v, -2);
	assert_int_equal(tp_rec__int(tp_format__field(&f, "b"), rec, sizeof(rec), &v), 0);
	assert_int_equal(v, -32768);
	assert_int_equal(tp_rec__int(tp_format__field(&f, "c"), rec, sizeof(rec), &v), 0);
	assert_int_equal(v, 0xffffffffll);
	assert_int_equal(tp_rec__int(tp_format__field(&f, "comm"), rec, sizeof(rec), &v), -EINVAL);
	assert_int_equal(tp_rec__str(tp_format__field(&f, "s"), rec, sizeof(rec), s, sizeof(s)), 0);
	assert_string_equal(s, "ok");
	assert_int_equal(tp_rec__str(tp_format__field(&f, "s"), rec, 41, s, sizeof(s)), -EINVAL);
	assert_int_equal(tp_rec__int(tp_format__field(&f, "c"), rec, 14, &v), -EINVAL);
}
