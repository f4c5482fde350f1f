/* main.c - tprofiling: thread-level timeline profiling (gala-gopher's tprofiling). Syscall events (file,
 * net, lock, sched), on-CPU runs and pthread lock waits of the threads in scope, aggregated per thread
 * and name over min_aggr_dur, reported as OpenTelemetry log records (`|log|` lines: the event channel)
 * and, locally, as JSON lines and Chrome/Perfetto trace files under output_dir. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "bpf_util.h"
#include "probe.h"
#include "probe_array.h"
#include "probe_outdir.h"
#include "probe_runner.h"
#include "symbolizer.h"
#include "tp_conf.h"
#include "tprof.h"
#include "tprof_fd.h"
#include "tprof_pygc.h"
#include "tprof_ulock.h"
#include "tprofiling.meta.h"
#include "tprofiling.skel.h"

#define TICK_MS		     200u
#define COMM_RESCAN_MS	     2000u
#define ULOCK_SYNC_MS	     2000u
#define FIRST_CONFIG_WAIT_MS 3000u
#define EVENTS_FILE	     "tprofiling-events.json"
#define EVENTS_FILE_OLD	     "tprofiling-events.json.1"
#define TRACE_PREFIX	     "timeline-trace-"
#define TRACE_FILES_KEPT     100u
/* The local files share output_max_mb (budget B): the event file is rotated before it would pass B/4
 * (with its one old copy: B/2 at most), a timeline file holds at most min(32 MiB, B/8) of spans (the rest
 * counted in trace_overflow), and the oldest timeline files are removed (counted in trace_removed) while
 * they together exceed the other B/2, or more than TRACE_FILES_KEPT are there. */
#define EVENTS_FILE_MAX(b) ((b) / 4)
#define TRACE_BYTES_MAX(b) ((b) / 8 < (32ull << 20) ? (b) / 8 : (32ull << 20))
#define PROC_CACHE	   1024u
#define MAX_HOOKS	   64u
#define THREADS_SEEN	   4096u /* thread names a timeline file carries (hash slots) */

extern const struct gg_contract gg_contract_tprofiling;
#define CONTRACT  (&gg_contract_tprofiling)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)

/* The reserved table the supervisor turns into the seed's event JSON (supervisor/export/otel_logs.c). */
static const char *const log_fields[] = {"timestamp", "severity", "severity_number", "resource", "attributes", "body"};
static const unsigned char log_kinds[] = {PROBE_F_KEY,	 PROBE_F_LABEL, PROBE_F_GAUGE,
					  PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL};
static const struct probe_table tbl_log = {"log", 6, log_fields, log_kinds};

/* A thread in this period's timeline (its track's title). */
struct thread_seen {
	uint32_t pid, tgid;
	char comm[16];
};

/* A process's name, read once in a while. */
struct proc_name {
	uint32_t tgid;
	uint64_t read_ms;
	char name[16];
};

struct tp_ctx {
	uint64_t ks[TP_ST_NR]; /* the kernel half's counters at the last report */
	struct probe_rt *rt;
	struct tp_conf base, cur;
	struct gg_scope base_scope, scope;
	const char *comm; /* --comm */
	int live_scope;
	int bpf_stats;
	struct tprofiling *skel;
	struct ring_buffer *rb;
	struct gg_bpf_hook hooks[MAX_HOOKS];
	struct bpf_link *links[MAX_HOOKS];
	unsigned int nhooks;
	struct tp_aggr *aggr;
	struct tp_ulock *ulock;
	struct tp_pygc *pygc;
	unsigned int pygc_procs; /* as last logged */
	struct symbolizer *sym;
	struct probe_buf scratch;
	struct proc_name procs[PROC_CACHE];
	char host_id[64], host_name[256];
	uint64_t mono_to_wall_ns;
	uint64_t t_comm, t_ulock;
	uint64_t ulock_procs, ulock_links; /* as last logged */
	/* local files */
	char *events_buf; /* JSON lines not written yet */
	size_t events_len, events_cap;
	char *trace_buf; /* this period's trace events, comma separated */
	size_t trace_len, trace_cap;
	uint64_t trace_from_ms;
	struct thread_seen seen[THREADS_SEEN];
	/* counters */
	uint64_t reported, local_events, trace_files, file_errors, trace_overflow, log_errors, trace_removed;
	struct gg_bpf_stats_prev stats_prev[MAX_HOOKS];
	/* scratch for one event */
	struct probe_rec rec;
	char res[1200], attrs[1200], line[8192], stack[2048], path[512], conn[160];
};

static const char notes[] =
	"Events (gala-gopher's tprofiling): oncpu (on-CPU runs, sched_switch), syscall_file (read, write,\n"
	"readv, writev, pread64, pwrite64, preadv, pwritev, sync, fsync, fdatasync), syscall_net (sendto,\n"
	"recvfrom, sendmsg, recvmsg, sendmmsg, recvmmsg), syscall_lock (futex), syscall_sched (sched_yield,\n"
	"nanosleep, clock_nanosleep, wait4, waitid, select, pselect6, poll, ppoll, epoll_wait, epoll_pwait),\n"
	"pthread_sync (uprobes on libc's pthread_mutex_lock, pthread_mutex_timedlock, pthread_rwlock_rdlock,\n"
	"pthread_rwlock_wrlock, pthread_spin_lock, sem_wait, sem_timedwait; per process in scope),\n"
	"mem_glibc (uprobes on libc's malloc, calloc, realloc, free: time in the call, mem.size the bytes),\n"
	"python_gc (CPython's gc__start/gc__done USDT probes: a collection, its generation and count).\n"
	"Same-name events of a thread within min_aggr_dur are one event (start of the first, sum of the\n"
	"durations, count). Output: |log| records (the event channel: the seed's OpenTelemetry JSON; on\n"
	"stdout without the supervisor) with profiling_channel kafka; with local, <output_dir>/" EVENTS_FILE "\n"
	"(the same JSON, one per line) and <output_dir>/" TRACE_PREFIX "<time>.json every report period\n"
	"(Chrome trace event format: open in https://ui.perfetto.dev or chrome://tracing). Table\n"
	"tprofiling_stats every report period.\n";

/* ---- the kernel half's programs, by sub-probe ---------------------------------------------------- */

/* The syscalls watched (the kernel half's tp_sc_tab, by syscall number), with the argument kept (0 the
 * fd, 1 futex's op, -1 none) and their sub-probe (the one of their type). */
#define TP_SP_OF_TYPE(ty)                    \
	((ty) == TP_TYPE_FILE	? TP_SP_FILE \
	 : (ty) == TP_TYPE_NET	? TP_SP_NET  \
	 : (ty) == TP_TYPE_LOCK ? TP_SP_LOCK \
				: TP_SP_SCHED)
#define SC_ROW(sc_, nm, ty, argi_) {#sc_, SYS_##sc_, nm, ty, argi_, TP_SP_OF_TYPE(ty)},
#define TP_SP_SYSCALLS		   (TP_SP_FILE | TP_SP_NET | TP_SP_LOCK | TP_SP_SCHED)
static const struct {
	const char *sc;
	int nr;
	unsigned short name, type;
	signed char argi;
	unsigned int bit;
} sc_tab[] = {TP_SYSCALLS(SC_ROW)};

/* The syscall table into the kernel half (before anything is attached). */
static int fill_sc_tab(struct tp_ctx *ctx)
{
	int fd = bpf_map__fd(ctx->skel->maps.tp_sc_tab);

	for (size_t i = 0; i < sizeof(sc_tab) / sizeof(sc_tab[0]); i++) {
		struct tp_sc e = {.name = sc_tab[i].name,
				  .type = sc_tab[i].type,
				  .argi = sc_tab[i].argi,
				  .bit = (unsigned short)sc_tab[i].bit};
		uint32_t k = (uint32_t)sc_tab[i].nr;

		if (k >= TP_SC_MAX || bpf_map_update_elem(fd, &k, &e, BPF_ANY))
			return k >= TP_SC_MAX ? -ERANGE : -errno;
	}
	return 0;
}

/* The syscall programs of one kind or the other (syscall_hooks): "raw" the two tp_btf programs, else
 * one tracepoint pair per syscall. */
static int is_raw_prog(const char *name)
{
	return !strcmp(name, "tp_sys_enter") || !strcmp(name, "tp_sys_exit");
}

static int is_tp_prog(const char *name)
{
	return !strncmp(name, "tp_enter_", 9) || !strncmp(name, "tp_exit_", 8);
}

static unsigned int prog_bit(const char *name)
{
	const char *sc = NULL;

	if (!strcmp(name, "tp_sched_switch"))
		return TP_SP_ONCPU;
	if (is_raw_prog(name))
		return TP_SP_SYSCALLS; /* while any syscall sub-probe is on; sc_on says which */
	if (!strncmp(name, "tp_enter_", 9))
		sc = name + 9;
	else if (!strncmp(name, "tp_exit_", 8))
		sc = name + 8;
	for (size_t i = 0; sc && i < sizeof(sc_tab) / sizeof(sc_tab[0]); i++)
		if (!strcmp(sc, sc_tab[i].sc))
			return sc_tab[i].bit;
	return 0; /* the uprobes: attached per process by ulock.c */
}

/* Before the load: only the syscall programs of the kind asked for are loaded (and attached). */
static void choose_syscall_hooks(struct tp_ctx *ctx)
{
	int raw = !strcmp(ctx->cur.syscall_hooks, "raw");
	struct bpf_program *p;

	bpf_object__for_each_program(p, ctx->skel->obj)
	{
		const char *name = bpf_program__name(p);

		if ((raw && is_tp_prog(name)) || (!raw && is_raw_prog(name)))
			bpf_program__set_autoload(p, false);
	}
}

static void build_hooks(struct tp_ctx *ctx)
{
	struct bpf_program *p;

	ctx->nhooks = 0;
	bpf_object__for_each_program(p, ctx->skel->obj)
	{
		unsigned int bit = prog_bit(bpf_program__name(p));

		if (!bit || ctx->nhooks == MAX_HOOKS)
			continue;
		ctx->hooks[ctx->nhooks] = (struct gg_bpf_hook){p, &ctx->links[ctx->nhooks], bit};
		ctx->nhooks++;
	}
}

/* ---- process names, stacks, descriptors ---------------------------------------------------------- */

static const char *proc_name(struct tp_ctx *ctx, uint32_t tgid)
{
	struct proc_name *p = &ctx->procs[tgid % PROC_CACHE];
	uint64_t now = probe_now_mono_ms();
	char path[64];

	if (p->tgid == tgid && now - p->read_ms < 5000)
		return p->name;
	snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	if (probe_read_file(path, &ctx->scratch, 64) == 0) {
		snprintf(p->name, sizeof(p->name), "%.*s", (int)strcspn(ctx->scratch.data, "\n"), ctx->scratch.data);
		p->tgid = tgid;
		p->read_ms = now;
	} else if (p->tgid != tgid) {
		p->name[0] = '\0'; /* gone before it was named */
	}
	return p->tgid == tgid ? p->name : "";
}

/* func.stack: outermost frame first, each followed by ';' (the seed's "read;" form). */
static void stack_str(struct tp_ctx *ctx, const struct tp_agg *a)
{
	struct tp_str s;

	tp_str__init(&s, ctx->stack, sizeof(ctx->stack));
	for (int i = (int)a->nstack - 1; i >= 0 && ctx->sym; i--) {
		struct sym_frame f;

		if (symbolizer__user(ctx->sym, a->tgid, a->stack[i], &f) == 0 && f.name)
			tp_str__printf(&s, "%s;", f.name);
		else if (f.module)
			tp_str__printf(&s, "[%s+0x%llx];",
				       strrchr(f.module, '/') ? strrchr(f.module, '/') + 1 : f.module,
				       (unsigned long long)f.offset);
		else
			tp_str__printf(&s, "[unknown];");
	}
}

static void render_info(struct tp_ctx *ctx, const struct tp_agg *a, struct tp_render_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->mono_to_wall_ns = ctx->mono_to_wall_ns;
	ret->proc_name = proc_name(ctx, a->tgid);
	ctx->path[0] = ctx->conn[0] = ctx->stack[0] = '\0';
	if ((a->type == TP_TYPE_FILE || a->type == TP_TYPE_NET) && a->name != TP_SYNC)
		(void)tp_fd_name(&ctx->scratch, a->tgid, a->arg, ctx->path, sizeof(ctx->path), ctx->conn,
				 sizeof(ctx->conn));
	if (a->type == TP_TYPE_FILE && a->path[0][0]) {
		/* the descriptor as it is now is another file (closed, or its number reused): what the kernel
		 * read as the event ended (from the file system's root, not the mount point's) */
		const char *base = strrchr(ctx->path, '/');

		if (!base || strcmp(base + 1, a->path[0]))
			tp_kernel_path(a, ctx->path, sizeof(ctx->path));
	}
	if (a->nstack && ctx->cur.func_stack)
		stack_str(ctx, a);
	ret->path = ctx->path;
	ret->conn = ctx->conn;
	ret->stack = ctx->stack;
}

/* ---- output -------------------------------------------------------------------------------------- */

static int channel_on(const struct tp_ctx *ctx, const char *name)
{
	return strstr(ctx->cur.channel, name) != NULL;
}

/* The local files' byte budget (output_max_mb). */
static uint64_t out_budget(const struct tp_ctx *ctx)
{
	return (uint64_t)ctx->cur.output_max_mb << 20;
}

static int buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n, size_t max)
{
	char *nb;

	if (*len + n + 2 > max)
		return -E2BIG;
	nb = probe_array_reserve(*buf, cap, 1, *len + n + 2, 65536, SIZE_MAX);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	memcpy(*buf + *len, s, n);
	*len += n;
	return 0;
}

static void see_thread(struct tp_ctx *ctx, const struct tp_agg *a)
{
	for (unsigned int i = 0, h = a->pid % THREADS_SEEN; i < 8; i++, h = (h + 1) % THREADS_SEEN) {
		struct thread_seen *t = &ctx->seen[h];

		if (t->pid == a->pid || !t->pid) {
			t->pid = a->pid;
			t->tgid = a->tgid;
			memcpy(t->comm, a->comm, sizeof(t->comm));
			return;
		}
	}
}

/* A metadata event naming a track ("process_name" or "thread_name"). */
static void name_event(FILE *f, const char *what, uint32_t pid, uint32_t tid, const char *name, size_t max)
{
	char b[128];
	struct tp_str s;

	tp_str__init(&s, b, sizeof(b));
	tp_str__json(&s, name, max);
	fprintf(f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":%s}},\n", what, pid, tid, b);
}

/* One aggregated event out: the event channel, the local event file, this period's timeline. */
static void emit(void *arg, const struct tp_agg *a)
{
	struct tp_ctx *ctx = arg;
	struct tp_render_info info;
	struct tp_str res, attrs, line;
	char ts[24];
	uint64_t now_ms = probe_now_wall_ms();

	render_info(ctx, a, &info);
	ctx->reported++;
	snprintf(ts, sizeof(ts), "%llu", (unsigned long long)now_ms);
	if (channel_on(ctx, "kafka")) {
		tp_str__init(&res, ctx->res, sizeof(ctx->res));
		tp_render__resource(&res, a, &info);
		tp_str__init(&attrs, ctx->attrs, sizeof(ctx->attrs));
		tp_render__attrs(&attrs, a, &info);
		probe_rec__begin(&ctx->rec, &tbl_log);
		probe_rec__str(&ctx->rec, ts);
		probe_rec__str(&ctx->rec, "INFO");
		probe_rec__u64(&ctx->rec, 9);
		probe_rec__str(&ctx->rec, ctx->res);
		probe_rec__str(&ctx->rec, ctx->attrs);
		probe_rec__str(&ctx->rec, "");
		if (probe_rt__emit(ctx->rt, &ctx->rec))
			ctx->log_errors++;
	}
	if (!channel_on(ctx, "local"))
		return;
	info.host_id = ctx->host_id;
	info.host_name = ctx->host_name;
	tp_str__init(&line, ctx->line, sizeof(ctx->line));
	tp_str__printf(
		&line,
		"{\"Timestamp\":%s,\"SeverityText\":\"INFO\",\"SeverityNumber\":9,\"Body\":\"\",\"Resource\":", ts);
	tp_render__resource(&line, a, &info);
	tp_str__printf(&line, ",\"Attributes\":");
	tp_render__attrs(&line, a, &info);
	tp_str__printf(&line, "}\n");
	if (!line.truncated && !buf_append(&ctx->events_buf, &ctx->events_len, &ctx->events_cap, line.buf, line.len,
					   EVENTS_FILE_MAX(out_budget(ctx))))
		ctx->local_events++;
	else
		ctx->file_errors++;
	see_thread(ctx, a);
	tp_str__init(&line, ctx->line, sizeof(ctx->line));
	if (ctx->trace_len)
		tp_str__printf(&line, ",\n");
	tp_render__trace_event(&line, a, &info);
	if (line.truncated || buf_append(&ctx->trace_buf, &ctx->trace_len, &ctx->trace_cap, line.buf, line.len,
					 TRACE_BYTES_MAX(out_budget(ctx))))
		ctx->trace_overflow++;
}

/* The JSON lines gathered since the last tick, appended to the event file (rotated past its size). */
static void flush_events(struct tp_ctx *ctx)
{
	struct stat st;
	int dfd, fd;

	if (!ctx->events_len)
		return;
	dfd = probe_outdir__open(ctx->cur.output_dir, 1);
	if (dfd < 0) {
		ctx->file_errors++;
		goto cleanup;
	}
	if (fstatat(dfd, EVENTS_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (uint64_t)st.st_size + ctx->events_len > EVENTS_FILE_MAX(out_budget(ctx)))
		(void)renameat(dfd, EVENTS_FILE, dfd, EVENTS_FILE_OLD);
	fd = openat(dfd, EVENTS_FILE, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, ctx->events_buf, ctx->events_len) != (ssize_t)ctx->events_len)
		ctx->file_errors++;
	if (fd >= 0)
		close(fd);
	close(dfd);
cleanup:
	ctx->events_len = 0;
}

struct trace_file {
	char *name;
	uint64_t size;
};

static int cmp_trace(const void *a, const void *b)
{
	return strcmp(((const struct trace_file *)a)->name, ((const struct trace_file *)b)->name);
}

static uint64_t file_size(int dfd, const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
}

/* The oldest timeline files go (their names sort by time) while they exceed their half of the byte
 * budget or there are more than TRACE_FILES_KEPT of them; the newest always stays. */
static void prune_traces(struct tp_ctx *ctx, int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct trace_file *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, TRACE_PREFIX, strlen(TRACE_PREFIX)) || strstr(de->d_name, ".tmp"))
			continue;
		if (n == cap) {
			struct trace_file *nv = realloc(v, (cap ? cap * 2 : 128) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 128;
		}
		v[n].name = strdup(de->d_name);
		v[n].size = v[n].name ? file_size(dfd, de->d_name) : 0;
		if (v[n].name) {
			total += v[n].size;
			n++;
		}
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_trace);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && (total > out_budget(ctx) / 2 || i + TRACE_FILES_KEPT < n) &&
		    unlinkat(dfd, v[i].name, 0) == 0) {
			total -= v[i].size;
			ctx->trace_removed++;
		}
		free(v[i].name);
	}
	free(v);
}

/* This period's spans as one Chrome trace file, with the thread and process names as metadata. */
static void write_trace(struct tp_ctx *ctx)
{
	char name[96];
	struct tm tm;
	time_t t = (time_t)(ctx->trace_from_ms / 1000);
	int dfd, err = 0;
	FILE *f;

	if (!ctx->trace_len)
		return;
	gmtime_r(&t, &tm);
	snprintf(name, sizeof(name), TRACE_PREFIX "%04d%02d%02d-%02d%02d%02d.%03u.json", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(ctx->trace_from_ms % 1000));
	dfd = probe_outdir__open(ctx->cur.output_dir, 1);
	if (dfd < 0) {
		ctx->file_errors++;
		goto cleanup;
	}
	f = probe_outdir__fopen_tmp(dfd, name);
	if (!f) {
		ctx->file_errors++;
		close(dfd);
		goto cleanup;
	}
	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"gala-gopher tprofiling\"},\"traceEvents\":[\n",
	      f);
	/* names of the threads and processes seen (Perfetto's track titles) */
	for (unsigned int i = 0; i < PROC_CACHE; i++)
		if (ctx->procs[i].tgid && ctx->procs[i].name[0])
			name_event(f, "process_name", ctx->procs[i].tgid, ctx->procs[i].tgid, ctx->procs[i].name,
				   sizeof(ctx->procs[i].name));
	for (unsigned int i = 0; i < THREADS_SEEN; i++)
		if (ctx->seen[i].pid)
			name_event(f, "thread_name", ctx->seen[i].tgid, ctx->seen[i].pid, ctx->seen[i].comm,
				   sizeof(ctx->seen[i].comm));
	fwrite(ctx->trace_buf, 1, ctx->trace_len, f);
	fputs("\n]}\n", f);
	err = probe_outdir__commit(dfd, name, f, 0);
	if (err)
		ctx->file_errors++;
	else
		ctx->trace_files++;
	prune_traces(ctx, dfd);
	close(dfd);
cleanup:
	ctx->trace_len = 0;
	ctx->trace_from_ms = probe_now_wall_ms();
	memset(ctx->seen, 0, sizeof(ctx->seen));
}

/* ---- the loop ------------------------------------------------------------------------------------ */

static int on_event(void *arg, void *data, size_t size)
{
	struct tp_ctx *ctx = arg;

	if (size < sizeof(struct tp_event))
		return 0;
	tp_aggr__add(ctx->aggr, data, (uint64_t)ctx->cur.min_aggr_ms * 1000000u, emit, ctx);
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void update_clock(struct tp_ctx *ctx)
{
	struct timespec w;
	uint64_t m = mono_ns();

	clock_gettime(CLOCK_REALTIME, &w);
	ctx->mono_to_wall_ns = (uint64_t)w.tv_sec * 1000000000u + (uint64_t)w.tv_nsec - m;
}

static void drain(struct tp_ctx *ctx, int all)
{
	update_clock(ctx);
	if (ctx->sym)
		symbolizer__begin_round(ctx->sym);
	if (ctx->rb)
		(void)ring_buffer__consume(ctx->rb);
	tp_aggr__flush(ctx->aggr, all ? UINT64_MAX : mono_ns(), (uint64_t)ctx->cur.min_aggr_ms * 1000000u, emit, ctx);
	if (channel_on(ctx, "local"))
		flush_events(ctx);
	else
		ctx->events_len = 0;
}

static void apply_scope(struct tp_ctx *ctx, const struct gg_scope *s)
{
	int err;

	ctx->scope = *s;
	/* cgroups first on: the kernel half walks them only when told there are some */
	if (s->ncgrp)
		ctx->skel->bss->scope_ncgrp = s->ncgrp;
	err = gg_scope__apply(&ctx->scope, ctx->skel->obj);
	ctx->skel->bss->scope_ncgrp = s->ncgrp;
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
	ctx->t_ulock = 0; /* the uprobes follow at the next tick */
}

static void rescan_comm(struct tp_ctx *ctx)
{
	const struct gg_scope *s = gg_scope__comm_update(&ctx->base_scope, ctx->comm, ctx->live_scope, &ctx->scope);

	if (s)
		apply_scope(ctx, s);
}

static unsigned int tick(void *arg)
{
	struct tp_ctx *ctx = arg;
	uint64_t now = probe_now_mono_ms();

	if (ctx->comm && now - ctx->t_comm >= COMM_RESCAN_MS) {
		rescan_comm(ctx);
		ctx->t_comm = now;
	}
	if (ctx->ulock && (!ctx->t_ulock || now - ctx->t_ulock >= ULOCK_SYNC_MS)) {
		struct uproc_stats us;

		(void)tp_ulock__sync(ctx->ulock, &ctx->scope,
				     (ctx->cur.subprobes & TP_SP_PTHREAD_SYNC ? TP_ULOCK_SYNC : 0) |
					     (ctx->cur.subprobes & TP_SP_MEM_GLIBC ? TP_ULOCK_MEM : 0));
		tp_ulock__stats(ctx->ulock, &us);
		if (us.procs != ctx->ulock_procs || us.links != ctx->ulock_links)
			probe_log(PLOG_INFO, "pthread_sync/mem_glibc: uprobes in %llu process%s (%llu links)",
				  (unsigned long long)us.procs, us.procs == 1 ? "" : "es",
				  (unsigned long long)us.links);
		if (ctx->pygc) {
			(void)tp_pygc__sync(ctx->pygc, &ctx->scope, (ctx->cur.subprobes & TP_SP_PYTHON_GC) != 0);
			if (tp_pygc__procs(ctx->pygc) != ctx->pygc_procs)
				probe_log(PLOG_INFO, "python_gc: USDT probes in %u Python process%s",
					  tp_pygc__procs(ctx->pygc), tp_pygc__procs(ctx->pygc) == 1 ? "" : "es");
			ctx->pygc_procs = tp_pygc__procs(ctx->pygc);
		}
		ctx->ulock_procs = us.procs;
		ctx->ulock_links = us.links;
		ctx->t_ulock = now;
	}
	drain(ctx, 0);
	(void)probe_rt__flush(ctx->rt);
	return TICK_MS;
}

static void kernel_stats(struct tp_ctx *ctx, uint64_t *ret)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*v)) : NULL;

	for (uint32_t k = 0; k < TP_ST_NR; k++) {
		ret[k] = 0;
		if (v &&
		    !bpf_map__lookup_elem(ctx->skel->maps.tp_stats, &k, sizeof(k), v, (size_t)ncpu * sizeof(*v), 0))
			for (int c = 0; c < ncpu; c++)
				ret[k] += v[c];
	}
	free(v);
}

static void report(void *arg)
{
	struct tp_ctx *ctx = arg;
	struct uproc_stats us = {0};
	uint64_t *ks = ctx->ks;
	struct probe_rec *r = &ctx->rec;

	drain(ctx, 0);
	if (channel_on(ctx, "local"))
		write_trace(ctx);
	else
		ctx->trace_len = 0;
	kernel_stats(ctx, ks);
	if (ctx->ulock)
		tp_ulock__stats(ctx->ulock, &us);
	probe_rec__begin(r, &TBL_tprofiling_stats);
	probe_rec__str(r, "tprofiling");
	probe_rec__u64(r, ks[TP_ST_EVENTS]);
	probe_rec__u64(r, ks[TP_ST_SHORT]);
	probe_rec__u64(r, ks[TP_ST_DROPPED]);
	probe_rec__u64(r, ks[TP_ST_INFLIGHT_FULL]);
	probe_rec__u64(r, ctx->reported);
	probe_rec__u64(r, tp_aggr__overflow(ctx->aggr));
	probe_rec__u64(r, ctx->local_events);
	probe_rec__u64(r, ctx->trace_files);
	probe_rec__u64(r, ctx->file_errors);
	probe_rec__u64(r, ctx->trace_overflow);
	probe_rec__u64(r, us.procs);
	probe_rec__u64(r, us.attach_errors);
	probe_rec__u64(r, ctx->trace_removed);
	probe_rec__u64(r, ks[TP_ST_UNSEEN_IN]);
	(void)probe_rt__emit(ctx->rt, r);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, MAX_HOOKS);
}

/* ---- configuration ------------------------------------------------------------------------------- */

static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	const struct tp_conf *c = next;

	(void)data;
	(void)msg;
	if (!c->output_dir[0]) {
		probe_log(PLOG_WARN, "configuration: output_dir must not be empty");
		return -EINVAL;
	}
	return 0;
}

/* A live configuration in force (the runner put it into cur): the scope now, the rest in apply(). */
static void applied(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct tp_ctx *ctx = data;

	(void)version;
	ctx->live_scope = msg->has_scope;
	if (ctx->skel)
		apply_scope(ctx, msg->has_scope ? &msg->scope : &ctx->base_scope);
	else /* the first configuration, before the load (setup applies it) */
		ctx->scope = msg->has_scope ? msg->scope : ctx->base_scope;
}

/* What a configuration asked for, in the loop: the knobs, then the programs attached or detached. */
static void apply(void *arg)
{
	struct tp_ctx *ctx = arg;

	ctx->skel->data->min_exec_ns = (uint64_t)ctx->cur.min_exec_us * 1000u;
	ctx->skel->data->want_stack = ctx->cur.func_stack != 0;
	ctx->skel->bss->sc_on = ctx->cur.subprobes & TP_SP_SYSCALLS;
	(void)gg_bpf_attach_hooks(ctx->hooks, ctx->nhooks, ctx->cur.subprobes);
	ctx->t_ulock = 0;
}

static void describe(void *arg, char *buf, size_t len)
{
	const struct tp_ctx *ctx = arg;

	snprintf(buf, len, ", min_exec_dur %u us, min_aggr_dur %u ms, channel %s, output_dir %s, scope %s",
		 ctx->cur.min_exec_us, ctx->cur.min_aggr_ms, ctx->cur.channel, ctx->cur.output_dir,
		 ctx->scope.all ? "all" : "filtered");
}

static void read_host(struct tp_ctx *ctx)
{
	if (probe_read_file("/etc/machine-id", &ctx->scratch, 256) == 0)
		snprintf(ctx->host_id, sizeof(ctx->host_id), "%.*s", (int)strcspn(ctx->scratch.data, "\n"),
			 ctx->scratch.data);
	if (gethostname(ctx->host_name, sizeof(ctx->host_name) - 1))
		ctx->host_name[0] = '\0';
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct tp_ctx *ctx = arg;
	struct symbolizer_opts so = {0};
	int err;

	ctx->rt = rt;
	ctx->scope = ctx->base_scope;
	read_host(ctx);
	update_clock(ctx);
	ctx->trace_from_ms = probe_now_wall_ms();
	ctx->aggr = tp_aggr__new();
	if (!ctx->aggr)
		return -ENOMEM;
	ctx->sym = symbolizer__new(&so);
	if (!ctx->sym)
		probe_log(PLOG_WARN, "no symbolizer (%s): func.stack has addresses only", strerror(errno));

	/* under the supervisor the first configuration brings the scope and syscall_hooks (which programs
	 * are loaded): nothing is loaded or attached before it */
	(void)probe_runner__wait_first_config(FIRST_CONFIG_WAIT_MS);
	gg_bpf_begin();
	ctx->skel = tprofiling__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	ctx->skel->bss->self_tgid = (uint32_t)getpid();
	choose_syscall_hooks(ctx);
	err = tp_ulock__prepare(ctx->skel->progs.tp_call_enter, ctx->skel->progs.tp_call_exit);
	if (err)
		return err;
	/* the loop is woken by the kernel half in a storm */
	err = gg_bpf_load_ringbuf(ctx->skel->skeleton, rt, ctx->skel->maps.tp_events, on_event, ctx, &ctx->rb);
	if (err)
		return err;
	ctx->ulock = tp_ulock__new(ctx->skel->progs.tp_call_enter, ctx->skel->progs.tp_call_exit);
	if (!ctx->ulock)
		return -ENOMEM;
	ctx->pygc = tp_pygc__new(ctx->skel->progs.tp_gc_start, ctx->skel->progs.tp_gc_done);
	if (!ctx->pygc)
		return -ENOMEM;
	err = fill_sc_tab(ctx);
	if (err) {
		probe_log(PLOG_ERROR, "syscall table: %s", strerror(-err));
		return err;
	}
	build_hooks(ctx);
	apply_scope(ctx, &ctx->scope);
	rescan_comm(ctx);
	apply(ctx);
	gg_bpf_setup_done();
	return 0;
}

static void stop(void *arg, char *note, size_t len)
{
	struct tp_ctx *ctx = arg;
	const uint64_t *ks = ctx->ks;

	drain(ctx, 1); /* every open aggregate out */
	report(ctx);
	snprintf(note, len,
		 "%llu events reported; from the kernel %llu, %llu lost (ring full), %llu without storage, "
		 "%llu on-CPU runs seen to end only",
		 (unsigned long long)ctx->reported, (unsigned long long)ks[TP_ST_EVENTS],
		 (unsigned long long)ks[TP_ST_DROPPED], (unsigned long long)ks[TP_ST_INFLIGHT_FULL],
		 (unsigned long long)ks[TP_ST_UNSEEN_IN]);
}

static void teardown(void *arg)
{
	struct tp_ctx *ctx = arg;

	tp_ulock__free(ctx->ulock);
	tp_pygc__free(ctx->pygc);
	ring_buffer__free(ctx->rb);
	/* syscall_hooks "tracepoints": each syscall tracepoint's last link waits for a grace period as it
	 * goes (~35-70 ms here, under the kernel's event_mutex: threads do not help), 2-4 s with every
	 * syscall sub-probe on; "raw": two tp_btf links, closed without waiting */
	if (ctx->skel)
		for (unsigned int i = 0; i < ctx->nhooks; i++)
			gg_bpf_detach(&ctx->links[i]);
	tprofiling__destroy(ctx->skel);
	tp_aggr__free(ctx->aggr);
	symbolizer__free(ctx->sym);
	probe_buf__free(&ctx->scratch);
	free(ctx->events_buf);
	free(ctx->trace_buf);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct tp_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base_scope, .comm = &g_ctx.comm, .bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.setup = setup,
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct tp_conf, subprobes), check_conf, applied},
	.apply_conf = apply,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.tick = tick,
	.describe = describe,
	.stop = stop,
	.teardown = teardown,
};
