/* at_ctx.h - autotrace's state (the ring of raw stacks, the triggers, the capture) and what capture.c
 * offers main.c: the ring, the sampling rates, the scheduler programs, the capture and its profile. */
#ifndef GG_AT_CTX_H
#define GG_AT_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "../../bpf/autotrace.h"
#include "l7share.h"
#include "../stackprobe/stackprobe.h" /* the sampler, symbolizer and writers (linked in) */
#include "at_conf.h"
#include "probe.h"

#define PROG	"autotrace"
#define TICK_MS 1000u /* while capturing */
/* Between captures: drain, evaluate and report every 2 s (half the fixed cost of a drain and of the
 * /proc reads; the kernel's maps hold 5 s of samples at the ring's rate) */
#define IDLE_TICK_MS	     2000u
#define SLOT_MAX_ENTS	     8192u
#define PROFILE_ENTS	     65536u
#define PROFILE_BYTES	     (64ull << 20)
#define STORE_MAX_BYTES	     (256ull << 20)
#define FILES_KEPT	     256u /* per kind of file in <flame_dir>/profiles */
#define PROCS_MAX	     256u /* processes followed by the per-process triggers */
#define RSS_HIST	     64u  /* evaluations of RSS per process (rss_hold is cut to what they span) */
#define PROC_IDLE_MS	     10000u
#define HOUR_MS		     3600000ull
#define CAPTURES_HOUR	     60u
#define FIRST_CONFIG_WAIT_MS 3000u

/* The two event kinds a slot holds: on-CPU (always) and off-CPU (while capturing). */
enum { AT_ON = 0, AT_OFF = 1, AT_EVN = 2 };
static const enum sp_event slot_ev[AT_EVN] = {SP_EV_ONCPU, SP_EV_OFFCPU};

/* One raw stack from a drain, as the kernel aggregated it (frames follow: kn kernel, then un user). Kept
 * unsymbolized: symbols are looked up only when a capture is written, so the always-on state costs a
 * copy per stack, not a symbolization. */
struct at_raw {
	uint32_t tgid, pid;
	uint64_t value;
	uint16_t kn, un;
	uint8_t event; /* enum sp_event */
	uint8_t pad[3];
	char comm[SP_COMM_LEN], pcomm[SP_COMM_LEN];
	uint64_t ips[];
};

/* One drain (a second) of raw stacks. */
struct at_slot {
	uint64_t from_ms, until_ms; /* wall clock */
	unsigned int period_ms;	    /* on-CPU sampling period of these samples (a sample weighs this many ms) */
	unsigned char *buf;	    /* struct at_raw records, 8-byte aligned */
	size_t len, cap;
	size_t *cpu_len; /* bytes of records per CPU (ring_ncpu entries, the ring's array): each is bounded */
};

/* Why stack samples were dropped (autotrace_health). */
enum { AT_DROP_CPU = 0, AT_DROP_NOMEM, AT_DROP_PROFILE, AT_DROP_NR };

/* Where the l7 triggers' numbers come from (autotrace_health.l7_source). */
enum at_l7_src {
	AT_L7_OFF = 0,	  /* no l7 trigger on */
	AT_L7_OK,	  /* l7probe's file read */
	AT_L7_NO_PROBE,	  /* no file, or its writer is gone: l7probe is not running */
	AT_L7_NO_RUN_DIR, /* run by hand without GALA_GOPHER_RUN_DIR: nothing is shared */
	AT_L7_BAD,	  /* the file is not one we read */
};

/* A process's cumulative l7 counts at one evaluation. */
struct at_l7snap {
	uint64_t ms; /* monotonic */
	uint64_t reqs, errs;
	uint32_t hist[L7S_BUCKETS];
};
#define AT_L7_SNAPS    8u  /* snapshots kept per process: the hold window is cut into at most 7 steps */
#define AT_L7_PROCS    64u /* processes followed by the l7 triggers */
#define AT_L7_FILE_MAX (8u << 20)

/* A process serving requests, as l7probe's file lists it (its server role). */
struct at_l7proc {
	uint32_t tgid;
	uint64_t serial; /* l7probe's entry: a new one starts from scratch */
	char comm[16];
	int in_scope;
	unsigned int scope_gen; /* ctx->scope_gen in_scope was decided at */
	int seen;		/* in the last file read */
	struct at_l7snap cur;
	struct at_l7snap snaps[AT_L7_SNAPS];
	unsigned int nsnaps; /* ring: the newest at (nsnaps - 1) % AT_L7_SNAPS */
	double value[2];     /* p99 ms, error percent over the window (0 when it decides nothing) */
	uint64_t win_reqs[2], win_errs[2], win_ms[2];
	uint64_t fire_ms[2], capture_ms;
};

extern const char *const at_trig_names[AT_TR_NR]; /* "host_cpu", ... */
extern const char *const at_trig_units[AT_TR_NR]; /* "percent", ... */

/* A host-wide trigger's state (per-process triggers keep theirs in struct at_proc). */
struct at_tstate {
	double value;	   /* last value (per-process: the highest process's) */
	uint32_t tgid;	   /* per-process: whose value */
	uint64_t above_ms; /* monotonic ms since the value is at or above the threshold; 0: below */
	uint64_t fire_ms;  /* last firing; 0: never */
	uint64_t fired, suppressed, captures;
};

/* A process followed by the per-process triggers (seen on a CPU lately). */
struct at_proc {
	uint32_t tgid;
	uint64_t start_ticks;
	char comm[16];
	uint64_t seen_ms; /* last drain it had samples in */
	uint64_t ticks, ticks_ms;
	double cpu_pct, rss_rate;
	uint64_t rss[RSS_HIST], rss_ms[RSS_HIST];
	unsigned int nrss;    /* evaluations of RSS in rss[] and their times (ring, newest at (nrss - 1) % RSS_HIST) */
	uint64_t above_ms[2]; /* proc_cpu, rss */
	uint64_t fire_ms[2];  /* cooldowns per process */
	uint64_t capture_ms;  /* last capture for this process; 0: none */
};

/* What a process's cooldowns and proc_gap need once it left the table (idle a while, then busy
 * again): kept for the last RECENT_MAX processes that fired. */
#define RECENT_MAX 64u
struct at_recent {
	uint32_t tgid;
	uint64_t start_ticks;
	uint64_t fire_ms[2], capture_ms;
};

/* The capture in progress. */
struct at_capture {
	int on;
	enum at_trig trig;
	uint32_t tgid;
	char comm[16];
	double value;
	unsigned int thr, hold_s;
	uint64_t trigger_wall_ms, until_mono_ms;
	int l7; /* an l7 trigger: the window's numbers below go into the event */
	uint64_t l7_reqs, l7_errs, l7_window_ms;
	double l7_p99_ms, l7_err_pct;
};

/* Two counters read at each evaluation: the rate is the growth of one over the other's (the last read
 * kept). */
struct at_rate {
	uint64_t num, den;
	int have; /* the last read worked */
};

struct at_ctx {
	struct probe_rt *rt;
	struct at_conf base, cur;
	struct gg_scope base_scope, scope;
	struct sp_sampler *sampler;
	struct sp_profile prof;
	struct autotrace *skel; /* scheduler signals; loaded when runq or dstate is on */
	unsigned int parts;	/* AT_PART_* attached */
	struct bpf_link *links[3];
	unsigned int sampling_ms, sampling_events; /* what the sampler runs now */

	struct at_slot *ring;
	unsigned int ring_cap, ring_n, ring_head; /* slots, used, index of the oldest */
	struct at_slot *filling;		  /* the slot a drain writes into */
	size_t *cpu_lens;			  /* ring_cap x ring_ncpu: the slots' cpu_len */
	unsigned int ring_ncpu;
	size_t cpu_bytes;      /* bound of one CPU's records in one slot */
	uint64_t drained_wall; /* wall ms of the last drain: the next slot starts there */

	struct at_tstate trig[AT_TR_NR];
	struct at_proc procs[PROCS_MAX];
	unsigned int nprocs;
	struct at_recent recent[RECENT_MAX];
	unsigned int nrecent; /* ring: the next one goes to nrecent % RECENT_MAX */
	struct at_capture cap;
	uint64_t cap_times[CAPTURES_HOUR]; /* monotonic ms of the last captures (ring) */
	unsigned int ncap_times;
	uint64_t last_cap_ms;

	struct at_rate host_cpu; /* busy over total jiffies */
	struct at_rate retrans;	 /* retransmitted segments over ms */
	__u64 runq_prev[GG_LOG2_SLOTS];
	/* switch-ins the sched_switch tracepoint never showed, inferred at the next switch-out (at_cpu) */
	__u64 runq_unseen_in, dstate_unseen_in;

	uint64_t t_report;
	/* health */
	uint64_t captures, profiles, write_errors, dropped_busy, dropped_global, dropped_proc, dropped_procs_full;
	uint64_t ring_dropped;		  /* all reasons */
	uint64_t dropped_why[AT_DROP_NR]; /* by reason */
	/* l7 triggers */
	struct at_l7proc *l7;
	unsigned int nl7, scope_gen;
	enum at_l7_src l7_src;
	int l7_full_said;	  /* l7probe's table was full: logged once */
	struct probe_buf l7_file; /* l7probe's file as last read */
	char l7_path[4096];
	struct probe_buf scope_buf;
};

/* ---- capture.c ---------------------------------------------------------------------------------- */

void at_ring__free(struct at_ctx *ctx);
/* Room for ring_seconds before a trigger plus the capture after it (the ring starts over when that
 * changes). 0 or -ENOMEM. */
int at_ring__size(struct at_ctx *ctx);
size_t at_ring__bytes(const struct at_ctx *ctx);
/* Drain the sampler into a new slot (the oldest goes when the ring is full). */
void at_ring__push(struct at_ctx *ctx, uint64_t wall);
/* The records of a slot: the next after r (the first when r is NULL), or NULL. */
const struct at_raw *at_raw__next(const struct at_slot *s, const struct at_raw *r);
/* The ring's rate, or while capturing the profiling rate with off-CPU. */
void at_sampling__set(struct at_ctx *ctx, int capturing);
/* Attach the scheduler programs the runq and dstate triggers need, detach the rest. */
void at_sched__attach(struct at_ctx *ctx);
/* Run-queue delay histogram (summed over CPUs since load) and tasks in D now. 0 or negative errno. */
int at_sched__read(struct at_ctx *ctx, __u64 *hist, int64_t *ret_dstate);
/* Start a capture for trigger t (tgid, comm: the process of a per-process trigger, or 0 and NULL). */
void at_capture__start(struct at_ctx *ctx, enum at_trig t, uint32_t tgid, const char *comm, double value, uint64_t now,
		       uint64_t wall);
/* The capture window is over: write the one profile, send the event. */
void at_capture__finish(struct at_ctx *ctx, uint64_t wall);

#endif
