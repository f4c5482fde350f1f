/* contract.c - tprofiling's contract: REST name "tprofiling", its event kinds as sub-probes, parameters
 * (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "tp_conf.h"
#endif

static const char *const tp_channels[] = {"kafka", "local", NULL};
static const char *const tp_hooks[] = {"tracepoints", "raw", NULL};

/* clang-format off */
static const struct gg_subprobe subprobes[] = {
	{"oncpu", GG_BIT(TP_SP_ONCPU), 1, 0},
	{"syscall_file", GG_BIT(TP_SP_FILE), 1, 0},
	{"syscall_net", GG_BIT(TP_SP_NET), 1, 0},
	{"syscall_lock", GG_BIT(TP_SP_LOCK), 1, 0},
	{"syscall_sched", GG_BIT(TP_SP_SCHED), 1, 0},
	{"pthread_sync", GG_BIT(TP_SP_PTHREAD_SYNC), 0, 0},
	{"mem_glibc", GG_BIT(TP_SP_MEM_GLIBC), 0, 0},
	{"python_gc", GG_BIT(TP_SP_PYTHON_GC), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct tp_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "min_exec_dur", .type = GG_PT_INT, .def = 1, .min = 0, .max = 1000000, .unit = "us",
	 .flag = "--min-exec-dur", .help = "events shorter than this are not reported",
	 GG_STORE(struct tp_conf, min_exec_us)},
	{.name = "min_aggr_dur", .type = GG_PT_INT, .def = 100, .min = 10, .max = 10000, .unit = "ms",
	 .flag = "--min-aggr-dur", .help = "same-name events of a thread within this window are aggregated",
	 GG_STORE(struct tp_conf, min_aggr_ms)},
	{.name = "profiling_channel", .type = GG_PT_ENUM_LIST, .def_str = "kafka,local", .choices = tp_channels,
	 .flag = "--channel", .help = "kafka: the event channel; local: files in output_dir",
	 GG_STORE(struct tp_conf, channel)},
	{.name = "output_dir", .type = GG_PT_OUT_DIR, .def_str = "/var/log/gala-gopher/tprofiling",
	 .flag = "--output-dir", .help = "event log and Chrome/Perfetto timeline files",
	 GG_STORE(struct tp_conf, output_dir)},
	GG_PARAM_BOOL("func_stack", "--func-stack", "func.stack (user stacks) with syscall and lock events",
		      GG_STORE(struct tp_conf, func_stack)),
	{.name = "syscall_hooks", .type = GG_PT_ENUM, .def_str = "tracepoints", .choices = tp_hooks, .restart = 1,
	 .flag = "--syscall-hooks", .help = "tracepoints: a pair per syscall (unwatched syscalls run nothing; 2-4 s to stop); raw: sys_enter/sys_exit with a table (stops at once; a program on every syscall of the host)",
	 GG_STORE(struct tp_conf, syscall_hooks)},
	{.name = "output_max_mb", .type = GG_PT_INT, .def = 256, .min = 1, .max = 65536, .unit = "MiB",
	 .flag = "--output-max-mb", .help = "local files in output_dir at most (event file and its copy, timeline files; the oldest timeline files go first)",
	 GG_STORE(struct tp_conf, output_max_mb)},
};
/* clang-format on */

GG_CONTRACT(tprofiling, "tprofiling", GG_SNOOP_ALL,
	    "thread-level timeline: syscalls (file, net, lock, sched), on-CPU runs, pthread lock waits, allocator "
	    "calls; events");
