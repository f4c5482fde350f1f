/* test_sysinfo_proc.c - system_infos' proc sub-probe (probes/system_infos/proc.c) on a fixture proc
 * root: /proc/<pid>/stat parsing (comm with spaces and parentheses, short lines), CPU share between
 * periods (pid reuse, ticks going backwards), and without snoopers the top processes by CPU + memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/proc.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

static char root[64];

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/gg-procroot.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	return cap_setup(state);
}

static int teardown(void **state)
{
	rm_tree(root);
	return cap_teardown(state);
}

/* A /proc/<pid>/stat line: utime, stime (ticks), starttime, rss (pages). Pids far above pid_max, so
 * that prlimit() on them fails as for a process gone. */
static void put_stat(int pid, const char *comm, unsigned utime, unsigned stime, unsigned start, unsigned rss)
{
	char name[64], text[512];

	snprintf(name, sizeof(name), "%d/stat", pid);
	snprintf(text, sizeof(text),
		 "%d (%s) S 1 %d %d 0 -1 4194560 100 0 2 0 %u %u 0 0 20 0 3 0 %u 123456789 %u "
		 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
		 pid, comm, pid, pid, utime, stime, start, rss);
	put_file(root, name, text);
}

GG_TEST(test_parse_stat)
{
	static const char full[] = "4242 (we(ird) name)) R 1 4242 4242 0 -1 4194560 555 0 7 0 1200 300 0 0 -20 "
				   "-5 6 0 987654 2000000 4096 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0\n";
	struct si_proc_stat st;

	assert_int_equal(si_proc_parse_stat(full, strlen(full), &st), 0);
	assert_string_equal(st.comm, "we(ird) name)");
	assert_int_equal(st.f[4], 1);	 /* ppid */
	assert_int_equal(st.f[5], 4242); /* pgrp */
	assert_int_equal(st.f[10], 555); /* minflt */
	assert_int_equal(st.f[14], 1200);
	assert_int_equal(st.f[15], 300);
	assert_int_equal(st.f[18], -20); /* priority */
	assert_int_equal(st.f[19], -5);	 /* nice */
	assert_int_equal(st.f[20], 6);	 /* threads */
	assert_int_equal(st.f[22], 987654);
	assert_int_equal(st.f[24], 4096); /* rss pages */
	assert_int_equal(st.f[39], 3);	  /* processor */
	/* cut after utime: the rest reads 0, nothing from beyond the text */
	assert_int_equal(si_proc_parse_stat(full, 60, &st), 0);
	assert_int_equal(st.f[10], 555);
	assert_int_equal(st.f[15], 0);
	assert_int_equal(st.f[24], 0);
	/* no "(comm)": refused */
	assert_int_equal(si_proc_parse_stat("4242 name R 1", 13, &st), -EINVAL);
	assert_int_equal(si_proc_parse_stat(") 4242 (", 8, &st), -EINVAL);
	assert_int_equal(si_proc_parse_stat("", 0, &st), -EINVAL);
}

GG_TEST(test_cpu_percent)
{
	assert_true(si_proc_cpu_percent(150, 100, 2000, 1000, 100.0) == 50.0);
	assert_true(si_proc_cpu_percent(300, 100, 2000, 1000, 100.0) == 200.0); /* two threads busy */
	assert_true(si_proc_cpu_percent(150, 100, 2000, 0, 100.0) == 0);	/* no earlier sample */
	assert_true(si_proc_cpu_percent(50, 100, 2000, 1000, 100.0) == 0);	/* backwards: not huge */
	assert_true(si_proc_cpu_percent(150, 100, 1000, 1000, 100.0) == 0);	/* no time elapsed */
}

/* util of pid in out (the last field), or -1 when pid has no record. */
static double util_of(const char *out, int pid)
{
	char key[16], v[64];

	snprintf(key, sizeof(key), "%d", pid);
	if (rec_get(out, "system_proc", key, 35, v, sizeof(v)))
		return -1;
	return strtod(v, NULL);
}

/* The records of one report of p for the scope sc. */
static const char *report(struct si_proc *p, const struct gg_scope *sc)
{
	return cap_report(si_proc__report(p, cap_rt, sc, NULL));
}

/* A period passes: the processes' last samples move 2 s into the past (report sets cur_ms). */
static void period_passes(struct si_proc *p)
{
	for (unsigned int i = 0; i < p->nrows; i++)
		p->rows[i].cur_ms -= 2000;
}

GG_TEST(test_top_without_snoopers)
{
	struct si_proc p;
	struct gg_scope all;
	const char *out;
	char v[64];

	gg_scope__init(&all);
	put_file(root, "meminfo", "MemTotal: 1048576 kB\n");
	put_stat(90000001, "busy one", 100, 0, 11, 10);	   /* will use CPU */
	put_stat(90000002, "big (one)", 0, 0, 12, 131072); /* 512 MiB of 1 GiB resident */
	put_stat(90000003, "idle", 0, 0, 13, 10);
	put_stat(90000004, "small", 5, 0, 14, 100);
	put_file(root, "90000002/io", "rchar: 777\nwchar: 888\nsyscr: 1\n");
	put_file(root, "self", "not a process directory\n");
	assert_int_equal(si_proc__init(&p), 0);
	snprintf(p.root, sizeof(p.root), "%s", root);
	p.clk_tck = 100.0;
	p.top = 2;

	out = report(&p, &all);
	/* first period: no CPU share yet, memory decides: the big one, then "small" */
	assert_int_equal(rec_count(out, "system_proc"), 2);
	assert_true(util_of(out, 90000002) == 0);
	assert_true(util_of(out, 90000004) == 0);
	assert_int_equal(rec_get(out, "system_proc", "90000002", 1, v, sizeof(v)), 0);
	assert_string_equal(v, "big (one)");
	assert_int_equal(rec_get(out, "system_proc", "90000002", 7, v, sizeof(v)), 0); /* rchar from io */
	assert_string_equal(v, "777");
	assert_int_equal(p.left_out, 2);
	assert_int_equal(p.nrows, 4); /* every process followed, to rank the next period */

	/* the busy one used 100 ticks more; time moved on by the period (cur_ms is set by report) */
	period_passes(&p);
	put_stat(90000001, "busy one", 250, 50, 11, 10);
	out = report(&p, &all);
	assert_int_equal(rec_count(out, "system_proc"), 2);
	assert_true(util_of(out, 90000001) > 95 && util_of(out, 90000001) <= 100); /* 2 s of CPU in ~2 s */
	assert_true(util_of(out, 90000002) == 0);
	assert_true(util_of(out, 90000003) < 0); /* left out */

	/* 90000001 exits and its pid comes back as another process with fewer ticks: no huge share */
	period_passes(&p);
	put_stat(90000001, "reborn", 1, 0, 999, 10);
	out = report(&p, &all);
	assert_true(util_of(out, 90000001) <= 0);

	/* top 0: every process */
	p.top = 0;
	out = report(&p, &all);
	assert_int_equal(rec_count(out, "system_proc"), 4);
	si_proc__free(&p);
}

GG_TEST(test_snooped_pids_ignore_top)
{
	struct si_proc p;
	struct gg_scope sc;
	const char *out;

	gg_scope__init(&sc);
	assert_int_equal(gg_scope__add_pids(&sc, "90000003,90000004,90000099"), 0); /* 90000099: absent */
	assert_int_equal(si_proc__init(&p), 0);
	snprintf(p.root, sizeof(p.root), "%s", root);
	p.top = 1;
	out = report(&p, &sc);
	assert_int_equal(rec_count(out, "system_proc"), 2);
	assert_true(util_of(out, 90000003) == 0 && util_of(out, 90000004) == 0);
	/* a truncated stat file of a snooped process: reported with what is there */
	put_file(root, "90000003/stat", "90000003 (idle) S 1 90000003 90000003 0 -1 4194560 100 0 2 0 7");
	out = report(&p, &sc);
	assert_int_equal(rec_count(out, "system_proc"), 2);
	assert_int_equal(probe_rt__records_invalid(cap_rt), 0);
	si_proc__free(&p);
}

GG_TEST_GROUP(setup, teardown);
