/* test_sysinfo_disk.c - system_infos' disk sub-probe parser (probes/system_infos/disk.c) on fixture
 * /proc/diskstats text and a fixture /sys/block: iostat's rates between samples, counter resets,
 * partitions and idle devices left out, old and new line lengths, truncated lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/disk.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

static char sysblock[64];

static int setup(void **state)
{
	snprintf(sysblock, sizeof(sysblock), "/tmp/gg-sysblock.XXXXXX");
	if (!mkdtemp(sysblock))
		return -1;
	put_file(sysblock, "sda/dev", "8:0\n");
	put_file(sysblock, "vdb/dev", "252:16\n");
	put_file(sysblock, "cciss!c0d0/dev", "104:0\n");
	return cap_setup(state);
}

static int teardown(void **state)
{
	rm_tree(sysblock);
	return cap_teardown(state);
}

static unsigned int parse(struct si_counters *d, const char *text, uint64_t now)
{
	d->sys_block = sysblock;
	return si_counters__parse(d, text, strlen(text), now);
}

GG_TEST(test_rates)
{
	struct si_counters d = {.kind = &si_disk_kind};
	double r[DR__COUNT];

	/* major minor name reads rd_merged rd_sectors rd_ms writes wr_merged wr_sectors wr_ms in_flight
	 * io_ms weighted_ms (+ discard and flush columns on newer kernels) */
	parse(&d,
	      "   8       0 sda 1000 10 20000 500 2000 20 40000 3000 0 1500 3500 0 0 0 0 0 0\n"
	      "   8       1 sda1 900 10 18000 450 1900 20 38000 2900 0 1400 3300 0 0 0 0\n"
	      "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	      " 252      16 vdb 5 0 40 1 0 0 0 0 0 2 1\n",
	      10000);
	assert_int_equal(d.tab.nrows, 2); /* sda and vdb: the partition and the idle loop device are left out */
	assert_non_null(tab_row(&d.tab, "sda"));
	assert_non_null(tab_row(&d.tab, "vdb")); /* old kernels' 11 columns */
	assert_null(tab_row(&d.tab, "sda1"));
	disk_rates(tab_row(&d.tab, "sda"), r);
	assert_true(r[DR_RPS] == 0 && r[DR_UTIL] == 0); /* one sample: no rate */
	/* 2 s later: +200 reads of +4000 sectors (2000 KiB) in +100 ms, +50 writes of +800 sectors in
	 * +500 ms, +500 ms busy, +1000 ms weighted */
	parse(&d, "   8       0 sda 1200 10 24000 600 2050 20 40800 3500 1 2000 4500 0 0 0 0 0 0\n", 12000);
	disk_rates(tab_row(&d.tab, "sda"), r);
	assert_true(r[DR_RPS] == 100.0);
	assert_true(r[DR_RKBPS] == 1000.0);
	assert_true(r[DR_RAWAIT] == 0.5);
	assert_true(r[DR_RAREQSZ] == 10.0);
	assert_true(r[DR_WPS] == 25.0);
	assert_true(r[DR_WKBPS] == 200.0);
	assert_true(r[DR_WAWAIT] == 10.0);
	assert_true(r[DR_WAREQSZ] == 8.0);
	assert_true(r[DR_AQUSZ] == 0.5);
	assert_true(r[DR_UTIL] == 25.0);
	assert_null(tab_row(&d.tab, "vdb")); /* not in the last read: forgotten */
	si_counters__free(&d);
}

GG_TEST(test_counter_reset_and_clamp)
{
	struct si_counters d = {.kind = &si_disk_kind};
	double r[DR__COUNT];

	parse(&d, "8 0 sda 4000000000 0 9000000000 500 10 0 80 5 0 900000 1000\n", 1000);
	/* the counters wrapped (32-bit fields on old kernels) or the device was re-added */
	parse(&d, "8 0 sda 10 0 80 5 10 0 80 5 0 100 10\n", 2000);
	disk_rates(tab_row(&d.tab, "sda"), r);
	for (unsigned int k = 0; k < DR__COUNT; k++)
		assert_true(r[k] >= 0 && r[k] <= 100.0);
	assert_true(r[DR_RPS] == 0);
	/* io_ms cannot grow faster than time: %util stops at 100 */
	parse(&d, "8 0 sda 20 0 160 10 10 0 80 5 0 5000 10\n", 3000);
	disk_rates(tab_row(&d.tab, "sda"), r);
	assert_true(r[DR_UTIL] == 100.0);
	assert_true(r[DR_RPS] == 10.0);
	si_counters__free(&d);
}

GG_TEST(test_names_and_truncated)
{
	struct si_counters d = {.kind = &si_disk_kind};
	char text[512];

	snprintf(text, sizeof(text),
		 "104 0 cciss/c0d0 5 0 10 1 0 0 0 0 0 1 1\n" /* '/' is '!' in /sys/block */
		 "8 0 sda 5 0 10 1 0 0 0\n"		     /* truncated: left out */
		 "8 16 sdb 5 0 10 1 0 0 0 0 0 1 1\n"	     /* no /sys/block/sdb: a partition for us */
		 "8 0 %s 5 0 10 1 0 0 0 0 0 1 1\n"	     /* a name too long to keep */
		 "garbage\n"
		 "8 0 sda 1 0 8 1 0 0 0 0 0 1 1", /* the last line without its newline */
		 "sdaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	parse(&d, text, 1000);
	assert_non_null(tab_row(&d.tab, "cciss/c0d0"));
	assert_null(tab_row(&d.tab, "sdb"));
	assert_non_null(tab_row(&d.tab, "sda"));
	assert_int_equal(tab_row(&d.tab, "sda")->cur[DS_READS], 1);
	assert_int_equal(d.tab.nrows, 2);
	si_counters__free(&d);
}

/* The real /proc/diskstats and /sys/block: one record per whole disk, each matching the meta. */
GG_TEST(test_report_records)
{
	struct si_counters d = {.kind = &si_disk_kind};
	const char *out;

	out = cap_report(si_counters__report(&d, cap_rt, NULL));
	assert_int_equal(rec_count(out, "system_iostat"), d.tab.nrows);
	si_counters__free(&d);
}

GG_TEST_GROUP(setup, teardown);
