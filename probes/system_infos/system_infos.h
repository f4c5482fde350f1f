/* system_infos.h - what the system_infos (baseinfo) probe's main loop and its sub-probes share. */
#ifndef GG_SYSTEM_INFOS_H
#define GG_SYSTEM_INFOS_H

#include <stdint.h>

#include "bpf_util.h"
#include "probe_scope.h"
#include "probe.h"

/* Sub-probes, as named in `-P` and in the "probe" list of a live configuration. */
enum si_subprobe {
	SI_CPU = 1u << 0,
	SI_MEM = 1u << 1,
	SI_NIC = 1u << 2,
	SI_DISK = 1u << 3,
	SI_NET = 1u << 4,
	SI_FS = 1u << 5,
	SI_PROC = 1u << 6,
	SI_HOST = 1u << 7,
};
#define SI_ALL (SI_CPU | SI_MEM | SI_NIC | SI_DISK | SI_NET | SI_FS | SI_PROC | SI_HOST)

/* The size a /proc file we read may reach before we give up on it. */
#define SI_PROC_FILE_MAX (16u << 20)

/* One CPU's jiffies from /proc/stat. */
struct si_cpu_times {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

/* One CPU as last sampled (indexed by CPU number). */
struct si_cpu_row {
	int online; /* seen on the last /proc/stat read */
	int seen;   /* prev holds a real earlier sample */
	struct si_cpu_times cur, prev;
	uint64_t rcu, timer, sched, net_rx; /* /proc/softirqs */
	uint64_t backlog_drops, rps_count;  /* /proc/net/softnet_stat */
	double mhz;			    /* /proc/cpuinfo */
};

/* The cpu sub-probe: counters per CPU and the previous sample the utilisation is computed from. */
struct si_cpu {
	struct si_cpu_row *rows;
	unsigned int nrows; /* rows allocated (highest CPU number + 1 seen so far) */
	struct si_cpu_times total_cur, total_prev;
	int total_seen;
	int *col_cpu; /* /proc/softirqs column -> CPU number */
	unsigned int ncols_cap;
	double clk_tck;
	struct probe_buf buf; /* the file being read (each is parsed before the next is read) */
	unsigned int warned;  /* one bit per file whose read failure was already logged */
};

int si_cpu__init(struct si_cpu *c);
/* Read /proc/stat only: the starting point of the next period's utilisation. */
int si_cpu__baseline(struct si_cpu *c);
/* Read every file, then emit one system_cpu record per online CPU and one system_cpu_util record. */
int si_cpu__report(struct si_cpu *c, struct probe_rt *rt);
void si_cpu__free(struct si_cpu *c);

/* The mem sub-probe. */
struct si_mem {
	struct probe_buf meminfo;
	int warned;
};

int si_mem__report(struct si_mem *m, struct probe_rt *rt);
void si_mem__free(struct si_mem *m);

/* Interfaces, disks, filesystems and processes tracked at most (the rest are counted and skipped). */
#define SI_NIC_MAX  1024u
#define SI_DISK_MAX 1024u
#define SI_FS_MAX   512u
#define SI_PROC_MAX 1024u

/* One named device (an interface, a disk) as last sampled: its cumulative counters, in the order of
 * the /proc file's columns, and the sample before them. */
#define SI_COUNTERS_MAX 16u
struct si_counter_row {
	char name[32];
	int seen;      /* present in the last read */
	int have_prev; /* prev holds a real earlier sample */
	uint64_t cur[SI_COUNTERS_MAX], prev[SI_COUNTERS_MAX];
	uint64_t cur_ms, prev_ms;
};

/* Rows of counters by name, kept from one read of a /proc table to the next. */
struct si_counter_rows {
	struct si_counter_row *rows;
	unsigned int nrows, cap;
	struct probe_buf buf; /* the table's text */
	unsigned int skipped; /* devices beyond the limit in the last read */
	int warned;
};

struct si_counters;

/* What a sub-probe of per-device counters reads and reports (nic.c, disk.c). */
struct si_counter_kind {
	const char *path; /* the /proc table */
	/* One read of the table (text[0..len), sampled at now_ms) into c with si_counters__put; returns how
	 * many devices it left out. */
	unsigned int (*parse)(struct si_counters *c, const char *text, size_t len, uint64_t now_ms);
	void (*emit)(struct probe_rt *rt, const struct si_counter_row *r); /* one device's record */
	const char *sub, *what; /* in logs: the sub-probe ("nic") and its devices ("interfaces") */
	unsigned int max;	/* devices tracked at most */
};

/* The nic sub-probe: per-interface counters (the 16 /proc/net/dev columns), rates between periods, link
 * speed and state. The disk sub-probe: /proc/diskstats of whole disks (as /sys/block lists them),
 * iostat-style rates; a row's counters: reads, rd_merged, rd_sectors, rd_ms, writes, wr_merged,
 * wr_sectors, wr_ms, in_flight, io_ms, weighted_ms. */
extern const struct si_counter_kind si_nic_kind, si_disk_kind;

/* A sub-probe of per-device counters (util.c): set kind, the rest starts zeroed. */
struct si_counters {
	const struct si_counter_kind *kind;
	const char *sys_block; /* disk: where whole disks are listed (NULL: /sys/block; tests use fixtures) */
	struct si_counter_rows tab;
};

/* Parse one read of the table, text[0..len) sampled at now_ms: rows not put again are forgotten, so a
 * new device with the same name starts afresh. Returns how many devices were left out. */
unsigned int si_counters__parse(struct si_counters *c, const char *text, size_t len, uint64_t now_ms);
/* Read and parse the table (a read failure is logged once, devices beyond the limit when their count
 * changes). 0 or -errno. */
int si_counters__sample(struct si_counters *c);
/* Sample, then one record per device named dev_filter (every device when NULL or ""). 0 or -errno. */
int si_counters__report(struct si_counters *c, struct probe_rt *rt, const char *dev_filter);
/* The counters of device name[0..len) are now v[0..n) (n <= SI_COUNTERS_MAX), sampled at now_ms; the
 * last ones become prev (a name put twice in one read keeps the first). -ENOSPC when the row cannot be
 * kept (kind->max rows kept, a name too long, no memory). */
int si_counters__put(struct si_counters *c, const char *name, size_t len, const uint64_t *v, unsigned int n,
		     uint64_t now_ms);
void si_counters__free(struct si_counters *c);

/* The net sub-probe: /proc/net/snmp Tcp and Udp counters (system_tcp, system_udp). */
struct si_net {
	struct probe_buf snmp;
	uint64_t prev_out_segs, prev_retrans;
	int have_prev;
	int warned;
};

int si_net__report(struct si_net *n, struct probe_rt *rt);
void si_net__free(struct si_net *n);

/* The fs sub-probe: statvfs of every mounted block-backed or tmpfs filesystem (system_df). */
struct si_fs {
	struct probe_buf mounts;
	unsigned int skipped;
	int warned;
};

int si_fs__report(struct si_fs *f, struct probe_rt *rt);
void si_fs__free(struct si_fs *f);

/* The host sub-probe: one system_os record (hostname, kernel, os-release, machine id, cpus, memory). */
struct si_host {
	struct probe_buf buf;
	char host_type[4]; /* "vm" or "pm", found once */
};

int si_host__report(struct si_host *h, struct probe_rt *rt);
void si_host__free(struct si_host *h);

/* One process as last sampled (rows are kept sorted by pid). */
struct si_proc_row {
	int pid;
	int seen, have_prev;
	uint64_t starttime;		    /* /proc/<pid>/stat field 22: tells a reused pid apart */
	uint64_t cpu_ticks, prev_cpu_ticks; /* utime + stime */
	uint64_t cur_ms, prev_ms;
	uint64_t smaps[8]; /* smaps_rollup values, refreshed every SI_SMAPS_EVERY_MS (costly to read) */
	uint64_t smaps_ms;
};

/* smaps_rollup walks the page tables of the whole process: read it at most this often per process. */
#define SI_SMAPS_EVERY_MS 30000u
/* Without snoopers (scope "all"): the processes reported per period, the top ones by CPU + memory. */
#define SI_PROC_TOP_DEFAULT 50u
/* Processes whose CPU time is followed between periods (to rank them) at most. */
#define SI_PROC_TRACK_MAX 16384u

/* /proc/<pid>/stat parsed: comm and the numeric fields by their number in proc(5) (1-based; 3, the
 * state letter, is left 0; fields absent from a short line are 0). */
struct si_proc_stat {
	char comm[64];
	int64_t f[53];
};

/* The proc sub-probe: /proc/<pid>/{stat,io,smaps_rollup,cmdline,fd} of the processes in scope. */
struct si_proc {
	struct si_proc_row *rows;
	unsigned int nrows, cap;
	struct probe_buf io;  /* kept until the record is written */
	struct probe_buf buf; /* stat, smaps_rollup, cmdline, cgroup: each parsed before the next is read */
	uint64_t mem_total_kB;
	double clk_tck;
	long page_size;
	unsigned int skipped;
	char root[256];	  /* where proc is mounted ("/proc"; tests point it at fixtures) */
	unsigned int top; /* scope "all": report only this many processes (0: up to SI_PROC_MAX) */
	/* scope "all" with a top: processes left out in the last period, and when that was last logged */
	unsigned int left_out;
	uint64_t left_out_logged_ms;
	/* candidates of the current period (scope "all") */
	struct si_proc_cand *cands;
	unsigned int ncands, cands_cap;
};

int si_proc__init(struct si_proc *p);
/* Report the processes in scope: the tgids of sc, those whose cgroup v2 (or an ancestor) is in sc's
 * cgroup set, and those named comm (when not NULL); with sc->all (no snoopers), every process, or when
 * p->top is set the p->top processes with the most CPU time in the period plus resident memory. */
int si_proc__report(struct si_proc *p, struct probe_rt *rt, const struct gg_scope *sc, const char *comm);
void si_proc__free(struct si_proc *p);
/* Parse a /proc/<pid>/stat text (the comm may hold spaces and parentheses). 0, or -EINVAL when it has
 * no "(comm)". */
int si_proc_parse_stat(const char *data, size_t len, struct si_proc_stat *ret);
/* Percent of one CPU a process used between two samples: 0 without an earlier one, or when the ticks
 * went backwards (a reused pid) or the time did not advance. */
double si_proc_cpu_percent(uint64_t ticks, uint64_t prev_ticks, uint64_t ms, uint64_t prev_ms, double clk_tck);

/* Read a short /sys or /proc file (one value) into buf, without the trailing newline. 0 or -errno. */
int si_read_line(const char *path, char *buf, size_t len);

/* Read a /proc file into b; only the first failure is logged (*warned remembers it). 0 or -errno. */
int si_read_proc(const char *path, struct probe_buf *b, int *warned);

/* Log that skipped devices (what: "interfaces") of sub-probe sub are beyond max, when that count
 * changes; *last keeps the count. */
void si_note_skipped(unsigned int *last, unsigned int skipped, const char *sub, const char *what, unsigned int max);

/* arr (room for *cap elements of size bytes) with room for need: the room doubles from first, never
 * beyond max elements. Returns the array (arr itself when it has room; *cap updated), or NULL (arr kept)
 * when need is beyond max or memory is short. The new room is not zeroed. */
void *si_grow(void *arr, unsigned int need, unsigned int *cap, size_t size, unsigned int first, unsigned int max);

/* Percent part/whole rounded to two decimals, 0 when whole is 0. */
double si_percent(double part, double whole);

/* Small parsers for /proc text: they never read past end. */
static inline const char *si_skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Decimal (base 10) or hexadecimal (base 16) unsigned number at p; saturates instead of wrapping.
 * Returns the position after it, or NULL when there is no digit. */
static inline const char *si_parse_u64(const char *p, const char *end, unsigned int base, uint64_t *ret)
{
	uint64_t v = 0;
	const char *start = p;

	for (; p < end; p++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned int)(*p - 'A' + 10);
		else
			break;
		v = v > (UINT64_MAX - d) / base ? UINT64_MAX : v * base + d;
	}
	if (p == start)
		return NULL;
	*ret = v;
	return p;
}

static inline const char *si_line_end(const char *p, const char *end)
{
	while (p < end && *p != '\n')
		p++;
	return p;
}

/* What the probe does; argv gives the baseline, a live configuration overrides it. */
struct si_conf {
	unsigned int period_s;
	unsigned int subprobes; /* enum si_subprobe bits */
	char dev_name[32];	/* params.dev_name: only this interface and disk ("" = all) */
	unsigned int proc_top;	/* params.proc_top: without snoopers, report this many processes (0: all) */
	struct gg_scope scope;	/* the processes system_proc reports */
};

#endif
