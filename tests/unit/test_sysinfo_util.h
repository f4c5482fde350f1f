/* test_sysinfo_util.h - what the system_infos parser tests share: the records a sub-probe emits,
 * captured from a standalone probe runtime (stdout briefly redirected into a temporary file), a lookup of
 * one field of a record by table and first key. Include after unit.h and the sub-probe's .c. */
#ifndef GG_TEST_SYSINFO_UTIL_H
#define GG_TEST_SYSINFO_UTIL_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe.h"
#include "test_tmpdir.h"

static struct probe_rt *cap_rt;
static int cap_fd = -1, cap_saved = -1;
static uint64_t cap_invalid; /* cap_rt's invalid records when the capture began */
static char cap_buf[1 << 20];

/* Group setup: a temporary file to capture stdout into, a standalone runtime printing records on
 * stdout (cap_begin .. cap_take send them to the file). */
static int cap_setup(void **state)
{
	char path[] = "/tmp/gg-sysinfo-test.XXXXXX";
	struct probe_rt_opts o = {.name = "baseinfo", .log_level = PLOG_ERROR};

	(void)state;
	unsetenv("GALA_GOPHER_DATA_URL");
	unsetenv("GALA_GOPHER_CTRL_URL");
	cap_fd = mkstemp(path);
	if (cap_fd < 0)
		return -1;
	unlink(path);
	cap_saved = dup(1);
	if (cap_saved < 0)
		return -1;
	cap_rt = probe_rt__new(&o);
	return cap_rt ? 0 : -1;
}

static int cap_teardown(void **state)
{
	(void)state;
	probe_rt__free(cap_rt);
	if (cap_saved >= 0)
		close(cap_saved);
	close(cap_fd);
	return 0;
}

/* The row named name of a sub-probe's counter table (disks, interfaces), or NULL. */
static __attribute__((unused)) const struct si_counter_row *tab_row(const struct si_counter_rows *t, const char *name)
{
	for (unsigned int i = 0; i < t->nrows; i++)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	return NULL;
}

/* From now on, what is printed on stdout (the records cap_rt emits) is captured. */
static __attribute__((unused)) void cap_begin(void)
{
	fflush(stdout);
	cap_invalid = probe_rt__records_invalid(cap_rt);
	assert_true(dup2(cap_fd, 1) == 1);
}

/* The record lines emitted since cap_begin, each valid for its table (asserted); stdout goes back to where
 * it was. */
static __attribute__((unused)) const char *cap_take(void)
{
	ssize_t n;

	(void)probe_rt__flush(cap_rt);
	fflush(stdout);
	assert_true(dup2(cap_saved, 1) == 1);
	/* every record emitted matched its table */
	assert_int_equal(probe_rt__records_invalid(cap_rt), cap_invalid);
	n = pread(cap_fd, cap_buf, sizeof(cap_buf) - 1, 0);
	cap_buf[n > 0 ? n : 0] = '\0';
	if (ftruncate(cap_fd, 0) == 0)
		(void)lseek(cap_fd, 0, SEEK_SET);
	return cap_buf;
}

/* The record lines that report_call (a sub-probe's report into cap_rt, which must return 0) emits: the call
 * made between cap_begin and cap_take. A macro: the call has to run inside the capture. */
#define cap_report(report_call) (cap_begin(), assert_int_equal((report_call), 0), cap_take())

/* Number of "|table|..." lines in out. */
static __attribute__((unused)) unsigned int rec_count(const char *out, const char *table)
{
	char head[128];
	unsigned int n = 0;
	size_t hl = (size_t)snprintf(head, sizeof(head), "|%s|", table);

	for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		if (!strncmp(l, head, hl))
			n++;
	return n;
}

/* Value idx (0 = the first field, key0 itself) of the "|table|key0|..." record in out, into val.
 * 0, or -ENOENT. */
static __attribute__((unused)) int rec_get(const char *out, const char *table, const char *key0, unsigned int idx,
					   char *val, size_t len)
{
	char head[256];
	size_t hl = (size_t)snprintf(head, sizeof(head), "|%s|%s|", table, key0);

	for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		const char *p, *e;

		if (strncmp(l, head, hl))
			continue;
		p = l + strlen(table) + 2;
		for (unsigned int i = 0; i < idx && p; i++) {
			p = strchr(p, '|');
			p = p ? p + 1 : NULL;
		}
		if (!p || !(e = strchr(p, '|')))
			return -ENOENT;
		snprintf(val, len, "%.*s", (int)(e - p), p);
		return 0;
	}
	return -ENOENT;
}

/* Write text to dir/name (made with its parent directories up to dir). */
static __attribute__((unused)) void put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		(void)mkdir(path, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

#endif
