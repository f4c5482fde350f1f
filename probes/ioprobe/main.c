/* main.c - ioprobe ("io"): per disk request counts, bytes, errors, queue and device latency
 * histograms, issuing processes and page cache events, from block/filemap tracepoints. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf_util.h"
#include "ioprobe.h"
#include "ioprobe.meta.h"
#include "io_conf.h"
#include "ioprobe.skel.h"
#include "probe.h"
#include "probe_runner.h"

#define PROG	   "ioprobe"
#define MINORBITS  20
#define HIST_FIRST 0u  /* <= 2 us */
#define HIST_N	   24u /* .. 16.7 s */

extern const struct gg_contract gg_contract_ioprobe;
#define CONTRACT  (&gg_contract_ioprobe)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)
static const char *const dir_names[IO_DIRS] = {"read", "write", "discard"};

/* Slow request count per disk and direction at the previous report, for latency events. */
struct io_prev {
	__u32 dev;
	__u64 slow[IO_DIRS];
};

struct io_ctx {
	struct probe_rt *rt;
	struct ioprobe *skel;
	struct io_conf base, cur;
	int bpf_stats; /* --bpf-stats: set, and collected */
	struct gg_bpf_stats_prev stats_prev[16];
	struct gg_bpf_map_buf devs;  /* io_devs: __u32, struct io_dev_stats */
	struct gg_bpf_map_buf procs; /* io_procs: struct io_proc_key, struct io_proc */
	struct gg_bpf_map_buf pc;    /* io_pc: __u32, ncpus struct io_pagecache */
	int ncpus;
	struct io_prev prev[IO_DEVS_MAX];
	unsigned int nprev;
};

/* --help after the options (generated from the contract). */
static const char notes[] =
	"page_cache's hooks fire on every page cache lookup and dirtying of the host: asked for, never on by\n"
	"default. latency_thr also counts the requests taking that long.\n"
	"Tables: io_latency (io_trace), io_err (io_err), io_count and io_issuer (io_count), io_pagecache\n"
	"(page_cache); event_v2 records (entity block) for latency_thr.\n"
	"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N, \"latency_thr\": MS,\n"
	"\"dev_name\": \"sda\"}}\n";

/* -d names a disk, not a path. */
static int check_args(void *arg)
{
	struct io_ctx *ctx = arg;

	if (strchr(ctx->base.dev_name, '/')) {
		fprintf(stderr, PROG ": invalid disk name '%s' for -d\n", ctx->base.dev_name);
		return -EINVAL;
	}
	return 0;
}

static void apply_conf(struct io_ctx *ctx)
{
	struct ioprobe *s = ctx->skel;
	unsigned int sp = ctx->cur.subprobes;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.io_start, &s->links.io_start, SP_COUNT | SP_TRACE},
		{s->progs.io_issue, &s->links.io_issue, SP_BLOCK},
		{s->progs.io_merge, &s->links.io_merge, SP_BLOCK},
		{s->progs.io_complete, &s->links.io_complete, SP_BLOCK},
		{s->progs.io_pc_access, &s->links.io_pc_access, SP_PAGECACHE},
		{s->progs.io_pc_add, &s->links.io_pc_add, SP_PAGECACHE},
		{s->progs.io_pc_del, &s->links.io_pc_del, SP_PAGECACHE},
		{s->progs.io_pc_dirty, &s->links.io_pc_dirty, SP_PAGECACHE},
		{s->progs.io_pc_bh_dirty, &s->links.io_pc_bh_dirty, SP_PAGECACHE},
	};

	s->bss->latency_thr_ns = (__u64)ctx->cur.latency_thr * 1000000ull;
	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), sp);
}

/* A live configuration's dev_name is a disk name, as -d. */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	const struct io_conf *conf = next;

	(void)data;
	(void)msg;
	if (strchr(conf->dev_name, '/')) {
		probe_log(PLOG_WARN, "configuration: dev_name must be a disk name");
		return -EINVAL;
	}
	return 0;
}

static void applied(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	(void)version;
	(void)msg;
	apply_conf(data);
}

/* After "report period P s, sub-probes a,b" in the started and configuration lines. */
static void describe(void *arg, char *buf, size_t len)
{
	const struct io_ctx *ctx = arg;

	snprintf(buf, len, ", latency_thr %u ms, disk %s", ctx->cur.latency_thr,
		 ctx->cur.dev_name[0] ? ctx->cur.dev_name : "all");
}

/* Name of a block device from sysfs (the BPF side knows disks' names, not file systems'). */
static void dev_name_of(__u32 dev, const char *known, char *buf, size_t len)
{
	static struct probe_buf b;
	char path[64];
	const char *p;

	if (known && known[0]) {
		snprintf(buf, len, "%.*s", 32, known);
		return;
	}
	snprintf(buf, len, "%u:%u", dev >> MINORBITS, dev & ((1u << MINORBITS) - 1));
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", dev >> MINORBITS, dev & ((1u << MINORBITS) - 1));
	if (probe_read_file(path, &b, 8192) == 0 && (p = strstr(b.data, "DEVNAME="))) {
		p += 8;
		snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
	}
}

static struct io_prev *prev_of(struct io_ctx *ctx, __u32 dev)
{
	for (unsigned int i = 0; i < ctx->nprev; i++)
		if (ctx->prev[i].dev == dev)
			return &ctx->prev[i];
	if (ctx->nprev >= IO_DEVS_MAX)
		return NULL;
	memset(&ctx->prev[ctx->nprev], 0, sizeof(ctx->prev[0]));
	ctx->prev[ctx->nprev].dev = dev;
	return &ctx->prev[ctx->nprev++];
}

static void rec_dev(struct probe_rec *r, const struct probe_table *t, __u32 dev)
{
	probe_rec__begin(r, t);
	probe_rec__u64(r, dev >> MINORBITS);
	probe_rec__u64(r, dev & ((1u << MINORBITS) - 1));
}

/* Requests past latency_thr in the period: an event_v2 record (entity block, WARN). */
static void latency_event(struct io_ctx *ctx, __u32 dev, const char *name, int dir, uint64_t slow, uint64_t max_us)
{
	char id[48], body[200], body_zh[240], labels[128];
	size_t used = 0;

	snprintf(id, sizeof(id), "%u_%u", dev >> MINORBITS, dev & ((1u << MINORBITS) - 1));
	snprintf(body, sizeof(body),
		 "%llu %s requests on %s took latency_thr %u ms or longer in the last period; the longest %.1f ms.",
		 (unsigned long long)slow, dir_names[dir], name, ctx->cur.latency_thr, (double)max_us / 1000.0);
	snprintf(body_zh, sizeof(body_zh), "%s 上一周期有 %llu 个%s请求耗时达到 %u 毫秒；最长 %.1f 毫秒。", name,
		 (unsigned long long)slow, dir == IO_READ ? "读" : (dir == IO_WRITE ? "写" : "discard "),
		 ctx->cur.latency_thr, (double)max_us / 1000.0);
	gg_event_label(labels, sizeof(labels), &used, "disk_name", name);
	gg_event_label(labels, sizeof(labels), &used, "rw", dir_names[dir]);
	(void)gg_event_emit(ctx->rt, "block", id, "latency_req_max", "WARN", body, body_zh, labels);
}

static void report_devs(struct io_ctx *ctx, __u64 period)
{
	static struct probe_rec r;
	unsigned int sp = ctx->cur.subprobes;
	uint32_t n = gg_bpf_map_buf__read(&ctx->devs, ctx->skel->maps.io_devs);
	const __u32 *keys = ctx->devs.keys;
	const struct io_dev_stats *vals = ctx->devs.vals;
	char name[64];

	for (uint32_t i = 0; i < n; i++) {
		const struct io_dev_stats *d = &vals[i];
		__u32 dev = keys[i];
		struct io_prev *prev = prev_of(ctx, dev);

		dev_name_of(dev, d->disk_name, name, sizeof(name));
		if (ctx->cur.dev_name[0] && strcmp(ctx->cur.dev_name, name))
			continue;
		if (sp & SP_COUNT) {
			rec_dev(&r, &TBL_io_count, dev);
			probe_rec__str(&r, name);
			for (int k = 0; k < IO_DIRS; k++)
				probe_rec__u64(&r, d->dir[k].ios);
			for (int k = 0; k < IO_DIRS; k++)
				probe_rec__u64(&r, d->dir[k].bytes);
			(void)probe_rt__emit(ctx->rt, &r);
		}
		for (int k = 0; k < IO_DIRS; k++) {
			const struct io_dir_stats *s = &d->dir[k];
			uint64_t cnt = gg_hist_count(s->dev_hist);
			uint64_t max = s->max_period == period ? s->max_us : 0;

			if (!s->ios && !s->errors && !cnt)
				continue;
			if (sp & SP_TRACE) {
				rec_dev(&r, &TBL_io_latency, dev);
				probe_rec__str(&r, dir_names[k]);
				probe_rec__str(&r, name);
				probe_rec__u64(&r, cnt);
				probe_rec__u64(&r, s->total_sum_us);
				probe_rec__u64(&r, max);
				probe_rec__u64(&r, s->queue_sum_us);
				probe_rec__u64(&r, s->dev_sum_us);
				gg_hist_rec(&r, s->queue_hist, HIST_FIRST, HIST_N, 1.0, (double)s->queue_sum_us);
				gg_hist_rec(&r, s->dev_hist, HIST_FIRST, HIST_N, 1.0, (double)s->dev_sum_us);
				probe_rec__u64(&r, s->slow);
				(void)probe_rt__emit(ctx->rt, &r);
			}
			if ((sp & SP_ERR) && s->errors) {
				rec_dev(&r, &TBL_io_err, dev);
				probe_rec__str(&r, dir_names[k]);
				probe_rec__str(&r, name);
				probe_rec__u64(&r, s->errors);
				probe_rec__u64(&r, s->last_error);
				(void)probe_rt__emit(ctx->rt, &r);
			}
			if (prev && ctx->cur.latency_thr && s->slow > prev->slow[k])
				latency_event(ctx, dev, name, k, s->slow - prev->slow[k], max);
			if (prev)
				prev->slow[k] = s->slow;
		}
	}
}

static void report_procs(struct io_ctx *ctx)
{
	static struct probe_rec r;
	uint32_t n = gg_bpf_map_buf__read(&ctx->procs, ctx->skel->maps.io_procs);
	const struct io_proc_key *keys = ctx->procs.keys;
	const struct io_proc *vals = ctx->procs.vals;
	char name[64];

	for (uint32_t i = 0; i < n; i++) {
		const struct io_proc_key *k = &keys[i];
		const struct io_proc *p = &vals[i];

		dev_name_of(k->dev, NULL, name, sizeof(name));
		if (!ctx->cur.dev_name[0] || !strcmp(ctx->cur.dev_name, name)) {
			rec_dev(&r, &TBL_io_issuer, k->dev);
			probe_rec__u64(&r, k->tgid);
			probe_rec__str(&r, name);
			probe_rec__strn(&r, p->comm, strnlen(p->comm, sizeof(p->comm)));
			probe_rec__u64(&r, p->ios[0]);
			probe_rec__u64(&r, p->ios[1]);
			probe_rec__u64(&r, p->bytes[0]);
			probe_rec__u64(&r, p->bytes[1]);
			(void)probe_rt__emit(ctx->rt, &r);
		}
	}
	/* Reported one last time: forget processes that are gone. */
	(void)gg_bpf_map_buf__forget_gone(&ctx->procs, ctx->skel->maps.io_procs, n, offsetof(struct io_proc_key, tgid));
}

static void report_pagecache(struct io_ctx *ctx)
{
	static struct probe_rec r;
	/* Per CPU values: one struct io_pagecache per possible CPU, summed here. */
	uint32_t ncpu = (uint32_t)ctx->ncpus;
	uint32_t n = gg_bpf_map_buf__read(&ctx->pc, ctx->skel->maps.io_pc);
	const __u32 *keys = ctx->pc.keys;
	const struct io_pagecache *vals = ctx->pc.vals;
	char name[64];

	for (uint32_t i = 0; i < n; i++) {
		struct io_pagecache sum = {0}, *p = &sum;

		for (uint32_t c = 0; c < ncpu; c++) {
			const struct io_pagecache *v = &vals[(size_t)i * ncpu + c];

			sum.access += v->access;
			sum.add += v->add;
			sum.remove += v->remove;
			sum.dirty += v->dirty;
			sum.buffer_dirty += v->buffer_dirty;
		}

		dev_name_of(keys[i], NULL, name, sizeof(name));
		if (ctx->cur.dev_name[0] && strcmp(ctx->cur.dev_name, name))
			continue;
		rec_dev(&r, &TBL_io_pagecache, keys[i]);
		probe_rec__str(&r, name);
		probe_rec__u64(&r, p->access);
		probe_rec__u64(&r, p->add);
		probe_rec__u64(&r, p->remove);
		probe_rec__u64(&r, p->dirty);
		probe_rec__u64(&r, p->buffer_dirty);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

/* One report period (probe_rt__run_periodic). */
static void report(void *arg)
{
	struct io_ctx *ctx = arg;
	/* Maxima are per period: read this period's, then start the next one. */
	__u64 period = ctx->skel->bss->io_period;

	if (ctx->cur.subprobes & SP_BLOCK)
		report_devs(ctx, period);
	ctx->skel->bss->io_period = period + 1;
	if (ctx->cur.subprobes & SP_COUNT)
		report_procs(ctx);
	if (ctx->cur.subprobes & SP_PAGECACHE)
		report_pagecache(ctx);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 16);
}

/* Requests that can be in flight at once: twice the sum of the block devices' queue depths
 * (/sys/block/<dev>/queue/nr_requests), as a power of two in [IO_INFLIGHT_MIN, IO_INFLIGHT_MAX]. The
 * LRU map was 65536 entries (6.5 MiB) whatever the machine; an entry evicted before its completion
 * shows as a completion without latency (count_latency_req below the device's read/write counts). */
static unsigned int inflight_entries(void)
{
	unsigned long sum = 0;
	unsigned int n = IO_INFLIGHT_MIN;
	struct dirent *e;
	DIR *d = opendir("/sys/block");

	while (d && (e = readdir(d)) != NULL) {
		char path[320], buf[32];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", e->d_name);
		FILE *f = fopen(path, "re");

		if (f && fgets(buf, sizeof(buf), f))
			sum += strtoul(buf, NULL, 10);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	while (n < 2 * sum && n < IO_INFLIGHT_MAX)
		n <<= 1;
	return n;
}

/* After the command line: dump buffers, the BPF programs, everything in scope, the sub-probes. */
static int setup(void *arg, struct probe_rt *rt)
{
	static struct gg_scope all;
	struct io_ctx *ctx = arg;
	int ret;

	ctx->rt = rt;
	ctx->ncpus = libbpf_num_possible_cpus();
	if (ctx->ncpus < 1) {
		probe_log(PLOG_ERROR, "cannot count the possible CPUs: %s", strerror(-ctx->ncpus));
		return ctx->ncpus < 0 ? ctx->ncpus : -EINVAL;
	}
	if (gg_bpf_map_buf__alloc(&ctx->devs, sizeof(__u32), sizeof(struct io_dev_stats), IO_DEVS_MAX) ||
	    gg_bpf_map_buf__alloc(&ctx->procs, sizeof(struct io_proc_key), sizeof(struct io_proc), IO_PROCS_MAX) ||
	    gg_bpf_map_buf__alloc(&ctx->pc, sizeof(__u32), sizeof(struct io_pagecache) * (uint32_t)ctx->ncpus,
				  IO_DEVS_MAX)) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	gg_bpf_begin();
	ctx->skel = ioprobe__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	ret = bpf_map__set_max_entries(ctx->skel->maps.io_inflight, inflight_entries());
	if (ret) {
		probe_log(PLOG_ERROR, "cannot size io_inflight: %s", strerror(-ret));
		return ret;
	}
	ret = gg_bpf_load(ctx->skel->skeleton);
	if (ret)
		return ret;
	/* ioprobe has no snoopers: everything is in scope. */
	gg_scope__init(&all);
	(void)gg_scope__apply(&all, ctx->skel->obj);
	apply_conf(ctx);
	return 0;
}

static void teardown(void *arg)
{
	struct io_ctx *ctx = arg;

	ioprobe__destroy(ctx->skel);
	gg_bpf_map_buf__free(&ctx->devs);
	gg_bpf_map_buf__free(&ctx->procs);
	gg_bpf_map_buf__free(&ctx->pc);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct io_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.check_args = check_args,
	.setup = setup,
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct io_conf, subprobes), check_conf, applied},
	.period_s = &g_ctx.cur.period_s,
	.describe = describe,
	.report = report,
	.teardown = teardown,
};
