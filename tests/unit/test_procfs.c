/* test_procfs.c - the /proc text parsers probes share (probes/lib/procfs.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "procfs.h"

GG_TEST(test_status_nspid)
{
	static const struct {
		const char *status;
		int ret;
		uint32_t nspid;
	} cases[] = {
		{"Name:\tjava\nTgid:\t4242\nNSpid:\t4242\nPPid:\t1\n", 0, 4242},
		/* nested namespaces: the innermost, last */
		{"Name:\tjava\nNSpid:\t4242\t17\t1\nNSpgid:\t4242\n", 0, 1},
		{"Name:\tjava\nNSpid: 4242  17", 0, 17},    /* spaces, and no newline at the end */
		{"Name:\tjava\nTgid:\t4242\n", -ENOENT, 0}, /* a kernel without it */
		{"Name:\tjava\nNSpid:\t\nPPid:\t1\n", -ENOENT, 0},
		{"Name:\tjava\nNSpid:\tx\n", -ENOENT, 0},
		{"NSpid:\t5\n", -ENOENT, 0}, /* only after a line start ("Name:" always comes first) */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t nspid = 0;

		assert_int_equal(procfs_status_nspid(cases[i].status, &nspid), cases[i].ret);
		assert_int_equal(nspid, cases[i].nspid);
	}
}
