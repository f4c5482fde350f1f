/* test_hap_sess.c - trace_haproxy's reader of HAProxy's "show sess all" (probes/trace_haproxy/hap_sess.c):
 * an answer recorded from Debian's HAProxy 2.6 (three TCP streams, two HTTP requests in flight, the
 * CLI's own stream), IPv6 addresses, answers that are not show sess, every prefix of the recording. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "hap_sess.h"

#define FIXTURE "tests/fixtures/haproxy/show_sess_all_2.6.txt"

struct got {
	struct hap_link l[16];
	unsigned int n;
};

static void collect(void *arg, const struct hap_link *l)
{
	struct got *g = arg;

	if (g->n < 16)
		g->l[g->n] = *l;
	g->n++;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);

	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static unsigned int count(const struct got *g, int mode, unsigned int vport, unsigned int sport)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < g->n && i < 16; i++)
		if (g->l[i].mode == mode && g->l[i].virtual_port == vport && g->l[i].server_port == sport &&
		    !strcmp(g->l[i].client_ip, "127.0.0.1") && !strcmp(g->l[i].virtual_ip, "127.0.0.1") &&
		    !strcmp(g->l[i].server_ip, "127.0.0.1"))
			n++;
	return n;
}

GG_TEST(test_recorded_answer)
{
	struct hap_sess_stats st;
	struct got g = {0};
	size_t len;
	char *text = slurp(FIXTURE, &len);

	assert_int_equal(hap_sess_parse(text, len, collect, &g, &st), 0);
	assert_int_equal(st.streams, 6);
	assert_int_equal(st.links, 5);
	assert_int_equal(g.n, 5);
	assert_int_equal(st.no_server, 1); /* the CLI's own stream */
	assert_int_equal(st.malformed, 0);
	assert_int_equal(count(&g, HAP_MODE_TCP, 18080, 18090), 3);
	assert_int_equal(count(&g, HAP_MODE_HTTP, 18081, 18091), 2);
	free(text);
}

GG_TEST(test_every_prefix)
{
	size_t len;
	char *text = slurp(FIXTURE, &len);
	size_t first = (size_t)((char *)memchr(text, '\n', len) - text); /* a cut first line is no record start */

	for (size_t n = 0; n <= len; n++) {
		struct hap_sess_stats st;
		struct got g = {0};
		char *copy = malloc(n ? n : 1);

		assert_non_null(copy);
		memcpy(copy, text, n);
		int r = hap_sess_parse(copy, n, collect, &g, &st);

		if (n && n < first && r == -EINVAL) {
			free(copy);
			continue;
		}
		assert_int_equal(r, 0);
		assert_true(st.links <= 5 && st.links + st.no_server + st.malformed == st.streams);
		free(copy);
	}
	free(text);
}

GG_TEST(test_ipv6_and_no_server)
{
	static const char text[] =
		"0x1: [07/Dec/2026:23:23:10.751950] id=9 proto=tcpv6 source=::1:46694\n"
		"  flags=0x4a, conn_retries=0\n"
		"  frontend=fe6 (id=2 mode=http), listener=? (id=1) addr=::1:8443\n"
		"  backend=be (id=4 mode=http) addr=::1:32984\n"
		"  server=s1 (id=1) addr=fd00::5:443\n"
		"0x2: [07/Dec/2026:23:23:10.751950] id=10 proto=tcpv4 source=10.0.0.7:5000\n"
		"  frontend=fe (id=2 mode=tcp), listener=? (id=1) addr=10.0.0.1:80\n"
		"  backend=be (id=4 mode=tcp)\n"
		"  server=<NONE> (id=-1)\n"
		"0x3: [07/Dec/2026:23:23:10.751950] id=11 proto=tcpv4 source=10.0.0.8:5000\n"
		"  frontend=fe (id=2 mode=tcp), listener=? (id=1) addr=10.0.0.1:80\n"
		"0x4: [07/Dec/2026:23:23:10.751950] id=12 proto=tcpv4 source=10.0.0.9:5000\n"
		"  frontend=fe (id=2 mode=tcp), listener=? (id=1) addr=10.0.0.1:80\n"
		"  server=s2 (id=2) addr=/run/app.sock\n";
	struct hap_sess_stats st;
	struct got g = {0};

	assert_int_equal(hap_sess_parse(text, sizeof(text) - 1, collect, &g, &st), 0);
	assert_int_equal(st.streams, 4);
	assert_int_equal(st.links, 1);
	assert_int_equal(st.no_server, 2);
	assert_int_equal(st.malformed, 1);
	assert_string_equal(g.l[0].client_ip, "::1");
	assert_string_equal(g.l[0].virtual_ip, "::1");
	assert_int_equal(g.l[0].virtual_port, 8443);
	assert_string_equal(g.l[0].server_ip, "fd00::5");
	assert_int_equal(g.l[0].server_port, 443);
	assert_int_equal(g.l[0].mode, HAP_MODE_HTTP);
}

GG_TEST(test_not_show_sess)
{
	static const char *const bad[] = {
		"Unknown command: 'show sess', but 'help' lists the known ones.\n",
		"Permission denied\n",
		"\x01\x02\x03",
	};
	struct hap_sess_stats st;
	struct got g = {0};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(hap_sess_parse(bad[i], strlen(bad[i]), collect, &g, &st), -EINVAL);
	/* no stream at all: an empty answer */
	assert_int_equal(hap_sess_parse("\n", 1, collect, &g, &st), 0);
	assert_int_equal(st.streams, 0);
	/* a port out of range, a name instead of an address */
	assert_int_equal(hap_sess_parse("0x1: [x] id=1 proto=tcpv4 source=1.2.3.4:70000\n  frontend=f (id=1 mode=tcp), "
					"listener=? addr=1.1.1.1:1\n  server=s (id=1) addr=2.2.2.2:2\n",
					118, collect, &g, &st),
			 0);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(g.n, 0);
}
