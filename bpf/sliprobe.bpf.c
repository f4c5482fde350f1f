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

/* What a task is doing since ts (task storage). */
enum sli_task_state {
	ST_NONE = 0,
	ST_PREEMPTED, /* runnable, switched out while running */
	ST_WOKEN,     /* runnable, woken */
	ST_SLEEP,
	ST_IOWAIT,
	ST_BLOCK,
};

struct sli_task {
	__u64 ts;	  /* when the state began */
	__u64 on_ts;	  /* when the task last went on a CPU */
	__u64 utime;	  /* its utime then */
	__u64 reclaim_ts; /* in reclaim since (0: not) */
	__u64 compact_ts; /* in compaction since (0: not) */
	__u32 state;
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sli_stats);
} sli_node SEC(".maps");

/* Block latency per issuing cgroup v2 id: completions run in interrupt context, where the issuer's
 * cgroup storage cannot be reached; a per-CPU LRU hash keyed by the id instead (user space sums the
 * CPUs). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, SLI_CGROUPS_MAX);
	__type(key, __u64);
	__type(value, struct sli_lat);
} sli_io_cgrp SEC(".maps");

/* Block requests in flight: when they started and the issuing cgroup. */
struct sli_req {
	__u64 ts;
	__u64 cgid;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLI_INFLIGHT_MAX);
	__type(key, __u64);
	__type(value, struct sli_req);
} sli_inflight SEC(".maps");

/* A task's cgroup v2 stats (created on first use); NULL for the root cgroup. */
static __always_inline struct sli_stats *task_cg_stats(struct task_struct *t)
{
	struct cgroup *cg = t->cgroups->dfl_cgrp;

	/* The root cgroup is the node minus the containers: the node's stats say it; no lookup. */
	if (!cg || !cg->level)
		return NULL;
	return bpf_cgrp_storage_get(&sli_cgrp, cg, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline struct sli_stats *node_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sli_node, &zero);
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

/* One latency into the node's and the cgroup's stats (also into cpu_wait when also_wait). */
static __always_inline void cpu_add(struct sli_stats *cg, int kind, __u64 d, int also_wait)
{
	struct sli_stats *s = node_stats();
	__u32 slot = gg_log2_slot(d);

	if (kind < 0 || kind >= SLI_CPU_N)
		return;
	if (s) {
		lat_add(&s->cpu[kind], d, slot);
		if (also_wait)
			lat_add(&s->cpu[SLI_CPU_WAIT], d, slot);
	}
	if (cg) {
		lat_add_atomic(&cg->cpu[kind], d, slot);
		if (also_wait)
			lat_add_atomic(&cg->cpu[SLI_CPU_WAIT], d, slot);
	}
}

static __always_inline void mem_add(struct sli_stats *cg, int kind, __u64 d)
{
	struct sli_stats *s = node_stats();
	__u32 slot = gg_log2_slot(d);

	if (kind < 0 || kind >= SLI_MEM_N)
		return;
	if (s)
		lat_add(&s->mem[kind], d, slot);
	if (cg)
		lat_add_atomic(&cg->mem[kind], d, slot);
}

/* ---- CPU ------------------------------------------------------------------------------------------ */

SEC("tp_btf/sched_switch")
int BPF_PROG(sli_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns(), epoch = sli_epoch_ns;
	struct sli_task *t;

	/* prev: when and how it left the CPU; a long slice without user time is long system time. */
	if (prev->pid) {
		t = bpf_task_storage_get(&sli_task_store, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (t) {
			__u64 on = t->on_ts;

			if (on >= epoch && on && now - on >= SLI_LONGSYS_NS && prev->utime == t->utime)
				cpu_add(task_cg_stats(prev), SLI_CPU_LONGSYS, now - on, 0);
			t->ts = now;
			t->on_ts = 0;
			/* Preempted (or yielding): still on its run queue. TASK_IDLE (D + NOLOAD) is an idle
			 * kernel thread's sleep, not a block. Stopped, traced, dead: not tracked. */
			if (preempt || !prev_state)
				t->state = ST_PREEMPTED;
			else if ((prev_state & TASK_UNINTERRUPTIBLE) && !(prev_state & TASK_NOLOAD))
				t->state = BPF_CORE_READ_BITFIELD(prev, in_iowait) ? ST_IOWAIT : ST_BLOCK;
			else if (prev_state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE))
				t->state = ST_SLEEP;
			else
				t->state = ST_NONE;
		}
	}
	/* next: the end of its run-queue delay. */
	if (!next->pid)
		return 0;
	t = bpf_task_storage_get(&sli_task_store, next, 0, 0);
	if (!t)
		return 0;
	if ((t->state == ST_PREEMPTED || t->state == ST_WOKEN) && t->ts >= epoch && now > t->ts)
		cpu_add(task_cg_stats(next), SLI_CPU_RUNDELAY, now - t->ts, t->state == ST_PREEMPTED);
	t->state = ST_NONE;
	t->on_ts = now;
	t->utime = next->utime;
	return 0;
}

/* A sleeping task becomes runnable: its sleep ends and its run-queue delay begins. */
static __always_inline void woken(struct task_struct *p, __u64 flags)
{
	__u64 now = bpf_ktime_get_ns();
	struct sli_task *t = bpf_task_storage_get(&sli_task_store, p, 0, flags);
	int kind;

	if (!t)
		return;
	if (flags) { /* a new task: runnable from now */
		t->state = ST_WOKEN;
		t->ts = now;
		return;
	}
	if (t->state == ST_SLEEP)
		kind = SLI_CPU_SLEEP;
	else if (t->state == ST_IOWAIT)
		kind = SLI_CPU_IOWAIT;
	else if (t->state == ST_BLOCK)
		kind = SLI_CPU_BLOCK;
	else
		return; /* running or already runnable (a wakeup of a task still on its run queue) */
	if (t->ts >= sli_epoch_ns && now > t->ts)
		cpu_add(task_cg_stats(p), kind, now - t->ts, 0);
	t->state = ST_WOKEN;
	t->ts = now;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sli_wakeup, struct task_struct *p)
{
	woken(p, 0);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sli_wakeup_new, struct task_struct *p)
{
	woken(p, BPF_LOCAL_STORAGE_GET_F_CREATE);
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

SEC("tp_btf/block_io_done")
int BPF_PROG(sli_io_done, struct request *rq)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct sli_req *r = bpf_map_lookup_elem(&sli_inflight, &key);
	struct sli_stats *s;

	if (!r)
		return 0;
	if (r->ts >= sli_epoch_ns && now > r->ts) {
		__u64 d = now - r->ts, cgid = r->cgid;
		__u32 slot = gg_log2_slot(d);
		struct sli_lat *l;

		s = node_stats();
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
