/* probe_runner.c - the main() every probe shares (probe_runner.h). */
#include "probe_runner.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bpf_util.h"

/* Only one runner per process (the runtime's signal handlers are process-wide): the wrapper of the
 * probe's on_config reaches it here. */
static const struct probe_runner *g_runner;
static struct probe_rt *g_rt;
static int g_configured; /* a live configuration was applied */

/* "report period 5 s, sub-probes a,b, scope all" (cur_subprobes and describe). */
static void state_str(const struct probe_runner *r, char *buf, size_t len)
{
	const struct gg_contract *c = r->contract;
	char names[256], more[256];

	gg_subprobes_str(*r->cur_subprobes, c->subprobes, c->nsubprobes, names, sizeof(names));
	more[0] = '\0';
	if (r->describe)
		r->describe(r->ctx, more, sizeof(more));
	snprintf(buf, len, "report period %u s, sub-probes %s%s", r->period_s ? *r->period_s : 0, names, more);
}

static int on_config(void *ctx, uint64_t version, const struct gg_ctrl_msg *msg)
{
	int err = g_runner->on_config ? g_runner->on_config(ctx, version, msg) : 0;
	char state[640];

	if (err < 0)
		return err;
	g_configured = 1;
	if (g_runner->cur_subprobes) {
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
					.apply = r->apply,
					.configured = r->first_config_wait_ms ? &g_configured : NULL,
					.first_wait_ms = r->first_config_wait_ms,
					.arg = r->ctx};
	struct probe_rt *rt;
	char note[128], state[640];
	int ret, stats_fd = -1, status = 1;

	g_runner = r;
	probe_log_setup(c->rest_name, PLOG_INFO);
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

	rt = probe_rt__start(&opts, level);
	if (!rt)
		return 1;
	g_rt = rt;
	if (r->setup && r->setup(r->ctx, rt) < 0)
		goto cleanup;
	if (r->cur_subprobes) {
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
	g_runner = NULL;
	g_rt = NULL;
	return status;
}
