/* probe_runner.c - the main() every probe shares (probe_runner.h). */
#include "probe_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_util.h"

/* Only one runner per process (the runtime's signal handlers are process-wide): the wrapper of the
 * probe's on_config reaches it here. */
static const struct probe_runner *g_runner;
static struct probe_rt *g_rt;
static int g_configured; /* a live configuration was applied */
static int g_pending;	 /* one was applied by conf since the loop's last turn (apply_conf) */
static void *g_next;	 /* conf.size bytes: a live configuration being checked (conf.base) */

/* The sub-probes in force: cur_subprobes, or where conf puts them in cur (NULL: none). */
static const unsigned int *cur_subprobes(const struct probe_runner *r)
{
	if (r->conf.base)
		return (const unsigned int *)((const char *)r->conf.cur + r->conf.subprobes_off);
	return r->cur_subprobes;
}

/* A live configuration by conf: base copied, the message applied, checked, into cur, applied. */
static int conf_apply(const struct probe_runner *r, uint64_t version, const struct gg_ctrl_msg *msg)
{
	const struct probe_runner_conf *c = &r->conf;
	unsigned int none; /* a contract without sub-probes: nothing to keep */
	int err;

	memcpy(g_next, c->base, c->size);
	err = probe_conf__apply(r->contract, msg, g_next,
				r->contract->nsubprobes ? (unsigned int *)((char *)g_next + c->subprobes_off) : &none);
	if (err < 0)
		return err;
	if (c->check) {
		err = c->check(r->ctx, g_next, msg);
		if (err < 0)
			return err;
	}
	memcpy(c->cur, g_next, c->size);
	if (c->applied)
		c->applied(r->ctx, version, msg);
	g_pending = 1;
	return 0;
}

/* The loop's apply: apply_conf after a live configuration, then the probe's own. */
static void loop_apply(void *ctx)
{
	if (g_pending && g_runner->apply_conf) {
		g_pending = 0;
		g_runner->apply_conf(ctx);
	}
	if (g_runner->apply)
		g_runner->apply(ctx);
}

int probe_runner__configured(void)
{
	return g_configured;
}

int probe_runner__wait_first_config(unsigned int ms)
{
	return probe_rt__wait_first_config(g_rt, &g_configured, ms);
}

/* "report period 5 s, sub-probes a,b, scope all": the report period with period_s, the sub-probes
 * when the contract has some, then what describe writes (", scope all"; its ", " dropped when it
 * comes first). */
static void state_str(const struct probe_runner *r, char *buf, size_t len)
{
	const struct gg_contract *c = r->contract;
	char names[256], more[768];
	size_t used = 0;
	int w;

	buf[0] = more[0] = '\0';
	if (r->period_s) {
		w = snprintf(buf, len, "report period %u s", *r->period_s);
		used = w > 0 && (size_t)w < len ? (size_t)w : 0;
	}
	if (c->nsubprobes) {
		gg_subprobes_str(*cur_subprobes(r), c->subprobes, c->nsubprobes, names, sizeof(names));
		w = snprintf(buf + used, len - used, "%ssub-probes %s", used ? ", " : "", names);
		used += w > 0 && (size_t)w < len - used ? (size_t)w : 0;
	}
	if (r->describe)
		r->describe(r->ctx, more, sizeof(more));
	snprintf(buf + used, len - used, "%s", used || strncmp(more, ", ", 2) ? more : more + 2);
}

static int on_config(void *ctx, uint64_t version, const struct gg_ctrl_msg *msg)
{
	char state[1024];
	int err = 0;

	if (g_runner->conf.base)
		err = conf_apply(g_runner, version, msg);
	else if (g_runner->on_config)
		err = g_runner->on_config(ctx, version, msg);
	if (err < 0)
		return err;
	g_configured = 1;
	if (cur_subprobes(g_runner)) {
		state_str(g_runner, state, sizeof(state));
		probe_log(PLOG_INFO, "configuration %llu: %s", (unsigned long long)version, state);
	}
	probe_rt__wake(g_rt); /* the loop recomputes its next report time */
	return 0;
}

int probe_runner__main(const struct probe_runner *r, int argc, char **argv)
{
	const struct gg_contract *c = r->contract;
	enum probe_log_level level = PLOG_INFO;
	struct probe_args a = r->args;
	struct probe_rt_opts opts = {.name = c->rest_name, .on_config = on_config, .cb_ctx = r->ctx};
	const struct probe_loop loop = {.period_s = r->period_s,
					.report = r->report,
					.tick = r->tick,
					.apply = r->apply || r->apply_conf ? loop_apply : NULL,
					.configured = r->first_config_wait_ms ? &g_configured : NULL,
					.first_wait_ms = r->first_config_wait_ms,
					.arg = r->ctx};
	struct probe_rt *rt;
	char note[128], state[1024];
	int ret, stats_fd = -1, status = 1;

	g_runner = r;
	probe_log_setup(c->rest_name, PLOG_INFO);
	if (r->conf.base) {
		a.conf = r->conf.base;
		if (!a.subprobes && !r->subprobes && c->nsubprobes)
			a.subprobes = (unsigned int *)((char *)r->conf.base + r->conf.subprobes_off);
	}
	if (a.conf)
		gg_params__defaults(c->params, c->nparams, a.conf);
	if (r->subprobes || a.subprobes)
		*(r->subprobes ? r->subprobes : a.subprobes) = gg_contract__default_subprobes(c);
	if (a.scope)
		gg_scope__init(a.scope);
	if (r->init)
		r->init(r->ctx);
	if (!a.ctx)
		a.ctx = r->ctx;
	a.prog = c->bin;
	a.contract = c;
	a.level = &level;
	ret = probe_conf__parse_args(&a, argc, argv);
	if (ret >= 0)
		return ret;
	if (r->check_args && r->check_args(r->ctx) < 0)
		return 2;

	if (r->conf.base) {
		g_next = malloc(r->conf.size);
		if (!g_next) {
			fprintf(stderr, "%s: out of memory\n", c->bin);
			return 1;
		}
		memcpy(r->conf.cur, r->conf.base, r->conf.size);
	}
	rt = probe_rt__start(&opts, level);
	if (!rt) {
		free(g_next);
		g_next = NULL;
		return 1;
	}
	g_rt = rt;
	if (r->setup && r->setup(r->ctx, rt) < 0)
		goto cleanup;
	g_pending = 0; /* setup applied cur */
	if (cur_subprobes(r)) {
		state_str(r, state, sizeof(state));
		probe_log(PLOG_INFO, "started: %s", state);
	}
	if (a.bpf_stats && *a.bpf_stats) {
		stats_fd = gg_bpf_stats_start(1);
		*a.bpf_stats = stats_fd >= 0;
	}
	probe_rt__run(rt, &loop);
	note[0] = '\0';
	if (r->stop)
		r->stop(r->ctx, note, sizeof(note));
	probe_log(PLOG_INFO, "stopping: %llu records emitted, %llu invalid%s%s",
		  (unsigned long long)probe_rt__records_emitted(rt), (unsigned long long)probe_rt__records_invalid(rt),
		  note[0] ? ", " : "", note);
	status = 0;
cleanup:
	if (stats_fd >= 0)
		close(stats_fd);
	if (r->teardown)
		r->teardown(r->ctx);
	probe_rt__free(rt);
	free(g_next);
	g_next = NULL;
	g_runner = NULL;
	g_rt = NULL;
	g_configured = g_pending = 0;
	return status;
}
