/* contract.c - taskprobe's contract: REST name "proc", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "tp_user.h"
#endif

static const struct gg_subprobe subprobes[] = {
	{"base_metrics", GG_BIT(TP_SUB_BASE), 1, 0}, {"proc_syscall", GG_BIT(TP_SUB_SYSCALL), 0, 0},
	{"proc_fs", GG_BIT(TP_SUB_FS), 0, 0},	     {"proc_io", GG_BIT(TP_SUB_IO), 1, 0},
	{"proc_dns", GG_BIT(TP_SUB_DNS), 1, 0},	     {"proc_pagecache", GG_BIT(TP_SUB_PAGECACHE), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct tp_conf, period_s)),
	{.name = "latency_thr",
	 .type = GG_PT_INT,
	 .def = 0,
	 .min = 10,
	 .max = 100000,
	 .zero_off = 1,
	 .unit = "ms",
	 .flag = "--latency-thr",
	 .help = "an event when a system call or IO takes this long",
	 .cli_def = 0,
	 .cli_min = 0,
	 .cli_max = 100000,
	 GG_STORE(struct tp_conf, latency_thr_ms)},
	{.name = "offline_thr",
	 .type = GG_PT_INT,
	 .def = 0,
	 .min = 10,
	 .max = 100000,
	 .zero_off = 1,
	 .unit = "ms",
	 .flag = "--offline-thr",
	 .help = "an event when a process has been gone this long",
	 .cli_def = 0,
	 .cli_min = 0,
	 .cli_max = 100000,
	 GG_STORE(struct tp_conf, offline_thr_ms)},
	GG_PARAMS_SEED_COMMON(GG_STORE(struct tp_conf, report_event)),
};

const struct gg_contract gg_contract_taskprobe = {
	.rest_name = "proc",
	.bin = "taskprobe",
	.summary = "per-process system calls, file systems, block IO, off-CPU time, page cache and DNS",
	.subprobes = subprobes,
	.nsubprobes = sizeof(subprobes) / sizeof(subprobes[0]),
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.snoopers = GG_SNOOP_ALL,
};
