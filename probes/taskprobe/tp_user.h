/* tp_user.h - what taskprobe's user-side files share: configuration, state, the report and the
 * getaddrinfo uprobes. */
#ifndef GG_TP_USER_H
#define GG_TP_USER_H

#include <stdint.h>

#include "bpf_util.h"
#include "probe.h"
#include "taskprobe.h"

#define TP_LIBC_MAX    16u  /* distinct libc files with getaddrinfo uprobes */
#define TP_OFFLINE_MAX 256u /* processes gone away whose offline event is pending */

/* What the probe does; argv gives the baseline, a live configuration overrides it. */
struct tp_conf {
	unsigned int period_s;
	unsigned int subs; /* enum tp_sub bits */
	int report_event;
	unsigned int latency_thr_ms; /* 0: off */
	unsigned int offline_thr_ms; /* 0: off */
	struct gg_scope scope;
};

/* A process's counters as of the previous report (deltas give per-period values). */
struct tp_prev {
	uint32_t tgid;
	struct tp_proc v;
};

/* A process that went away, waiting for its offline event (offline_thr after it was seen gone). */
struct tp_gone {
	uint32_t tgid;
	char comm[16];
	uint64_t gone_ms;
};

/* A libc with getaddrinfo uprobes. */
struct tp_libc {
	uint64_t dev, ino;
	struct bpf_link *enter, *exit;
};

struct taskprobe;

struct tp_ctx {
	struct probe_rt *rt;
	struct taskprobe *skel;
	struct tp_conf base, cur;
	const char *comm;	   /* --comm: processes with this name are rescanned into the scope every period */
	struct gg_scope applied;   /* what the kernel filters on now */
	int scope_dirty;	   /* the kernel's scope must be re-applied */
	unsigned int applied_subs; /* the sub-probes whose programs are attached */
	/* report state */
	uint32_t *keys;
	struct tp_proc *vals;
	struct tp_prev *prev;
	uint32_t nprev;
	struct tp_gone gone[TP_OFFLINE_MAX];
	unsigned int ngone;
	uint64_t dropped_logged;
	/* getaddrinfo uprobes */
	struct tp_libc libc[TP_LIBC_MAX];
	unsigned int nlibc;
	/* --bpf-stats (or --stats): set, and collected */
	int bpf_stats;
	struct gg_bpf_stats_prev stats_prev[32];
};

/* Attach or detach the programs of each sub-probe to match ctx->cur.subs. */
int tp_attach_subs(struct tp_ctx *ctx);
/* getaddrinfo uprobes on the host's libc and on the libc of each process in scope (containers).
 * Returns how many libc files are probed. */
int tp_dns_attach(struct tp_ctx *ctx);
void tp_dns_detach(struct tp_ctx *ctx);

/* Put ctx->cur.scope into the kernel (clears what was counted under the old scope). */
int tp_scope_apply(struct tp_ctx *ctx);

/* One report period: read the kernel's counters, emit records, handle processes gone away. */
int tp_report(struct tp_ctx *ctx);
int tp_report_init(struct tp_ctx *ctx);
void tp_report_free(struct tp_ctx *ctx);
/* Forget every process (after a scope change). */
void tp_report_reset(struct tp_ctx *ctx);

#endif
