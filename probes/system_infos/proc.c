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
	snprintf(p->root, sizeof(p->root), "/proc");
	p->top = SI_PROC_TOP_DEFAULT;
	return 0;
}

void si_proc__free(struct si_proc *p)
{
	if (!p)
		return;
	free(p->rows);
	free(p->cands);
	probe_buf__free(&p->buf);
	probe_buf__free(&p->io);
	memset(p, 0, sizeof(*p));
}

/* A candidate for the top processes of a period (scope "all"). */
struct si_proc_cand {
	int pid;
	double score;	 /* share of one CPU in the period + share of the memory */
	double cpu_util; /* percent of one CPU in the period */
};

int si_proc_parse_stat(const char *data, size_t len, struct si_proc_stat *ret)
{
	const char *open = memchr(data, '(', len), *close = NULL, *q, *end = data + len;

	/* the comm may hold ')' itself: take the last one */
	for (const char *c = end; c > data; c--)
		if (c[-1] == ')') {
			close = c - 1;
			break;
		}
	if (!open || !close || close < open)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->comm, sizeof(ret->comm), "%.*s", (int)(close - open - 1), open + 1);
	q = si_skip_blanks(close + 1, end);
	q = q < end ? q + 1 : end; /* state (field 3) is a letter */
	for (unsigned int i = 4; i < sizeof(ret->f) / sizeof(ret->f[0]) && q < end; i++) {
		int neg;
		uint64_t v = 0;

		q = si_skip_blanks(q, end);
		neg = q < end && *q == '-';
		q = si_parse_u64(q + neg, end, 10, &v);
		if (!q)
			break;
		v = v > INT64_MAX ? INT64_MAX : v;
		ret->f[i] = neg ? -(int64_t)v : (int64_t)v;
	}
	return 0;
}

double si_proc_cpu_percent(uint64_t ticks, uint64_t prev_ticks, uint64_t ms, uint64_t prev_ms, double clk_tck)
{
	if (!prev_ms || ms <= prev_ms || ticks < prev_ticks || !(clk_tck > 0))
		return 0;
	return si_percent((double)(ticks - prev_ticks) / clk_tck, (double)(ms - prev_ms) / 1000.0);
}

/* The row of pid (rows are sorted by pid), made when absent; NULL when SI_PROC_TRACK_MAX rows are in
 * use or out of memory. */
static struct si_proc_row *proc_row(struct si_proc *p, int pid, uint64_t starttime)
{
	unsigned int lo = 0, hi = p->nrows;
	struct si_proc_row *r;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (p->rows[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nrows && p->rows[lo].pid == pid) {
		r = &p->rows[lo];
		if (r->starttime != starttime) { /* the pid was reused: start afresh */
			memset(r, 0, sizeof(*r));
			r->pid = pid;
			r->starttime = starttime;
		}
		return r;
	}
	r = si_grow(p->rows, p->nrows + 1, &p->cap, sizeof(*r), 64, SI_PROC_TRACK_MAX);
	if (!r)
		return NULL;
	p->rows = r;
	memmove(&p->rows[lo + 1], &p->rows[lo], (p->nrows - lo) * sizeof(*r));
	p->nrows++;
	r = &p->rows[lo];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->starttime = starttime;
	return r;
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

static unsigned int count_fds(const struct si_proc *p, int pid)
{
	char path[320];
	unsigned int n = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%d/fd", p->root, pid);
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

/*
 * Read and parse /proc/<pid>/stat into *st and move pid's row on (CPU time since the previous sample:
 * *ret_cpu_util, percent of one CPU). -ENOENT when the process went away meanwhile.
 */
static int sample(struct si_proc *p, int pid, uint64_t now, struct si_proc_stat *st, double *ret_cpu_util)
{
	char path[320];
	struct si_proc_row *row;

	*ret_cpu_util = 0;
	snprintf(path, sizeof(path), "%s/%d/stat", p->root, pid);
	if (probe_read_file(path, &p->buf, 64u << 10) || si_proc_parse_stat(p->buf.data, p->buf.len, st))
		return -ENOENT;
	row = proc_row(p, pid, (uint64_t)st->f[22]);
	if (row && !row->seen) {
		row->seen = 1;
		row->have_prev = row->cur_ms != 0;
		row->prev_cpu_ticks = row->cpu_ticks;
		row->prev_ms = row->cur_ms;
		row->cpu_ticks = (uint64_t)(st->f[14] > 0 ? st->f[14] : 0) + (uint64_t)(st->f[15] > 0 ? st->f[15] : 0);
		row->cur_ms = now;
		*ret_cpu_util =
			si_proc_cpu_percent(row->cpu_ticks, row->prev_cpu_ticks, row->cur_ms, row->prev_ms, p->clk_tck);
	}
	return 0;
}

static uint64_t rss_bytes(const struct si_proc *p, const struct si_proc_stat *st)
{
	return st->f[24] > 0 ? (uint64_t)st->f[24] * (uint64_t)p->page_size : 0;
}

/* One system_proc record for pid, from its parsed stat and the other /proc/<pid> files. */
static int report_one(struct si_proc *p, struct probe_rt *rt, int pid, uint64_t now, const struct si_proc_stat *st,
		      double cpu_util)
{
	char path[320], cmd[CMDLINE_MAX + 1];
	const int64_t *f = st->f;
	struct si_proc_row *row = proc_row(p, pid, (uint64_t)f[22]);
	struct probe_rec rec;
	struct rlimit lim;
	unsigned int fds;
	double fd_free = 0;
	uint64_t rss, smaps[8];
	size_t n;

	snprintf(path, sizeof(path), "%s/%d/io", p->root, pid);
	if (probe_read_file(path, &p->io, PROC_FILE_MAX))
		p->io.len = 0;
	if (row && row->smaps_ms && now - row->smaps_ms < SI_SMAPS_EVERY_MS) {
		memcpy(smaps, row->smaps, sizeof(smaps));
	} else {
		snprintf(path, sizeof(path), "%s/%d/smaps_rollup", p->root, pid);
		if (probe_read_file(path, &p->buf, PROC_FILE_MAX)) /* kernel threads have none */
			p->buf.len = 0;
		for (unsigned int i = 0; i < 8; i++)
			smaps[i] = kv_u64(&p->buf, smaps_keys[i]);
		if (row) {
			memcpy(row->smaps, smaps, sizeof(smaps));
			row->smaps_ms = now;
		}
	}
	snprintf(path, sizeof(path), "%s/%d/cmdline", p->root, pid);
	cmd[0] = '\0';
	if (!probe_read_file(path, &p->buf, 64u << 10)) {
		n = p->buf.len < CMDLINE_MAX ? p->buf.len : CMDLINE_MAX;
		memcpy(cmd, p->buf.data, n);
		while (n > 0 && cmd[n - 1] == '\0')
			n--;
		for (size_t i = 0; i < n; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[n] = '\0';
	}
	fds = count_fds(p, pid);
	if (prlimit(pid, RLIMIT_NOFILE, NULL, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur > 0)
		fd_free = lim.rlim_cur > fds ? si_percent((double)(lim.rlim_cur - fds), (double)lim.rlim_cur) : 0;
	rss = rss_bytes(p, st);

	probe_rec__begin(&rec, &TBL_system_proc);
	probe_rec__i64(&rec, pid);
	probe_rec__str(&rec, st->comm);
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

/* Sample pid and report it at once (a process in a filtered scope). 1 when reported, 0 when gone. */
static int sample_report(struct si_proc *p, struct probe_rt *rt, int pid, uint64_t now)
{
	static struct si_proc_stat st;
	double cpu;

	if (sample(p, pid, now, &st, &cpu))
		return 0;
	(void)report_one(p, rt, pid, now, &st, cpu);
	return 1;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct si_proc_cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->pid - y->pid;
}

/* Scope "all" with a top: every process sampled, the p->top with the highest score reported. */
static int report_top(struct si_proc *p, struct probe_rt *rt, DIR *d, uint64_t now)
{
	static struct si_proc_stat st;
	unsigned int reported = 0, i;
	struct dirent *de;

	p->ncands = 0;
	while ((de = readdir(d))) {
		const char *e = de->d_name + strlen(de->d_name);
		struct si_proc_cand *c;
		uint64_t pid;
		double cpu;

		if (si_parse_u64(de->d_name, e, 10, &pid) != e || pid == 0 || pid > 0x7fffffff)
			continue;
		if (sample(p, (int)pid, now, &st, &cpu))
			continue;
		c = si_grow(p->cands, p->ncands + 1, &p->cands_cap, sizeof(*c), 256, SI_PROC_TRACK_MAX);
		if (!c)
			break;
		p->cands = c;
		c = &p->cands[p->ncands++];
		c->pid = (int)pid;
		c->cpu_util = cpu;
		c->score = cpu / 100.0 +
			   (p->mem_total_kB ? (double)rss_bytes(p, &st) / 1024.0 / (double)p->mem_total_kB : 0);
	}
	if (p->ncands) /* cands is NULL until the first one */
		qsort(p->cands, p->ncands, sizeof(*p->cands), cmp_cand);
	for (i = 0; i < p->ncands && reported < p->top; i++) {
		char path[320];

		/* fresh values for the record; the CPU share is the one ranked on */
		snprintf(path, sizeof(path), "%s/%d/stat", p->root, p->cands[i].pid);
		if (probe_read_file(path, &p->buf, 64u << 10) || si_proc_parse_stat(p->buf.data, p->buf.len, &st))
			continue;
		if (!report_one(p, rt, p->cands[i].pid, now, &st, p->cands[i].cpu_util))
			reported++;
	}
	p->left_out = p->ncands > reported ? p->ncands - reported : 0;
	if (p->left_out && (!p->left_out_logged_ms || now - p->left_out_logged_ms >= 600000u)) {
		probe_log(PLOG_INFO,
			  "proc: no snoopers: %u processes reported (the most CPU + memory), %u left out "
			  "(params.proc_top)",
			  reported, p->left_out);
		p->left_out_logged_ms = now;
	}
	return 0;
}

static void mem_total(struct si_proc *p)
{
	struct probe_buf b = {0};
	char path[320];

	snprintf(path, sizeof(path), "%s/meminfo", p->root);
	if (!probe_read_file(path, &b, SI_PROC_FILE_MAX))
		p->mem_total_kB = kv_u64(&b, "MemTotal");
	probe_buf__free(&b);
}

int si_proc__report(struct si_proc *p, struct probe_rt *rt, const struct gg_scope *sc, const char *comm)
{
	uint64_t now = probe_now_mono_ms();
	unsigned int count = 0, skipped = 0, i, kept;
	int err = 0;

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
			count += (unsigned int)sample_report(p, rt, (int)sc->tgid[i], now);
		}
	} else {
		DIR *d = opendir(p->root);
		struct dirent *de;

		if (!d)
			return -errno;
		if (sc->all && p->top && p->top < SI_PROC_MAX) {
			err = report_top(p, rt, d, now);
		} else {
			while ((de = readdir(d))) {
				uint64_t pid;
				const char *e = de->d_name + strlen(de->d_name);

				if (si_parse_u64(de->d_name, e, 10, &pid) != e || pid == 0 || pid > 0x7fffffff)
					continue;
				if (!gg_scope__has_process(sc, comm, p->root, (int)pid, &p->buf))
					continue;
				if (count >= SI_PROC_MAX) {
					skipped++;
					continue;
				}
				count += (unsigned int)sample_report(p, rt, (int)pid, now);
			}
		}
		closedir(d);
	}
	/* Forget the processes not seen (the rows stay sorted). */
	for (i = 0, kept = 0; i < p->nrows; i++)
		if (p->rows[i].seen)
			p->rows[kept++] = p->rows[i];
	p->nrows = kept;
	if (skipped && skipped != p->skipped)
		probe_log(PLOG_WARN, "proc: %u processes beyond the limit of %u are not reported", skipped,
			  SI_PROC_MAX);
	p->skipped = skipped;
	return err;
}
