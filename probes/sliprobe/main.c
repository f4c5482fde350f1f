/* main.c - sliprobe ("sli"): per node and per container CPU scheduling latencies (run-queue delay,
 * sleep, IO wait, block, long system time), memory stalls (reclaim, compaction) and block request
 * latency, from scheduler, vmscan, compaction and block tracepoints (no schedstats, no kprobes). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf_util.h"
#include "probe_scope.h"
#include "sli_conf.h"
#include "sliprobe.h"
#include "sliprobe.meta.h"
#include "sliprobe.skel.h"
#include "probe.h"

#define PROBE_NAME    "sli"
#define PROG	      "sliprobe"
#define NODE_KEY      "sli_node_key"
#define HIST_FIRST    9u  /* bucket 0: below 1024 ns */
#define HIST_N	      22u /* last bucket: below 2^31 ns (2.1 s); longer ones are the overflow */
#define DUMP_BATCH    64u
#define CACHE_SLOTS   8192u /* twice SLI_CGROUPS_MAX: open addressing stays short */
#define FILEID_KERNFS 0xfe

extern const struct gg_contract gg_contract_sliprobe;
#define CONTRACT  (&gg_contract_sliprobe)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)

/* What user space knows of a cgroup: its path, container id and CPU time at the last report. */
struct cg_info {
	__u64 cgid; /* 0: free slot */
	char path[256];
	char cid[13];	     /* 12 hex digits, "" when the path names no container */
	int resolved;	     /* path looked up (it may have failed: path "") */
	__u64 prev_oncpu_ns; /* at the previous report */
	uint64_t prev_ms;
};

struct sli_ctx {
	struct probe_rt *rt;
	struct sliprobe *skel;
	struct sli_conf base, cur;
	unsigned int attached; /* hook sub-probes attached now */
	int stats_fd;
	struct gg_bpf_stats_prev stats_prev[16];
	int ncpus;
	__u64 *keys;
	struct sli_stats *vals; /* DUMP_BATCH * ncpus */
	struct sli_stats sum;
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

static int parse_args(int argc, char **argv, struct sli_ctx *ctx, enum probe_log_level *level, int *bpf_stats)
{
	const struct probe_args a = {.prog = PROG,
				     .contract = CONTRACT,
				     .conf = &ctx->base,
				     .subprobes = &ctx->base.subprobes,
				     .level = level,
				     .scope = &ctx->scope,
				     .bpf_stats = bpf_stats,
				     .notes = notes};

	return probe_conf__parse_args(&a, argc, argv);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void apply_conf(struct sli_ctx *ctx)
{
	struct sliprobe *s = ctx->skel;
	unsigned int sp = ctx->cur.subprobes & SLI_SP_HOOKS;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.sli_switch, &s->links.sli_switch, SLI_SP_CPU},
		{s->progs.sli_wakeup, &s->links.sli_wakeup, SLI_SP_CPU},
		{s->progs.sli_wakeup_new, &s->links.sli_wakeup_new, SLI_SP_CPU},
		{s->progs.sli_dreclaim_begin, &s->links.sli_dreclaim_begin, SLI_SP_MEM},
		{s->progs.sli_dreclaim_end, &s->links.sli_dreclaim_end, SLI_SP_MEM},
		{s->progs.sli_mreclaim_begin, &s->links.sli_mreclaim_begin, SLI_SP_MEM},
		{s->progs.sli_mreclaim_end, &s->links.sli_mreclaim_end, SLI_SP_MEM},
		{s->progs.sli_compact_begin, &s->links.sli_compact_begin, SLI_SP_MEM},
		{s->progs.sli_compact_end, &s->links.sli_compact_end, SLI_SP_MEM},
		{s->progs.sli_io_start, &s->links.sli_io_start, SLI_SP_IO},
		{s->progs.sli_io_done, &s->links.sli_io_done, SLI_SP_IO},
	};
	const struct gg_bpf_hook *bad = NULL;
	int err;

	/* Hooks coming back: stamps left from before they went off span an unwatched time. */
	if (sp & ~ctx->attached)
		s->bss->sli_epoch_ns = mono_ns();
	err = gg_bpf_apply_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), sp, &bad);
	if (err)
		probe_log(PLOG_WARN, "cannot attach %s: %s", bpf_program__name(bad->prog), strerror(-err));
	ctx->attached = sp;
}

static int on_config(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct sli_ctx *ctx = data;
	struct sli_conf conf = ctx->base;
	char names[80];
	int err = probe_conf__apply(CONTRACT, msg, &conf, &conf.subprobes);

	if (err < 0)
		return err;
	if (msg->has_scope)
		ctx->scope = msg->scope;
	ctx->cur = conf;
	apply_conf(ctx);
	gg_subprobes_str(conf.subprobes, SUBPROBES, NSUB, names, sizeof(names));
	probe_log(PLOG_INFO, "configuration %llu: report period %u s, sub-probes %s, scope %s",
		  (unsigned long long)version, conf.period_s, names, ctx->scope.all ? "all" : "cgroups given");
	probe_rt__wake(ctx->rt);
	return 0;
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

/* The container id a cgroup path names: the last component holding a run of exactly 64 hex digits
 * (docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>.scope, libpod-<id>.scope, /docker/<id>),
 * cut to gala-gopher's 12 digits; "" when none does. */
static void container_of_path(const char *path, char *cid, size_t len)
{
	const char *p = path + strlen(path);

	cid[0] = 0;
	while (p > path) {
		const char *end = p, *start;

		while (end > path && end[-1] == '/')
			end--;
		start = end;
		while (start > path && start[-1] != '/')
			start--;
		for (const char *q = start; q < end;) {
			const char *r = q;

			while (r < end && ((*r >= '0' && *r <= '9') || (*r >= 'a' && *r <= 'f')))
				r++;
			if (r - q == 64) {
				snprintf(cid, len, "%.12s", q);
				return;
			}
			q = r < end ? r + 1 : end;
		}
		p = start;
		if (p > path)
			p--;
	}
}

/* Path of cgroup cgid below the cgroup2 mount: open_by_handle_at with a kernfs file handle (the id),
 * then the fd's link. 0 or negative errno. */
static int cgroup_path(struct sli_ctx *ctx, __u64 cgid, char *buf, size_t len)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = {.fh = {.handle_bytes = sizeof(__u64), .handle_type = FILEID_KERNFS}};
	char link[64], target[512];
	size_t mlen = strlen(ctx->cg_mnt);
	ssize_t n;
	int fd;

	if (ctx->cg_mnt_fd < 0)
		return -ENOENT;
	memcpy(h.fh.f_handle, &cgid, sizeof(cgid));
	fd = open_by_handle_at(ctx->cg_mnt_fd, &h.fh, O_RDONLY);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (strncmp(target, ctx->cg_mnt, mlen))
		return -ENOENT;
	snprintf(buf, len, "%s", target[mlen] ? target + mlen : "/");
	return 0;
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

static void resolve(struct sli_ctx *ctx, struct cg_info *c)
{
	if (c->resolved)
		return;
	c->resolved = 1;
	if (cgroup_path(ctx, c->cgid, c->path, sizeof(c->path)))
		c->path[0] = 0;
	container_of_path(c->path, c->cid, sizeof(c->cid));
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

static void report_cgroups(struct sli_ctx *ctx)
{
	struct gg_bpf_dump_cursor cur = {0};
	int fd = bpf_map__fd(ctx->skel->maps.sli_cgrp);
	uint32_t vsz = (uint32_t)(sizeof(struct sli_stats) * (size_t)ctx->ncpus);
	uint64_t now = probe_now_mono_ms();

	while (!cur.done) {
		uint32_t n = 0;
		int err = gg_bpf_map_dump(fd, &cur, ctx->keys, ctx->vals, sizeof(__u64), vsz, DUMP_BATCH, &n, 0);

		if (err) {
			probe_log(PLOG_WARN, "reading sli_cgrp: %s", strerror(-err));
			return;
		}
		for (uint32_t i = 0; i < n; i++) {
			struct cg_info *c = cache_get(ctx, ctx->keys[i]);
			int scoped = !ctx->scope.all && in_scope(ctx, ctx->keys[i]);
			double busy = 0, cores;

			if (!c)
				continue;
			resolve(ctx, c);
			/* Containers, or what the scope names; never a cgroup whose path is unknown. */
			if (!c->path[0] || !(scoped || (c->cid[0] && ctx->scope.all)))
				continue;
			sum_cpus((const struct sli_stats *)((const char *)ctx->vals + (size_t)i * vsz), ctx->ncpus,
				 &ctx->sum);
			cores = cgroup_cores(ctx, c);
			if (c->prev_ms && now > c->prev_ms && cores > 0 && ctx->sum.oncpu_ns >= c->prev_oncpu_ns)
				busy = 100.0 * (double)(ctx->sum.oncpu_ns - c->prev_oncpu_ns) /
				       ((double)(now - c->prev_ms) * 1e6 * cores);
			c->prev_oncpu_ns = ctx->sum.oncpu_ns;
			c->prev_ms = now;
			emit_all(ctx, c, &ctx->sum, busy, cores);
		}
	}
}

/* One report period (probe_rt__run_periodic). */
static void report(void *arg)
{
	struct sli_ctx *ctx = arg;

	report_node(ctx);
	if (ctx->cur.subprobes & SLI_SP_CONTAINER)
		report_cgroups(ctx);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->stats_fd >= 0)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 16);
}

static int setup_bpf(struct sli_ctx *ctx)
{
	struct sliprobe *s;

	gg_bpf_begin();
	s = sliprobe__open();
	if (!s)
		return -errno;
	ctx->skel = s;
	gg_bpf_autoload(s->obj);
	return sliprobe__load(s);
}

int main(int argc, char **argv)
{
	static struct sli_ctx ctx;
	enum probe_log_level level = PLOG_INFO;
	struct probe_rt_opts opts = {.name = PROBE_NAME, .on_config = on_config, .cb_ctx = &ctx};
	int bpf_stats = 0, ret, status = 1;
	char names[80];

	probe_log_setup(PROBE_NAME, PLOG_INFO);
	gg_params__defaults(CONTRACT->params, CONTRACT->nparams, &ctx.base);
	ctx.base.subprobes = gg_contract__default_subprobes(CONTRACT);
	gg_scope__init(&ctx.scope);
	ctx.stats_fd = -1;
	ctx.cg_mnt_fd = -1;
	ret = parse_args(argc, argv, &ctx, &level, &bpf_stats);
	if (ret >= 0)
		return ret;
	ctx.cur = ctx.base;
	ctx.rt = probe_rt__start(&opts, level);
	if (!ctx.rt)
		return 1;
	ctx.node_cores = sysconf(_SC_NPROCESSORS_ONLN);
	ctx.ncpus = libbpf_num_possible_cpus();
	if (ctx.ncpus < 1 || ctx.node_cores < 1) {
		probe_log(PLOG_ERROR, "cannot count the CPUs");
		goto out;
	}
	ctx.keys = calloc(DUMP_BATCH, sizeof(*ctx.keys));
	ctx.vals = calloc((size_t)DUMP_BATCH * (size_t)ctx.ncpus, sizeof(*ctx.vals));
	ctx.cache = calloc(CACHE_SLOTS, sizeof(*ctx.cache));
	if (!ctx.keys || !ctx.vals || !ctx.cache) {
		probe_log(PLOG_ERROR, "out of memory");
		goto out;
	}
	if (find_cg2_mount(ctx.cg_mnt, sizeof(ctx.cg_mnt)) == 0)
		ctx.cg_mnt_fd = open(ctx.cg_mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctx.cg_mnt_fd < 0)
		probe_log(PLOG_WARN, "no cgroup2 mount: node tables only");
	ret = setup_bpf(&ctx);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-ret));
		goto out;
	}
	ctx.stats_fd = gg_bpf_stats_start(bpf_stats);
	apply_conf(&ctx);
	gg_subprobes_str(ctx.cur.subprobes, SUBPROBES, NSUB, names, sizeof(names));
	probe_log(PLOG_INFO, "started: report period %u s, sub-probes %s, cgroup2 at %s", ctx.cur.period_s, names,
		  ctx.cg_mnt_fd >= 0 ? ctx.cg_mnt : "(none)");

	probe_rt__run_periodic(ctx.rt, &ctx.cur.period_s, report, &ctx);
	status = 0;
	probe_log(PLOG_INFO, "stopping: %llu records emitted, %llu invalid",
		  (unsigned long long)probe_rt__records_emitted(ctx.rt),
		  (unsigned long long)probe_rt__records_invalid(ctx.rt));
out:
	if (ctx.stats_fd >= 0)
		close(ctx.stats_fd);
	if (ctx.cg_mnt_fd >= 0)
		close(ctx.cg_mnt_fd);
	sliprobe__destroy(ctx.skel);
	free(ctx.keys);
	free(ctx.vals);
	free(ctx.cache);
	probe_rt__free(ctx.rt);
	return status;
}
