/* bpf_util.h - user-side helpers shared by every BPF probe: set-up (libbpf logging, tracefs), choosing
 * program variants by what the running kernel offers, idempotent attach/detach, reading and deleting
 * map entries in batches, log2 histograms into records, bpf_stats. Includes probe_conf.h (options,
 * sub-probes, live configuration) and probe_scope.h (--pid/--comm, the scope filter maps). */
#ifndef GG_BPF_UTIL_H
#define GG_BPF_UTIL_H

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "gg_common.h"
#include "probe.h"
#include "probe_conf.h"
#include "probe_scope.h"

/*
 * Once per process, before opening a skeleton: libbpf's messages go to probe_log (debug ones only at
 * debug level) and tracefs is mounted when absent. 0 or negative errno (tracefs could not be
 * mounted: tracepoint programs will not attach).
 */
int gg_bpf_init(void);
/* gg_bpf_init with its failure logged as a warning (tracepoints will not attach). */
void gg_bpf_begin(void);
/* gg_bpf_autoload_available with the hooks turned off logged as a warning; how many. */
int gg_bpf_autoload(struct bpf_object *obj);

/* After a skeleton's open (X__open()) returned NULL: "cannot open the BPF object: <errno>" logged;
 * the negative errno. */
int gg_bpf_open_error(void);
/* A skeleton's load (X__load(skel) is gg_bpf_load(skel->skeleton)) after gg_bpf_autoload: a failure
 * logged as "cannot load the BPF programs: <error>". 0 or negative errno. */
int gg_bpf_load(struct bpf_object_skeleton *s);
/* gg_bpf_load(s), then a ring buffer on its map calling cb(ctx, ...) per record into *ret_rb; with rt
 * (may be NULL), the loop wakes when it is readable (probe_rt__watch_fd). A failure is logged ("ring
 * buffer: <error>"). 0 or negative errno. */
int gg_bpf_load_ringbuf(struct bpf_object_skeleton *s, struct probe_rt *rt, const struct bpf_map *map,
			ring_buffer_sample_fn cb, void *ctx, struct ring_buffer **ret_rb);

/* ---- what the running kernel offers (cached; no side effects) ---------------------------------- */

/* 1 when vmlinux BTF has the raw tracepoint `name` (typedef btf_trace_<name>), usable by tp_btf and
 * raw_tp programs; 0 when not (or no vmlinux BTF). */
int gg_bpf_has_tp_btf(const char *name);
/* Number of arguments of raw tracepoint `name` as tp_btf programs see them (the prototype's, less
 * its leading void *), to choose between variants of a program when a tracepoint grew arguments;
 * -ENOENT when unknown. */
int gg_bpf_tp_btf_nargs(const char *name);
/* Name of value in kernel enum enum_name (from vmlinux BTF), without strip_prefix when it starts
 * with it (may be NULL), into buf (cut to len). 0, or -ENOENT when unknown (buf gets the number). */
int gg_btf_enum_name(const char *enum_name, long long value, const char *strip_prefix, char *buf, size_t len);
/* Set-up is over (programs loaded and attached): free the vmlinux BTF the checks above parsed (5 MiB;
 * loaded again if a check runs later) and return freed heap to the kernel (malloc_trim).
 * gg_bpf_apply_hooks calls it; a probe that does not use it calls it after attaching. */
void gg_bpf_setup_done(void);
/* 1 when tracefs has events/<category>/<name>, 0 when not. */
int gg_bpf_has_tracepoint(const char *category, const char *name);
/* 1 when kprobes are usable (tracefs kprobe_events exists) and func is traceable (listed in
 * available_filter_functions), 0 otherwise. */
int gg_bpf_has_kprobe(const char *func);

/* 1 when the kernel offers the hook of prog's section (tp_btf/, raw_tp/, tp/, tracepoint/, kprobe/,
 * kretprobe/; other sections are assumed present), 0 when not. */
int gg_bpf_prog_hook_available(const struct bpf_program *prog);

/*
 * After open, before load: turn autoload off for each program whose hook the running kernel lacks.
 * Returns how many were turned off; their names, comma separated, go to ret_off (cut to len, may be
 * NULL). Never fails.
 */
int gg_bpf_autoload_available(struct bpf_object *obj, char *ret_off, size_t len);

/*
 * Two variants of one handler (e.g. a kprobe and a tracepoint): keep `preferred` when it will load
 * (autoload still on), else `fallback`; the other one is turned off. Either may be NULL. Returns 1
 * when preferred is kept, 0 when fallback is, -ENOENT when neither will load.
 */
int gg_bpf_prefer(struct bpf_program *preferred, struct bpf_program *fallback);

/* ---- attach / detach --------------------------------------------------------------------------- */

/*
 * Attach a loaded program into *link (a skeleton's skel->links.<prog>, destroyed with the skeleton)
 * unless it is attached already or not loaded (autoload off: -ENOENT). 0 or negative errno.
 */
int gg_bpf_attach(struct bpf_program *prog, struct bpf_link **link);
/* Detach (destroy *link and set it to NULL); accepts a NULL *link. */
void gg_bpf_detach(struct bpf_link **link);

/* A program that runs only while one of the sub-probes in `need` is on. */
struct gg_bpf_hook {
	struct bpf_program *prog;
	struct bpf_link **link;
	unsigned int need; /* sub-probe bits */
};
/* gg_bpf_apply_hooks with its failure logged as a warning ("cannot attach <program>: <error>"). */
int gg_bpf_attach_hooks(const struct gg_bpf_hook *hooks, size_t n, unsigned int subprobes);
/* Attach the hooks the sub-probe set `subprobes` needs and detach the others (programs not loaded
 * are skipped). Every hook is tried; returns 0, or the first attach error with *ret_failed (may be
 * NULL) pointing at its hook. */
int gg_bpf_apply_hooks(const struct gg_bpf_hook *hooks, size_t n, unsigned int subprobes,
		       const struct gg_bpf_hook **ret_failed);

/* ---- maps ------------------------------------------------------------------------------------- */

/* Where a dump of a map stands between two gg_bpf_map_dump calls; zero it to start from the top. */
struct gg_bpf_dump_cursor {
	int started;
	int done; /* set when the whole map has been read */
	int slow; /* the kernel lacks the batch commands for this map */
	uint32_t key_size;
	uint64_t token[8]; /* batch token, or the last key read (slow path) */
};

/*
 * Read up to max entries of map fd into keys[] and vals[] (key_size and val_size bytes each; for
 * per-CPU maps val_size is round_up(value_size, 8) * libbpf_num_possible_cpus()), continuing where
 * cur left off; cur->done is set once the end is reached. With del, the entries read are also
 * deleted (BPF_MAP_LOOKUP_AND_DELETE_BATCH), so nothing counted between read and delete is lost.
 * Uses the batch commands; falls back to get_next_key + lookup (+ delete) on kernels without them.
 * *ret_n is the number of entries read. 0 or negative errno (-EINVAL: key_size > 64).
 * Typical use: `struct gg_bpf_dump_cursor c = {0}; while (!c.done) { dump(..., &c, ...); use(n); }`
 */
int gg_bpf_map_dump(int fd, struct gg_bpf_dump_cursor *cur, void *keys, void *vals, uint32_t key_size,
		    uint32_t val_size, uint32_t max, uint32_t *ret_n, int del);
/* A whole map (at most max entries) into keys[] and vals[] by gg_bpf_map_dump; with del, what was read is
 * deleted. *ret_n: entries read (also on error). 0 or the first error. */
int gg_bpf_map_dump_all(int fd, void *keys, void *vals, uint32_t key_size, uint32_t val_size, uint32_t max,
			uint32_t *ret_n, int del);
/* gg_bpf_map_dump_all without deleting, a read error logged as a warning ("reading <what>: <error>"):
 * the count of entries read. */
uint32_t gg_bpf_map_read(int fd, void *keys, void *vals, uint32_t key_size, uint32_t val_size, uint32_t max,
			 const char *what);
/* Delete n keys (key_size bytes each); keys already gone are not an error. 0 or negative errno. */
int gg_bpf_map_delete_keys(int fd, const void *keys, uint32_t key_size, uint32_t n);

/* Where a probe reads a map: room for max keys of key_size bytes and max values of val_size bytes
 * (for per-CPU maps, as gg_bpf_map_dump says). */
struct gg_bpf_map_buf {
	void *keys;
	void *vals;
	uint32_t key_size;
	uint32_t val_size;
	uint32_t max;
};
/* b's arrays (zeroed). 0 or -ENOMEM (what was allocated is gg_bpf_map_buf__free's to free). */
int gg_bpf_map_buf__alloc(struct gg_bpf_map_buf *b, uint32_t key_size, uint32_t val_size, uint32_t max);
/* Free b's arrays; b is zeroed (freeing it again does nothing). */
void gg_bpf_map_buf__free(struct gg_bpf_map_buf *b);
/* gg_bpf_map_read of map into b, a read error logged with the map's name: the count of entries read. */
uint32_t gg_bpf_map_buf__read(struct gg_bpf_map_buf *b, const struct bpf_map *map);
/* After n entries of map were read into b: delete those whose process is gone (its __u32 tgid at tgid_off
 * in the key: /proc has no such pid), their keys moved to the front of b->keys. 0 or negative errno. */
int gg_bpf_map_buf__forget_gone(struct gg_bpf_map_buf *b, const struct bpf_map *map, uint32_t n, size_t tgid_off);
/* gg_bpf_map_dump of map into b, up to b->max entries at a time. */
int gg_bpf_map_buf__dump(struct gg_bpf_map_buf *b, const struct bpf_map *map, struct gg_bpf_dump_cursor *cur,
			 uint32_t *ret_n, int del);

/* ---- log2 histograms (gg_common.bpf.h gg_hist_add) ------------------------------------------- */

/*
 * Append a log2 histogram (slots[GG_LOG2_SLOTS], per-slot counts as gg_hist_add makes them) to a
 * record as n finite buckets: bucket 0 holds slots 0..first (values below 2^(first+1)), bucket k
 * holds slot first+k (values below 2^(first+k+1)); later slots are the overflow. Bounds are
 * multiplied by scale (e.g. 1e-3 for ns counted, us reported). sum is already in the reported unit.
 * n + first must be <= GG_LOG2_SLOTS and n >= 1 (else the record gets -EINVAL).
 */
void gg_hist_rec(struct probe_rec *r, const __u64 *slots, unsigned int first, unsigned int n, double scale, double sum);
/* Slot of v in a log2 histogram, as gg_log2_slot in gg_common.bpf.h (for user-side histograms). */
unsigned int gg_hist_slot(uint64_t v);
/* Sum of the counts of a log2 histogram. */
uint64_t gg_hist_count(const __u64 *slots);
/* Approximate quantile q (0..1) of a log2 histogram: the upper bound (2^(slot+1)) of the slot where
 * it falls, in the counted unit; 0 when empty. */
uint64_t gg_hist_quantile(const __u64 *slots, double q);

/* ---- events (README "Events": the supervisor's reserved event_v2 table) ------------------------- */

/* event_v2's fields: entity_name, entity_id, metric (keys), severity, body, body_zh, labels,
 * event_type. Not in any .meta file: the supervisor builds it in. */
extern const struct probe_table gg_tbl_event_v2;
/* Append "name=value" to an event_v2 labels string (joined by '&', value URL-escaped) in buf of len
 * bytes, *used bytes used so far; what does not fit is left out. */
void gg_event_label(char *buf, size_t len, size_t *used, const char *name, const char *value);
/* Emit an event_v2 record (event_type "sys"); severity is INFO, WARN, ERROR or FATAL. body_zh and
 * labels may be "" or NULL. 0 or probe_rt__emit's error. */
int gg_event_emit(struct probe_rt *rt, const char *entity, const char *entity_id, const char *metric,
		  const char *severity, const char *body, const char *body_zh, const char *labels);

/* ---- bpf_stats ---------------------------------------------------------------------------------- */

/* Turn on run-time statistics (BPF_ENABLE_STATS) for as long as the returned fd is open; negative
 * errno when refused. Same effect as sysctl kernel.bpf_stats_enabled=1, without changing it. */
int gg_bpf_stats_enable(void);
/* --bpf-stats: gg_bpf_stats_enable when on (a refusal logged as a warning); the fd, or a negative
 * errno (-ENODATA when off). */
int gg_bpf_stats_start(int on);
/* Run time (ns) and run count of a loaded program (0 when stats are off). 0 or negative errno. */
int gg_bpf_prog_stats(const struct bpf_program *prog, uint64_t *ret_run_ns, uint64_t *ret_run_cnt);
/* Per-program state kept between two gg_bpf_stats_fmt calls (zero-initialised). */
struct gg_bpf_stats_prev {
	uint64_t run_ns;
	uint64_t run_cnt;
};
/*
 * Describe each loaded program's runs and ns per run since the previous call into buf as
 * "name=runs/ns_per_run ..." (cut to len); prev holds nprev entries, one per program in object order.
 * Returns the number of programs described.
 */
int gg_bpf_stats_fmt(struct bpf_object *obj, struct gg_bpf_stats_prev *prev, size_t nprev, char *buf, size_t len);
/* --bpf-stats every period: gg_bpf_stats_fmt at info level ("bpf stats (runs/ns per run): ..."). */
void gg_bpf_stats_log(struct bpf_object *obj, struct gg_bpf_stats_prev *prev, size_t nprev);

#endif
