/* contract.c - autotrace's contract: REST name "autotrace", one sub-probe per trigger, parameters. */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "at_conf.h"
#endif

static const struct gg_subprobe subprobes[] = {
	{"host_cpu", GG_BIT(1u << AT_TR_HOST_CPU), 1, 0},
	{"proc_cpu", GG_BIT(1u << AT_TR_PROC_CPU), 1, 0},
	{"dstate", GG_BIT(1u << AT_TR_DSTATE), 0, 0}, /* sched_switch on every context switch: opt-in */
	{"runq", GG_BIT(1u << AT_TR_RUNQ), 0, 0},
	{"tcp_retrans", GG_BIT(1u << AT_TR_RETRANS), 1, 0},
	{"rss", GG_BIT(1u << AT_TR_RSS), 1, 0},
	/* the numbers come from l7probe (its per-process aggregates in the run directory): opt-in */
	{"l7_p99", GG_BIT(1u << AT_TR_L7_P99), 0, 0},
	{"l7_errors", GG_BIT(1u << AT_TR_L7_ERRORS), 0, 0},
};

/* clang-format off */
#define AT_TRIG_PARAMS(n, fl, k, u, d, lo, hi, hold, hl)                                                          \
	{.name = n "_thr", .type = GG_PT_INT, .def = d, .min = lo, .max = hi, .unit = u, .flag = "--" fl "-thr",     \
	 .help = hl, GG_STORE(struct at_conf, tr[k].thr)},                                                      \
	{.name = n "_hold", .type = GG_PT_INT, .def = hold, .min = 0, .max = 3600, .unit = "s",                    \
	 .flag = "--" fl "-hold", .help = "the threshold must hold this long", GG_STORE(struct at_conf, tr[k].hold_s)}, \
	{.name = n "_cooldown", .type = GG_PT_INT, .def = 600, .min = 0, .max = 86400, .unit = "s",                \
	 .flag = "--" fl "-cooldown", .help = "no new firing of this trigger for this long",                      \
	 GG_STORE(struct at_conf, tr[k].cooldown_s)}

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct at_conf, report_period_s)),
	{.name = "ring_seconds", .type = GG_PT_INT, .def = 30, .min = 5, .max = 300, .unit = "s", .flag = "--ring-seconds",
	 .help = "seconds of always-on stacks kept before a trigger", GG_STORE(struct at_conf, ring_s)},
	{.name = "ring_sample_period", .type = GG_PT_INT, .def = 53, .min = 20, .max = 1000, .unit = "ms",
	 .flag = "--ring-sample-period", .help = "always-on sampling period (53 ms: ~19 Hz)",
	 GG_STORE(struct at_conf, ring_period_ms)},
	{.name = "perf_sample_period", .type = GG_PT_INT, .def = 11, .min = 10, .max = 1000, .unit = "ms",
	 .flag = "--perf-sample-period", .help = "sampling period while capturing",
	 GG_STORE(struct at_conf, profile_period_ms)},
	{.name = "capture_seconds", .type = GG_PT_INT, .def = 10, .min = 1, .max = 300, .unit = "s",
	 .flag = "--capture-seconds", .help = "capture window after a trigger", GG_STORE(struct at_conf, capture_s)},
	{.name = "capture_offcpu", .type = GG_PT_BOOL, .def = 1, .min = 0, .max = 1, .flag = "--capture-offcpu",
	 .help = "off-CPU stacks too while capturing", GG_STORE(struct at_conf, capture_offcpu)},
	{.name = "min_block_us", .type = GG_PT_INT, .def = 1000, .min = 1, .max = 10000000, .unit = "us",
	 .flag = "--min-block-us", .help = "off-CPU blocks shorter than this are ignored",
	 GG_STORE(struct at_conf, min_block_us)},
	{.name = "global_gap", .type = GG_PT_INT, .def = 60, .min = 0, .max = 86400, .unit = "s", .flag = "--global-gap",
	 .help = "at least this long between two captures", GG_STORE(struct at_conf, global_gap_s)},
	{.name = "max_per_hour", .type = GG_PT_INT, .def = 10, .min = 1, .max = 60, .unit = "captures",
	 .flag = "--max-per-hour", .help = "captures in any 60 minutes", GG_STORE(struct at_conf, max_per_hour)},
	{.name = "proc_gap", .type = GG_PT_INT, .def = 1800, .min = 0, .max = 86400, .unit = "s", .flag = "--proc-gap",
	 .help = "at least this long between two captures for one process", GG_STORE(struct at_conf, proc_gap_s)},
	{.name = "flame_dir", .type = GG_PT_OUT_DIR, .def_str = "/var/log/gala-gopher/autotrace", .flag = "--flame-dir",
	 .help = "profile store, folded, SVG and pprof files", GG_STORE(struct at_conf, flame_dir)},
	{.name = "profile_retention", .type = GG_PT_INT, .def = 86400, .min = 60, .max = 2592000, .unit = "s",
	 .flag = "--retention", .help = "profiles are kept this long", GG_STORE(struct at_conf, retention_s)},
	AT_TRIG_PARAMS("host_cpu", "host-cpu", AT_TR_HOST_CPU, "percent", 90, 1, 100, 10, "host CPU busy, percent of all CPUs"),
	AT_TRIG_PARAMS("proc_cpu", "proc-cpu", AT_TR_PROC_CPU, "percent", 90, 1, 100000, 10, "a process's CPU, percent of one CPU"),
	AT_TRIG_PARAMS("dstate", "dstate", AT_TR_DSTATE, "tasks", 20, 1, 100000, 10, "tasks in uninterruptible sleep"),
	AT_TRIG_PARAMS("runq", "runq", AT_TR_RUNQ, "us", 50000, 1, 100000000, 10, "p99 run-queue delay since the last evaluation"),
	AT_TRIG_PARAMS("tcp_retrans", "tcp-retrans", AT_TR_RETRANS, "segments/s", 100, 1, 100000000, 10,
		       "TCP segments retransmitted per second"),
	AT_TRIG_PARAMS("rss", "rss", AT_TR_RSS, "KiB/s", 10240, 1, 100000000, 10, "a process's RSS growth over the hold time"),
	AT_TRIG_PARAMS("l7_p99", "l7-p99", AT_TR_L7_P99, "ms", 1000, 1, 3600000, 10,
		       "p99 latency of the requests a process served over the hold time (l7probe's)"),
	AT_TRIG_PARAMS("l7_errors", "l7-errors", AT_TR_L7_ERRORS, "percent", 10, 1, 100, 10,
		       "part of the requests a process served over the hold time that failed (l7probe's)"),
	{.name = "l7_min_requests", .type = GG_PT_INT, .def = 20, .min = 1, .max = 1000000, .unit = "requests",
	 .flag = "--l7-min-requests", .help = "l7 triggers: fewer requests in the hold time decide nothing",
	 GG_STORE(struct at_conf, l7_min_reqs)},
	{.name = "ring_memory", .type = GG_PT_INT, .def = 98304, .min = 64, .max = 4194304, .unit = "KiB",
	 .flag = "--ring-memory", .help = "memory of the ring; every CPU gets an equal share of every second",
	 GG_STORE(struct at_conf, ring_kb)},
};
/* clang-format on */

GG_CONTRACT(autotrace, "autotrace", GG_SNOOP_ALL,
	    "triggered flight recorder: low-rate stacks always, a profile with the seconds before a trigger");
