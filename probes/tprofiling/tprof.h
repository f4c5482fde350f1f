/* tprof.h - tprofiling's user half: aggregation of thread events (aggr.c), their rendering as the
 * seed's OpenTelemetry JSON and as Chrome/Perfetto trace events (render.c), the local files (files.c),
 * file and socket names of descriptors (fdname.c) and the pthread_sync uprobes (ulock.c). */
#ifndef GG_TPROF_H
#define GG_TPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <bpf/libbpf.h>

#include "ctrl_msg.h"
#include "tprofiling.h" /* bpf/: struct tp_event */

extern const char *const tp_type_names[TP_TYPE_NR]; /* "oncpu", "file", "net", "lock", "sched", "pthread_sync", "mem" */
extern const char *const tp_names[TP_NAME_NR];	    /* "oncpu", "read", ..., "pthread_mutex_lock", ... */

/* ---- aggregation (aggr.c) ------------------------------------------------------------------------ */

/* One aggregated event: same-name events of one thread whose starts fall within min_aggr_dur of the
 * first. Times are CLOCK_MONOTONIC ns; the extended attributes (arg, ret, stack) are the first's. */
struct tp_agg {
	uint64_t start_ns; /* the first event's start */
	uint64_t end_ns;   /* the last event's end */
	uint64_t dur_ns;   /* sum of the events' durations */
	uint32_t count;
	uint32_t pid, tgid;
	uint16_t name, type;
	int64_t arg, ret;
	uint64_t bytes; /* mem: the bytes asked for by all the calls */
	char comm[16];
	uint32_t nstack;
	uint64_t stack[TP_STACK_DEPTH];
	char path[TP_PATH_DEPTH][TP_PATH_NAME]; /* the kernel's names of a file event's descriptor */
	int32_t next;				/* chain (aggr.c's) */
};

#define TP_AGGR_SLOTS 8192u

typedef void (*tp_emit_fn)(void *ctx, const struct tp_agg *a);

struct tp_aggr;
/* NULL + errno. */
struct tp_aggr *tp_aggr__new(void);
void tp_aggr__free(struct tp_aggr *a);
/*
 * One finished event. When its thread has an open aggregate of that name started less than window_ns
 * before this event's start, it joins it; otherwise the open one (if any) is emitted and this one
 * opens a new aggregate. When every slot is taken the event is emitted alone (counted in *overflow).
 */
void tp_aggr__add(struct tp_aggr *a, const struct tp_event *e, uint64_t window_ns, tp_emit_fn emit, void *ctx);
/* Emit (and close) the aggregates whose window has passed by now_ns; every one when now_ns is UINT64_MAX. */
void tp_aggr__flush(struct tp_aggr *a, uint64_t now_ns, uint64_t window_ns, tp_emit_fn emit, void *ctx);
unsigned int tp_aggr__open(const struct tp_aggr *a);
uint64_t tp_aggr__overflow(const struct tp_aggr *a);

/* ---- rendering (render.c) ------------------------------------------------------------------------ */

/* What an aggregate's rendering needs beyond itself. */
struct tp_render_info {
	uint64_t mono_to_wall_ns;	 /* add to a CLOCK_MONOTONIC time for the wall clock */
	const char *proc_name;		 /* the process's name */
	const char *path;		 /* file.path ("" none) */
	const char *conn;		 /* sock.conn ("" none) */
	const char *stack;		 /* func.stack, outermost first, each frame followed by ';' ("" none) */
	const char *host_id, *host_name; /* local files only (the supervisor fills them on the channel) */
};

/* A bounded string being built (never overflows; truncated sets when something was cut). */
struct tp_str {
	char *buf;
	size_t cap, len;
	int truncated;
};
void tp_str__init(struct tp_str *s, char *buf, size_t cap);
void tp_str__printf(struct tp_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string (quotes included), at most max bytes of it (cut at a character boundary). */
void tp_str__json(struct tp_str *s, const char *v, size_t max);

/* The seed's Resource object: thread.pid, thread.tgid, thread.comm, proc.name, container.id/name ("",
 * filled by the supervisor), and with info->host_id host.id and host.name. */
void tp_render__resource(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info);
/* The seed's Attributes object: {"values":[{event.name, event.type, start_time, end_time (ms since the
 * epoch), duration (ms), count, and the extended attributes: func.stack, file.path, sock.conn,
 * futex.op, mem.size (the bytes all the calls asked for)}]}. Kept under 1000 bytes (the record's label bound): the
 * stack is cut first. */
void tp_render__attrs(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info);
/* One Chrome trace event ("ph":"X", ts and dur in us, pid = process, tid = thread, args = the
 * attributes). */
void tp_render__trace_event(struct tp_str *s, const struct tp_agg *a, const struct tp_render_info *info);
/* A file event's path from the kernel's dentry names (innermost first, up to the file system's root
 * "/"): "/a/b/c"; ".../b/c" when the walk stopped before the root; "" when there is none. */
void tp_kernel_path(const struct tp_agg *a, char *buf, size_t len);
/* futex.op of a futex op argument ("wait", "wake", ...; NULL for others). */
const char *tp_futex_op(int64_t op);

#endif
