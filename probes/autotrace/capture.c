/* capture.c - autotrace's ring of raw on-CPU stacks (one slot per drain), the sampling rates, the
 * scheduler programs of the runq and dstate triggers, and the capture: one profile of the ring's seconds
 * before a trigger and the capture window, symbolized and written with stackprobe's code (profile store,
 * folded, SVG, pprof), announced by an event_v2. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "at_ctx.h"
#include "autotrace.skel.h"
#include "probe_array.h"

const char *const at_trig_names[AT_TR_NR] = {"host_cpu",    "proc_cpu", "dstate", "runq",
					     "tcp_retrans", "rss",	"l7_p99", "l7_errors"};
const char *const at_trig_units[AT_TR_NR] = {"percent",	   "percent", "tasks", "us",
					     "segments/s", "KiB/s",   "ms",    "percent"};

/* ---- the ring ---------------------------------------------------------------------------------------- */

/* Every slot is bounded per CPU (ring_memory / slots / CPUs): a CPU flooded with distinct stacks (deep
 * recursion, many threads blocking while capturing) drops its own excess, never the other CPUs' seconds. */

static void slot_free(struct at_ctx *ctx, struct at_slot *s)
{
	size_t *cpu_len = s->cpu_len;

	free(s->buf);
	memset(s, 0, sizeof(*s));
	if (cpu_len)
		memset(cpu_len, 0, ctx->ring_ncpu * sizeof(*cpu_len));
	s->cpu_len = cpu_len;
}

void at_ring__free(struct at_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->ring_n; i++)
		slot_free(ctx, &ctx->ring[(ctx->ring_head + i) % ctx->ring_cap]);
	free(ctx->ring);
	free(ctx->cpu_lens);
	ctx->ring = NULL;
	ctx->cpu_lens = NULL;
	ctx->ring_cap = ctx->ring_n = ctx->ring_head = 0;
}

/* Room for ring_seconds before a trigger plus the capture after it. */
int at_ring__size(struct at_ctx *ctx)
{
	unsigned int cap = ctx->cur.ring_s + ctx->cur.capture_s + 2;
	int ncpu = libbpf_num_possible_cpus();

	if (ncpu <= 0)
		ncpu = 1;
	if (cap == ctx->ring_cap && (unsigned int)ncpu == ctx->ring_ncpu) {
		ctx->cpu_bytes = (size_t)ctx->cur.ring_kb * 1024u / cap / (unsigned int)ncpu;
		return 0;
	}
	at_ring__free(ctx);
	ctx->ring = calloc(cap, sizeof(*ctx->ring));
	ctx->cpu_lens = calloc((size_t)cap * (unsigned int)ncpu, sizeof(*ctx->cpu_lens));
	if (!ctx->ring || !ctx->cpu_lens) {
		free(ctx->ring);
		free(ctx->cpu_lens);
		ctx->ring = NULL;
		ctx->cpu_lens = NULL;
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < cap; i++)
		ctx->ring[i].cpu_len = ctx->cpu_lens + (size_t)i * (unsigned int)ncpu;
	ctx->ring_cap = cap;
	ctx->ring_ncpu = (unsigned int)ncpu;
	ctx->cpu_bytes = (size_t)ctx->cur.ring_kb * 1024u / cap / (unsigned int)ncpu;
	return 0;
}

size_t at_ring__bytes(const struct at_ctx *ctx)
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
	unsigned char *nb;
	struct at_raw *r;

	uint32_t cpu = smp->cpu < ctx->ring_ncpu ? smp->cpu : 0;

	if (smp->event != SP_EV_ONCPU && smp->event != SP_EV_OFFCPU)
		return 0;
	if (s->cpu_len[cpu] + need > ctx->cpu_bytes) {
		ctx->ring_dropped += smp->value;
		ctx->dropped_why[AT_DROP_CPU] += smp->value;
		return 0;
	}
	nb = probe_array_reserve(s->buf, &s->cap, 1, s->len + need, 16384, SIZE_MAX);
	if (!nb) {
		ctx->ring_dropped += smp->value;
		ctx->dropped_why[AT_DROP_NOMEM] += smp->value;
		return 0;
	}
	s->buf = nb;
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
	s->cpu_len[cpu] += need;
	return 0;
}

/* The records of a slot, one after the other: the next after r (the first when r is NULL), or NULL. */
const struct at_raw *at_raw__next(const struct at_slot *s, const struct at_raw *r)
{
	size_t off = 0;

	if (r)
		off = (size_t)((const unsigned char *)r - s->buf) +
		      ((sizeof(*r) + ((size_t)r->kn + r->un) * sizeof(uint64_t) + 7) & ~(size_t)7);
	return off < s->len ? (const struct at_raw *)(const void *)(s->buf + off) : NULL;
}

/* Drain the sampler into a new slot (the oldest goes when the ring is full). */
void at_ring__push(struct at_ctx *ctx, uint64_t wall)
{
	struct at_slot *s;
	int err;

	if (ctx->ring_n == ctx->ring_cap) {
		slot_free(ctx, &ctx->ring[ctx->ring_head]);
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

void at_sampling__set(struct at_ctx *ctx, int capturing)
{
	unsigned int period = capturing ? ctx->cur.profile_period_ms : ctx->cur.ring_period_ms;
	unsigned int events = 1u << SP_EV_ONCPU;
	int err;

	if (capturing && ctx->cur.capture_offcpu)
		events |= 1u << SP_EV_OFFCPU;
	if (period == ctx->sampling_ms && events == ctx->sampling_events)
		return;
	err = sp_sampler__apply(ctx->sampler, events, period, ctx->cur.min_block_us, 1); /* .eh_frame unwinding on */
	if (err)
		probe_log(PLOG_WARN, "sampling at %u ms: %s", period, strerror(-err));
	ctx->sampling_ms = period;
	ctx->sampling_events = events;
}

/* The scheduler programs, attached only for the triggers that need them (a cost on every switch). */
void at_sched__attach(struct at_ctx *ctx)
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

/* Sum of the per-CPU scheduler counters (the unseen switch-in counts into ctx). */
int at_sched__read(struct at_ctx *ctx, __u64 *hist, int64_t *ret_dstate)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	__u64 runq_unseen = 0, dstate_unseen = 0;
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
		runq_unseen += v[c].runq_unseen_in;
		dstate_unseen += v[c].dstate_unseen_in;
	}
	ctx->runq_unseen_in = runq_unseen;
	ctx->dstate_unseen_in = dstate_unseen;
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
	snprintf(name, sizeof(name), "%s_%s_%s.folded", id, at_trig_names[c->trig], sp_event_names[slot_ev[e]]);
	if ((err = probe_outdir__write(dfd, name, text, len)))
		write_failed(ctx, name, err);
	snprintf(title, sizeof(title), "%s flame graph: trigger %s", e == AT_ON ? "On-CPU" : "Off-CPU",
		 at_trig_names[c->trig]);
	snprintf(sub, sizeof(sub), "profile %s: %.1f %s >= %u (%s); trigger at %" PRIu64 " ms (gala-gopher autotrace)",
		 id, c->value, at_trig_units[c->trig], c->thr, c->tgid ? c->comm : "host", c->trigger_wall_ms);
	so.title = title;
	so.subtitle = sub;
	snprintf(name, sizeof(name), "%s_%s_%s.svg", id, at_trig_names[c->trig], sp_event_names[slot_ev[e]]);
	if ((err = sp_svg__write(dfd, name, text, len, &so)))
		write_failed(ctx, name, err);
	/* on-CPU values are ms of CPU: "samples" of a 1 ms period */
	sp_pprof__event_opts(slot_ev[e], 1, &po);
	snprintf(name, sizeof(name), "%s_%s_%s.pb.gz", id, at_trig_names[c->trig], sp_event_names[slot_ev[e]]);
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

	gg_event_label(labels, sizeof(labels), &used, "trigger", at_trig_names[c->trig]);
	snprintf(num, sizeof(num), "%.1f", c->value);
	gg_event_label(labels, sizeof(labels), &used, "value", num);
	snprintf(num, sizeof(num), "%u", c->thr);
	gg_event_label(labels, sizeof(labels), &used, "threshold", num);
	gg_event_label(labels, sizeof(labels), &used, "unit", at_trig_units[c->trig]);
	snprintf(num, sizeof(num), "%u", c->hold_s);
	gg_event_label(labels, sizeof(labels), &used, "hold_s", num);
	if (c->tgid) {
		snprintf(num, sizeof(num), "%u", c->tgid);
		gg_event_label(labels, sizeof(labels), &used, "tgid", num);
		gg_event_label(labels, sizeof(labels), &used, "comm", c->comm);
	}
	if (c->l7) {
		/* the window that decided: its requests, failures, p99 and failed share */
		snprintf(num, sizeof(num), "%" PRIu64, c->l7_reqs);
		gg_event_label(labels, sizeof(labels), &used, "requests", num);
		snprintf(num, sizeof(num), "%" PRIu64, c->l7_errs);
		gg_event_label(labels, sizeof(labels), &used, "errors", num);
		snprintf(num, sizeof(num), "%.1f", c->l7_p99_ms);
		gg_event_label(labels, sizeof(labels), &used, "p99_ms", num);
		snprintf(num, sizeof(num), "%.1f", c->l7_err_pct);
		gg_event_label(labels, sizeof(labels), &used, "error_pct", num);
		snprintf(num, sizeof(num), "%.1f", (double)c->l7_window_ms / 1000.0);
		gg_event_label(labels, sizeof(labels), &used, "window_s", num);
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
		 at_trig_names[c->trig], c->value, at_trig_units[c->trig], c->thr, c->hold_s,
		 c->tgid ? " (process " : "", c->tgid ? c->comm : "", c->tgid ? ")" : "", id,
		 (c->trigger_wall_ms - from_ms) / 1000, (until_ms - c->trigger_wall_ms) / 1000, id);
	(void)gg_event_emit(ctx->rt, "autotrace", id, "capture", "WARN", body, NULL, labels);
	(void)probe_rt__flush(ctx->rt);
}

/* The capture window is over: one profile of the ring's seconds before the trigger and the capture,
 * symbolized now (stackprobe's profile code, into its accumulators). */
void at_capture__finish(struct at_ctx *ctx, uint64_t wall)
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
		for (const struct at_raw *r = at_raw__next(s, NULL); r; r = at_raw__next(s, r)) {
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
		ctx->dropped_why[AT_DROP_PROFILE] += acc->store.dropped;
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
	probe_log(PLOG_INFO, "capture of %s done: profile %s%s", at_trig_names[c->trig], id,
		  wrote ? "" : " (no stacks: nothing written)");
	send_event(ctx, id, from_ms, until_ms);
	c->on = 0;
}

void at_capture__start(struct at_ctx *ctx, enum at_trig t, uint32_t tgid, const char *comm, double value, uint64_t now,
		       uint64_t wall)
{
	struct at_capture *c = &ctx->cap;

	/* the second so far was sampled at the ring's rate: close it before the rate changes */
	at_ring__push(ctx, wall);
	memset(c, 0, sizeof(*c));
	c->on = 1;
	c->trig = t;
	c->value = value;
	c->thr = ctx->cur.tr[t].thr;
	c->hold_s = ctx->cur.tr[t].hold_s;
	if (tgid) {
		c->tgid = tgid;
		snprintf(c->comm, sizeof(c->comm), "%s", comm ? comm : "");
	}
	c->trigger_wall_ms = wall;
	c->until_mono_ms = now + (uint64_t)ctx->cur.capture_s * 1000u;
	ctx->captures++;
	ctx->trig[t].captures++;
	ctx->last_cap_ms = now;
	ctx->cap_times[ctx->ncap_times++ % CAPTURES_HOUR] = now;
	at_sampling__set(ctx, 1);
	probe_log(PLOG_INFO, "trigger %s: %.1f %s >= %u for %u s%s%s: capturing %u s", at_trig_names[t], value,
		  at_trig_units[t], c->thr, c->hold_s, tgid ? ", process " : "", tgid ? c->comm : "",
		  ctx->cur.capture_s);
}
