/* out_pprof.c - folded stacks to a gzipped pprof profile (profile.proto, encoded by hand), the format
 * `go tool pprof` and Pyroscope read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "stackprobe.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1,
	VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	LOCATION_ID = 1,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
};

#define WT_VARINT  0
#define WT_LEN	   2
#define MAX_FRAMES 1024u

static void pb_varint(struct sp_buf *p, uint64_t v)
{
	sp_buf__reserve(p, 10);
	if (p->err)
		return;
	do {
		unsigned char c = v & 0x7f;

		v >>= 7;
		p->s[p->len++] = (char)(c | (v ? 0x80 : 0));
	} while (v);
}

static void pb_tag(struct sp_buf *p, unsigned int field, unsigned int wt)
{
	pb_varint(p, (uint64_t)field << 3 | wt);
}

static void pb_uint(struct sp_buf *p, unsigned int field, uint64_t v)
{
	pb_tag(p, field, WT_VARINT);
	pb_varint(p, v);
}

static void pb_bytes(struct sp_buf *p, unsigned int field, const void *data, size_t len)
{
	pb_tag(p, field, WT_LEN);
	pb_varint(p, len);
	sp_buf__reserve(p, len);
	if (p->err)
		return;
	memcpy(p->s + p->len, data, len);
	p->len += len;
}

/* Append sub as a length-delimited field and empty it for reuse. */
static void pb_msg(struct sp_buf *p, unsigned int field, struct sp_buf *sub)
{
	if (sub->err && !p->err)
		p->err = sub->err;
	pb_bytes(p, field, sub->s, sub->len);
	sub->len = 0;
}

/* Strings are interned: index in the string table (0 is ""). */
struct strtab {
	struct ftab idx;   /* key -> value = index */
	struct sp_buf out; /* the string_table fields, in index order */
	uint64_t n;
};

static int64_t str_id(struct strtab *t, const char *s, size_t len)
{
	struct ftab_ent *e = ftab__find(&t->idx, 0, 0, s, len);

	if (e)
		return (int64_t)e->value;
	if (ftab__add(&t->idx, 0, 0, s, len, t->n))
		return -ENOMEM;
	pb_bytes(&t->out, PROFILE_STRING_TABLE, s, len);
	return (int64_t)t->n++;
}

static void value_type(struct sp_buf *p, struct sp_buf *tmp, unsigned int field, int64_t type, int64_t unit)
{
	pb_uint(tmp, VALUETYPE_TYPE, (uint64_t)type);
	pb_uint(tmp, VALUETYPE_UNIT, (uint64_t)unit);
	pb_msg(p, field, tmp);
}

int sp_pprof__encode(const char *folded, size_t len, const struct sp_pprof_opts *opts, unsigned char **ret,
		     size_t *ret_len)
{
	char *buf = malloc(len + 1);
	struct sp_fline *lines = NULL;
	struct strtab st = {0};
	struct ftab funcs; /* frame name -> function/location id */
	struct sp_buf out = {0}, body = {0}, tmp = {0}, tmp2 = {0};
	size_t n = 0;
	uint64_t nfuncs = 0;
	int64_t s_type, s_unit, s_cpu, s_ns, p_type, p_unit;
	int err;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, folded, len);
	buf[len] = '\0';
	ftab__init(&st.idx, SIZE_MAX, SIZE_MAX);
	ftab__init(&funcs, SIZE_MAX, SIZE_MAX);
	err = sp_folded__parse(buf, len, &lines, &n);
	if (err)
		goto out;
	if (str_id(&st, "", 0) < 0) {
		err = -ENOMEM;
		goto out;
	}
	s_type = str_id(&st, opts->sample_type, strlen(opts->sample_type));
	s_unit = str_id(&st, opts->sample_unit, strlen(opts->sample_unit));
	s_cpu = str_id(&st, "cpu", 3);
	s_ns = str_id(&st, "nanoseconds", 11);
	p_type = str_id(&st, opts->period_type, strlen(opts->period_type));
	p_unit = str_id(&st, opts->period_unit, strlen(opts->period_unit));
	if (s_type < 0 || s_unit < 0 || s_cpu < 0 || s_ns < 0 || p_type < 0 || p_unit < 0) {
		err = -ENOMEM;
		goto out;
	}
	value_type(&body, &tmp, PROFILE_SAMPLE_TYPE, s_type, s_unit);
	if (opts->with_cpu_ns)
		value_type(&body, &tmp, PROFILE_SAMPLE_TYPE, s_cpu, s_ns);

	for (size_t i = 0; i < n; i++) {
		uint64_t ids[MAX_FRAMES];
		unsigned int nf = 0;
		const char *s = lines[i].stack;

		while (*s && nf < MAX_FRAMES) {
			const char *semi = strchr(s, ';');
			size_t l = semi ? (size_t)(semi - s) : strlen(s);
			struct ftab_ent *e = ftab__find(&funcs, 0, 0, s, l);

			if (!e) {
				int64_t name = str_id(&st, s, l);

				if (name < 0 || ftab__add(&funcs, 0, 0, s, l, ++nfuncs)) {
					err = -ENOMEM;
					goto out;
				}
				/* one function and one location per distinct frame, same id */
				pb_uint(&tmp, FUNCTION_ID, nfuncs);
				pb_uint(&tmp, FUNCTION_NAME, (uint64_t)name);
				pb_uint(&tmp, FUNCTION_SYSTEM_NAME, (uint64_t)name);
				pb_msg(&body, PROFILE_FUNCTION, &tmp);
				pb_uint(&tmp2, LINE_FUNCTION_ID, nfuncs);
				pb_uint(&tmp, LOCATION_ID, nfuncs);
				pb_msg(&tmp, LOCATION_LINE, &tmp2);
				pb_msg(&body, PROFILE_LOCATION, &tmp);
				ids[nf++] = nfuncs;
			} else {
				ids[nf++] = e->value;
			}
			if (!semi)
				break;
			s = semi + 1;
		}
		/* location ids leaf first, packed */
		for (unsigned int j = nf; j-- > 0;)
			pb_varint(&tmp2, ids[j]);
		pb_msg(&tmp, SAMPLE_LOCATION_ID, &tmp2);
		pb_varint(&tmp2, (uint64_t)((int64_t)lines[i].value * opts->value_scale));
		if (opts->with_cpu_ns)
			pb_varint(&tmp2, (uint64_t)((int64_t)lines[i].value * opts->period));
		pb_msg(&tmp, SAMPLE_VALUE, &tmp2);
		pb_msg(&body, PROFILE_SAMPLE, &tmp);
	}
	pb_uint(&body, PROFILE_TIME_NANOS, (uint64_t)opts->time_ns);
	pb_uint(&body, PROFILE_DURATION_NANOS, (uint64_t)opts->duration_ns);
	value_type(&body, &tmp, PROFILE_PERIOD_TYPE, p_type, p_unit);
	pb_uint(&body, PROFILE_PERIOD, (uint64_t)opts->period);
	pb_uint(&body, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)s_type);
	/* the string table last: every string is interned by now */
	sp_buf__reserve(&out, body.len + st.out.len);
	if (!out.err && !body.err && !st.out.err && !tmp.err && !tmp2.err) {
		memcpy(out.s, body.s, body.len);
		memcpy(out.s + body.len, st.out.s, st.out.len);
		out.len = body.len + st.out.len;
	}
	err = out.err ? out.err : body.err ? body.err : st.out.err ? st.out.err : tmp.err ? tmp.err : tmp2.err;
	if (!err) {
		*ret = (unsigned char *)out.s;
		*ret_len = out.len;
		out.s = NULL;
	}
out:
	free(out.s);
	free(body.s);
	free(tmp.s);
	free(tmp2.s);
	free(st.out.s);
	ftab__free(&st.idx);
	ftab__free(&funcs);
	free(lines);
	free(buf);
	return err;
}

static int gzip_buf(const unsigned char *in, size_t len, unsigned char **ret, size_t *ret_len)
{
	z_stream zs;
	unsigned char *out;
	size_t cap;
	int zr;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, (uLong)len) + 32;
	out = malloc(cap);
	if (!out) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	zr = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(out);
		return -EIO;
	}
	*ret = out;
	*ret_len = cap - zs.avail_out;
	return 0;
}

int sp_pprof__write(int dfd, const char *name, const char *folded, size_t len, const struct sp_pprof_opts *opts)
{
	unsigned char *pb = NULL, *gz = NULL;
	size_t pb_len = 0, gz_len = 0;
	int err = sp_pprof__encode(folded, len, opts, &pb, &pb_len);

	if (!err)
		err = gzip_buf(pb, pb_len, &gz, &gz_len);
	if (!err)
		err = probe_outdir__write(dfd, name, gz, gz_len);
	free(pb);
	free(gz);
	return err;
}

/* The sample and period types of each event, as pprof readers name them (SP_EV_MEM: page faults). */
static const struct sp_pprof_opts event_opts[SP_EV_NR] = {
	/* sample_type, sample_unit, value_scale, period_type, period_unit */
	[SP_EV_ONCPU] = {"samples", "count", 1, "cpu", "nanoseconds"},
	[SP_EV_OFFCPU] = {"offcpu", "nanoseconds", 1000, "offcpu", "nanoseconds"},
	[SP_EV_MEM] = {"page_faults", "count", 1, "page_faults", "count"},
	/* as Go's heap profile names allocated bytes, and bytes in use */
	[SP_EV_MEM_ALLOC] = {"alloc_space", "bytes", 1, "space", "bytes"},
	[SP_EV_MEM_LIVE] = {"inuse_space", "bytes", 1, "space", "bytes"},
};

void sp_pprof__event_opts(enum sp_event ev, unsigned int period_ms, struct sp_pprof_opts *po)
{
	const struct sp_pprof_opts *k = &event_opts[(unsigned int)ev < SP_EV_NR ? ev : SP_EV_MEM];

	po->sample_type = k->sample_type;
	po->sample_unit = k->sample_unit;
	po->value_scale = k->value_scale;
	po->period_type = k->period_type;
	po->period_unit = k->period_unit;
	po->period = 1;
	if (ev == SP_EV_ONCPU) { /* a second value: samples * period in nanoseconds */
		po->period = (int64_t)period_ms * 1000000;
		po->with_cpu_ns = 1;
	}
}
