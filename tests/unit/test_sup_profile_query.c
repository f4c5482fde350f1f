/* test_sup_profile_query.c - the flame graph query API over a hand-written profile store: tree shape,
 * values, [p]/[t] layers, time and process filters, ids, truncation, request parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "unit.h"

#include "../../supervisor/rest/profile_query.h"
#include "test_tmpdir.h"

static char g_dir[256];

static void write_file(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", g_dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Two on-cpu files (t = 1000..1010 s and 1010..1020 s), one off-cpu file, one mem-alloc file. */
static int setup(void **state)
{
	char path[512];

	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/pq-test-XXXXXX");
	assert_non_null(mkdtemp(g_dir));
	snprintf(path, sizeof(path), "%s/on-cpu", g_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/off-cpu", g_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/mem-alloc", g_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/mem-live", g_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	write_file(
		"on-cpu/0000001000000-0000001010000.prof",
		"# gala-gopher-profile v1 event=on-cpu unit=samples period_us=10000 from_ms=1000000 until_ms=1010000\n"
		"100\t100\tapp\tapp\t\tmain;[l] libc_fn;hot\t7\n"
		"100\t101\tapp\tworker\t\tstart;cold\t3\n"
		"200\t200\tother\tother\t\tmain;[k] do_syscall_64\t5\n"
		"garbage line\n");
	write_file(
		"on-cpu/0000001010000-0000001020000.prof",
		"# gala-gopher-profile v1 event=on-cpu unit=samples period_us=20000 from_ms=1010000 until_ms=1020000\n"
		"100\t100\tapp\tapp\t\tmain;[l] libc_fn;hot\t1\n");
	write_file("off-cpu/0000001000000-0000001010000.prof",
		   "# gala-gopher-profile v1 event=off-cpu unit=us period_us=0 from_ms=1000000 until_ms=1010000\n"
		   "100\t102\tapp\tsleeper\t\tsleeper_thread;[k] schedule\t4000000\n");
	write_file("mem-alloc/0000001000000-0000001010000.prof",
		   "# gala-gopher-profile v1 event=mem-alloc unit=bytes period_us=0 from_ms=1000000 until_ms=1010000\n"
		   "100\t100\tapp\tapp\t\tmain;alloc_here;[l] malloc\t4096000\n"
		   "100\t100\tapp\tapp\t\tmain;alloc_here;[l] calloc\t1000\n");
	/* mem-live: snapshots of what was held at each file's end (a leak growing 1000 -> 3000 bytes) */
	write_file("mem-live/0000001000000-0000001010000.prof",
		   "# gala-gopher-profile v1 event=mem-live unit=bytes period_us=0 from_ms=1000000 until_ms=1010000\n"
		   "100\t100\tapp\tapp\t\tmain;leak;[l] malloc\t1000\n"
		   "100\t100\tapp\tapp\t\tmain;map_here;[l] mmap\t65536\n");
	write_file("mem-live/0000001010000-0000001020000.prof",
		   "# gala-gopher-profile v1 event=mem-live unit=bytes period_us=0 from_ms=1010000 until_ms=1020000\n"
		   "100\t100\tapp\tapp\t\tmain;leak;[l] malloc\t3000\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(rm_tree(g_dir), 0);
	return 0;
}

/* The reply to r, parsed; it says SUCCESS. */
static cJSON *query_req(const struct pq_request *r)
{
	char *json = NULL;
	size_t len = 0;
	cJSON *o;

	assert_int_equal(profile_query__run(g_dir, r, &json, &len), 0);
	assert_int_equal(strlen(json), len);
	o = cJSON_Parse(json);
	free(json);
	assert_non_null(o);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "OPT_STATUS")), "SUCCESS");
	return o;
}

static cJSON *query(const char *app, int event, int64_t from, int64_t until, unsigned int max_nodes)
{
	struct pq_request r = {.event = event, .time_start = from, .time_end = until, .max_nodes = max_nodes};

	snprintf(r.app, sizeof(r.app), "%s", app);
	return query_req(&r);
}

/* The node named name whose parent has id parent_id (NULL: any). */
static const cJSON *node(const cJSON *o, const char *name, const char *parent_id)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "result"))
	{
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "profile_location_str")), name) &&
		    (!parent_id || !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "parent_node_id")), parent_id)))
			return it;
	}
	return NULL;
}

static double num(const cJSON *n, const char *f)
{
	assert_non_null(n);
	return cJSON_GetNumberValue(cJSON_GetObjectItem(n, f));
}

static const char *id(const cJSON *n)
{
	assert_non_null(n);
	return cJSON_GetStringValue(cJSON_GetObjectItem(n, "node_id"));
}

/* Every node's parent exists, ids are unique, and total = self + sum of the children's totals. */
static void check_tree(const cJSON *o)
{
	const cJSON *arr = cJSON_GetObjectItem(o, "result"), *a, *b;
	int roots = 0;

	cJSON_ArrayForEach(a, arr)
	{
		const char *pid = cJSON_GetStringValue(cJSON_GetObjectItem(a, "parent_node_id"));
		double sum = num(a, "self_value");
		int parent_found = !strcmp(pid, "-1");

		roots += !strcmp(pid, "-1");
		cJSON_ArrayForEach(b, arr)
		{
			if (a != b)
				assert_string_not_equal(id(a), id(b));
			if (!strcmp(id(b), pid) && a != b)
				parent_found = 1;
			if (a != b && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(b, "parent_node_id")), id(a)))
				sum += num(b, "total_value");
		}
		assert_true(parent_found);
		assert_true(sum == num(a, "total_value"));
	}
	assert_int_equal(roots, 1);
}

GG_TEST(test_process_tree)
{
	cJSON *o = query("app", 0, 1000, 1019, 0);
	const cJSON *root, *t_app, *t_worker, *main_, *lib, *hot;

	check_tree(o);
	root = node(o, "app", "-1");
	assert_string_equal(id(root), "");
	/* 7 samples at 10 ms + 3 at 10 ms + 1 at 20 ms, in microseconds; "other" is not there */
	assert_true(num(root, "total_value") == 7 * 10000 + 3 * 10000 + 1 * 20000);
	assert_null(node(o, "[t] other", NULL));
	t_app = node(o, "[t] app", "");
	t_worker = node(o, "[t] worker", "");
	assert_true(num(t_app, "total_value") == 90000);
	assert_true(num(t_worker, "total_value") == 30000);
	main_ = node(o, "main", id(t_app));
	lib = node(o, "[l] libc_fn", id(main_));
	hot = node(o, "hot", id(lib));
	assert_true(num(hot, "self_value") == 90000);
	assert_true(num(main_, "self_value") == 0);
	cJSON_Delete(o);
}

GG_TEST(test_total_layers)
{
	cJSON *o = query("Total", 0, 1000, 1009, 0);
	const cJSON *root, *p_app, *p_other;

	check_tree(o);
	root = node(o, "Total", "-1");
	assert_true(num(root, "total_value") == (7 + 3 + 5) * 10000); /* only the first file */
	p_app = node(o, "[p] app", "");
	p_other = node(o, "[p] other", "");
	assert_true(num(p_app, "total_value") == 100000);
	assert_true(num(p_other, "total_value") == 50000);
	assert_true(num(node(o, "[t] worker", id(p_app)), "self_value") == 30000);
	/* three layers only */
	assert_null(node(o, "main", NULL));
	cJSON_Delete(o);
}

static void fake_ident(void *ctx, uint32_t tgid, const char **ret_pod, const char **ret_container)
{
	(void)ctx;
	*ret_pod = tgid == 100 ? "web-0" : NULL;
	*ret_container = tgid == 100 ? "nginx" : "";
}

/* Total with the container resolver: app (tgid 100) under [Pod]web-0 / [Con]nginx; other (tgid 200, gone
 * for the resolver) under the container stackprobe wrote into the store. */
GG_TEST(test_total_container_layers)
{
	struct pq_request r = {.app = "Total", .event = 0, .time_start = 1000, .time_end = 1009, .ident = fake_ident};
	const cJSON *root, *pod, *con, *p_app;
	cJSON *o;

	o = query_req(&r);
	check_tree(o);
	root = node(o, "Total", "-1");
	pod = node(o, "[Pod]web-0", id(root));
	con = node(o, "[Con]nginx", id(pod));
	p_app = node(o, "[p] app", id(con));
	assert_true(num(pod, "total_value") == 100000 && num(con, "total_value") == 100000);
	assert_true(num(p_app, "total_value") == 100000);
	assert_non_null(node(o, "[p] other", id(root)));
	assert_null(node(o, "[p] app", id(root)));
	cJSON_Delete(o);

	/* a process the resolver does not know (gone): the container stackprobe stored at sampling time */
	write_file(
		"on-cpu/0000009000000-0000009010000.prof",
		"# gala-gopher-profile v1 event=on-cpu unit=samples period_us=10000 from_ms=9000000 until_ms=9010000\n"
		"300\t300\tgone\tgone\t[Pod]0123abcd-4567-89ab-cdef-0123456789ab;[Con]feedc0defeed\tmain\t2\n"
		"301\t301\tbad\tbad\t[Nope]x;;[Con]\tmain\t1\n");
	r.time_start = 9000;
	r.time_end = 9009;
	o = query_req(&r);
	check_tree(o);
	root = node(o, "Total", "-1");
	pod = node(o, "[Pod]0123abcd-4567-89ab-cdef-0123456789ab", id(root));
	con = node(o, "[Con]feedc0defeed", id(pod));
	assert_non_null(node(o, "[p] gone", id(con)));
	assert_non_null(node(o, "[p] bad", id(root))); /* nothing usable in its container column */
	cJSON_Delete(o);
}

GG_TEST(test_pid_and_event)
{
	cJSON *o = query("200", 0, 0, 5000, 0);
	cJSON *off;

	check_tree(o);
	assert_true(num(node(o, "200", "-1"), "total_value") == 50000);
	assert_non_null(node(o, "[k] do_syscall_64", NULL));
	cJSON_Delete(o);
	off = query("app", 1, 0, 5000, 0);
	check_tree(off);
	assert_true(num(node(off, "app", "-1"), "total_value") == 4000000); /* microseconds as stored */
	assert_true(num(node(off, "[k] schedule", NULL), "self_value") == 4000000);
	cJSON_Delete(off);
	/* nothing in range: just the root */
	o = query("app", 2, 0, 5000, 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "result")), 1);
	cJSON_Delete(o);
	/* mem-alloc: bytes as stored, not scaled like on-cpu samples */
	o = query("app", 3, 0, 5000, 0);
	check_tree(o);
	assert_true(num(node(o, "alloc_here", NULL), "total_value") == 4097000);
	assert_true(num(node(o, "[l] malloc", NULL), "self_value") == 4096000);
	cJSON_Delete(o);
}

/* mem-live: the newest snapshot in the range, never a sum of snapshots */
GG_TEST(test_mem_live_snapshot)
{
	const char *n[] = {"app", "event"}, *v[] = {"app", "mem-live"};
	struct pq_request r;
	char err[160];
	cJSON *o;

	assert_int_equal(profile_query__parse_args(2, n, v, 2000, &r, err, sizeof(err)), 0);
	assert_int_equal(r.event, 4);
	o = query("app", 4, 1000, 1019, 0);
	check_tree(o);
	assert_true(num(node(o, "app", "-1"), "total_value") == 3000); /* not 1000 + 3000 + 65536 */
	assert_true(num(node(o, "[l] malloc", NULL), "self_value") == 3000);
	assert_null(node(o, "map_here", NULL)); /* unmapped by then */
	cJSON_Delete(o);
	/* a range ending in the first period: that period's snapshot */
	o = query("app", 4, 1000, 1005, 0);
	check_tree(o);
	assert_true(num(node(o, "app", "-1"), "total_value") == 66536);
	assert_true(num(node(o, "map_here", NULL), "total_value") == 65536);
	cJSON_Delete(o);
	/* nothing in range: just the root */
	o = query("Total", 4, 0, 500, 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "result")), 1);
	cJSON_Delete(o);
}

GG_TEST(test_ids_stable)
{
	cJSON *a = query("app", 0, 1000, 1019, 0), *b = query("app", 0, 1000, 1009, 0);

	assert_string_equal(id(node(a, "hot", NULL)), id(node(b, "hot", NULL)));
	assert_int_equal(strlen(id(node(a, "hot", NULL))), 36);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

GG_TEST(test_truncation)
{
	cJSON *o = query("app", 0, 1000, 1019, 3);
	const cJSON *t_app;

	check_tree(o);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "result")), 3);
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(o, "DESCRIPTION")), "truncated"));
	/* nothing is lost: the deeper frames count as their deepest kept ancestor's own value */
	assert_true(num(node(o, "app", "-1"), "total_value") == 120000);
	t_app = node(o, "[t] app", "");
	assert_true(num(t_app, "total_value") == 90000);
	cJSON_Delete(o);
}

GG_TEST(test_parse_args)
{
	const char *n1[] = {"app", "event", "time_start", "time_end"}, *v1[] = {"Total", "off-cpu", "10", "20"};
	const char *n2[] = {"app"}, *v2[] = {"x"};
	const char *n3[] = {"app", "event"}, *v3[] = {"x", "gpu"};
	const char *n4[] = {"app", "event", "time_start", "time_end"}, *v4[] = {"x", "mem", "30", "20"};
	const char *n5[] = {"app", "event"}, *v5[] = {"x", "mem-alloc"}, *v6[] = {"x", "mem_alloc"};
	struct pq_request r;
	char err[160];

	assert_int_equal(profile_query__parse_args(4, n1, v1, 100, &r, err, sizeof(err)), 0);
	assert_string_equal(r.app, "Total");
	assert_int_equal(r.event, 1);
	assert_int_equal(r.time_start, 10);
	assert_int_equal(r.time_end, 20);
	assert_int_equal(profile_query__parse_args(1, n2, v2, 100, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "event"));
	assert_int_equal(profile_query__parse_args(2, n3, v3, 100, &r, err, sizeof(err)), -EINVAL);
	assert_int_equal(profile_query__parse_args(4, n4, v4, 100, &r, err, sizeof(err)), -EINVAL);
	assert_int_equal(profile_query__parse_args(2, n5, v5, 100, &r, err, sizeof(err)), 0);
	assert_int_equal(r.event, 3);
	assert_int_equal(profile_query__parse_args(2, n5, v6, 100, &r, err, sizeof(err)), 0);
	assert_int_equal(r.event, 3);
}

/* profile_id (autotrace's captures): the one file of that name, though another overlaps its time range;
 * app Total and event on-cpu by default; a malformed id refused. */
GG_TEST(test_profile_id)
{
	const char *n1[] = {"profile_id"}, *v1[] = {"0000001000000-0000001010000"};
	const char *n2[] = {"profile_id", "app"}, *v2[] = {"0000001010000-0000001020000", "app"};
	const char *v3[] = {"1000-2000"}, *v4[] = {"0000001010000-0000001000000"};
	struct pq_request r;
	char err[160], *json = NULL;
	size_t len = 0;
	cJSON *o;

	assert_int_equal(profile_query__parse_args(1, n1, v1, 5000, &r, err, sizeof(err)), 0);
	assert_string_equal(r.app, "Total");
	assert_int_equal(r.event, 0);
	assert_string_equal(r.profile_id, "0000001000000-0000001010000");
	assert_int_equal(r.time_start, 1000);
	assert_int_equal(r.time_end, 1010);
	assert_int_equal(profile_query__parse_args(2, n2, v2, 5000, &r, err, sizeof(err)), 0);
	/* the range 1010..1020 s touches both files: only the second is read (hot: 1 sample x 20000 us) */
	assert_int_equal(profile_query__run(g_dir, &r, &json, &len), 0);
	o = cJSON_Parse(json);
	free(json);
	assert_non_null(o);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(node(o, "hot", NULL), "total_value")), 20000);
	assert_null(node(o, "cold", NULL));
	cJSON_Delete(o);
	assert_int_equal(profile_query__parse_args(1, n1, v3, 5000, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "profile_id"));
	assert_int_equal(profile_query__parse_args(1, n1, v4, 5000, &r, err, sizeof(err)), -EINVAL);
}

GG_TEST(test_parse_json_and_handle)
{
	const char *body = "{\"app_service\": \"app\", \"profile_language_type\": \"eBPF\", \"profile_event_type\": "
			   "\"on-cpu\", \"tag_filter\": \"\", \"time_start\": 1000, \"time_end\": 1019}";
	struct pq_request r;
	char err[160], *out = NULL;
	unsigned int status = 0;
	size_t len = 0;
	cJSON *o;

	assert_int_equal(profile_query__parse_json(body, strlen(body), 5000, &r, err, sizeof(err)), 0);
	assert_string_equal(r.app, "app");
	assert_int_equal(r.event, 0);
	assert_int_equal(profile_query__parse_json("[1]", 3, 5000, &r, err, sizeof(err)), -EINVAL);
	profile_query__handle(g_dir, "POST", body, strlen(body), 0, NULL, NULL, 5000, &status, &out, &len);
	assert_int_equal(status, 200);
	o = cJSON_Parse(out);
	assert_true(num(node(o, "app", "-1"), "total_value") == 120000);
	cJSON_Delete(o);
	free(out);
	profile_query__handle(g_dir, "DELETE", NULL, 0, 0, NULL, NULL, 5000, &status, &out, &len);
	assert_int_equal(status, 405);
	free(out);
	profile_query__handle(g_dir, "POST", "{", 1, 0, NULL, NULL, 5000, &status, &out, &len);
	assert_int_equal(status, 400);
	o = cJSON_Parse(out);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "OPT_STATUS")), "FAIL");
	cJSON_Delete(o);
	free(out);
	/* a store that does not exist yet: an empty graph, not an error */
	profile_query__handle("/nonexistent/store", "POST", body, strlen(body), 0, NULL, NULL, 5000, &status, &out,
			      &len);
	assert_int_equal(status, 200);
	free(out);
}

GG_TEST_GROUP(setup, teardown);
