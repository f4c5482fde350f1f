/* l7_trace.h - l7probe's traces and SLI tables: what the tracker's span callback feeds (conn_trace.c:
 * sampled spans as trace_span records; conn_sli.c: redis_sli, pg_sli and pg_max_sli rows). */
#ifndef GG_L7_TRACE_H
#define GG_L7_TRACE_H

#include <stdint.h>

#include "l7_user.h"

/* ---- traces (conn_trace.c) ----------------------------------------------------------------------- */

/* The supervisor's reserved table trace_span, as this probe emits it. */
extern const struct probe_table gg_tbl_trace_span;

struct l7_trace_conf {
	unsigned int permille;	/* share of requests traced, 0..1000 (errors and slow ones always are) */
	unsigned int slow_ms;	/* requests at least this slow are always traced; 0: none */
	unsigned int max_per_s; /* most spans a second; more are dropped (counted) */
};

struct l7_trace_stats {
	uint64_t spans;	      /* sent */
	uint64_t sampled_out; /* not kept by the sampling rules */
	uint64_t dropped;     /* kept but over max_per_s (or not sent) */
};

struct l7_trace;

/* rt NULL: spans are decided and counted, not sent. NULL + errno. */
struct l7_trace *l7_trace__new(struct probe_rt *rt);
void l7_trace__free(struct l7_trace *tr);
void l7_trace__set_conf(struct l7_trace *tr, const struct l7_trace_conf *c);
/* Measure again the offset of the wall clock from the monotonic clock the kernel stamps events with. */
void l7_trace__clock(struct l7_trace *tr);
/* Whether the span is kept (counts it as sampled out or dropped when not). */
int l7_trace__want(struct l7_trace *tr, const struct l7_span *sp);
/* Decide and, when kept, emit one trace_span record. */
void l7_trace__span(struct l7_trace *tr, const struct l7_span *sp);
void l7_trace__stats(const struct l7_trace *tr, struct l7_trace_stats *ret);

/* ---- SLI tables (conn_sli.c) --------------------------------------------------------------------- */

/* Which: redis_sli (ksli, Redis server requests) or pg_sli + pg_max_sli (postgre_sli, PostgreSQL). */
enum l7_sli_kind { L7_SLI_REDIS = 1, L7_SLI_PG = 2 };

struct l7_sli;

struct l7_sli *l7_sli__new(enum l7_sli_kind kind);
void l7_sli__free(struct l7_sli *s);
/* A request of the tracker (server side of its protocol only). */
void l7_sli__span(struct l7_sli *s, const struct l7_span *sp);
/* Rows of the requests answered since the previous report, then forget them; an event_v2 (entity
 * sli, WARN) for each row whose slowest request took at least thr_ns (0: none). */
void l7_sli__report(struct l7_sli *s, struct probe_rt *rt, uint64_t thr_ns);
/* Rows now (for tests). */
unsigned int l7_sli__rows(const struct l7_sli *s);

#endif
