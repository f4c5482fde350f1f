/* otel_logs.h - OpenTelemetry log records: the reserved `log` table gala-gopher's tprofiling writes and
 * its translation into the seed's event JSON, sent on the event channel (events.log or the event Kafka
 * topic) as is, never de-duplicated:
 *
 *   |log|<timestamp ms>|<severity text>|<severity number>|<resource JSON object>|<attributes JSON object>|<body>|
 *
 * -> {"Timestamp":ms,"SeverityText":"INFO","SeverityNumber":9,"Body":"...","Resource":{...},
 *     "Attributes":{...}}; the Resource gets host.id and host.name (the agent's) and, when it names
 *     thread.tgid and no container, container.id and container.name (the identity resolver's). */
#ifndef GG_OTEL_LOGS_H
#define GG_OTEL_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "outbuf.h"

/* Add the reserved table to a registry (before the .meta files). */
int gg_otel_logs__register(struct meta_registry *reg, char *err, size_t errlen);
/* 1 when t is the reserved log table. */
int gg_otel_logs__is_log_table(const struct meta_table *t);

struct gg_otel_logs_opts {
	const char *machine_id;
	const char *hostname;
	/* The container id and name of process tgid ("" or NULL when none). May be NULL. */
	void (*container)(void *ctx, uint32_t tgid, const char **ret_id, const char **ret_name);
	void *ctx;
};

/* One validated log record as one JSON object appended to out (no newline): 0, or -EINVAL when its
 * timestamp or severity number is not a number or its resource or attributes not a JSON object, or
 * -ENOMEM. */
int gg_otel_logs__render(const struct gg_otel_logs_opts *o, const struct meta_record *rec, struct gg_buf *out);

#endif
