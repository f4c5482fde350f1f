/* main.c - autotrace ("autotrace"): a triggered flight recorder. On-CPU stacks are always sampled at a low
 * rate into a ring of one-second slots covering the last ring_seconds; when a trigger holds (host or
 * process CPU, tasks in D, run-queue delay, TCP retransmits, RSS growth), sampling goes up to the
 * profiling rate (with off-CPU) for capture_seconds, then one profile with the ring's seconds before the
 * trigger is written to the profile store (and as folded, SVG, pprof) and an event_v2 names it. The
 * sampler, symbolizer and writers are stackprobe's (probes/stackprobe/, linked in). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/types.h>

#include "../../bpf/autotrace.h"
#include "at_conf.h"
#include "autotrace.meta.h"
#include "autotrace.skel.h"
#include "probe.h"
#include "probe_runner.h"
#include "signals.h"
#include "../stackprobe/stackprobe.h" /* the sampler, symbolizer and writers (linked in) */

#define PROG	"autotrace"
#define TICK_MS 1000u /* while capturing */
/* Between captures: drain, evaluate and report every 2 s (half the fixed cost of a drain and of the
 * /proc reads; the kernel's maps hold 5 s of samples at the ring's rate) */
#define IDLE_TICK_MS	     2000u
#define RING_MAX_BYTES	     (96ull << 20) /* all slots' stack tables together */
#define SLOT_MAX_ENTS	     8192u
#define PROFILE_ENTS	     65536u
#define PROFILE_BYTES	     (64ull << 20)
#define STORE_MAX_BYTES	     (256ull << 20)
#define FILES_KEPT	     256u /* per kind of file in <flame_dir>/profiles */
#define PROCS_MAX	     256u /* processes followed by the per-process triggers */
#define RSS_HIST	     64u  /* evaluations of RSS per process (rss_hold is cut to what they span) */
#define PROC_IDLE_MS	     10000u
#define HOUR_MS		     3600000ull
#define CAPTURES_HOUR	     60u
#define FIRST_CONFIG_WAIT_MS 3000u

/* The two event kinds a slot holds: on-CPU (always) and off-CPU (while capturing). */
enum { AT_ON = 0, AT_OFF = 1, AT_EVN = 2 };
static const enum sp_event slot_ev[AT_EVN] = {SP_EV_ONCPU, SP_EV_OFFCPU};

/* One raw stack from a drain, as the kernel aggregated it (frames follow: kn kernel, then un user). Kept
 * unsymbolized: symbols are looked up only when a capture is written, so the always-on state costs a
 * copy per stack, not a symbolization. */
struct at_raw {
	uint32_t tgid, pid;
	uint64_t value;
	uint16_t kn, un;
	uint8_t event; /* enum sp_event */
	uint8_t pad[3];
	char comm[SP_COMM_LEN], pcomm[SP_COMM_LEN];
	uint64_t ips[];
};

/* One drain (a second) of raw stacks. */
struct at_slot {
	uint64_t from_ms, until_ms; /* wall clock */
	unsigned int period_ms;	    /* on-CPU sampling period of these samples (a sample weighs this many ms) */
	unsigned char *buf;	    /* struct at_raw records, 8-byte aligned */
	size_t len, cap;
};

static const char *const trig_names[AT_TR_NR] = {"host_cpu", "proc_cpu", "dstate", "runq", "tcp_retrans", "rss"};
static const char *const trig_units[AT_TR_NR] = {"percent", "percent", "tasks", "us", "segments/s", "KiB/s"};

/* A host-wide trigger's state (per-process triggers keep theirs in struct at_proc). */
struct at_tstate {
	double value;	   /* last value (per-process: the highest process's) */
	uint32_t tgid;	   /* per-process: whose value */
	uint64_t above_ms; /* monotonic ms since the value is at or above the threshold; 0: below */
	uint64_t fire_ms;  /* last firing; 0: never */
	uint64_t fired, suppressed, captures;
};

/* A process followed by the per-process triggers (seen on a CPU lately). */
struct at_proc {
	uint32_t tgid;
	uint64_t start_ticks;
	char comm[16];
	uint64_t seen_ms; /* last drain it had samples in */
	uint64_t ticks, ticks_ms;
	double cpu_pct, rss_rate;
	uint64_t rss[RSS_HIST], rss_ms[RSS_HIST];
	unsigned int nrss;    /* evaluations of RSS in rss[] and their times (ring, newest at (nrss - 1) % RSS_HIST) */
	uint64_t above_ms[2]; /* proc_cpu, rss */
	uint64_t fire_ms[2];  /* cooldowns per process */
	uint64_t capture_ms;  /* last capture for this process; 0: none */
};

/* What a process's cooldowns and proc_gap need once it left the table (idle a while, then busy
 * again): kept for the last RECENT_MAX processes that fired. */
#define RECENT_MAX 64u
struct at_recent {
	uint32_t tgid;
	uint64_t start_ticks;
	uint64_t fire_ms[2], capture_ms;
};

/* The capture in progress. */
struct at_capture {
	int on;
	enum at_trig trig;
	uint32_t tgid;
	char comm[16];
	double value;
	unsigned int thr, hold_s;
	uint64_t trigger_wall_ms, until_mono_ms;
};

struct at_ctx {
	struct probe_rt *rt;
	struct at_conf base, cur;
	struct gg_scope base_scope, scope;
	int apply_pending, config_seen;
	struct sp_sampler *sampler;
	struct sp_profile prof;
	struct autotrace *skel; /* scheduler signals; loaded when runq or dstate is on */
	unsigned int parts;	/* AT_PART_* attached */
	struct bpf_link *links[3];
	unsigned int sampling_ms, sampling_events; /* what the sampler runs now */

	struct at_slot *ring;
	unsigned int ring_cap, ring_n, ring_head; /* slots, used, index of the oldest */
	size_t slot_bytes;			  /* bound of one slot's records */
	struct at_slot *filling;		  /* the slot a drain writes into */
	uint64_t drained_wall;			  /* wall ms of the last drain: the next slot starts there */

	struct at_tstate trig[AT_TR_NR];
	struct at_proc procs[PROCS_MAX];
	unsigned int nprocs;
	struct at_recent recent[RECENT_MAX];
	unsigned int nrecent; /* ring: the next one goes to nrecent % RECENT_MAX */
	struct at_capture cap;
	uint64_t cap_times[CAPTURES_HOUR]; /* monotonic ms of the last captures (ring) */
	unsigned int ncap_times;
	uint64_t last_cap_ms;

	uint64_t host_busy, host_total, retrans, retrans_ms;
	int have_host, have_retrans;
	__u64 runq_prev[GG_LOG2_SLOTS];

	uint64_t t_report;
	/* health */
	uint64_t captures, profiles, write_errors, dropped_busy, dropped_global, dropped_proc, dropped_procs_full;
	uint64_t ring_dropped;
};

extern const struct gg_contract gg_contract_autotrace;
#define CONTRACT (&gg_contract_autotrace)

static const char notes[] =
	"Always: on-CPU stacks every ring_sample_period ms into a ring of the last ring_seconds.\n"
	"A trigger (a sub-probe: host_cpu, proc_cpu, dstate, runq, tcp_retrans, rss) that stays at or above\n"
	"its _thr for _hold seconds, outside its _cooldown, starts a capture: perf_sample_period sampling\n"
	"(and off-CPU) for capture_seconds, then one profile of the ring's seconds and the capture in\n"
	"<flame_dir>/store/ (REST: GET /autotrace/query?profile_id=ID) and <flame_dir>/profiles/ID_*\n"
	"(.folded, .svg, .pb.gz), and an event_v2 naming the trigger, its value and the profile id.\n"
	"Records autotrace_trigger and autotrace_health every report period.\n";

/* ---- the ring ---------------------------------------------------------------------------------------- */

static void slot_free(struct at_slot *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static void ring_free(struct at_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->ring_n; i++)
		slot_free(&ctx->ring[(ctx->ring_head + i) % ctx->ring_cap]);
	free(ctx->ring);
	ctx->ring = NULL;
	ctx->ring_cap = ctx->ring_n = ctx->ring_head = 0;
}

/* Room for ring_seconds before a trigger plus the capture after it. */
static int ring_size(struct at_ctx *ctx)
{
	unsigned int cap = ctx->cur.ring_s + ctx->cur.capture_s + 2;

	if (cap == ctx->ring_cap)
		return 0;
	ring_free(ctx);
	ctx->ring = calloc(cap, sizeof(*ctx->ring));
	if (!ctx->ring)
		return -ENOMEM;
	ctx->ring_cap = cap;
	ctx->slot_bytes = RING_MAX_BYTES / cap;
	return 0;
}

static size_t ring_bytes(const struct at_ctx *ctx)
{
	size_t b = 0;

	for (unsigned int i = 0; i < ctx->ring_n; i++)
		b += ctx->ring[(ctx->ring_head + i) % ctx->ring_cap].cap;
	return b;
}

/* An sp_sample_cb: the raw stack into the slot being filled (a full slot drops and counts). */
static int raw_add(void *arg, const struct sp_sample *smp)
{
	struct at_ctx *ctx = arg;
	struct at_slot *s = ctx->filling;
	size_t need = (sizeof(struct at_raw) + ((size_t)smp->kn + smp->un) * sizeof(uint64_t) + 7) & ~(size_t)7;
	struct at_raw *r;

	if (smp->event != SP_EV_ONCPU && smp->event != SP_EV_OFFCPU)
		return 0;
	if (s->len + need > ctx->slot_bytes) {
		ctx->ring_dropped += smp->value;
		return 0;
	}
	if (s->len + need > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16384;
		unsigned char *nb;

		while (ncap < s->len + need)
			ncap *= 2;
		nb = realloc(s->buf, ncap);
		if (!nb) {
			ctx->ring_dropped += smp->value;
			return 0;
		}
		s->buf = nb;
		s->cap = ncap;
	}
	r = (struct at_raw *)(void *)(s->buf + s->len);
	memset(r, 0, sizeof(*r));
	r->tgid = smp->tgid;
	r->pid = smp->pid;
	r->value = smp->value;
	r->kn = (uint16_t)smp->kn;
	r->un = (uint16_t)smp->un;
	r->event = (uint8_t)smp->event;
	snprintf(r->comm, sizeof(r->comm), "%s", smp->comm);
	snprintf(r->pcomm, sizeof(r->pcomm), "%s", smp->pcomm);
	memcpy(r->ips, smp->kips, smp->kn * sizeof(uint64_t));
	memcpy(r->ips + smp->kn, smp->uips, smp->un * sizeof(uint64_t));
	s->len += need;
	return 0;
}

/* The records of a slot, one after the other: the next after r (the first when r is NULL), or NULL. */
static const struct at_raw *raw_next(const struct at_slot *s, const struct at_raw *r)
{
	size_t off = 0;

	if (r)
		off = (size_t)((const unsigned char *)r - s->buf) +
		      ((sizeof(*r) + ((size_t)r->kn + r->un) * sizeof(uint64_t) + 7) & ~(size_t)7);
	return off < s->len ? (const struct at_raw *)(const void *)(s->buf + off) : NULL;
}

/* Drain the sampler into a new slot (the oldest goes when the ring is full). */
static void ring_push(struct at_ctx *ctx, uint64_t wall)
{
	struct at_slot *s;
	int err;

	if (ctx->ring_n == ctx->ring_cap) {
		slot_free(&ctx->ring[ctx->ring_head]);
		ctx->ring_head = (ctx->ring_head + 1) % ctx->ring_cap;
		ctx->ring_n--;
	}
	s = &ctx->ring[(ctx->ring_head + ctx->ring_n) % ctx->ring_cap];
	ctx->ring_n++;
	s->from_ms = ctx->drained_wall ? ctx->drained_wall : wall;
	ctx->drained_wall = wall;
	s->until_ms = wall;
	s->period_ms = ctx->sampling_ms;
	ctx->filling = s;
	err = sp_sampler__drain(ctx->sampler, raw_add, ctx);
	if (err)
		probe_log(PLOG_WARN, "drain: %s", strerror(-err));
}

/* ---- sampling ------------------------------------------------------------------------------------ */

static void sampling_set(struct at_ctx *ctx, int capturing)
{
	unsigned int period = capturing ? ctx->cur.profile_period_ms : ctx->cur.ring_period_ms;
	unsigned int events = 1u << SP_EV_ONCPU;
	int err;

	if (capturing && ctx->cur.capture_offcpu)
		events |= 1u << SP_EV_OFFCPU;
	if (period == ctx->sampling_ms && events == ctx->sampling_events)
		return;
	err = sp_sampler__apply(ctx->sampler, events, period, ctx->cur.min_block_us);
	if (err)
		probe_log(PLOG_WARN, "sampling at %u ms: %s", period, strerror(-err));
	ctx->sampling_ms = period;
	ctx->sampling_events = events;
}

/* The scheduler programs, attached only for the triggers that need them (a cost on every switch). */
static void sched_parts(struct at_ctx *ctx)
{
	unsigned int want = 0;
	struct bpf_program *progs[3];
	int err = 0;

	if (ctx->cur.triggers & (1u << AT_TR_RUNQ))
		want |= AT_PART_RUNQ;
	if (ctx->cur.triggers & (1u << AT_TR_DSTATE))
		want |= AT_PART_DSTATE;
	if (want == ctx->parts)
		return;
	if (want && !ctx->skel) {
		gg_bpf_begin();
		ctx->skel = autotrace__open();
		if (!ctx->skel)
			err = -errno;
		else
			err = autotrace__load(ctx->skel);
		if (err) {
			probe_log(PLOG_WARN, "runq/dstate: cannot load the scheduler programs: %s", strerror(-err));
			autotrace__destroy(ctx->skel);
			ctx->skel = NULL;
			return;
		}
	}
	if (!ctx->skel)
		return;
	progs[0] = ctx->skel->progs.at_switch;
	progs[1] = ctx->skel->progs.at_wakeup;
	progs[2] = ctx->skel->progs.at_wakeup_new;
	ctx->skel->bss->parts = want;
	for (int i = 0; i < 3; i++) {
		int on = i == 0 ? want != 0 : (want & AT_PART_RUNQ) != 0;

		if (on && !ctx->links[i]) {
			ctx->links[i] = bpf_program__attach(progs[i]);
			if (!ctx->links[i])
				probe_log(PLOG_WARN, "cannot attach %s: %s", bpf_program__name(progs[i]),
					  strerror(errno));
		} else if (!on && ctx->links[i]) {
			bpf_link__destroy(ctx->links[i]);
			ctx->links[i] = NULL;
		}
	}
	ctx->parts = want;
}

/* Sum of the per-CPU scheduler counters. */
static int sched_read(struct at_ctx *ctx, __u64 *hist, int64_t *ret_dstate)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	struct at_cpu *v;
	__u32 zero = 0;
	int64_t d = 0;

	if (!ctx->skel || ncpu <= 0)
		return -ENOENT;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	fd = bpf_map__fd(ctx->skel->maps.at_cpus);
	if (bpf_map_lookup_elem(fd, &zero, v)) {
		free(v);
		return -errno;
	}
	memset(hist, 0, GG_LOG2_SLOTS * sizeof(*hist));
	for (int c = 0; c < ncpu; c++) {
		for (int i = 0; i < GG_LOG2_SLOTS; i++)
			hist[i] += v[c].runq_hist[i];
		d += v[c].dstate;
	}
	free(v);
	*ret_dstate = d < 0 ? 0 : d;
	return 0;
}

/* ---- the profile ---------------------------------------------------------------------------------- */

static void write_failed(struct at_ctx *ctx, const char *what, int err)
{
	ctx->write_errors++;
	probe_log(PLOG_WARN, "cannot write %s under %s: %s", what, ctx->cur.flame_dir, strerror(-err));
}

/* folded, SVG and pprof of one event kind under <flame_dir>/profiles/<id>_<trigger>_<event>.* */
static void write_graphs(struct at_ctx *ctx, int e, struct ftab *folded, const char *id, uint64_t from_ms,
			 uint64_t until_ms)
{
	const struct at_capture *c = &ctx->cap;
	struct sp_svg_opts so = {.unit = e == AT_ON ? "ms" : "us", .unit_scale = 1};
	struct sp_pprof_opts po = {.time_ns = (int64_t)from_ms * 1000000,
				   .duration_ns = (int64_t)(until_ms - from_ms) * 1000000};
	char name[160], title[160], sub[200], *text = NULL;
	struct ftab_ent **ents;
	size_t n = 0, len = 0;
	int dfd, err;

	if (!folded->n)
		return;
	ents = ftab__list(folded, 1, &n);
	if (!ents || sp_folded__build(ents, n, 0, 0, &text, &len)) {
		free(ents);
		write_failed(ctx, "a folded profile", -ENOMEM);
		return;
	}
	free(ents);
	dfd = probe_outdir__open_sub(ctx->cur.flame_dir, "profiles", 1);
	if (dfd < 0) {
		write_failed(ctx, "profiles/", dfd);
		free(text);
		return;
	}
	snprintf(name, sizeof(name), "%s_%s_%s.folded", id, trig_names[c->trig], sp_event_names[slot_ev[e]]);
	if ((err = probe_outdir__write(dfd, name, text, len)))
		write_failed(ctx, name, err);
	snprintf(title, sizeof(title), "%s flame graph: trigger %s", e == AT_ON ? "On-CPU" : "Off-CPU",
		 trig_names[c->trig]);
	snprintf(sub, sizeof(sub), "profile %s: %.1f %s >= %u (%s); trigger at %" PRIu64 " ms (gala-gopher autotrace)",
		 id, c->value, trig_units[c->trig], c->thr, c->tgid ? c->comm : "host", c->trigger_wall_ms);
	so.title = title;
	so.subtitle = sub;
	snprintf(name, sizeof(name), "%s_%s_%s.svg", id, trig_names[c->trig], sp_event_names[slot_ev[e]]);
	if ((err = sp_svg__write(dfd, name, text, len, &so)))
		write_failed(ctx, name, err);
	/* on-CPU values are ms of CPU: "samples" of a 1 ms period */
	sp_pprof__event_opts(slot_ev[e], 1, &po);
	snprintf(name, sizeof(name), "%s_%s_%s.pb.gz", id, trig_names[c->trig], sp_event_names[slot_ev[e]]);
	if ((err = sp_pprof__write(dfd, name, text, len, &po)))
		write_failed(ctx, name, err);
	sp_dir_trim(dfd, ".folded", FILES_KEPT);
	sp_dir_trim(dfd, ".svg", FILES_KEPT);
	sp_dir_trim(dfd, ".pb.gz", FILES_KEPT);
	close(dfd);
	free(text);
}

static void send_event(struct at_ctx *ctx, const char *id, uint64_t from_ms, uint64_t until_ms)
{
	const struct at_capture *c = &ctx->cap;
	char labels[1024] = "", body[512], num[64];
	size_t used = 0;

	gg_event_label(labels, sizeof(labels), &used, "trigger", trig_names[c->trig]);
	snprintf(num, sizeof(num), "%.1f", c->value);
	gg_event_label(labels, sizeof(labels), &used, "value", num);
	snprintf(num, sizeof(num), "%u", c->thr);
	gg_event_label(labels, sizeof(labels), &used, "threshold", num);
	gg_event_label(labels, sizeof(labels), &used, "unit", trig_units[c->trig]);
	snprintf(num, sizeof(num), "%u", c->hold_s);
	gg_event_label(labels, sizeof(labels), &used, "hold_s", num);
	if (c->tgid) {
		snprintf(num, sizeof(num), "%u", c->tgid);
		gg_event_label(labels, sizeof(labels), &used, "tgid", num);
		gg_event_label(labels, sizeof(labels), &used, "comm", c->comm);
	}
	gg_event_label(labels, sizeof(labels), &used, "profile_id", id);
	snprintf(num, sizeof(num), "%" PRIu64, from_ms);
	gg_event_label(labels, sizeof(labels), &used, "from_ms", num);
	snprintf(num, sizeof(num), "%" PRIu64, c->trigger_wall_ms);
	gg_event_label(labels, sizeof(labels), &used, "trigger_ms", num);
	snprintf(num, sizeof(num), "%" PRIu64, until_ms);
	gg_event_label(labels, sizeof(labels), &used, "until_ms", num);
	snprintf(body, sizeof(body),
		 "autotrace: %s %.1f %s >= %u for %u s%s%s%s; profile %s (%" PRIu64 " s before the trigger, %" PRIu64
		 " s after): GET /autotrace/query?profile_id=%s",
		 trig_names[c->trig], c->value, trig_units[c->trig], c->thr, c->hold_s, c->tgid ? " (process " : "",
		 c->tgid ? c->comm : "", c->tgid ? ")" : "", id, (c->trigger_wall_ms - from_ms) / 1000,
		 (until_ms - c->trigger_wall_ms) / 1000, id);
	(void)gg_event_emit(ctx->rt, "autotrace", id, "capture", "WARN", body, NULL, labels);
	(void)probe_rt__flush(ctx->rt);
}

/* The capture window is over: one profile of the ring's seconds before the trigger and the capture,
 * symbolized now (stackprobe's profile code, into its accumulators). */
static void capture_finish(struct at_ctx *ctx, uint64_t wall)
{
	struct at_capture *c = &ctx->cap;
	uint64_t from_ms = wall, pre_ms = (uint64_t)ctx->cur.ring_s * 1000u, until_ms = wall;
	char id[64];
	int wrote = 0, err;

	for (int e = 0; e < AT_EVN; e++) {
		struct sp_acc *acc = &ctx->prof.acc[slot_ev[e]];

		ftab__free(&acc->store);
		ftab__free(&acc->period);
		ftab__init(&acc->store, PROFILE_ENTS, PROFILE_BYTES);
		ftab__init(&acc->period, PROFILE_ENTS, PROFILE_BYTES);
	}
	sp_profile__begin(&ctx->prof);
	for (unsigned int i = 0; i < ctx->ring_n; i++) {
		const struct at_slot *s = &ctx->ring[(ctx->ring_head + i) % ctx->ring_cap];

		if (s->until_ms + pre_ms <= c->trigger_wall_ms)
			continue; /* older than ring_seconds before the trigger */
		if (s->from_ms < from_ms)
			from_ms = s->from_ms;
		for (const struct at_raw *r = raw_next(s, NULL); r; r = raw_next(s, r)) {
			/* on-CPU: samples x their period = ms of CPU, whatever rate each second was sampled at */
			struct sp_sample smp = {.event = (enum sp_event)r->event,
						.tgid = r->tgid,
						.pid = r->pid,
						.comm = r->comm,
						.pcomm = r->pcomm,
						.kips = r->ips,
						.kn = r->kn,
						.uips = r->ips + r->kn,
						.un = r->un,
						.kstack_id = -1,
						.ustack_id = -1,
						.value = r->event == SP_EV_ONCPU ? r->value * s->period_ms : r->value};

			(void)sp_profile__add(&ctx->prof, &smp);
		}
	}
	snprintf(id, sizeof(id), "%013" PRIu64 "-%013" PRIu64, from_ms, until_ms);
	for (int e = 0; e < AT_EVN; e++) {
		struct sp_acc *acc = &ctx->prof.acc[slot_ev[e]];

		ctx->ring_dropped += acc->store.dropped;
		/* period_us 1000: a stored "sample" is 1 ms, so the query API's microseconds are exact */
		err = sp_store__write(ctx->cur.flame_dir, slot_ev[e], from_ms, until_ms, e == AT_ON ? 1000u : 0u,
				      &acc->store);
		if (err)
			write_failed(ctx, "the profile store", err);
		else if (acc->store.n)
			wrote = 1;
		write_graphs(ctx, e, &acc->period, id, from_ms, until_ms);
		ftab__free(&acc->store);
		ftab__free(&acc->period);
	}
	(void)sp_store__expire(ctx->cur.flame_dir, wall, ctx->cur.retention_s, STORE_MAX_BYTES);
	if (wrote)
		ctx->profiles++;
	probe_log(PLOG_INFO, "capture of %s done: profile %s%s", trig_names[c->trig], id,
		  wrote ? "" : " (no stacks: nothing written)");
	send_event(ctx, id, from_ms, until_ms);
	c->on = 0;
}

static void capture_start(struct at_ctx *ctx, enum at_trig t, const struct at_proc *p, double value, uint64_t now,
			  uint64_t wall)
{
	struct at_capture *c = &ctx->cap;

	/* the second so far was sampled at the ring's rate: close it before the rate changes */
	ring_push(ctx, wall);
	memset(c, 0, sizeof(*c));
	c->on = 1;
	c->trig = t;
	c->value = value;
	c->thr = ctx->cur.tr[t].thr;
	c->hold_s = ctx->cur.tr[t].hold_s;
	if (p) {
		c->tgid = p->tgid;
		memcpy(c->comm, p->comm, sizeof(c->comm));
	}
	c->trigger_wall_ms = wall;
	c->until_mono_ms = now + (uint64_t)ctx->cur.capture_s * 1000u;
	ctx->captures++;
	ctx->trig[t].captures++;
	ctx->last_cap_ms = now;
	ctx->cap_times[ctx->ncap_times++ % CAPTURES_HOUR] = now;
	sampling_set(ctx, 1);
	probe_log(PLOG_INFO, "trigger %s: %.1f %s >= %u for %u s%s%s: capturing %u s", trig_names[t], value,
		  trig_units[t], c->thr, c->hold_s, p ? ", process " : "", p ? p->comm : "", ctx->cur.capture_s);
}

/* ---- triggers ------------------------------------------------------------------------------------ */

static unsigned int captures_last_hour(const struct at_ctx *ctx, uint64_t now)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < CAPTURES_HOUR && i < ctx->ncap_times; i++)
		if (now - ctx->cap_times[i] < HOUR_MS)
			n++;
	return n;
}

/* The threshold held: fire, unless in cooldown; start a capture unless a rate limit says no. */
static void fire(struct at_ctx *ctx, enum at_trig t, struct at_proc *p, double value, uint64_t now, uint64_t wall)
{
	struct at_tstate *tr = &ctx->trig[t];
	uint64_t *fire_ms = p ? &p->fire_ms[t == AT_TR_RSS] : &tr->fire_ms;
	uint64_t cool = (uint64_t)ctx->cur.tr[t].cooldown_s * 1000u;

	if (*fire_ms && now - *fire_ms < cool) {
		tr->suppressed++;
		return;
	}
	*fire_ms = now;
	tr->fired++;
	if (ctx->cap.on) {
		ctx->dropped_busy++;
		return;
	}
	if ((ctx->last_cap_ms && now - ctx->last_cap_ms < (uint64_t)ctx->cur.global_gap_s * 1000u) ||
	    captures_last_hour(ctx, now) >= ctx->cur.max_per_hour) {
		ctx->dropped_global++;
		return;
	}
	if (p && p->capture_ms && now - p->capture_ms < (uint64_t)ctx->cur.proc_gap_s * 1000u) {
		ctx->dropped_proc++;
		return;
	}
	if (p)
		p->capture_ms = now;
	capture_start(ctx, t, p, value, now, wall);
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
	for (const struct at_raw *e = raw_next(s, NULL); e; e = raw_next(s, e)) {
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
			fire(ctx, AT_TR_PROC_CPU, p, p->cpu_pct, now, wall);
		/* the window is the hold: one evaluation decides */
		if ((ctx->cur.triggers & (1u << AT_TR_RSS)) && p->rss_rate > 0 &&
		    p->rss_rate >= (double)ctx->cur.tr[AT_TR_RSS].thr)
			fire(ctx, AT_TR_RSS, p, p->rss_rate, now, wall);
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
		fire(ctx, t, NULL, value, now, wall);
}

static void eval_triggers(struct at_ctx *ctx, uint64_t now, uint64_t wall)
{
	uint64_t busy, total, retrans;
	__u64 hist[GG_LOG2_SLOTS], delta[GG_LOG2_SLOTS];
	int64_t dstate = 0;
	int ok;

	ok = !at_read_host_cpu(&busy, &total);
	eval_host(ctx, AT_TR_HOST_CPU,
		  ok && ctx->have_host && total > ctx->host_total
			  ? (double)(busy - ctx->host_busy) * 100.0 / (double)(total - ctx->host_total)
			  : 0,
		  ok && ctx->have_host && total > ctx->host_total, now, wall);
	if (ok) {
		ctx->host_busy = busy;
		ctx->host_total = total;
	}
	ctx->have_host = ok;

	ok = !at_read_retrans(&retrans);
	eval_host(ctx, AT_TR_RETRANS,
		  ok && ctx->have_retrans && now > ctx->retrans_ms
			  ? (double)(retrans - ctx->retrans) * 1000.0 / (double)(now - ctx->retrans_ms)
			  : 0,
		  ok && ctx->have_retrans && now > ctx->retrans_ms, now, wall);
	if (ok) {
		ctx->retrans = retrans;
		ctx->retrans_ms = now;
	}
	ctx->have_retrans = ok;

	ok = !sched_read(ctx, hist, &dstate);
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
		snprintf(tg, sizeof(tg), "%u", tr->tgid);
		probe_rec__begin(&rec, &TBL_autotrace_trigger);
		probe_rec__str(&rec, trig_names[t]);
		probe_rec__str(&rec, trig_units[t]);
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
	probe_rec__u64(&rec, ring_bytes(ctx));
	probe_rec__u64(&rec, ctx->nprocs);
	probe_rec__u64(&rec, (uint64_t)ctx->cap.on);
	(void)probe_rt__emit(ctx->rt, &rec);
	(void)probe_rt__flush(ctx->rt);
}

/* ---- the runner's hooks ---------------------------------------------------------------------------- */

static int on_config(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct at_ctx *ctx = data;
	struct at_conf c = ctx->base; /* stateless like REST: what the message leaves out, the command line's */
	int err = probe_conf__apply(CONTRACT, msg, &c, &c.triggers);

	if (err < 0)
		return err;
	if (!c.flame_dir[0]) {
		probe_log(PLOG_WARN, "configuration: flame_dir must not be empty");
		return -EINVAL;
	}
	if (msg->has_scope) {
		err = sp_sampler__set_scope(ctx->sampler, &msg->scope);
		if (err) {
			probe_log(PLOG_WARN, "configuration %llu: cannot apply the scope: %s",
				  (unsigned long long)version, strerror(-err));
			return err;
		}
		ctx->scope = msg->scope;
	}
	ctx->cur = c;
	ctx->apply_pending = 1;
	ctx->config_seen = 1;
	probe_rt__wake(ctx->rt);
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

	if (!ctx->apply_pending)
		return;
	ctx->apply_pending = 0;
	if (ctx->cur.ring_s + ctx->cur.capture_s + 2 != ctx->ring_cap) {
		/* sizes change: a capture in progress ends now, the ring starts over */
		if (ctx->cap.on)
			capture_finish(ctx, probe_now_wall_ms());
		ring_free(ctx);
		if (ring_size(ctx)) {
			probe_log(PLOG_ERROR, "no memory for the ring");
			return;
		}
		/* what was sampled so far belongs to no slot: the new ring starts empty */
		ring_push(ctx, probe_now_wall_ms());
		ring_free(ctx);
	}
	if (ring_size(ctx))
		probe_log(PLOG_ERROR, "no memory for the ring");
	sched_parts(ctx);
	sampling_set(ctx, ctx->cap.on);
}

static unsigned int tick(void *data)
{
	struct at_ctx *ctx = data;
	uint64_t now = probe_now_mono_ms(), wall = probe_now_wall_ms();

	sp_sampler__tick(ctx->sampler, now);
	if (!ctx->ring_cap)
		return IDLE_TICK_MS;
	ring_push(ctx, wall);
	if (ctx->cap.on && now + TICK_MS / 2 >= ctx->cap.until_mono_ms) {
		capture_finish(ctx, wall);
		sampling_set(ctx, 0);
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
	ctx->cur = ctx->base;
	ctx->scope = ctx->base_scope;
	err = sp_profile__init(&ctx->prof);
	if (err) {
		probe_log(PLOG_ERROR, "cannot set up the symbolizer: %s", strerror(-err));
		return err;
	}
	ctx->sampler = sp_sampler__new();
	if (!ctx->sampler) {
		err = -errno;
		probe_log(PLOG_ERROR, "cannot load the sampling programs: %s", strerror(-err));
		return err;
	}
	err = sp_sampler__set_scope(ctx->sampler, &ctx->scope);
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
	if (probe_rt__supervised(ctx->rt)) {
		uint64_t until = probe_now_mono_ms() + FIRST_CONFIG_WAIT_MS;

		for (uint64_t now = probe_now_mono_ms(); !ctx->config_seen && now < until; now = probe_now_mono_ms())
			if (probe_rt__wait(ctx->rt, (unsigned int)(until - now)))
				break;
	}
	ctx->apply_pending = 1;
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
	ring_free(ctx);
	sp_profile__free(&ctx->prof);
}

int main(int argc, char **argv)
{
	static struct at_ctx ctx;
	const struct probe_runner r = {
		.contract = CONTRACT,
		.ctx = &ctx,
		.args = {.conf = &ctx.base, .subprobes = &ctx.base.triggers, .scope = &ctx.base_scope, .notes = notes},
		.setup = setup,
		.on_config = on_config,
		.apply = apply,
		.tick = tick,
		.cur_subprobes = &ctx.cur.triggers,
		.describe = describe,
		.stop = stop,
		.teardown = teardown,
	};

	return probe_runner__main(&r, argc, argv);
}
