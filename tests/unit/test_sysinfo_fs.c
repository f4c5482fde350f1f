/* test_sysinfo_fs.c - system_infos' fs sub-probe parsers (probes/system_infos/fs.c) on fixture
 * /proc/mounts text: octal escapes in paths, fields cut to their buffers, paths mounted over later,
 * pseudo filesystems; and the system_df records of the real mount table against statvfs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit.h"

#include "../../probes/system_infos/fs.c"
#include "../../probes/system_infos/util.c"
#include "test_sysinfo_util.h"

GG_TEST(test_mount_field)
{
	static const char line[] = "/dev/sda1 /mnt/with\\040space\\011tab ext4 rw,relatime 0 0";
	const char *eol = line + strlen(line), *q;
	char dev[64], mnt[64], type[16], small[8];

	q = mount_field(line, eol, dev, sizeof(dev));
	q = mount_field(q, eol, mnt, sizeof(mnt));
	q = mount_field(q, eol, type, sizeof(type));
	assert_string_equal(dev, "/dev/sda1");
	assert_string_equal(mnt, "/mnt/with space\ttab");
	assert_string_equal(type, "ext4");
	/* cut to the buffer, the rest of the field skipped, not spilled into the next one */
	q = mount_field(line, eol, small, sizeof(small));
	assert_string_equal(small, "/dev/sd");
	q = mount_field(q, eol, mnt, sizeof(mnt));
	assert_string_equal(mnt, "/mnt/with space\ttab");
	/* a bad or cut escape stays as it is; a missing field is empty */
	q = mount_field("a\\09 b\\0", "a\\09 b\\0" + 8, mnt, sizeof(mnt));
	assert_string_equal(mnt, "a\\09");
	q = mount_field(q, "a\\09 b\\0" + 8, mnt, sizeof(mnt));
	assert_string_equal(mnt, "b\\0");
	q = mount_field(q, "a\\09 b\\0" + 8, mnt, sizeof(mnt));
	assert_string_equal(mnt, "");
}

GG_TEST(test_mounted_over_and_pseudo)
{
	static const char later[] = "tmpfs /run tmpfs rw 0 0\n"
				    "/dev/sdb1 /data ext4 rw 0 0\n"
				    "/dev/sdc1 /data/sub xfs rw 0 0";
	const char *end = later + strlen(later);

	assert_true(mounted_over_later(later, end, "/data"));
	assert_true(mounted_over_later(later, end, "/data/sub")); /* the last line, no newline */
	assert_false(mounted_over_later(later, end, "/dat"));
	assert_false(mounted_over_later(later, end, "/"));
	assert_false(mounted_over_later(later, later, "/run"));
	assert_true(is_pseudo("proc") && is_pseudo("cgroup2") && is_pseudo("tracefs"));
	assert_false(is_pseudo("ext4") || is_pseudo("tmpfs") || is_pseudo("overlay") || is_pseudo(""));
}

/* The real mount table: "/" is reported once, with statvfs's figures. */
GG_TEST(test_report_root)
{
	struct si_fs f = {0};
	struct statvfs sv;
	const char *out;
	char v[64];

	out = cap_report(si_fs__report(&f, cap_rt));
	assert_int_equal(statvfs("/", &sv), 0);
	assert_int_equal(rec_get(out, "system_df", "/", 3, v, sizeof(v)), 0); /* inodes */
	assert_int_equal(strtoull(v, NULL, 10), sv.f_files);
	assert_int_equal(rec_get(out, "system_df", "/", 7, v, sizeof(v)), 0); /* blocks, KiB */
	assert_true(strtod(v, NULL) == (double)sv.f_blocks * (double)sv.f_frsize / 1024.0);
	assert_int_equal(strstr(out, "|system_df|/proc|") == NULL, 1); /* pseudo filesystems left out */
	si_fs__free(&f);
}

GG_TEST_GROUP(cap_setup, cap_teardown);
