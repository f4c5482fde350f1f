/* test_ctrl_msg.c - the one control message (ipc/ctrl_msg.c: scope, encode/decode), the table-driven
 * parameter parser (ipc/contract.c) and applying a message by a probe's contract (probes/lib). */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "contract.h"
#include "ctrl_msg.h"
#include "probe_conf.h"

/* ---- scope ------------------------------------------------------------------------------------------ */

GG_TEST(test_scope_json)
{
	static struct gg_scope s;
	cJSON *j;

	j = cJSON_Parse("{\"all\": false, \"pids\": [1, 22, 22, \"333\"], \"cgroup_ids\": [4294967297]}");
	assert_int_equal(gg_scope__from_json(j, &s), 0);
	assert_int_equal(s.all, 0);
	assert_int_equal(s.ntgid, 3); /* duplicates folded */
	assert_int_equal(s.tgid[2], 333);
	assert_int_equal(s.ncgrp, 1);
	assert_true(s.cgrp[0] == 4294967297ull);
	assert_int_equal(s.truncated, 0);
	cJSON_Delete(j);

	j = cJSON_Parse("{\"all\": true, \"pids\": [5], \"truncated\": true}");
	assert_int_equal(gg_scope__from_json(j, &s), 0);
	assert_int_equal(s.all, 1);
	assert_int_equal(s.truncated, 1);
	cJSON_Delete(j);

	j = cJSON_Parse("{}"); /* no sets and no "all": everything */
	assert_int_equal(gg_scope__from_json(j, &s), 0);
	assert_int_equal(s.all, 1);
	cJSON_Delete(j);

	s.ntgid = 99;
	for (const char **bad =
		     (const char *[]){"[]", "{\"all\": 1}", "{\"pids\": 5}", "{\"pids\": [0]}", "{\"pids\": [1.5]}",
				      "{\"pids\": [-3]}", "{\"pids\": [\"x\"]}", "{\"cgroup_ids\": [{}]}",
				      "{\"pids\": [4294967296]}", "{\"truncated\": 1}", "{\"pids\": [\"+5\"]}", NULL};
	     *bad; bad++) {
		j = cJSON_Parse(*bad);
		assert_non_null(j);
		assert_int_equal(gg_scope__from_json(j, &s), -EINVAL);
		cJSON_Delete(j);
	}
	assert_int_equal(s.ntgid, 99); /* untouched on failure */
}

GG_TEST(test_scope_too_big)
{
	static struct gg_scope s;
	cJSON *j = cJSON_CreateObject(), *pids = cJSON_AddArrayToObject(j, "pids");

	for (int i = 1; i <= GG_SCOPE_TGID_MAX + 1; i++)
		cJSON_AddItemToArray(pids, cJSON_CreateNumber(i));
	assert_int_equal(gg_scope__from_json(j, &s), -E2BIG);
	cJSON_Delete(j);
}

GG_TEST(test_scope_equal_roundtrip)
{
	static struct gg_scope a, b;
	cJSON *j;

	gg_scope__init(&a);
	a.all = 0;
	a.ntgid = 2;
	a.tgid[0] = 7;
	a.tgid[1] = 9;
	a.ncgrp = 1;
	a.cgrp[0] = 1234567;
	a.truncated = 1;
	j = gg_scope__to_json(&a);
	assert_non_null(j);
	assert_int_equal(gg_scope__from_json(j, &b), 0);
	cJSON_Delete(j);
	assert_true(gg_scope__equal(&a, &b));
	b.tgid[1] = 10;
	assert_false(gg_scope__equal(&a, &b));
}

/* ---- the message ------------------------------------------------------------------------------------ */

GG_TEST(test_msg_roundtrip)
{
	static struct gg_ctrl_msg m, d;
	char *txt = NULL;

	gg_ctrl_msg__init(&m);
	assert_int_equal(gg_ctrl_msg__encode(&m, &txt), 0);
	assert_string_equal(txt, "{}");
	free(txt);

	snprintf(m.subprobes[m.nsubprobes++], GG_CTRL_SUBPROBE_LEN, "cpu");
	snprintf(m.subprobes[m.nsubprobes++], GG_CTRL_SUBPROBE_LEN, "mem");
	m.params = cJSON_Parse("{\"report_period\":7}");
	m.has_scope = 1;
	m.scope.all = 0;
	m.scope.ntgid = 1;
	m.scope.tgid[0] = 42;
	assert_int_equal(gg_ctrl_msg__encode(&m, &txt), 0);
	/* the wire text the probes have always received */
	assert_string_equal(txt, "{\"probe\":[\"cpu\",\"mem\"],\"params\":{\"report_period\":7},"
				 "\"scope\":{\"all\":false,\"pids\":[42],\"cgroup_ids\":[]}}");
	assert_int_equal(gg_ctrl_msg__decode(txt, &d, NULL, 0), 0);
	free(txt);
	assert_int_equal(d.nsubprobes, 2);
	assert_string_equal(d.subprobes[1], "mem");
	assert_int_equal(cJSON_GetObjectItem(d.params, "report_period")->valueint, 7);
	assert_true(d.has_scope);
	assert_true(gg_scope__equal(&d.scope, &m.scope));
	gg_ctrl_msg__fini(&d);
	gg_ctrl_msg__fini(&m);
	gg_ctrl_msg__fini(NULL);
}

GG_TEST(test_msg_decode)
{
	static struct gg_ctrl_msg d;
	char err[128];

	/* the REST body's cmd.probe is taken too; an empty or null list names nothing */
	assert_int_equal(gg_ctrl_msg__decode("{\"cmd\": {\"probe\": [\"b\"]}}", &d, err, sizeof(err)), 0);
	assert_int_equal(d.nsubprobes, 1);
	gg_ctrl_msg__fini(&d);
	assert_int_equal(
		gg_ctrl_msg__decode("{\"probe\": [], \"params\": null, \"scope\": null}", &d, err, sizeof(err)), 0);
	assert_int_equal(d.nsubprobes, 0);
	assert_null(d.params);
	assert_false(d.has_scope);
	gg_ctrl_msg__fini(&d);

	for (const char **bad =
		     (const char *[]){"", "[]", "{", "{\"probe\": \"a\"}", "{\"probe\": [\"a\", 3]}",
				      "{\"params\": [1]}", "{\"params\": 5}", "{\"scope\": {\"pids\": 5}}", NULL};
	     *bad; bad++) {
		err[0] = '\0';
		assert_int_equal(gg_ctrl_msg__decode(*bad, &d, err, sizeof(err)), -EINVAL);
		assert_true(err[0] != '\0');
		gg_ctrl_msg__fini(&d);
	}
	assert_int_equal(gg_ctrl_msg__decode(NULL, &d, NULL, 0), -EINVAL);
	gg_ctrl_msg__fini(&d);
}

/* ---- the parameter parser ----------------------------------------------------------------------------- */

struct conf {
	unsigned int period;
	unsigned int thr;
	int flag;
	char dir[16];
	char protos[16];
	char env[12];
	unsigned int seen;
};

static const char *const protos[] = {"http", "dns", "redis", NULL};
static const char *const envs[] = {"node", "container", NULL};

static const struct gg_param_spec specs[] = {
	{.name = "period",
	 .type = GG_PT_INT,
	 .def = 60,
	 .min = 5,
	 .max = 600,
	 .cli_def = 5,
	 .cli_min = 1,
	 .cli_max = 600,
	 GG_STORE(struct conf, period)},
	{.name = "thr", .type = GG_PT_INT, .min = 10, .max = 100, .zero_off = 1, GG_STORE(struct conf, thr)},
	{.name = "flag", .type = GG_PT_BOOL, .max = 1, GG_STORE(struct conf, flag)},
	{.name = "dir", .type = GG_PT_OUT_DIR, .def_str = "/var/x", GG_STORE(struct conf, dir)},
	{.name = "protos",
	 .type = GG_PT_ENUM_LIST,
	 .def_str = "http",
	 .choices = protos,
	 GG_STORE(struct conf, protos)},
	{.name = "env", .type = GG_PT_ENUM, .def_str = "node", .choices = envs, GG_STORE(struct conf, env)},
	{.name = "rest_only", .type = GG_PT_INT, .min = 0, .max = 1, GG_NOSTORE},
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static int parse(const char *json, struct conf *c)
{
	cJSON *j = json ? cJSON_Parse(json) : NULL;
	char err[128] = "";
	int rc;

	if (json)
		assert_non_null(j);
	rc = gg_params__parse(specs, NSPECS, j, c, err, sizeof(err));
	assert_true(rc == 0 || err[0]);
	cJSON_Delete(j);
	return rc;
}

GG_TEST(test_params_defaults_and_absent)
{
	struct conf c, before;

	memset(&c, 0x55, sizeof(c));
	gg_params__defaults(specs, NSPECS, &c);
	assert_int_equal(c.period, 5); /* the binary's default, not REST's */
	assert_int_equal(c.thr, 0);
	assert_int_equal(c.flag, 0);
	assert_string_equal(c.dir, "/var/x");
	assert_string_equal(c.protos, "http");
	before = c;
	/* absent params, null params, absent members, null members, unknown members: nothing changes */
	assert_int_equal(parse(NULL, &c), 0);
	assert_int_equal(parse("null", &c), 0);
	assert_int_equal(parse("{}", &c), 0);
	assert_int_equal(parse("{\"period\": null, \"dir\": null, \"flag\": null, \"zzz\": [1]}", &c), 0);
	assert_int_equal(parse("{\"rest_only\": 7}", &c), 0); /* not stored: not checked either */
	assert_memory_equal(&c, &before, sizeof(c));
}

/* c after the params json were applied to it (they must be accepted). */
static const struct conf *parsed(const char *json, struct conf *c)
{
	assert_int_equal(parse(json, c), 0);
	return c;
}

GG_TEST(test_params_values)
{
	struct conf c;

	gg_params__defaults(specs, NSPECS, &c);
	/* integers: JSON integers or decimal strings, in the binary's range (1..600 here, not REST's 5) */
	assert_int_equal(parsed("{\"period\": 1}", &c)->period, 1);
	assert_int_equal(parsed("{\"period\": \"600\"}", &c)->period, 600);
	assert_int_equal(parsed("{\"period\": 7.0}", &c)->period, 7); /* a JSON number without a fraction */
	assert_int_equal(parse("{\"thr\": 0}", &c), 0);		      /* zero_off */
	assert_int_equal(parsed("{\"thr\": 50}", &c)->thr, 50);
	/* booleans: true/false or 0/1 */
	assert_int_equal(parsed("{\"flag\": true}", &c)->flag, 1);
	assert_int_equal(parsed("{\"flag\": 0}", &c)->flag, 0);
	assert_int_equal(parsed("{\"flag\": \"1\"}", &c)->flag, 1);
	/* strings, enums, enum lists (a single string is a list of one) */
	assert_string_equal(parsed("{\"dir\": \"/tmp/a\"}", &c)->dir, "/tmp/a");
	assert_string_equal(parsed("{\"dir\": \"\"}", &c)->dir, "");
	assert_string_equal(parsed("{\"protos\": [\"dns\", \"redis\"]}", &c)->protos, "dns,redis");
	assert_string_equal(parsed("{\"protos\": \"http\"}", &c)->protos, "http");
	assert_string_equal(parsed("{\"protos\": []}", &c)->protos, "");
	assert_string_equal(parsed("{\"env\": \"container\"}", &c)->env, "container");
}

GG_TEST(test_params_refused)
{
	struct conf c, before;

	gg_params__defaults(specs, NSPECS, &c);
	before = c;
	for (const char **bad =
		     (const char *[]){
			     "[]", "5", "\"x\"", "{\"period\": 0}", "{\"period\": 601}", "{\"period\": 5.5}",
			     "{\"period\": -1}", "{\"period\": \"\"}", "{\"period\": \" 5\"}", "{\"period\": \"+5\"}",
			     "{\"period\": \"5s\"}", "{\"period\": \"99999999999999999999\"}", "{\"period\": true}",
			     "{\"period\": [5]}", "{\"thr\": 5}", "{\"thr\": 101}", "{\"flag\": 2}",
			     "{\"flag\": \"yes\"}", "{\"dir\": 5}", "{\"dir\": \"0123456789abcdef\"}",
			     "{\"dir\": \"a\\nb\"}", "{\"protos\": [\"gopher\"]}", "{\"protos\": [\"http\", 1]}",
			     "{\"protos\": [\"http\", \"dns\", \"redis\", \"http\"]}", "{\"env\": \"moon\"}",
			     /* all or nothing: a good member before a bad one is not stored either */
			     "{\"period\": 9, \"flag\": 1, \"thr\": 3}", NULL};
	     *bad; bad++) {
		if (parse(*bad, &c) != -EINVAL)
			fail_msg("accepted: %s", *bad);
		assert_memory_equal(&c, &before, sizeof(c));
	}
}

/* ---- applying a message by a contract ----------------------------------------------------------------- */

static const struct gg_subprobe subs[] = {{"a", 1, 1, 0}, {"b", 2, 0, 0}, {"later", 0, 0, 1}};
static const struct gg_contract contract = {
	.rest_name = "t",
	.bin = "tbin",
	.subprobes = subs,
	.nsubprobes = 3,
	.params = specs,
	.nparams = NSPECS,
};

GG_TEST(test_contract_apply)
{
	static struct gg_ctrl_msg m;
	struct conf c;
	unsigned int bits = 99;

	assert_int_equal(gg_contract__default_subprobes(&contract), 1);
	assert_ptr_equal(gg_contract__param(&contract, "thr"), &specs[1]);
	assert_null(gg_contract__param(&contract, "nope"));
	gg_params__defaults(specs, NSPECS, &c);

	assert_int_equal(gg_ctrl_msg__decode("{\"params\": {\"period\": 9}}", &m, NULL, 0), 0);
	assert_int_equal(probe_conf__apply(&contract, &m, &c, &bits), 0); /* no sub-probes named */
	assert_int_equal(bits, 99);
	assert_int_equal(c.period, 9);
	gg_ctrl_msg__fini(&m);

	assert_int_equal(
		gg_ctrl_msg__decode("{\"probe\": [\"b\", \"later\"], \"params\": {\"period\": 10}}", &m, NULL, 0), 0);
	assert_int_equal(probe_conf__apply(&contract, &m, &c, &bits), 1);
	assert_int_equal(bits, 2);
	assert_int_equal(c.period, 10);
	gg_ctrl_msg__fini(&m);

	/* an unknown sub-probe or a bad parameter: nothing applied */
	assert_int_equal(gg_ctrl_msg__decode("{\"probe\": [\"x\"], \"params\": {\"period\": 11}}", &m, NULL, 0), 0);
	assert_int_equal(probe_conf__apply(&contract, &m, &c, &bits), -EINVAL);
	assert_int_equal(c.period, 10);
	gg_ctrl_msg__fini(&m);
	assert_int_equal(gg_ctrl_msg__decode("{\"probe\": [\"a\"], \"params\": {\"period\": 0}}", &m, NULL, 0), 0);
	assert_int_equal(probe_conf__apply(&contract, &m, &c, &bits), -EINVAL);
	assert_int_equal(bits, 2);
	gg_ctrl_msg__fini(&m);
}
