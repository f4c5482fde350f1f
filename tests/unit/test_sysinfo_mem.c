/* test_sysinfo_mem.c - system_infos' mem sub-probe parser (probes/system_infos/mem.c) on fixture
 * /proc/meminfo text: every field, MemAvailable missing or above MemTotal, huge pages, missing values,
 * a truncated last line, and the system_meminfo record from the real file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/mem.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

static void parse(const char *text, struct mem_vals *mv)
{
	meminfo_parse(text, strlen(text), mv);
}

GG_TEST(test_full)
{
	struct mem_vals mv;

	parse("MemTotal:       24000000 kB\n"
	      "MemFree:        10000000 kB\n"
	      "MemAvailable:   20000000 kB\n"
	      "Buffers:          100000 kB\n"
	      "Cached:          5000000 kB\n"
	      "SwapCached:            0 kB\n"
	      "Active:          3000000 kB\n"
	      "Inactive:        4000000 kB\n"
	      "Active(anon):     500000 kB\n"
	      "Inactive(anon):   600000 kB\n"
	      "Active(file):    2500000 kB\n"
	      "Inactive(file):  3400000 kB\n"
	      "SwapTotal:       2000000 kB\n"
	      "SwapFree:        1500000 kB\n"
	      "Shmem:             12345 kB\n"
	      "Slab:             400000 kB\n"
	      "SReclaimable:     300000 kB\n"
	      "SUnreclaim:       100000 kB\n"
	      "KernelStack:       16000 kB\n"
	      "PageTables:        30000 kB\n"
	      "VmallocUsed:       50000 kB\n"
	      "HugePages_Total:       4\n"
	      "Hugepagesize:       2048 kB\n"
	      "Hugetlb:            8192 kB\n",
	      &mv);
	assert_int_equal(mv.v[MI_TOTAL], 24000000);
	assert_int_equal(mv.v[MI_FREE], 10000000);
	assert_int_equal(mv.avail, 20000000);
	assert_int_equal(mv.v[MI_ACTIVE], 3000000); /* "Active" is not "Active(anon)" */
	assert_int_equal(mv.v[MI_ACTIVE_ANON], 500000);
	assert_int_equal(mv.v[MI_INACTIVE_FILE], 3400000);
	assert_int_equal(mv.v[MI_SWAP_FREE], 1500000);
	assert_int_equal(mv.v[MI_SHMEM], 12345);
	assert_int_equal(mv.v[MI_SUNRECLAIM], 100000);
	assert_int_equal(mv.v[MI_MLOCKED], 0); /* absent: 0 */
	assert_int_equal(mv.huge, 8192);
	/* the record's percentages: used = total - available */
	assert_true(percent(mv.v[MI_TOTAL] - mv.avail, mv.v[MI_TOTAL]) == 16.67);
	assert_true(percent(1, 0) == 0);
}

GG_TEST(test_old_kernel_and_clamps)
{
	struct mem_vals mv;

	/* no MemAvailable (before 3.14): free + buffers + cached; no Hugetlb: pages x size */
	parse("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 300 kB\n"
	      "HugePages_Total: 3\nHugepagesize: 2048 kB\n",
	      &mv);
	assert_int_equal(mv.avail, 420);
	assert_int_equal(mv.huge, 6144);
	/* an estimate above the total is capped at the total */
	parse("MemTotal: 1000 kB\nMemFree: 900 kB\nBuffers: 200 kB\nCached: 300 kB\n", &mv);
	assert_int_equal(mv.avail, 1000);
	parse("MemTotal: 1000 kB\nMemAvailable: 5000 kB\n", &mv);
	assert_int_equal(mv.avail, 1000);
}

GG_TEST(test_missing_and_truncated)
{
	struct mem_vals mv;

	/* a value missing, a line without a colon, a duplicate (the first wins), the text cut mid-line */
	parse("MemTotal: 2000 kB\n"
	      "MemFree:\n"
	      "garbage line\n"
	      "MemTotal: 9999 kB\n"
	      "MemAvailable: 1500 kB\n"
	      "Cached: 12",
	      &mv);
	assert_int_equal(mv.v[MI_TOTAL], 2000);
	assert_int_equal(mv.v[MI_FREE], 0);
	assert_int_equal(mv.avail, 1500);
	assert_int_equal(mv.v[MI_CACHED], 12);
	/* a MemFree: with no number is not "found": the estimate falls back without it */
	parse("MemTotal: 2000 kB\nMemAvailable:\nMemFree: 10 kB\nBuffers: 1 kB\nCached: 2 kB\n", &mv);
	assert_int_equal(mv.avail, 13);
	parse("", &mv);
	assert_int_equal(mv.v[MI_TOTAL], 0);
	assert_int_equal(mv.avail, 0);
}

GG_TEST(test_report_record)
{
	struct si_mem m = {0};
	const char *out;
	char v[64];

	out = cap_report(si_mem__report(&m, cap_rt));
	assert_int_equal(rec_count(out, "system_meminfo"), 1);
	assert_int_equal(rec_get(out, "system_meminfo", "meminfo", 1, v, sizeof(v)), 0); /* mem_total */
	assert_true(strtoull(v, NULL, 10) > 0);
	si_mem__free(&m);
}

GG_TEST_GROUP(cap_setup, cap_teardown);
