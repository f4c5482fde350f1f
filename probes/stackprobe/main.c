/* main.c - stackprobe ("flamegraph"): on-CPU, off-CPU and page-fault stacks of the processes in scope,
 * written every svg_period as folded stacks, SVG flame graphs and pprof profiles, kept in a profile
 * store for the query API, and uploaded to Pyroscope when a server is set. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "probe_runner.h"
#include "stackprobe.h"
#include "stackprobe.meta.h"

#define PROG	 "stackprobe"
#define DRAIN_MS 1000u
/* Between drains, the .eh_frame tables the BPF side asks for are built this often (until then a new
 * process's or library's frames are walked by frame pointers). */
#define UNWIND_TICK_MS	200u
#define COMM_RESCAN_MS	2000u
#define FILES_KEPT	720u /* per event directory and kind of file */
#define STORE_MAX_BYTES (256ull << 20)
#define PYRO_TIMEOUT_MS 3000u
#define COMMS_MAX	16u
/* Under the supervisor the first configuration carries the scope: sample nothing until it is there
 * (or this long has passed: a probe from the configuration file may get none). */
#define FIRST_CONFIG_WAIT_MS 3000u

struct sp_ctx {
	struct probe_rt *rt;
	struct sp_conf base, cur;
	struct sp_sampler *sampler;
	struct sp_profile prof;
	/* standalone scope by name: re-resolved periodically (processes come and go) */
	char comms[COMMS_MAX][16];
	unsigned int ncomms;
	struct gg_scope scope;	    /* applied */
	struct gg_scope base_scope; /* from the command line */
	int scope_from_ctrl;
	uint64_t t_drain, t_report, t_comm, t_store, t_svg, t_pyro; /* monotonic ms of the last of each */
	uint64_t files_written, files_failed, pyro_ok, pyro_err;
};

extern const struct gg_contract gg_contract_stackprobe;
#define CONTRACT       (&gg_contract_stackprobe)
#define subprobe_names (CONTRACT->subprobes)
#define NSUBPROBES     (CONTRACT->nsubprobes)

/* --help after the options (generated from the contract). */
static const char notes[] =
	"On-CPU (CPU clock), off-CPU (sched_switch, weighted by blocked time) and page fault stacks.\n"
	"Every svg period: <flame_dir>/<event>/<time>_<event>.folded and .pb.gz (pprof),\n"
	"<svg_dir>/<event>/<time>_<event>.svg; every store period: the profile store under\n"
	"<flame_dir>/store/ (the REST query API reads it); records stackprobe_stats and\n"
	"stackprobe_health every report period (on stdout without the supervisor).\n"
	"Live configuration: {\"cmd\": {\"probe\": [\"oncpu\", \"offcpu\", \"mem\"]}, \"params\": {...},\n"
	"\"scope\": {\"all\": bool, \"pids\": [...], \"cgroup_ids\": [...]}}\n";

static int copy_str(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -ENAMETOOLONG;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/* stackprobe's own options: --store-period, --pyroscope-period, --comm (repeatable). */
static int own_option(void *data, int id, const char *arg)
{
	struct sp_ctx *ctx = data;
	unsigned int *period = id == 's' ? &ctx->base.store_period_s : &ctx->base.pyro_period_s;

	if (id == 'c') {
		if (ctx->ncomms >= COMMS_MAX || copy_str(ctx->comms[ctx->ncomms], 16, arg) || !arg[0])
			goto bad;
		ctx->ncomms++;
		ctx->base_scope.all = 0;
		return 0;
	}
	if (!probe_parse_uint(arg, 1, 600, period))
		return 0;
bad:
	fprintf(stderr, PROG ": invalid value '%s' for %s\nTry '" PROG " --help'.\n", arg,
		id == 'c'   ? "--comm"
		: id == 's' ? "--store-period"
			    : "--pyroscope-period");
	return 2;
}

static const struct probe_opt own[] = {
	{"store-period", 0, required_argument, 's', "SEC", "profile store period, 1..600 (default 10)"},
	{"pyroscope-period", 0, required_argument, 'p', "SEC", "Pyroscope upload period, 1..600 (default 30)"},
	{"comm", 0, required_argument, 'c', "NAME", "only processes with this name (repeatable; every 2 s)"},
};

/* ---- live configuration -------------------------------------------------------------------------- */

/* A live configuration (probe_runner_conf): next is refused with an empty directory or a scope the
 * sampler cannot take. */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct sp_ctx *ctx = data;
	const struct sp_conf *c = next;
	int err;

	if (!c->svg_dir[0] || !c->flame_dir[0]) {
		probe_log(PLOG_WARN, "configuration: svg_dir and flame_dir must not be empty");
		return -EINVAL;
	}
	err = sp_sampler__config_scope(ctx->sampler, msg, &ctx->scope);
	if (err < 0)
		return err;
	if (err)
		ctx->scope_from_ctrl = 1;
	return 0;
}

/* After the "sub-probes a,b" of the runner's "started:" and "configuration V:" lines. */
static void describe(void *data, char *buf, size_t len)
{
	const struct sp_ctx *ctx = data;
	const struct sp_conf *c = &ctx->cur;

	snprintf(buf, len,
		 ", perf period %u ms, svg period %u s, flame_dir %s, svg_dir %s, pyroscope %s, multi_instance %d, "
		 "scope %s",
		 c->perf_period_ms, c->svg_period_s, c->flame_dir, c->svg_dir, c->pyroscope[0] ? c->pyroscope : "off",
		 c->multi_instance, ctx->scope.all ? "all" : "filtered");
}

/* ---- outputs ----------------------------------------------------------------------------------- */

static void time_stamp(uint64_t wall_ms, char *buf, size_t len)
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(buf, len, "%Y%m%d%H%M%S", &tm);
}

static void write_failed(struct sp_ctx *ctx, const char *dir, const char *name, int err)
{
	ctx->files_failed++;
	probe_log(PLOG_WARN, "cannot write %s/.../%s: %s", dir, name, strerror(-err));
}

static void write_graphs(struct sp_ctx *ctx, enum sp_event ev, const char *folded, size_t len, const char *stamp,
			 const char *suffix, uint64_t from_ms, uint64_t until_ms)
{
	const char *const *units = sp_event_units;
	const struct sp_conf *c = &ctx->cur;
	char name[160], title[128], sub[160];
	struct sp_svg_opts so = {.title = title, .subtitle = sub, .unit = units[ev], .unit_scale = 1};
	struct sp_pprof_opts po = {0};
	char from_s[32], until_s[32];
	int err, fdir, sdir;

	/* confined below the output base: a directory swapped for a symlink after the REST check fails */
	fdir = probe_outdir__open_sub(c->flame_dir, sp_event_names[ev], 1);
	sdir = fdir < 0 ? fdir : probe_outdir__open_sub(c->svg_dir, sp_event_names[ev], 1);
	if (fdir < 0 || sdir < 0) {
		ctx->files_failed++;
		probe_log(PLOG_WARN, "cannot open %s/%s or %s/%s for writing: %s", c->flame_dir, sp_event_names[ev],
			  c->svg_dir, sp_event_names[ev], strerror(-(fdir < 0 ? fdir : sdir)));
		if (fdir >= 0)
			close(fdir);
		return;
	}
	snprintf(name, sizeof(name), "%s_%s%s.folded", stamp, sp_event_names[ev], suffix);
	if ((err = probe_outdir__write(fdir, name, folded, len)))
		write_failed(ctx, c->flame_dir, name, err);
	else
		ctx->files_written++;

	time_stamp(from_ms, from_s, sizeof(from_s));
	time_stamp(until_ms, until_s, sizeof(until_s));
	snprintf(title, sizeof(title), "%s flame graph%s%s",
		 ev == SP_EV_ONCPU	? "On-CPU"
		 : ev == SP_EV_OFFCPU	? "Off-CPU"
		 : ev == SP_EV_MEM	? "Page fault"
		 : ev == SP_EV_MEM_LIVE ? "Live allocation (bytes not freed)"
					: "Allocation (bytes)",
		 suffix[0] ? " of process " : "", suffix[0] ? suffix + 1 : "");
	snprintf(sub, sizeof(sub), "%s - %s (gala-gopher stackprobe, values in %s)", from_s, until_s, units[ev]);
	snprintf(name, sizeof(name), "%s_%s%s.svg", stamp, sp_event_names[ev], suffix);
	if ((err = sp_svg__write(sdir, name, folded, len, &so)))
		write_failed(ctx, c->svg_dir, name, err);
	else
		ctx->files_written++;

	po.time_ns = (int64_t)from_ms * 1000000;
	po.duration_ns = (int64_t)(until_ms - from_ms) * 1000000;
	sp_pprof__event_opts(ev, c->perf_period_ms, &po);
	snprintf(name, sizeof(name), "%s_%s%s.pb.gz", stamp, sp_event_names[ev], suffix);
	if ((err = sp_pprof__write(fdir, name, folded, len, &po)))
		write_failed(ctx, c->flame_dir, name, err);
	else
		ctx->files_written++;
	close(fdir);
	close(sdir);
}

/* Distinct tgids of sorted-by-key entries (for multi_instance). */
static uint32_t *entry_tgids(struct ftab_ent **ents, size_t n, size_t *ret_n)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
	size_t m = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < m && v[j] != ents[i]->a; j++)
			;
		if (j == m)
			v[m++] = ents[i]->a;
	}
	*ret_n = m;
	return v;
}

/* Where each_folded's texts go: flame graphs of a period, or Pyroscope uploads (from, until in s). */
struct folded_out {
	struct sp_ctx *ctx;
	enum sp_event ev;
	const char *name; /* the time stamp of the files, or the Pyroscope application */
	uint64_t from, until;
};

/* fn with the folded text of ents: one per process (per_tgid, with its tgid) in multi_instance mode,
 * else one for all. */
static void each_folded(struct ftab_ent **ents, size_t n, int multi,
			void (*fn)(const struct folded_out *o, int per_tgid, uint32_t tgid, const char *folded,
				   size_t len),
			const struct folded_out *o)
{
	size_t nt = 1;
	uint32_t *tg = multi ? entry_tgids(ents, n, &nt) : NULL;

	for (size_t i = 0; (tg || !multi) && i < nt; i++) {
		char *folded = NULL;
		size_t len = 0;

		if (!sp_folded__build(ents, n, multi ? 1 : 0, tg ? tg[i] : 0, &folded, &len))
			fn(o, multi, tg ? tg[i] : 0, folded, len);
		free(folded);
	}
	free(tg);
}

static void graphs_out(const struct folded_out *o, int per_tgid, uint32_t tgid, const char *folded, size_t len)
{
	char suffix[16] = "";

	if (per_tgid)
		snprintf(suffix, sizeof(suffix), "_%u", tgid);
	write_graphs(o->ctx, o->ev, folded, len, o->name, suffix, o->from, o->until);
}

static void flush_period(struct sp_ctx *ctx, enum sp_event ev, uint64_t now_ms)
{
	struct sp_acc *acc = &ctx->prof.acc[ev];
	struct folded_out out;
	struct ftab_ent **ents;
	char stamp[32];
	int dfd;
	size_t n = 0;

	if (!acc->period.n)
		goto done;
	ents = ftab__list(&acc->period, 1, &n);
	if (!ents)
		goto done;
	time_stamp(now_ms, stamp, sizeof(stamp));
	out = (struct folded_out){ctx, ev, stamp, acc->period_from_ms, now_ms};
	each_folded(ents, n, ctx->cur.multi_instance, graphs_out, &out);
	free(ents);
	dfd = probe_outdir__open_sub(ctx->cur.flame_dir, sp_event_names[ev], 0);
	if (dfd >= 0) {
		sp_dir_trim(dfd, ".folded", FILES_KEPT);
		sp_dir_trim(dfd, ".pb.gz", FILES_KEPT);
		close(dfd);
	}
	dfd = probe_outdir__open_sub(ctx->cur.svg_dir, sp_event_names[ev], 0);
	if (dfd >= 0) {
		sp_dir_trim(dfd, ".svg", FILES_KEPT);
		close(dfd);
	}
done:
	ftab__clear(&acc->period);
	acc->period_from_ms = now_ms;
}

static void flush_store(struct sp_ctx *ctx, enum sp_event ev, uint64_t now_ms)
{
	struct sp_acc *acc = &ctx->prof.acc[ev];
	unsigned int period_us = ev == SP_EV_ONCPU ? ctx->cur.perf_period_ms * 1000u : 0;
	int err = sp_store__write(ctx->cur.flame_dir, ev, acc->store_from_ms, now_ms, period_us, &acc->store);

	if (err) {
		ctx->files_failed++;
		probe_log(PLOG_WARN, "profile store (%s/store): %s", ctx->cur.flame_dir, strerror(-err));
	} else if (acc->store.n)
		ctx->files_written++;
	ftab__clear(&acc->store);
	acc->store_from_ms = now_ms;
}

static void upload_one(struct sp_ctx *ctx, enum sp_event ev, const char *name, const char *body, size_t len,
		       uint64_t from_s, uint64_t until_s)
{
	const char *units = ev == SP_EV_MEM ? "objects" : ev >= SP_EV_MEM_ALLOC ? "bytes" : "samples";
	/* Pyroscope divides samples by sampleRate for seconds: oncpu samples are 1/rate s, offcpu
	 * values are microseconds */
	unsigned int rate = ev == SP_EV_ONCPU ? 1000u / ctx->cur.perf_period_ms : ev == SP_EV_OFFCPU ? 1000000u : 1u;
	int status = 0, err;

	err = sp_pyro__upload(ctx->cur.pyroscope, name, from_s, until_s, units, rate, body, len, PYRO_TIMEOUT_MS,
			      &status);
	if (err) {
		if (ctx->pyro_err++ < 10 || !(ctx->pyro_err % 100))
			probe_log(PLOG_WARN, "pyroscope upload to %s (%s): %s (HTTP %d)", ctx->cur.pyroscope, name,
				  strerror(-err), status);
	} else {
		ctx->pyro_ok++;
	}
}

static void pyro_out(const struct folded_out *o, int per_tgid, uint32_t tgid, const char *folded, size_t len)
{
	char name[64];

	if (per_tgid)
		snprintf(name, sizeof(name), "%s.%u", o->name, tgid);
	else
		snprintf(name, sizeof(name), "%s", o->name);
	upload_one(o->ctx, o->ev, name, folded, len, o->from, o->until);
}

static void flush_pyro(struct sp_ctx *ctx, enum sp_event ev, uint64_t now_ms)
{
	static const char *const app[SP_EV_NR] = {"gala-gopher-oncpu", "gala-gopher-offcpu", "gala-gopher-mem",
						  "gala-gopher-mem_alloc", "gala-gopher-mem_live"};
	struct sp_acc *acc = &ctx->prof.acc[ev];
	uint64_t from_s = acc->pyro_from_ms / 1000, until_s = now_ms / 1000;
	struct folded_out out;
	struct ftab_ent **ents;
	size_t n = 0;

	if (!ctx->cur.pyroscope[0] || !acc->pyro.n)
		goto done;
	ents = ftab__list(&acc->pyro, 1, &n);
	if (!ents)
		goto done;
	out = (struct folded_out){ctx, ev, app[ev], from_s, until_s};
	each_folded(ents, n, ctx->cur.multi_instance, pyro_out, &out);
	free(ents);
done:
	ftab__clear(&acc->pyro);
	acc->pyro_from_ms = now_ms;
}

static void report(struct sp_ctx *ctx)
{
	static const unsigned int samples_stat[SP_EV_NR] = {SP_ST_ONCPU_SAMPLES, SP_ST_OFFCPU_SWITCHES,
							    SP_ST_MEM_FAULTS, SP_ST_ALLOC_CALLS, SP_ST_LIVE_ALLOCS};
	struct sp_sampler_stats ss;
	struct symbolizer_stats ys;
	struct probe_rec rec;

	sp_sampler__stats(ctx->sampler, &ss);
	symbolizer__stats(ctx->prof.sym, &ys);
	for (int ev = 0; ev < SP_EV_NR; ev++) {
		const struct sp_acc *acc = &ctx->prof.acc[ev];

		if (!(ctx->cur.events & (1u << ev)) && !ss.drained[ev])
			continue;
		probe_rec__begin(&rec, &TBL_stackprobe_stats);
		probe_rec__str(&rec, sp_event_names[ev]);
		/* mem_live: heap blocks and mmap/brk regions recorded */
		probe_rec__u64(&rec, ss.st[samples_stat[ev]] + (ev == SP_EV_MEM_LIVE ? ss.st[SP_ST_LIVE_MAPS] : 0));
		probe_rec__u64(&rec, acc->value_total);
		probe_rec__u64(&rec, ss.drained[ev]);
		probe_rec__u64(&rec, acc->frames);
		probe_rec__u64(&rec, acc->unknown_frames);
		probe_rec__u64(&rec, acc->store.dropped + acc->period.dropped);
		(void)probe_rt__emit(ctx->rt, &rec);
	}
	probe_rec__begin(&rec, &TBL_stackprobe_health);
	probe_rec__str(&rec, PROG);
	probe_rec__u64(&rec, ss.st[SP_ST_STACK_LOST]);
	probe_rec__u64(&rec, ss.st[SP_ST_COUNT_LOST]);
	probe_rec__u64(&rec, ss.st[SP_ST_RB_LOST]);
	probe_rec__u64(&rec, ss.st[SP_ST_STORAGE_LOST]);
	probe_rec__u64(&rec, ss.st[SP_ST_OFFCPU_SHORT]);
	probe_rec__u64(&rec, ys.procs);
	probe_rec__u64(&rec, ys.modules);
	probe_rec__u64(&rec, ys.mem_bytes);
	probe_rec__u64(&rec, ys.lookups);
	probe_rec__u64(&rec, ys.elf_loads);
	probe_rec__u64(&rec, ctx->files_written);
	probe_rec__u64(&rec, ctx->files_failed);
	probe_rec__u64(&rec, ctx->pyro_ok);
	probe_rec__u64(&rec, ctx->pyro_err);
	probe_rec__u64(&rec, ss.ua.links);
	probe_rec__u64(&rec, ss.ua.procs);
	probe_rec__u64(&rec, ss.ua.skipped);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_MISSED]);
	probe_rec__u64(&rec, ss.st[SP_ST_LIVE_LOST]);
	probe_rec__u64(&rec, ss.st[SP_ST_UW_STACKS]);
	probe_rec__u64(&rec, ss.st[SP_ST_UW_FP_FRAMES]);
	probe_rec__u64(&rec, ss.st[SP_ST_UW_NO_TABLES]);
	probe_rec__u64(&rec, ss.st[SP_ST_UW_LOST]);
	probe_rec__u64(&rec, ss.uw.procs);
	probe_rec__u64(&rec, ss.uw.files);
	probe_rec__u64(&rec, ss.uw.rows);
	probe_rec__u64(&rec, ss.uw.overflow);
	probe_rec__u64(&rec, ss.uw.errors);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_EARLY]);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_LATE]);
	probe_rec__u64(&rec, ss.st[SP_ST_LIVE_MAP_INNER]);
	probe_rec__u64(&rec, ss.st[SP_ST_OFFCPU_UNSEEN_IN]);
	probe_rec__u64(&rec, ss.st[SP_ST_UW_STALE]);
	(void)probe_rt__emit(ctx->rt, &rec);
	(void)probe_rt__flush(ctx->rt);
}

/* Standalone --comm: processes with those names now. */
static void rescan_comms(struct sp_ctx *ctx)
{
	static struct gg_scope s; /* large: off the stack */
	int err = 0;

	if (!ctx->ncomms || ctx->scope_from_ctrl)
		return;
	s = ctx->base_scope;
	for (unsigned int i = 0; i < ctx->ncomms && err >= 0; i++)
		err = gg_scope__add_comm(&s, ctx->comms[i]);
	if (err < 0) {
		probe_log(PLOG_WARN, "scope by name: %s", strerror(-err));
		return;
	}
	if (s.ntgid == ctx->scope.ntgid && !memcmp(s.tgid, ctx->scope.tgid, s.ntgid * sizeof(s.tgid[0])))
		return;
	err = sp_sampler__set_scope(ctx->sampler, &s);
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
	else
		ctx->scope = s;
}

/* The configuration in force (cur) applied: after setup's wait, then in the loop after each live one. */
static void apply(void *arg)
{
	struct sp_ctx *ctx = arg;
	unsigned int events = ctx->cur.events;
	int err;

	ctx->prof.pyro_on = ctx->cur.pyroscope[0] != '\0';
	if (ctx->cur.mem_alloc && (events & (1u << SP_EV_MEM)))
		events |= 1u << SP_EV_MEM_ALLOC;
	if (ctx->cur.mem_live && (events & (1u << SP_EV_MEM)))
		events |= 1u << SP_EV_MEM_LIVE;
	err = sp_sampler__apply(ctx->sampler, events, ctx->cur.perf_period_ms, ctx->cur.min_block_us,
				ctx->cur.dwarf_unwind);
	if (err)
		probe_log(PLOG_WARN, "some sub-probes could not be attached: %s", strerror(-err));
}

static uint64_t next_at(uint64_t last, unsigned int period_s, uint64_t now)
{
	uint64_t next = last + (uint64_t)period_s * 1000u;

	return next > now + (uint64_t)period_s * 1000u ? now + (uint64_t)period_s * 1000u : next;
}

/* Before the command line: the defaults of the probe's own options (not parameters). */
static void init(void *arg)
{
	struct sp_ctx *ctx = arg;

	ctx->base.store_period_s = 10;
	ctx->base.pyro_period_s = 30;
}

/* After the command line: the symbolizer, the sampler, the scope (under the supervisor, the first live
 * configuration's), the sub-probes. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct sp_ctx *ctx = arg;
	uint64_t wall;
	int err;

	ctx->rt = rt;
	ctx->scope = ctx->base_scope;
	err = sp_profile__start(&ctx->prof, &ctx->sampler, 0, &ctx->scope);
	if (err)
		return err;
	rescan_comms(ctx);
	(void)probe_runner__wait_first_config(FIRST_CONFIG_WAIT_MS);
	apply(ctx);

	ctx->t_drain = ctx->t_report = ctx->t_comm = ctx->t_store = ctx->t_svg = ctx->t_pyro = probe_now_mono_ms();
	wall = probe_now_wall_ms();
	for (int ev = 0; ev < SP_EV_NR; ev++)
		ctx->prof.acc[ev].store_from_ms = ctx->prof.acc[ev].period_from_ms = ctx->prof.acc[ev].pyro_from_ms =
			wall;
	return 0;
}

/* Every DRAIN_MS: the samples into the profiles; each output when its period is over. In between, every
 * UNWIND_TICK_MS, the unwind tables asked for. */
static unsigned int drain_tick(void *arg)
{
	struct sp_ctx *ctx = arg;
	uint64_t now = probe_now_mono_ms(), wall;
	int do_store, do_svg, do_pyro, err;

	if (now - ctx->t_drain + UNWIND_TICK_MS / 2 < DRAIN_MS) {
		uint64_t left = DRAIN_MS - (now - ctx->t_drain);

		sp_sampler__unwind_tick(ctx->sampler, now);
		return left < UNWIND_TICK_MS ? (unsigned int)left : UNWIND_TICK_MS;
	}
	ctx->t_drain = now;
	if (ctx->ncomms && now - ctx->t_comm >= COMM_RESCAN_MS) {
		rescan_comms(ctx);
		ctx->t_comm = now;
	}
	sp_sampler__tick(ctx->sampler, now);
	sp_profile__begin(&ctx->prof);
	err = sp_sampler__drain(ctx->sampler, sp_profile__add, &ctx->prof);
	if (err)
		probe_log(PLOG_WARN, "drain: %s", strerror(-err));
	wall = probe_now_wall_ms();
	do_store = now - ctx->t_store >= (uint64_t)ctx->cur.store_period_s * 1000u;
	do_svg = now - ctx->t_svg >= (uint64_t)ctx->cur.svg_period_s * 1000u;
	do_pyro = now - ctx->t_pyro >= (uint64_t)ctx->cur.pyro_period_s * 1000u;
	for (int ev = 0; ev < SP_EV_NR; ev++) {
		if (do_store)
			flush_store(ctx, (enum sp_event)ev, wall);
		if (do_svg)
			flush_period(ctx, (enum sp_event)ev, wall);
		if (do_pyro)
			flush_pyro(ctx, (enum sp_event)ev, wall);
	}
	if (do_store) {
		ctx->t_store = next_at(ctx->t_store, ctx->cur.store_period_s, now);
		(void)sp_store__expire(ctx->cur.flame_dir, wall, ctx->cur.retention_s, STORE_MAX_BYTES);
	}
	if (do_svg)
		ctx->t_svg = next_at(ctx->t_svg, ctx->cur.svg_period_s, now);
	if (do_pyro)
		ctx->t_pyro = next_at(ctx->t_pyro, ctx->cur.pyro_period_s, now);
	if (now - ctx->t_report >= (uint64_t)ctx->cur.report_period_s * 1000u) {
		report(ctx);
		ctx->t_report = next_at(ctx->t_report, ctx->cur.report_period_s, now);
	}
	return UNWIND_TICK_MS;
}

/* What was collected since the last period is not thrown away. */
static void stop(void *arg, char *note, size_t len)
{
	struct sp_ctx *ctx = arg;
	uint64_t wall;

	sp_profile__begin(&ctx->prof);
	(void)sp_sampler__drain(ctx->sampler, sp_profile__add, &ctx->prof);
	wall = probe_now_wall_ms();
	for (int ev = 0; ev < SP_EV_NR; ev++) {
		flush_store(ctx, (enum sp_event)ev, wall);
		flush_period(ctx, (enum sp_event)ev, wall);
	}
	report(ctx);
	snprintf(note, len, "%llu files written", (unsigned long long)ctx->files_written);
}

static void teardown(void *arg)
{
	struct sp_ctx *ctx = arg;

	sp_sampler__free(ctx->sampler);
	sp_profile__free(&ctx->prof);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct sp_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base_scope,
		 .own = own,
		 .nown = sizeof(own) / sizeof(own[0]),
		 .own_cb = own_option,
		 .notes = notes},
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct sp_conf, events), check_conf, NULL},
	.apply_conf = apply,
	.init = init,
	.setup = setup,
	.tick = drain_tick,
	.describe = describe,
	.stop = stop,
	.teardown = teardown,
};
