/* export.h - where validated records go: metric records to the imdb (served by the web_server's
 * /metrics), to Kafka or to the metric log files; event records (the reserved event tables) through
 * de-duplication to Kafka or the event log files; metadata messages at start, for new tables and every
 * meta.report_interval to Kafka or the metadata log files. Every channel can be off. */
#ifndef GG_EXPORT_H
#define GG_EXPORT_H

#include <stdint.h>

#include "export_state.h"

struct gg_probe;

/* After the configuration and the registry are loaded. Logs and returns a negative errno on error. */
int gg_export__init(struct gg_sup *sup);
/* One validated record from probe p (never NULL). */
void gg_export__record(struct gg_sup *sup, struct gg_probe *p, const struct meta_record *rec);
/* Write buffered log lines out. */
void gg_export__flush(struct gg_sup *sup);
/* Stop the uv handles and the web server (memory stays until gg_export__free). */
void gg_export__close(struct gg_sup *sup);
/* After the loop has closed every handle: flush, deliver what Kafka still holds (bounded wait), free. */
void gg_export__free(struct gg_sup *sup);

/* Render the /metrics text (imdb families, then self-metrics) into b. Returns 0 or -ENOMEM. */
int gg_export__render_metrics(struct gg_sup *sup, struct gg_buf *b);

struct cJSON;
/* Export counters for status.json. */
void gg_export__status(struct gg_sup *sup, struct cJSON *obj);

#endif
