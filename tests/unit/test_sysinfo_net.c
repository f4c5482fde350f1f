/* test_sysinfo_net.c - system_infos' net sub-probe parser (probes/system_infos/net.c) on fixture
 * /proc/net/snmp text: Tcp and Udp counters by name, negative values, missing and truncated lines, and
 * the retransmission share between periods with counters going backwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/net.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

static const char snmp[] =
	"Ip: Forwarding DefaultTTL InReceives\n"
	"Ip: 1 64 12345\n"
	"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs "
	"OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
	"Tcp: 1 200 120000 -1 111 222 3 4 5 100000 90000 45 6 7 0\n"
	"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti\n"
	"Udp: 500 6 7 400 8 9 0 0\n"
	"UdpLite: InDatagrams NoPorts\n"
	"UdpLite: 0 0\n";

GG_TEST(test_find)
{
	struct snmp_want tcp[] = {{"MaxConn", 0, 0},	 {"ActiveOpens", 0, 0}, {"CurrEstab", 0, 0},
				  {"RetransSegs", 0, 0}, {"OutRsts", 0, 0},	{"NoSuchField", 0, 0}};
	struct snmp_want udp[] = {{"InDatagrams", 0, 0}, {"SndbufErrors", 0, 0}, {"NoPorts", 0, 0}};

	snmp_find(snmp, strlen(snmp), "Tcp", tcp, 6);
	assert_true(tcp[0].found && tcp[0].value == 0); /* -1 reads as 0 */
	assert_true(tcp[1].found && tcp[1].value == 111);
	assert_true(tcp[2].found && tcp[2].value == 5);
	assert_true(tcp[3].found && tcp[3].value == 45);
	assert_true(tcp[4].found && tcp[4].value == 7);
	assert_false(tcp[5].found);
	/* "Udp" is not "UdpLite" */
	snmp_find(snmp, strlen(snmp), "Udp", udp, 3);
	assert_true(udp[0].found && udp[0].value == 500);
	assert_true(udp[1].found && udp[1].value == 9);
	assert_true(udp[2].found && udp[2].value == 6);
}

GG_TEST(test_missing_and_truncated)
{
	static const char cut[] = "Tcp: ActiveOpens PassiveOpens CurrEstab InSegs\n"
				  "Tcp: 10 20\n"		/* fewer values than names */
				  "Udp: InDatagrams NoPorts\n"; /* no values line at all */
	struct snmp_want tcp[] = {{"ActiveOpens", 0, 0}, {"PassiveOpens", 0, 0}, {"CurrEstab", 0, 0}};
	struct snmp_want udp[] = {{"InDatagrams", 0, 0}};
	struct snmp_want none[] = {{"InDatagrams", 0, 0}};

	snmp_find(cut, strlen(cut), "Tcp", tcp, 3);
	assert_true(tcp[0].found && tcp[0].value == 10);
	assert_true(tcp[1].found && tcp[1].value == 20);
	assert_false(tcp[2].found);
	snmp_find(cut, strlen(cut), "Udp", udp, 1);
	assert_false(udp[0].found);
	snmp_find("", 0, "Udp", none, 1);
	assert_false(none[0].found);
	/* a names line followed by another protocol's values */
	snmp_find("Udp: InDatagrams\nIp: 5\n", 22, "Udp", none, 1);
	assert_false(none[0].found);
}

GG_TEST(test_retrans_percent)
{
	struct si_net n = {0};

	assert_true(retrans_percent(&n, 90000, 45) == 0); /* first period: no rate */
	assert_true(retrans_percent(&n, 91000, 55) == 1.0);
	assert_true(retrans_percent(&n, 91000, 60) == 0); /* nothing sent: 0, not a division by zero */
	/* counters went backwards (a reset): 0 for this period, not a huge share */
	assert_true(retrans_percent(&n, 100, 1) == 0);
	assert_true(retrans_percent(&n, 300, 3) == 1.0);
	assert_true(retrans_percent(&n, 400, 2) == 0); /* retransmits going backwards alone */
}

GG_TEST(test_report_records)
{
	struct si_net n = {0};
	const char *out;
	char v[64];

	out = cap_report(si_net__report(&n, cap_rt)); /* the real /proc/net/snmp */
	assert_int_equal(rec_count(out, "system_tcp"), 1);
	assert_int_equal(rec_count(out, "system_udp"), 1);
	assert_int_equal(rec_get(out, "system_tcp", "/proc/net/snmp", 11, v, sizeof(v)), 0); /* retrans_per */
	assert_string_equal(v, "0");
	si_net__free(&n);
}

GG_TEST_GROUP(cap_setup, cap_teardown);
