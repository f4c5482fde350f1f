/* cglimits.c - hard limits per probe: every probe runs in a cgroup of its own (cgroup v1 where the
 * controller is mounted there, v2 otherwise) with memory, CPU and pids limits, so that a probe that leaks
 * or spins is stopped by its own limit (and restarted), not by the host's OOM killer. The probe joins its
 * cgroups itself, in the --exec-probe wrapper, before exec: nothing it allocates is charged elsewhere. */
#include "cglimits.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "supervisor.h"

static const char *const ctl_names[GG_CG__N] = {"memory", "cpu", "pids"};

/* Whether word is one of the tokens of list (separated by any of sep); list is cut up. */
static int has_token(char *list, const char *sep, const char *word)
{
	for (char *save = NULL, *o = strtok_r(list, sep, &save); o; o = strtok_r(NULL, sep, &save))
		if (!strcmp(o, word))
			return 1;
	return 0;
}

/* The mount point of the v1 hierarchy holding ctl, or of cgroup2 (ctl NULL), when line of
 * /proc/mounts is it: 1 and the point in ret. */
static int mount_line(char *line, const char *ctl, char *ret, size_t len)
{
	char dev[64], dir[512], type[32], opts[512];

	if (sscanf(line, "%63s %511s %31s %511s", dev, dir, type, opts) != 4)
		return 0;
	if (ctl ? strcmp(type, "cgroup") : strcmp(type, "cgroup2"))
		return 0;
	if (ctl && !has_token(opts, ",", ctl))
		return 0;
	snprintf(ret, len, "%s", dir);
	return 1;
}

/* This process's cgroup path in the v1 hierarchy holding ctl, or in v2 (ctl NULL), when line of
 * /proc/self/cgroup is it: 1 and the path ("/a/b", "" for the root) in ret. */
static int cgroup_line(char *line, const char *ctl, char *ret, size_t len)
{
	char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

	if (!c2)
		return 0;
	*c2 = '\0';
	if (ctl ? !has_token(c1 + 1, ",", ctl) : strcmp(line, "0") || c1[1] != '\0')
		return 0;
	c2[1 + strcspn(c2 + 1, "\n")] = '\0';
	snprintf(ret, len, "%s", strcmp(c2 + 1, "/") ? c2 + 1 : "");
	return 1;
}

/* The first line of file that match() takes (and answers in ret); 0, -ENOENT or negative errno. */
static int first_line(const char *file, int (*match)(char *line, const char *ctl, char *ret, size_t len),
		      const char *ctl, char *ret, size_t len)
{
	char line[1024];
	FILE *f = fopen(file, "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (match(line, ctl, ret, len)) {
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static int find_mount(const char *ctl, char *ret, size_t len)
{
	return first_line("/proc/mounts", mount_line, ctl, ret, len);
}

static int own_path(const char *ctl, char *ret, size_t len)
{
	return first_line("/proc/self/cgroup", cgroup_line, ctl, ret, len);
}

static int write_str(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n != (ssize_t)strlen(val))
		err = n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

/* v2: the controller must be available here and enabled for our children. */
static int v2_enable(const char *dir, const char *ctl)
{
	char path[PATH_MAX + 32], buf[512], plus[32];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", dir);
	n = gg_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (int)n : -ENOENT;
	if (!has_token(buf, " \n", ctl))
		return -ENOENT;
	snprintf(plus, sizeof(plus), "+%s", ctl);
	return write_str(dir, "cgroup.subtree_control", plus);
}

/* Directories "<prefix><pid>" next to base left by a supervisor that was SIGKILLed (its probes died with it,
 * PR_SET_PDEATHSIG): removed with their (empty) probe cgroups. */
static void reap_stale(const char *base, const char *prefix)
{
	char parent[PATH_MAX], sub[PATH_MAX + 512];
	const char *slash = strrchr(base, '/');
	struct dirent *de;
	DIR *d;

	if (!slash || (size_t)(slash - base) >= sizeof(parent))
		return;
	memcpy(parent, base, (size_t)(slash - base));
	parent[slash - base] = '\0';
	d = opendir(parent);
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t pl = strlen(prefix);
		char *end;
		long pid;
		DIR *pd;
		struct dirent *pe;

		if (strncmp(de->d_name, prefix, pl))
			continue;
		pid = strtol(de->d_name + pl, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", parent, de->d_name);
		pd = opendir(sub);
		while (pd && (pe = readdir(pd))) {
			char child[PATH_MAX + 1024];

			if (pe->d_type != DT_DIR || pe->d_name[0] == '.')
				continue;
			snprintf(child, sizeof(child), "%s/%s", sub, pe->d_name);
			(void)rmdir(child);
		}
		if (pd)
			closedir(pd);
		(void)rmdir(sub);
	}
	closedir(d);
}

/* v2 allows controllers for children only in a cgroup without processes of its own (but the root):
 * in a delegated service cgroup the supervisor moves itself into a leaf "supervisor" first. */
static int v2_enable_delegated(const char *root, const char *ctl)
{
	char leaf[PATH_MAX + 16], pid[24];
	int err = v2_enable(root, ctl);

	if (err != -EBUSY)
		return err;
	if (snprintf(leaf, sizeof(leaf), "%s/supervisor", root) >= (int)sizeof(leaf))
		return -ENAMETOOLONG;
	if (mkdir(leaf, 0755) && errno != EEXIST)
		return -errno;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	err = write_str(leaf, "cgroup.procs", pid);
	return err ? err : v2_enable(root, ctl);
}

/*
 * Real-time budget (v1 cpu controller on a kernel with RT group scheduling, where cpu.rt_runtime_us
 * exists): a new cgroup gets 0, and then no thread in it may be SCHED_FIFO. stackprobe's and autotrace's
 * on-CPU pacers are SCHED_FIFO threads that run microseconds per sampling period; without it they wait
 * behind whatever runs (a nice -10 task, a spinning workload), skip strata and arm shots late (counted
 * in oncpu_missed / oncpu_late, and a sampler at the mercy of the workload it samples). So the
 * supervisor's cgroup gets a quarter of a CPU of real-time runtime per CPU and second, and each probe's
 * cgroup 1 ms per 100 ms (1 %): plenty for the pacers (~0.2 ms per 100 ms at a 10 ms period), and a
 * bound on any probe's real-time threads. Where the budget cannot be had (the supervisor's own cgroup has
 * none to give, as under a service manager that sets none), the pacers run at normal priority. */
#define RT_BASE_RUNTIME_US  250000
#define RT_PROBE_PERIOD_US  100000
#define RT_PROBE_RUNTIME_US 1000

static void rt_budget(const char *dir, unsigned int runtime_us, unsigned int period_us)
{
	char val[32];
	int err;

	snprintf(val, sizeof(val), "%u", period_us);
	err = write_str(dir, "cpu.rt_period_us", val);
	if (err == -ENOENT)
		return; /* no RT group scheduling: real-time threads are allowed anywhere */
	snprintf(val, sizeof(val), "%u", runtime_us);
	if (!err)
		err = write_str(dir, "cpu.rt_runtime_us", val);
	if (err)
		gg_debug("cgroup cpu: no real-time budget for %s: %s (probes' real-time threads run at normal "
			 "priority)",
			 dir, strerror(-err));
}

int gg_cglimits__init(struct gg_cglimits *cg, const char *prefix)
{
	char tag[64];
	char mnt[PATH_MAX], own[PATH_MAX], v2root[PATH_MAX];
	int have_v2;

	memset(cg, 0, sizeof(*cg));
	snprintf(tag, sizeof(tag), "%.40s%d", prefix, (int)getpid());
	have_v2 = find_mount(NULL, mnt, sizeof(mnt)) == 0 && own_path(NULL, own, sizeof(own)) == 0 &&
		  strlen(mnt) + strlen(own) < sizeof(v2root);
	if (have_v2)
		snprintf(v2root, sizeof(v2root), "%.2047s%.2047s", mnt, own);
	for (int c = 0; c < GG_CG__N; c++) {
		char *base = cg->base[c];

		/* v1 first: on a hybrid host a controller bound to a v1 hierarchy is absent from v2 */
		if (find_mount(ctl_names[c], mnt, sizeof(mnt)) == 0 && own_path(ctl_names[c], own, sizeof(own)) == 0) {
			if (strlen(mnt) + strlen(own) + strlen(tag) + 2 > PATH_MAX)
				continue;
			snprintf(base, PATH_MAX, "%.1023s%.2047s/%.63s", mnt, own, tag);
		} else if (have_v2 && v2_enable_delegated(v2root, ctl_names[c]) == 0) {
			if (strlen(v2root) + strlen(tag) + 2 > PATH_MAX)
				continue;
			snprintf(base, PATH_MAX, "%.3071s/%.63s", v2root, tag);
			cg->v2[c] = 1;
		} else {
			continue;
		}
		reap_stale(base, prefix);
		if (mkdir(base, 0755) && errno != EEXIST) {
			gg_warn("cgroup %s: cannot create %s: %s; probes run without %s limits", ctl_names[c], base,
				strerror(errno), ctl_names[c]);
			base[0] = '\0';
			continue;
		}
		if (cg->v2[c] && v2_enable(base, ctl_names[c]))
			gg_warn("cgroup %s: cannot enable it below %s", ctl_names[c], base);
		if (c == GG_CG_CPU && !cg->v2[c])
			rt_budget(base, RT_BASE_RUNTIME_US, 1000000);
		cg->available++;
	}
	return cg->available ? 0 : -ENOENT;
}

static int probe_dir(const struct gg_cglimits *cg, int c, const char *probe, char *ret, size_t len)
{
	if (!cg->base[c][0])
		return -ENOENT;
	if (snprintf(ret, len, "%s/%s", cg->base[c], probe) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int gg_cglimits__prepare(const struct gg_cglimits *cg, const char *probe, const struct gg_limits *lim, char *procs,
			 size_t len)
{
	size_t n = 0;
	int err = 0;

	procs[0] = '\0';
	for (int c = 0; c < GG_CG__N; c++) {
		char dir[PATH_MAX], val[64];
		int e = 0;

		if (probe_dir(cg, c, probe, dir, sizeof(dir)))
			continue;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			err = -errno;
			continue;
		}
		switch (c) {
		case GG_CG_MEM:
			if (cg->v2[c]) {
				snprintf(val, sizeof(val), lim->memory_mb ? "%llu" : "max",
					 (unsigned long long)lim->memory_mb << 20);
				e = write_str(dir, "memory.max", val);
				/* no swapping instead of the limit (absent without swap accounting) */
				(void)write_str(dir, "memory.swap.max", lim->memory_mb ? "0" : "max");
			} else {
				snprintf(val, sizeof(val), "%lld",
					 lim->memory_mb ? (long long)lim->memory_mb << 20 : -1LL);
				/* memory+swap as large as memory: lowered after memory, raised before it */
				if (!lim->memory_mb)
					(void)write_str(dir, "memory.memsw.limit_in_bytes", "-1");
				e = write_str(dir, "memory.limit_in_bytes", val);
				if (!e && lim->memory_mb)
					(void)write_str(dir, "memory.memsw.limit_in_bytes", val);
			}
			break;
		case GG_CG_CPU:
			if (cg->v2[c]) {
				if (lim->cpu_percent)
					snprintf(val, sizeof(val), "%d 100000", lim->cpu_percent * 1000);
				else
					snprintf(val, sizeof(val), "max 100000");
				e = write_str(dir, "cpu.max", val);
			} else {
				e = write_str(dir, "cpu.cfs_period_us", "100000");
				snprintf(val, sizeof(val), "%d", lim->cpu_percent ? lim->cpu_percent * 1000 : -1);
				if (!e)
					e = write_str(dir, "cpu.cfs_quota_us", val);
				rt_budget(dir, RT_PROBE_RUNTIME_US, RT_PROBE_PERIOD_US);
			}
			break;
		default:
			snprintf(val, sizeof(val), lim->pids ? "%d" : "max", lim->pids);
			e = write_str(dir, "pids.max", val);
			break;
		}
		if (e) {
			err = e;
			continue;
		}
		if (n + strlen(dir) + 16 < len)
			n += (size_t)snprintf(procs + n, len - n, "%s%s/cgroup.procs", n ? ":" : "", dir);
	}
	return err;
}

int gg_cglimits__join(const char *procs)
{
	char pid[24];
	int err = 0;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	while (procs && *procs) {
		size_t w = strcspn(procs, ":");
		char path[PATH_MAX];
		int fd;

		if (w < sizeof(path)) {
			memcpy(path, procs, w);
			path[w] = '\0';
			fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0 || write(fd, pid, strlen(pid)) != (ssize_t)strlen(pid))
				err = -errno;
			if (fd >= 0)
				close(fd);
		}
		procs += w;
		if (*procs == ':')
			procs++;
	}
	return err;
}

uint64_t gg_cglimits__oom_kills(const struct gg_cglimits *cg, const char *probe)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], buf[1024];
	const char *key;

	if (probe_dir(cg, GG_CG_MEM, probe, dir, sizeof(dir)))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, cg->v2[GG_CG_MEM] ? "memory.events" : "memory.oom_control");
	if (gg_read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	key = strstr(buf, "oom_kill ");
	return key ? strtoull(key + 9, NULL, 10) : 0;
}

void gg_cglimits__cleanup(const struct gg_cglimits *cg, const char *const *probes, unsigned int n)
{
	for (int c = 0; c < GG_CG__N; c++) {
		char dir[PATH_MAX];

		if (!cg->base[c][0])
			continue;
		for (unsigned int i = 0; i < n; i++) {
			if (!probe_dir(cg, c, probes[i], dir, sizeof(dir)))
				(void)rmdir(dir);
		}
		(void)rmdir(cg->base[c]);
	}
}
