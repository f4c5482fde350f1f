/* test_fsutil.c - ipc/fsutil.c: whole-file reads of regular files and of /proc files (whose size says 0). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unit.h"

#include "../../ipc/fsutil.h"

GG_TEST(test_regular_file)
{
	char path[] = "/tmp/gg-fsutil-XXXXXX", *text = NULL;
	size_t len = 0;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello\n", 6), 6);
	close(fd);
	assert_int_equal(gg_read_file(path, 0, 6, &text, &len), 0);
	assert_int_equal(len, 6);
	assert_string_equal(text, "hello\n");
	free(text);
	assert_int_equal(gg_read_file(path, 0, 5, &text, &len), -EFBIG);
	unlink(path);
	assert_int_equal(gg_read_file(path, 0, 5, &text, &len), -ENOENT);
	assert_int_equal(gg_read_file("/tmp", 0, 5, &text, &len), -EINVAL);
}

#define NMAPS 200

/* /proc/self/maps says size 0; with NMAPS mappings split in two (one page readable, one not) it is
 * longer than the first 16 KiB buffer. */
GG_TEST(test_proc_file_read_to_its_end)
{
	long page = sysconf(_SC_PAGESIZE);
	char *text = NULL;
	size_t len = 0;
	void *maps[NMAPS];

	for (size_t i = 0; i < NMAPS; i++) {
		maps[i] = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(maps[i] != MAP_FAILED);
		assert_int_equal(mprotect((char *)maps[i] + page, page, PROT_NONE), 0);
	}
	assert_int_equal(gg_read_file("/proc/self/mountinfo", 0, 1u << 20, &text, &len), 0);
	assert_true(len > 0 && strlen(text) == len && text[len - 1] == '\n');
	free(text);
	assert_int_equal(gg_read_file("/proc/self/maps", 0, 1u << 20, &text, &len), 0);
	assert_true(len > 16384 && strlen(text) == len && text[len - 1] == '\n');
	free(text);
	/* more than max: refused, not cut */
	assert_int_equal(gg_read_file("/proc/self/maps", 0, 16384, &text, &len), -EFBIG);
	for (size_t i = 0; i < NMAPS; i++)
		munmap(maps[i], 2 * page);
}

/* As spelled: a base's trailing '/' aside, a path equal to it or below it, never a sibling prefix. */
GG_TEST(test_path_base_len)
{
	assert_int_equal(gg_path_base_len("/var/log/gg", "/var/log"), 8);
	assert_int_equal(gg_path_base_len("/var/log", "/tmp:/var/log/"), 8);
	assert_int_equal(gg_path_base_len("/var/logs/x", "/var/log"), 0);
	assert_int_equal(gg_path_base_len("/anything", "/"), 1);
	assert_int_equal(gg_path_base_len("/a/b", "relative:/a"), 2);
	assert_int_equal(gg_path_base_len("/a/b", "::/a//"), 2);
	assert_int_equal(gg_path_base_len("/a/b", ""), 0);
	assert_int_equal(gg_path_base_len("/a/b", NULL), 0);
}
