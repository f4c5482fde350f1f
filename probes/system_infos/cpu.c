/* cpu.c - the cpu sub-probe: per-CPU times, softirqs, softnet drops, frequency and utilisation. */
#include "system_infos.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "system_infos.meta.h"

/* CPU numbers beyond this are ignored (the kernel's NR_CPUS maximum is 8192). */
#define SI_CPU_ID_MAX 16384u

enum {
	WARN_STAT = 1u << 0,
	WARN_SOFTIRQS = 1u << 1,
	WARN_SOFTNET = 1u << 2,
	WARN_CPUINFO = 1u << 3,
};

int si_cpu__init(struct si_cpu *c)
{
	long tck = sysconf(_SC_CLK_TCK);

	memset(c, 0, sizeof(*c));
	c->clk_tck = tck > 0 ? (double)tck : 100.0;
	return si_cpu__baseline(c);
}

void si_cpu__free(struct si_cpu *c)
{
	if (!c)
		return;
	free(c->rows);
	free(c->col_cpu);
	probe_buf__free(&c->buf);
	memset(c, 0, sizeof(*c));
}

/* The row of CPU id, growing the table as needed; NULL for an absurd id or out of memory. */
static struct si_cpu_row *cpu_row(struct si_cpu *c, uint64_t id)
{
	if (id >= SI_CPU_ID_MAX)
		return NULL;
	if (id >= c->nrows) {
		unsigned int n = c->nrows;
		struct si_cpu_row *rows = si_grow(c->rows, (unsigned int)id + 1, &n, sizeof(*rows), 64, SI_CPU_ID_MAX);

		if (!rows)
			return NULL;
		memset(rows + c->nrows, 0, (n - c->nrows) * sizeof(*rows));
		c->rows = rows;
		c->nrows = n;
	}
	return &c->rows[id];
}

/* Read path into c->buf; a failure is logged once (bit of c->warned). 0 or -errno. */
static int cpu_read(struct si_cpu *c, const char *path, unsigned int bit)
{
	int err = probe_read_file(path, &c->buf, SI_PROC_FILE_MAX);

	if (err && !(c->warned & bit)) {
		c->warned |= bit;
		probe_log(PLOG_WARN, "cannot read %s: %s (its fields are reported as 0)", path, strerror(-err));
	}
	return err;
}

/* "cpuN  user nice system idle iowait irq softirq steal guest guest_nice": the first 8 numbers. */
static int parse_times(const char *p, const char *end, struct si_cpu_times *t)
{
	uint64_t v[8] = {0};
	unsigned int i;

	for (i = 0; i < 8; i++) {
		p = si_skip_blanks(p, end);
		p = si_parse_u64(p, end, 10, &v[i]);
		if (!p)
			break;
	}
	if (i < 4) /* user nice system idle exist on every kernel we could run on */
		return -EINVAL;
	*t = (struct si_cpu_times){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
	return 0;
}

/* /proc/stat text: the "cpu" total line and one "cpuN" line per online CPU. */
static void parse_stat(struct si_cpu *c, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	for (unsigned int i = 0; i < c->nrows; i++)
		c->rows[i].online = 0;
	while (p < end && end - p > 3 && !memcmp(p, "cpu", 3)) {
		const char *eol = si_line_end(p, end);
		const char *q = p + 3;
		struct si_cpu_times t;

		if (q < eol && *q == ' ') {
			if (!parse_times(q, eol, &t)) {
				c->total_prev = c->total_seen ? c->total_cur : t;
				c->total_cur = t;
				c->total_seen = 1;
			}
		} else {
			uint64_t id;
			struct si_cpu_row *row;

			q = si_parse_u64(q, eol, 10, &id);
			if (q && !parse_times(q, eol, &t) && (row = cpu_row(c, id))) {
				row->prev = row->seen ? row->cur : t;
				row->cur = t;
				row->seen = 1;
				row->online = 1;
			}
		}
		p = eol < end ? eol + 1 : end;
	}
}

static int read_stat(struct si_cpu *c)
{
	int err = cpu_read(c, "/proc/stat", WARN_STAT);

	if (err)
		return err;
	parse_stat(c, c->buf.data, c->buf.len);
	return 0;
}

/* /proc/softirqs text: a "CPU0 CPU1 ..." header, then "NAME: n0 n1 ..." rows. */
static void parse_softirqs(struct si_cpu *c, const char *data, size_t len)
{
	const char *p = data, *end = data + len, *eol;
	unsigned int ncols = 0;

	for (unsigned int i = 0; i < c->nrows; i++)
		c->rows[i].rcu = c->rows[i].timer = c->rows[i].sched = c->rows[i].net_rx = 0;
	eol = si_line_end(p, end);
	while (p < eol) {
		uint64_t id;
		int *cols;

		p = si_skip_blanks(p, eol);
		if (eol - p < 4 || memcmp(p, "CPU", 3))
			break;
		p = si_parse_u64(p + 3, eol, 10, &id);
		if (!p)
			break;
		cols = si_grow(c->col_cpu, ncols + 1, &c->ncols_cap, sizeof(*cols), 64, SI_CPU_ID_MAX);
		if (!cols)
			break;
		c->col_cpu = cols;
		c->col_cpu[ncols++] = id < SI_CPU_ID_MAX ? (int)id : -1;
	}
	p = eol < end ? eol + 1 : end;
	while (p < end) {
		const char *name, *colon;
		size_t nlen;
		int which;

		eol = si_line_end(p, end);
		name = si_skip_blanks(p, eol);
		colon = memchr(name, ':', (size_t)(eol - name));
		if (!colon) {
			p = eol < end ? eol + 1 : end;
			continue;
		}
		nlen = (size_t)(colon - name);
		if (nlen == 3 && !memcmp(name, "RCU", 3))
			which = 0;
		else if (nlen == 5 && !memcmp(name, "TIMER", 5))
			which = 1;
		else if (nlen == 5 && !memcmp(name, "SCHED", 5))
			which = 2;
		else if (nlen == 6 && !memcmp(name, "NET_RX", 6))
			which = 3;
		else
			which = -1;
		p = colon + 1;
		for (unsigned int col = 0; which >= 0 && col < ncols; col++) {
			uint64_t v;
			struct si_cpu_row *row;

			p = si_parse_u64(si_skip_blanks(p, eol), eol, 10, &v);
			if (!p)
				break;
			if (c->col_cpu[col] < 0 || !(row = cpu_row(c, (uint64_t)c->col_cpu[col])))
				continue;
			if (which == 0)
				row->rcu = v;
			else if (which == 1)
				row->timer = v;
			else if (which == 2)
				row->sched = v;
			else
				row->net_rx = v;
		}
		p = eol < end ? eol + 1 : end;
	}
}

static void read_softirqs(struct si_cpu *c)
{
	if (cpu_read(c, "/proc/softirqs", WARN_SOFTIRQS)) {
		for (unsigned int i = 0; i < c->nrows; i++)
			c->rows[i].rcu = c->rows[i].timer = c->rows[i].sched = c->rows[i].net_rx = 0;
		return;
	}
	parse_softirqs(c, c->buf.data, c->buf.len);
}

/*
 * /proc/net/softnet_stat text: one line of hex columns per online CPU: processed, dropped, time_squeeze,
 * 5 zeros, cpu_collision, received_rps, flow_limit_count, backlog length, CPU number. Kernels before
 * 5.10 lack the last columns: the n-th line is then the n-th online CPU.
 */
static void parse_softnet(struct si_cpu *c, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	unsigned int line = 0, next_online = 0;

	for (unsigned int i = 0; i < c->nrows; i++)
		c->rows[i].backlog_drops = c->rows[i].rps_count = 0;
	for (; p < end; line++) {
		const char *eol = si_line_end(p, end);
		uint64_t col[13] = {0};
		unsigned int n = 0;
		struct si_cpu_row *row = NULL;
		const char *q = p;

		while (n < 13) {
			q = si_parse_u64(si_skip_blanks(q, eol), eol, 16, &col[n]);
			if (!q)
				break;
			n++;
		}
		if (n >= 13) {
			row = cpu_row(c, col[12]);
		} else if (n >= 10) {
			while (next_online < c->nrows && !c->rows[next_online].online)
				next_online++;
			if (next_online < c->nrows)
				row = &c->rows[next_online++];
		}
		if (row) {
			row->backlog_drops = col[1];
			row->rps_count = col[9];
		}
		p = eol < end ? eol + 1 : end;
	}
}

static void read_softnet(struct si_cpu *c)
{
	if (cpu_read(c, "/proc/net/softnet_stat", WARN_SOFTNET)) {
		for (unsigned int i = 0; i < c->nrows; i++)
			c->rows[i].backlog_drops = c->rows[i].rps_count = 0;
		return;
	}
	parse_softnet(c, c->buf.data, c->buf.len);
}

/* "cpu MHz" from /proc/cpuinfo text, per "processor" block (absent on most non-x86 machines: 0). The
 * text must be NUL-terminated (as probe_read_file leaves it): strtod reads the number. */
static void parse_cpuinfo(struct si_cpu *c, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	struct si_cpu_row *row = NULL;

	for (unsigned int i = 0; i < c->nrows; i++)
		c->rows[i].mhz = 0;
	while (p < end) {
		const char *eol = si_line_end(p, end);
		const char *colon;
		uint64_t id;

		if (eol - p > 9 && !memcmp(p, "processor", 9)) {
			colon = memchr(p, ':', (size_t)(eol - p));
			row = NULL;
			if (colon && si_parse_u64(si_skip_blanks(colon + 1, eol), eol, 10, &id))
				row = cpu_row(c, id);
		} else if (row && eol - p > 7 && !memcmp(p, "cpu MHz", 7)) {
			colon = memchr(p, ':', (size_t)(eol - p));
			if (colon) {
				/* The line ends in '\n' or the buffer's NUL, so strtod stops in time. */
				char *stop;
				double v = strtod(colon + 1, &stop);

				if (stop > colon + 1 && stop <= eol && isfinite(v) && v >= 0)
					row->mhz = v;
			}
		}
		p = eol < end ? eol + 1 : end;
	}
}

static void read_cpuinfo(struct si_cpu *c)
{
	if (cpu_read(c, "/proc/cpuinfo", WARN_CPUINFO)) {
		for (unsigned int i = 0; i < c->nrows; i++)
			c->rows[i].mhz = 0;
		return;
	}
	parse_cpuinfo(c, c->buf.data, c->buf.len);
}

int si_cpu__baseline(struct si_cpu *c)
{
	int err = read_stat(c);

	if (err)
		return err;
	/* Start the next period from this sample. */
	c->total_prev = c->total_cur;
	for (unsigned int i = 0; i < c->nrows; i++)
		if (c->rows[i].online)
			c->rows[i].prev = c->rows[i].cur;
	return 0;
}

static uint64_t delta(uint64_t cur, uint64_t prev)
{
	return cur > prev ? cur - prev : 0; /* per-CPU iowait may go backwards on NO_HZ kernels */
}

/* Busy share of the time between two samples, in percent rounded to two decimals (no libm). */
static double busy_percent(const struct si_cpu_times *cur, const struct si_cpu_times *prev)
{
	uint64_t idle = delta(cur->idle, prev->idle) + delta(cur->iowait, prev->iowait);
	uint64_t busy = delta(cur->user, prev->user) + delta(cur->nice, prev->nice) + delta(cur->system, prev->system) +
			delta(cur->irq, prev->irq) + delta(cur->softirq, prev->softirq) +
			delta(cur->steal, prev->steal);

	if (busy + idle == 0)
		return 0;
	return (double)(uint64_t)((double)busy * 10000.0 / (double)(busy + idle) + 0.5) / 100.0;
}

int si_cpu__report(struct si_cpu *c, struct probe_rt *rt)
{
	struct probe_rec rec;
	int err = read_stat(c);

	if (err)
		return err;
	read_softirqs(c);
	read_softnet(c);
	read_cpuinfo(c);

	for (unsigned int i = 0; i < c->nrows; i++) {
		const struct si_cpu_row *row = &c->rows[i];
		const struct si_cpu_times *t = &row->cur;

		if (!row->online)
			continue;
		probe_rec__begin(&rec, &TBL_system_cpu);
		probe_rec__u64(&rec, i);
		probe_rec__u64(&rec, row->rcu);
		probe_rec__u64(&rec, row->timer);
		probe_rec__u64(&rec, row->sched);
		probe_rec__u64(&rec, row->net_rx);
		probe_rec__f64(&rec, (double)t->user / c->clk_tck);
		probe_rec__f64(&rec, (double)t->nice / c->clk_tck);
		probe_rec__f64(&rec, (double)t->system / c->clk_tck);
		probe_rec__f64(&rec, (double)t->iowait / c->clk_tck);
		probe_rec__f64(&rec, (double)t->irq / c->clk_tck);
		probe_rec__f64(&rec, (double)t->softirq / c->clk_tck);
		probe_rec__f64(&rec, (double)t->idle / c->clk_tck);
		probe_rec__f64(&rec, (double)t->steal / c->clk_tck);
		probe_rec__u64(&rec, row->backlog_drops);
		probe_rec__u64(&rec, row->rps_count);
		probe_rec__f64(&rec, busy_percent(&row->cur, &row->prev));
		probe_rec__f64(&rec, row->mhz);
		(void)probe_rt__emit(rt, &rec);
	}
	if (c->total_seen) {
		probe_rec__begin(&rec, &TBL_system_cpu_util);
		probe_rec__str(&rec, "cpu");
		probe_rec__f64(&rec, busy_percent(&c->total_cur, &c->total_prev));
		(void)probe_rt__emit(rt, &rec);
	}
	return 0;
}
