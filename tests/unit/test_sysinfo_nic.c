/* test_sysinfo_nic.c - system_infos' nic sub-probe parser (probes/system_infos/nic.c) on fixture
 * /proc/net/dev text: rates between samples, a counter reset, interfaces that come and go, long names,
 * truncated lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/nic.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

#define HEAD                                                                                                       \
	"Inter-|   Receive                                                |  Transmit\n"                           \
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls " \
	"carrier compressed\n"

static unsigned int parse(struct si_counters *n, const char *text, uint64_t now)
{
	return si_counters__parse(n, text, strlen(text), now);
}

GG_TEST(test_rates)
{
	struct si_counters n = {.kind = &si_nic_kind};
	const struct si_counter_row *r;

	assert_int_equal(parse(&n,
			       HEAD "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n"
				    "  eth0: 50000 100 1 2 0 0 0 0 20000 80 3 4 0 0 0 0\n",
			       1000),
			 0);
	assert_int_equal(n.tab.nrows, 2);
	r = tab_row(&n.tab, "eth0");
	assert_non_null(r);
	assert_int_equal(r->cur[ND_RX_BYTES], 50000);
	assert_int_equal(r->cur[ND_RX_ERRS], 1);
	assert_int_equal(r->cur[ND_RX_DROP], 2);
	assert_int_equal(r->cur[ND_TX_PACKETS], 80);
	assert_int_equal(r->cur[ND_TX_DROP], 4);
	assert_true(rate_kib(r, ND_RX_BYTES) == 0); /* one sample: no rate */
	/* 2 s later: +20480 bytes in, +4096 out */
	parse(&n,
	      HEAD "  eth0: 70480 120 1 2 0 0 0 0 24096 90 3 4 0 0 0 0\n"
		   "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n",
	      3000);
	r = tab_row(&n.tab, "eth0");
	assert_true(rate_kib(r, ND_RX_BYTES) == 10.0);
	assert_true(rate_kib(r, ND_TX_BYTES) == 2.0);
	assert_true(rate_kib(tab_row(&n.tab, "lo"), ND_RX_BYTES) == 0);
	si_counters__free(&n);
}

GG_TEST(test_counter_reset)
{
	struct si_counters n = {.kind = &si_nic_kind};
	const struct si_counter_row *r;

	parse(&n, HEAD "  eth0: 9000000000 100 0 0 0 0 0 0 5000 80 0 0 0 0 0 0\n", 1000);
	/* the driver was reloaded: counters start over; the rate is 0, not 2^64 - 9e9 */
	parse(&n, HEAD "  eth0: 1024 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n", 2000);
	r = tab_row(&n.tab, "eth0");
	assert_true(rate_kib(r, ND_RX_BYTES) == 0);
	assert_true(rate_kib(r, ND_TX_BYTES) == 0);
	parse(&n, HEAD "  eth0: 3072 2 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n", 3000);
	assert_true(rate_kib(tab_row(&n.tab, "eth0"), ND_RX_BYTES) == 2.0);
	/* no time elapsed: no rate (not a division by zero) */
	parse(&n, HEAD "  eth0: 9999 3 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n", 3000);
	assert_true(rate_kib(tab_row(&n.tab, "eth0"), ND_RX_BYTES) == 0);
	si_counters__free(&n);
}

GG_TEST(test_come_and_go)
{
	struct si_counters n = {.kind = &si_nic_kind};

	parse(&n, HEAD "  veth1: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", 1000);
	parse(&n, HEAD "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", 2000);
	assert_null(tab_row(&n.tab, "veth1")); /* gone: forgotten */
	assert_int_equal(n.tab.nrows, 1);
	/* back with new counters: a new interface, no rate from the old one's */
	parse(&n, HEAD "  veth1: 50 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", 3000);
	assert_int_equal(tab_row(&n.tab, "veth1")->have_prev, 0);
	assert_true(rate_kib(tab_row(&n.tab, "veth1"), ND_RX_BYTES) == 0);
	si_counters__free(&n);
}

GG_TEST(test_long_names_and_truncated)
{
	struct si_counters n = {.kind = &si_nic_kind};
	char name31[32];
	char text[1024];

	memset(name31, 'a', 31);
	name31[31] = '\0';
	snprintf(text, sizeof(text),
		 HEAD "  %s: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
		      "  a-very-long-interface-name-beyond-31-bytes: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
		      "  eth1: 1 2 3\n"		/* truncated: left alone */
		      "no colon on this line\n" /* neither an interface nor a header */
		      "  eth2: 7 1 0 0 0 0 0 0 8 1 0 0 0 0 0 0",
		 name31);
	/* the too long name is skipped and counted, the short line ignored, the last line (no newline) kept */
	assert_int_equal(parse(&n, text, 1000), 1);
	assert_int_equal(n.tab.nrows, 2);
	assert_non_null(tab_row(&n.tab, name31));
	assert_null(tab_row(&n.tab, "eth1"));
	assert_int_equal(tab_row(&n.tab, "eth2")->cur[ND_TX_BYTES], 8);
	/* a header only, then nothing */
	assert_int_equal(parse(&n, HEAD, 2000), 0);
	assert_int_equal(n.tab.nrows, 0);
	si_counters__free(&n);
}

GG_TEST(test_report_records)
{
	struct si_counters n = {.kind = &si_nic_kind};
	const char *out;
	char v[64], mtu[64];

	assert_int_equal(si_read_line("/sys/class/net/lo/mtu", mtu, sizeof(mtu)), 0);
	assert_int_equal(si_counters__sample(&n), 0); /* the real /proc/net/dev: lo exists */
	out = cap_report(si_counters__report(&n, cap_rt, "lo"));
	assert_int_equal(rec_count(out, "nic"), 1);
	assert_int_equal(rec_get(out, "nic", "lo", 13, v, sizeof(v)), 0); /* mtu */
	assert_string_equal(v, mtu);
	si_counters__free(&n);
}

GG_TEST_GROUP(cap_setup, cap_teardown);
