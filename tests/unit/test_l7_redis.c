/* test_l7_redis.c - l7probe's Redis parser on bytes recorded from redis-cli and redis-server 7.0 (strace)
 * and crafted RESP3: commands, errors, nulls, maps, inline pipelines, pub/sub, pushes, gaps, garbage. */
#include "test_l7_util.h"

/* redis-cli 7.0 <-> redis-server 7.0, recorded with strace -xx */
#define SET_K_V "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
#define GET_K	"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
#define LPUSH	"*3\r\n$5\r\nLPUSH\r\n$1\r\nk\r\n$1\r\nx\r\n"
#define WRONG	"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
#define GET_NO	"*2\r\n$3\r\nGET\r\n$5\r\nnokey\r\n"
#define HELLO3	"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
#define HELLO3_R                                                                                                   \
	"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:" \
	"7\r\n"                                                                                                    \
	"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
#define HGETALL	  "*2\r\n$7\r\nhgetall\r\n$1\r\nh\r\n"
#define HGETALL_R "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
/* redis-cli --pipe: inline commands, then its ECHO marker */
#define PIPE_REQ1 "PING\r\nSET a 1\r\nINCR a\r\nINCR k\r\n"
#define PIPE_REQ2                                                 \
	"\r\n*2\r\n$4\r\nECHO\r\n$20\r\nWhFHlP\xce)\xd0\xfbz\xba" \
	"5\x94"                                                   \
	"C\xacG\xa0q\xf9\r\n"
#define PIPE_RESP                                                                                               \
	"+PONG\r\n+OK\r\n:2\r\n-ERR value is not an integer or out of range\r\n$20\r\nWhFHlP\xce)\xd0\xfbz\xba" \
	"5\x94"                                                                                                 \
	"C\xacG\xa0q\xf9\r\n"

GG_TEST(test_redis_cli)
{
	static const struct l7t_step steps[] = {
		REQ(SET_K_V), RESP("+OK\r\n"), REQ(GET_K),  RESP("$1\r\nv\r\n"), REQ(LPUSH),   RESP(WRONG),
		REQ(GET_NO),  RESP("$-1\r\n"), REQ(HELLO3), RESP(HELLO3_R),	 REQ(HGETALL), RESP(HGETALL_R),
	};
	static const struct l7t_want want[] = {
		{.api = "SET", .req_bytes = sizeof(SET_K_V) - 1, .resp_bytes = 5},
		{.api = "GET", .req_bytes = sizeof(GET_K) - 1, .resp_bytes = 7},
		{.api = "LPUSH", .error = 1, .resp_bytes = sizeof(WRONG) - 1, .req_ts_ns = 5000, .resp_ts_ns = 6000},
		{.api = "GET", .resp_bytes = 5},
		{.api = "HELLO", .resp_bytes = sizeof(HELLO3_R) - 1},
		{.api = "HGETALL", .resp_bytes = sizeof(HGETALL_R) - 1},
	};

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

GG_TEST(test_pipeline)
{
	static const struct l7t_step steps[] = {REQ(PIPE_REQ1), REQ(PIPE_REQ2), RESP(PIPE_RESP)};
	static const struct l7t_want want[] = {
		{.api = "PING", .req_bytes = 6, .resp_bytes = 7},
		{.api = "SET", .req_bytes = 9, .resp_bytes = 5},
		{.api = "INCR", .resp_bytes = 4},
		{.api = "INCR", .error = 1},
		{.api = "ECHO", .req_ts_ns = 2000},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, &o);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(o.rpc[i].resp_ts_ns, 3000);
}

/* RESP3 types nested, with an attribute, a blob error, a null, and pushes that are not replies. */
GG_TEST(test_resp3)
{
	static const struct l7t_step steps[] = {
		REQ("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nget\r\n$1\r\nx\r\n*1\r\n$4\r\nEXEC\r\n*1\r\n$6\r\nSCRIPT\r\n"),
		RESP(">3\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nx\r\n_\r\n"
		     "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n+PONG\r\n"
		     "_\r\n"
		     "*4\r\n#t\r\n(3492890328409238509324850943850943825024385\r\n=15\r\ntxt:Some string\r\n"
		     "~2\r\n:1\r\n-ERR inside\r\n"
		     "!21\r\nSYNTAX invalid syntax\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "PING", .resp_bytes = 46}, /* the attribute belongs to the reply, the push does not */
		{.api = "GET", .resp_bytes = 3},
		{.api = "EXEC"}, /* an error inside an array is not the command's */
		{.api = "SCRIPT", .error = 1, .resp_bytes = 28},
	};

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* SUBSCRIBE to two channels gets two confirmations (the second answers it); messages in between
 * and after are pushes, in RESP2 arrays and in RESP3 pushes. */
GG_TEST(test_pubsub)
{
	static const struct l7t_step steps[] = {
		REQ("*3\r\n$9\r\nSUBSCRIBE\r\n$2\r\nc1\r\n$2\r\nc2\r\n"),
		RESP("*3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n"),
		RESP("*3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$2\r\nhi\r\n"),
		RESP("*3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:2\r\n"),
		RESP("*3\r\n$7\r\nmessage\r\n$2\r\nc2\r\n$3\r\nbye\r\n"),
		REQ("*1\r\n$4\r\nPING\r\n"),
		RESP(">3\r\n$7\r\nmessage\r\n$2\r\nc2\r\n$3\r\nbye\r\n"),
		RESP("*2\r\n$4\r\npong\r\n$0\r\n\r\n"),
		REQ("*2\r\n$11\r\nUNSUBSCRIBE\r\n$2\r\nc1\r\n"),
		RESP(">3\r\n$11\r\nunsubscribe\r\n$2\r\nc1\r\n:1\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "SUBSCRIBE", .resp_ts_ns = 4000},
		{.api = "PING", .resp_ts_ns = 8000},
		{.api = "UNSUBSCRIBE"},
	};

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A 1 MB value mostly not captured, in a SET and in a GET reply: skipped by count. */
GG_TEST(test_big_values_gap)
{
	static const char set[] = "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1000000\r\nxxxx";
	static const char reply[] = "$1000000\r\nyyyy";
	struct l7t_step steps[] = {
		{L7_FLOW_REQ, set, sizeof(set) - 1, sizeof(set) - 1 - 4 + 1000002},
		RESP("+OK\r\n"),
		REQ("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n"),
		{L7_FLOW_RESP, reply, sizeof(reply) - 1, sizeof(reply) - 1 - 4 + 1000002},
		REQ("*2\r\n$3\r\nDEL\r\n$3\r\nbig\r\n"),
		RESP(":1\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "SET", .req_bytes = sizeof(set) - 1 - 4 + 1000002, .resp_bytes = 5},
		{.api = "GET", .resp_bytes = sizeof(reply) - 1 - 4 + 1000002},
		{.api = "DEL", .resp_bytes = 4},
	};

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A command whose name is cut by the capture limit: what was captured names it. */
GG_TEST(test_name_cut_by_gap)
{
	static const char cmd[] = "*1\r\n$16\r\nCLIENT";
	struct l7t_step steps[] = {
		{L7_FLOW_REQ, cmd, sizeof(cmd) - 1, sizeof(cmd) - 1 + 10 + 2},
		RESP("+OK\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "CLIENT", .req_bytes = sizeof(cmd) - 1 + 12, .resp_bytes = 5},
	};

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* redis-benchmark -P 16 LRANGE: a batch of replies longer than the capture. Those read whole pair as
 * usual; the rest of the batch is taken to end at the last reply chunk before the next batch. */
GG_TEST(test_pipeline_cut_by_gap)
{
	static const char replies[] = "*2\r\n$3\r\nabc\r\n$3\r\ndef\r\n*2\r\n$3\r\nab";
	struct l7t_step steps[] = {
		REQ("*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n"),
		{L7_FLOW_RESP, replies, sizeof(replies) - 1, sizeof(replies) - 1 + 500},
		RESP("more replies"),
		REQ("*1\r\n$4\r\nPING\r\n"),
		RESP("+PONG\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET", .resp_bytes = 22, .resp_ts_ns = 2000},
		{.api = "GET", .resp_bytes = sizeof(replies) - 1 - 22 + 500 + 12, .resp_ts_ns = 3000},
		{.api = "GET", .resp_ts_ns = 3000},
		{.api = "PING", .resp_bytes = 7},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_REDIS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, &o);
	assert_int_equal(o.st.resp_end_guessed, 2);
}

GG_TEST(test_garbage_and_depth)
{
	static char deep[256];
	struct l7t_step steps[] = {
		REQ("\x16\x03\x01\x00\x05hello"),
		REQ("*1\r\n$4\r\nPING\r\n"),
		RESP("?what\r\n"),
		REQ("*1\r\n$4\r\nPING\r\n"),
		RESP("+PONG\r\n"),
		REQ("*2\r\n$x\r\n"),
		REQ("*1\r\n$4\r\nPING\r\n"),
		{L7_FLOW_RESP, deep, 0, 0},
		REQ("*1\r\n$4\r\nPING\r\n"),
		RESP("+PONG\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "PING", .req_ts_ns = 4000},
		{.req_ts_ns = 9000},
	};
	size_t k = 0;

	for (int i = 0; i < 20; i++)
		k += (size_t)snprintf(deep + k, sizeof(deep) - k, "*1\r\n");
	steps[7].len = k;
	/* TLS bytes, '?', bad length, nesting beyond the limit; the PINGs answered by '?' and by the
	 * deep array are lost */
	l7t_check_script(L7_PROTO_REDIS, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 4, 0, 2, NULL);
}

GG_TEST(test_infer)
{
	const unsigned int all = ~0u;

	l7t_expect_infer(SET_K_V, sizeof(SET_K_V) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_REDIS, L7_FLOW_REQ);
	l7t_expect_infer("+OK\r\n", 5, L7_TRANSPORT_TCP, 0, all, L7_PROTO_REDIS, L7_FLOW_RESP);
	l7t_expect_infer(WRONG, sizeof(WRONG) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_REDIS, L7_FLOW_RESP);
	l7t_expect_infer("$-1\r\n", 5, L7_TRANSPORT_TCP, 0, all, L7_PROTO_REDIS, L7_FLOW_RESP);
	l7t_expect_infer("+ok", 3, L7_TRANSPORT_TCP, 0, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("*2\r\n:1\r\n", 8, L7_TRANSPORT_TCP, 0, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("PING\r\n", 6, L7_TRANSPORT_TCP, 6379, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer(SET_K_V, sizeof(SET_K_V) - 1, L7_TRANSPORT_TCP, 0, 1u << L7_PROTO_HTTP, L7_PROTO_UNKNOWN, -1);
}
