/* otel.h - the reserved tables sent on the event channel as OpenTelemetry JSON, as rendered and never
 * de-duplicated (events.log or the event Kafka topic); each is added to the registry before the .meta
 * files, recognised by its table and rendered with the same resource (this agent's host and, from the
 * identity resolver, the container of the record's process):
 *
 * - request spans (traces.c): the trace_span table probes write (l7probe's l7_rpc_trace), one
 *   ExportTraceServiceRequest with one span per line:
 *
 *   |trace_span|<trace_id 32 hex>|<span_id 16 hex>|<parent_span_id 16 hex or empty>|<client|server>|
 *              <start unix ns>|<end unix ns>|
 *              <tgid>|<protocol>|<api>|<raw api>|<status>|<error 0|1>|<client_ip>|<client_port>|
 *              <server_ip>|<server_port>|<l4_role>|<l7_role>|<ssl 0|1>|<req_bytes>|<resp_bytes>|
 *
 * - log records (otel_logs.c): the `log` table gala-gopher's tprofiling writes, in the seed's event JSON:
 *
 *   |log|<timestamp ms>|<severity text>|<severity number>|<resource JSON object>|<attributes JSON object>|<body>|
 *
 *   -> {"Timestamp":ms,"SeverityText":"INFO","SeverityNumber":9,"Body":"...","Resource":{...},
 *       "Attributes":{...}}; the Resource gets host.id and host.name (the agent's) and, when it names
 *       thread.tgid and no container, container.id and container.name (the identity resolver's). */
#ifndef GG_OTEL_H
#define GG_OTEL_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "outbuf.h"

/* Who a rendered record comes from. */
struct gg_otel_opts {
	const char *machine_id;
	const char *hostname;
	const char *version; /* the scope's version (spans) */
	/* The container id and name of process tgid ("" or NULL when none). May be NULL. */
	void (*container)(void *ctx, uint32_t tgid, const char **ret_id, const char **ret_name);
	void *ctx;
};

/* Add the reserved table to a registry (before the .meta files). */
int gg_traces__register(struct meta_registry *reg, char *err, size_t errlen);
int gg_otel_logs__register(struct meta_registry *reg, char *err, size_t errlen);
/* 1 when t is the reserved trace (log) table. */
int gg_traces__is_trace_table(const struct meta_table *t);
int gg_otel_logs__is_log_table(const struct meta_table *t);

/* One validated trace_span record as one OTel JSON object appended to out (no newline): 0, or -EINVAL
 * when its ids or times are not what the table says (counted by the caller). */
int gg_traces__render(const struct gg_otel_opts *o, const struct meta_record *rec, struct gg_buf *out);
/* One validated log record as one JSON object appended to out (no newline): 0, or -EINVAL when its
 * timestamp or severity number is not a number or its resource or attributes not a JSON object, or
 * -ENOMEM. */
int gg_otel_logs__render(const struct gg_otel_opts *o, const struct meta_record *rec, struct gg_buf *out);

#endif
