// SPDX-License-Identifier: GPL-2.0
/* taskprobe.bpf.c - taskprobe's kernel half: per-process syscall, file-system, block IO, scheduler,
 * page-cache and getaddrinfo accounting on tracepoints (tp_btf) and a libc uprobe, for the processes
 * in the monitoring scope only. */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "taskprobe.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING	      0
#define PF_KTHREAD	      0x00200000
#define MAX_ERRNO	      4095
#define REQ_OP_MASK	      0xff
#define EXT4_SUPER_MAGIC      0xEF53
#define TMPFS_MAGIC	      0x01021994
#define OVERLAYFS_SUPER_MAGIC 0x794c7630
#define S_IFMT		      00170000
#define S_IFREG		      0100000

/* Set by user space (the skeleton's .bss). */
__u32 enabled;	 /* enum tp_sub bits */
__u32 filter_on; /* 0: every process is in scope (no map lookups at all) */
/* Two bits per tgid: 00 not known yet, 01 in scope, 10 out of scope. Cleared by user space when the
 * scope changes; a cached verdict turns the scope test into one load on the hot paths. */
__u64 verdict[TP_VERDICT_PIDS / 32];
__u64 dropped_procs;	/* processes not tracked because tp_procs was full */
__u64 offcpu_unseen_in; /* off-CPU times closed at a switch-out: their switch-in was never seen */
__u32 max_epoch;	/* report period number, for tp_proc.max_ns */
/* Per CPU (the id modulo TP_SEEN_CPUS): the in-scope thread last seen switched in there, until it left
 * (0: none). A thread that leaves a CPU it was seen to come on has no off-CPU time open. */
#define TP_SEEN_CPUS 1024
__u32 seen_in[TP_SEEN_CPUS];

/* Processes (and below: threads, DNS lookups in flight) come and go far less often than they are
 * updated: entries are allocated as they come (BPF_F_NO_PREALLOC), not all 4096 up front (3 MiB). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TP_PROCS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct tp_proc);
} tp_procs SEC(".maps");

/* A zeroed tp_proc to create entries from (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_proc);
} tp_scratch SEC(".maps");

/* The syscall a thread is in (task-local: no hashing, freed with the task). */
struct tp_task {
	__u64 sc_ts;
	__u32 sc_nr;
	__u32 sc_fsk; /* fs kind + 1 of the fd argument, 0 when not a regular file or not measured */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_task);
} tp_task_store SEC(".maps");

/* When a blocked in-scope thread went off CPU (0 while it runs), by thread id until it exits (a hash:
 * task storage is not for the scheduler path), and the scheduler's count of its run time then. */
struct tp_off {
	__u64 ts;
	__u64 rt;
	__u32 iowait;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct tp_off);
} tp_offcpu SEC(".maps");

/* A block request inserted or issued by an in-scope process. */
struct tp_rq {
	__u64 ts;
	__u32 tgid;
	__u32 bytes;
	__u32 write;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct tp_rq);
} tp_rqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, __u64);
} tp_dns_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} tp_reclaim_start SEC(".maps");

/* ---- scope ---------------------------------------------------------------------------------- */

/* Is the current task's process in scope? Cached per tgid in the verdict bitmap. */
static __always_inline int in_scope(__u32 tgid)
{
	if (!filter_on)
		return 1;
	return gg_scope_current_cached(verdict, TP_VERDICT_PIDS, tgid);
}

/* Is tgid's cached verdict "in scope" (or is there no filter)? Unknown counts as out: for another
 * task than the current one, whose verdict cannot be computed here. */
static __always_inline int verdict_cached_in(__u32 tgid)
{
	__u32 w;

	if (!filter_on)
		return 1;
	if (tgid >= TP_VERDICT_PIDS)
		return 1; /* not cached: let the caller look */
	w = tgid >> 5;
	barrier_var(w);
	w &= TP_VERDICT_PIDS / 32 - 1;
	return ((verdict[w] >> ((tgid & 31) * 2)) & 3) == 1;
}

/* ---- per-process entries -------------------------------------------------------------------- */

static __always_inline struct tp_proc *proc_get(__u32 tgid)
{
	struct tp_proc *p = bpf_map_lookup_elem(&tp_procs, &tgid);
	struct task_struct *t;
	long err;

	if (p)
		return p;
	p = gg_map_elem0(&tp_scratch);
	if (!p)
		return NULL;
	t = bpf_get_current_task_btf();
	bpf_probe_read_kernel_str(p->comm, sizeof(p->comm), t->group_leader->comm);
	err = bpf_map_update_elem(&tp_procs, &tgid, p, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: another CPU made it */) {
		__sync_fetch_and_add(&dropped_procs, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&tp_procs, &tgid);
}

/* ---- syscalls ------------------------------------------------------------------------------- */

static __always_inline __u32 sc_class(__u32 nr)
{
#if defined(__TARGET_ARCH_x86)
	switch (nr) {
	case 0:
	case 17:
	case 19:
	case 295:
	case 327:
		return TP_SC_READ;
	case 1:
	case 18:
	case 20:
	case 296:
	case 328:
		return TP_SC_WRITE;
	case 2:
	case 85:
	case 257:
	case 437:
		return TP_SC_OPEN;
	case 74:
	case 75:
		return TP_SC_FSYNC;
	case 165:
		return TP_SC_MOUNT;
	case 166:
		return TP_SC_UMOUNT;
	case 44:
	case 46:
	case 307:
		return TP_SC_SENDMSG;
	case 45:
	case 47:
	case 299:
		return TP_SC_RECVMSG;
	case 24:
		return TP_SC_SCHED_YIELD;
	case 202:
		return TP_SC_FUTEX;
	case 232:
		return TP_SC_EPOLL_WAIT;
	case 281:
	case 441:
		return TP_SC_EPOLL_PWAIT;
	case 57:
		return TP_SC_FORK;
	case 58:
		return TP_SC_VFORK;
	case 56:
	case 435:
		return TP_SC_CLONE;
	}
#elif defined(__TARGET_ARCH_arm64)
	switch (nr) {
	case 63:
	case 67:
	case 65:
	case 69:
	case 286:
		return TP_SC_READ;
	case 64:
	case 68:
	case 66:
	case 70:
	case 287:
		return TP_SC_WRITE;
	case 56:
	case 437:
		return TP_SC_OPEN;
	case 82:
	case 83:
		return TP_SC_FSYNC;
	case 40:
		return TP_SC_MOUNT;
	case 39:
		return TP_SC_UMOUNT;
	case 206:
	case 211:
	case 269:
		return TP_SC_SENDMSG;
	case 207:
	case 212:
	case 243:
		return TP_SC_RECVMSG;
	case 124:
		return TP_SC_SCHED_YIELD;
	case 98:
		return TP_SC_FUTEX;
	case 22:
	case 441:
		return TP_SC_EPOLL_PWAIT;
	case 220:
	case 435:
		return TP_SC_CLONE;
	}
#endif
	return TP_SC_OTHER;
}

static __always_inline int fs_op_of(__u32 cls)
{
	switch (cls) {
	case TP_SC_READ:
		return TP_FS_READ;
	case TP_SC_WRITE:
		return TP_FS_WRITE;
	case TP_SC_OPEN:
		return TP_FS_OPEN;
	case TP_SC_FSYNC:
		return TP_FS_FSYNC;
	}
	return -1;
}

/* fs kind + 1 of the current task's descriptor fd when it is a regular file, else 0. The task's BTF
 * pointers are read directly (cheap, fault-safe loads), the rest through helpers. */
static __always_inline __u32 fd_fs_kind(long fd)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct fdtable *fdt;
	struct file *f = NULL;
	struct inode *ino;
	unsigned long magic;

	if (fd < 0)
		return 0;
	fdt = t->files->fdt;
	if (!fdt || (unsigned long)fd >= fdt->max_fds)
		return 0;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]) || !f)
		return 0;
	/* f came through a helper: a plain value to the verifier, read on with CO-RE helpers */
	ino = BPF_CORE_READ(f, f_inode);
	if (!ino || (BPF_CORE_READ(ino, i_mode) & S_IFMT) != S_IFREG)
		return 0;
	magic = BPF_CORE_READ(ino, i_sb, s_magic);
	if (magic == EXT4_SUPER_MAGIC)
		return TP_FSK_EXT4 + 1;
	if (magic == OVERLAYFS_SUPER_MAGIC)
		return TP_FSK_OVERLAY + 1;
	if (magic == TMPFS_MAGIC)
		return TP_FSK_TMPFS + 1;
	return TP_FSK_ANY + 1;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(tp_sys_enter, struct pt_regs *regs, long id)
{
	__u32 en = enabled, cls = TP_SC_OTHER;
	struct tp_task *ts;

	if (!(en & (TP_SUB_SYSCALL | TP_SUB_FS)))
		return 0;
	if (en & TP_SUB_FS) {
		cls = sc_class((__u32)id);
		/* proc_fs alone: other syscalls end here, before any helper call (bench/RESULTS_task.md) */
		if (!(en & TP_SUB_SYSCALL) && fs_op_of(cls) < 0)
			return 0;
	}
	if (!in_scope(gg_current_tgid()))
		return 0;
	ts = bpf_task_storage_get(&tp_task_store, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		return 0;
	ts->sc_nr = (__u32)id;
	ts->sc_fsk = 0;
	if (cls == TP_SC_READ || cls == TP_SC_WRITE || cls == TP_SC_FSYNC)
		ts->sc_fsk = fd_fs_kind((long)(int)PT_REGS_PARM1_CORE_SYSCALL(regs));
	ts->sc_ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline void fs_add(struct tp_proc *p, int op, __u32 fsk1, __u64 lat)
{
	__u32 o, k;

	if (op < 0 || op >= TP_FS_OP__COUNT || !fsk1 || fsk1 > TP_FSK__COUNT)
		return;
	/* Masks the verifier can follow (both counts are 4). */
	o = (__u32)op & (TP_FS_OP__COUNT - 1);
	k = (fsk1 - 1) & (TP_FSK__COUNT - 1);
	__sync_fetch_and_add(&p->fs[o][TP_FSK_ANY].count, 1);
	__sync_fetch_and_add(&p->fs[o][TP_FSK_ANY].ns, lat);
	if (k != TP_FSK_ANY) {
		__sync_fetch_and_add(&p->fs[o][k].count, 1);
		__sync_fetch_and_add(&p->fs[o][k].ns, lat);
	}
}

SEC("tp_btf/sys_exit")
int BPF_PROG(tp_sys_exit, struct pt_regs *regs, long ret)
{
	__u32 tgid = gg_current_tgid();
	struct tp_proc *p;
	struct tp_task *ts;
	__u64 now, lat;
	__u32 nr, cls, fsk;

	if (!(enabled & (TP_SUB_SYSCALL | TP_SUB_FS)))
		return 0;
	if (!in_scope(tgid))
		return 0;
	ts = bpf_task_storage_get(&tp_task_store, bpf_get_current_task_btf(), 0, 0);
	if (!ts || !ts->sc_ts)
		return 0;
	now = bpf_ktime_get_ns();
	lat = now - ts->sc_ts;
	nr = ts->sc_nr;
	fsk = ts->sc_fsk;
	ts->sc_ts = 0;
	p = proc_get(tgid);
	if (!p)
		return 0;
	cls = sc_class(nr);
	if (enabled & TP_SUB_SYSCALL) {
		__u32 epoch = max_epoch;

		cls &= 15; /* TP_SC__COUNT is 16: a bound the verifier sees */
		__sync_fetch_and_add(&p->sc[cls].count, 1);
		__sync_fetch_and_add(&p->sc[cls].ns, lat);
		if (ret < 0 && ret >= -MAX_ERRNO)
			__sync_fetch_and_add(&p->syscall_failed, 1);
		/* Racy between threads of one process: the max may miss a concurrent one, never corrupts. */
		if (p->max_epoch != epoch || lat > p->max_ns) {
			p->max_ns = lat;
			p->max_ret = ret;
			p->max_nr = nr;
			p->max_epoch = epoch;
		}
	}
	if (enabled & TP_SUB_FS) {
		/* open's descriptor is only known now; failed calls on files are still file-system calls */
		if (cls == TP_SC_OPEN)
			fsk = ret >= 0 ? fd_fs_kind(ret) : 0;
		fs_add(p, fs_op_of(cls), fsk, lat);
	}
	return 0;
}

/* ---- scheduler ------------------------------------------------------------------------------ */

/* Adds a closed off-CPU time of thread off (of process p) and marks the thread running. */
static __always_inline void offcpu_add(struct tp_proc *p, struct tp_off *off, __u64 end)
{
	__u64 d = end > off->ts ? end - off->ts : 0;

	off->ts = 0;
	if (!p)
		return;
	__sync_fetch_and_add(&p->offcpu_ns, d);
	if (off->iowait)
		__sync_fetch_and_add(&p->iowait_ns, d);
}

/*
 * An in-scope thread (of process p) leaves the CPU: a blocked one starts an off-CPU time. Not every
 * switch reaches the tracepoint (seen: every switch out of a VM's idle task on one CPU, so a thread
 * waking there comes on without one): an off-CPU time still open here is one whose switch-in was never
 * seen. Between two switch-outs a thread runs once, so it came on when the scheduler's count of its run
 * time says; its off-CPU time ends there. Returns the clock read (0: none).
 */
static __always_inline __u64 offcpu_out(struct tp_proc *p, struct task_struct *prev, __u32 pid, unsigned int state)
{
	struct tp_off *off = bpf_map_lookup_elem(&tp_offcpu, &pid);
	__u64 rt = prev->se.sum_exec_runtime, now = 0;

	if (off && off->ts) {
		__u64 ran = rt - off->rt;

		now = bpf_ktime_get_ns();
		__sync_fetch_and_add(&offcpu_unseen_in, 1);
		offcpu_add(p, off, rt >= off->rt && now > off->ts && ran < now - off->ts ? now - ran : off->ts);
	}
	if (state == TASK_RUNNING)
		return now; /* preempted: still runnable, not off CPU */
	if (!now)
		now = bpf_ktime_get_ns();
	if (off) {
		off->iowait = BPF_CORE_READ_BITFIELD(prev, in_iowait); /* prev is a BTF pointer: a plain load */
		off->rt = rt;
		off->ts = now;
	} else {
		struct tp_off v = {.ts = now, .rt = rt, .iowait = BPF_CORE_READ_BITFIELD(prev, in_iowait)};

		bpf_map_update_elem(&tp_offcpu, &pid, &v, BPF_ANY);
	}
	return now;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	__u32 prev_pid, next_pid, tgid, cpu;
	struct tp_off *off;
	struct tp_proc *p;
	__u64 now = 0;

	/*
	 * Every context switch of the host comes here: the common case (nothing in scope on either side)
	 * must end after two loads from the verdict bitmap, without a clock read or a hash lookup.
	 */
	if (!(enabled & TP_SUB_BASE))
		return 0;
	prev_pid = prev->pid;
	tgid = prev->tgid;
	/*
	 * A thread's entry stays in tp_offcpu until it exits (ts 0 while it runs): after the first sleep,
	 * going off and back on CPU is a lookup and two stores, not a hash insert and delete under the
	 * bucket lock. A preempted thread seen coming on this CPU (seen_in) has no off-CPU time open: no
	 * lookup. proc_get: proc_cpu has a record for every process in scope that ran, not only for the
	 * ones that made an event of another sub-probe.
	 */
	if (prev_pid && in_scope(tgid) && (p = proc_get(tgid))) {
		int seen;

		cpu = bpf_get_smp_processor_id() & (TP_SEEN_CPUS - 1);
		seen = seen_in[cpu] == prev_pid;
		seen_in[cpu] = 0;
		if (!seen || prev_state != TASK_RUNNING)
			now = offcpu_out(p, prev, prev_pid, prev_state);
	}
	/* next has an entry only if it went off CPU in scope, which cached its verdict as "in" (the
	 * verdict of next cannot be computed here: the current task is prev). */
	if (!verdict_cached_in(next->tgid))
		return 0;
	next_pid = next->pid;
	seen_in[bpf_get_smp_processor_id() & (TP_SEEN_CPUS - 1)] = next_pid;
	off = bpf_map_lookup_elem(&tp_offcpu, &next_pid);
	if (off && off->ts) {
		__u32 ntgid = next->tgid;

		if (!now)
			now = bpf_ktime_get_ns();
		offcpu_add(bpf_map_lookup_elem(&tp_procs, &ntgid), off, now);
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(tp_sched_fork, struct task_struct *parent, struct task_struct *child)
{
	struct tp_proc *p;

	if (!(enabled & TP_SUB_BASE))
		return 0;
	if (child->tgid == parent->tgid || !in_scope(parent->tgid))
		return 0;
	p = proc_get(parent->tgid);
	if (p)
		__sync_fetch_and_add(&p->forks, 1);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(tp_sched_exec, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	struct tp_proc *p = bpf_map_lookup_elem(&tp_procs, &tgid);

	if (p)
		bpf_probe_read_kernel_str(p->comm, sizeof(p->comm), task->comm);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(tp_sched_exit, struct task_struct *task)
{
	__u32 pid = task->pid, tgid = task->tgid;

	bpf_map_delete_elem(&tp_offcpu, &pid);
	bpf_map_delete_elem(&tp_reclaim_start, &pid);
	/* The tgid may be reused by an unrelated process: forget its verdict with its leader. */
	if (pid == tgid && tgid < TP_VERDICT_PIDS) {
		__u32 w = tgid >> 5;

		barrier_var(w);
		w &= TP_VERDICT_PIDS / 32 - 1;
		__sync_fetch_and_and(&verdict[w], ~(3ULL << ((tgid & 31) * 2)));
	}
	return 0;
}

/* ---- block layer ---------------------------------------------------------------------------- */

static __always_inline void rq_start(struct request *rq)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 key = (__u64)rq;
	struct tp_rq v = {};
	__u32 op;

	/* Writeback threads submit for everybody: nothing to attribute. */
	if (t->flags & PF_KTHREAD)
		return;
	v.tgid = gg_current_tgid();
	if (!in_scope(v.tgid))
		return;
	v.ts = bpf_ktime_get_ns();
	v.bytes = BPF_CORE_READ(rq, __data_len);
	op = BPF_CORE_READ(rq, cmd_flags) & REQ_OP_MASK;
	if (op > 1) /* flush, discard, ...: no data */
		return;
	v.write = op;
	bpf_map_update_elem(&tp_rqs, &key, &v, BPF_ANY);
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(tp_block_rq_insert, struct request *rq)
{
	if (enabled & TP_SUB_IO)
		rq_start(rq);
	return 0;
}

/* Requests issued directly (no IO scheduler queue) skip block_rq_insert. */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_block_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq;

	if ((enabled & TP_SUB_IO) && !bpf_map_lookup_elem(&tp_rqs, &key))
		rq_start(rq);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq;
	struct tp_rq *s = bpf_map_lookup_elem(&tp_rqs, &key);
	struct tp_proc *p;
	__u32 w;

	if (!s)
		return 0;
	p = bpf_map_lookup_elem(&tp_procs, &s->tgid);
	if (p) {
		w = s->write ? 1 : 0;
		if (s->bytes < 4096)
			__sync_fetch_and_add(&p->io_less4k[w], 1);
		else
			__sync_fetch_and_add(&p->io_more4k[w], 1);
		__sync_fetch_and_add(&p->io_bytes[w], s->bytes);
		__sync_fetch_and_add(&p->io_ns, bpf_ktime_get_ns() - s->ts);
		__sync_fetch_and_add(&p->io_done, 1);
		if (error)
			__sync_fetch_and_add(&p->io_err, 1);
	}
	bpf_map_delete_elem(&tp_rqs, &key);
	return 0;
}

/* ---- page cache and reclaim ----------------------------------------------------------------- */

static __always_inline struct tp_proc *pc_proc(void)
{
	__u32 tgid = gg_current_tgid();

	if (!(enabled & TP_SUB_PAGECACHE) || !in_scope(tgid))
		return NULL;
	return proc_get(tgid);
}

/* Counts one page cache event of the current process in its counter at byte offset off of struct
 * tp_proc; the body of the three programs below. */
static __always_inline int pc_count(unsigned long off)
{
	struct tp_proc *p = pc_proc();

	if (p)
		__sync_fetch_and_add((unsigned long long *)((char *)p + off), 1);
	return 0;
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(tp_pc_add, struct folio *folio)
{
	return pc_count(offsetof(struct tp_proc, pc_load));
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(tp_pc_dirty, struct folio *folio)
{
	return pc_count(offsetof(struct tp_proc, pc_dirty));
}

SEC("tp_btf/block_dirty_buffer")
int BPF_PROG(tp_pc_buffer_dirty, struct buffer_head *bh)
{
	return pc_count(offsetof(struct tp_proc, pc_buffer_dirty));
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(tp_reclaim_begin)
{
	__u32 pid = (__u32)bpf_get_current_pid_tgid();
	__u64 now;

	if (!(enabled & TP_SUB_PAGECACHE) || !in_scope(gg_current_tgid()))
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&tp_reclaim_start, &pid, &now, BPF_ANY);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(tp_reclaim_end)
{
	__u32 pid = (__u32)bpf_get_current_pid_tgid();
	__u64 *start = bpf_map_lookup_elem(&tp_reclaim_start, &pid);
	__u64 d;
	struct tp_proc *p;

	if (!start)
		return 0;
	d = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&tp_reclaim_start, &pid);
	p = proc_get(gg_current_tgid());
	if (p)
		__sync_fetch_and_add(&p->reclaim_ns, d);
	return 0;
}

/* ---- getaddrinfo (uprobe on libc; BPF_KPROBE/BPF_KRETPROBE are the uprobe macros of libbpf 1.1) ------- */

SEC("uprobe")
int BPF_KPROBE(tp_gai_enter)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 now;

	if (!(enabled & TP_SUB_DNS) || !in_scope((__u32)(id >> 32)))
		return 0;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&tp_dns_start, &id, &now, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(tp_gai_exit, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 *start = bpf_map_lookup_elem(&tp_dns_start, &id);
	struct tp_proc *p;
	__u64 d;

	if (!start)
		return 0;
	d = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&tp_dns_start, &id);
	p = proc_get((__u32)(id >> 32));
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->dns_calls, 1);
	__sync_fetch_and_add(&p->dns_ns, d);
	if (ret != 0)
		__sync_fetch_and_add(&p->dns_failed, 1);
	return 0;
}
