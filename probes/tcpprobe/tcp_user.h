/* tcp_user.h - tcpprobe's user half: configuration, and the per-key aggregation of links into
 * records (links.c). */
#ifndef GG_TCP_USER_H
#define GG_TCP_USER_H

#include <linux/types.h>
#include <stdint.h>

#include "bpf_util.h"
#include "probe.h"
#include "tcpprobe.h"

/* What the probe does; argv gives the baseline, a live configuration overrides it. */
struct tp_conf {
	unsigned int period_s;
	unsigned int subprobes;		 /* TCP_SP_* */
	unsigned int report_source_port; /* 0: client ports summed into one key, 1: one key per link */
	unsigned int drops_thr;		 /* packets per period (retransmitted + dropped); 0 = off */
	unsigned int latency_thr;	 /* ms of mean srtt; 0 = off */
	unsigned int explicit_sp; /* the sub-probe list was given (-P, live "probe"): per-segment hooks allowed */
};

struct tp_aggs;

/* Everything one report needs besides the links. */
struct tp_report_ctx {
	struct probe_rt *rt;
	const struct tp_conf *conf;
	const struct gg_scope *scope; /* user-side check for links that predate the last scope change */
	uint64_t scope_changed_ns;    /* CLOCK_MONOTONIC ns (same clock as bpf_ktime_get_ns) */
	uint64_t now_ns;
	uint64_t start_ns;	   /* when the probe attached: links opened later are new */
	uint32_t port_lo, port_hi; /* ip_local_port_range: tells clients from servers for unknown roles */
};

struct tp_aggs *tp_aggs__new(unsigned int max_keys);
void tp_aggs__free(struct tp_aggs *a);
/* Fold one link in: a live one (current values) or a closed one (final values, then forgotten); h its
 * histograms (tcp_hists), NULL when it has none. */
void tp_aggs__add(struct tp_aggs *a, const struct tp_report_ctx *ctx, const struct tcp_link *l,
		  const struct tcp_hists *h, int closed);
/* Emit every key's records for the sub-probes on, then start the next period. Returns the number of
 * records emitted. */
unsigned int tp_aggs__report(struct tp_aggs *a, const struct tp_report_ctx *ctx);
/* Keys dropped because the table was full, since start. */
uint64_t tp_aggs__overflows(const struct tp_aggs *a);
unsigned int tp_aggs__count(const struct tp_aggs *a);

#endif
