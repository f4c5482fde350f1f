/* contract.c - endpoint's contract: REST name "socket", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "ep_conf.h"
#endif

/* udp_socket hooks every socket send and receive of the host: asked for, never by default. */
static const struct gg_subprobe subprobes[] = {{"tcp_socket", GG_BIT(SP_TCP), 1, 0},
					       {"udp_socket", GG_BIT(SP_UDP), 0, 0}};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct ep_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};

GG_CONTRACT(endpoint, "socket", GG_SNOOP_ALL,
	    "listening sockets, outgoing connects, UDP sockets and socket-less drops");
