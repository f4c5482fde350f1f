// SPDX-License-Identifier: GPL-2.0
/* tprofiling.bpf.c - thread-level timeline events: the syscalls gala-gopher's tprofiling watches (a
 * tracepoint pair per syscall, or raw sys_enter/sys_exit with a table: syscall_hooks), on-CPU runs (tp_btf
 * sched_switch), pthread lock waits and allocator calls (uprobes attached per process in scope). Scope is
 * decided first, from the current task, before any map is touched; a start is kept in task storage and
 * the finished event, when it lasted min_exec_dur or more, goes to a ring buffer. */
#include "vmlinux.h"

#include "gg_common.bpf.h"

#include <bpf/usdt.bpf.h>

#include "tprofiling.h"

char LICENSE[] SEC("license") = "GPL";

/* Live knobs, written by user space through the mmap'ed .bss. */
volatile __u64 min_exec_ns = 1000; /* events shorter than this are counted, not sent */
volatile __u32 self_tgid;	   /* the probe itself is never traced */
volatile __u32 want_stack = 1;	   /* user stacks with syscall and lock events */
volatile __u32 scope_ncgrp;	   /* cgroups in the scope's set: 0 skips the cgroup walk */

/* A syscall (or lock call) in flight on a thread. */
struct tp_flight {
	__u64 start_ns;
	__s64 arg;
	__u32 name;
	__u32 type;
};

/* Per thread: the syscall in flight, the pthread call in flight (a lock call makes futex syscalls of
 * its own), when the thread went on a CPU (0: not tracked) and the scheduler's count of its run time
 * when it last left one (0: not yet). */
struct tp_task {
	struct tp_flight sys;
	struct tp_flight lock;
	struct tp_flight gc;
	__u64 oncpu_ns;
	__u64 rt_out_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_task);
} tp_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TP_RB_BYTES);
} tp_events SEC(".maps");

GG_MAP(tp_stats, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, TP_ST_NR, 0);

/* The current thread is in scope (and is not the probe). Cheapest first: a scope of processes only (the
 * usual proc_id/proc_name snoopers) costs one array and one hash lookup; the cgroup walk (container and
 * pod scopes) is made only when the scope has cgroups. */
static __always_inline int in_scope(void)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);

	if (tgid == self_tgid)
		return 0;
	if (!gg_scope_filtering() || gg_scope_has_tgid(tgid))
		return 1;
	if (!scope_ncgrp)
		return 0;
	return gg_scope_current_cgroup();
}

/* A task (not necessarily current) is in scope: its tgid, or its cgroup v2 or an ancestor. */
static __always_inline int task_in_scope(struct task_struct *t)
{
	if (t->tgid == self_tgid || t->pid == 0)
		return 0;
	if (!gg_scope_filtering())
		return 1;
	if (gg_scope_has_tgid(t->tgid))
		return 1;
	if (!scope_ncgrp)
		return 0;
	return gg_scope_cgroup_in(BPF_CORE_READ(t, cgroups, dfl_cgrp));
}

/* The names of the dentries of descriptor fd of t, from the file up to its mount's root. */
static __always_inline void file_path(struct tp_event *e, struct task_struct *t, __s64 fd)
{
	struct file **fds = BPF_CORE_READ(t, files, fdt, fd);
	unsigned int max = BPF_CORE_READ(t, files, fdt, max_fds);
	struct file *f = NULL;
	struct dentry *d;

	if (!fds || fd >= max)
		return;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd & 0xffffff]);
	if (!f)
		return;
	d = BPF_CORE_READ(f, f_path.dentry);
	for (int i = 0; i < TP_PATH_DEPTH; i++) {
		struct dentry *parent;

		if (!d || bpf_probe_read_kernel_str(e->path[i], TP_PATH_NAME, BPF_CORE_READ(d, d_name.name)) < 0) {
			e->path[i][0] = '\0';
			return;
		}
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d) /* the root of its file system: "/" */
			return;
		d = parent;
		if (i + 1 < TP_PATH_DEPTH)
			e->path[i + 1][0] = '\0';
	}
}

/* Send one finished event of the current thread (or of t, on-CPU). */
static __always_inline void send(void *ctx, __u64 start, __u64 end, __u32 name, __u32 type, __s64 arg, __s64 ret,
				 struct task_struct *t, int stack)
{
	struct tp_event *e;

	if (end - start < min_exec_ns) {
		gg_counter_add(&tp_stats, TP_ST_SHORT, 1);
		return;
	}
	e = bpf_ringbuf_reserve(&tp_events, sizeof(*e), 0);
	if (!e) {
		gg_counter_add(&tp_stats, TP_ST_DROPPED, 1);
		return;
	}
	e->start_ns = start;
	e->end_ns = end;
	e->arg = arg;
	e->ret = ret;
	e->name = (__u16)name;
	e->type = (__u16)type;
	e->pid = t->pid;
	e->tgid = t->tgid;
	__builtin_memcpy(e->comm, t->comm, sizeof(e->comm));
	e->nstack = 0;
	e->path[0][0] = '\0';
	if (type == TP_TYPE_FILE && arg >= 0)
		file_path(e, t, arg);
	if (stack && want_stack) {
		long n = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);

		e->nstack = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
	}
	/* no wake-up per event: user space drains every 200 ms, or at once when a storm fills a quarter */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&tp_events, BPF_RB_AVAIL_DATA) >= TP_RB_WAKE ? BPF_RB_FORCE_WAKEUP
											     : BPF_RB_NO_WAKEUP);
	gg_counter_add(&tp_stats, TP_ST_EVENTS, 1);
}

/* The current thread's storage, created, when the thread is in scope; NULL otherwise or when none is
 * left (counted). */
static __always_inline struct tp_task *task_begin(void)
{
	struct tp_task *s;

	if (!in_scope())
		return NULL;
	s = bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s)
		gg_counter_add(&tp_stats, TP_ST_INFLIGHT_FULL, 1);
	return s;
}

/* The current thread's storage, if it has one (it was in scope when a call began). */
static __always_inline struct tp_task *task_get(struct task_struct *t)
{
	return bpf_task_storage_get(&tp_tasks, t, 0, 0);
}

/* The call in flight f of thread t ends: its event is sent, f is free again. */
static __always_inline void flight_end(void *ctx, struct task_struct *t, struct tp_flight *f, __u32 name, __u32 type,
				       __s64 ret)
{
	__u64 start = f->start_ns;

	f->start_ns = 0;
	send(ctx, start, bpf_ktime_get_ns(), name, type, f->arg, ret, t, 1);
}

/* ---- syscalls ------------------------------------------------------------------------------------ */

static __always_inline int sys_enter(__u32 name, __u32 type, __s64 arg)
{
	struct tp_task *s = task_begin();

	if (!s)
		return 0;
	s->sys.start_ns = bpf_ktime_get_ns();
	s->sys.arg = arg;
	s->sys.name = name;
	s->sys.type = type;
	return 0;
}

static __always_inline int sys_exit(void *ctx, __u32 name, __s64 ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_task *s = task_get(t);

	/* out of scope at the start: no storage (or none in flight) */
	if (!s || !s->sys.start_ns || s->sys.name != name)
		return 0;
	flight_end(ctx, t, &s->sys, name, s->sys.type, ret);
	return 0;
}

/*
 * The syscalls, two ways (parameter syscall_hooks, user space loads one of them):
 *
 * "tracepoints" (default): one sys_enter_<name>/sys_exit_<name> tracepoint pair per syscall (58 perf
 * tracepoint links), so unwatched syscalls run no program. Each such link waits for an RCU grace period
 * as it is closed, under the kernel's event_mutex, one after the other: stopping the probe takes 2-4 s.
 *
 * "raw": one tp_btf program on the raw sys_enter and one on sys_exit, looking the syscall number up in a
 * table user space fills (name, type, argument, sub-probe bit) and returning at once for the others. Two
 * raw tracepoint links close in milliseconds, and a watched call of a process outside the scope is
 * cheaper (no perf trace buffer), but the programs run on every system call of the host
 * (bench/RESULTS.md "tprofiling: syscall hooks").
 */
/* "tracepoints": one syscall: its enter program records the start (and the argument `argi`, -1: none), its exit
 * program sends the event. */
#define TP_SYSCALL(sc, nm, ty, argi)                                                    \
	SEC("tp/syscalls/sys_enter_" #sc)                                               \
	int tp_enter_##sc(struct trace_event_raw_sys_enter *ctx)                        \
	{                                                                               \
		return sys_enter(nm, ty, (argi) >= 0 ? (__s64)ctx->args[(argi)&7] : 0); \
	}                                                                               \
	SEC("tp/syscalls/sys_exit_" #sc)                                                \
	int tp_exit_##sc(struct trace_event_raw_sys_exit *ctx)                          \
	{                                                                               \
		return sys_exit(ctx, nm, ctx->ret);                                     \
	}

TP_SYSCALLS(TP_SYSCALL)

/* "raw" */
volatile __u32 sc_on; /* TP_SP_* bits of the syscall sub-probes on (live, written by user space) */

GG_MAP(tp_sc_tab, BPF_MAP_TYPE_ARRAY, __u32, struct tp_sc, TP_SC_MAX, 0);

#define TS_COMPAT_ 0x0002 /* x86 thread_info.status: a 32-bit syscall, whose numbers are another table's */

static __always_inline struct tp_sc *sc_of(long id)
{
	struct task_struct *t;
	struct tp_sc *e;
	__u32 k = (__u32)id;

	if (id < 0 || id >= TP_SC_MAX)
		return NULL;
	e = bpf_map_lookup_elem(&tp_sc_tab, &k);
	if (!e || !(e->bit & sc_on))
		return NULL;
	t = bpf_get_current_task_btf();
	if (t->thread_info.status & TS_COMPAT_)
		return NULL;
	return e;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(tp_sys_enter, struct pt_regs *regs, long id)
{
	struct tp_sc *e = sc_of(id);
	__s64 arg = 0;

	if (!e)
		return 0;
	if (e->argi == 0)
		arg = (__s64)regs->di;
	else if (e->argi == 1)
		arg = (__s64)regs->si;
	return sys_enter(e->name, e->type, arg);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(tp_sys_exit, struct pt_regs *regs, long ret)
{
	struct tp_sc *e = sc_of((long)regs->orig_ax);

	if (!e)
		return 0;
	return sys_exit(ctx, e->name, ret);
}

/* ---- on-CPU runs --------------------------------------------------------------------------------- */

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	struct tp_task *s;

	/* prev leaves the CPU: its run ends (tracked only when it was in scope as it came on) */
	s = bpf_task_storage_get(&tp_tasks, prev, 0, 0);
	if (s) {
		__u64 start = s->oncpu_ns, rt = prev->se.sum_exec_runtime;

		/* Not every switch reaches the tracepoint (seen: those from the threads of a VM's guest agent),
		 * so a run can end that was never seen to begin. Between two switch-outs a thread runs once:
		 * that run began when the scheduler's count of its run time says (steal time left out). A
		 * thread out of scope as it came on has no start either: its run is not one to report. */
		if (!start && s->rt_out_ns && rt > s->rt_out_ns && rt - s->rt_out_ns < now && task_in_scope(prev)) {
			start = now - (rt - s->rt_out_ns);
			gg_counter_add(&tp_stats, TP_ST_UNSEEN_IN, 1);
		}
		s->oncpu_ns = 0;
		s->rt_out_ns = rt;
		if (start)
			send(ctx, start, now, TP_ONCPU, TP_TYPE_ONCPU, 0, 0, prev, 0);
	}
	if (!task_in_scope(next))
		return 0;
	s = bpf_task_storage_get(&tp_tasks, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (s) {
		s->oncpu_ns = now;
		s->rt_out_ns = next->se.sum_exec_runtime;
	} else {
		gg_counter_add(&tp_stats, TP_ST_INFLIGHT_FULL, 1);
	}
	return 0;
}

/* ---- pthread_sync and mem_glibc: calls into libc (uprobes attached per process; the cookie is the name) */

SEC("uprobe")
int tp_call_enter(struct pt_regs *ctx)
{
	__u32 name = (__u32)bpf_get_attach_cookie(ctx);
	struct tp_task *s = task_begin();

	if (!s)
		return 0;
	s->lock.start_ns = bpf_ktime_get_ns();
	s->lock.name = name;
	if (name >= TP_MALLOC) {
		s->lock.type = TP_TYPE_MEM;
		/* the bytes asked for: malloc(n), calloc(n, size), realloc(p, n); free(p) none */
		if (name == TP_CALLOC)
			s->lock.arg = (__s64)(PT_REGS_PARM1(ctx) * PT_REGS_PARM2(ctx));
		else if (name == TP_REALLOC)
			s->lock.arg = (__s64)PT_REGS_PARM2(ctx);
		else if (name == TP_MALLOC)
			s->lock.arg = (__s64)PT_REGS_PARM1(ctx);
		else
			s->lock.arg = 0;
	} else {
		s->lock.type = TP_TYPE_PTHREAD;
		s->lock.arg = (__s64)PT_REGS_PARM1(ctx);
	}
	return 0;
}

SEC("uretprobe")
int tp_call_exit(struct pt_regs *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_task *s = task_get(t);

	if (!s || !s->lock.start_ns || s->lock.name != (__u32)bpf_get_attach_cookie(ctx))
		return 0;
	flight_end(ctx, t, &s->lock, s->lock.name, s->lock.type, (__s64)PT_REGS_RC(ctx));
	return 0;
}

/* ---- python_gc: CPython's USDT probes python:gc__start(generation) and python:gc__done(collected) ---- */

SEC("usdt")
int BPF_USDT(tp_gc_start, int generation)
{
	struct tp_task *s = task_begin();

	if (!s)
		return 0;
	s->gc.start_ns = bpf_ktime_get_ns();
	s->gc.arg = generation;
	return 0;
}

SEC("usdt")
int BPF_USDT(tp_gc_done, long collected)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_task *s = task_get(t);

	if (!s || !s->gc.start_ns)
		return 0;
	flight_end(ctx, t, &s->gc, TP_PYTHON_GC, TP_TYPE_PYGC, collected);
	return 0;
}
