/* main.c - sliprobe ("sli"): per node and per container CPU scheduling latencies (run-queue delay,
 * sleep, IO wait, block, long system time), memory stalls (reclaim, compaction) and block request
 * latency, from scheduler, vmscan, compaction and block tracepoints (no schedstats, no kprobes). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <linux/types.h>

#include "clock.h"
#include "bpf_util.h"
#include "probe_scope.h"
#include "sli_conf.h"
#include "sliprobe.h"
#include "sliprobe.meta.h"
#include "sliprobe.skel.h"
#include "cgroup_path.h"
#include "probe.h"
#include "probe_runner.h"

#define PROG	    "sliprobe"
#define NODE_KEY    "sli_node_key"
#define HIST_FIRST  9u	  /* bucket 0: below 1024 ns */
#define HIST_N	    22u	  /* last bucket: below 2^31 ns (2.1 s); longer ones are the overflow */
#define CACHE_SLOTS 8192u /* twice SLI_CGROUPS_MAX: open addressing stays short */

extern const struct gg_contract gg_contract_sliprobe;
#define CONTRACT  (&gg_contract_sliprobe)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)

/* What user space knows of a cgroup: its path, container id and CPU time at the last report. */
struct cg_info {
	__u64 cgid; /* 0: free slot */
	char path[256];
	char cid[13];		/* 12 hex digits, "" when the path names no container */
	uint64_t prev_usage_us; /* cpu.stat usage_usec at the previous report */
	uint64_t prev_ms;
};

struct sli_ctx {
	struct probe_rt *rt;
	struct sliprobe *skel;
	struct sli_conf base, cur;
	unsigned int attached; /* hook sub-probes attached now */
	int bpf_stats;	       /* --bpf-stats: set, and collected */
	struct gg_bpf_stats_prev stats_prev[16];
	int ncpus;
	struct sli_stats *vals; /* ncpus (the node's per-CPU values) */
	struct sli_stats sum;
	struct sli_lat *io_vals; /* ncpus */
	struct gg_scope scope;
	struct cg_info *cache; /* CACHE_SLOTS */
	unsigned int ncache;
	char cg_mnt[256];
	int cg_mnt_fd;
	long node_cores;
	unsigned long long prev_busy, prev_total; /* /proc/stat */
};

static const char notes[] =
	"Sub-probes cpu, mem and io choose the hooks; node, container and histogram the tables.\n"
	"Tables: sli_{cpu,mem,io}_{node,container}_{gauge,histogram} and sli_cpu_{node,container}_stat.\n"
	"Container rows: cgroups whose path names a container (docker, containerd, cri-o, podman), or, with\n"
	"a scope (container_id/pod_id snoopers), the cgroups of the scope. Totals are cumulative nanoseconds.\n"
	"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N}}\n";

static void apply_conf(struct sli_ctx *ctx)
{
	struct sliprobe *s = ctx->skel;
	unsigned int sp = ctx->cur.subprobes & SLI_SP_HOOKS;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.sli_switch, &s->links.sli_switch, SLI_SP_CPU},
		{s->progs.sli_dreclaim_begin, &s->links.sli_dreclaim_begin, SLI_SP_MEM},
		{s->progs.sli_dreclaim_end, &s->links.sli_dreclaim_end, SLI_SP_MEM},
		{s->progs.sli_mreclaim_begin, &s->links.sli_mreclaim_begin, SLI_SP_MEM},
		{s->progs.sli_mreclaim_end, &s->links.sli_mreclaim_end, SLI_SP_MEM},
		{s->progs.sli_compact_begin, &s->links.sli_compact_begin, SLI_SP_MEM},
		{s->progs.sli_compact_end, &s->links.sli_compact_end, SLI_SP_MEM},
		{s->progs.sli_io_start, &s->links.sli_io_start, SLI_SP_IO},
		{s->progs.sli_io_done, &s->links.sli_io_done, SLI_SP_IO},
	};

	/* Hooks coming back: stamps left from before they went off span an unwatched time. */
	if (sp & ~ctx->attached)
		s->bss->sli_epoch_ns = gg_mono_ns();
	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), sp);
	ctx->attached = sp;
}

/* A live configuration in force (the runner put it into cur): the scope, the hooks. */
static void applied(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct sli_ctx *ctx = data;

	(void)version;
	if (msg->has_scope)
		ctx->scope = msg->scope;
	apply_conf(ctx);
}

/* After "report period P s, sub-probes a,b" in the started and configuration lines. */
static void describe(void *arg, char *buf, size_t len)
{
	const struct sli_ctx *ctx = arg;

	snprintf(buf, len, ", scope %s, cgroup2 at %s", ctx->scope.all ? "all" : "cgroups given",
		 ctx->cg_mnt_fd >= 0 ? ctx->cg_mnt : "(none)");
}

/* ---- cgroups ------------------------------------------------------------------------------------ */

/* The cgroup2 mount point (cgroup ids are its directories' inode numbers). */
static int find_cg2_mount(char *buf, size_t len)
{
	static struct probe_buf b;
	char *line, *save = NULL;

	if (probe_read_file("/proc/self/mounts", &b, 1u << 20))
		return -ENOENT;
	for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char dev[64], mnt[256], type[32];

		if (sscanf(line, "%63s %255s %31s", dev, mnt, type) == 3 && !strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", mnt);
			return 0;
		}
	}
	return -ENOENT;
}

/* The container id a cgroup path names (ipc/cgroup_path.h), cut to gala-gopher's 12 digits; "" when
 * none does. */
static void container_of_path(const char *path, char *cid, size_t len)
{
	char id[65];

	cid[0] = '\0';
	if (gg_cgroup__container_id(path, id, sizeof(id)) == 0)
		snprintf(cid, len, "%.12s", id);
}

static struct cg_info *cache_get(struct sli_ctx *ctx, __u64 cgid)
{
	unsigned int i = (unsigned int)((cgid * 0x9E3779B97F4A7C15ull) >> 51) % CACHE_SLOTS;

	for (unsigned int n = 0; n < CACHE_SLOTS; n++, i = (i + 1) % CACHE_SLOTS) {
		struct cg_info *c = &ctx->cache[i];

		if (c->cgid == cgid)
			return c;
		if (!c->cgid) {
			if (ctx->ncache >= CACHE_SLOTS / 2) { /* full of dead cgroups: start over */
				memset(ctx->cache, 0, CACHE_SLOTS * sizeof(*ctx->cache));
				ctx->ncache = 0;
				return cache_get(ctx, cgid);
			}
			c->cgid = cgid;
			ctx->ncache++;
			return c;
		}
	}
	return NULL;
}

static int in_scope(const struct sli_ctx *ctx, __u64 cgid)
{
	for (uint32_t i = 0; i < ctx->scope.ncgrp; i++)
		if (ctx->scope.cgrp[i] == cgid)
			return 1;
	return 0;
}

/* Cores a cgroup may use: its cpu.max quota over period (cgroup v2 cpu controller), else the node's. */
static double cgroup_cores(const struct sli_ctx *ctx, const struct cg_info *c)
{
	static struct probe_buf b;
	char path[600];
	unsigned long long quota, period;

	snprintf(path, sizeof(path), "%s%s/cpu.max", ctx->cg_mnt, c->path);
	if (probe_read_file(path, &b, 256) == 0 && sscanf(b.data, "%llu %llu", &quota, &period) == 2 && period)
		return (double)quota / (double)period;
	return (double)ctx->node_cores;
}

/* CPU time of a cgroup's tasks (cgroup v2 cpu.stat usage_usec: there without the cpu controller too). */
static uint64_t cgroup_usage_us(const struct sli_ctx *ctx, const struct cg_info *c)
{
	static struct probe_buf b;
	char path[600];
	unsigned long long us = 0;

	snprintf(path, sizeof(path), "%s%s/cpu.stat", ctx->cg_mnt, c->path);
	if (probe_read_file(path, &b, 4096) == 0)
		(void)sscanf(b.data, "usage_usec %llu", &us);
	return us;
}

/* ---- records ---------------------------------------------------------------------------------- */

static void sum_cpus(const struct sli_stats *v, int ncpus, struct sli_stats *ret)
{
	const __u64 *src = (const __u64 *)v;
	__u64 *dst = (__u64 *)ret;
	size_t nw = sizeof(*ret) / sizeof(__u64);

	memset(ret, 0, sizeof(*ret));
	for (int c = 0; c < ncpus; c++)
		for (size_t w = 0; w < nw; w++)
			dst[w] += src[(size_t)c * nw + w];
}

static void rec_key(struct probe_rec *r, const struct probe_table *t, const struct cg_info *c)
{
	probe_rec__begin(r, t);
	if (!c) {
		probe_rec__str(r, NODE_KEY);
		return;
	}
	probe_rec__str(r, c->cid[0] ? c->cid : c->path);
	probe_rec__str(r, c->path);
}

static void emit_lats(struct sli_ctx *ctx, const struct cg_info *c, const struct probe_table *gauge,
		      const struct probe_table *hist, const struct sli_lat *l, int n)
{
	static struct probe_rec r;

	rec_key(&r, gauge, c);
	for (int i = 0; i < n; i++)
		probe_rec__u64(&r, l[i].ns);
	(void)probe_rt__emit(ctx->rt, &r);
	if (!(ctx->cur.subprobes & SLI_SP_HISTOGRAM))
		return;
	rec_key(&r, hist, c);
	for (int i = 0; i < n; i++)
		gg_hist_rec(&r, l[i].slots, HIST_FIRST, HIST_N, 1.0, (double)l[i].ns);
	(void)probe_rt__emit(ctx->rt, &r);
}

/* One node's or one cgroup's tables; busy in percent. */
static void emit_all(struct sli_ctx *ctx, const struct cg_info *c, const struct sli_stats *s, double busy, double cores)
{
	static struct probe_rec r;
	unsigned int sp = ctx->cur.subprobes;

	if (sp & SLI_SP_CPU) {
		rec_key(&r, c ? &TBL_sli_cpu_container_stat : &TBL_sli_cpu_node_stat, c);
		probe_rec__f64(&r, busy);
		probe_rec__f64(&r, cores);
		(void)probe_rt__emit(ctx->rt, &r);
		emit_lats(ctx, c, c ? &TBL_sli_cpu_container_gauge : &TBL_sli_cpu_node_gauge,
			  c ? &TBL_sli_cpu_container_histogram : &TBL_sli_cpu_node_histogram, s->cpu, SLI_CPU_N);
	}
	if (sp & SLI_SP_MEM)
		emit_lats(ctx, c, c ? &TBL_sli_mem_container_gauge : &TBL_sli_mem_node_gauge,
			  c ? &TBL_sli_mem_container_histogram : &TBL_sli_mem_node_histogram, s->mem, SLI_MEM_N);
	if (sp & SLI_SP_IO)
		emit_lats(ctx, c, c ? &TBL_sli_io_container_gauge : &TBL_sli_io_node_gauge,
			  c ? &TBL_sli_io_container_histogram : &TBL_sli_io_node_histogram, &s->io, 1);
}

/* Share of all CPUs not idle since the last call, from /proc/stat (percent). */
static double node_busy(struct sli_ctx *ctx)
{
	static struct probe_buf b;
	unsigned long long v[10] = {0}, total = 0, idle, busy;
	double pct = 0;

	if (probe_read_file("/proc/stat", &b, 1u << 20) ||
	    sscanf(b.data, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6], &v[7], &v[8], &v[9]) < 4)
		return 0;
	for (int i = 0; i < 8; i++) /* guest times are inside user and nice */
		total += v[i];
	idle = v[3] + v[4];
	busy = total - idle;
	if (ctx->prev_total && total > ctx->prev_total)
		pct = 100.0 * (double)(busy - ctx->prev_busy) / (double)(total - ctx->prev_total);
	ctx->prev_busy = busy;
	ctx->prev_total = total;
	return pct;
}

static void report_node(struct sli_ctx *ctx)
{
	__u32 zero = 0;
	double busy = node_busy(ctx);

	if (bpf_map_lookup_elem(bpf_map__fd(ctx->skel->maps.sli_node), &zero, ctx->vals)) {
		probe_log(PLOG_WARN, "reading sli_node: %s", strerror(errno));
		return;
	}
	sum_cpus(ctx->vals, ctx->ncpus, &ctx->sum);
	if (ctx->cur.subprobes & SLI_SP_NODE)
		emit_all(ctx, NULL, &ctx->sum, busy, (double)ctx->node_cores);
}

/* nftw has no argument for its callback: the report in progress. */
static struct sli_ctx *walk_ctx;

/* One cgroup directory of the walk: its tables when it is a container or in scope. */
static int walk_one(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	struct sli_ctx *ctx = walk_ctx;
	const char *rel = fpath + strlen(ctx->cg_mnt);
	char cid[13];
	struct cg_info *c;
	double busy = 0, cores;
	uint64_t usage, now = probe_now_mono_ms();
	__u64 cgid = sb->st_ino;
	int fd, scoped;

	(void)ftw;
	if (type != FTW_D)
		return 0;
	scoped = !ctx->scope.all && in_scope(ctx, cgid);
	container_of_path(rel, cid, sizeof(cid));
	if (!(scoped || (cid[0] && ctx->scope.all)))
		return 0;
	c = cache_get(ctx, cgid);
	if (!c)
		return 0;
	if (strcmp(c->path, rel[0] ? rel : "/")) {
		snprintf(c->path, sizeof(c->path), "%s", rel[0] ? rel : "/");
		memcpy(c->cid, cid, sizeof(cid));
		c->prev_ms = 0;
	}
	/* The cgroup storage map is keyed by a cgroup directory's fd; no storage yet: no event yet. */
	fd = open(fpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(ctx->skel->maps.sli_cgrp), &fd, &ctx->sum))
		memset(&ctx->sum, 0, sizeof(ctx->sum));
	close(fd);
	memset(&ctx->sum.io, 0, sizeof(ctx->sum.io));
	if (bpf_map_lookup_elem(bpf_map__fd(ctx->skel->maps.sli_io_cgrp), &cgid, ctx->io_vals) == 0)
		for (int i = 0; i < ctx->ncpus; i++) {
			ctx->sum.io.ns += ctx->io_vals[i].ns;
			for (int k = 0; k < GG_LOG2_SLOTS; k++)
				ctx->sum.io.slots[k] += ctx->io_vals[i].slots[k];
		}
	cores = cgroup_cores(ctx, c);
	usage = cgroup_usage_us(ctx, c);
	if (c->prev_ms && now > c->prev_ms && cores > 0 && usage >= c->prev_usage_us)
		busy = 100.0 * (double)(usage - c->prev_usage_us) / ((double)(now - c->prev_ms) * 1e3 * cores);
	c->prev_usage_us = usage;
	c->prev_ms = now;
	emit_all(ctx, c, &ctx->sum, busy, cores);
	return 0;
}

/* Container rows: a walk of the cgroup2 tree (the storage map cannot be iterated from user space). */
static void report_cgroups(struct sli_ctx *ctx)
{
	if (ctx->cg_mnt_fd < 0)
		return;
	walk_ctx = ctx;
	if (nftw(ctx->cg_mnt, walk_one, 16, FTW_PHYS | FTW_MOUNT))
		probe_log(PLOG_WARN, "walking %s: %s", ctx->cg_mnt, strerror(errno));
	walk_ctx = NULL;
}

/* One report period (probe_rt__run_periodic). */
static void report(void *arg)
{
	struct sli_ctx *ctx = arg;

	report_node(ctx);
	if (ctx->cur.subprobes & SLI_SP_CONTAINER)
		report_cgroups(ctx);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 16);
}

/* After the command line: buffers, the cgroup2 mount, the BPF programs, the sub-probes. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct sli_ctx *ctx = arg;
	int ret;

	ctx->rt = rt;
	ctx->cg_mnt_fd = -1;
	gg_scope__init(&ctx->scope);
	ctx->node_cores = sysconf(_SC_NPROCESSORS_ONLN);
	ctx->ncpus = libbpf_num_possible_cpus();
	if (ctx->ncpus < 1 || ctx->node_cores < 1) {
		probe_log(PLOG_ERROR, "cannot count the CPUs");
		return -EINVAL;
	}
	ctx->vals = calloc((size_t)ctx->ncpus, sizeof(*ctx->vals));
	ctx->io_vals = calloc((size_t)ctx->ncpus, sizeof(*ctx->io_vals));
	ctx->cache = calloc(CACHE_SLOTS, sizeof(*ctx->cache));
	if (!ctx->vals || !ctx->io_vals || !ctx->cache) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	if (find_cg2_mount(ctx->cg_mnt, sizeof(ctx->cg_mnt)) == 0)
		ctx->cg_mnt_fd = open(ctx->cg_mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctx->cg_mnt_fd < 0)
		probe_log(PLOG_WARN, "no cgroup2 mount: node tables only");
	gg_bpf_begin();
	ctx->skel = sliprobe__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	ret = gg_bpf_load(ctx->skel->skeleton);
	if (ret)
		return ret;
	apply_conf(ctx);
	return 0;
}

static void teardown(void *arg)
{
	struct sli_ctx *ctx = arg;

	if (ctx->cg_mnt_fd >= 0)
		close(ctx->cg_mnt_fd);
	sliprobe__destroy(ctx->skel);
	free(ctx->vals);
	free(ctx->io_vals);
	free(ctx->cache);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct sli_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.setup = setup,
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct sli_conf, subprobes), NULL, applied},
	.period_s = &g_ctx.cur.period_s,
	.describe = describe,
	.report = report,
	.teardown = teardown,
};
