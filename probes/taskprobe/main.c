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
#include "probe_runner.h"
#include "tp_user.h"

#define PROG "taskprobe"
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
static const struct probe_opt own[] = {
	{NULL, 'e', no_argument, 'e', NULL, "report events (event_v2, entity proc): latency_thr, offline_thr"},
	{"cgroup", 0, required_argument, 'c', "PATH", "only processes in this cgroup v2 directory or below it"},
	{"stats", 0, no_argument, 's', NULL, NULL}, /* the first name of --bpf-stats */
};

static int own_option(void *data, int id, const char *arg)
{
	struct tp_ctx *ctx = data;

	switch (id) {
	case 'e':
		ctx->base.report_event = 1;
		return 0;
	case 's':
		ctx->bpf_stats = 1;
		return 0;
	default:
		if (scope_add_cgroup_path(&ctx->base.scope, arg)) {
			fprintf(stderr, PROG ": invalid cgroup '%s' for --cgroup (expected a cgroup v2 directory)\n",
				arg);
			return 2;
		}
		return 0;
	}
}

/* A live configuration's scope: the message's (the supervisor resolves snoopers), else the command
 * line's; apply() puts a changed one in place. */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct tp_ctx *ctx = data;
	struct tp_conf *conf = next;

	if (msg->has_scope)
		conf->scope = msg->scope;
	if (!gg_scope__equal(&conf->scope, &ctx->cur.scope))
		ctx->scope_dirty = 1;
	return 0;
}

/* After "report period P s, sub-probes a,b" in the started and configuration lines. */
static void describe(void *arg, char *buf, size_t len)
{
	const struct tp_ctx *ctx = arg;

	snprintf(buf, len, ", events %s (latency_thr %u ms, offline_thr %u ms), scope %s%s%s",
		 ctx->cur.report_event ? "on" : "off", ctx->cur.latency_thr_ms, ctx->cur.offline_thr_ms,
		 ctx->cur.scope.all ? "all" : "filtered", ctx->comm ? ", comm " : "", ctx->comm ? ctx->comm : "");
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
	unsigned int subs = ctx->cur.subs;
	int err;

	s->bss->enabled = subs;
	err = gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), subs);
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

	if (!ctx->bpf_stats)
		return;
	if (gg_bpf_stats_fmt(ctx->skel->obj, ctx->stats_prev, sizeof(ctx->stats_prev) / sizeof(ctx->stats_prev[0]), buf,
			     sizeof(buf)) > 0)
		probe_log(PLOG_INFO, "bpf_stats (runs/ns per run): %s", buf);
}

/* After the command line: load the programs, set the scope, attach those of the sub-probes on. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct tp_ctx *ctx = arg;
	char off[512];
	int ret;

	ctx->rt = rt;
	ret = gg_bpf_init();
	if (ret)
		probe_log(PLOG_WARN, "tracefs is not available (%s): tracepoints may not attach", strerror(-ret));
	ret = tp_report_init(ctx);
	if (ret) {
		probe_log(PLOG_ERROR, "out of memory");
		return ret;
	}
	ctx->skel = taskprobe__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	/* its own warning: gg_bpf_load then finds none to turn off */
	if (gg_bpf_autoload_available(ctx->skel->obj, off, sizeof(off)) > 0)
		probe_log(PLOG_WARN, "this kernel lacks the hooks of %s: their metrics stay 0", off);
	ret = gg_bpf_load(ctx->skel->skeleton);
	if (ret)
		return ret;
	rescan_comm(ctx);
	ret = tp_scope_apply(ctx);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot set the scope: %s", strerror(-ret));
		return ret;
	}
	(void)tp_attach_subs(ctx);
	ctx->applied_subs = ctx->cur.subs;
	return 0;
}

/* What on_config changed: the kernel's scope filter, the attached programs. */
static void apply(void *arg)
{
	struct tp_ctx *ctx = arg;
	int ret;

	if (ctx->scope_dirty) {
		ret = tp_scope_apply(ctx);
		if (ret)
			probe_log(PLOG_WARN, "cannot set the scope: %s", strerror(-ret));
		else if (ctx->cur.subs & TP_SUB_DNS)
			(void)tp_dns_attach(ctx); /* libc of new processes in scope (containers) */
	}
	if (ctx->cur.subs != ctx->applied_subs) {
		(void)tp_attach_subs(ctx);
		ctx->applied_subs = ctx->cur.subs;
	}
}

static void report(void *arg)
{
	struct tp_ctx *ctx = arg;

	(void)tp_report(ctx);
	(void)probe_rt__flush(ctx->rt);
	log_stats(ctx);
	rescan_comm(ctx);
}

static void teardown(void *arg)
{
	struct tp_ctx *ctx = arg;

	if (ctx->skel)
		tp_dns_detach(ctx);
	taskprobe__destroy(ctx->skel);
	tp_report_free(ctx);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct tp_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base.scope,
		 .comm = &g_ctx.comm,
		 .bpf_stats = &g_ctx.bpf_stats,
		 .own = own,
		 .nown = sizeof(own) / sizeof(own[0]),
		 .own_cb = own_option,
		 .notes = notes},
	.setup = setup,
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct tp_conf, subs), check_conf, NULL},
	.apply = apply,
	.period_s = &g_ctx.cur.period_s,
	.describe = describe,
	.report = report,
	.first_config_wait_ms = FIRST_CONFIG_WAIT_MS,
	.teardown = teardown,
};
