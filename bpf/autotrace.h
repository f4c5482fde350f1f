/* autotrace.h - types shared by autotrace's kernel half (autotrace.bpf.c) and its user half. */
#ifndef GG_AUTOTRACE_H
#define GG_AUTOTRACE_H

#include "gg_common.h"

/* What the scheduler programs measure (autotrace.bpf.c's `parts`): each only when its trigger is on. */
#define AT_PART_RUNQ   1u /* run-queue delay: wakeup or preemption -> switch-in, log2 us histogram */
#define AT_PART_DSTATE 2u /* tasks in uninterruptible sleep (D) now */

/* Per-CPU counters and the run-queue delay histogram (one array entry per CPU). */
struct at_cpu {
	__u64 runq_hist[GG_LOG2_SLOTS]; /* run-queue delays, log2 slots of microseconds */
	__u64 runq_sum_us;
	__s64 dstate; /* entries into D minus their ends on this CPU (the sum over CPUs is the count) */
	__u64 storage_lost;
	__u64 runq_unseen_in;	/* run-queue waits whose switch-in was never seen, ended at the next switch-out */
	__u64 dstate_unseen_in; /* D ends whose switch-in was never seen, taken at the next switch-out */
	__u32 cur_pid;		/* the task last seen switched in on this CPU */
	__u32 pad;
};

#endif
