/* test_l7share.c - l7probe's per-process aggregates file (probes/lib/l7share): bucket bounds hold every
 * latency, p99 of known latencies within a bucket's width, a written file read back entry by entry, the
 * table's bound counted, malformed lines and other headers refused. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "l7share.h"

GG_TEST(test_buckets)
{
	assert_int_equal(l7s_bucket(0), 0);
	assert_int_equal(l7s_bucket(1023), 0);
	assert_int_equal(l7s_bucket(1024), 1);
	assert_int_equal(l7s_bucket(1ull << 40), L7S_BUCKETS - 1);
	for (uint64_t ns = 1024; ns < (1ull << L7S_MAX_SHIFT); ns = ns * 17 / 16 + 1) {
		unsigned int b = l7s_bucket(ns);

		assert_true(l7s_bucket_lower(b) <= ns && ns < l7s_bucket_upper(b));
		/* a bucket is at most 1/16 of its lower bound wide */
		assert_true(l7s_bucket_upper(b) - l7s_bucket_lower(b) <= l7s_bucket_lower(b) / 16 + 1);
	}
	for (unsigned int b = 1; b + 1 < L7S_BUCKETS; b++)
		assert_int_equal(l7s_bucket_upper(b), l7s_bucket_lower(b + 1));
}

GG_TEST(test_quantile)
{
	static uint32_t h[L7S_BUCKETS];
	double p99;

	assert_true(l7s_quantile(h, 0.99) == 0);
	/* 1000 requests: 1 .. 1000 ms; p99 is 990 ms */
	for (uint64_t i = 1; i <= 1000; i++)
		h[l7s_bucket(i * 1000000ull)]++;
	p99 = l7s_quantile(h, 0.99) / 1e6;
	assert_true(p99 > 990 * (1 - 1.0 / 16) && p99 < 990 * (1 + 1.0 / 16));
	/* one slow request in 100 fast ones: p99 is a fast one */
	memset(h, 0, sizeof(h));
	h[l7s_bucket(5000000)] = 100;
	h[l7s_bucket(900000000)] = 1;
	assert_true(l7s_quantile(h, 0.99) < 6e6);
	h[l7s_bucket(900000000)] = 2;
	assert_true(l7s_quantile(h, 0.99) > 8e8);
}

struct seen {
	int n, server, client;
	uint64_t reqs, errs;
	double p99_ms;
};

static int on_entry(void *arg, const struct l7s_entry *e)
{
	struct seen *s = arg;

	s->n++;
	if (e->tgid == 42 && e->role == L7S_ROLE_SERVER) {
		s->server = 1;
		s->reqs = e->reqs;
		s->errs = e->errs;
		s->p99_ms = l7s_quantile(e->hist, 0.99) / 1e6;
	}
	if (e->tgid == 42 && e->role == L7S_ROLE_CLIENT)
		s->client = 1;
	return 0;
}

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len);
	close(fd);
	assert_true(n > 0 && (size_t)n < len);
	return (int)n;
}

GG_TEST(test_roundtrip)
{
	char dir[] = "/tmp/test_l7share.XXXXXX", path[256], buf[65536];
	struct l7s_table *t = l7s_table__new(2);
	struct seen s = {0};
	struct l7s_hdr hdr;
	uint64_t bad = 9, n, dropped;

	assert_non_null(t);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, L7S_FILE);
	for (int i = 0; i < 200; i++)
		l7s_table__add(t, 42, L7S_ROLE_SERVER, (uint64_t)(i < 197 ? 50 : 200) * 1000000ull, i % 4 == 0);
	l7s_table__add(t, 42, L7S_ROLE_CLIENT, 1000, 0);
	l7s_table__add(t, 43, L7S_ROLE_SERVER, 1000, 0); /* a third entry: over the bound of 2 */
	l7s_table__stats(t, &n, &dropped);
	assert_int_equal(n, 2);
	assert_int_equal(dropped, 1);
	assert_int_equal(l7s_table__publish(t, path, 0), 0);
	assert_int_equal(access(path, R_OK), 0);
	n = (uint64_t)read_file(path, buf, sizeof(buf));
	assert_int_equal(l7s_parse(buf, n, &hdr, on_entry, &s, &bad), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(hdr.writer_pid, (uint32_t)getpid());
	assert_int_equal(hdr.dropped, 1);
	assert_int_equal(s.n, 2);
	assert_true(s.server && s.client);
	assert_int_equal(s.reqs, 200);
	assert_int_equal(s.errs, 50);
	/* 3 of 200 at 200 ms: the 198th is one of them */
	assert_true(s.p99_ms > 190 && s.p99_ms < 215);
	/* nothing new: no write (the file stays as it was) */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(l7s_table__publish(t, path, 0), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(l7s_table__publish(t, path, 1), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	l7s_table__free(t);
	l7s_table__free(NULL);
}

GG_TEST(test_malformed)
{
	static const char *const bad_hdrs[] = {
		"",
		"x\n",
		"gala-gopher-l7-procs 2 1 1 0\n",
		"gala-gopher-l7-procs 1 1 1\n",
		"gala-gopher-l7-procs 1\n",
		"gala-gopher-l7-procs 1 99999999999 1 0\n",
	};
	const char *lines = "gala-gopher-l7-procs 1 7 8 0\n"
			    "42 1 2 10 1 100 5:10\n"		  /* good */
			    "42 1 3 10 1 100 5:10\n"		  /* role 3 */
			    "0 1 2 10 1 100\n"			  /* tgid 0 */
			    "42 1 2 10 1 100 999:1\n"		  /* bucket out of range */
			    "42 1 2 10 1 100 5:\n"		  /* no count */
			    "42 1 2 10 1\n"			  /* fields missing */
			    "42 1 2 10 1 100 5:1:2\n"		  /* junk */
			    "42 1 2 99999999999999999999 1 100\n" /* overflow */
			    "43 2 1 3 0 7";			  /* good, no newline at the end */
	struct seen s = {0};
	struct l7s_hdr hdr;
	uint64_t bad = 0;

	for (size_t i = 0; i < sizeof(bad_hdrs) / sizeof(bad_hdrs[0]); i++)
		assert_int_equal(l7s_parse(bad_hdrs[i], strlen(bad_hdrs[i]), &hdr, on_entry, &s, NULL), -EPROTO);
	assert_int_equal(l7s_parse(lines, strlen(lines), &hdr, on_entry, &s, &bad), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(bad, 7);
	assert_int_equal(hdr.writer_pid, 7);
	assert_int_equal(hdr.writer_start, 8);
}

GG_TEST(test_path)
{
	char buf[256];

	unsetenv("GALA_GOPHER_DATA_URL");
	unsetenv("GALA_GOPHER_RUN_DIR");
	assert_int_equal(l7s_path(buf, sizeof(buf)), -ENOENT);
	setenv("GALA_GOPHER_RUN_DIR", "/tmp/r", 1);
	assert_int_equal(l7s_path(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp/r/l7_procs");
	setenv("GALA_GOPHER_DATA_URL", "ipc:///run/gg/data.ipc", 1);
	assert_int_equal(l7s_path(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/gg/l7_procs");
	assert_int_equal(l7s_path(buf, 8), -ENAMETOOLONG);
	unsetenv("GALA_GOPHER_DATA_URL");
	unsetenv("GALA_GOPHER_RUN_DIR");
}
