/* test_sup_otel_logs.c - log records (tprofiling's OpenTelemetry log lines) into the seed's event JSON:
 * fields, host and container filled, malformed records refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "unit.h"

#include "../../supervisor/export/otel.h"
#include "test_sup_fixture.h"

static void container(void *ctx, uint32_t tgid, const char **ret_id, const char **ret_name)
{
	(void)ctx;
	*ret_id = tgid == 42 ? "abcdef0123456789" : "";
	*ret_name = tgid == 42 ? "web" : NULL;
}

/* Render line; the parsed JSON, or NULL with *ret_err. */
static cJSON *render(const char *line, int *ret_err)
{
	const struct gg_otel_opts o = {.machine_id = "mid", .hostname = "host", .container = container};
	struct rendering r;

	render_begin(&r, line);
	assert_true(gg_otel_logs__is_log_table(r.rec.table));
	*ret_err = gg_otel_logs__render(&o, &r.rec, &r.b);
	return render_end(&r, *ret_err);
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

GG_TEST(test_render)
{
	int err;
	cJSON *j = render(
		"|log|1795530968417|INFO|9|{\"thread.pid\":43,\"thread.tgid\":42,\"thread.comm\":\"w\","
		"\"container.id\":\"\"}|{\"values\":[{\"event.name\":\"futex\",\"duration\":150.25,\"count\":1}]}|b|",
		&err);
	const cJSON *res, *vals;

	assert_int_equal(err, 0);
	assert_int_equal((int64_t)cJSON_GetObjectItem(j, "Timestamp")->valuedouble, 1795530968417ll);
	assert_string_equal(str(j, "SeverityText"), "INFO");
	assert_int_equal(cJSON_GetObjectItem(j, "SeverityNumber")->valueint, 9);
	assert_string_equal(str(j, "Body"), "b");
	res = cJSON_GetObjectItem(j, "Resource");
	assert_int_equal(cJSON_GetObjectItem(res, "thread.pid")->valueint, 43);
	assert_string_equal(str(res, "host.id"), "mid");
	assert_string_equal(str(res, "host.name"), "host");
	assert_string_equal(str(res, "container.id"), "abcdef0123456789"); /* empty: filled */
	assert_string_equal(str(res, "container.name"), "web");
	vals = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "Attributes"), "values");
	assert_int_equal(cJSON_GetArraySize(vals), 1);
	assert_string_equal(str(cJSON_GetArrayItem(vals, 0), "event.name"), "futex");
	assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(vals, 0), "duration")->valuedouble == 150.25);
	cJSON_Delete(j);

	/* what the resource says is kept; no tgid, no container lookup */
	j = render("|log|1|WARN|13|{\"host.id\":\"other\",\"thread.pid\":1}|{}||", &err);
	assert_int_equal(err, 0);
	res = cJSON_GetObjectItem(j, "Resource");
	assert_string_equal(str(res, "host.id"), "other");
	assert_string_equal(str(res, "host.name"), "host");
	assert_null(cJSON_GetObjectItem(res, "container.id"));
	cJSON_Delete(j);
}

GG_TEST(test_refused)
{
	static const char *const bad[] = {
		"|log|12a|INFO|9|{}|{}||",		      /* timestamp not a number */
		"|log|1|INFO|9|[]|{}||",		      /* resource not an object */
		"|log|1|INFO|9|{}|{\"a\":1} x||",	      /* trailing garbage */
		"|log|1|INFO|9|{\"a\":|{}||",		      /* not JSON */
		"|log|1|INFO|9|{}|\"s\"||",		      /* attributes a string */
		"|log|1|INFO|9|{}|{\"a\":1}{\"b\":2}||",      /* two objects */
		"|log|1|INFO|100|{}|{}||",		      /* severity number of 3 digits */
		"|log|1|INFO|9|{\"thread.tgid\":1e300}|{}||", /* a tgid out of range: fine, not looked up */
	};
	int err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *j = render(bad[i], &err);

		if (i == sizeof(bad) / sizeof(bad[0]) - 1) {
			assert_int_equal(err, 0);
			cJSON_Delete(j);
			continue;
		}
		assert_int_equal(err, -EINVAL);
		assert_null(j);
	}
}

GG_TEST_GROUP_REG(NULL, gg_otel_logs__register);
