/* events.h - abnormal events: the reserved event tables probes write to, their translation into the
 * OTel-log-shaped JSON consumers read, and de-duplication per entity within event.timeout.
 *
 * Two reserved tables (registered by the supervisor; a .meta file may not define them):
 *   event     gala-gopher's layout, what its report_logs() prints:
 *             |event|<entity_name>|<entity_id>|<metric>|<severity>|<severity_number>|<body>|
 *   event_v2  the successor with both languages, entity labels and the event type:
 *             |event_v2|<entity_name>|<entity_id>|<metric>|<severity>|<body en_US>|<body zh_CN>|
 *                       <labels>|<event_type>|
 *             labels: name=value pairs joined by '&', '%XX' escapes any byte (as in a URL query);
 *             event_type: "sys" (default when empty) or "app".
 * severity: INFO, WARN, ERROR or FATAL (numbers 9, 13, 17, 21).
 */
#ifndef GG_EVENTS_H
#define GG_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "prom.h"

#define GG_EVENTS_DEDUP_MAX 65536u /* entities remembered for de-duplication */

/* Add the reserved tables to a registry (before the .meta files, so a clash names the file). */
int gg_events__register(struct meta_registry *reg, char *err, size_t errlen);
/* 1 when t is one of the reserved event tables. */
int gg_events__is_event_table(const struct meta_table *t);

struct gg_events_opts {
	unsigned int timeout_s; /* the same event of the same entity at most once per timeout */
	int zh_cn;		/* Body in zh_CN when the probe supplies it */
	const char *machine_id;
	const char *hostname;
	unsigned int dedup_max; /* 0 = GG_EVENTS_DEDUP_MAX */
	/* Appends the container and pod labels of process tgid (JSON members) to an event_v2 labelled
	 * tgid=<n>; those names from the probe are then left out. May be NULL. */
	void (*ident)(void *ctx, uint32_t tgid, struct gg_buf *out);
	void *ident_ctx;
};

struct gg_events_stats {
	uint64_t received;
	uint64_t reported;
	uint64_t deduplicated; /* same entity and metric within the timeout */
	uint64_t invalid;      /* unknown severity, bad labels */
	uint64_t dedup_full;   /* dropped: too many distinct entities within the timeout */
};

struct gg_events;

struct gg_events *gg_events__new(const struct gg_events_opts *o);
void gg_events__free(struct gg_events *ev);

/*
 * One validated record of an event table: 0 and the event's JSON object appended to out (no newline),
 * or -EALREADY (reported within the timeout), -EINVAL (invalid), -ENOSPC (de-duplication table full);
 * all counted. now_ms: wall clock (the Timestamp); mono_ms: monotonic clock (the timeout).
 */
int gg_events__process(struct gg_events *ev, const struct meta_record *rec, uint64_t now_ms, uint64_t mono_ms,
		       struct gg_buf *out);
const struct gg_events_stats *gg_events__stats(const struct gg_events *ev);
uint64_t gg_events__tracked(const struct gg_events *ev);

#endif
