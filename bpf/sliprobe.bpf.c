// SPDX-License-Identifier: GPL-2.0
/* sliprobe.bpf.c - sliprobe's kernel half: run-queue delay, sleep, IO wait and block times from the
 * scheduler's switch and wakeup tracepoints, reclaim and compaction stalls, and block request latency,
 * each summed per cgroup v2 and per node with a log2 histogram. Tracepoints (tp_btf) only: no
 * schedstats, no kprobes. Timestamps live in task storage; totals in per-CPU maps read each period. */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "sliprobe.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_INTERRUPTIBLE   0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_NOLOAD	     0x0400
#define PF_KTHREAD	     0x00200000

/* Stamps older than this were taken before the current attachment (user space sets it when it
 * attaches): their deltas span a time the probe was not watching and are dropped. */
volatile __u64 sli_epoch_ns;

/* How a task left the CPU last time (task storage). */
enum sli_task_state {
	ST_NONE = 0,
	ST_PREEMPTED, /* still runnable: preempted or yielding */
	ST_SLEEP,
	ST_IOWAIT,
	ST_BLOCK,
};

struct sli_task {
	__u64 out_ts;	  /* when it last left a CPU, on the rq clock (0: unknown, not a fair-class task) */
	__u64 run_delay;  /* its sched_info.run_delay then */
	__u64 utime;	  /* its utime then */
	__u64 epoch;	  /* sli_epoch_ns when these were taken (0: never) */
	__u64 reclaim_ts; /* in reclaim since (0: not) */
	__u64 compact_ts; /* in compaction since (0: not) */
	__u32 state;	  /* enum sli_task_state */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sli_task);
} sli_task_store SEC(".maps");

/* Per cgroup v2, in the cgroup itself (freed with it): found through the cgroup's own storage cache,
 * cheaper than a hash lookup on every switch. Shared by the CPUs: updated with atomic adds. */
struct {
	__uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sli_stats);
} sli_cgrp SEC(".maps");

GG_MAP(sli_node, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct sli_stats, 1, 0);

/* Block latency per issuing cgroup v2 id: completions run in interrupt context, where the issuer's
 * cgroup storage cannot be reached; a per-CPU LRU hash keyed by the id instead (user space sums the
 * CPUs). */
GG_MAP(sli_io_cgrp, BPF_MAP_TYPE_LRU_PERCPU_HASH, __u64, struct sli_lat, SLI_CGROUPS_MAX, 0);

/* Block requests in flight: when they started and the issuing cgroup. */
struct sli_req {
	__u64 ts;
	__u64 cgid;
};

GG_MAP(sli_inflight, BPF_MAP_TYPE_LRU_HASH, __u64, struct sli_req, SLI_INFLIGHT_MAX, 0);

/* A task's cgroup v2 stats (created on first use); NULL for the root cgroup. */
static __always_inline struct sli_stats *task_cg_stats(struct task_struct *t)
{
	struct cgroup *cg = t->cgroups->dfl_cgrp;

	/* The root cgroup is the node minus the containers: the node's stats say it; no lookup. */
	if (!cg || !cg->level)
		return NULL;
	return bpf_cgrp_storage_get(&sli_cgrp, cg, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* Per-CPU values (the node's): plain adds, no atomics (the program cannot be preempted on its CPU). */
static __always_inline void lat_add(struct sli_lat *l, __u64 d, __u32 slot)
{
	l->ns += d;
	if (slot < GG_LOG2_SLOTS)
		l->slots[slot]++;
}

/* Shared values (a cgroup's). */
static __always_inline void lat_add_atomic(struct sli_lat *l, __u64 d, __u32 slot)
{
	__sync_fetch_and_add(&l->ns, d);
	if (slot < GG_LOG2_SLOTS)
		__sync_fetch_and_add(&l->slots[slot], 1);
}

/* What one switch-out found for a task, added to the node's and its cgroup's stats at once. */
struct cpu_delta {
	__u64 rundelay; /* run-queue delay since its last switch-out */
	__u64 off;	/* the sleep or block before that delay (0: none) */
	__u64 longsys;	/* the slice that just ended, when it was long system time (0: not) */
	int off_kind;	/* SLI_CPU_SLEEP, _IOWAIT or _BLOCK */
	int preempted;	/* the run-queue delay followed a preemption (cpu_wait too) */
};

static __always_inline void cpu_stats_add(struct sli_stats *s, const struct cpu_delta *d, int atomic)
{
	int k = d->off_kind;

	if (d->rundelay) {
		__u32 slot = gg_log2_slot(d->rundelay);

		if (atomic)
			lat_add_atomic(&s->cpu[SLI_CPU_RUNDELAY], d->rundelay, slot);
		else
			lat_add(&s->cpu[SLI_CPU_RUNDELAY], d->rundelay, slot);
		if (d->preempted) {
			if (atomic)
				lat_add_atomic(&s->cpu[SLI_CPU_WAIT], d->rundelay, slot);
			else
				lat_add(&s->cpu[SLI_CPU_WAIT], d->rundelay, slot);
		}
	}
	if (d->off && k >= SLI_CPU_SLEEP && k <= SLI_CPU_BLOCK) {
		if (atomic)
			lat_add_atomic(&s->cpu[k], d->off, gg_log2_slot(d->off));
		else
			lat_add(&s->cpu[k], d->off, gg_log2_slot(d->off));
	}
	if (d->longsys) {
		if (atomic)
			lat_add_atomic(&s->cpu[SLI_CPU_LONGSYS], d->longsys, gg_log2_slot(d->longsys));
		else
			lat_add(&s->cpu[SLI_CPU_LONGSYS], d->longsys, gg_log2_slot(d->longsys));
	}
}

static __always_inline void mem_add(struct sli_stats *cg, int kind, __u64 d)
{
	struct sli_stats *s = gg_map_elem0(&sli_node);
	__u32 slot = gg_log2_slot(d);

	if (kind < 0 || kind >= SLI_MEM_N)
		return;
	if (s)
		lat_add(&s->mem[kind], d, slot);
	if (cg)
		lat_add_atomic(&cg->mem[kind], d, slot);
}

/* ---- CPU ------------------------------------------------------------------------------------------ */

#define SCHED_NORMAL 0
#define SCHED_BATCH  3
#define SCHED_IDLE   5

/*
 * Everything at the switch-out of prev, nothing at switch-in or wakeup: since its last switch-out the
 * task was off the CPU (asleep or blocked, as it left then), waited on a run queue and ran one slice.
 * The kernel keeps the run-queue delay itself (sched_info.run_delay: what /proc/<pid>/schedstat shows,
 * maintained without kernel.sched_schedstats), when the slice began (sched_info.last_arrival, on the
 * rq clock) and its length (se.sum_exec_runtime - se.prev_sum_exec_runtime, fair class): the off-CPU
 * time is from the last switch-out to that arrival, less the run-queue delay. One program run, one task
 * storage lookup and no clock read per context switch.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(sli_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u64 epoch = sli_epoch_ns, rd, ut, slice = 0, arrival, out = 0;
	struct cpu_delta d = {};
	struct sli_task *t;
	unsigned int pol;

	if (!prev->pid)
		return 0;
	t = bpf_task_storage_get(&sli_task_store, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	rd = prev->sched_info.run_delay;
	arrival = prev->sched_info.last_arrival; /* rq clock: comparable between CPUs */
	ut = prev->utime;
	pol = prev->policy;
	if (pol == SCHED_NORMAL || pol == SCHED_BATCH || pol == SCHED_IDLE) {
		slice = prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime;
		out = arrival + slice; /* now, on the rq clock, without reading a clock */
	}
	if (t->epoch == epoch) {
		d.rundelay = rd - t->run_delay;
		d.preempted = t->state == ST_PREEMPTED;
		if (t->state >= ST_SLEEP && t->out_ts && out && arrival > t->out_ts + d.rundelay) {
			d.off = arrival - t->out_ts - d.rundelay;
			d.off_kind = t->state == ST_SLEEP ? SLI_CPU_SLEEP
							  : (t->state == ST_IOWAIT ? SLI_CPU_IOWAIT : SLI_CPU_BLOCK);
		}
		if (slice >= SLI_LONGSYS_NS && ut == t->utime)
			d.longsys = slice;
	} else if (epoch && prev->start_time >= epoch) {
		/* born while watched: every wait of its life is ours (its first one included) */
		d.rundelay = rd;
	}
	if (d.rundelay || d.off || d.longsys) {
		struct sli_stats *s = gg_map_elem0(&sli_node);

		if (s)
			cpu_stats_add(s, &d, 0);
		s = task_cg_stats(prev);
		if (s)
			cpu_stats_add(s, &d, 1);
	}
	t->out_ts = out;
	t->run_delay = rd;
	t->utime = ut;
	t->epoch = epoch;
	/* TASK_IDLE (D + NOLOAD) is an idle kernel thread's sleep, not a block. Stopped, traced, dead:
	 * not tracked. */
	if (preempt || !prev_state)
		t->state = ST_PREEMPTED;
	else if ((prev_state & TASK_UNINTERRUPTIBLE) && !(prev_state & TASK_NOLOAD))
		t->state = BPF_CORE_READ_BITFIELD(prev, in_iowait) ? ST_IOWAIT : ST_BLOCK;
	else if (prev_state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE))
		t->state = ST_SLEEP;
	else
		t->state = ST_NONE;
	return 0;
}

/* ---- memory --------------------------------------------------------------------------------------- */

static __always_inline void reclaim_begin(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct sli_task *t = bpf_task_storage_get(&sli_task_store, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t)
		t->reclaim_ts = bpf_ktime_get_ns();
}

static __always_inline void reclaim_end(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct sli_task *t = bpf_task_storage_get(&sli_task_store, cur, 0, 0);
	__u64 now = bpf_ktime_get_ns();

	if (!t || !t->reclaim_ts)
		return;
	if (t->reclaim_ts >= sli_epoch_ns && now > t->reclaim_ts)
		mem_add(task_cg_stats(cur), SLI_MEM_RECLAIM, now - t->reclaim_ts);
	t->reclaim_ts = 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(sli_dreclaim_begin)
{
	reclaim_begin();
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(sli_dreclaim_end)
{
	reclaim_end();
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_begin")
int BPF_PROG(sli_mreclaim_begin)
{
	reclaim_begin();
	return 0;
}

SEC("tp_btf/mm_vmscan_memcg_reclaim_end")
int BPF_PROG(sli_mreclaim_end)
{
	reclaim_end();
	return 0;
}

/* Compaction in a user task's context is direct compaction (an allocation waiting); kcompactd's is
 * background work and not a stall of anyone. */
SEC("tp_btf/mm_compaction_begin")
int BPF_PROG(sli_compact_begin)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct sli_task *t;

	if (cur->flags & PF_KTHREAD)
		return 0;
	t = bpf_task_storage_get(&sli_task_store, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->compact_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/mm_compaction_end")
int BPF_PROG(sli_compact_end)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct sli_task *t = bpf_task_storage_get(&sli_task_store, cur, 0, 0);
	__u64 now = bpf_ktime_get_ns();

	if (!t || !t->compact_ts)
		return 0;
	if (t->compact_ts >= sli_epoch_ns && now > t->compact_ts)
		mem_add(task_cg_stats(cur), SLI_MEM_COMPACT, now - t->compact_ts);
	t->compact_ts = 0;
	return 0;
}

/* ---- block IO ------------------------------------------------------------------------------------- */

/* Accounting start of a request (6.5+), in the submitter's context: who issued it. */
SEC("tp_btf/block_io_start")
int BPF_PROG(sli_io_start, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct sli_req r = {.ts = bpf_ktime_get_ns(), .cgid = bpf_get_current_cgroup_id()};

	bpf_map_update_elem(&sli_inflight, &key, &r, BPF_ANY);
	return 0;
}

/* The request's final completion (a partial one leaves bytes to go): latency from its allocation
 * (start_time_ns, the block layer's own stamp, as ioprobe measures it; else our accounting stamp). */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(sli_io_done, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), start;
	struct sli_req *r;
	struct sli_stats *s;

	if (nr_bytes < rq->__data_len)
		return 0;
	r = bpf_map_lookup_elem(&sli_inflight, &key);
	if (!r)
		return 0;
	start = rq->start_time_ns;
	if (!start || start > now)
		start = r->ts;
	r->ts = start;
	if (r->ts >= sli_epoch_ns && now > r->ts) {
		__u64 d = now - r->ts, cgid = r->cgid;
		__u32 slot = gg_log2_slot(d);
		struct sli_lat *l;

		s = gg_map_elem0(&sli_node);
		if (s)
			lat_add(&s->io, d, slot);
		l = bpf_map_lookup_elem(&sli_io_cgrp, &cgid);
		if (!l) {
			struct sli_lat zero = {};

			bpf_map_update_elem(&sli_io_cgrp, &cgid, &zero, BPF_NOEXIST);
			l = bpf_map_lookup_elem(&sli_io_cgrp, &cgid);
		}
		if (l)
			lat_add(l, d, slot);
	}
	bpf_map_delete_elem(&sli_inflight, &key);
	return 0;
}
