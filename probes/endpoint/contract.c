/* contract.c - endpoint's contract: REST name "socket", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "ep_conf.h"
#endif

/* udp_socket hooks every socket send and receive of the host: asked for, never by default. */
static const struct gg_subprobe subprobes[] = {
	{"tcp_socket", GG_BIT(SP_TCP), 1, 0},
	{"udp_socket", GG_BIT(SP_UDP), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct ep_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};

const struct gg_contract gg_contract_endpoint = {
	.rest_name = "socket",
	.bin = "endpoint",
	.summary = "listening sockets, outgoing connects, UDP sockets and socket-less drops",
	.subprobes = subprobes,
	.nsubprobes = sizeof(subprobes) / sizeof(subprobes[0]),
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.snoopers = GG_SNOOP_ALL,
};
