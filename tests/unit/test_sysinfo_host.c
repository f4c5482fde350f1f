/* test_sysinfo_host.c - system_infos' host sub-probe (probes/system_infos/host.c): the os-release
 * PRETTY_NAME parser on fixture text, and the system_os record against uname and the real files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/host.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

static void parse(const char *text, char *out, size_t len)
{
	snprintf(out, len, "Linux");
	pretty_name_parse(text, strlen(text), out, len);
}

GG_TEST(test_pretty_name)
{
	char out[64], tiny[8];

	parse("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n", out,
	      sizeof(out));
	assert_string_equal(out, "Debian GNU/Linux 12 (bookworm)");
	parse("PRETTY_NAME='openEuler 22.03 (LTS-SP1)'\n", out, sizeof(out));
	assert_string_equal(out, "openEuler 22.03 (LTS-SP1)");
	parse("ID=alpine\nPRETTY_NAME=Alpine", out, sizeof(out)); /* unquoted, no newline at the end */
	assert_string_equal(out, "Alpine");
	parse("ID=x\nXPRETTY_NAME=\"no\"\n", out, sizeof(out)); /* only at the start of a line */
	assert_string_equal(out, "Linux");
	parse("PRETTY_NAME=\"\"\n", out, sizeof(out)); /* empty: the default stays */
	assert_string_equal(out, "Linux");
	parse("PRETTY_NAME=\"", out, sizeof(out)); /* cut after the quote */
	assert_string_equal(out, "Linux");
	parse("PRETTY_NAME=\"A very long distribution name\"\n", tiny, sizeof(tiny));
	assert_string_equal(tiny, "A very ");
}

GG_TEST(test_report_record)
{
	struct si_host h = {0};
	struct utsname u;
	const char *out;

	assert_int_equal(uname(&u), 0);
	out = cap_report(si_host__report(&h, cap_rt));
	assert_int_equal(rec_count(out, "system_os"), 1);
	assert_non_null(strstr(out, u.release));
	si_host__free(&h);
}

GG_TEST_GROUP(cap_setup, cap_teardown);
