/* sliprobe.h - types shared by sliprobe's kernel half (bpf/sliprobe.bpf.c) and user half
 * (probes/sliprobe/): per cgroup and per node latency totals and log2 histograms. */
#ifndef GG_SLIPROBE_H
#define GG_SLIPROBE_H

#include "gg_common.h"

/* CPU latencies, in gala-gopher's order (cpu_wait .. cpu_longsys). */
enum sli_cpu_kind {
	SLI_CPU_WAIT = 0, /* preempted while runnable -> back on a CPU */
	SLI_CPU_SLEEP,	  /* switched out in S (interruptible) -> woken */
	SLI_CPU_IOWAIT,	  /* switched out in D with in_iowait -> woken */
	SLI_CPU_BLOCK,	  /* switched out in D without in_iowait (locks, page faults) -> woken */
	SLI_CPU_RUNDELAY, /* runnable (woken or preempted) -> on a CPU: all run-queue delay */
	SLI_CPU_LONGSYS,  /* on-CPU slices of at least SLI_LONGSYS_NS with no user time in them */
	SLI_CPU_N,
};

enum sli_mem_kind {
	SLI_MEM_RECLAIM = 0, /* direct and memcg reclaim */
	SLI_MEM_COMPACT,     /* direct compaction (compaction in a user task's context) */
	SLI_MEM_SWAPIN,	     /* not measured: no tracepoint (always 0) */
	SLI_MEM_N,
};

/* An on-CPU slice counts as long system time from this length on (see README). */
#define SLI_LONGSYS_NS 10000000ull

#define SLI_CGROUPS_MAX	 4096 /* cgroups tracked at once (LRU: the idlest are forgotten) */
#define SLI_INFLIGHT_MAX 8192 /* block requests in flight tracked at once */

/* One latency: total ns and a log2 histogram of ns (the count is the histogram's sum). */
struct sli_lat {
	__u64 ns;
	__u64 slots[GG_LOG2_SLOTS];
};

/* Per CPU (a per-CPU map value): user space sums the CPUs. */
struct sli_stats {
	struct sli_lat cpu[SLI_CPU_N];
	struct sli_lat mem[SLI_MEM_N];
	struct sli_lat io;
};

#endif
