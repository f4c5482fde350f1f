/* metric_json.h - gala-gopher's nested JSON metric line (metric.out_channel = "json"): the record's
 * keys and labels under "labels", gauges, counters and summaries under "metrics", histograms under
 * "histos" as {"<le>": cumulative count, ..., "count": N, "sum": S}. */
#ifndef GG_METRIC_JSON_H
#define GG_METRIC_JSON_H

#include <stdint.h>

#include "meta.h"
#include "prom.h"

/* {"timestamp":ms,"entity_name":..,"table_name":..,"labels":{...,"machine_id":..,"hostname":..},
 *  "metrics":{...},"histos":{...}} appended to b (no newline). */
void gg_metric_json__render_nested(struct gg_buf *b, const struct meta_record *rec, uint64_t now_ms,
				   const char *machine_id, const char *hostname);

#endif
