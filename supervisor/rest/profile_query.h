/* profile_query.h - the flame graph query API (in the spirit of DeepFlow's ProfileTracing): merges the
 * profiles stackprobe keeps in its store (<flame_dir>/store/<event>/<from_ms>-<until_ms>.prof) for one
 * process (by name or pid) or the whole host ("Total") over a time range into a JSON node list.
 * Pure functions over the store directory: no logging, no supervisor state. */
#ifndef GG_PROFILE_QUERY_H
#define GG_PROFILE_QUERY_H

#include <stddef.h>
#include <stdint.h>

#define PQ_APP_MAX	     256u
#define PQ_MAX_NODES_DEFAULT 20000u
#define PQ_MAX_NODES_LIMIT   200000u
#define PQ_DEFAULT_RANGE_S   3600 /* without time_start: the last hour */

/* The pod and container names of process tgid (NULL or "" when none), for the Total view. */
typedef void (*pq_ident_fn)(void *ctx, uint32_t tgid, const char **ret_pod, const char **ret_container);

/* A query. */
struct pq_request {
	char app[PQ_APP_MAX];	      /* process name (comm), pid (digits) or "Total" */
	int event;		      /* 0 on-cpu, 1 off-cpu, 2 mem, 3 mem-alloc, 4 mem-live (stackprobe's events) */
	int64_t time_start, time_end; /* unix seconds, inclusive */
	unsigned int max_nodes;	      /* more nodes are folded into their parent's self value */
	char profile_id[32];	      /* "<from_ms>-<until_ms>": only that stored profile (autotrace's captures) */
	/* optional: Total's processes in a container go under "[Pod] <pod>" and "[Con] <container>" */
	pq_ident_fn ident;
	void *ident_ctx;
};

/*
 * Parse a GET query: app (alias app_service), event (alias profile_event_type: on-cpu, off-cpu, mem,
 * mem-alloc, mem-live; also oncpu, offcpu, mem_alloc, mem_live; mem-live answers the newest snapshot in
 * the range, not a sum), time_start / time_end (alias from / until; unix seconds; default the last
 * hour up to now_s), max_nodes, profile_id (one stored profile, "<from_ms>-<until_ms>" as autotrace names
 * its captures: the time range is the profile's, app defaults to Total and event to on-cpu). 0, or
 * -EINVAL with a message in err.
 */
int profile_query__parse_args(unsigned int nargs, const char *const *names, const char *const *values, int64_t now_s,
			      struct pq_request *ret, char *err, size_t errlen);
/* Parse a POST body as DeepFlow sends it: {"app_service", "profile_event_type", "time_start",
 * "time_end"} (profile_language_type and tag_filter are accepted and ignored). 0 or -EINVAL. */
int profile_query__parse_json(const char *body, size_t len, int64_t now_s, struct pq_request *ret, char *err,
			      size_t errlen);

/*
 * Run a query over store_dir (<flame_dir>/store). *ret_json (malloc'd, NUL-terminated) is
 * {"OPT_STATUS": "SUCCESS", "DESCRIPTION": "", "result": [{"profile_location_str", "node_id",
 * "parent_node_id", "self_value", "total_value"}...], "debug": null}. The root is the process name
 * (or "Total") with node_id "" and parent_node_id "-1"; for a process the second layer is its threads
 * ("[t] name"), then the stack from the outermost frame (kernel frames "[k] f", library frames
 * "[l] f"); for Total the layers are "[p] process" and "[t] thread", under "[Pod] pod" and
 * "[Con] container" for a process in a container (with req->ident). Values are microseconds (on-cpu:
 * samples x sampling period; off-cpu: blocked time), page faults (mem) or bytes (mem-alloc). 0, -ENOMEM.
 */
int profile_query__run(const char *store_dir, const struct pq_request *req, char **ret_json, size_t *ret_len);

/* {"OPT_STATUS": "FAIL", "DESCRIPTION": msg, "result": null, "debug": null}; NULL on ENOMEM. */
char *profile_query__error_json(const char *msg);

/*
 * The whole request: GET with query arguments or POST with a JSON body. Sets *ret_status (200, 400,
 * 405, 500) and a malloc'd JSON *ret_body. For the REST route GET|POST /flamegraph/query (alias
 * /v1/profile/ProfileTracing).
 */
void profile_query__handle(const char *store_dir, const char *method, const char *body, size_t body_len,
			   unsigned int nargs, const char *const *names, const char *const *values, int64_t now_s,
			   unsigned int *ret_status, char **ret_body, size_t *ret_len);
/* The same with the container layers of Total (see pq_request.ident). */
void profile_query__handle_ident(const char *store_dir, const char *method, const char *body, size_t body_len,
				 unsigned int nargs, const char *const *names, const char *const *values, int64_t now_s,
				 pq_ident_fn ident, void *ident_ctx, unsigned int *ret_status, char **ret_body,
				 size_t *ret_len);

#endif
