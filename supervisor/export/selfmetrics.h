/* selfmetrics.h - the agent's own health in Prometheus text format, served after the probes' metrics on
 * the same /metrics endpoint: per probe (up, restarts, records received/rejected by reason, IPC losses,
 * configuration versions, BPF program run count and time), the supervisor (CPU, RSS, scrape duration),
 * the imdb (series per table, drops by reason), Kafka (queue depth, deliveries, errors), logs, events. */
#ifndef GG_SELFMETRICS_H
#define GG_SELFMETRICS_H

#include "prom.h"

struct gg_sup;

void gg_selfmetrics__render(struct gg_buf *b, struct gg_sup *sup);
/* 1 when family is one of the self-metric names (a probe table must not shadow it). */
int gg_selfmetrics__reserved(const char *family);

#endif
