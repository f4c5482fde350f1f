/* stackprobe.h - stackprobe's parts (user half): sampling control, profile aggregation and its writers
 * (folded, SVG, pprof, profile store, Pyroscope). */
#ifndef GG_STACKPROBE_INT_H
#define GG_STACKPROBE_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../../bpf/stackprobe.h"
#include "probe_outdir.h"
#include "bpf_util.h"
#include "fsutil.h"
#include "symbolizer.h"
#include "uproc.h"

#define SP_SERVER_MAX 256u

/* ---- output buffers (util.c) ------------------------------------------------------------------------- */

/* A growable output buffer (text or bytes); the first error sticks. */
struct sp_buf {
	char *s;
	size_t len, cap;
	int err;
};

/* Room for more bytes and a NUL after them; on failure b->err becomes -ENOMEM (and stays). */
void sp_buf__reserve(struct sp_buf *b, size_t more);

/* ---- configuration -------------------------------------------------------------------------------- */

/* What the probe does; argv gives the baseline, a live configuration overrides it. */
struct sp_conf {
	unsigned int events;	      /* 1 << SP_EV_* */
	unsigned int report_period_s; /* stackprobe_stats records */
	unsigned int perf_period_ms;  /* oncpu sampling period */
	unsigned int svg_period_s;    /* folded + SVG + pprof files */
	unsigned int store_period_s;  /* profile store files (query API) */
	unsigned int pyro_period_s;   /* Pyroscope upload */
	unsigned int retention_s;     /* profile store retention */
	unsigned int min_block_us;    /* off-CPU threshold */
	int multi_instance;
	int native_stack; /* accepted for compatibility (Java); no effect */
	int mem_alloc;	  /* with the mem sub-probe: allocator uprobes too (events gets SP_EV_MEM_ALLOC) */
	int mem_live;	  /* with the mem sub-probe: live bytes per stack (events gets SP_EV_MEM_LIVE) */
	int dwarf_unwind; /* user stacks by the .eh_frame tables (else frame pointers only) */
	char svg_dir[PATH_MAX];
	char flame_dir[PATH_MAX];
	char pyroscope[SP_SERVER_MAX]; /* host:port, "" = off */
};

extern const char *const sp_event_names[SP_EV_NR];	 /* "oncpu", "offcpu", "mem", "mem_alloc", "mem_live" */
extern const char *const sp_event_query_names[SP_EV_NR]; /* "on-cpu", "off-cpu", "mem", "mem-alloc", "mem-live" */
extern const char *const sp_event_units[SP_EV_NR];	 /* "samples", "us", "faults", "bytes", "bytes" */

/* ---- allocator uprobes (ualloc.c) ---------------------------------------------------------------- */

/* Processes with their own allocator uprobes at most (the rest of a larger scope is skipped). */
#define SP_UALLOC_MAX_PROCS 256u

/* What the allocator uprobes are for (bits; the BPF side's alloc_mode): bytes requested (mem_alloc),
 * bytes still held (mem_live: the returns and free are trapped too). */
#define SP_UALLOC_VOLUME 1u
#define SP_UALLOC_LIVE	 2u

struct sp_ualloc;
struct bpf_program;
/* NULL + errno. The programs are the skeleton's sp_malloc, sp_calloc, sp_realloc, sp_memalign,
 * sp_posix_memalign, sp_alloc_ret, sp_free. */
/* Before the programs are loaded: multi-uprobe links where the kernel has them (uproc_prefer_multi). */
int sp_ualloc__prepare(struct bpf_program *const *progs, unsigned int n);
struct sp_ualloc *sp_ualloc__new(struct bpf_program *malloc_prog, struct bpf_program *calloc_prog,
				 struct bpf_program *realloc_prog, struct bpf_program *memalign_prog,
				 struct bpf_program *posix_memalign_prog, struct bpf_program *ret_prog,
				 struct bpf_program *free_prog);
void sp_ualloc__free(struct sp_ualloc *u);
/* Attach to what scope holds now (system-wide when scope->all), detach from processes that left or
 * exited, re-attach after an exec into another allocator file or a change of mode; detach everything
 * when mode is 0. */
int sp_ualloc__sync(struct sp_ualloc *u, const struct gg_scope *scope, unsigned int mode);
/* links, procs (or allocator files, system-wide), skipped (beyond SP_UALLOC_MAX_PROCS at the last
 * sync), attach_errors, libs_resolved (allocator files read). */
void sp_ualloc__stats(const struct sp_ualloc *u, struct uproc_stats *ret);

/* ---- Python frames (pyframes.c) ------------------------------------------------------------------ */

#define SP_PY_NAME_MAX 160 /* "py:qualname (file.py)" */

struct sp_py;
/* The skeleton's py_procs and py_stacks. NULL + errno. */
struct sp_py *sp_py__new(int procs_fd, int stacks_fd);
void sp_py__free(struct sp_py *p);
/* Register the CPython processes of scope (system-wide: all) with the BPF side, forget those gone. */
void sp_py__sync(struct sp_py *p, const struct gg_scope *scope);
unsigned int sp_py__registered(const struct sp_py *p);
/* The names of a sample's Python frames (key.pystack), innermost first, and whether each is an entry
 * frame (the first Python frame of a C-level call into the interpreter). Returns how many. */
unsigned int sp_py__frames(struct sp_py *p, uint32_t tgid, uint32_t id, char (*names)[SP_PY_NAME_MAX],
			   unsigned char *entry, unsigned int max);
/* ---- .eh_frame unwind tables (unwind.c; the rows from ehframe.c) ---------------------------------- */

struct sp_unwind_stats {
	uint64_t procs;	    /* processes with tables now */
	uint64_t files;	    /* ELF files with rows loaded now */
	uint64_t rows;	    /* rows loaded now (of SP_UW_ROWS) */
	uint64_t overflow;  /* files left without rows since start: too many rows, or the rows table full */
	uint64_t resets;    /* times the full rows table was emptied and refilled on demand */
	uint64_t builds;    /* process tables built since start */
	uint64_t rebuilds;  /* of those, after an exec, dlopen or pid reuse */
	uint64_t elf_reads; /* ELF files parsed since start */
	uint64_t errors;    /* unexpected failures: unreadable ELF, BPF map update */
};

struct sp_unwind;
/* The BPF side's uw_rows (BPF_F_MMAPABLE array), uw_procs and uw_want maps. NULL + errno. */
struct sp_unwind *sp_unwind__new(int rows_fd, int procs_fd, int want_fd);
void sp_unwind__free(struct sp_unwind *u);
/* Build the tables the BPF side asked for since the last call; forget processes that exited. */
void sp_unwind__tick(struct sp_unwind *u, uint64_t now_ms);
/* Build the tables of these processes now (an explicit scope), before their first sample. */
void sp_unwind__prepare(struct sp_unwind *u, const uint32_t *tgids, size_t n, uint64_t now_ms);
void sp_unwind__stats(const struct sp_unwind *u, struct sp_unwind_stats *ret);

/* ---- sampling (sampler.c) ------------------------------------------------------------------------- */

/* One aggregated stack from the kernel: frames innermost first. */
struct sp_sample {
	enum sp_event event;
	uint32_t tgid, pid;
	const char *comm, *pcomm; /* thread and process names (NUL-terminated) */
	const uint64_t *kips;
	unsigned int kn;
	const uint64_t *uips;
	unsigned int un;
	int kstack_id, ustack_id; /* ids valid for this drain only; -1 for off-CPU records */
	/* Python frames (oncpu of a CPython process), innermost first; entry: see sp_py__frames */
	const char (*py)[SP_PY_NAME_MAX];
	const unsigned char *py_entry;
	unsigned int pyn;
	uint64_t value; /* samples, blocked microseconds, faults */
	uint32_t cpu;	/* oncpu with sp_sampler__set_cpu_keys on, and offcpu (switch-in): the CPU; else 0 */
};

typedef int (*sp_sample_cb)(void *ctx, const struct sp_sample *smp);

struct sp_sampler_stats {
	uint64_t st[SP_ST_NR];	    /* the kernel's counters (enum sp_stat), summed over CPUs */
	uint64_t drained[SP_EV_NR]; /* aggregated stacks read */
	struct uproc_stats ua;
	struct sp_unwind_stats uw;
};

struct sp_sampler;
/* Load the BPF object (nothing attached yet). NULL + errno. */
struct sp_sampler *sp_sampler__new(void);
void sp_sampler__free(struct sp_sampler *s);
/* Attach what events asks for, detach the rest; the perf events are re-opened when the period changes. */
int sp_sampler__apply(struct sp_sampler *s, unsigned int events, unsigned int perf_period_ms, unsigned int min_block_us,
		      int dwarf_unwind);
int sp_sampler__set_scope(struct sp_sampler *s, const struct gg_scope *scope);
/* The scope of a live configuration, when it has one: set, and copied into *ret_scope. 1 when set, 0
 * when msg has none, a negative errno (logged) when it could not be set. */
int sp_sampler__config_scope(struct sp_sampler *s, const struct gg_ctrl_msg *msg, struct gg_scope *ret_scope);
/* Periodic upkeep (allocator uprobes follow exec and exit of the processes in scope). */
void sp_sampler__tick(struct sp_sampler *s, uint64_t now_ms);
/* The unwind tables asked for since the last call (sp_sampler__tick does it too). */
void sp_sampler__unwind_tick(struct sp_sampler *s, uint64_t now_ms);
/* Switch generations and hand every stack aggregated in the previous one to cb, plus the off-CPU
 * records waiting in the ring buffer. */
int sp_sampler__drain(struct sp_sampler *s, sp_sample_cb cb, void *ctx);
void sp_sampler__stats(struct sp_sampler *s, struct sp_sampler_stats *ret);
/* On-CPU stacks aggregated per CPU too (sp_sample.cpu), for a consumer that bounds memory per CPU. */
void sp_sampler__set_cpu_keys(struct sp_sampler *s, int on);

/* ---- mem_live maps from user space (live.c) -------------------------------------------------------- */

struct sp_live;
/* The skeleton's mem_live maps: live_sites, live_ptrs, live_stacks, and for mmap/brk live_ustacks,
 * mm_procs, mm_pend. NULL + errno. */
struct sp_live_fds {
	int sites, ptrs, stacks, ustacks, mm_procs, mm_pend;
};
struct sp_live *sp_live__new(const struct sp_live_fds *fds);
void sp_live__free(struct sp_live *l);
/* Hand every site holding bytes to cb (SP_EV_MEM_LIVE, value = bytes not freed); delete empty sites,
 * those of exited processes with their blocks, and unused stacks. */
int sp_live__drain(struct sp_live *l, sp_sample_cb cb, void *ctx, uint64_t *ret_drained);
/* Forget everything (mem_live turned off: the next start counts from scratch). */
void sp_live__reset(struct sp_live *l);

/* ---- aggregation (profile.c) ---------------------------------------------------------------------- */

/* A table of (a, b, string) -> summed value, bounded in entries and bytes. */
struct ftab_ent {
	uint64_t value;
	uint32_t a, b;
	uint32_t hash;
	uint32_t len;
	char key[];
};

struct ftab {
	struct ftab_ent **slots;
	size_t cap, n, bytes;
	size_t max_n, max_bytes;
	uint64_t dropped; /* values that did not fit */
};

void ftab__init(struct ftab *t, size_t max_n, size_t max_bytes);
int ftab__add(struct ftab *t, uint32_t a, uint32_t b, const char *key, size_t len, uint64_t value);
/* Entry lookup (NULL when absent). */
struct ftab_ent *ftab__find(struct ftab *t, uint32_t a, uint32_t b, const char *key, size_t len);
void ftab__clear(struct ftab *t);
void ftab__free(struct ftab *t);
/* Entries in a new array (caller frees the array, not the entries), sorted by key when sorted != 0. */
struct ftab_ent **ftab__list(const struct ftab *t, int sorted, size_t *ret_n);

/* Accumulators of one event type: the profile store (per thread) and the folded outputs. */
struct sp_acc {
	struct ftab store;  /* a = tgid, b = tid, key = "pcomm\ttcomm\tcontainer\tframes" (frames with [k]/[l]) */
	struct ftab period; /* a = tgid, key = folded line without value (for folded, SVG, pprof) */
	struct ftab pyro;   /* same, for the Pyroscope upload */
	uint64_t store_from_ms, period_from_ms, pyro_from_ms;
	uint64_t frames, unknown_frames; /* totals since start */
	uint64_t value_total;
};

struct sp_profile {
	struct symbolizer *sym;
	struct sp_acc acc[SP_EV_NR];
	int pyro_on; /* a Pyroscope server is configured: fill the acc[].pyro tables (else they stay empty) */
	char *line;  /* scratch for one stack */
	size_t line_cap;
};

int sp_profile__init(struct sp_profile *p);
/* What stackprobe and autotrace start with: sp_profile__init(p), sp_sampler__new into *ret_s (freed by
 * the caller, also after a failure), cpu_keys (sp_sampler__set_cpu_keys), the scope (a failure to set
 * it only warned). Errors are logged. 0 or negative errno. */
int sp_profile__start(struct sp_profile *p, struct sp_sampler **ret_s, int cpu_keys, const struct gg_scope *scope);
void sp_profile__free(struct sp_profile *p);
/* Start of a drain: new symbolizer round, caches reset. */
void sp_profile__begin(struct sp_profile *p);
/* An sp_sample_cb: symbolize and add to the accumulators. */
int sp_profile__add(void *ctx, const struct sp_sample *smp);

/* ---- writers -------------------------------------------------------------------------------------- */

/* Folded-stack lines of one ftab (optionally only tgid) as "stack value\n" text. */
int sp_folded__build(struct ftab_ent **ents, size_t n, int only_tgid, uint32_t tgid, char **ret, size_t *ret_len);

/* One folded line: ';'-separated frames (root first) and its value. */
struct sp_fline {
	char *stack;
	uint64_t value;
};
/* Parse "stack value\n" text in place (buf is modified; lines point into it). Lines without a
 * positive value are skipped. The array is the caller's to free. */
int sp_folded__parse(char *buf, size_t len, struct sp_fline **ret, size_t *ret_n);

/* SVG flame graph of folded text (out_svg.c). */
struct sp_svg_opts {
	const char *title;
	const char *subtitle;
	const char *unit;  /* "samples", "us", "faults", "bytes" */
	double unit_scale; /* value -> shown number (1 when the unit is the value's) */
};
/* name in the directory dfd (probe_outdir.h: written to name.tmp, then renamed) */
int sp_svg__write(int dfd, const char *name, const char *folded, size_t len, const struct sp_svg_opts *opts);

/* gzipped pprof profile.proto of folded text (out_pprof.c). */
struct sp_pprof_opts {
	const char *sample_type; /* "samples", "offcpu", "page_faults" */
	const char *sample_unit; /* "count", "nanoseconds" */
	int64_t value_scale;	 /* folded value -> pprof value (e.g. us -> ns: 1000) */
	const char *period_type, *period_unit;
	int64_t period;
	int64_t time_ns, duration_ns;
	/* oncpu: a second value "cpu"/"nanoseconds" = samples * period */
	int with_cpu_ns;
};
int sp_pprof__encode(const char *folded, size_t len, const struct sp_pprof_opts *opts, unsigned char **ret,
		     size_t *ret_len);
int sp_pprof__write(int dfd, const char *name, const char *folded, size_t len, const struct sp_pprof_opts *opts);
/* The sample and period types of an event kind's profile (on-CPU: samples of period_ms, and cpu ns). */
void sp_pprof__event_opts(enum sp_event ev, unsigned int period_ms, struct sp_pprof_opts *po);

/* Pyroscope /ingest upload (out_pyro.c). 0, or negative errno; *ret_status the HTTP status. */
int sp_pyro__upload(const char *server, const char *name, uint64_t from_s, uint64_t until_s, const char *units,
		    unsigned int sample_rate, const char *body, size_t len, unsigned int timeout_ms, int *ret_status);

/* Profile store (store.c): one file per store period and event, removed after the retention. */
int sp_store__write(const char *flame_dir, enum sp_event ev, uint64_t from_ms, uint64_t until_ms,
		    unsigned int period_us, struct ftab *t);
int sp_store__expire(const char *flame_dir, uint64_t now_ms, unsigned int retention_s, uint64_t max_bytes);

/* Keep the newest max files (by name, which starts with a timestamp) of directory dfd whose names end in
 * suffix. */
void sp_dir_trim(int dfd, const char *suffix, unsigned int max);

#endif
