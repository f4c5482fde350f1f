/* test_sysinfo_cpu.c - system_infos' cpu sub-probe parsers (probes/system_infos/cpu.c) on fixture
 * text: /proc/stat utilisation between samples, counters going backwards, short and truncated lines,
 * /proc/softirqs columns, both /proc/net/softnet_stat layouts, /proc/cpuinfo frequencies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/cpu.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

static void cpu_new(struct si_cpu *c)
{
	memset(c, 0, sizeof(*c));
	c->clk_tck = 100.0;
}

static void parse(struct si_cpu *c, const char *text)
{
	parse_stat(c, text, strlen(text));
}

/* A per-CPU counter of struct si_cpu_row (name, offset) on CPUs 0, 1 and 2. */
#define COL(field) #field, offsetof(struct si_cpu_row, field)

static void expect_col(const struct si_cpu *c, const char *name, size_t off, uint64_t cpu0, uint64_t cpu1,
		       uint64_t cpu2)
{
	const uint64_t want[3] = {cpu0, cpu1, cpu2};

	assert_true(c->nrows >= 3);
	for (int i = 0; i < 3; i++) {
		uint64_t got;

		memcpy(&got, (const char *)&c->rows[i] + off, sizeof(got));
		if (got != want[i])
			fail_msg("cpu%d %s: %llu, want %llu", i, name, (unsigned long long)got,
				 (unsigned long long)want[i]);
	}
}

GG_TEST(test_stat_rates)
{
	struct si_cpu c;

	cpu_new(&c);
	parse(&c, "cpu  100 0 50 800 50 0 0 0 0 0\n"
		  "cpu0 50 0 25 400 25 0 0 0 0 0\n"
		  "cpu1 50 0 25 400 25 0 0 0 0 0\n"
		  "intr 12345 0 0\n"
		  "ctxt 999\n");
	assert_int_equal(c.nrows >= 2, 1);
	assert_int_equal(c.rows[0].online, 1);
	assert_int_equal(c.rows[1].online, 1);
	/* the first sample is its own baseline: no rate yet */
	assert_true(busy_percent(&c.rows[0].cur, &c.rows[0].prev) == 0);
	/* cpu0: +30 user, +70 idle: 30 % busy; cpu1: +100 idle; total: +30 user +170 idle: 15 % */
	parse(&c, "cpu  130 0 50 970 50 0 0 0 0 0\n"
		  "cpu0 80 0 25 470 25 0 0 0 0 0\n"
		  "cpu1 50 0 25 500 25 0 0 0 0 0\n");
	assert_true(busy_percent(&c.rows[0].cur, &c.rows[0].prev) == 30.0);
	assert_true(busy_percent(&c.rows[1].cur, &c.rows[1].prev) == 0.0);
	assert_true(busy_percent(&c.total_cur, &c.total_prev) == 15.0);
	/* iowait counts as idle, irq/softirq/steal as busy: +10 iowait +10 irq +10 softirq +10 steal +60 idle */
	parse(&c, "cpu0 80 0 25 530 35 10 10 10 0 0\n");
	assert_true(busy_percent(&c.rows[0].cur, &c.rows[0].prev) == 30.0);
	assert_int_equal(c.rows[1].online, 0); /* not in this read: offline */
	assert_int_equal(c.rows[0].cur.steal, 10);
	free(c.rows);
}

GG_TEST(test_stat_counter_backwards)
{
	struct si_cpu c;
	double b;

	cpu_new(&c);
	parse(&c, "cpu0 1000 0 500 8000 900 0 0 0 0 0\n");
	/* per-CPU iowait goes backwards on NO_HZ kernels; a hot-replugged CPU restarts from 0 */
	parse(&c, "cpu0 1010 0 500 8090 100 0 0 0 0 0\n");
	b = busy_percent(&c.rows[0].cur, &c.rows[0].prev);
	assert_true(b == 10.0); /* 10 of 100: the backwards iowait counts 0, not 2^64 - 800 */
	parse(&c, "cpu0 5 0 2 30 1 0 0 0 0 0\n");
	b = busy_percent(&c.rows[0].cur, &c.rows[0].prev);
	assert_true(b == 0.0); /* everything went backwards: nothing measured, not a huge value */
	free(c.rows);
}

GG_TEST(test_stat_short_and_truncated)
{
	struct si_cpu c;

	cpu_new(&c);
	parse(&c, "cpu0 10 20\n"		      /* too short: not a sample */
		  "cpu1 1 2 3 4\n"		      /* old kernels: user nice system idle only */
		  "cpuX 1 2 3 4 5\n"		      /* not a number */
		  "cpu99999 1 2 3 4 5 6 7 8\n"	      /* beyond any NR_CPUS */
		  "cpu2 7 0 1 50 3 0 0 0 0 0\nintr"); /* the text ends mid-line */
	assert_int_equal(c.nrows > 0 && c.rows[0].online, 0);
	assert_int_equal(c.rows[1].online, 1);
	assert_int_equal(c.rows[1].cur.user, 1);
	assert_int_equal(c.rows[1].cur.idle, 4);
	assert_int_equal(c.rows[1].cur.iowait, 0);
	assert_int_equal(c.rows[1].cur.steal, 0);
	assert_int_equal(c.rows[2].online, 1);
	assert_int_equal(c.rows[2].cur.iowait, 3);
	assert_true(c.nrows < SI_CPU_ID_MAX);
	free(c.rows);
	/* a line cut inside the numbers keeps what is there when the 4 first are */
	cpu_new(&c);
	parse(&c, "cpu0 11 22 33 44 5");
	assert_int_equal(c.rows[0].online, 1);
	assert_int_equal(c.rows[0].cur.idle, 44);
	assert_int_equal(c.rows[0].cur.iowait, 5);
	free(c.rows);
	/* nothing but other lines: no CPU */
	cpu_new(&c);
	parse(&c, "intr 1 2 3\nctxt 4\n");
	assert_int_equal(c.nrows, 0);
	free(c.rows);
}

GG_TEST(test_softirqs)
{
	static const char text[] = "                    CPU0       CPU1       CPU2\n"
				   "          HI:          1          2          3\n"
				   "       TIMER:         10         20         30\n"
				   "      NET_RX:          5          6          7\n"
				   "       SCHED:         70         80\n" /* cut short */
				   "         RCU:          9         10         11\n";
	struct si_cpu c;

	cpu_new(&c);
	parse(&c, "cpu0 1 1 1 1\ncpu1 1 1 1 1\ncpu2 1 1 1 1\n");
	parse_softirqs(&c, text, strlen(text));
	expect_col(&c, COL(timer), 10, 20, 30);
	expect_col(&c, COL(net_rx), 5, 6, 7);
	expect_col(&c, COL(rcu), 9, 10, 11);
	expect_col(&c, COL(sched), 70, 80, 0); /* missing column: 0, the next row is not shifted into it */
	/* a header only, or nothing at all: every count back to 0 */
	parse_softirqs(&c, "CPU0 CPU1\n", 10);
	expect_col(&c, COL(timer), 0, 0, 0);
	expect_col(&c, COL(rcu), 0, 0, 0);
	parse_softirqs(&c, "", 0);
	expect_col(&c, COL(rcu), 0, 0, 0);
	expect_col(&c, COL(net_rx), 0, 0, 0);
	free(c.rows);
	free(c.col_cpu);
}

GG_TEST(test_softnet)
{
	/* 5.10+: 13 columns, the last one the CPU number (CPU 1 offline here) */
	static const char v13[] = "0000a000 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
				  "0000000b 00000000 00000000 00000000\n"
				  "0000b000 00000004 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
				  "0000000c 00000000 00000000 00000002\n";
	/* older: 11 columns, the n-th line is the n-th online CPU */
	static const char v11[] = "00000001 00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
				  "00000020 00000000\n"
				  "00000001 00000011 00000000 00000000 00000000 00000000 00000000 00000000 00000000 "
				  "00000021 00000000\n"
				  "00000001 00000030\n"; /* truncated: ignored */
	struct si_cpu c;

	cpu_new(&c);
	parse(&c, "cpu0 1 1 1 1\ncpu2 1 1 1 1\n");
	parse_softnet(&c, v13, strlen(v13));
	expect_col(&c, COL(backlog_drops), 3, 0, 4);
	expect_col(&c, COL(rps_count), 11, 0, 12);
	parse_softnet(&c, v11, strlen(v11));
	expect_col(&c, COL(backlog_drops), 0x10, 0, 0x11); /* CPU 2: the second online CPU */
	expect_col(&c, COL(rps_count), 0x20, 0, 0x21);
	free(c.rows);
}

GG_TEST(test_cpuinfo)
{
	static const char text[] = "processor\t: 0\n"
				   "model name\t: Some CPU\n"
				   "cpu MHz\t\t: 2399.998\n"
				   "\n"
				   "processor\t: 1\n"
				   "cpu MHz\t\t: garbage\n"
				   "\n"
				   "processor\t: 2\n"
				   "cpu MHz\t\t: 1800.5";
	struct si_cpu c;

	cpu_new(&c);
	parse(&c, "cpu0 1 1 1 1\ncpu1 1 1 1 1\ncpu2 1 1 1 1\n");
	parse_cpuinfo(&c, text, strlen(text));
	assert_true(c.rows[0].mhz > 2399.99 && c.rows[0].mhz < 2400.0);
	assert_true(c.rows[1].mhz == 0);
	assert_true(c.rows[2].mhz == 1800.5);
	free(c.rows);
}

/* The records: one system_cpu per online CPU with seconds from jiffies, and system_cpu_util. */
GG_TEST(test_report_records)
{
	struct si_cpu c;
	const char *out;
	char v[64];

	assert_int_equal(si_cpu__init(&c), 0); /* the real /proc/stat */
	out = cap_report(si_cpu__report(&c, cap_rt));
	assert_int_equal(rec_count(out, "system_cpu_util"), 1);
	assert_true(rec_count(out, "system_cpu") >= 1);
	assert_int_equal(rec_get(out, "system_cpu", "0", 0, v, sizeof(v)), 0);
	assert_string_equal(v, "0");
	/* user_total_second (field 5) = jiffies / CLK_TCK, within what /proc/stat says now */
	assert_int_equal(rec_get(out, "system_cpu", "0", 5, v, sizeof(v)), 0);
	assert_true(strtod(v, NULL) > 0);
	assert_true(strtod(v, NULL) <= (double)c.rows[0].cur.user / c.clk_tck + 1e-6);
	si_cpu__free(&c);
}

GG_TEST_GROUP(cap_setup, cap_teardown);
