/* test_tprof_aggr.c - tprofiling's aggregation (same-name events of a thread within min_aggr_dur are one:
 * first start, summed duration, count, first's attributes; a full table emits alone) and its renderings
 * (the seed's Resource and Attributes, a Chrome trace event, kernel path names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "unit.h"

#include "tprof.h"

#define MS 1000000ull

static struct tp_agg out[TP_AGGR_SLOTS + 16];
static unsigned int nout;

static void collect(void *ctx, const struct tp_agg *a)
{
	(void)ctx;
	if (nout < sizeof(out) / sizeof(out[0]))
		out[nout++] = *a;
}

static struct tp_event ev(uint32_t pid, uint16_t name, uint64_t start_ms, uint64_t dur_ms, int64_t arg)
{
	struct tp_event e;

	memset(&e, 0, sizeof(e));
	e.pid = pid;
	e.tgid = 100;
	e.name = name;
	e.type = name == TP_FUTEX ? TP_TYPE_LOCK : TP_TYPE_SCHED;
	e.start_ns = start_ms * MS;
	e.end_ns = (start_ms + dur_ms) * MS;
	e.arg = arg;
	snprintf(e.comm, sizeof(e.comm), "t%u", pid);
	return e;
}

GG_TEST(test_aggregate)
{
	struct tp_aggr *a = tp_aggr__new();
	struct tp_event e;

	nout = 0;
	/* thread 1: three futex events within 100 ms of the first, then one after */
	e = ev(1, TP_FUTEX, 1000, 10, 0);
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	e = ev(1, TP_FUTEX, 1030, 5, 1); /* arg differs: the first's is kept */
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	e = ev(2, TP_FUTEX, 1031, 7, 0); /* another thread */
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	e = ev(1, TP_NANOSLEEP, 1040, 20, 0); /* another name */
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	e = ev(1, TP_FUTEX, 1099, 40, 0);
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	assert_int_equal(nout, 0);
	assert_int_equal(tp_aggr__open(a), 3);
	e = ev(1, TP_FUTEX, 1100, 3, 0); /* 100 ms after the first start: a new one, the old one out */
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	assert_int_equal(nout, 1);
	assert_int_equal(out[0].pid, 1);
	assert_int_equal(out[0].count, 3);
	assert_int_equal(out[0].dur_ns, 55 * MS);
	assert_int_equal(out[0].start_ns, 1000 * MS);
	assert_int_equal(out[0].end_ns, 1139 * MS);
	assert_int_equal(out[0].arg, 0);
	assert_string_equal(out[0].comm, "t1");
	/* flush at 1145 ms: the aggregates started at 1031 and 1040 are over, the one at 1100 is not */
	tp_aggr__flush(a, 1145 * MS, 100 * MS, collect, NULL);
	assert_int_equal(nout, 3);
	assert_int_equal(tp_aggr__open(a), 1);
	tp_aggr__flush(a, UINT64_MAX, 100 * MS, collect, NULL);
	assert_int_equal(nout, 4);
	assert_int_equal(out[3].start_ns, 1100 * MS);
	assert_int_equal(out[3].count, 1);
	assert_int_equal(tp_aggr__open(a), 0);
	/* a bad event (ends before it starts, unknown name) is ignored */
	e = ev(1, TP_FUTEX, 2000, 1, 0);
	e.end_ns = e.start_ns - 1;
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	e = ev(1, TP_NAME_NR, 2000, 1, 0);
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	assert_int_equal(tp_aggr__open(a), 0);
	tp_aggr__free(a);
}

GG_TEST(test_full)
{
	struct tp_aggr *a = tp_aggr__new();

	nout = 0;
	for (uint32_t i = 0; i < TP_AGGR_SLOTS + 5; i++) {
		struct tp_event e = ev(1000 + i, TP_READ, 10, 1, 3);

		tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	}
	assert_int_equal(tp_aggr__open(a), TP_AGGR_SLOTS);
	assert_int_equal(nout, 5); /* reported alone, not lost */
	assert_int_equal(tp_aggr__overflow(a), 5);
	assert_int_equal(out[0].count, 1);
	tp_aggr__flush(a, UINT64_MAX, 100 * MS, collect, NULL);
	assert_int_equal(nout, TP_AGGR_SLOTS + 5);
	tp_aggr__free(a);
}

GG_TEST(test_render)
{
	struct tp_event e = ev(7, TP_FUTEX, 1000, 150, 0x80); /* FUTEX_WAIT | FUTEX_PRIVATE_FLAG */
	struct tp_render_info info = {.mono_to_wall_ns = 1795530968000ull * MS - 1000 * MS,
				      .proc_name = "app\"1",
				      .path = "",
				      .conn = "",
				      .stack = "main;worker;__lll_lock_wait;"};
	struct tp_aggr *a = tp_aggr__new();
	char buf[2048];
	struct tp_str s;
	cJSON *j, *v;

	nout = 0;
	tp_aggr__add(a, &e, 100 * MS, collect, NULL);
	tp_aggr__flush(a, UINT64_MAX, 100 * MS, collect, NULL);
	assert_int_equal(nout, 1);
	tp_str__init(&s, buf, sizeof(buf));
	tp_render__resource(&s, &out[0], &info);
	j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_int_equal(cJSON_GetObjectItem(j, "thread.pid")->valueint, 7);
	assert_int_equal(cJSON_GetObjectItem(j, "thread.tgid")->valueint, 100);
	assert_string_equal(cJSON_GetObjectItem(j, "proc.name")->valuestring, "app\"1");
	assert_null(cJSON_GetObjectItem(j, "host.id")); /* the supervisor's to fill */
	cJSON_Delete(j);

	tp_str__init(&s, buf, sizeof(buf));
	tp_render__attrs(&s, &out[0], &info);
	j = cJSON_Parse(buf);
	assert_non_null(j);
	v = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "values"), 0);
	assert_string_equal(cJSON_GetObjectItem(v, "event.name")->valuestring, "futex");
	assert_string_equal(cJSON_GetObjectItem(v, "event.type")->valuestring, "lock");
	assert_string_equal(cJSON_GetObjectItem(v, "futex.op")->valuestring, "wait");
	assert_string_equal(cJSON_GetObjectItem(v, "func.stack")->valuestring, "main;worker;__lll_lock_wait;");
	assert_true(cJSON_GetObjectItem(v, "start_time")->valuedouble == 1795530968000.0);
	assert_true(cJSON_GetObjectItem(v, "end_time")->valuedouble == 1795530968150.0);
	assert_true(cJSON_GetObjectItem(v, "duration")->valuedouble == 150.0);
	assert_int_equal(cJSON_GetObjectItem(v, "count")->valueint, 1);
	cJSON_Delete(j);

	tp_str__init(&s, buf, sizeof(buf));
	tp_render__trace_event(&s, &out[0], &info);
	j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "ph")->valuestring, "X");
	assert_true(cJSON_GetObjectItem(j, "ts")->valuedouble == 1795530968000000.0);
	assert_true(cJSON_GetObjectItem(j, "dur")->valuedouble == 150000.0);
	assert_int_equal(cJSON_GetObjectItem(j, "pid")->valueint, 100);
	assert_int_equal(cJSON_GetObjectItem(j, "tid")->valueint, 7);
	cJSON_Delete(j);
	tp_aggr__free(a);
}

GG_TEST(test_attrs_bounded)
{
	static char stack[4096];
	struct tp_event e = ev(7, TP_READ, 1000, 1, 3);
	struct tp_render_info info = {.path = "/a/very/long/path", .conn = "", .stack = stack};
	char buf[2048];
	struct tp_str s;
	cJSON *j;

	for (size_t i = 0; i + 1 < sizeof(stack); i++)
		stack[i] = i % 10 == 9 ? ';' : 'f';
	nout = 0;
	{
		struct tp_aggr *a = tp_aggr__new();

		tp_aggr__add(a, &e, 100 * MS, collect, NULL);
		tp_aggr__flush(a, UINT64_MAX, 100 * MS, collect, NULL);
		tp_aggr__free(a);
	}
	tp_str__init(&s, buf, sizeof(buf));
	tp_render__attrs(&s, &out[0], &info);
	assert_true(s.len <= 1000); /* the record's label bound: the stack is cut */
	j = cJSON_Parse(buf);
	assert_non_null(j);
	assert_string_equal(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "values"), 0), "file.path")->valuestring,
		"/a/very/long/path");
	cJSON_Delete(j);
}

GG_TEST(test_kernel_path)
{
	struct tp_agg a;
	char buf[256];

	memset(&a, 0, sizeof(a));
	strcpy(a.path[0], "fifo");
	strcpy(a.path[1], "tmp");
	strcpy(a.path[2], "/");
	tp_kernel_path(&a, buf, sizeof(buf));
	assert_string_equal(buf, "/tmp/fifo");
	for (int i = 0; i < TP_PATH_DEPTH; i++)
		strcpy(a.path[i], "d");
	tp_kernel_path(&a, buf, sizeof(buf));
	assert_string_equal(buf, ".../d/d/d/d/d/d/d/d"); /* deeper than the walk */
	memset(&a, 0, sizeof(a));
	tp_kernel_path(&a, buf, sizeof(buf));
	assert_string_equal(buf, "");
	assert_string_equal(tp_futex_op(1), "wake");
	assert_string_equal(tp_futex_op(0x80 | 0x100 | 6), "lock_pi");
	assert_null(tp_futex_op(100));
}
