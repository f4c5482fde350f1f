/* test_l7_api.c - l7probe's api normalisation (paths, SQL statement type + table, client/server errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"

#include "../../probes/l7probe/l7_api.h"

static void norm_as(enum l7_proto proto, const char *raw, const char *want)
{
	char out[L7_API_MAX];

	l7_api__normalize(proto, raw, out, sizeof(out));
	if (strcmp(out, want))
		fail_msg("normalize(%d, \"%s\") = \"%s\", expected \"%s\"", proto, raw, out, want);
}

static void norm(const char *raw, const char *want)
{
	norm_as(L7_PROTO_HTTP, raw, want);
}

GG_TEST(test_paths)
{
	norm("GET /", "GET /");
	norm("GET /users/123", "GET /users/{id}");
	norm("GET /users/123/orders/456?x=1&y=2", "GET /users/{id}/orders/{id}");
	norm("DELETE /items/550e8400-e29b-41d4-a716-446655440000", "DELETE /items/{id}");
	norm("GET /blob/d41d8cd98f00b204e9800998ecf8427e", "GET /blob/{id}");
	norm("GET /obj/5f1a2b3c4d5e6f7a8b9c0d1e/x", "GET /obj/{id}/x");
	norm("GET /t/eyJhbGciOiJIUzI1NiJ9abcdef0123", "GET /t/{id}");
	norm("GET /day/2024-01-31", "GET /day/{id}");
	norm("GET /v1/api2/status", "GET /v1/api2/status");
	norm("GET /deadbeef/cafe", "GET /deadbeef/cafe"); /* words made of hex letters stay */
	norm("GET /static/app.js#top", "GET /static/app.js");
	norm("GET http://example.org:8080/a/42?q", "GET /a/{id}");
	norm("GET https://example.org", "GET /");
	norm("OPTIONS *", "OPTIONS *");
	norm("POST /helloworld.Greeter/SayHello", "POST /helloworld.Greeter/SayHello");
	norm("GET //a//7", "GET //a//{id}");
}

GG_TEST(test_not_paths)
{
	char out[L7_API_MAX];

	/* other protocols' apis are copied */
	norm_as(L7_PROTO_REDIS, "SET", "SET");
	norm_as(L7_PROTO_KAFKA, "Produce t1", "Produce t1");
	norm_as(L7_PROTO_MYSQL, "COM_QUERY SELECT t", "COM_QUERY SELECT t");
	norm_as(L7_PROTO_DNS, "A 12345.example.org", "A 12345.example.org");
	norm_as(L7_PROTO_MONGO, "find\x01x", "find_x");
	/* a protocol added later that reports "METHOD /path" (HTTP/2, gRPC) is normalised the same */
	norm_as(L7_PROTO__COUNT, "GET /a/1", "GET /a/{id}");
	/* cut to the buffer */
	l7_api__normalize(L7_PROTO_HTTP, "GET /abcdefgh/12", out, 10);
	assert_string_equal(out, "GET /abcd");
	l7_api__normalize(L7_PROTO_HTTP, NULL, out, sizeof(out));
	assert_string_equal(out, "");
}

static void sql(const char *text, const char *want)
{
	char out[L7_API_MAX];

	l7_api__sql(out, sizeof(out), (const uint8_t *)text, strlen(text));
	if (strcmp(out, want))
		fail_msg("sql(\"%s\") = \"%s\", expected \"%s\"", text, out, want);
}

GG_TEST(test_sql)
{
	char out[8];

	sql("SELECT 1", "SELECT");
	sql("select a, b from users where id = 1", "SELECT users");
	sql("SELECT (SELECT max(x) FROM t2) FROM public.t1", "SELECT public.t1");
	sql("SELECT 'from x' AS s FROM \"Quoted\" q", "SELECT \"Quoted\"");
	sql("/* c */ -- line\n  insert into `db`.`t` values (1)", "INSERT `db`.`t`");
	sql("INSERT IGNORE INTO t2 VALUES (1)", "INSERT t2");
	sql("update accounts set a = 1", "UPDATE accounts");
	sql("UPDATE ONLY t SET a = 1", "UPDATE t");
	sql("DELETE FROM t3 WHERE 1", "DELETE t3");
	sql("CREATE TABLE IF NOT EXISTS t4 (a int)", "CREATE t4");
	sql("CREATE UNLOGGED TABLE t5 (a int)", "CREATE t5");
	sql("CREATE DATABASE IF NOT EXISTS d1", "CREATE");
	sql("DROP TABLE t6", "DROP t6");
	sql("TRUNCATE t7", "TRUNCATE t7");
	sql("TRUNCATE TABLE t8", "TRUNCATE t8");
	sql("BEGIN", "BEGIN");
	sql("SELECT * FROM", "SELECT");
	sql("", "");
	sql("42", "");
	l7_api__sql(out, sizeof(out), (const uint8_t *)"SELECT a FROM longname", 22);
	assert_string_equal(out, "SELECT");
}

GG_TEST(test_split_errors)
{
	char op[16];
	const char *target;

	l7_api__split("GET /a/{id}", op, sizeof(op), &target);
	assert_string_equal(op, "GET");
	assert_string_equal(target, "/a/{id}");
	l7_api__split("SET", op, sizeof(op), &target);
	assert_string_equal(op, "SET");
	assert_string_equal(target, "");
	l7_api__split("AVERYLONGOPERATIONNAME x", op, 5, &target);
	assert_string_equal(op, "AVER");
	assert_true(l7_api__client_error(L7_PROTO_HTTP, "GET /x", 404));
	assert_false(l7_api__client_error(L7_PROTO_HTTP, "GET /x", 503));
	assert_true(l7_api__client_error(L7_PROTO_DNS, "A x.org", 3));
	assert_false(l7_api__client_error(L7_PROTO_DNS, "A x.org", 2));
	assert_false(l7_api__client_error(L7_PROTO_REDIS, "GET", 0));
}
