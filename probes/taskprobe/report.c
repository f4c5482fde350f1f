/* report.c - taskprobe's report period: read the per-process counters from the kernel, turn them
 * into records (per-period values from deltas), retire processes that went away, raise events. */
#include "tp_user.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskprobe.meta.h"
#include "taskprobe.skel.h"

int tp_report_init(struct tp_ctx *ctx)
{
	ctx->keys = calloc(TP_PROCS_MAX, sizeof(*ctx->keys));
	ctx->vals = calloc(TP_PROCS_MAX, sizeof(*ctx->vals));
	ctx->prev = calloc(TP_PROCS_MAX, sizeof(*ctx->prev));
	if (!ctx->keys || !ctx->vals || !ctx->prev)
		return -ENOMEM;
	return 0;
}

void tp_report_free(struct tp_ctx *ctx)
{
	free(ctx->keys);
	free(ctx->vals);
	free(ctx->prev);
	ctx->keys = NULL;
	ctx->vals = NULL;
	ctx->prev = NULL;
}

static void clear_map(struct bpf_map *map, uint32_t key_size, uint32_t val_size, void *keys, void *vals)
{
	uint32_t n;

	(void)gg_bpf_map_dump_all(bpf_map__fd(map), keys, vals, key_size, val_size, TP_PROCS_MAX, &n, 1);
}

void tp_report_reset(struct tp_ctx *ctx)
{
	clear_map(ctx->skel->maps.tp_procs, sizeof(uint32_t), sizeof(struct tp_proc), ctx->keys, ctx->vals);
	ctx->nprev = 0;
	ctx->ngone = 0;
}

int tp_scope_apply(struct tp_ctx *ctx)
{
	struct taskprobe *s = ctx->skel;
	int err = gg_scope__apply(&ctx->cur.scope, s->obj);

	if (err)
		return err;
	ctx->applied = ctx->cur.scope;
	/*
	 * Forget cached verdicts; twice, around a short pause, so that a verdict being computed under the
	 * old scope while the first clearing ran does not survive.
	 */
	s->bss->filter_on = ctx->applied.all ? 0 : 1;
	memset(s->bss->verdict, 0, sizeof(s->bss->verdict));
	(void)probe_rt__wait(ctx->rt, 5);
	memset(s->bss->verdict, 0, sizeof(s->bss->verdict));
	/* What was counted under the old scope may be out of it now; so may threads sleeping off CPU
	 * (their wake-up is matched only when their verdict is "in": entries of the old scope would stay). */
	tp_report_reset(ctx);
	for (int i = 0; i < 8; i++) {
		uint32_t n = 0;

		if (gg_bpf_map_dump_all(bpf_map__fd(s->maps.tp_offcpu), ctx->keys, ctx->vals, sizeof(uint32_t),
					bpf_map__value_size(s->maps.tp_offcpu), TP_PROCS_MAX, &n, 1) ||
		    !n)
			break;
	}
	ctx->scope_dirty = 0;
	return 0;
}

/* ---- reading ------------------------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_prev(const void *a, const void *b)
{
	return cmp_u32(&((const struct tp_prev *)a)->tgid, &((const struct tp_prev *)b)->tgid);
}

static const struct tp_proc zero_proc;

static const struct tp_proc *prev_of(const struct tp_ctx *ctx, uint32_t tgid)
{
	struct tp_prev key = {.tgid = tgid};
	const struct tp_prev *p = bsearch(&key, ctx->prev, ctx->nprev, sizeof(*ctx->prev), cmp_prev);

	return p ? &p->v : &zero_proc;
}

static uint64_t d(uint64_t cur, uint64_t prev)
{
	return cur > prev ? cur - prev : 0;
}

/* Average of a period: delta of a sum over delta of a count, 0 without events. */
static double avg(uint64_t sum, uint64_t psum, uint64_t cnt, uint64_t pcnt, double scale)
{
	uint64_t n = d(cnt, pcnt);

	return n ? (double)d(sum, psum) / (double)n * scale : 0;
}

/* ---- records --------------------------------------------------------------------------------------- */

static void begin(struct probe_rec *r, const struct probe_table *t, uint32_t tgid, const struct tp_proc *v)
{
	probe_rec__begin(r, t);
	probe_rec__u64(r, tgid);
	probe_rec__strn(r, v->comm, strnlen(v->comm, sizeof(v->comm)));
}

static void emit_sc_ns(struct tp_ctx *ctx, const struct probe_table *t, uint32_t tgid, const struct tp_proc *v,
		       const struct tp_proc *p, const int *classes, unsigned int n)
{
	struct probe_rec r;

	begin(&r, t, tgid, v);
	for (unsigned int i = 0; i < n; i++)
		probe_rec__u64(&r, d(v->sc[classes[i]].ns, p->sc[classes[i]].ns));
	(void)probe_rt__emit(ctx->rt, &r);
}

static void emit_fs_kind(struct tp_ctx *ctx, const struct probe_table *t, uint32_t tgid, const struct tp_proc *v,
			 const struct tp_proc *p, int kind, int with_open)
{
	struct probe_rec r;
	int ops[4] = {TP_FS_READ, TP_FS_WRITE, TP_FS_OPEN, TP_FS_FSYNC};
	uint64_t any = 0;

	for (int i = 0; i < TP_FS_OP__COUNT; i++)
		any += v->fs[i][kind].count;
	if (!any)
		return; /* never touched a file on this file system */
	begin(&r, t, tgid, v);
	for (int i = 0; i < 4; i++) {
		if (ops[i] == TP_FS_OPEN && !with_open)
			continue;
		probe_rec__u64(&r, d(v->fs[ops[i]][kind].ns, p->fs[ops[i]][kind].ns));
	}
	(void)probe_rt__emit(ctx->rt, &r);
}

/* The slowest syscall of the period that just ended, or 0 (max_ns) when there was none. */
static uint64_t period_max(const struct tp_proc *v, uint32_t epoch)
{
	return v->max_epoch == epoch ? v->max_ns : 0;
}

static void emit_proc(struct tp_ctx *ctx, uint32_t tgid, const struct tp_proc *v, const struct tp_proc *p,
		      uint32_t epoch)
{
	static const int io_cls[] = {TP_SC_MOUNT, TP_SC_UMOUNT, TP_SC_READ, TP_SC_WRITE, TP_SC_FSYNC};
	static const int net_cls[] = {TP_SC_SENDMSG, TP_SC_RECVMSG};
	static const int sched_cls[] = {TP_SC_SCHED_YIELD, TP_SC_FUTEX, TP_SC_EPOLL_WAIT, TP_SC_EPOLL_PWAIT};
	static const int fork_cls[] = {TP_SC_FORK, TP_SC_VFORK, TP_SC_CLONE};
	unsigned int subs = ctx->cur.subs;
	struct probe_rec r;

	if (subs & TP_SUB_BASE) {
		begin(&r, &TBL_proc_cpu, tgid, v);
		probe_rec__u64(&r, v->offcpu_ns);
		probe_rec__u64(&r, v->iowait_ns);
		probe_rec__u64(&r, v->forks);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	if (subs & TP_SUB_SYSCALL) {
		uint64_t count = 0, ns = 0;

		for (int i = 0; i < TP_SC__COUNT; i++) {
			count += v->sc[i].count;
			ns += v->sc[i].ns;
		}
		begin(&r, &TBL_proc_syscall, tgid, v);
		probe_rec__u64(&r, count);
		probe_rec__u64(&r, v->syscall_failed);
		probe_rec__u64(&r, ns);
		probe_rec__u64(&r, period_max(v, epoch));
		probe_rec__u64(&r, period_max(v, epoch) ? v->max_nr : 0);
		(void)probe_rt__emit(ctx->rt, &r);
		emit_sc_ns(ctx, &TBL_proc_syscall_io, tgid, v, p, io_cls, 5);
		emit_sc_ns(ctx, &TBL_proc_syscall_net, tgid, v, p, net_cls, 2);
		emit_sc_ns(ctx, &TBL_proc_syscall_sched, tgid, v, p, sched_cls, 4);
		emit_sc_ns(ctx, &TBL_proc_syscall_fork, tgid, v, p, fork_cls, 3);
	}
	if (subs & TP_SUB_FS) {
		begin(&r, &TBL_proc_fs, tgid, v);
		for (int op = 0; op < TP_FS_OP__COUNT; op++) {
			const struct tp_count_ns *c = &v->fs[op][TP_FSK_ANY], *pc = &p->fs[op][TP_FSK_ANY];

			probe_rec__u64(&r, c->count);
			probe_rec__u64(&r, c->ns);
			probe_rec__f64(&r, avg(c->ns, pc->ns, c->count, pc->count, 1.0));
		}
		(void)probe_rt__emit(ctx->rt, &r);
		emit_fs_kind(ctx, &TBL_proc_ext4, tgid, v, p, TP_FSK_EXT4, 1);
		emit_fs_kind(ctx, &TBL_proc_overlay, tgid, v, p, TP_FSK_OVERLAY, 1);
		emit_fs_kind(ctx, &TBL_proc_tmpfs, tgid, v, p, TP_FSK_TMPFS, 0);
	}
	if (subs & TP_SUB_IO) {
		begin(&r, &TBL_proc_io, tgid, v);
		probe_rec__u64(&r, v->io_less4k[0]);
		probe_rec__u64(&r, v->io_less4k[1]);
		probe_rec__u64(&r, v->io_more4k[0]);
		probe_rec__u64(&r, v->io_more4k[1]);
		probe_rec__u64(&r, v->io_bytes[0]);
		probe_rec__u64(&r, v->io_bytes[1]);
		probe_rec__f64(&r, avg(v->io_ns, p->io_ns, v->io_done, p->io_done, 1e-3));
		probe_rec__u64(&r, v->io_err);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	if (subs & TP_SUB_PAGECACHE) {
		begin(&r, &TBL_proc_page, tgid, v);
		probe_rec__u64(&r, v->reclaim_ns);
		probe_rec__u64(&r, v->pc_buffer_dirty);
		probe_rec__u64(&r, v->pc_load);
		probe_rec__u64(&r, v->pc_dirty);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	if (subs & TP_SUB_DNS) {
		begin(&r, &TBL_proc_dns, tgid, v);
		probe_rec__u64(&r, v->dns_failed);
		probe_rec__f64(&r, avg(v->dns_ns, p->dns_ns, v->dns_calls, p->dns_calls, 1.0));
		probe_rec__u64(&r, v->dns_calls);
		probe_rec__u64(&r, v->dns_ns);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

/* An abnormal event about process tgid: an event_v2 record (WARN) labelled comm=<comm>&tgid=<tgid>. */
static void emit_event(struct tp_ctx *ctx, uint32_t tgid, const char *comm, size_t comm_len, const char *metric,
		       const char *body, const char *body_zh)
{
	char labels[128], id[16], name[17];
	size_t used = 0;

	snprintf(name, sizeof(name), "%.*s", (int)strnlen(comm, comm_len < 16 ? comm_len : 16), comm);
	snprintf(id, sizeof(id), "%u", tgid);
	labels[0] = '\0';
	gg_event_label(labels, sizeof(labels), &used, "comm", name);
	gg_event_label(labels, sizeof(labels), &used, "tgid", id);
	(void)gg_event_emit(ctx->rt, "proc", id, metric, "WARN", body, body_zh, labels);
}

/* ---- the period ----------------------------------------------------------------------------------- */

static int process_gone(uint32_t tgid)
{
	return kill((pid_t)tgid, 0) < 0 && errno == ESRCH;
}

static void offline_events(struct tp_ctx *ctx, uint64_t now)
{
	unsigned int i = 0;

	while (i < ctx->ngone) {
		struct tp_gone *g = &ctx->gone[i];
		uint64_t waited = now - g->gone_ms;
		char body[160], body_zh[200];

		if (!ctx->cur.report_event || !ctx->cur.offline_thr_ms) {
			ctx->ngone = 0;
			return;
		}
		if (waited < ctx->cur.offline_thr_ms) {
			i++;
			continue;
		}
		snprintf(body, sizeof(body), "Process(COMM:%.16s PID:%u) is offline for %llu ms.", g->comm, g->tgid,
			 (unsigned long long)waited);
		snprintf(body_zh, sizeof(body_zh), "进程(COMM:%.16s PID:%u)已离线%llu毫秒。", g->comm, g->tgid,
			 (unsigned long long)waited);
		emit_event(ctx, g->tgid, g->comm, sizeof(g->comm), "offline", body, body_zh);
		ctx->gone[i] = ctx->gone[--ctx->ngone];
	}
}

/* Sort the dump by tgid (keys and values together) so that it can become the next prev snapshot. */
static void sort_dump(struct tp_ctx *ctx, uint32_t n, struct tp_prev *out)
{
	for (uint32_t i = 0; i < n; i++) {
		out[i].tgid = ctx->keys[i];
		out[i].v = ctx->vals[i];
	}
	qsort(out, n, sizeof(*out), cmp_prev);
}

int tp_report(struct tp_ctx *ctx)
{
	static struct tp_prev cur[TP_PROCS_MAX];
	uint32_t epoch = ctx->skel->bss->max_epoch;
	uint32_t n = 0, ncur = 0, live = 0;
	uint64_t now = probe_now_mono_ms();
	struct probe_rec r;
	uint64_t dropped;
	int err;

	err = gg_bpf_map_dump_all(bpf_map__fd(ctx->skel->maps.tp_procs), ctx->keys, ctx->vals, sizeof(uint32_t),
				  sizeof(struct tp_proc), TP_PROCS_MAX, &n, 0);
	if (err)
		return err;
	/* Syscalls ending from now on count towards the next period's maximum. */
	ctx->skel->bss->max_epoch = epoch + 1;
	sort_dump(ctx, n, cur);
	ncur = n;

	for (uint32_t i = 0; i < ncur; i++) {
		const struct tp_proc *v = &cur[i].v;
		uint32_t tgid = cur[i].tgid;
		uint64_t max_ns = period_max(v, epoch);
		int gone = process_gone(tgid);

		emit_proc(ctx, tgid, v, prev_of(ctx, tgid), epoch);
		if ((ctx->cur.subs & TP_SUB_SYSCALL) && ctx->cur.report_event && ctx->cur.latency_thr_ms &&
		    max_ns >= (uint64_t)ctx->cur.latency_thr_ms * 1000000u) {
			char body[200], body_zh[240];

			snprintf(body, sizeof(body),
				 "Process(COMM:%.16s PID:%u) syscall %u took %.3f ms (ret %lld), above latency_thr %u "
				 "ms.",
				 v->comm, tgid, v->max_nr, (double)max_ns / 1e6, (long long)v->max_ret,
				 ctx->cur.latency_thr_ms);
			snprintf(body_zh, sizeof(body_zh),
				 "进程(COMM:%.16s PID:%u)系统调用%u耗时%.3f毫秒(返回值%lld)，超过阈值%u毫秒。", v->comm,
				 tgid, v->max_nr, (double)max_ns / 1e6, (long long)v->max_ret, ctx->cur.latency_thr_ms);
			emit_event(ctx, tgid, v->comm, sizeof(v->comm), "syscall_max_ns", body, body_zh);
		}
		if (gone) {
			/* Its last values are out: forget it (its tgid may come back as another process). */
			(void)bpf_map_delete_elem(bpf_map__fd(ctx->skel->maps.tp_procs), &tgid);
			if (ctx->ngone < TP_OFFLINE_MAX && ctx->cur.report_event && ctx->cur.offline_thr_ms) {
				struct tp_gone *g = &ctx->gone[ctx->ngone++];

				g->tgid = tgid;
				memcpy(g->comm, v->comm, sizeof(g->comm));
				g->gone_ms = now;
			}
			continue;
		}
		cur[live++] = cur[i];
	}
	memcpy(ctx->prev, cur, live * sizeof(*cur));
	ctx->nprev = live;
	offline_events(ctx, now);

	dropped = ctx->skel->bss->dropped_procs;
	probe_rec__begin(&r, &TBL_taskprobe_stats);
	probe_rec__str(&r, "taskprobe");
	probe_rec__u64(&r, dropped);
	probe_rec__u64(&r, ctx->skel->bss->offcpu_unseen_in);
	(void)probe_rt__emit(ctx->rt, &r);
	if (dropped != ctx->dropped_logged) {
		probe_log(PLOG_WARN, "%llu events of processes beyond the %u tracked were not counted",
			  (unsigned long long)(dropped - ctx->dropped_logged), TP_PROCS_MAX);
		ctx->dropped_logged = dropped;
	}
	return 0;
}
