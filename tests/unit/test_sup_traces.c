/* test_sup_traces.c - trace_span records into OpenTelemetry JSON spans: ids, times, kind, status,
 * semantic-convention attributes per protocol, container id, malformed records refused. */
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

static void cid(void *ctx, uint32_t tgid, const char **ret_id, const char **ret_name)
{
	(void)ctx;
	*ret_id = tgid == 42 ? "abcdef0123456789" : "";
	*ret_name = tgid == 42 ? "web-1" : NULL;
}

/* Render line; the parsed JSON, or NULL with *ret_err. */
static cJSON *render(const char *line, int *ret_err)
{
	const struct gg_otel_opts o = {.machine_id = "mid", .hostname = "host", .version = "1.2.3", .container = cid};
	struct rendering r;

	render_begin(&r, line);
	assert_true(gg_traces__is_trace_table(r.rec.table));
	*ret_err = gg_traces__render(&o, &r.rec, &r.b);
	return render_end(&r, *ret_err);
}

/* The value of attribute key in an OTel attribute list (as a string, int or bool rendered). */
static const char *attr(const cJSON *list, const char *key)
{
	static char buf[64];
	const cJSON *a;

	cJSON_ArrayForEach(a, list)
	{
		const cJSON *v;

		if (strcmp(cJSON_GetObjectItem(a, "key")->valuestring, key))
			continue;
		v = cJSON_GetObjectItem(a, "value");
		if (cJSON_GetObjectItem(v, "stringValue"))
			return cJSON_GetObjectItem(v, "stringValue")->valuestring;
		if (cJSON_GetObjectItem(v, "intValue"))
			return cJSON_GetObjectItem(v, "intValue")->valuestring;
		snprintf(buf, sizeof(buf), "%s", cJSON_IsTrue(cJSON_GetObjectItem(v, "boolValue")) ? "true" : "false");
		return buf;
	}
	return NULL;
}

static const cJSON *span_of(const cJSON *j, const cJSON **ret_res)
{
	const cJSON *rs = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "resourceSpans"), 0);
	const cJSON *ss = cJSON_GetArrayItem(cJSON_GetObjectItem(rs, "scopeSpans"), 0);

	*ret_res = cJSON_GetObjectItem(cJSON_GetObjectItem(rs, "resource"), "attributes");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(ss, "scope"), "version")->valuestring, "1.2.3");
	return cJSON_GetArrayItem(cJSON_GetObjectItem(ss, "spans"), 0);
}

/* The attributes a span must carry: {key, value} pairs ended by {NULL}; a NULL value: must not carry key. */
static void expect_attrs(const char *what, const cJSON *at, const char *const want[][2])
{
	for (size_t i = 0; want[i][0]; i++) {
		const char *key = want[i][0], *val = want[i][1], *got = attr(at, key);

		if (val ? !got || strcmp(got, val) : got != NULL)
			fail_msg("%s: %s is %s, want %s", what, key, got ? got : "(none)", val ? val : "(none)");
	}
}

/* A trace_span line and the attributes its span must carry (at most 5: the rest of attrs ends the list). */
struct span_attrs_case {
	const char *line;
	const char *const attrs[6][2];
};

static void expect_span_attrs(const struct span_attrs_case *c)
{
	const cJSON *res;
	int err;
	cJSON *j = render(c->line, &err);

	assert_non_null(j);
	expect_attrs(c->line, cJSON_GetObjectItem(span_of(j, &res), "attributes"), c->attrs);
	cJSON_Delete(j);
}

GG_TEST(test_http_server)
{
	static const char *const want[][2] = {
		{"http.request.method", "GET"},
		{"http.route", "/a/{id}"},
		{"url.path", "/a/1"},
		{"http.response.status_code", "404"},
		{"client.address", "127.0.0.1"},
		{"client.port", "5000"},
		{"server.port", "80"},
		{"network.transport", "tcp"},
		{"error.type", "404"},
		{"gala_gopher.ssl", "false"},
		{NULL},
	};
	const cJSON *res, *sp;
	int err;
	cJSON *j = render("|trace_span|0123456789abcdef0123456789abcdef|0123456789abcdef||server|1795312419025000000|"
			  "1795312419026000000|42|http|GET /a/{id}|GET /a/1?x|404|1|127.0.0.1|5000|127.0.0.2|80|"
			  "tcp_server|server|0|10|20|",
			  &err);

	sp = span_of(j, &res);
	assert_string_equal(attr(res, "process.pid"), "42");
	assert_string_equal(attr(res, "container.id"), "abcdef0123456789");
	assert_string_equal(attr(res, "container.name"), "web-1");
	assert_string_equal(attr(res, "host.name"), "host");
	assert_string_equal(cJSON_GetObjectItem(sp, "traceId")->valuestring, "0123456789abcdef0123456789abcdef");
	assert_string_equal(cJSON_GetObjectItem(sp, "spanId")->valuestring, "0123456789abcdef");
	assert_string_equal(cJSON_GetObjectItem(sp, "name")->valuestring, "GET /a/{id}");
	assert_int_equal(cJSON_GetObjectItem(sp, "kind")->valueint, 2);
	assert_string_equal(cJSON_GetObjectItem(sp, "startTimeUnixNano")->valuestring, "1795312419025000000");
	assert_string_equal(cJSON_GetObjectItem(sp, "endTimeUnixNano")->valuestring, "1795312419026000000");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(sp, "status"), "code")->valueint, 2);
	expect_attrs("http server span", cJSON_GetObjectItem(sp, "attributes"), want);
	cJSON_Delete(j);
}

GG_TEST(test_db_and_others)
{
	static const struct span_attrs_case others[] = {
		{"|trace_span|0123456789abcdef0123456789abcdef|0123456789abcdef||client|1|2|7|kafka|Produce t1|"
		 "Produce t1|3|1|1.2.3.4|1|1.2.3.4|9092|tcp_client|client|0|1|2|",
		 {{"messaging.system", "kafka"},
		  {"messaging.destination.name", "t1"},
		  {"messaging.kafka.error_code", "3"}}},
		{"|trace_span|0123456789abcdef0123456789abcdef|0123456789abcdef||client|1|2|7|rocketmq|"
		 "SEND_MESSAGE_V2 t1|SEND_MESSAGE_V2 t1|17|1|1.2.3.4|1|1.2.3.4|10911|tcp_client|client|0|1|2|",
		 {{"messaging.system", "rocketmq"},
		  {"messaging.operation.name", "SEND_MESSAGE_V2"},
		  {"messaging.destination.name", "t1"},
		  {"messaging.kafka.error_code", NULL},
		  {"error.type", "17"}}},
		{"|trace_span|0123456789abcdef0123456789abcdef|0123456789abcdef||server|1|2|7|grpc|"
		 "POST /helloworld.Greeter/SayHello|POST /helloworld.Greeter/SayHello|0|0|1.2.3.4|1|1.2.3.4|50051|"
		 "tcp_server|server|0|1|2|",
		 {{"rpc.system", "grpc"}, {"rpc.service", "helloworld.Greeter"}, {"rpc.method", "SayHello"}}},
	};
	static const char *const want[][2] = {
		{"db.system.name", "mysql"},
		{"db.operation.name", "SELECT"},
		{"db.collection.name", "users"},
		{"gala_gopher.ssl", "true"},
		{"http.request.method", NULL}, /* a database span has no HTTP attributes */
		{NULL},
	};
	const cJSON *res, *sp;
	int err;
	cJSON *j =
		render("|trace_span|0123456789abcdef0123456789abcdef|0123456789abcdef||client|1|2|7|mysql|"
		       "COM_QUERY SELECT users|COM_QUERY SELECT users|0|0|::1|5000|::1|3306|tcp_client|client|1|1|2|",
		       &err);

	sp = span_of(j, &res);
	assert_null(attr(res, "container.id"));
	assert_null(attr(res, "container.name"));
	assert_int_equal(cJSON_GetObjectItem(sp, "kind")->valueint, 3);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(sp, "status"), "code")->valueint, 0);
	expect_attrs("mysql client span", cJSON_GetObjectItem(sp, "attributes"), want);
	cJSON_Delete(j);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		expect_span_attrs(&others[i]);
}

/* A span that joined the request's trace: parentSpanId. */
GG_TEST(test_parent)
{
	const cJSON *res, *sp;
	int err;
	cJSON *j = render("|trace_span|4bf92f3577b34da6a3ce929d0e0e4736|0123456789abcdef|00f067aa0ba902b7|server|1|2|7|"
			  "http|GET /|GET /|200|0|1.2.3.4|1|1.2.3.4|80|tcp_server|server|0|1|2|",
			  &err);

	sp = span_of(j, &res);
	assert_string_equal(cJSON_GetObjectItem(sp, "traceId")->valuestring, "4bf92f3577b34da6a3ce929d0e0e4736");
	assert_string_equal(cJSON_GetObjectItem(sp, "parentSpanId")->valuestring, "00f067aa0ba902b7");
	cJSON_Delete(j);
	j = render("|trace_span|4bf92f3577b34da6a3ce929d0e0e4736|0123456789abcdef||server|1|2|7|http|GET /|GET /|200|0|"
		   "1.2.3.4|1|1.2.3.4|80|tcp_server|server|0|1|2|",
		   &err);
	assert_null(cJSON_GetObjectItem(span_of(j, &res), "parentSpanId"));
	cJSON_Delete(j);
	assert_null(render("|trace_span|4bf92f3577b34da6a3ce929d0e0e4736|0123456789abcdef|00f067aa0ba9|server|1|2|7|"
			   "http|GET /|GET /|200|0|1.2.3.4|1|1.2.3.4|80|tcp_server|server|0|1|2|",
			   &err));
	assert_int_equal(err, -EINVAL);
}

GG_TEST(test_malformed)
{
	int err;

	assert_null(
		render("|trace_span|0123|0123456789abcdef||server|1|2|7|http|x|x|0|0|a|1|b|2|udp|server|0|1|2|", &err));
	assert_int_equal(err, -EINVAL);
	assert_null(render("|trace_span|0123456789abcdef0123456789abcdeX|0123456789abcdef||server|1|2|7|http|x|x|0|0|a|"
			   "1|b|2|udp|server|0|1|2|",
			   &err));
	assert_int_equal(err, -EINVAL);
	assert_null(render("|trace_span|0123456789abcdef0123456789abcdef|0123456789abcdef||server|1|2|x7|http|x|x|0|0|"
			   "a|1|b|2|udp|server|0|1|2|",
			   &err));
	assert_int_equal(err, -EINVAL);
}

GG_TEST_GROUP_REG(NULL, gg_traces__register);
