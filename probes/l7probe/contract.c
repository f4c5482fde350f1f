/* contract.c - l7probe's contract: REST name "l7", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "l7_conf.h"
#endif

/* gala-gopher's l7_protocol choices, as the REST API took them before l7probe was built here; rocketmq
 * has no parser: accepted and ignored. */
static const char *const l7_protocols[] = {"http",  "pgsql",	"mysql", "redis", "kafka",
					   "mongo", "rocketmq", "dns",	 NULL};

/* clang-format off */
/* l7_rpc_trace (per-request records) is accepted and does nothing yet (bit 0). */
static const struct gg_subprobe subprobes[] = {
	{"l7_bytes_metrics", GG_BIT(L7_SP_BYTES), 1, 0},
	{"l7_rpc_metrics", GG_BIT(L7_SP_RPC), 1, 0},
	{"l7_rpc_trace", 0, 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct l7_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "l7_protocol", .type = GG_PT_ENUM_LIST, .def_str = "http", .choices = l7_protocols, .flag = "-p",
	 .help = "protocols parsed (rocketmq: accepted, no parser, ignored)",
	 GG_STORE(struct l7_conf, protos_str)},
	GG_PARAM_BOOL("support_ssl", "-s", "follow SSL_read/SSL_write of OpenSSL", GG_STORE(struct l7_conf, ssl)),
	GG_PARAM_BOOL("cluster_ip_backend", NULL, NULL, GG_NOSTORE),
};
/* clang-format on */

GG_CONTRACT(
	l7probe, "l7", GG_SNOOP_ALL,
	"application requests (HTTP/1.x, HTTP/2 and gRPC, PostgreSQL, MySQL, Redis, Kafka, MongoDB, DNS; TLS through "
	"OpenSSL): "
	"bytes, requests, latency, errors; l7_rpc_trace is accepted and does nothing yet");
