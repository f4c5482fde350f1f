/* contract.c - tcpprobe's contract: REST name "tcp", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "tcp_user.h"
#endif

static const struct gg_subprobe subprobes[] = {
	{"tcp_abnormal", GG_BIT(TCP_SP_ABNORMAL), 1, 0}, {"tcp_rtt", GG_BIT(TCP_SP_RTT), 1, 0},
	{"tcp_windows", GG_BIT(TCP_SP_WINDOWS), 1, 0},	 {"tcp_rate", GG_BIT(TCP_SP_RATE), 1, 0},
	{"tcp_srtt", GG_BIT(TCP_SP_SRTT), 1, 0},	 {"tcp_sockbuf", GG_BIT(TCP_SP_SOCKBUF), 1, 0},
	{"tcp_stats", GG_BIT(TCP_SP_STATS), 1, 0},	 {"tcp_delay", GG_BIT(TCP_SP_DELAY), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct tp_conf, period_s)),
	{.name = "sample_period", .type = GG_PT_INT, .def = 5000, .min = 100, .max = 10000, .unit = "ms"},
	{.name = "latency_thr",
	 .type = GG_PT_INT,
	 .def = 0,
	 .min = 10,
	 .max = 100000,
	 .zero_off = 1,
	 .unit = "ms",
	 .flag = "-T",
	 .help = "an event when a key's mean srtt reaches this",
	 .cli_def = 0,
	 .cli_min = 0,
	 .cli_max = 100000,
	 GG_STORE(struct tp_conf, latency_thr)},
	{.name = "drops_thr",
	 .type = GG_PT_INT,
	 .def = 0,
	 .min = 10,
	 .max = 100000,
	 .zero_off = 1,
	 .unit = "packets",
	 .flag = "-D",
	 .help = "an event when a key retransmits or drops this many packets in a period",
	 .cli_def = 0,
	 .cli_min = 0,
	 .cli_max = 100000,
	 GG_STORE(struct tp_conf, drops_thr)},
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "report_source_port",
	 .type = GG_PT_BOOL,
	 .def = 0,
	 .min = 0,
	 .max = 1,
	 .flag = "-c",
	 .help = "1: one key per client port",
	 GG_STORE(struct tp_conf, report_source_port)},
	{.name = "cluster_ip_backend", .type = GG_PT_BOOL, .def = 0, .min = 0, .max = 1},
	{.name = "dev_name", .type = GG_PT_NAME, .def_str = "", .restart = 1},
};

const struct gg_contract gg_contract_tcpprobe = {
	.rest_name = "tcp",
	.bin = "tcpprobe",
	.summary = "per TCP link bytes, segments, RTT, windows, rates, socket buffers and abnormal events",
	.subprobes = subprobes,
	.nsubprobes = sizeof(subprobes) / sizeof(subprobes[0]),
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.snoopers = GG_SNOOP_ALL,
};
