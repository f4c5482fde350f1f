/* at_conf.h - autotrace's configuration (the contract's GG_STORE targets) and its trigger kinds. */
#ifndef GG_AT_CONF_H
#define GG_AT_CONF_H

#include <limits.h>

/* The triggers, each a sub-probe (its bit is 1 << AT_TR_*). */
enum at_trig {
	AT_TR_HOST_CPU = 0, /* host CPU busy, percent of all CPUs (/proc/stat) */
	AT_TR_PROC_CPU,	    /* one process's CPU, percent of one CPU (/proc/<pid>/stat) */
	AT_TR_DSTATE,	    /* tasks in uninterruptible sleep (sched_switch) */
	AT_TR_RUNQ,	    /* p99 run-queue delay since the last evaluation, us (sched_wakeup/switch) */
	AT_TR_RETRANS,	    /* TCP segments retransmitted per second (/proc/net/snmp) */
	AT_TR_RSS,	    /* one process's RSS growth, KiB/s over the hold window (/proc/<pid>/statm) */
	AT_TR_L7_P99,	    /* p99 latency of the requests a process served over the hold window, ms (l7probe) */
	AT_TR_L7_ERRORS,    /* part of them that failed, percent (l7probe) */
	AT_TR_NR,
};

struct at_trig_conf {
	unsigned int thr;	 /* fire at or above */
	unsigned int hold_s;	 /* ... for this long (0: the first second above) */
	unsigned int cooldown_s; /* then not again for this long */
};

struct at_conf {
	unsigned int triggers; /* 1 << AT_TR_* */
	unsigned int report_period_s;
	unsigned int ring_s;		/* seconds of low-rate stacks kept before a trigger */
	unsigned int ring_period_ms;	/* always-on sampling period (53 ms: ~19 Hz) */
	unsigned int profile_period_ms; /* sampling period while capturing */
	unsigned int capture_s;		/* capture window after the trigger */
	int capture_offcpu;		/* off-CPU stacks too while capturing */
	unsigned int min_block_us;
	unsigned int global_gap_s; /* at least this long between two captures (any trigger) */
	unsigned int max_per_hour; /* captures in any 60 minutes */
	unsigned int proc_gap_s;   /* at least this long between two captures for the same process */
	unsigned int retention_s;  /* profiles kept */
	unsigned int ring_kb;	   /* memory of the ring, all CPUs (each CPU gets its share of every second) */
	unsigned int l7_min_reqs;  /* l7 triggers: fewer requests in the window decide nothing */
	struct at_trig_conf tr[AT_TR_NR];
	char flame_dir[PATH_MAX];
};

#endif
