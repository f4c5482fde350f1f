/* traces.h - request spans: the reserved trace_span table probes write (l7probe's l7_rpc_trace) and
 * its translation into OpenTelemetry JSON (one ExportTraceServiceRequest with one span per line),
 * sent on the event channel (events.log or the event Kafka topic), never de-duplicated.
 *
 *   |trace_span|<trace_id 32 hex>|<span_id 16 hex>|<parent_span_id 16 hex or empty>|<client|server>|
 *              <start unix ns>|<end unix ns>|
 *              <tgid>|<protocol>|<api>|<raw api>|<status>|<error 0|1>|<client_ip>|<client_port>|
 *              <server_ip>|<server_port>|<l4_role>|<l7_role>|<ssl 0|1>|<req_bytes>|<resp_bytes>|
 */
#ifndef GG_TRACES_H
#define GG_TRACES_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "outbuf.h"

/* Add the reserved table to a registry (before the .meta files). */
int gg_traces__register(struct meta_registry *reg, char *err, size_t errlen);
/* 1 when t is the reserved trace table. */
int gg_traces__is_trace_table(const struct meta_table *t);

struct gg_traces_opts {
	const char *machine_id;
	const char *hostname;
	const char *version; /* the scope's version */
	/* The container id of process tgid ("" or NULL when none). May be NULL. */
	const char *(*container_id)(void *ctx, uint32_t tgid);
	void *ctx;
};

/* One validated trace_span record as one OTel JSON object appended to out (no newline): 0, or
 * -EINVAL when its ids or times are not what the table says (counted by the caller). */
int gg_traces__render(const struct gg_traces_opts *o, const struct meta_record *rec, struct gg_buf *out);

#endif
