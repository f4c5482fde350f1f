/* contract.c - taskprobe's contract: REST name "proc", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "tp_user.h"
#endif

/* clang-format off */
static const struct gg_subprobe subprobes[] = {
	{"base_metrics", GG_BIT(TP_SUB_BASE), 1, 0}, {"proc_syscall", GG_BIT(TP_SUB_SYSCALL), 0, 0},
	{"proc_fs", GG_BIT(TP_SUB_FS), 0, 0},        {"proc_io", GG_BIT(TP_SUB_IO), 1, 0},
	{"proc_dns", GG_BIT(TP_SUB_DNS), 1, 0},      {"proc_pagecache", GG_BIT(TP_SUB_PAGECACHE), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct tp_conf, period_s)),
	GG_PARAM_THR("latency_thr", "ms", "--latency-thr", "an event when a system call or IO takes this long",
		     GG_STORE(struct tp_conf, latency_thr_ms)),
	GG_PARAM_THR("offline_thr", "ms", "--offline-thr", "an event when a process has been gone this long",
		     GG_STORE(struct tp_conf, offline_thr_ms)),
	GG_PARAMS_SEED_COMMON(GG_STORE(struct tp_conf, report_event)),
};
/* clang-format on */

GG_CONTRACT(taskprobe, "proc", GG_SNOOP_ALL,
	    "per-process system calls, file systems, block IO, off-CPU time, page cache and DNS");
