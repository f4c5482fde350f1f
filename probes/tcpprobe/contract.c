/* contract.c - tcpprobe's contract: REST name "tcp", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "tcp_user.h"
#endif

/* clang-format off */
/* Without -P or a live list: every table but tcp_delay (per-segment and per-send hooks). */
static const struct gg_subprobe subprobes[] = {
	{"tcp_abnormal", GG_BIT(TCP_SP_ABNORMAL), 1, 0}, {"tcp_rtt", GG_BIT(TCP_SP_RTT), 1, 0},
	{"tcp_windows", GG_BIT(TCP_SP_WINDOWS), 1, 0},   {"tcp_rate", GG_BIT(TCP_SP_RATE), 1, 0},
	{"tcp_srtt", GG_BIT(TCP_SP_SRTT), 1, 0},         {"tcp_sockbuf", GG_BIT(TCP_SP_SOCKBUF), 1, 0},
	{"tcp_stats", GG_BIT(TCP_SP_STATS), 1, 0},       {"tcp_delay", GG_BIT(TCP_SP_DELAY), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct tp_conf, period_s)),
	GG_PARAM_SAMPLE_PERIOD,
	GG_PARAM_THR("latency_thr", "ms", "-T", "an event when a key's mean srtt reaches this",
		     GG_STORE(struct tp_conf, latency_thr)),
	GG_PARAM_THR("drops_thr", "packets", "-D", "an event when a key retransmits or drops this many packets in a period",
		     GG_STORE(struct tp_conf, drops_thr)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	GG_PARAM_BOOL("report_source_port", "-c", "1: one key per client port", GG_STORE(struct tp_conf, report_source_port)),
	GG_PARAM_BOOL("cluster_ip_backend", NULL, NULL, GG_NOSTORE),
	{.name = "dev_name", .type = GG_PT_NAME, .def_str = "", .restart = 1},
};
/* clang-format on */

GG_CONTRACT(tcpprobe, "tcp", GG_SNOOP_ALL,
	    "per TCP link bytes, segments, RTT, windows, rates, socket buffers and abnormal events");
