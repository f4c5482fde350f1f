/* test_probe_runner.c - the shared probe main() (probes/lib/probe_runner.c): the order of its hooks,
 * its exit statuses, the contract's defaults and the command line, the report and tick loop, the live
 * configuration by conf (over a real control socket). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "ipc.h"
#include "probe_runner.h"

struct t_conf {
	unsigned int period_s;
	unsigned int thr;
	unsigned int subprobes;
};

static const struct gg_subprobe subprobes[] = {
	{"t_a", 0x1, 1, 0},
	{"t_b", 0x2, 0, 0},
};
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct t_conf, period_s)),
	GG_PARAM_THR("latency_thr", "ms", "-T", "a threshold", GG_STORE(struct t_conf, thr)),
};
GG_CONTRACT(t_probe, "t", 0, "a probe for the runner's tests");

/* What the hooks saw, in order: one letter each. */
struct t_ctx {
	struct t_conf base;
	struct probe_rt *rt;
	char trace[64];
	size_t ntrace;
	int fail_setup, fail_check;
	unsigned int reports, ticks, stop_after;
	unsigned int own_seen;
	/* the live configuration test (conf_*) */
	struct t_conf cur;
	struct ipc_ctrl_pub *ctrl;
	unsigned int step;     /* index into conf_steps: the message sent on every tick until seen */
	unsigned int checks;   /* check calls */
	struct t_conf checked; /* what check was given, last */
	uint64_t applied_version;
	unsigned int napplied, napply_conf, configured_in_apply;
	struct t_conf seen[4]; /* cur at each conf_steps[i] seen */
};

static void mark(struct t_ctx *c, char ch)
{
	if (c->ntrace < sizeof(c->trace) - 1)
		c->trace[c->ntrace++] = ch;
}

static void t_init(void *arg)
{
	mark(arg, 'i');
}

static int t_check(void *arg)
{
	struct t_ctx *c = arg;

	mark(c, 'c');
	return c->fail_check ? -EINVAL : 0;
}

static int t_setup(void *arg, struct probe_rt *rt)
{
	struct t_ctx *c = arg;

	mark(c, 's');
	c->rt = rt;
	return c->fail_setup ? -ENOENT : 0;
}

static void t_apply(void *arg)
{
	struct t_ctx *c = arg;

	if (c->trace[c->ntrace - 1] != 'a')
		mark(c, 'a');
}

static void t_report(void *arg)
{
	struct t_ctx *c = arg;

	mark(c, 'r');
	if (++c->reports >= c->stop_after)
		probe_rt__stop(c->rt);
}

static unsigned int t_tick(void *arg)
{
	struct t_ctx *c = arg;

	mark(c, 't');
	if (++c->ticks >= c->stop_after)
		probe_rt__stop(c->rt);
	return 10;
}

static void t_stop(void *arg, char *note, size_t len)
{
	mark(arg, 'x');
	snprintf(note, len, "a note");
}

static void t_teardown(void *arg)
{
	mark(arg, 'd');
}

static int t_own(void *arg, int id, const char *val)
{
	struct t_ctx *c = arg;

	(void)val;
	c->own_seen = (unsigned int)id;
	return 0;
}

static const struct probe_opt own[] = {{"own", 0, no_argument, 'o', NULL, "an option of its own"}};

/* A runner of the test probe with c (zeroed) as its context. args.ctx and subprobes left NULL: the
 * runner makes them ctx and args.subprobes. */
static struct probe_runner runner(struct t_ctx *c)
{
	const struct probe_runner r = {
		.contract = &gg_contract_t_probe,
		.ctx = c,
		.args = {.conf = &c->base,
			 .subprobes = &c->base.subprobes,
			 .own = own,
			 .nown = 1,
			 .own_cb = t_own,
			 .notes = ""},
		.init = t_init,
		.check_args = t_check,
		.setup = t_setup,
		.apply = t_apply,
		.period_s = &c->base.period_s,
		.report = t_report,
		.stop = t_stop,
		.teardown = t_teardown,
	};

	memset(c, 0, sizeof(*c));
	return r;
}

/* The live configurations conf_tick sends, in order, each as version i + 1 until the runner has taken
 * it (applied) or check has refused it, and cur then (the command line is -t 3 -T 250, sub-probe t_a
 * by default). */
static const struct {
	const char *json;
	struct t_conf cur; /* period_s, thr, subprobes */
} conf_steps[] = {
	/* sub-probes and latency_thr from the message, the period from the command line */
	{"{\"probe\": [\"t_b\"], \"params\": {\"latency_thr\": 500}}", {3, 500, 0x2}},
	/* stateless: what the message leaves out is the command line's again (sub-probes, latency_thr) */
	{"{\"params\": {\"report_period\": 7}}", {7, 250, 0x1}},
	/* check refuses it (conf_check): cur is still the previous one */
	{"{\"probe\": [\"t_a\", \"t_b\"], \"params\": {\"latency_thr\": 999}}", {7, 250, 0x1}},
	{"{\"probe\": [\"t_a\", \"t_b\"], \"params\": {\"report_period\": 9}}", {9, 250, 0x3}},
};
#define NCONF_STEPS (sizeof(conf_steps) / sizeof(conf_steps[0]))

static int conf_check(void *arg, void *next, const struct gg_ctrl_msg *msg)
{
	struct t_ctx *c = arg;
	const struct t_conf *n = next;

	(void)msg;
	c->checks++;
	c->checked = *n;
	if (n->thr == 999) { /* refused: cur keeps the previous one */
		c->seen[c->step] = c->cur;
		c->step++;
		return -EINVAL;
	}
	return 0;
}

static void conf_applied(void *arg, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct t_ctx *c = arg;

	(void)msg;
	c->applied_version = version;
	c->napplied++;
	if (c->step < NCONF_STEPS && version == c->step + 1) {
		c->seen[c->step] = c->cur;
		c->step++;
	}
}

/* In the loop, after applied: what came is in cur, and the runner counts it as configured. */
static void conf_apply_conf(void *arg)
{
	struct t_ctx *c = arg;

	c->napply_conf++;
	c->configured_in_apply += probe_runner__configured();
}

static unsigned int conf_tick(void *arg)
{
	struct t_ctx *c = arg;
	const char *json;

	if (c->step >= NCONF_STEPS || ++c->ticks >= 1000) { /* all seen, or 10 s */
		probe_rt__stop(c->rt);
		return 10;
	}
	json = conf_steps[c->step].json;
	/* pub/sub is lossy until the probe's side is connected: resent until seen */
	assert_int_equal(ipc_ctrl_pub__send(c->ctrl, "t", c->step + 1, json, strlen(json)), 0);
	return 10;
}

static int run(const struct probe_runner *r, int argc, const char *const *args)
{
	char *argv[8];

	for (int i = 0; i < argc; i++)
		argv[i] = (char *)args[i];
	argv[argc] = NULL;
	optind = 0; /* getopt_long again from the start */
	return probe_runner__main(r, argc, argv);
}

GG_TEST(test_defaults_options_and_order)
{
	static struct t_ctx c;
	struct probe_runner r = runner(&c);
	const char *argv[] = {"t_probe", "-t", "1", "-T", "250", "--own"};

	c.stop_after = 2;
	assert_int_equal(run(&r, 6, argv), 0);
	assert_int_equal(c.base.period_s, 1);
	assert_int_equal(c.base.thr, 250);
	assert_int_equal(c.base.subprobes, 0x1); /* the default sub-probes */
	assert_int_equal(c.own_seen, 'o');
	/* init, check, setup, the loop (apply before each report), stop, teardown */
	assert_string_equal(c.trace, "icsararxd");
}

GG_TEST(test_help_and_bad_options)
{
	static struct t_ctx c;
	struct probe_runner r = runner(&c);
	const char *help[] = {"t_probe", "--help"};
	const char *bad[] = {"t_probe", "-t", "0"};
	const char *unknown[] = {"t_probe", "-Z"};

	assert_int_equal(run(&r, 2, help), 0);
	assert_int_equal(run(&r, 3, bad), 2);
	assert_int_equal(run(&r, 2, unknown), 2);
	assert_string_equal(c.trace, "iii"); /* nothing past the command line */
}

GG_TEST(test_check_and_setup_failures)
{
	static struct t_ctx c;
	struct probe_runner r = runner(&c);
	const char *argv[] = {"t_probe"};

	c.fail_check = 1;
	assert_int_equal(run(&r, 1, argv), 2);
	assert_string_equal(c.trace, "ic");
	memset(&c, 0, sizeof(c));
	c.fail_setup = 1;
	assert_int_equal(run(&r, 1, argv), 1);
	assert_string_equal(c.trace, "icsd"); /* teardown after a failed setup, no loop, no stop */
}

GG_TEST(test_ticks_only)
{
	static struct t_ctx c;
	struct probe_runner r = runner(&c);
	const char *argv[] = {"t_probe"};

	r.period_s = NULL;
	r.report = NULL;
	r.apply = NULL;
	r.tick = t_tick;
	c.stop_after = 3;
	assert_int_equal(run(&r, 1, argv), 0);
	assert_string_equal(c.trace, "icstttxd");
	assert_int_equal(c.reports, 0);
}

GG_TEST(test_ticks_between_reports)
{
	static struct t_ctx c;
	struct probe_runner r = runner(&c);
	const char *argv[] = {"t_probe", "-t", "1"};

	r.apply = NULL;
	r.tick = t_tick;
	c.stop_after = 50; /* a tick every 10 ms: the 50th (~0.5 s) comes before the first report (1 s) */
	assert_int_equal(run(&r, 3, argv), 0);
	assert_int_equal(c.reports, 0);
	assert_int_equal(c.ticks, 50);
}

GG_TEST(test_live_conf)
{
	static struct t_ctx c;
	struct probe_runner r = runner(&c);
	const char *argv[] = {"t_probe", "-t", "3", "-T", "250"};
	char url[96];

	snprintf(url, sizeof(url), "ipc:///tmp/gg-test-runner-%d.ctrl", (int)getpid());
	c.ctrl = ipc_ctrl_pub__new(url);
	assert_non_null(c.ctrl);
	assert_int_equal(setenv("GALA_GOPHER_CTRL_URL", url, 1), 0);
	r.args.conf = NULL;
	r.args.subprobes = NULL; /* both from conf */
	r.conf = (struct probe_runner_conf){&c.base,	&c.cur,	     sizeof(c.cur), offsetof(struct t_conf, subprobes),
					    conf_check, conf_applied};
	r.period_s = &c.cur.period_s;
	r.report = NULL;
	r.apply = NULL;
	r.tick = conf_tick;
	r.apply_conf = conf_apply_conf;
	assert_int_equal(run(&r, 5, argv), 0);
	unsetenv("GALA_GOPHER_CTRL_URL");
	ipc_ctrl_pub__free(c.ctrl);

	assert_int_equal(c.step, NCONF_STEPS);
	/* the command line's, with the contract's default sub-probes, stays the base */
	assert_int_equal(c.base.period_s, 3);
	assert_int_equal(c.base.thr, 250);
	assert_int_equal(c.base.subprobes, 0x1);
	for (size_t i = 0; i < NCONF_STEPS; i++)
		assert_memory_equal(&c.seen[i], &conf_steps[i].cur, sizeof(c.cur));
	/* the last, applied after a refusal: check saw it first */
	assert_int_equal(c.checked.period_s, 9);
	assert_int_equal(c.checked.thr, 250);
	assert_int_equal(c.applied_version, 4);
	assert_true(c.checks >= NCONF_STEPS);
	assert_memory_equal(&c.cur, &c.seen[3], sizeof(c.cur));
	/* apply_conf in the loop after each of the three applied (a resent copy may be applied again) */
	assert_in_range(c.napply_conf, 3, c.napplied);
	assert_int_equal(c.configured_in_apply, c.napply_conf);
	assert_int_equal(probe_runner__configured(), 0); /* the runner's state ends with it */
}

/* The probe runner's own endpoints: not those of a supervisor this runs under. */
static int unset_urls(void **state)
{
	unsetenv("GALA_GOPHER_DATA_URL");
	unsetenv("GALA_GOPHER_CTRL_URL");
	return 0;
}

GG_TEST_GROUP(unset_urls, NULL);
