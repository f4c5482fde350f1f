/* main.c - system_infos ("baseinfo"): host metrics from /proc, /sys and statvfs, every report period. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf_util.h"
#include "probe.h"
#include "probe_runner.h"
#include "system_infos.h"

#define PROC_SCOPE_WAIT_MS 3000u

/* State shared by the main loop and the configuration callback. */
struct si_ctx {
	struct probe_rt *rt;
	struct si_conf base; /* from the command line */
	struct si_conf cur;
	const char *comm; /* --comm: processes with this name are in scope too */
	uint64_t start_ms;
	struct si_cpu cpu;
	struct si_mem mem;
	struct si_counters nic;
	struct si_net net;
	struct si_counters disk;
	struct si_fs fs;
	struct si_host host;
	struct si_proc proc;
};

extern const struct gg_contract gg_contract_system_infos;
#define CONTRACT       (&gg_contract_system_infos)
#define subprobe_names (CONTRACT->subprobes)
#define NSUBPROBES     (CONTRACT->nsubprobes)

/* --help after the options (generated from the contract). */
static const char notes[] =
	"--pid and --comm choose the processes of the proc sub-probe (--comm also later ones); without them\n"
	"(nor snoopers) proc reports the proc_top processes with the most CPU time in the period + resident\n"
	"memory (0 = all, up to 1024).\n"
	"Tables: cpu: system_cpu (per online CPU), system_cpu_util; mem: system_meminfo; nic: nic;\n"
	"disk: system_iostat; net: system_tcp, system_udp; fs: system_df; host: system_os; proc: system_proc.\n"
	"Live configuration (from the supervisor): {\"params\": {\"report_period\": N, \"dev_name\": \"eth0\"},\n"
	"\"probe\": [\"cpu\", \"mem\", ...], \"scope\": {\"all\": false, \"pids\": [..], \"cgroup_ids\": [..]}}\n"
	"(\"probe\" may also be given as \"cmd\": {\"probe\": [...]}; what is left out comes from the options).\n";

/* A live configuration next to the one in force (what the message leaves out is the command line's). */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct si_ctx *ctx = data;
	struct si_conf *conf = next;

	/* The supervisor resolves snoopers into "scope"; without it the command line's scope stays. */
	if (msg->has_scope)
		conf->scope = msg->scope;
	/* A sub-probe turned back on measures its first period from now, not from when it stopped. */
	if ((conf->subprobes & SI_CPU) && !(ctx->cur.subprobes & SI_CPU))
		(void)si_cpu__baseline(&ctx->cpu);
	if ((conf->subprobes & SI_NIC) && !(ctx->cur.subprobes & SI_NIC))
		(void)si_counters__sample(&ctx->nic);
	if ((conf->subprobes & SI_DISK) && !(ctx->cur.subprobes & SI_DISK))
		(void)si_counters__sample(&ctx->disk);
	return 0;
}

/* One report period (probe_rt__run_periodic). */
static void report(void *arg)
{
	struct si_ctx *ctx = arg;
	if (ctx->cur.subprobes & SI_CPU)
		(void)si_cpu__report(&ctx->cpu, ctx->rt);
	if (ctx->cur.subprobes & SI_MEM)
		(void)si_mem__report(&ctx->mem, ctx->rt);
	if (ctx->cur.subprobes & SI_NIC)
		(void)si_counters__report(&ctx->nic, ctx->rt, ctx->cur.dev_name);
	if (ctx->cur.subprobes & SI_DISK)
		(void)si_counters__report(&ctx->disk, ctx->rt, ctx->cur.dev_name);
	if (ctx->cur.subprobes & SI_NET)
		(void)si_net__report(&ctx->net, ctx->rt);
	if (ctx->cur.subprobes & SI_FS)
		(void)si_fs__report(&ctx->fs, ctx->rt);
	if (ctx->cur.subprobes & SI_HOST)
		(void)si_host__report(&ctx->host, ctx->rt);
	/* Under the supervisor the scope comes with the first live configuration, a second or two after
	 * the start: until it came (or PROC_SCOPE_WAIT_MS passed) the "every process" default would report
	 * processes outside it. */
	ctx->proc.top = ctx->cur.proc_top;
	if ((ctx->cur.subprobes & SI_PROC) && (probe_runner__configured() || !probe_rt__supervised(ctx->rt) ||
					       probe_now_mono_ms() - ctx->start_ms >= PROC_SCOPE_WAIT_MS))
		(void)si_proc__report(&ctx->proc, ctx->rt, &ctx->cur.scope, ctx->comm);
	(void)probe_rt__flush(ctx->rt);
}

/* After the command line: the starting points of the first rates. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct si_ctx *ctx = arg;
	int ret;

	ctx->rt = rt;
	/* The first report is a rate over its whole period: sample the starting point now. */
	ret = si_cpu__init(&ctx->cpu);
	if (ret)
		probe_log(PLOG_WARN, "initial CPU sample failed: %s", strerror(-ret));
	ctx->nic.kind = &si_nic_kind;
	ctx->disk.kind = &si_disk_kind;
	(void)si_counters__sample(&ctx->nic);
	(void)si_counters__sample(&ctx->disk);
	(void)si_proc__init(&ctx->proc);
	ctx->start_ms = probe_now_mono_ms();
	return 0;
}

static void teardown(void *arg)
{
	struct si_ctx *ctx = arg;

	si_cpu__free(&ctx->cpu);
	si_mem__free(&ctx->mem);
	si_counters__free(&ctx->nic);
	si_net__free(&ctx->net);
	si_counters__free(&ctx->disk);
	si_fs__free(&ctx->fs);
	si_host__free(&ctx->host);
	si_proc__free(&ctx->proc);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct si_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base.scope, .comm = &g_ctx.comm, .notes = notes},
	.setup = setup,
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct si_conf, subprobes), check_conf, NULL},
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.teardown = teardown,
};
