/* contract.c - l7probe's contract: REST name "l7", sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "l7_conf.h"
#endif

/* gala-gopher's l7_protocol choices, as the REST API took them before l7probe was built here. */
static const char *const l7_protocols[] = {"http",  "pgsql",	"mysql", "redis", "kafka",
					   "mongo", "rocketmq", "dns",	 NULL};

/* clang-format off */
static const struct gg_subprobe subprobes[] = {
	{"l7_bytes_metrics", GG_BIT(L7_SP_BYTES), 1, 0},
	{"l7_rpc_metrics", GG_BIT(L7_SP_RPC), 1, 0},
	{"l7_rpc_trace", GG_BIT(L7_SP_TRACE), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct l7_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
	{.name = "l7_protocol", .type = GG_PT_ENUM_LIST, .def_str = "http", .choices = l7_protocols, .flag = "-p",
	 .help = "protocols parsed",
	 GG_STORE(struct l7_conf, protos_str)},
	GG_PARAM_BOOL("support_ssl", "-s", "follow SSL_read/SSL_write of OpenSSL", GG_STORE(struct l7_conf, ssl)),
	GG_PARAM_BOOL("cluster_ip_backend", NULL, NULL, GG_NOSTORE),
	{.name = "api_limit", .type = GG_PT_INT, .def = 100, .min = 1, .max = 10000, .zero_off = 1, .flag = "--api-limit",
	 .help = "distinct apis per process in l7_rpc_api, the rest counted as __other__ (0: no l7_rpc_api)",
	 GG_STORE(struct l7_conf, api_limit)},
	{.name = "trace_sample_permille", .type = GG_PT_INT, .def = 10, .min = 0, .max = 1000,
	 .unit = "per mille", .flag = "--trace-sample",
	 .help = "l7_rpc_trace: share of requests traced (errors and slow requests always are)",
	 GG_STORE(struct l7_conf, trace_permille)},
	{.name = "trace_slow_ms", .type = GG_PT_INT, .def = 500, .min = 1, .max = 100000, .zero_off = 1, .unit = "ms",
	 .flag = "--trace-slow", .help = "l7_rpc_trace: requests at least this slow are always traced (0: none)",
	 GG_STORE(struct l7_conf, trace_slow_ms)},
	{.name = "trace_max_per_s", .type = GG_PT_INT, .def = 1000, .min = 1, .max = 100000, .unit = "spans/s",
	 .flag = "--trace-max", .help = "l7_rpc_trace: most spans a second, the rest dropped (counted)",
	 GG_STORE(struct l7_conf, trace_max_per_s)},
};
/* clang-format on */

GG_CONTRACT(
	l7probe, "l7", GG_SNOOP_ALL,
	"application requests (HTTP/1.x, HTTP/2 and gRPC, PostgreSQL, MySQL, Redis, Kafka, MongoDB, RocketMQ, DNS; TLS "
	"through OpenSSL): bytes, requests, latency, errors, per api; l7_rpc_trace: OpenTelemetry spans on the "
	"event channel");
