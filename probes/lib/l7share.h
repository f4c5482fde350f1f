/* l7share.h - l7probe's per-process request aggregates as a file in the run directory, for the
 * probes that trigger on them (autotrace's l7_p99 and l7_errors): the writer (l7probe) and the reader. */
#ifndef GG_L7SHARE_H
#define GG_L7SHARE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The file (<run_dir>/l7_procs), rewritten atomically (temporary file + rename) at most once a second
 * when requests were answered since the last time, removed when l7probe stops:
 *   "gala-gopher-l7-procs 1 <writer pid> <writer start ticks> <entries dropped>\n"
 *   then one line per process and role:
 *   "<tgid> <serial> <role> <requests> <errors> <latency sum ns> <bucket>:<count> ...\n"
 * Counts are cumulative since the entry was made; serial is new for every entry (a pid reused, or an
 * entry forgotten and made again, starts from 0 under a new serial). role: 1 client, 2 server (the
 * process's side of the requests, as l7_rpc's l7_role). Buckets: L7S_BUCKETS log-linear buckets of
 * latency (request's first byte to response's last), nonzero ones only.
 */
#define L7S_FILE	"l7_procs"
#define L7S_MAGIC	"gala-gopher-l7-procs"
#define L7S_VERSION	1
#define L7S_SUB_BITS	4u  /* 16 buckets per power of two: a bucket is at most 1/16 of its lower bound wide */
#define L7S_MIN_SHIFT	10u /* below 2^10 ns (1 us): bucket 0 */
#define L7S_MAX_SHIFT	36u /* from 2^36 ns (68.7 s): the last bucket */
#define L7S_BUCKETS	(2u + (L7S_MAX_SHIFT - L7S_MIN_SHIFT) * (1u << L7S_SUB_BITS))
#define L7S_PROCS_MAX	4096u /* entries (process and role) l7probe keeps; more are counted as dropped */
#define L7S_LINE_MAX	(128u + L7S_BUCKETS * 24u)
#define L7S_ROLE_CLIENT 1
#define L7S_ROLE_SERVER 2

unsigned int l7s_bucket(uint64_t ns);
/* The bucket's bounds in ns: [lower, upper); the last bucket's upper is its lower. */
uint64_t l7s_bucket_lower(unsigned int b);
uint64_t l7s_bucket_upper(unsigned int b);
/* Quantile q (0..1) of a histogram of L7S_BUCKETS counts (interpolated within its bucket), in ns; 0
 * when the histogram is empty. */
double l7s_quantile(const uint32_t *hist, double q);

/*
 * The run directory's file: <dir of GALA_GOPHER_DATA_URL's ipc:// socket>/l7_procs under the
 * supervisor, else $GALA_GOPHER_RUN_DIR/l7_procs (a probe run by hand). 0, or -ENOENT when neither is
 * set (a probe run by hand shares nothing), -ENAMETOOLONG.
 */
int l7s_path(char *buf, size_t len);

/* ---- writer (l7probe) ----------------------------------------------------------------------------- */

struct l7s_table;
/* NULL + errno (ENOMEM). */
struct l7s_table *l7s_table__new(unsigned int max_procs);
/* Accepts NULL. */
void l7s_table__free(struct l7s_table *t);
/* One request answered: its process, role (L7S_ROLE_*), latency and whether it failed. */
void l7s_table__add(struct l7s_table *t, uint32_t tgid, int role, uint64_t lat_ns, int error);
/*
 * Write path (through path.tmp) when requests were added since the last write or force is set; forget
 * entries of processes that exited. 0 (also when nothing was due), or a negative errno.
 */
int l7s_table__publish(struct l7s_table *t, const char *path, int force);
/* Entries now, entries dropped (table full) since the start. */
void l7s_table__stats(const struct l7s_table *t, uint64_t *ret_entries, uint64_t *ret_dropped);

/* ---- reader (autotrace) --------------------------------------------------------------------------- */

struct l7s_hdr {
	uint32_t writer_pid;
	uint64_t writer_start; /* its start time in clock ticks (/proc/<pid>/stat field 22) */
	uint64_t dropped;
};

struct l7s_entry {
	uint32_t tgid;
	uint64_t serial;
	int role;
	uint64_t reqs, errs, lat_sum;
	uint32_t hist[L7S_BUCKETS]; /* cumulative counts (modulo 2^32: differences stay right) */
};

/* Called per well-formed line; a nonzero return stops the parse and is returned. */
typedef int (*l7s_entry_cb)(void *ctx, const struct l7s_entry *e);
/*
 * Parse the file's text (buf[0..len), NUL not needed). 0, -EPROTO when the header is not ours (or
 * another version), or cb's return. Malformed lines are skipped and counted in *ret_bad (may be NULL).
 */
int l7s_parse(const char *buf, size_t len, struct l7s_hdr *ret_hdr, l7s_entry_cb cb, void *ctx, uint64_t *ret_bad);

#endif
