// SPDX-License-Identifier: GPL-2.0
/* autotrace.bpf.c - the scheduler signals of autotrace's triggers: run-queue delay (wakeup or preemption
 * to switch-in) as a per-CPU log2 histogram, and the number of tasks in uninterruptible sleep (D). The
 * on-CPU stacks come from stackprobe's BPF object (probes/stackprobe/sampler.c). */
#include "vmlinux.h"

#include "gg_common.bpf.h"

#include "autotrace.h"

char LICENSE[] SEC("license") = "GPL";

#define AT_TASK_RUNNING 0x0000
#define AT_TASK_UNINTR	0x0002
#define AT_TASK_NOLOAD	0x0400 /* TASK_IDLE = UNINTERRUPTIBLE | NOLOAD: idle kernel threads, not load */

volatile __u32 parts; /* AT_PART_*: written by user space through the mmap'ed .bss */

/* Per task: when it became runnable (0: not waiting for a CPU) and the scheduler's count of its run
 * time then, and whether it is counted as in D. */
struct at_task {
	__u64 queued_ns;
	__u64 queued_rt;
	__u32 in_d;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct at_task);
} at_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct at_cpu);
} at_cpus SEC(".maps");

static __always_inline void queued(struct task_struct *p)
{
	struct at_task *t;

	if (!(parts & AT_PART_RUNQ) || !p->pid)
		return;
	t = bpf_task_storage_get(&at_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t) {
		t->queued_ns = bpf_ktime_get_ns();
		t->queued_rt = p->se.sum_exec_runtime;
	} else {
		struct at_cpu *c = gg_map_elem0(&at_cpus);

		if (c)
			c->storage_lost++;
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(at_wakeup, struct task_struct *p)
{
	queued(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(at_wakeup_new, struct task_struct *p)
{
	queued(p);
	return 0;
}

/* A run-queue wait of t that ended at end (microseconds into the histogram). */
static __always_inline void runq_add(struct at_cpu *c, struct at_task *t, __u64 end)
{
	__u64 d = end > t->queued_ns ? (end - t->queued_ns) / 1000 : 0;
	__u32 s = gg_log2_slot(d);

	t->queued_ns = 0;
	if (s < GG_LOG2_SLOTS)
		c->runq_hist[s]++;
	c->runq_sum_us += d;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(at_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state)
{
	struct at_cpu *c = gg_map_elem0(&at_cpus);
	struct at_task *t;

	if (!c)
		return 0;
	if (prev->pid) {
		/*
		 * Not every switch reaches the tracepoint (seen: every switch out of a VM's idle task on one
		 * CPU, so a task waking there comes on without one). A task leaving the CPU is not in D and
		 * not waiting for one, whatever its storage still says: its switch-in was not seen. Between
		 * two switch-outs a task runs once, so it came on when the scheduler's count of its run time
		 * says; a wait stamped after that (a wakeup while it still ran) was no wait. A task seen
		 * coming on this CPU had both cleared then: only the others' storage is looked at.
		 */
		t = prev->pid != c->cur_pid ? bpf_task_storage_get(&at_tasks, prev, 0, 0) : NULL;
		if (t && t->in_d) {
			t->in_d = 0;
			c->dstate--;
			c->dstate_unseen_in++;
		}
		if (t && t->queued_ns) {
			__u64 now = bpf_ktime_get_ns(), ran = prev->se.sum_exec_runtime - t->queued_rt;

			if (ran < now && now - ran >= t->queued_ns) {
				runq_add(c, t, now - ran);
				c->runq_unseen_in++;
			}
			t->queued_ns = 0;
		}
		/* preempted (still runnable: queued again), or going into D */
		if ((parts & AT_PART_RUNQ) && prev_state == AT_TASK_RUNNING) {
			queued(prev);
		} else if ((parts & AT_PART_DSTATE) && (prev_state & AT_TASK_UNINTR) &&
			   !(prev_state & AT_TASK_NOLOAD)) {
			if (!t)
				t = bpf_task_storage_get(&at_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (t && !t->in_d) {
				t->in_d = 1;
				c->dstate++;
			} else if (!t) {
				c->storage_lost++;
			}
		}
	}
	c->cur_pid = next->pid;
	if (!next->pid)
		return 0;
	t = bpf_task_storage_get(&at_tasks, next, 0, 0);
	if (!t)
		return 0;
	if (t->in_d) {
		/* counted when it went into D (a task already in D when the probe started never was) */
		t->in_d = 0;
		c->dstate--;
	}
	if (t->queued_ns)
		runq_add(c, t, bpf_ktime_get_ns());
	return 0;
}
