/* main.c - autotrace ("autotrace"): a triggered flight recorder. On-CPU stacks are always sampled at a low
 * rate into a ring covering the last ring_seconds (capture.c); when a trigger holds (host or process
 * CPU, tasks in D, run-queue delay, TCP retransmits, RSS growth), sampling goes up to the profiling rate
 * (with off-CPU) for capture_seconds, then one profile with the ring's seconds before the trigger is
 * written to the profile store (and as folded, SVG, pprof) and an event_v2 names it. This file: the
 * triggers, the records, the runner's hooks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "at_ctx.h"
#include "autotrace.meta.h"
#include "autotrace.skel.h"
#include "probe_runner.h"
#include "signals.h"

extern const struct gg_contract gg_contract_autotrace;
#define CONTRACT (&gg_contract_autotrace)

static const char notes[] =
	"Always: on-CPU stacks every ring_sample_period ms into a ring of the last ring_seconds.\n"
	"A trigger (a sub-probe: host_cpu, proc_cpu, dstate, runq, tcp_retrans, rss, l7_p99, l7_errors) that\n"
	"stays at or above its _thr for _hold seconds, outside its _cooldown, starts a capture:\n"
	"perf_sample_period sampling (and off-CPU) for capture_seconds, then one profile of the ring's\n"
	"seconds and the capture in <flame_dir>/store/ (REST: GET /autotrace/query?profile_id=ID) and\n"
	"<flame_dir>/profiles/ID_* (.folded, .svg, .pb.gz), and an event_v2 naming the trigger, its value\n"
	"and the profile id.\n"
	"l7_p99 and l7_errors read l7probe's per-process aggregates from the run directory (l7probe must run;\n"
	"by hand, give both GALA_GOPHER_RUN_DIR): p99 latency and failed share of the requests a process\n"
	"served over the hold time, with at least l7_min_requests of them.\n"
	"Records autotrace_trigger and autotrace_health every report period.\n";

/* ---- triggers ------------------------------------------------------------------------------------ */

static unsigned int captures_last_hour(const struct at_ctx *ctx, uint64_t now)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < CAPTURES_HOUR && i < ctx->ncap_times; i++)
		if (now - ctx->cap_times[i] < HOUR_MS)
			n++;
	return n;
}

/* The threshold held: fire, unless in cooldown; start a capture unless a rate limit says no. fire_ms and
 * capture_ms: a per-process trigger's own (cooldown, proc_gap), else NULL; tgid and comm: its process. */
static int fire(struct at_ctx *ctx, enum at_trig t, uint64_t *fire_ms, uint64_t *capture_ms, uint32_t tgid,
		const char *comm, double value, uint64_t now, uint64_t wall)
{
	struct at_tstate *tr = &ctx->trig[t];
	uint64_t cool = (uint64_t)ctx->cur.tr[t].cooldown_s * 1000u;

	if (!fire_ms)
		fire_ms = &tr->fire_ms;
	if (*fire_ms && now - *fire_ms < cool) {
		tr->suppressed++;
		return 0;
	}
	*fire_ms = now;
	tr->fired++;
	if (ctx->cap.on) {
		ctx->dropped_busy++;
		return 0;
	}
	if ((ctx->last_cap_ms && now - ctx->last_cap_ms < (uint64_t)ctx->cur.global_gap_s * 1000u) ||
	    captures_last_hour(ctx, now) >= ctx->cur.max_per_hour) {
		ctx->dropped_global++;
		return 0;
	}
	if (capture_ms && *capture_ms && now - *capture_ms < (uint64_t)ctx->cur.proc_gap_s * 1000u) {
		ctx->dropped_proc++;
		return 0;
	}
	if (capture_ms)
		*capture_ms = now;
	at_capture__start(ctx, t, tgid, comm, value, now, wall);
	return 1;
}

/* One evaluation of a threshold: 1 when it has held for hold_s (and the hold starts over). */
static int held(uint64_t *above_ms, double value, const struct at_trig_conf *tc, uint64_t now)
{
	if (value < (double)tc->thr) {
		*above_ms = 0;
		return 0;
	}
	if (!*above_ms)
		*above_ms = now;
	if (now - *above_ms + IDLE_TICK_MS / 2 < (uint64_t)tc->hold_s * 1000u)
		return 0;
	*above_ms = 0;
	return 1;
}

static struct at_proc *proc_find(struct at_ctx *ctx, uint32_t tgid)
{
	for (unsigned int i = 0; i < ctx->nprocs; i++)
		if (ctx->procs[i].tgid == tgid)
			return &ctx->procs[i];
	return NULL;
}

/* The processes with on-CPU samples in the newest slot are followed (a process over a CPU threshold is
 * on a CPU, so the sampler sees it within a second or two at 19 Hz); those idle for a while are not. */
static void recent_save(struct at_ctx *ctx, const struct at_proc *p)
{
	struct at_recent *r;

	if (!p->start_ticks || (!p->fire_ms[0] && !p->fire_ms[1] && !p->capture_ms))
		return;
	r = &ctx->recent[ctx->nrecent++ % RECENT_MAX];
	r->tgid = p->tgid;
	r->start_ticks = p->start_ticks;
	memcpy(r->fire_ms, p->fire_ms, sizeof(r->fire_ms));
	r->capture_ms = p->capture_ms;
}

static void recent_restore(struct at_ctx *ctx, struct at_proc *p, uint64_t start_ticks)
{
	for (unsigned int i = 0; i < RECENT_MAX && i < ctx->nrecent; i++) {
		struct at_recent *r = &ctx->recent[i];

		if (r->tgid == p->tgid && r->start_ticks == start_ticks) {
			memcpy(p->fire_ms, r->fire_ms, sizeof(p->fire_ms));
			p->capture_ms = r->capture_ms;
			r->tgid = 0; /* it is in the table again */
			return;
		}
	}
}

static void procs_update(struct at_ctx *ctx, uint64_t now)
{
	const struct at_slot *s;
	unsigned int i;

	if (!(ctx->cur.triggers & ((1u << AT_TR_PROC_CPU) | (1u << AT_TR_RSS))) || !ctx->ring_n) {
		ctx->nprocs = 0;
		return;
	}
	s = &ctx->ring[(ctx->ring_head + ctx->ring_n - 1) % ctx->ring_cap];
	for (const struct at_raw *e = at_raw__next(s, NULL); e; e = at_raw__next(s, e)) {
		struct at_proc *p;

		if (e->event != SP_EV_ONCPU || (uint32_t)getpid() == e->tgid)
			continue;
		p = proc_find(ctx, e->tgid);
		if (!p) {
			if (ctx->nprocs == PROCS_MAX) {
				ctx->dropped_procs_full++;
				continue;
			}
			p = &ctx->procs[ctx->nprocs++];
			memset(p, 0, sizeof(*p));
			p->tgid = e->tgid;
		}
		p->seen_ms = now;
	}
	for (i = 0; i < ctx->nprocs;) {
		struct at_proc *p = &ctx->procs[i];
		struct at_proc_sample ps;
		int busy = p->above_ms[0] || p->above_ms[1];

		if ((now - p->seen_ms > PROC_IDLE_MS && !busy) || at_read_proc(p->tgid, &ps) ||
		    (p->start_ticks && ps.start_ticks != p->start_ticks)) {
			recent_save(ctx, p);
			ctx->procs[i] = ctx->procs[--ctx->nprocs]; /* gone, pid reused, or idle */
			continue;
		}
		if (!p->start_ticks)
			recent_restore(ctx, p, ps.start_ticks);
		if (p->start_ticks && now > p->ticks_ms)
			p->cpu_pct = (double)(ps.cpu_ticks - p->ticks) * 100.0 / (double)sysconf(_SC_CLK_TCK) * 1000.0 /
				     (double)(now - p->ticks_ms);
		p->start_ticks = ps.start_ticks;
		p->ticks = ps.cpu_ticks;
		p->ticks_ms = now;
		memcpy(p->comm, ps.comm, sizeof(p->comm));
		p->rss[p->nrss % RSS_HIST] = ps.rss_kb;
		p->rss_ms[p->nrss % RSS_HIST] = now;
		p->nrss++;
		i++;
	}
}

static void eval_proc_triggers(struct at_ctx *ctx, uint64_t now, uint64_t wall)
{
	struct at_tstate *tc = &ctx->trig[AT_TR_PROC_CPU], *tr = &ctx->trig[AT_TR_RSS];

	tc->value = tr->value = 0;
	tc->tgid = tr->tgid = 0;
	for (unsigned int i = 0; i < ctx->nprocs; i++) {
		struct at_proc *p = &ctx->procs[i];
		uint64_t hold_ms =
			(uint64_t)(ctx->cur.tr[AT_TR_RSS].hold_s ? ctx->cur.tr[AT_TR_RSS].hold_s : 1) * 1000u;
		unsigned int last = (p->nrss - 1) % RSS_HIST, w = 0;

		/* RSS growth over the hold window (allocations come in bursts: a per-tick rate would flap): from
		 * the newest evaluation at least hold_ms old (history permitting) to now */
		for (unsigned int k = 1; k < p->nrss && k < RSS_HIST; k++) {
			w = k;
			if (p->rss_ms[last] - p->rss_ms[(p->nrss - 1 - k) % RSS_HIST] >= hold_ms)
				break;
		}
		p->rss_rate = 0;
		if (w && p->rss_ms[last] > p->rss_ms[(p->nrss - 1 - w) % RSS_HIST] &&
		    p->rss_ms[last] - p->rss_ms[(p->nrss - 1 - w) % RSS_HIST] + IDLE_TICK_MS / 2 >= hold_ms)
			p->rss_rate = ((double)p->rss[last] - (double)p->rss[(p->nrss - 1 - w) % RSS_HIST]) * 1000.0 /
				      (double)(p->rss_ms[last] - p->rss_ms[(p->nrss - 1 - w) % RSS_HIST]);
		if (p->cpu_pct > tc->value) {
			tc->value = p->cpu_pct;
			tc->tgid = p->tgid;
		}
		if (p->rss_rate > tr->value) {
			tr->value = p->rss_rate;
			tr->tgid = p->tgid;
		}
		if ((ctx->cur.triggers & (1u << AT_TR_PROC_CPU)) &&
		    held(&p->above_ms[0], p->cpu_pct, &ctx->cur.tr[AT_TR_PROC_CPU], now))
			fire(ctx, AT_TR_PROC_CPU, &p->fire_ms[0], &p->capture_ms, p->tgid, p->comm, p->cpu_pct, now,
			     wall);
		/* the window is the hold: one evaluation decides */
		if ((ctx->cur.triggers & (1u << AT_TR_RSS)) && p->rss_rate > 0 &&
		    p->rss_rate >= (double)ctx->cur.tr[AT_TR_RSS].thr)
			fire(ctx, AT_TR_RSS, &p->fire_ms[1], &p->capture_ms, p->tgid, p->comm, p->rss_rate, now, wall);
	}
}

static void eval_host(struct at_ctx *ctx, enum at_trig t, double value, int valid, uint64_t now, uint64_t wall)
{
	struct at_tstate *tr = &ctx->trig[t];

	tr->value = valid ? value : 0;
	if (!(ctx->cur.triggers & (1u << t)) || !valid) {
		tr->above_ms = 0;
		return;
	}
	if (held(&tr->above_ms, value, &ctx->cur.tr[t], now))
		fire(ctx, t, NULL, NULL, 0, NULL, value, now, wall);
}

/* ---- l7 triggers: l7probe's per-process aggregates (probes/lib/l7share.h) ------------------------------ */

#define L7_MASK ((1u << AT_TR_L7_P99) | (1u << AT_TR_L7_ERRORS))

static const char *const l7_src_names[] = {"off", "reading l7probe's aggregates", "l7probe is not running",
					   "no run directory (run by hand without GALA_GOPHER_RUN_DIR)",
					   "l7probe's file is not in a format this autotrace reads"};

/* The source changed: say so once (the state stays in autotrace_health.l7_source). */
static void l7_src_set(struct at_ctx *ctx, enum at_l7_src src)
{
	if (src == ctx->l7_src)
		return;
	if (src == AT_L7_OK)
		probe_log(PLOG_INFO, "l7_p99/l7_errors: %s (%s)", l7_src_names[src], ctx->l7_path);
	else if (src != AT_L7_OFF)
		probe_log(PLOG_WARN, "l7_p99/l7_errors: %s%s%s%s: these triggers wait for it", l7_src_names[src],
			  ctx->l7_path[0] ? " (" : "", ctx->l7_path, ctx->l7_path[0] ? ")" : "");
	ctx->l7_src = src;
}

static void l7_free(struct at_ctx *ctx)
{
	free(ctx->l7);
	ctx->l7 = NULL;
	ctx->nl7 = 0;
	probe_buf__free(&ctx->l7_file);
}

struct l7_read {
	struct at_ctx *ctx;
	uint64_t now;
};

/* One line of the file: a process's served requests into its entry (made when new). */
static int l7_entry(void *arg, const struct l7s_entry *e)
{
	struct l7_read *rd = arg;
	struct at_ctx *ctx = rd->ctx;
	struct at_l7proc *p = NULL;
	struct at_proc_sample ps;

	if (e->role != L7S_ROLE_SERVER || e->tgid == (uint32_t)getpid())
		return 0;
	for (unsigned int i = 0; i < ctx->nl7; i++) {
		if (ctx->l7[i].tgid == e->tgid) {
			p = &ctx->l7[i];
			break;
		}
	}
	if (p && p->serial != e->serial) {
		memset(p, 0, sizeof(*p)); /* another process under the pid, or l7probe started over */
		p->tgid = e->tgid;
	}
	if (!p) {
		if (ctx->nl7 == AT_L7_PROCS) {
			ctx->dropped_procs_full++;
			return 0;
		}
		p = &ctx->l7[ctx->nl7++];
		memset(p, 0, sizeof(*p));
		p->tgid = e->tgid;
	}
	if (!p->serial) {
		p->serial = e->serial;
		if (!at_read_proc(e->tgid, &ps))
			memcpy(p->comm, ps.comm, sizeof(p->comm));
		p->scope_gen = ctx->scope_gen - 1;
	}
	if (p->scope_gen != ctx->scope_gen) {
		p->in_scope = gg_scope__has_process(&ctx->scope, NULL, "/proc", (int)e->tgid, &ctx->scope_buf);
		p->scope_gen = ctx->scope_gen;
	}
	p->seen = 1;
	p->cur.ms = rd->now;
	p->cur.reqs = e->reqs;
	p->cur.errs = e->errs;
	memcpy(p->cur.hist, e->hist, sizeof(p->cur.hist));
	return 0;
}

/* Read l7probe's file into the table: 0, or the source's state. */
static enum at_l7_src l7_read(struct at_ctx *ctx, uint64_t now)
{
	struct l7_read rd = {.ctx = ctx, .now = now};
	struct at_proc_sample ws;
	struct l7s_hdr hdr;
	int err;

	if (!ctx->l7_path[0] && l7s_path(ctx->l7_path, sizeof(ctx->l7_path)))
		return AT_L7_NO_RUN_DIR;
	err = probe_read_file(ctx->l7_path, &ctx->l7_file, AT_L7_FILE_MAX);
	if (err == -ENOENT)
		return AT_L7_NO_PROBE;
	if (err)
		return AT_L7_BAD;
	memset(&hdr, 0, sizeof(hdr));
	for (unsigned int i = 0; i < ctx->nl7; i++)
		ctx->l7[i].seen = 0;
	err = l7s_parse(ctx->l7_file.data, ctx->l7_file.len, &hdr, l7_entry, &rd, NULL);
	if (err)
		return AT_L7_BAD;
	/* a file left by an l7probe that was killed: its writer is gone (or the pid is another process's) */
	if (at_read_proc(hdr.writer_pid, &ws) || ws.start_ticks != hdr.writer_start)
		return AT_L7_NO_PROBE;
	if (hdr.dropped && !ctx->l7_full_said) {
		probe_log(PLOG_WARN,
			  "l7 triggers: l7probe's per-process table was full (%" PRIu64 " requests of processes "
			  "beyond %u not shared)",
			  hdr.dropped, L7S_PROCS_MAX);
		ctx->l7_full_said = 1;
	}
	for (unsigned int i = 0; i < ctx->nl7;) {
		if (!ctx->l7[i].seen) {
			ctx->l7[i] = ctx->l7[--ctx->nl7]; /* gone from the file */
			continue;
		}
		i++;
	}
	return AT_L7_OK;
}

/* The window of trigger k (0 p99, 1 errors) of p: from the newest snapshot at least its hold old (the
 * oldest there is while the history is shorter) to now. */
static void l7_window(const struct at_ctx *ctx, struct at_l7proc *p, int k, uint64_t now)
{
	const struct at_trig_conf *tc = &ctx->cur.tr[k ? AT_TR_L7_ERRORS : AT_TR_L7_P99];
	uint64_t hold_ms = (uint64_t)tc->hold_s * 1000u;
	const struct at_l7snap *base = NULL;
	static uint32_t delta[L7S_BUCKETS];

	p->value[k] = 0;
	p->win_reqs[k] = p->win_errs[k] = p->win_ms[k] = 0;
	for (unsigned int j = 0; j < p->nsnaps && j < AT_L7_SNAPS; j++) {
		const struct at_l7snap *sn = &p->snaps[(p->nsnaps - 1 - j) % AT_L7_SNAPS];

		base = sn;
		if (now - sn->ms + IDLE_TICK_MS / 2 >= hold_ms)
			break;
	}
	if (!base || now <= base->ms)
		return;
	p->win_ms[k] = now - base->ms;
	p->win_reqs[k] = p->cur.reqs - base->reqs;
	p->win_errs[k] = p->cur.errs - base->errs;
	/* not yet a whole hold, or too few requests to tell: no value (and no firing) */
	if (p->win_ms[k] + IDLE_TICK_MS / 2 < hold_ms || !p->win_reqs[k] || p->win_reqs[k] < ctx->cur.l7_min_reqs)
		return;
	if (k) {
		p->value[k] = (double)p->win_errs[k] * 100.0 / (double)p->win_reqs[k];
		return;
	}
	for (unsigned int b = 0; b < L7S_BUCKETS; b++)
		delta[b] = p->cur.hist[b] - base->hist[b];
	p->value[k] = l7s_quantile(delta, 0.99) / 1e6;
}

static void eval_l7_triggers(struct at_ctx *ctx, uint64_t now, uint64_t wall)
{
	static const enum at_trig tk[2] = {AT_TR_L7_P99, AT_TR_L7_ERRORS};
	unsigned int hold_s = 0;
	uint64_t step;
	enum at_l7_src src;

	for (int k = 0; k < 2; k++) {
		ctx->trig[tk[k]].value = 0;
		ctx->trig[tk[k]].tgid = 0;
	}
	if (!(ctx->cur.triggers & L7_MASK)) {
		l7_src_set(ctx, AT_L7_OFF);
		l7_free(ctx);
		return;
	}
	if (!ctx->l7) {
		ctx->l7 = calloc(AT_L7_PROCS, sizeof(*ctx->l7));
		if (!ctx->l7) {
			probe_log(PLOG_WARN, "l7 triggers: no memory");
			return;
		}
	}
	src = l7_read(ctx, now);
	l7_src_set(ctx, src);
	if (src != AT_L7_OK) {
		ctx->nl7 = 0; /* l7probe starts over when it comes back */
		return;
	}
	for (int k = 0; k < 2; k++)
		if ((ctx->cur.triggers & (1u << tk[k])) && ctx->cur.tr[tk[k]].hold_s > hold_s)
			hold_s = ctx->cur.tr[tk[k]].hold_s;
	/* snapshots every tick, or further apart so that AT_L7_SNAPS of them span the longest hold */
	step = (uint64_t)hold_s * 1000u / (AT_L7_SNAPS - 1);
	if (step < IDLE_TICK_MS)
		step = IDLE_TICK_MS;
	for (unsigned int i = 0; i < ctx->nl7; i++) {
		struct at_l7proc *p = &ctx->l7[i];
		const struct at_l7snap *last = p->nsnaps ? &p->snaps[(p->nsnaps - 1) % AT_L7_SNAPS] : NULL;

		if (!p->in_scope)
			continue;
		for (int k = 0; k < 2; k++) {
			struct at_tstate *tr = &ctx->trig[tk[k]];

			l7_window(ctx, p, k, now);
			if (p->value[k] > tr->value) {
				tr->value = p->value[k];
				tr->tgid = p->tgid;
			}
			/* the window is the hold: one evaluation decides */
			if ((ctx->cur.triggers & (1u << tk[k])) && p->value[k] > 0 &&
			    p->value[k] >= (double)ctx->cur.tr[tk[k]].thr &&
			    fire(ctx, tk[k], &p->fire_ms[k], &p->capture_ms, p->tgid, p->comm, p->value[k], now,
				 wall)) {
				ctx->cap.l7 = 1;
				ctx->cap.l7_reqs = p->win_reqs[k];
				ctx->cap.l7_errs = p->win_errs[k];
				ctx->cap.l7_window_ms = p->win_ms[k];
				l7_window(ctx, p, !k, now);
				ctx->cap.l7_p99_ms = p->value[0];
				ctx->cap.l7_err_pct = p->value[1];
			}
		}
		if (!last || now - last->ms + IDLE_TICK_MS / 2 >= step)
			p->snaps[p->nsnaps++ % AT_L7_SNAPS] = p->cur;
	}
}

/* This read's rate against the last one (times scale) into *ret, 0 when the last or this read failed (ok
 * 0) or den did not grow; the read is kept for the next. 1 when the rate is valid. */
static int at_rate__next(struct at_rate *r, int ok, uint64_t num, uint64_t den, double scale, double *ret)
{
	int valid = ok && r->have && den > r->den;

	*ret = valid ? (double)(num - r->num) * scale / (double)(den - r->den) : 0;
	if (ok) {
		r->num = num;
		r->den = den;
	}
	r->have = ok;
	return valid;
}

static void eval_triggers(struct at_ctx *ctx, uint64_t now, uint64_t wall)
{
	uint64_t busy = 0, total = 0, retrans = 0;
	__u64 hist[GG_LOG2_SLOTS], delta[GG_LOG2_SLOTS];
	int64_t dstate = 0;
	double rate;
	int ok, valid;

	ok = !at_read_host_cpu(&busy, &total);
	valid = at_rate__next(&ctx->host_cpu, ok, busy, total, 100.0, &rate);
	eval_host(ctx, AT_TR_HOST_CPU, rate, valid, now, wall);
	ok = !at_read_retrans(&retrans);
	valid = at_rate__next(&ctx->retrans, ok, retrans, now, 1000.0, &rate);
	eval_host(ctx, AT_TR_RETRANS, rate, valid, now, wall);

	ok = !at_sched__read(ctx, hist, &dstate);
	eval_host(ctx, AT_TR_DSTATE, (double)dstate, ok && (ctx->parts & AT_PART_DSTATE), now, wall);
	if (ok) {
		for (int i = 0; i < GG_LOG2_SLOTS; i++)
			delta[i] = hist[i] - ctx->runq_prev[i];
		memcpy(ctx->runq_prev, hist, sizeof(hist));
	}
	eval_host(ctx, AT_TR_RUNQ, ok ? (double)gg_hist_quantile(delta, 0.99) : 0,
		  ok && (ctx->parts & AT_PART_RUNQ) && gg_hist_count(delta), now, wall);

	procs_update(ctx, now);
	eval_proc_triggers(ctx, now, wall);
	eval_l7_triggers(ctx, now, wall);
}

/* ---- records ------------------------------------------------------------------------------------- */

static void report(struct at_ctx *ctx, uint64_t now)
{
	struct sp_sampler_stats ss;
	struct probe_rec rec;
	char tg[16];

	for (int t = 0; t < AT_TR_NR; t++) {
		const struct at_tstate *tr = &ctx->trig[t];
		int on = (ctx->cur.triggers >> t) & 1;
		uint64_t cool = (uint64_t)ctx->cur.tr[t].cooldown_s * 1000u;
		int state = !on ? 0 : tr->fire_ms && now - tr->fire_ms < cool ? 3 : tr->above_ms ? 2 : 1;

		if (on && (t == AT_TR_PROC_CPU || t == AT_TR_RSS)) {
			state = 1;
			for (unsigned int i = 0; i < ctx->nprocs; i++) {
				const struct at_proc *p = &ctx->procs[i];
				int k = t == AT_TR_RSS;

				if (p->fire_ms[k] && now - p->fire_ms[k] < cool)
					state = 3;
				else if (p->above_ms[k] && state < 2)
					state = 2;
			}
		}
		if (on && (t == AT_TR_L7_P99 || t == AT_TR_L7_ERRORS)) {
			int k = t == AT_TR_L7_ERRORS;

			state = ctx->l7_src == AT_L7_OK ? 1 : 4; /* 4: waiting for l7probe */
			for (unsigned int i = 0; i < ctx->nl7; i++)
				if (ctx->l7[i].fire_ms[k] && now - ctx->l7[i].fire_ms[k] < cool)
					state = 3;
		}
		snprintf(tg, sizeof(tg), "%u", tr->tgid);
		probe_rec__begin(&rec, &TBL_autotrace_trigger);
		probe_rec__str(&rec, at_trig_names[t]);
		probe_rec__str(&rec, at_trig_units[t]);
		probe_rec__str(&rec, tr->tgid ? tg : "");
		probe_rec__f64(&rec, tr->value);
		probe_rec__u64(&rec, on ? ctx->cur.tr[t].thr : 0);
		probe_rec__u64(&rec, (uint64_t)state);
		probe_rec__u64(&rec, tr->fired);
		probe_rec__u64(&rec, tr->suppressed);
		probe_rec__u64(&rec, tr->captures);
		(void)probe_rt__emit(ctx->rt, &rec);
	}
	sp_sampler__stats(ctx->sampler, &ss);
	probe_rec__begin(&rec, &TBL_autotrace_health);
	probe_rec__str(&rec, PROG);
	probe_rec__u64(&rec, ctx->captures);
	probe_rec__u64(&rec, ctx->profiles);
	probe_rec__u64(&rec, ctx->write_errors);
	probe_rec__u64(&rec, ctx->dropped_busy);
	probe_rec__u64(&rec, ctx->dropped_global);
	probe_rec__u64(&rec, ctx->dropped_proc);
	probe_rec__u64(&rec, ctx->dropped_procs_full);
	probe_rec__u64(&rec, ctx->ring_dropped);
	probe_rec__u64(&rec, ss.st[SP_ST_STACK_LOST] + ss.st[SP_ST_COUNT_LOST] + ss.st[SP_ST_RB_LOST]);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_MISSED]);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_SAMPLES]);
	probe_rec__u64(&rec, ctx->ring_n);
	probe_rec__u64(&rec, at_ring__bytes(ctx));
	probe_rec__u64(&rec, ctx->nprocs);
	probe_rec__u64(&rec, (uint64_t)ctx->cap.on);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_EARLY]);
	probe_rec__u64(&rec, ss.st[SP_ST_ONCPU_LATE]);
	probe_rec__u64(&rec, ctx->dropped_why[AT_DROP_CPU]);
	probe_rec__u64(&rec, ctx->dropped_why[AT_DROP_NOMEM]);
	probe_rec__u64(&rec, ctx->dropped_why[AT_DROP_PROFILE]);
	probe_rec__u64(&rec, (uint64_t)ctx->l7_src);
	probe_rec__u64(&rec, ctx->nl7);
	probe_rec__u64(&rec, ctx->runq_unseen_in);
	probe_rec__u64(&rec, ctx->dstate_unseen_in);
	(void)probe_rt__emit(ctx->rt, &rec);
	(void)probe_rt__flush(ctx->rt);
}

/* ---- the runner's hooks ---------------------------------------------------------------------------- */

/* A live configuration (probe_runner_conf): next is refused with an empty flame_dir or a scope the
 * sampler cannot take. */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct at_ctx *ctx = data;
	const struct at_conf *c = next;
	int err;

	if (!c->flame_dir[0]) {
		probe_log(PLOG_WARN, "configuration: flame_dir must not be empty");
		return -EINVAL;
	}
	err = sp_sampler__config_scope(ctx->sampler, msg, &ctx->scope);
	if (err < 0)
		return err;
	if (err)
		ctx->scope_gen++; /* the l7 triggers' processes are looked at again */
	return 0;
}

static void describe(void *data, char *buf, size_t len)
{
	struct at_ctx *ctx = data;
	const struct at_conf *c = &ctx->cur;

	snprintf(
		buf, len,
		", ring %u s at %u ms, capture %u s at %u ms%s, host_cpu %u%%/%u s, proc_cpu %u%%/%u s, cooldown %u s, "
		"flame_dir %s, scope %s",
		c->ring_s, c->ring_period_ms, c->capture_s, c->profile_period_ms,
		c->capture_offcpu ? " with offcpu" : "", c->tr[AT_TR_HOST_CPU].thr, c->tr[AT_TR_HOST_CPU].hold_s,
		c->tr[AT_TR_PROC_CPU].thr, c->tr[AT_TR_PROC_CPU].hold_s, c->tr[AT_TR_PROC_CPU].cooldown_s, c->flame_dir,
		ctx->scope.all ? "all" : "filtered");
}

static void apply(void *data)
{
	struct at_ctx *ctx = data;

	if (ctx->cur.ring_s + ctx->cur.capture_s + 2 != ctx->ring_cap) {
		/* sizes change: a capture in progress ends now, the ring starts over */
		if (ctx->cap.on)
			at_capture__finish(ctx, probe_now_wall_ms());
		at_ring__free(ctx);
		if (at_ring__size(ctx)) {
			probe_log(PLOG_ERROR, "no memory for the ring");
			return;
		}
		/* what was sampled so far belongs to no slot: the new ring starts empty */
		at_ring__push(ctx, probe_now_wall_ms());
		at_ring__free(ctx);
	}
	if (at_ring__size(ctx))
		probe_log(PLOG_ERROR, "no memory for the ring");
	at_sched__attach(ctx);
	at_sampling__set(ctx, ctx->cap.on);
}

static unsigned int tick(void *data)
{
	struct at_ctx *ctx = data;
	uint64_t now = probe_now_mono_ms(), wall = probe_now_wall_ms();

	sp_sampler__tick(ctx->sampler, now);
	if (!ctx->ring_cap)
		return IDLE_TICK_MS;
	at_ring__push(ctx, wall);
	if (ctx->cap.on && now + TICK_MS / 2 >= ctx->cap.until_mono_ms) {
		at_capture__finish(ctx, wall);
		at_sampling__set(ctx, 0);
	}
	eval_triggers(ctx, now, wall);
	if (now - ctx->t_report >= (uint64_t)ctx->cur.report_period_s * 1000u) {
		report(ctx, now);
		ctx->t_report = now;
	}
	return ctx->cap.on ? TICK_MS : IDLE_TICK_MS;
}

static int setup(void *data, struct probe_rt *rt)
{
	struct at_ctx *ctx = data;
	int err;

	ctx->rt = rt;
	ctx->scope = ctx->base_scope;
	err = sp_profile__start(&ctx->prof, &ctx->sampler, 1 /* the ring is bounded per CPU */, &ctx->scope);
	if (err)
		return err;
	(void)probe_runner__wait_first_config(FIRST_CONFIG_WAIT_MS);
	apply(ctx);
	ctx->t_report = probe_now_mono_ms();
	return ctx->ring_cap ? 0 : -ENOMEM;
}

static void stop(void *data, char *note, size_t len)
{
	struct at_ctx *ctx = data;

	report(ctx, probe_now_mono_ms());
	snprintf(note, len, "%llu captures, %llu profiles", (unsigned long long)ctx->captures,
		 (unsigned long long)ctx->profiles);
}

static void teardown(void *data)
{
	struct at_ctx *ctx = data;

	for (int i = 0; i < 3; i++)
		bpf_link__destroy(ctx->links[i]);
	autotrace__destroy(ctx->skel);
	sp_sampler__free(ctx->sampler);
	at_ring__free(ctx);
	sp_profile__free(&ctx->prof);
	l7_free(ctx);
	probe_buf__free(&ctx->scope_buf);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct at_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base_scope, .notes = notes},
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct at_conf, triggers), check_conf, NULL},
	.apply_conf = apply,
	.setup = setup,
	.tick = tick,
	.describe = describe,
	.stop = stop,
	.teardown = teardown,
};
