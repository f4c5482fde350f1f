/* system_infos.h - what the system_infos (baseinfo) probe's main loop and its sub-probes share. */
#ifndef GG_SYSTEM_INFOS_H
#define GG_SYSTEM_INFOS_H

#include <stdint.h>

#include "probe.h"

/* Sub-probes, as named in `-P` and in the "probe" list of a live configuration. */
enum si_subprobe {
	SI_CPU = 1u << 0,
	SI_MEM = 1u << 1,
};
#define SI_ALL (SI_CPU | SI_MEM)

/* The size a /proc file we read may reach before we give up on it. */
#define SI_PROC_FILE_MAX (16u << 20)

/* One CPU's jiffies from /proc/stat. */
struct si_cpu_times {
	uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

/* One CPU as last sampled (indexed by CPU number). */
struct si_cpu_row {
	int online; /* seen on the last /proc/stat read */
	int seen; /* prev holds a real earlier sample */
	struct si_cpu_times cur, prev;
	uint64_t rcu, timer, sched, net_rx; /* /proc/softirqs */
	uint64_t backlog_drops, rps_count; /* /proc/net/softnet_stat */
	double mhz; /* /proc/cpuinfo */
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
	struct probe_buf stat, softirqs, softnet, cpuinfo;
	unsigned int warned; /* one bit per file whose read failure was already logged */
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

#endif
