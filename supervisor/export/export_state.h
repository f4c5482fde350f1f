/* export_state.h - the export's state (struct gg_export: channels, sinks, counters), apart from its
 * operations (export.h) so that the self-metrics renderer reads it without depending on export.c. */
#ifndef GG_EXPORT_STATE_H
#define GG_EXPORT_STATE_H

#include <stdint.h>
#include <uv.h>

#include "events.h"
#include "imdb.h"
#include "kafka.h"
#include "log.h"
#include "prom.h"
#include "recent.h"

struct gg_sup;
struct gg_http_server;
struct gg_ident_export;

enum gg_stream { GG_STREAM_METRIC = 0, GG_STREAM_EVENT, GG_STREAM_META, GG_STREAM__COUNT };

/* One JSON-lines log file of the logs channel; writes are buffered and flushed every second. */
struct gg_logs_out {
	struct rot_file file;
	int open;
	struct gg_buf buf;
	uint64_t pending;      /* lines in buf */
	uint64_t lines;	       /* lines in the files */
	uint64_t lost_lines;   /* lines that could not be written (full disk, I/O error) */
	uint64_t write_errors; /* failed flushes */
	int failing;	       /* in an episode of failed writes: logged once, at its start and end */
	uint64_t episode_lost;
};

/* Counters of a reserved table sent on the event channel as rendered (trace spans, OTel log records). */
struct gg_rendered_stats {
	uint64_t sent;
	uint64_t invalid; /* records the renderer refused as malformed */
	uint64_t off;	  /* records dropped because the event channel is off */
};

struct gg_export_stats {
	uint64_t records[GG_STREAM__COUNT]; /* validated records / events / metadata messages handled */
	uint64_t imdb_stored;		    /* metric records stored in the imdb */
	uint64_t imdb_dropped;		    /* refused by an imdb limit (per table and reason in the imdb) */
	uint64_t imdb_expired;
	uint64_t kafka_refused[GG_STREAM__COUNT]; /* produce() refused: queue full or other */
	uint64_t render_errors;			  /* messages that could not be rendered (out of memory) */
	uint64_t scrapes;
	uint64_t scrape_errors;	 /* renders that ran out of memory (500) */
	uint64_t last_scrape_ns; /* time to render the previous scrape */
	uint64_t last_scrape_series;
	uint64_t last_scrape_bytes;
	uint64_t meta_reports;		/* rounds of metadata messages */
	struct gg_rendered_stats spans; /* trace_span records as OTel JSON (invalid: ids or times malformed) */
	/* log records (OpenTelemetry logs: tprofiling); invalid: timestamp, resource or attributes malformed */
	struct gg_rendered_stats logs;
};

struct gg_export {
	struct gg_sup *sup;
	enum gg_stream_out { GG_SINK_OFF = 0, GG_SINK_IMDB, GG_SINK_LOGS, GG_SINK_KAFKA } sink[GG_STREAM__COUNT];

	struct imdb *db;
	struct prom_families *fams;
	uint64_t fam_conflicts;
	struct gg_http_server *http;

	struct gg_kafka *kafka;
	int topic[GG_STREAM__COUNT];
	uint64_t kafka_log_ms; /* rate limit of librdkafka's messages in our log */
	uint64_t kafka_log_suppressed;

	struct gg_logs_out logs[GG_STREAM__COUNT];
	int metric_nested; /* metric.out_channel = "json": gala-gopher's nested metric lines */

	struct gg_events *events;
	struct gg_recent *recent;      /* the last events reported, for the web page (recent.h) */
	struct gg_ident_export *ident; /* container and pod labels (ident_export.h); NULL when disabled */
	uv_poll_t ident_poll;	       /* its cgroup events (inotify) */
	int ident_poll_open;

	unsigned int meta_reported; /* tables of the registry already announced */
	uint64_t meta_last_ms;

	uv_timer_t timer; /* 1 s: imdb aging, log flush, metadata */
	int timer_open;
	struct gg_buf msg;  /* the message being rendered */
	size_t scrape_hint; /* size of the last scrape, to allocate once */

	struct gg_export_stats st;
};

#endif
