// SPDX-License-Identifier: GPL-2.0
/* stackprobe.bpf.c - stack sampling for flame graphs: on-CPU (perf CPU clock), off-CPU (sched_switch,
 * weighted by blocked time), page faults (exceptions:page_fault_user) and, opt-in, allocator calls
 * (uprobes on malloc & co, weighted by bytes) and the bytes they still hold (mem_live, stackprobe_live.h;
 * with the anonymous mmap regions and brk growth, stackprobe_mmap.bpf.h), filtered by scope. */
#include "vmlinux.h"

#include "gg_common.bpf.h"

#include "stackprobe.h"

char LICENSE[] SEC("license") = "GPL";

#define EFAULT_ 14

/* Live knobs, written by user space through the mmap'ed .bss. */
volatile __u32 gen;		       /* bit 0 selects the maps samples go to; user space drains the other pair */
volatile __u64 min_block_ns = 1000000; /* off-CPU blocks shorter than this are not sent */
volatile __u32 cpu_keys;	       /* oncpu keys carry the CPU (autotrace bounds its ring per CPU) */
volatile __u32 self_tgid;	       /* the probe itself: its own allocations are never recorded */

/* Two generations of stack and count maps: samples go to gen&1, user space drains the other. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, SP_STACK_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SP_MAX_DEPTH * sizeof(__u64));
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_COUNT_ENTRIES);
	__type(key, struct sp_key);
	__type(value, struct sp_val);
} counts0 SEC(".maps"), counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sp_offcpu);
} offcpu_store SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SP_OFFCPU_RB_BYTES);
} offcpu_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_ST_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	gg_counter_add(&stats, idx, n);
}

static __always_inline void stat_inc(__u32 idx)
{
	stat_add(idx, 1);
}

#include "stackprobe_unwind.bpf.h"

static __always_inline void fill_comms(struct sp_key *key)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	bpf_get_current_comm(key->comm, sizeof(key->comm));
	BPF_CORE_READ_STR_INTO(&key->pcomm, task, group_leader, comm);
}

/* A stack id of the current task; -EFAULT means "none", other errors are counted as lost. */
static __always_inline __s32 stack_id(void *ctx, void *map, __u64 flags)
{
	long id = bpf_get_stackid(ctx, map, flags);

	if (id < 0 && id != -EFAULT_)
		stat_inc(SP_ST_STACK_LOST);
	return (__s32)id;
}

static __always_inline void count_add(void *map, struct sp_key *key, __u64 n)
{
	struct sp_val *v = bpf_map_lookup_elem(map, key);
	struct sp_val zero = {};

	if (!v) {
		if (bpf_map_update_elem(map, key, &zero, BPF_NOEXIST) && bpf_map_lookup_elem(map, key) == NULL) {
			stat_inc(SP_ST_COUNT_LOST);
			return;
		}
		v = bpf_map_lookup_elem(map, key);
		if (!v) {
			stat_inc(SP_ST_COUNT_LOST);
			return;
		}
	}
	__sync_fetch_and_add(&v->count, n);
}

#include "stackprobe_py.h"

/* One oncpu sample, mem fault or allocation of the current task, into the active generation. A uprobe
 * has no kernel stack worth keeping (the int3 path), so ret_ip != 0 (mem_alloc) skips it. */
static __always_inline void record_current(void *ctx, __u32 event, __u64 n, __u64 ret_ip)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_key key = {};

	key.pid = (__u32)id;
	key.tgid = (__u32)(id >> 32);
	if (key.pid == 0 || !gg_scope_current())
		return; /* the idle task, or out of scope */
	key.event = event;
	key.ret_ip = ret_ip;
	if (cpu_keys && event == SP_EV_ONCPU)
		key.cpu = bpf_get_smp_processor_id();
	if (event == SP_EV_ONCPU)
		key.pystack = py_stack_id(key.tgid);
	fill_comms(&key);
	/* the user stack: .eh_frame tables when the process has them, else the kernel's frame pointers */
	if (gen & 1) {
		key.kstack = ret_ip ? -EFAULT_ : stack_id(ctx, &stacks1, 0);
		if (uw_user_stack(&key, 1))
			key.ustack = stack_id(ctx, &stacks1, BPF_F_USER_STACK);
		count_add(&counts1, &key, n);
	} else {
		key.kstack = ret_ip ? -EFAULT_ : stack_id(ctx, &stacks0, 0);
		if (uw_user_stack(&key, 0))
			key.ustack = stack_id(ctx, &stacks0, BPF_F_USER_STACK);
		count_add(&counts0, &key, n);
	}
}

/*
 * On-CPU sampling is stratified (sampler.c's pacer): time on each CPU is cut into strata of one
 * sampling period, and each stratum gets one sample at a uniformly random point of it, fired by a
 * one-shot CPU-clock event armed by user space. Two events per CPU take turns (shot parity), so the
 * next stratum can be armed while the current one's shot is pending. pace_armed counts the strata
 * user space armed per (CPU, parity), pace_used those already taken: a shot weighs the strata armed
 * since the last one (1, or more when user space skipped strata), so every stratum is counted once,
 * up to SP_SHOT_MAX_STRATA a shot; strata beyond are counted as missed.
 */
volatile __u64 pace_armed[2 * SP_MAX_CPUS];
/* The monotonic time each (CPU, parity)'s last armed shot is due. A shot stands for its strata only when
 * it fires at that time, the uniformly random point of its stratum: a fire long after it (an idle CPU
 * whose timer is only served when something wakes it up) or before it (a stale re-fire of the last shot
 * of that parity) would put the strata on whatever runs at that moment, often the task that woke up.
 * Late fires' strata are dropped and counted, early fires leave them armed for the next shot. */
volatile __u64 pace_due[2 * SP_MAX_CPUS];
__u64 pace_used[2 * SP_MAX_CPUS];
__u64 pace_unarmed; /* fires with nothing armed (user space logs it) */
__u64 pace_early;   /* fires before the due time (user space logs it) */
__u64 pace_late;    /* fires after the due time + SP_SHOT_LATE_NS (user space logs it) */

/* Returns 1: on kernels >= 6.10 a perf_event program returning 0 also skips the event's refresh limit,
 * which makes the shot one-shot (PERF_EVENT_IOC_REFRESH 1). */
static __always_inline int oncpu_shot(struct bpf_perf_event_data *ctx, __u32 parity)
{
	__u32 i = bpf_get_smp_processor_id() * 2 + parity;
	__u64 w, now, due;

	if (i >= 2 * SP_MAX_CPUS)
		return 1;
	w = pace_armed[i] - pace_used[i];
	if (!w) {
		/* a second fire of a shot (seen on idle CPUs, not on busy ones): it stands for nothing */
		__sync_fetch_and_add(&pace_unarmed, 1);
		return 1;
	}
	now = bpf_ktime_get_ns();
	due = pace_due[i];
	if (now + SP_SHOT_EARLY_NS < due) {
		/* early: a re-fire of the last shot, not the armed one; the strata stay armed for the next
		 * shot of this parity (the one-shot limit may have been used up by this fire) */
		stat_inc(SP_ST_ONCPU_EARLY);
		__sync_fetch_and_add(&pace_early, 1);
		return 1;
	}
	pace_used[i] += w;
	if (now > due + SP_SHOT_LATE_NS) {
		stat_add(SP_ST_ONCPU_LATE, w);
		__sync_fetch_and_add(&pace_late, 1);
		return 1;
	}
	if (w > SP_SHOT_MAX_STRATA) {
		stat_add(SP_ST_ONCPU_MISSED, w - SP_SHOT_MAX_STRATA);
		w = SP_SHOT_MAX_STRATA;
	}
	stat_inc(SP_ST_ONCPU_SAMPLES);
	record_current(ctx, SP_EV_ONCPU, w, 0);
	return 1;
}

SEC("perf_event")
int sp_oncpu0(struct bpf_perf_event_data *ctx)
{
	return oncpu_shot(ctx, 0);
}

SEC("perf_event")
int sp_oncpu1(struct bpf_perf_event_data *ctx)
{
	return oncpu_shot(ctx, 1);
}

SEC("tracepoint/exceptions/page_fault_user")
int sp_mem(void *ctx)
{
	stat_inc(SP_ST_MEM_FAULTS);
	record_current(ctx, SP_EV_MEM, 1, 0);
	return 0;
}

#include "stackprobe_live.h"
#include "stackprobe_mmap.bpf.h"

/* An allocator call of size bytes, at the allocator's first instruction (uprobe); memptr: where
 * posix_memalign writes the block (0 otherwise). */
static __always_inline void alloc_record(struct pt_regs *ctx, __u64 size, __u64 memptr)
{
	__u64 ret_ip = 0;
	__u32 mode = alloc_mode;

	if (!size || (__u32)(bpf_get_current_pid_tgid() >> 32) == self_tgid)
		return;
	/* at the entry the return address is on top of the stack */
	if (bpf_probe_read_user(&ret_ip, sizeof(ret_ip), (void *)PT_REGS_SP(ctx)) || !ret_ip)
		ret_ip = 1; /* unreadable: still not a kernel stack */
	if (mode & SP_ALLOC_LIVE)
		live_enter(ctx, size, ret_ip, memptr);
	if (mode & SP_ALLOC_VOLUME) {
		stat_inc(SP_ST_ALLOC_CALLS);
		record_current(ctx, SP_EV_MEM_ALLOC, size, ret_ip);
	}
}

/* malloc(size), valloc(size), pvalloc(size) */
SEC("uprobe")
int BPF_KPROBE(sp_malloc, __u64 size)
{
	alloc_record(ctx, size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sp_calloc, __u64 nmemb, __u64 size)
{
	/* below 2^32 each, the product fits; a larger one only times 0 or 1 (else not counted) */
	if (((nmemb >> 32) || (size >> 32)) && nmemb > 1 && size > 1)
		return 0;
	alloc_record(ctx, nmemb * size, 0);
	return 0;
}

/* realloc(NULL, n) is malloc(n): glibc jumps to malloc, which counts it. The old block is released at
 * the entry (realloc(p, 0) frees it; a failed realloc, which keeps it, is not told apart). */
SEC("uprobe")
int BPF_KPROBE(sp_realloc, void *ptr, __u64 size)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (ptr && (alloc_mode & SP_ALLOC_LIVE) && (__u32)(id >> 32) != self_tgid)
		live_release((__u32)(id >> 32), (__u64)ptr);
	if (ptr)
		alloc_record(ctx, size, 0);
	return 0;
}

/* memalign(align, size), aligned_alloc(align, size) */
SEC("uprobe")
int BPF_KPROBE(sp_memalign, __u64 align, __u64 size)
{
	alloc_record(ctx, size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sp_posix_memalign, void *memptr, __u64 align, __u64 size)
{
	alloc_record(ctx, size, (__u64)memptr);
	return 0;
}

/* A block of s that ended at end: sent with the stacks taken when it began (if not too short). */
static __always_inline void offcpu_send(struct sp_offcpu *s, __u64 end)
{
	__u64 size;
	__u32 n;

	s->delta_ns = end > s->start_ns ? end - s->start_ns : 0;
	s->start_ns = 0;
	if (s->delta_ns < min_block_ns) {
		stat_inc(SP_ST_OFFCPU_SHORT);
		return;
	}
	n = s->kn + s->un;
	if (n > 2 * SP_MAX_DEPTH)
		n = 2 * SP_MAX_DEPTH;
	s->cpu = bpf_get_smp_processor_id();
	size = __builtin_offsetof(struct sp_offcpu, ips) + (__u64)n * sizeof(__u64);
	if (size > sizeof(*s))
		size = sizeof(*s);
	if (bpf_ringbuf_output(&offcpu_rb, s, size, 0))
		stat_inc(SP_ST_RB_LOST);
	else
		stat_inc(SP_ST_OFFCPU_EVENTS);
}

/* Switch-in of next: send its blocked time with the stacks taken when it left. */
static __always_inline void offcpu_in(struct task_struct *next, __u64 now)
{
	struct sp_offcpu *s = bpf_task_storage_get(&offcpu_store, next, 0, 0);

	if (s && s->start_ns)
		offcpu_send(s, now);
}

/* Switch-out of prev (still current here): remember when and where it left the CPU. */
static __always_inline void offcpu_out(void *ctx, struct task_struct *prev, __u64 now)
{
	struct sp_offcpu *s;
	__u32 pid = BPF_CORE_READ(prev, pid), tgid = BPF_CORE_READ(prev, tgid);
	__u64 rt;
	long n;

	/* prev is still the current task here */
	if (pid == 0 || !gg_scope_current())
		return;
	s = bpf_task_storage_get(&offcpu_store, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!s) {
		stat_inc(SP_ST_STORAGE_LOST);
		return;
	}
	/* Not every switch reaches the tracepoint (seen: every switch out of a VM's idle task on one CPU,
	 * so a task waking there comes on without one): a block still open is one whose switch-in was not
	 * seen. Between two switch-outs a task runs once, so it came on when the scheduler's count of its
	 * run time says: the block ends there, and is sent with the stacks it began with. */
	rt = prev->se.sum_exec_runtime;
	if (s->start_ns) {
		__u64 ran = rt - s->rt_ns;

		stat_inc(SP_ST_OFFCPU_UNSEEN_IN);
		offcpu_send(s,
			    rt >= s->rt_ns && now > s->start_ns && ran < now - s->start_ns ? now - ran : s->start_ns);
	}
	s->rt_ns = rt;
	s->pid = pid;
	s->tgid = tgid;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	BPF_CORE_READ_STR_INTO(&s->pcomm, prev, group_leader, comm);
	n = bpf_get_stack(ctx, s->ips, SP_MAX_DEPTH * sizeof(__u64), 0);
	s->kn = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
	if (s->kn > SP_MAX_DEPTH)
		s->kn = SP_MAX_DEPTH;
	s->un = 0;
	if (BPF_CORE_READ(prev, mm)) {
		__u64 kn = s->kn, un;
		struct uw_scratch *sc;

		if (kn > SP_MAX_DEPTH)
			kn = SP_MAX_DEPTH;
		/* the .eh_frame tables when the process has them (the copy from the walk's scratch), else the
		 * kernel's frame-pointer walk */
		n = uw_walk(tgid);
		sc = n > 0 ? gg_map_elem0(&uw_scratch) : NULL;
		if (sc) {
			un = (__u64)n;
			barrier_var(un);
			if (un > SP_MAX_DEPTH)
				un = SP_MAX_DEPTH;
			barrier_var(kn);
			if (kn > SP_MAX_DEPTH)
				kn = SP_MAX_DEPTH;
			if (un && bpf_probe_read_kernel(&s->ips[kn], un * sizeof(__u64), sc->ips) == 0)
				s->un = (__u32)un;
		} else {
			n = bpf_get_stack(ctx, &s->ips[kn], SP_MAX_DEPTH * sizeof(__u64), BPF_F_USER_STACK);
			s->un = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
			if (s->un > SP_MAX_DEPTH)
				s->un = SP_MAX_DEPTH;
		}
	}
	s->start_ns = now;
	stat_inc(SP_ST_OFFCPU_SWITCHES);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sp_offcpu, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();

	offcpu_out(ctx, prev, now);
	offcpu_in(next, now);
	return 0;
}
