/* proc.c - the proc sub-probe: /proc/<pid> metrics of the processes in the monitoring scope. */
#include "system_infos.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "system_infos.meta.h"

#define CMDLINE_MAX   256u
#define PROC_FILE_MAX (1u << 20)

int si_proc__init(struct si_proc *p)
{
	long tck = sysconf(_SC_CLK_TCK);

	memset(p, 0, sizeof(*p));
	p->clk_tck = tck > 0 ? (double)tck : 100.0;
	p->page_size = sysconf(_SC_PAGESIZE);
	if (p->page_size <= 0)
		p->page_size = 4096;
	return 0;
}

void si_proc__free(struct si_proc *p)
{
	if (!p)
		return;
	free(p->rows);
	probe_buf__free(&p->stat);
	probe_buf__free(&p->status);
	probe_buf__free(&p->io);
	probe_buf__free(&p->smaps);
	probe_buf__free(&p->cmdline);
	probe_buf__free(&p->cgroup);
	memset(p, 0, sizeof(*p));
}

/* "(comm)" of a /proc/<pid>/stat text; the comm may hold ')' so take the last one. */
static int stat_comm(const char *data, size_t len, char *comm, size_t clen, const char **after)
{
	const char *open = memchr(data, '(', len);
	const char *close = NULL;

	for (const char *q = data + len; q > data; q--)
		if (q[-1] == ')') {
			close = q - 1;
			break;
		}
	if (!open || !close || close < open)
		return -EINVAL;
	snprintf(comm, clen, "%.*s", (int)(close - open - 1), open + 1);
	*after = close + 1;
	return 0;
}

/* Where cgroup2 is mounted (found once; /sys/fs/cgroup when it cannot be told). */
static const char *cgroup2_root(void)
{
	static char root[512];
	struct probe_buf m = {0};

	if (root[0])
		return root;
	if (!probe_read_file("/proc/self/mounts", &m, SI_PROC_FILE_MAX)) {
		const char *l = m.data, *end = m.data + m.len;

		while (l < end) {
			const char *eol = si_line_end(l, end);
			const char *sp1 = memchr(l, ' ', (size_t)(eol - l));
			const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;

			if (sp2 && eol - sp2 > 8 && !memcmp(sp2 + 1, "cgroup2 ", 8)) {
				snprintf(root, sizeof(root), "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
				break;
			}
			l = eol < end ? eol + 1 : end;
		}
	}
	probe_buf__free(&m);
	if (!root[0])
		snprintf(root, sizeof(root), "/sys/fs/cgroup");
	return root;
}

/*
 * Does pid's cgroup v2, or one of its ancestors, belong to sc's cgroup set? A cgroup v2 id is the
 * inode number of its directory under the cgroup2 mount, as the BPF filter sees it.
 */
static int cgroup_in_scope(struct si_proc *p, const struct gg_scope *sc, int pid)
{
	char path[PATH_MAX];
	const char *s, *e;
	size_t rootlen;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (probe_read_file(path, &p->cgroup, 64u << 10))
		return 0;
	s = strstr(p->cgroup.data, "0::");
	if (!s || (s != p->cgroup.data && s[-1] != '\n'))
		return 0;
	s += 3;
	e = si_line_end(s, p->cgroup.data + p->cgroup.len);
	rootlen = strlen(cgroup2_root());
	n = snprintf(path, sizeof(path), "%s%.*s", cgroup2_root(), (int)(e - s), s);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	for (int depth = 0; depth <= GG_CGROUP_MAX_DEPTH + 1; depth++) {
		struct stat st;
		char *slash;

		if (stat(path, &st) == 0)
			for (uint32_t i = 0; i < sc->ncgrp; i++)
				if (sc->cgrp[i] == (uint64_t)st.st_ino)
					return 1;
		slash = strrchr(path, '/');
		if (!slash || (size_t)(slash - path) < rootlen)
			break;
		*slash = '\0';
	}
	return 0;
}

static int in_scope(struct si_proc *p, const struct gg_scope *sc, const char *comm, int pid)
{
	char path[64], c[64];

	if (sc->all)
		return 1;
	for (uint32_t i = 0; i < sc->ntgid; i++)
		if (sc->tgid[i] == (uint32_t)pid)
			return 1;
	if (comm) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		if (!si_read_line(path, c, sizeof(c)) && !strcmp(c, comm))
			return 1;
	}
	return sc->ncgrp && cgroup_in_scope(p, sc, pid);
}

static struct si_proc_row *proc_row(struct si_proc *p, int pid, uint64_t starttime)
{
	for (unsigned int i = 0; i < p->nrows; i++) {
		if (p->rows[i].pid == pid) {
			if (p->rows[i].starttime != starttime) { /* the pid was reused: start afresh */
				memset(&p->rows[i], 0, sizeof(p->rows[i]));
				p->rows[i].pid = pid;
				p->rows[i].starttime = starttime;
			}
			return &p->rows[i];
		}
	}
	if (p->nrows == p->cap) {
		unsigned int cap = p->cap ? p->cap * 2 : 16;
		struct si_proc_row *rows = realloc(p->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		p->rows = rows;
		p->cap = cap;
	}
	memset(&p->rows[p->nrows], 0, sizeof(p->rows[0]));
	p->rows[p->nrows].pid = pid;
	p->rows[p->nrows].starttime = starttime;
	return &p->rows[p->nrows++];
}

/* "Key:   value kB" lines: value of key (0 when absent). */
static uint64_t kv_u64(const struct probe_buf *b, const char *key)
{
	size_t klen = strlen(key);
	const char *p = b->data, *end = b->data + b->len;

	while (p < end) {
		const char *eol = si_line_end(p, end);
		uint64_t v;

		if ((size_t)(eol - p) > klen && !memcmp(p, key, klen) && p[klen] == ':' &&
		    si_parse_u64(si_skip_blanks(p + klen + 1, eol), eol, 10, &v))
			return v;
		p = eol < end ? eol + 1 : end;
	}
	return 0;
}

static unsigned int count_fds(int pid)
{
	char path[64];
	unsigned int n = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* The smaps_rollup lines reported, in the order of the system_proc fields. */
static const char *const smaps_keys[8] = {"Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty",
					  "Referenced",	  "LazyFree",	  "Swap",	   "SwapPss"};

/* One system_proc record for pid; -ENOENT when it went away meanwhile. */
static int report_one(struct si_proc *p, struct probe_rt *rt, int pid, uint64_t now)
{
	char path[64], comm[64], cmd[CMDLINE_MAX + 1];
	int64_t f[40] = {0}; /* /proc/<pid>/stat fields by their number in proc(5) */
	const char *q, *end;
	struct si_proc_row *row;
	struct probe_rec rec;
	struct rlimit lim;
	unsigned int fds;
	double cpu_util = 0, fd_free = 0;
	uint64_t rss, smaps[8];
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (probe_read_file(path, &p->stat, 64u << 10) || stat_comm(p->stat.data, p->stat.len, comm, sizeof(comm), &q))
		return -ENOENT;
	end = p->stat.data + p->stat.len;
	q = si_skip_blanks(q, end);
	q = q < end ? q + 1 : end; /* state (field 3) is a letter */
	for (int i = 4; i < 40 && q < end; i++) {
		int neg;
		uint64_t v = 0;

		q = si_skip_blanks(q, end);
		neg = q < end && *q == '-';
		q = si_parse_u64(q + neg, end, 10, &v);
		if (!q)
			break;
		f[i] = neg ? -(int64_t)v : (int64_t)v;
	}
	row = proc_row(p, pid, (uint64_t)f[22]);
	if (row) {
		row->seen = 1;
		row->have_prev = row->cur_ms != 0;
		row->prev_cpu_ticks = row->cpu_ticks;
		row->prev_ms = row->cur_ms;
		row->cpu_ticks = (uint64_t)(f[14] + f[15]);
		row->cur_ms = now;
		if (row->have_prev && now > row->prev_ms && row->cpu_ticks >= row->prev_cpu_ticks)
			cpu_util = si_percent((double)(row->cpu_ticks - row->prev_cpu_ticks) / p->clk_tck,
					      (double)(now - row->prev_ms) / 1000.0);
	}

	snprintf(path, sizeof(path), "/proc/%d/io", pid);
	if (probe_read_file(path, &p->io, PROC_FILE_MAX))
		p->io.len = 0;
	if (row && row->smaps_ms && now - row->smaps_ms < SI_SMAPS_EVERY_MS) {
		memcpy(smaps, row->smaps, sizeof(smaps));
	} else {
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
		if (probe_read_file(path, &p->smaps, PROC_FILE_MAX)) /* kernel threads have none */
			p->smaps.len = 0;
		for (unsigned int i = 0; i < 8; i++)
			smaps[i] = kv_u64(&p->smaps, smaps_keys[i]);
		if (row) {
			memcpy(row->smaps, smaps, sizeof(smaps));
			row->smaps_ms = now;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	cmd[0] = '\0';
	if (!probe_read_file(path, &p->cmdline, 64u << 10)) {
		n = p->cmdline.len < CMDLINE_MAX ? p->cmdline.len : CMDLINE_MAX;
		memcpy(cmd, p->cmdline.data, n);
		while (n > 0 && cmd[n - 1] == '\0')
			n--;
		for (size_t i = 0; i < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[n] = '\0';
	}
	fds = count_fds(pid);
	if (prlimit(pid, RLIMIT_NOFILE, NULL, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur > 0)
		fd_free = lim.rlim_cur > fds ? si_percent((double)(lim.rlim_cur - fds), (double)lim.rlim_cur) : 0;
	rss = f[24] > 0 ? (uint64_t)f[24] * (uint64_t)p->page_size : 0;

	probe_rec__begin(&rec, &TBL_system_proc);
	probe_rec__i64(&rec, pid);
	probe_rec__str(&rec, comm);
	probe_rec__i64(&rec, f[5]);
	probe_rec__i64(&rec, f[4]);
	probe_rec__str(&rec, cmd);
	probe_rec__u64(&rec, fds);
	probe_rec__f64(&rec, fd_free);
	probe_rec__u64(&rec, kv_u64(&p->io, "rchar"));
	probe_rec__u64(&rec, kv_u64(&p->io, "wchar"));
	probe_rec__u64(&rec, kv_u64(&p->io, "syscr"));
	probe_rec__u64(&rec, kv_u64(&p->io, "syscw"));
	probe_rec__u64(&rec, kv_u64(&p->io, "read_bytes"));
	probe_rec__u64(&rec, kv_u64(&p->io, "write_bytes"));
	probe_rec__u64(&rec, kv_u64(&p->io, "cancelled_write_bytes"));
	for (unsigned int i = 0; i < 8; i++)
		probe_rec__u64(&rec, smaps[i]);
	probe_rec__u64(&rec, (uint64_t)(f[10] > 0 ? f[10] : 0));
	probe_rec__u64(&rec, (uint64_t)(f[12] > 0 ? f[12] : 0));
	probe_rec__u64(&rec, (uint64_t)(f[14] > 0 ? f[14] : 0));
	probe_rec__u64(&rec, (uint64_t)(f[15] > 0 ? f[15] : 0));
	probe_rec__u64(&rec, (uint64_t)(f[16] > 0 ? f[16] : 0));
	probe_rec__u64(&rec, (uint64_t)(f[17] > 0 ? f[17] : 0));
	probe_rec__i64(&rec, f[18]);
	probe_rec__i64(&rec, f[19]);
	probe_rec__i64(&rec, f[20]);
	probe_rec__u64(&rec, (uint64_t)(f[23] > 0 ? f[23] : 0));
	probe_rec__u64(&rec, rss);
	probe_rec__f64(&rec, si_percent((double)rss / 1024.0, (double)p->mem_total_kB));
	probe_rec__i64(&rec, f[39]);
	probe_rec__f64(&rec, cpu_util);
	return probe_rt__emit(rt, &rec);
}

static void mem_total(struct si_proc *p)
{
	struct probe_buf b = {0};

	if (!probe_read_file("/proc/meminfo", &b, SI_PROC_FILE_MAX))
		p->mem_total_kB = kv_u64(&b, "MemTotal");
	probe_buf__free(&b);
}

int si_proc__report(struct si_proc *p, struct probe_rt *rt, const struct gg_scope *sc, const char *comm)
{
	uint64_t now = probe_now_mono_ms();
	unsigned int count = 0, skipped = 0, i;

	if (!p->mem_total_kB)
		mem_total(p);
	for (i = 0; i < p->nrows; i++)
		p->rows[i].seen = 0;
	if (!sc->all && !comm && !sc->ncgrp) {
		/* Only pids: no need to walk /proc. */
		for (i = 0; i < sc->ntgid; i++) {
			if (count >= SI_PROC_MAX) {
				skipped++;
				continue;
			}
			if (!report_one(p, rt, (int)sc->tgid[i], now))
				count++;
		}
	} else {
		DIR *d = opendir("/proc");
		struct dirent *de;

		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			uint64_t pid;
			const char *e = de->d_name + strlen(de->d_name);

			if (si_parse_u64(de->d_name, e, 10, &pid) != e || pid == 0 || pid > 0x7fffffff)
				continue;
			if (!in_scope(p, sc, comm, (int)pid))
				continue;
			if (count >= SI_PROC_MAX) {
				skipped++;
				continue;
			}
			if (!report_one(p, rt, (int)pid, now))
				count++;
		}
		closedir(d);
	}
	for (i = 0; i < p->nrows;) {
		if (!p->rows[i].seen)
			p->rows[i] = p->rows[--p->nrows];
		else
			i++;
	}
	if (skipped && skipped != p->skipped)
		probe_log(PLOG_WARN, "proc: %u processes beyond the limit of %u are not reported", skipped,
			  SI_PROC_MAX);
	p->skipped = skipped;
	return 0;
}
