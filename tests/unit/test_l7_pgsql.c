/* test_l7_pgsql.c - l7probe's PostgreSQL parser on bytes recorded from psql and pgbench against
 * PostgreSQL 15 (strace): startup, SSLRequest refused, simple and extended queries, errors; and crafted
 * ones: pipelined extended batches, COPY, notices between requests, gaps, garbage. */
#include "test_l7_util.h"

/* recorded: psql 15 -> postgres 15 on 127.0.0.1, trust auth */
#define STARTUP                                                \
	"\x00\x00\x00\x3f\x00\x03\x00\x00user\x00postgres\x00" \
	"database\x00postgres\x00"                             \
	"application_name\x00"                                 \
	"psql\x00\x00"
#define STARTUP_R                                                                                                  \
	"R\x00\x00\x00\x08\x00\x00\x00\x00S\x00\x00\x00\x1a"                                                       \
	"application_name\x00psql\x00S\x00\x00\x00\x19"                                                            \
	"c"                                                                                                        \
	"lient_encoding\x00UTF8\x00S\x00\x00\x00\x17"                                                              \
	"DateStyle\x00ISO, MDY\x00S\x00\x00\x00&default_transact"                                                  \
	"ion_read_only\x00off\x00S\x00\x00\x00\x17in_hot_standby\x00off\x00S\x00\x00\x00\x19integer_datetimes\x00" \
	"on\x00S\x00\x00\x00\x1bIntervalStyle\x00postgres\x00S\x00\x00\x00\x14is_superuser\x00on\x00S\x00\x00\x00" \
	"\x19server_encoding\x00UTF8\x00S\x00\x00\x00"                                                             \
	"2server_version\x00"                                                                                      \
	"15.18 (Debian 15.18-0+deb12u1)\x00"                                                                       \
	"S\x00\x00\x00#session_authorization\x00postgres\x00S\x00\x00\x00#standard_conforming_strings\x00on\x00"   \
	"S\x00\x00\x00\x15TimeZone\x00"                                                                            \
	"Etc/UTC\x00K\x00\x00\x00\x0c\x00\x00\x14\xed\xa9\xef\xd1\x1dZ\x00\x00"                                    \
	"\x00\x05I"
#define Q_SELECT "Q\x00\x00\x00\x12SELECT 1 AS x\x00"
#define R_SELECT                                                                                                 \
	"T\x00\x00\x00\x1a\x00\x01x\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00" \
	"D\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x01"                                                              \
	"1C\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I"
#define Q_BAD "Q\x00\x00\x00\x0eSELEC bad\x00"
#define R_BAD                                                        \
	"E\x00\x00\x00]SERROR\x00VERROR\x00"                         \
	"C42601\x00Msyntax error at or near \x22SELEC\x22\x00P1\x00" \
	"Fsc"                                                        \
	"an.l\x00L1188\x00Rscanner_yyerror\x00\x00Z\x00\x00\x00\x05I"
#define SSLREQ "\x00\x00\x00\x08\x04\xd2\x16/"
#define PGB_EXT                                                 \
	"P\x00\x00\x00\x16\x00select $1 + 1;\x00\x00\x00"       \
	"B\x00\x00\x00\x13\x00\x00\x00\x00\x00\x01\x00\x00\x00" \
	"\x01"                                                  \
	"5\x00\x01\x00\x00"                                     \
	"D\x00\x00\x00\x06P\x00"                                \
	"E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00"    \
	"\x04"
#define PGB_EXT_R                                          \
	"1\x00\x00\x00\x04"                                \
	"2\x00\x00\x00\x04T\x00\x00\x00!\x00\x01\x3f"      \
	"column\x3f\x00\x00\x00\x00\x00\x00\x00"           \
	"\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00" \
	"D\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x01"        \
	"6C\x00"                                           \
	"\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I"
#define TERMINATE "X\x00\x00\x00\x04"

GG_TEST(test_psql_session)
{
	static const struct l7t_step steps[] = {
		REQ(SSLREQ),	RESP("N"),  REQ(STARTUP), RESP(STARTUP_R), REQ(Q_SELECT),
		RESP(R_SELECT), REQ(Q_BAD), RESP(R_BAD),  REQ(TERMINATE),
	};
	static const struct l7t_want want[] = {
		{.api = "SELECT",
		 .req_bytes = sizeof(Q_SELECT) - 1,
		 .resp_bytes = sizeof(R_SELECT) - 1,
		 .req_ts_ns = 5000,
		 .resp_ts_ns = 6000},
		{.api = "SELEC", .error = 1, .req_bytes = sizeof(Q_BAD) - 1, .resp_bytes = sizeof(R_BAD) - 1},
	};

	l7t_check_script(L7_PROTO_PGSQL, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* pgbench -M extended: Parse/Bind/Describe/Execute/Sync in one write, twice; then a pipeline of
 * two batches and a simple query written together, answered together. */
GG_TEST(test_extended)
{
	static const struct l7t_step steps[] = {
		REQ(STARTUP),
		RESP(STARTUP_R),
		REQ(PGB_EXT),
		RESP(PGB_EXT_R),
		REQ(PGB_EXT),
		RESP(PGB_EXT_R),
		REQ(PGB_EXT PGB_EXT Q_SELECT),
		RESP(PGB_EXT_R PGB_EXT_R R_SELECT),
	};
	static const struct l7t_want want[] = {
		{.api = "SELECT", .req_bytes = sizeof(PGB_EXT) - 1, .resp_bytes = sizeof(PGB_EXT_R) - 1},
		{.api = "SELECT", .req_bytes = sizeof(PGB_EXT) - 1, .resp_bytes = sizeof(PGB_EXT_R) - 1},
		{.api = "SELECT", .req_bytes = sizeof(PGB_EXT) - 1, .resp_bytes = sizeof(PGB_EXT_R) - 1},
		{.api = "SELECT",
		 .req_bytes = sizeof(PGB_EXT) - 1,
		 .resp_bytes = sizeof(PGB_EXT_R) - 1,
		 .resp_ts_ns = 8000},
		{.api = "SELECT", .req_bytes = sizeof(Q_SELECT) - 1, .resp_bytes = sizeof(R_SELECT) - 1},
	};

	l7t_check_script(L7_PROTO_PGSQL, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* Parse + Describe + Flush answered before the Bind/Execute/Sync that completes the request; a
 * notice and a parameter change between requests; COPY FROM STDIN; an error inside an extended
 * batch (ErrorResponse then ReadyForQuery after Sync). */
GG_TEST(test_flush_notice_copy)
{
	static const struct l7t_step steps[] = {
		REQ("P\x00\x00\x00\x1as1\x00update t set a=1\x00\x00\x00"
		    "D\x00\x00\x00\x08Ss1\x00H\x00\x00\x00\x04"),
		RESP("1\x00\x00\x00\x04t\x00\x00\x00\x06\x00\x00n\x00\x00\x00\x04"),
		REQ("B\x00\x00\x00\x0e\x00s1\x00\x00\x00\x00\x00\x00\x00"
		    "E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04"),
		RESP("2\x00\x00\x00\x04"
		     "C\x00\x00\x00\x0dUPDATE 1\x00Z\x00\x00\x00\x05I"),
		RESP("N\x00\x00\x00\x0dSNOTICE\x00\x00S\x00\x00\x00\x11TimeZone\x00UTC\x00"),
		REQ("Q\x00\x00\x00\x17"
		    "COPY t FROM STDIN;\x00"),
		RESP("G\x00\x00\x00\x07\x00\x00\x00"),
		REQ("d\x00\x00\x00\x06"
		    "1\x0a"
		    "d\x00\x00\x00\x06"
		    "2\x0a"
		    "c\x00\x00\x00\x04"),
		RESP("C\x00\x00\x00\x0b"
		     "COPY 2\x00Z\x00\x00\x00\x05I"),
		REQ("P\x00\x00\x00\x0d\x00sel x\x00\x00\x00"
		    "B\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x00"
		    "E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04"),
		RESP("E\x00\x00\x00\x0cSERROR\x00\x00Z\x00\x00\x00\x05I"),
	};
	static const struct l7t_want want[] = {
		{.api = "UPDATE t", .req_bytes = 41 + 30, .resp_bytes = 17 + 25, .req_ts_ns = 1000, .resp_ts_ns = 4000},
		/* the query; COPY data is not counted */
		{.api = "COPY", .req_bytes = 24, .resp_bytes = 8 + 18, .resp_ts_ns = 9000},
		{.api = "SEL", .error = 1, .req_bytes = 42, .resp_bytes = 19},
	};

	l7t_check_script(L7_PROTO_PGSQL, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A big query and a big result mostly not captured: skipped by count. */
GG_TEST(test_gaps)
{
	static const char q[] = "Q\x00\x01\x00\x05insert into t values ('xxxx";
	static const char r[] = "T\x00\x00\x00\x1a\x00\x01x\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff\xff"
				"\xff\xff\x00\x00"
				"D\x00\x10\x00\x00\x00\x01";
	struct l7t_step steps[] = {
		{L7_FLOW_REQ, q, sizeof(q) - 1, 1 + 0x10005},
		RESP("C\x00\x00\x00\x0fINSERT 0 1\x00Z\x00\x00\x00\x05I"),
		REQ(Q_SELECT),
		{L7_FLOW_RESP, r, sizeof(r) - 1, 27 + 1 + 0x100000},
		RESP("C\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I"),
	};
	static const struct l7t_want want[] = {
		{.api = "INSERT t", .req_bytes = 1 + 0x10005},
		{.api = "SELECT", .resp_bytes = 27 + 1 + 0x100000 + 20},
	};

	l7t_check_script(L7_PROTO_PGSQL, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A result of many small rows written in big chunks of which only a prefix is captured: the message
 * headers in the gaps are lost, the response is taken to end at its last chunk before the next query
 * (or at the close). */
GG_TEST(test_big_result_gaps)
{
	static const char rows[] = "T\x00\x00\x00\x1a\x00\x01x\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff"
				   "\xff\xff\xff\x00\x00"
				   "D\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x01"
				   "1D\x00\x00";
	struct l7t_step steps[] = {
		REQ(Q_SELECT),
		{L7_FLOW_RESP, rows, sizeof(rows) - 1, 16384},
		{L7_FLOW_RESP, "\x00\x0b\x00\x01\x00", 5, 16384},
		RESP("\x00\x00\x01"
		     "9C\x00\x00\x00\x0dSELECT 3\x00Z\x00\x00\x00\x05I"),
		REQ(Q_BAD),
		RESP(R_BAD),
		REQ(Q_SELECT),
		{L7_FLOW_RESP, rows, sizeof(rows) - 1, 16384},
	};
	static const struct l7t_want want[] = {
		{.api = "SELECT", .resp_bytes = 2 * 16384 + 24, .resp_ts_ns = 4000},
		{.api = "SELEC", .error = 1},
	};
	struct l7t_out o;
	struct l7_session *s = l7_session__new(L7_PROTO_PGSQL, L7_TRANSPORT_TCP);

	l7t_check_script(L7_PROTO_PGSQL, L7T_WHOLE_TCP, steps, NSTEPS(steps) - 2, want, NSTEPS(want), 0, 0, 0, &o);
	assert_int_equal(o.st.resp_end_guessed, 1);

	/* the same cut short by the close */
	memset(&o, 0, sizeof(o));
	for (size_t i = 6; i < NSTEPS(steps); i++)
		l7_session__feed(s, steps[i].flow, steps[i].data, steps[i].len,
				 steps[i].total ? steps[i].total : steps[i].len, i, l7t_cb, &o);
	assert_int_equal(o.n, 0);
	l7_session__close(s, 99, l7t_cb, &o);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.rpc[0].resp_ts_ns, 7);
	l7_session__free(s);
}

/* crafted like pgbench -M prepared: a named statement parsed once, then bound and executed */
#define PREP_NAMED \
	"P\x00\x00\x00@P0_1\x00SELECT abalance FROM pgbench_accounts WHERE aid = $1\x00\x00\x00S\x00\x00\x00\x04"
#define PREP_NAMED_R "1\x00\x00\x00\x04Z\x00\x00\x00\x05I"
#define BIND_NAMED                                                      \
	"B\x00\x00\x00\x15\x00P0_1\x00\x00\x00\x00\x01\x00\x00\x00\x01" \
	"5\x00\x00"                                                     \
	"E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04"
#define BIND_NAMED_R                                \
	"2\x00\x00\x00\x04"                         \
	"D\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x01" \
	"0C\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I"
#define BIND_UNKNOWN                                            \
	"B\x00\x00\x00\x10\x00P9_9\x00\x00\x00\x00\x00\x00\x00" \
	"E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04"

/* A statement prepared once is named by its keyword each time it is executed; one never seen is
 * EXECUTE. */
GG_TEST(test_named_statements)
{
	static const struct l7t_step steps[] = {
		REQ(PREP_NAMED), RESP(PREP_NAMED_R), REQ(BIND_NAMED),	RESP(BIND_NAMED_R),
		REQ(BIND_NAMED), RESP(BIND_NAMED_R), REQ(BIND_UNKNOWN), RESP(BIND_NAMED_R),
	};
	static const struct l7t_want want[] = {
		{.api = "SELECT pgbench_accounts", .req_bytes = sizeof(PREP_NAMED) - 1},
		{.api = "SELECT pgbench_accounts",
		 .req_bytes = sizeof(BIND_NAMED) - 1,
		 .resp_bytes = sizeof(BIND_NAMED_R) - 1},
		{.api = "SELECT pgbench_accounts"},
		{.api = "EXECUTE"},
	};

	l7t_check_script(L7_PROTO_PGSQL, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

GG_TEST(test_garbage)
{
	static const struct l7t_step steps[] = {
		REQ("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"), /* TLS after an SSLRequest we never saw */
		REQ(Q_SELECT),
		RESP("\x17\x03\x03\x00\x20garbage"),
		REQ("Q\x00\x00\x00\x02"), /* length below 4 */
		REQ(Q_SELECT),
		RESP(R_SELECT),
		RESP(R_SELECT), /* nobody asked */
		REQ(SSLREQ),
		RESP("x"),
	};
	static const struct l7t_want want[] = {
		{.req_ts_ns = 5000},
	};

	/* TLS hello, TLS record (loses the first SELECT), bad length, bad SSL answer */
	l7t_check_script(L7_PROTO_PGSQL, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 4, 1, 1, NULL);
}

GG_TEST(test_infer)
{
	const unsigned int all = ~0u;

	l7t_expect_infer(STARTUP, sizeof(STARTUP) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_PGSQL, L7_FLOW_REQ);
	l7t_expect_infer(SSLREQ, 8, L7_TRANSPORT_TCP, 0, all, L7_PROTO_PGSQL, L7_FLOW_REQ);
	l7t_expect_infer(Q_SELECT, sizeof(Q_SELECT) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_PGSQL, L7_FLOW_REQ);
	l7t_expect_infer(STARTUP_R, sizeof(STARTUP_R) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_PGSQL, L7_FLOW_RESP);
	l7t_expect_infer(R_BAD, sizeof(R_BAD) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_PGSQL, L7_FLOW_RESP);
	l7t_expect_infer(R_SELECT, sizeof(R_SELECT) - 3, L7_TRANSPORT_TCP, 0, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("Q\x00\x00\x00\x09x\x00yz\x00", 10, L7_TRANSPORT_TCP, 0, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer(STARTUP, sizeof(STARTUP) - 1, L7_TRANSPORT_TCP, 0, 1u << L7_PROTO_MYSQL, L7_PROTO_UNKNOWN, -1);
}
