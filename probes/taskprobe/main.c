/* main.c - taskprobe ("proc"): per-process syscall, file-system, block IO, scheduler, page-cache and
 * DNS metrics from eBPF tracepoints and a libc uprobe, for the processes in the monitoring scope. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "taskprobe.skel.h"
#include "tp_user.h"

#define PROBE_NAME "proc"
#define PROG	   "taskprobe"
/* Under the supervisor, the first live configuration (its scope) normally follows the start within a
 * second or two; no report goes out before it or before this much time, so that processes outside
 * the scope it brings are not reported meanwhile. */
#define FIRST_CONFIG_WAIT_MS 3000u

extern const struct gg_contract gg_contract_taskprobe;
#define CONTRACT  (&gg_contract_taskprobe)
#define sub_names (CONTRACT->subprobes)
#define NSUBS	  (CONTRACT->nsubprobes)
#define SUB_LIST  "base_metrics, proc_syscall, proc_fs, proc_io, proc_dns, proc_pagecache"

/* --help after the options (generated from the contract). */
static const char notes[] =
	"proc_syscall and proc_fs attach to the syscall tracepoints: every syscall of every process then\n"
	"costs ~0.15 us.\n"
	"Tables: base_metrics: proc_cpu; proc_syscall: proc_syscall, proc_syscall_io, proc_syscall_net,\n"
	"proc_syscall_sched, proc_syscall_fork; proc_fs: proc_fs, proc_ext4, proc_overlay, proc_tmpfs;\n"
	"proc_io: proc_io; proc_pagecache: proc_page; proc_dns: proc_dns; events: event_v2.\n"
	"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N, \"report_event\": 0|1,\n"
	"\"latency_thr\": MS, \"offline_thr\": MS}, \"scope\": {\"all\": bool, \"pids\": [..], \"cgroup_ids\": "
	"[..]}}\n";

/* The cgroup v2 id of a cgroup directory is its inode number (what bpf_get_current_cgroup_id gives). */
static int scope_add_cgroup_path(struct gg_scope *s, const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return -EINVAL;
	if (s->ncgrp >= GG_SCOPE_CGRP_MAX)
		return -E2BIG;
	s->cgrp[s->ncgrp++] = (uint64_t)st.st_ino;
	s->all = 0;
	return 0;
}

/* taskprobe's own options: -e, --cgroup PATH, --stats (the first name of --bpf-stats). */
struct own_args {
	struct tp_ctx *ctx;
	int *stats;
};

static int own_option(void *data, int id, const char *arg)
{
	struct own_args *o = data;

	switch (id) {
	case 'e':
		o->ctx->base.report_event = 1;
		return 0;
	case 's':
		*o->stats = 1;
		return 0;
	default:
		if (scope_add_cgroup_path(&o->ctx->base.scope, arg)) {
			fprintf(stderr, PROG ": invalid cgroup '%s' for --cgroup (expected a cgroup v2 directory)\n",
				arg);
			return 2;
		}
		return 0;
	}
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct tp_ctx *ctx, enum probe_log_level *level, int *stats)
{
	static const struct probe_opt own[] = {
		{NULL, 'e', no_argument, 'e', NULL, "report events (event_v2, entity proc): latency_thr, offline_thr"},
		{"cgroup", 0, required_argument, 'c', "PATH", "only processes in this cgroup v2 directory or below it"},
		{"stats", 0, no_argument, 's', NULL, NULL}, /* the first name of --bpf-stats */
	};
	struct own_args o = {ctx, stats};
	const struct probe_args a = {.prog = PROG,
				     .contract = CONTRACT,
				     .conf = &ctx->base,
				     .subprobes = &ctx->base.subs,
				     .level = level,
				     .scope = &ctx->base.scope,
				     .comm = &ctx->comm,
				     .bpf_stats = stats,
				     .own = own,
				     .nown = 3,
				     .own_cb = own_option,
				     .ctx = &o,
				     .notes = notes};

	return probe_conf__parse_args(&a, argc, argv);
}

static int on_config(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	static struct tp_conf conf; /* large (the scope sets): not on the stack; one caller at a time */
	struct tp_ctx *ctx = data;
	char names[128];
	int err;

	/* Stateless like the REST interface: what the message leaves out comes from the command line. */
	conf = ctx->base;
	err = probe_conf__apply(CONTRACT, msg, &conf, &conf.subs);
	if (err < 0)
		return err;
	if (msg->has_scope)
		conf.scope = msg->scope;
	if (!gg_scope__equal(&conf.scope, &ctx->cur.scope))
		ctx->scope_dirty = 1;
	ctx->cur = conf;
	ctx->configured = 1;
	gg_subprobes_str(conf.subs, sub_names, NSUBS, names, sizeof(names));
	probe_log(PLOG_INFO,
		  "configuration %llu: report period %u s, sub-probes %s, events %s (latency_thr %u ms, offline_thr %u "
		  "ms), scope %s",
		  (unsigned long long)version, conf.period_s, names, conf.report_event ? "on" : "off",
		  conf.latency_thr_ms, conf.offline_thr_ms, conf.scope.all ? "all" : "filtered");
	probe_rt__wake(ctx->rt);
	return 0;
}

/* --comm: the processes named so now (with the --pid ones), re-applied when they changed. */
static void rescan_comm(struct tp_ctx *ctx)
{
	static struct gg_scope s;

	if (ctx->comm && gg_scope__rescan_comm(&ctx->base.scope, 1, ctx->comm, &ctx->cur.scope, &s) > 0) {
		ctx->cur.scope = s;
		ctx->scope_dirty = 1;
	}
}

int tp_attach_subs(struct tp_ctx *ctx)
{
	struct taskprobe *s = ctx->skel;
	/* Attached when one of the sub-probes named is on (~0u: always). */
	const struct gg_bpf_hook hooks[] = {
		{s->progs.tp_sys_enter, &s->links.tp_sys_enter, TP_SUB_SYSCALL | TP_SUB_FS},
		{s->progs.tp_sys_exit, &s->links.tp_sys_exit, TP_SUB_SYSCALL | TP_SUB_FS},
		{s->progs.tp_sched_switch, &s->links.tp_sched_switch, TP_SUB_BASE},
		{s->progs.tp_sched_fork, &s->links.tp_sched_fork, TP_SUB_BASE},
		{s->progs.tp_sched_exec, &s->links.tp_sched_exec, ~0u},
		{s->progs.tp_sched_exit, &s->links.tp_sched_exit, ~0u},
		{s->progs.tp_block_rq_insert, &s->links.tp_block_rq_insert, TP_SUB_IO},
		{s->progs.tp_block_rq_issue, &s->links.tp_block_rq_issue, TP_SUB_IO},
		{s->progs.tp_block_rq_complete, &s->links.tp_block_rq_complete, TP_SUB_IO},
		{s->progs.tp_pc_add, &s->links.tp_pc_add, TP_SUB_PAGECACHE},
		{s->progs.tp_pc_dirty, &s->links.tp_pc_dirty, TP_SUB_PAGECACHE},
		{s->progs.tp_pc_buffer_dirty, &s->links.tp_pc_buffer_dirty, TP_SUB_PAGECACHE},
		{s->progs.tp_reclaim_begin, &s->links.tp_reclaim_begin, TP_SUB_PAGECACHE},
		{s->progs.tp_reclaim_end, &s->links.tp_reclaim_end, TP_SUB_PAGECACHE},
	};
	const struct gg_bpf_hook *bad = NULL;
	unsigned int subs = ctx->cur.subs;
	int err;

	s->bss->enabled = subs;
	err = gg_bpf_apply_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), subs, &bad);
	if (err)
		probe_log(PLOG_WARN, "cannot attach %s: %s", bpf_program__name(bad->prog), strerror(-err));
	if (subs & TP_SUB_DNS) {
		if (tp_dns_attach(ctx) == 0)
			probe_log(PLOG_WARN, "proc_dns: no libc found to probe getaddrinfo in");
	} else {
		tp_dns_detach(ctx);
	}
	return err;
}

static void log_stats(struct tp_ctx *ctx)
{
	char buf[2048];

	if (ctx->stats_fd < 0)
		return;
	if (gg_bpf_stats_fmt(ctx->skel->obj, ctx->stats_prev, sizeof(ctx->stats_prev) / sizeof(ctx->stats_prev[0]), buf,
			     sizeof(buf)) > 0)
		probe_log(PLOG_INFO, "bpf_stats (runs/ns per run): %s", buf);
}

int main(int argc, char **argv)
{
	static struct tp_ctx ctx;
	enum probe_log_level level = PLOG_INFO;
	struct probe_rt_opts opts = {.name = PROBE_NAME, .on_config = on_config, .cb_ctx = &ctx};
	unsigned int applied_subs;
	char names[128], off[512];
	int ret, stats = 0, status = 1;
	uint64_t last, start_ms;

	probe_log_setup(PROBE_NAME, PLOG_INFO);
	ctx.stats_fd = -1;
	probe_conf__defaults(CONTRACT, &ctx.base, &ctx.base.subs);
	gg_scope__init(&ctx.base.scope);
	ret = parse_args(argc, argv, &ctx, &level, &stats);
	if (ret >= 0)
		return ret;
	ctx.cur = ctx.base;

	ctx.rt = probe_rt__start(&opts, level);
	if (!ctx.rt)
		return 1;
	ret = gg_bpf_init();
	if (ret)
		probe_log(PLOG_WARN, "tracefs is not available (%s): tracepoints may not attach", strerror(-ret));
	ret = tp_report_init(&ctx);
	if (ret) {
		probe_log(PLOG_ERROR, "out of memory");
		goto cleanup;
	}
	ctx.skel = taskprobe__open();
	if (!ctx.skel) {
		probe_log(PLOG_ERROR, "cannot open the BPF object: %s", strerror(errno));
		goto cleanup;
	}
	if (gg_bpf_autoload_available(ctx.skel->obj, off, sizeof(off)) > 0)
		probe_log(PLOG_WARN, "this kernel lacks the hooks of %s: their metrics stay 0", off);
	ret = taskprobe__load(ctx.skel);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-ret));
		goto cleanup;
	}
	ctx.stats_fd = gg_bpf_stats_start(stats);
	rescan_comm(&ctx);
	ret = tp_scope_apply(&ctx);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot set the scope: %s", strerror(-ret));
		goto cleanup;
	}
	(void)tp_attach_subs(&ctx);
	applied_subs = ctx.cur.subs;
	gg_subprobes_str(ctx.cur.subs, sub_names, NSUBS, names, sizeof(names));
	probe_log(PLOG_INFO, "started: report period %u s, sub-probes %s, scope %s%s%s", ctx.cur.period_s, names,
		  ctx.cur.scope.all ? "all" : "filtered", ctx.comm ? ", comm " : "", ctx.comm ? ctx.comm : "");

	last = probe_now_mono_ms();
	start_ms = last;
	while (!probe_rt__stopping(ctx.rt)) {
		uint64_t now = probe_now_mono_ms();
		uint64_t next = last + (uint64_t)ctx.cur.period_s * 1000u;

		if (ctx.scope_dirty) {
			ret = tp_scope_apply(&ctx);
			if (ret)
				probe_log(PLOG_WARN, "cannot set the scope: %s", strerror(-ret));
			else if (ctx.cur.subs & TP_SUB_DNS)
				(void)tp_dns_attach(&ctx); /* libc of new processes in scope (containers) */
		}
		if (ctx.cur.subs != applied_subs) {
			(void)tp_attach_subs(&ctx);
			applied_subs = ctx.cur.subs;
		}
		if (probe_rt__supervised(ctx.rt) && !ctx.configured && now < start_ms + FIRST_CONFIG_WAIT_MS &&
		    next < start_ms + FIRST_CONFIG_WAIT_MS)
			next = start_ms + FIRST_CONFIG_WAIT_MS;
		if (now < next) {
			if (probe_rt__wait(ctx.rt, (unsigned int)(next - now)))
				break;
			continue;
		}
		(void)tp_report(&ctx);
		(void)probe_rt__flush(ctx.rt);
		log_stats(&ctx);
		rescan_comm(&ctx);
		last = now - next < (uint64_t)ctx.cur.period_s * 1000u ? next : now;
	}
	status = 0;
cleanup:
	probe_log(PLOG_INFO, "stopping: %llu records emitted, %llu invalid",
		  (unsigned long long)probe_rt__records_emitted(ctx.rt),
		  (unsigned long long)probe_rt__records_invalid(ctx.rt));
	if (ctx.skel)
		tp_dns_detach(&ctx);
	taskprobe__destroy(ctx.skel);
	if (ctx.stats_fd >= 0)
		close(ctx.stats_fd);
	tp_report_free(&ctx);
	probe_rt__free(ctx.rt);
	return status;
}
