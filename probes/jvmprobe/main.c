/* main.c - jvmprobe ("jvm"): classes, threads, heap and non-heap pools, GC, safepoints and JIT of every
 * HotSpot JVM in scope, read from the VM's own performance counters (/tmp/hsperfdata_<user>/<pid>,
 * reached through /proc/<pid>/root so that containers work). No attach, no agent, nothing injected. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include "jvm_conf.h"
#include "jvmprobe.meta.h"
#include "perfdata.h"
#include "probe.h"
#include "probe_conf.h"
#include "probe_runner.h"
#include "probe_scope.h"
#include "procfs.h"

#define PROBE_NAME	   "jvm"
#define PROG		   "jvmprobe"
#define PROC_SCOPE_WAIT_MS 3000u
#define MNTNS_MAX	   256u	  /* mount namespaces looked into per report */
#define DIRS_MAX	   8u	  /* hsperfdata_<user> directories per mount namespace */
#define FILES_MAX	   256u	  /* perf data files per mount namespace */
#define TMP_SCAN_MAX	   20000u /* entries of a /tmp read before giving up on it */
#define JVMS_MAX	   1024u  /* JVMs reported per period */

extern const struct gg_contract gg_contract_jvmprobe;
#define CONTRACT (&gg_contract_jvmprobe)

/* The perf data files one mount namespace's /tmp holds now (listed once per report). */
struct mntns {
	uint64_t ino;		     /* mount namespace */
	uint64_t root_dev, root_ino; /* and root directory (a chroot in the namespace sees another /tmp) */
	unsigned int ndirs, nfiles;
	char dirs[DIRS_MAX][64];
	struct {
		uint32_t nspid;
		uint8_t dir;
	} files[FILES_MAX];
};

struct jvm_ctx {
	struct probe_rt *rt;
	struct jvm_conf base, cur;
	const char *comm;
	uint64_t self_pidns;
	struct mntns *mns; /* MNTNS_MAX */
	unsigned int nmns;
	unsigned char *file; /* PD_FILE_MAX */
	struct pd_jvm jvm;
	struct probe_buf status, stat, cgroup;
	long clk_tck;
	unsigned long long btime_s; /* boot time, /proc/stat btime */
	unsigned int reported, warned_tmp;
};

static const char notes[] =
	"Every HotSpot JVM in scope (all without --pid/--comm or snoopers) that keeps its perf data file\n"
	"(the default; not with -XX:-UsePerfData or -XX:+PerfDisableSharedMem). Read-only: nothing attaches.\n"
	"Tables: jvm_info, jvm_proc, jvm_class, jvm_thread, jvm_mem, jvm_mem_pool, jvm_gc, jvm_runtime.\n"
	"Live configuration: {\"params\": {\"report_period\": N}, \"scope\": {...}}\n";

static int sys_openat2(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .resolve = resolve};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* Inside a process's root: symlinks resolve as they would for the process (a container's absolute
 * links stay in the container), and /proc magic links are refused. */
#define IN_ROOT (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)

static uint64_t ns_ino(int pid, const char *ns)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, ns);
	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

/* ---- scope -------------------------------------------------------------------------------------- */

static int in_scope(struct jvm_ctx *ctx, int pid)
{
	return gg_scope__has_process(&ctx->cur.scope, ctx->comm, "/proc", pid, &ctx->cgroup);
}

/* ---- finding perf data files -------------------------------------------------------------------- */

static int all_digits(const char *s, uint32_t *ret)
{
	unsigned long v = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > 0xffffffffu)
			return 0;
	}
	*ret = (uint32_t)v;
	return 1;
}

static int open_root(int pid, int *rootfd)
{
	char path[64];

	if (*rootfd >= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	*rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return *rootfd < 0 ? -errno : 0;
}

/* List <root>/tmp/hsperfdata_* of one mount namespace into m. */
/* fdopendir, with fd closed when it fails (-1: NULL). */
static DIR *fd_dir(int fd)
{
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d && fd >= 0)
		close(fd);
	return d;
}

static void list_mntns(struct jvm_ctx *ctx, int rootfd, struct mntns *m)
{
	DIR *tmp = fd_dir(sys_openat2(rootfd, "tmp", O_RDONLY | O_DIRECTORY, IN_ROOT));
	unsigned int seen = 0;
	struct dirent *d;

	if (!tmp)
		return;
	while ((d = readdir(tmp)) && m->ndirs < DIRS_MAX) {
		struct dirent *f;
		DIR *hs;

		if (++seen > TMP_SCAN_MAX) {
			if (!ctx->warned_tmp++)
				probe_log(PLOG_WARN, "a /tmp with more than %u entries: the rest not looked at",
					  TMP_SCAN_MAX);
			break;
		}
		if (strncmp(d->d_name, "hsperfdata_", 11) || strlen(d->d_name) >= sizeof(m->dirs[0]))
			continue;
		/* the directory itself, not a link somewhere else */
		hs = fd_dir(sys_openat2(dirfd(tmp), d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
					RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS));
		if (!hs)
			continue;
		snprintf(m->dirs[m->ndirs], sizeof(m->dirs[0]), "%s", d->d_name);
		while ((f = readdir(hs)) && m->nfiles < FILES_MAX) {
			uint32_t nspid;

			if (all_digits(f->d_name, &nspid)) {
				m->files[m->nfiles].nspid = nspid;
				m->files[m->nfiles].dir = (uint8_t)m->ndirs;
				m->nfiles++;
			}
		}
		closedir(hs);
		m->ndirs++;
	}
	closedir(tmp);
}

/* The entry of pid's mount namespace and root, listed on first sight this report (through pid's root,
 * opened into *rootfd when it was not yet); NULL when the table is full or the root cannot be seen. */
static struct mntns *mntns_of(struct jvm_ctx *ctx, int pid, uint64_t ino, int *rootfd)
{
	char path[64];
	struct stat st;
	struct mntns *m;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	if (stat(path, &st))
		return NULL;
	for (unsigned int i = 0; i < ctx->nmns; i++)
		if (ctx->mns[i].ino == ino && ctx->mns[i].root_dev == (uint64_t)st.st_dev &&
		    ctx->mns[i].root_ino == (uint64_t)st.st_ino)
			return &ctx->mns[i];
	if (ctx->nmns >= MNTNS_MAX || open_root(pid, rootfd))
		return NULL;
	m = &ctx->mns[ctx->nmns++];
	memset(m, 0, sizeof(*m));
	m->ino = ino;
	m->root_dev = (uint64_t)st.st_dev;
	m->root_ino = (uint64_t)st.st_ino;
	list_mntns(ctx, *rootfd, m);
	return m;
}

/* pid as its own pid namespace numbers it (the last NSpid field), which names its perf data file. */
static int nspid_of(struct jvm_ctx *ctx, int pid, uint32_t *ret)
{
	char path[64];

	if (ns_ino(pid, "pid") == ctx->self_pidns) {
		*ret = (uint32_t)pid;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (probe_read_file(path, &ctx->status, 64u << 10))
		return -ENOENT;
	return procfs_status_nspid(ctx->status.data, ret);
}

/* Read pid's perf data file into ctx->file: 0 and its length, or negative errno. The file must be a
 * regular file owned by the process's user (what HotSpot itself checks before trusting one), and
 * small. */
static int read_perfdata(struct jvm_ctx *ctx, int pid, int rootfd, const char *dir, uint32_t nspid, size_t *ret_len)
{
	char path[128], ppath[32];
	struct stat st, pst;
	ssize_t n;
	size_t got = 0;
	int fd, err = 0;

	snprintf(ppath, sizeof(ppath), "/proc/%d", pid);
	if (stat(ppath, &pst))
		return -errno;
	snprintf(path, sizeof(path), "tmp/%s/%u", dir, nspid);
	fd = sys_openat2(rootfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, IN_ROOT | RESOLVE_NO_SYMLINKS);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != pst.st_uid) {
		err = -EPERM;
		goto cleanup;
	}
	if (st.st_size < (off_t)PD_PROLOGUE_LEN || st.st_size > (off_t)PD_FILE_MAX) {
		err = -EFBIG;
		goto cleanup;
	}
	while (got < (size_t)st.st_size) {
		n = pread(fd, ctx->file + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	*ret_len = got;
cleanup:
	close(fd);
	return err;
}

/* ---- records ------------------------------------------------------------------------------------ */

static double secs(const struct pd_jvm *j, int64_t ticks)
{
	return j->hrt_frequency > 0 && ticks > 0 ? (double)ticks / (double)j->hrt_frequency : 0;
}

static uint64_t pos(int64_t v)
{
	return v > 0 ? (uint64_t)v : 0;
}

/* pid's CPU ticks (utime + stime) and start (clock ticks after boot) from /proc/<pid>/stat. */
static int proc_stat(struct jvm_ctx *ctx, int pid, unsigned long long *ret_cpu, unsigned long long *ret_start)
{
	char path[64];
	const char *s;
	unsigned long long ut, st, start;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (probe_read_file(path, &ctx->stat, 4096) || !(s = strrchr(ctx->stat.data, ')')))
		return -ENOENT;
	/* after "pid (comm)": state is field 3, utime 14, stime 15, starttime 22 */
	if (sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &ut,
		   &st, &start) != 3)
		return -EINVAL;
	*ret_cpu = ut + st;
	*ret_start = start;
	return 0;
}

static double proc_cpu_secs(struct jvm_ctx *ctx, int pid)
{
	unsigned long long cpu, start;

	if (proc_stat(ctx, pid, &cpu, &start) || ctx->clk_tck <= 0)
		return 0;
	return (double)cpu / (double)ctx->clk_tck;
}

/*
 * The file is this process's: its VM was created after the process started. A JVM that died leaves its
 * file behind (kill -9, a crash); a new process given the same pid must not be reported with the dead
 * VM's counters. Wall clocks both, the boot time in whole seconds: 2 s of slack.
 */
static int vm_is_process(struct jvm_ctx *ctx, int pid, const struct pd_jvm *j)
{
	unsigned long long cpu, start;
	int64_t start_ms;

	if (!ctx->btime_s || ctx->clk_tck <= 0 || proc_stat(ctx, pid, &cpu, &start))
		return 1; /* cannot tell */
	start_ms = (int64_t)ctx->btime_s * 1000 + (int64_t)(start * 1000ull / (unsigned long long)ctx->clk_tck);
	return j->vm_begin_ms + 2000 >= start_ms;
}

static void begin(struct probe_rec *r, const struct probe_table *t, int pid, const char *name)
{
	probe_rec__begin(r, t);
	probe_rec__u64(r, (uint64_t)pid);
	probe_rec__str(r, name);
}

static void emit_mem(struct jvm_ctx *ctx, int pid, const char *name, const char *area, int64_t used, int64_t commit,
		     int64_t max, int64_t init)
{
	static struct probe_rec r;

	begin(&r, &TBL_jvm_mem, pid, name);
	probe_rec__str(&r, area);
	probe_rec__u64(&r, pos(used));
	probe_rec__u64(&r, pos(commit));
	probe_rec__u64(&r, pos(max));
	probe_rec__u64(&r, pos(init));
	(void)probe_rt__emit(ctx->rt, &r);
}

static void emit_pool(struct jvm_ctx *ctx, int pid, const char *name, const char *pool, const struct pd_pool *p)
{
	static struct probe_rec r;

	begin(&r, &TBL_jvm_mem_pool, pid, name);
	probe_rec__str(&r, pool);
	probe_rec__u64(&r, pos(p->used));
	probe_rec__u64(&r, pos(p->capacity));
	probe_rec__u64(&r, pos(p->max));
	(void)probe_rt__emit(ctx->rt, &r);
}

/* Heap: every generation. G1 gives each generation the whole heap as its maximum, so its heap maximum
 * is the largest one, not their sum. Initial size: the spaces' initial capacities. */
static void emit_heap(struct jvm_ctx *ctx, int pid, const char *name, const struct pd_jvm *j)
{
	int64_t used = 0, commit = 0, max = 0, init = 0;
	int shared_max = !strncmp(j->gc_policy, "GarbageFirst", 12);
	char pool[2 * PD_STR_MAX + 2];

	for (unsigned int g = 0; g < j->ngens && g < PD_GENS_MAX; g++) {
		if (!j->gens[g].present)
			continue;
		commit += j->gens[g].capacity;
		if (shared_max)
			max = j->gens[g].max > max ? j->gens[g].max : max;
		else
			max += j->gens[g].max;
		for (unsigned int s = 0; s < j->gens[g].nspaces && s < PD_SPACES_MAX; s++) {
			const struct pd_pool *p = &j->gens[g].spaces[s];

			if (!p->present)
				continue;
			used += p->used;
			init += p->init;
			snprintf(pool, sizeof(pool), "%s.%s", j->gens[g].name[0] ? j->gens[g].name : "gen",
				 p->name[0] ? p->name : "space");
			emit_pool(ctx, pid, name, pool, p);
		}
	}
	emit_mem(ctx, pid, name, "heap", used, commit, max, init);
}

static void emit_jvm(struct jvm_ctx *ctx, int pid, const struct pd_jvm *j)
{
	static struct probe_rec r;
	char name[PD_STR_MAX];

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(j->command, " "), j->command);
	if (!name[0])
		snprintf(name, sizeof(name), "Unknown");

	begin(&r, &TBL_jvm_info, pid, name);
	probe_rec__str(&r, j->vm_name);
	probe_rec__str(&r, j->vm_vendor);
	probe_rec__str(&r, j->vm_version);
	probe_rec__u64(&r, 1);
	(void)probe_rt__emit(ctx->rt, &r);

	begin(&r, &TBL_jvm_proc, pid, name);
	probe_rec__f64(&r, (double)pos(j->vm_begin_ms) / 1000.0);
	probe_rec__f64(&r, proc_cpu_secs(ctx, pid));
	(void)probe_rt__emit(ctx->rt, &r);

	begin(&r, &TBL_jvm_class, pid, name);
	probe_rec__u64(&r, pos(j->cls_loaded + j->cls_shared_loaded - j->cls_unloaded - j->cls_shared_unloaded));
	probe_rec__u64(&r, pos(j->cls_loaded + j->cls_shared_loaded));
	probe_rec__u64(&r, pos(j->cls_unloaded + j->cls_shared_unloaded));
	(void)probe_rt__emit(ctx->rt, &r);

	begin(&r, &TBL_jvm_thread, pid, name);
	probe_rec__u64(&r, pos(j->threads_live));
	probe_rec__u64(&r, pos(j->threads_daemon));
	probe_rec__u64(&r, pos(j->threads_peak));
	probe_rec__u64(&r, pos(j->threads_started));
	(void)probe_rt__emit(ctx->rt, &r);

	emit_heap(ctx, pid, name, j);
	if (j->metaspace.present) {
		emit_mem(ctx, pid, name, "nonheap", j->metaspace.used, j->metaspace.capacity, j->metaspace.max,
			 j->metaspace.init);
		emit_pool(ctx, pid, name, j->metaspace.name, &j->metaspace);
	}
	if (j->class_space.present)
		emit_pool(ctx, pid, name, j->class_space.name, &j->class_space);

	for (unsigned int i = 0; i < j->ncollectors && i < PD_COLLECTORS_MAX; i++) {
		if (!j->collectors[i].present || !j->collectors[i].name[0])
			continue;
		begin(&r, &TBL_jvm_gc, pid, name);
		probe_rec__str(&r, j->collectors[i].name);
		probe_rec__u64(&r, pos(j->collectors[i].invocations));
		probe_rec__f64(&r, secs(j, j->collectors[i].ticks));
		(void)probe_rt__emit(ctx->rt, &r);
	}

	begin(&r, &TBL_jvm_runtime, pid, name);
	probe_rec__u64(&r, pos(j->safepoints));
	probe_rec__f64(&r, secs(j, j->safepoint_ticks));
	probe_rec__f64(&r, secs(j, j->safepoint_sync_ticks));
	probe_rec__u64(&r, pos(j->jit_compiles));
	probe_rec__f64(&r, secs(j, j->jit_ticks));
	(void)probe_rt__emit(ctx->rt, &r);
}

/* One process: its perf data file, if its mount namespace has one under its namespaced pid. The
 * process's root is opened only when its namespace is new this report or holds perf data files. */
static void visit(struct jvm_ctx *ctx, int pid)
{
	uint64_t mnt = ns_ino(pid, "mnt");
	struct mntns *m;
	uint32_t nspid;
	size_t len = 0;
	int rootfd = -1, err;

	if (!mnt)
		return;
	m = mntns_of(ctx, pid, mnt, &rootfd);
	if (!m || !m->nfiles || nspid_of(ctx, pid, &nspid))
		goto cleanup;
	for (unsigned int i = 0; i < m->nfiles; i++) {
		if (m->files[i].nspid != nspid)
			continue;
		if (open_root(pid, &rootfd))
			break;
		err = read_perfdata(ctx, pid, rootfd, m->dirs[m->files[i].dir], nspid, &len);
		if (err) {
			probe_log(PLOG_DEBUG, "pid %d: %s/%u: %s", pid, m->dirs[m->files[i].dir], nspid,
				  strerror(-err));
			continue;
		}
		err = pd_jvm__parse(ctx->file, len, &ctx->jvm);
		if (err) {
			probe_log(PLOG_DEBUG, "pid %d: not a usable perf data file: %s", pid, strerror(-err));
			continue;
		}
		if (!vm_is_process(ctx, pid, &ctx->jvm)) {
			probe_log(PLOG_DEBUG, "pid %d: %s/%u is older than the process (a dead JVM's)", pid,
				  m->dirs[m->files[i].dir], nspid);
			continue;
		}
		emit_jvm(ctx, pid, &ctx->jvm);
		ctx->reported++;
		break;
	}
cleanup:
	if (rootfd >= 0)
		close(rootfd);
}

/* One report period (probe_rt__run_periodic). */
static void report(void *arg)
{
	struct jvm_ctx *ctx = arg;
	struct dirent *d;
	DIR *proc;

	ctx->nmns = 0;
	ctx->reported = 0;
	proc = opendir("/proc");
	if (!proc) {
		probe_log(PLOG_WARN, "/proc: %s", strerror(errno));
		return;
	}
	while ((d = readdir(proc)) && ctx->reported < JVMS_MAX) {
		uint32_t pid;

		if (!all_digits(d->d_name, &pid) || !pid || pid > INT_MAX || !in_scope(ctx, (int)pid))
			continue;
		visit(ctx, (int)pid);
	}
	closedir(proc);
	(void)probe_rt__flush(ctx->rt);
}

/* A live configuration (probe_runner_conf): the supervisor resolves snoopers into "scope"; without it
 * the command line's scope stays. */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct jvm_conf *conf = next;

	(void)data;
	if (msg->has_scope)
		conf->scope = msg->scope;
	return 0;
}

static void describe(void *data, char *buf, size_t len)
{
	const struct jvm_ctx *ctx = data;

	snprintf(buf, len, ", scope %s", ctx->cur.scope.all ? "all" : "filtered");
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct jvm_ctx *ctx = arg;

	ctx->rt = rt;
	ctx->mns = calloc(MNTNS_MAX, sizeof(*ctx->mns));
	ctx->file = malloc(PD_FILE_MAX);
	if (!ctx->mns || !ctx->file) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	ctx->self_pidns = ns_ino(getpid(), "pid");
	ctx->clk_tck = sysconf(_SC_CLK_TCK);
	if (probe_read_file("/proc/stat", &ctx->stat, 1u << 20) == 0) {
		const char *b = strstr(ctx->stat.data, "\nbtime ");

		if (b)
			ctx->btime_s = strtoull(b + 7, NULL, 10);
	}
	return 0;
}

static void teardown(void *arg)
{
	struct jvm_ctx *ctx = arg;

	free(ctx->mns);
	free(ctx->file);
	probe_buf__free(&ctx->status);
	probe_buf__free(&ctx->stat);
	probe_buf__free(&ctx->cgroup);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct jvm_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base.scope, .comm = &g_ctx.comm, .notes = notes},
	.conf = {.base = &g_ctx.base, .cur = &g_ctx.cur, .size = sizeof(g_ctx.cur), .check = check_conf},
	.setup = setup,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	/* under the supervisor the scope comes with the first live configuration: until then,
	 * "every JVM" would report processes outside it */
	.first_config_wait_ms = PROC_SCOPE_WAIT_MS,
	.describe = describe,
	.teardown = teardown,
};
