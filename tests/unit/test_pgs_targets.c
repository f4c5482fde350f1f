/* test_pgs_targets.c - pg_stat_probe's servers (probes/pg_stat_probe/pgs_targets.c): gala-gopher's
 * pg_stat_probe.conf in the shapes YAML allows, its errors with line numbers, the REST API's gaussdb
 * snoopers, duplicates; and the LISTEN socket lookup of pgs_owner.c on /proc/net/tcp{,6} text. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "unit.h"

#include "pgs_owner.h"
#include "pgs_targets.h"

static int conf(const char *text, struct pgs_targets *ts, char *err, size_t errlen)
{
	memset(ts, 0x55, sizeof(*ts));
	return pgs_targets__from_conf(text, strlen(text), ts, err, errlen);
}

GG_TEST(test_conf_gala_gopher_example)
{
	/* gala-gopher's own pg_stat_probe.conf */
	static const char text[] = "servers:\n"
				   "  -\n"
				   "    ip: \"172.11.0.101\"\n"
				   "    port: \"5432\"\n"
				   "    dbname: \"postgres\"\n"
				   "    user: \"opengauss_exporter\"\n"
				   "    password: \"opengauss_exporter123\"\n"
				   "  -\n"
				   "    ip: \"172.12.0.101\"\n"
				   "    port: \"5433\"\n"
				   "    dbname: \"postgres\"\n"
				   "    user: \"opengauss_exporter\"\n"
				   "    password: \"opengauss_exporter123\"\n";
	struct pgs_targets ts;
	char err[200] = "";

	assert_int_equal(conf(text, &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 2);
	assert_int_equal(ts.dup, 0);
	assert_string_equal(ts.t[0].ip, "172.11.0.101");
	assert_int_equal(ts.t[0].port, 5432);
	assert_string_equal(ts.t[0].dbname, "postgres");
	assert_string_equal(ts.t[0].user, "opengauss_exporter");
	assert_string_equal(ts.t[0].password, "opengauss_exporter123");
	assert_string_equal(ts.t[1].ip, "172.12.0.101");
	assert_int_equal(ts.t[1].port, 5433);
}

GG_TEST(test_conf_yaml_shapes)
{
	/* inline first key, plain and single-quoted values, comments, CRLF, a list at the key's indentation,
	 * another top-level section around it, a password with '#' and ':' inside quotes */
	static const char text[] = "# servers polled\r\n"
				   "other:\r\n"
				   "  - ip: 10.0.0.1\r\n"
				   "servers:\r\n"
				   "- ip: db.example   # the primary\r\n"
				   "  port: 5432\r\n"
				   "  dbname: 'app db'\r\n"
				   "  user: monitor\r\n"
				   "  password: \"p#ss: w\"\r\n"
				   "\r\n"
				   "- ip: ::1\r\n"
				   "  port: 6432\r\n"
				   "tail:\r\n"
				   "  - ip: 10.0.0.2\r\n";
	struct pgs_targets ts;
	char err[200] = "";

	assert_int_equal(conf(text, &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 2);
	assert_string_equal(ts.t[0].ip, "db.example");
	assert_int_equal(ts.t[0].port, 5432);
	assert_string_equal(ts.t[0].dbname, "app db");
	assert_string_equal(ts.t[0].user, "monitor");
	assert_string_equal(ts.t[0].password, "p#ss: w");
	assert_string_equal(ts.t[1].ip, "::1");
	assert_int_equal(ts.t[1].port, 6432);
	assert_string_equal(ts.t[1].dbname, "");
	assert_string_equal(ts.t[1].password, "");
}

GG_TEST(test_conf_empty_and_duplicates)
{
	static const char dup[] = "servers:\n  - ip: 127.0.0.1\n    port: 5432\n    dbname: a\n"
				  "  - ip: 127.0.0.1\n    port: 5432\n    dbname: b\n";
	struct pgs_targets ts;
	char err[200] = "";

	assert_int_equal(conf("", &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 0);
	assert_int_equal(conf("# nothing\nservers:\n", &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 0);
	assert_int_equal(conf(dup, &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 1);
	assert_int_equal(ts.dup, 1);
	assert_string_equal(ts.t[0].dbname, "a");
}

GG_TEST(test_conf_errors)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{"servers:\n  - ip: 127.0.0.1\n    port: 0\n", "line 3: port"},
		{"servers:\n  - ip: 127.0.0.1\n    port: 70000\n", "line 3: port"},
		{"servers:\n  - ip: 127.0.0.1\n    port: -5\n", "line 3: port"},
		{"servers:\n  - ip: 127.0.0.1\n    port: 54x\n", "line 3: port"},
		{"servers:\n  - ip: 127.0.0.1\n    host: x\n", "line 3: unknown key \"host\""},
		{"servers:\n  - ip: \"127.0.0.1\n", "line 2: ip: malformed"},
		{"servers:\n  - ip: \"a\" b\n", "line 2: ip: malformed"},
		{"servers:\n  - ip: /var/run/postgresql\n    port: 5432\n", "server 1: ip: must be an address"},
		{"servers:\n  - ip: 'h host=evil'\n    port: 5432\n", "server 1: ip: must be an address"},
		{"servers:\n  - port: 5432\n", "server 1: ip: must be an address"},
		{"servers:\n  - ip: 127.0.0.1\n", "server 1: port"},
		{"servers:\n  ip: 127.0.0.1\n", "line 2: expected a list item"},
		{"servers: []\n", "line 1: \"servers:\" must be followed by a list"},
		{"servers:\n  - ip: 127.0.0.1\n    user: \"a\tb\"\n", "line 3: user: control characters"},
	};
	struct pgs_targets ts;
	char err[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(conf(bad[i].text, &ts, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].want))
			fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err, bad[i].want);
	}
}

GG_TEST(test_conf_limits)
{
	char text[4096], err[200] = "";
	struct pgs_targets ts;
	size_t n = 0;

	/* nine servers: one more than the REST API takes */
	n += (size_t)snprintf(text + n, sizeof(text) - n, "servers:\n");
	for (int i = 0; i < 9; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "  - ip: 10.0.0.%d\n    port: 5432\n", i + 1);
	assert_int_equal(conf(text, &ts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than 8 servers"));
	/* a password one byte too long */
	n = (size_t)snprintf(text, sizeof(text), "servers:\n  - ip: h\n    port: 1\n    password: ");
	memset(text + n, 'x', PGS_PASS_LEN);
	text[n + PGS_PASS_LEN] = '\n';
	text[n + PGS_PASS_LEN + 1] = 0;
	assert_int_equal(conf(text, &ts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "password: longer than 127 bytes"));
	/* a NUL inside the text */
	assert_int_equal(pgs_targets__from_conf("servers:\n  - ip: a\0b\n", 22, &ts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "NUL"));
}

GG_TEST(test_snoopers)
{
	cJSON *sn = cJSON_Parse("{\"proc_id\": [1], \"gaussdb\": [{\"dbip\": \"127.0.0.1\", \"dbport\": 5432, \"dbname\": "
				"\"postgres\", \"dbuser\": \"u\", \"dbpass\": \"p\"}, {\"dbip\": \"127.0.0.1\", \"dbport\": "
				"5432, \"dbname\": \"other\", \"dbuser\": \"u\", \"dbpass\": \"p\"}, {\"dbip\": \"h2\", "
				"\"dbport\": 6432, \"dbname\": \"d\", \"dbuser\": \"u\", \"dbpass\": \"\"}]}");
	struct pgs_targets ts, ts2;
	char err[200] = "";

	assert_non_null(sn);
	assert_int_equal(pgs_targets__from_snoopers(sn, &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 2);
	assert_int_equal(ts.dup, 1);
	assert_string_equal(ts.t[0].dbname, "postgres");
	assert_string_equal(ts.t[1].ip, "h2");
	assert_int_equal(ts.t[1].port, 6432);
	ts2 = ts;
	assert_true(pgs_targets__equal(&ts, &ts2));
	strcpy(ts2.t[1].password, "changed");
	assert_false(pgs_targets__equal(&ts, &ts2));
	cJSON_Delete(sn);

	/* no gaussdb list: no servers */
	sn = cJSON_Parse("{\"proc_id\": [1]}");
	assert_int_equal(pgs_targets__from_snoopers(sn, &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 0);
	cJSON_Delete(sn);
	assert_int_equal(pgs_targets__from_snoopers(NULL, &ts, err, sizeof(err)), 0);
	assert_int_equal(ts.n, 0);

	/* a port out of range, a path as the host, not an object */
	sn = cJSON_Parse("{\"gaussdb\": [{\"dbip\": \"h\", \"dbport\": 0}]}");
	assert_int_equal(pgs_targets__from_snoopers(sn, &ts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "gaussdb[0]: port"));
	cJSON_Delete(sn);
	sn = cJSON_Parse("{\"gaussdb\": [{\"dbip\": \"/tmp\", \"dbport\": 5432}]}");
	assert_int_equal(pgs_targets__from_snoopers(sn, &ts, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "gaussdb[0]: ip"));
	cJSON_Delete(sn);
	sn = cJSON_Parse("{\"gaussdb\": [\"h:5432\"]}");
	assert_int_equal(pgs_targets__from_snoopers(sn, &ts, err, sizeof(err)), -EINVAL);
	cJSON_Delete(sn);
}

GG_TEST(test_owner_parse)
{
	static const char tcp[] =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 0100007F:D8A0 00000000:0000 0A 00000000:00000000 00:00000000 00000000   104        0 1001 1 0 100 0 0 10 0\n"
		"   1: 00000000:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 100 0 0 10 0\n"
		"   2: 0100007F:D8A0 0100007F:9C40 01 00000000:00000000 00:00000000 00000000   104        0 1003 1 0 20 4 30 10 -1\n"
		"   3: 0200007F:D8A0 00000000:0000 0A 00000000:00000000 00:00000000 00000000   104        0 1004 1 0 100 0 0 10 0\n";
	static const char tcp6[] =
		"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 00000000000000000000000000000000:1538 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2001 1 0 100 0 0 10 0\n"
		"   1: 00000000000000000000000001000000:D8A0 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2002 1 0 100 0 0 10 0\n";
	uint8_t lo4[4], lo6[16];
	uint64_t ino[8];

	inet_pton(AF_INET, "127.0.0.1", lo4);
	inet_pton(AF_INET6, "::1", lo6);
	/* 127.0.0.1:55456 listens (1001); the established socket on that port (1003) and 127.0.0.2 do not count */
	assert_int_equal(pgs_owner__parse(tcp, AF_INET, lo4, 55456, ino, 8), 1);
	assert_int_equal(ino[0], 1001);
	/* 0.0.0.0:5432 takes 127.0.0.1 */
	assert_int_equal(pgs_owner__parse(tcp, AF_INET, lo4, 5432, ino, 8), 1);
	assert_int_equal(ino[0], 1002);
	assert_int_equal(pgs_owner__parse(tcp, AF_INET, lo4, 5433, ino, 8), 0);
	/* tcp6: [::]:5432 and [::1]:55456 */
	assert_int_equal(pgs_owner__parse(tcp6, AF_INET6, lo6, 5432, ino, 8), 1);
	assert_int_equal(ino[0], 2001);
	assert_int_equal(pgs_owner__parse(tcp6, AF_INET6, lo6, 55456, ino, 8), 1);
	assert_int_equal(ino[0], 2002);
	/* at most max */
	assert_int_equal(pgs_owner__parse(tcp, AF_INET, lo4, 5432, ino, 0), 0);
	/* garbage */
	assert_int_equal(pgs_owner__parse("header only", AF_INET, lo4, 5432, ino, 8), 0);
	assert_int_equal(pgs_owner__parse("h\n 0: zz:zz\n\n", AF_INET, lo4, 5432, ino, 8), 0);
}
