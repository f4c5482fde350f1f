/* test_l7_mongo.c - l7probe's MongoDB parser on wire-exact messages (requests encoded by pymongo 3.11,
 * replies built from the wire protocol spec: tests/unit/data/l7_mongo_gen.py; Debian 12 has no MongoDB
 * server): OP_QUERY/OP_REPLY handshake, OP_MSG find/insert (kind 1 section)/errors (ok 0.0, ok int 0),
 * moreToCome, OP_COMPRESSED; split at every byte, a reply mostly in a gap, garbage, bounded memory. */
#include "test_l7_util.h"

#include "data/l7_mongo_msgs.h"

static void test_session(void **state)
{
	static const struct l7t_step steps[] = {
		REQ(HELLO_Q), RESP(HELLO_R), REQ(FIND),	  RESP(FIND_R),	  REQ(INSERT), RESP(INSERT_R), REQ(INSERT_W0),
		REQ(DROP),    RESP(DROP_R),  REQ(LISTDB), RESP(LISTDB_R), REQ(PING_Z), RESP(PING_Z_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run_all_splits(L7_PROTO_MONGO, steps, NSTEPS(steps), &o);
	l7t_expect_stats(&o, 6, 0, 0, 0);
	l7t_expect(&o, 0, "isMaster", 0, 0, sizeof(HELLO_Q) - 1, sizeof(HELLO_R) - 1);
	l7t_expect(&o, 1, "find coll", 0, 0, sizeof(FIND) - 1, sizeof(FIND_R) - 1);
	l7t_expect(&o, 2, "insert coll", 0, 0, sizeof(INSERT) - 1, sizeof(INSERT_R) - 1);
	/* the w:0 insert (moreToCome) expects no reply: the drop's is not its */
	l7t_expect(&o, 3, "drop nosuch", 26, 1, sizeof(DROP) - 1, sizeof(DROP_R) - 1);
	assert_int_equal(o.rpc[3].req_ts_ns, 8000);
	l7t_expect(&o, 4, "listDatabases", 13, 1, 0, 0); /* ok: 0 as an int32, after errmsg and code */
	l7t_expect(&o, 5, "OP_COMPRESSED", 0, 0, sizeof(PING_Z) - 1, sizeof(PING_Z_R) - 1);
}

/* Replies come back out of order (several connections' worth of requests in flight on one is not
 * what drivers do, but responseTo says which is which). */
static void test_by_response_to(void **state)
{
	static const struct l7t_step steps[] = {
		REQ(FIND), REQ(DROP), REQ(INSERT), RESP(DROP_R), RESP(INSERT_R), RESP(FIND_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run_all_splits(L7_PROTO_MONGO, steps, NSTEPS(steps), &o);
	l7t_expect_stats(&o, 3, 0, 0, 0);
	l7t_expect(&o, 0, "drop nosuch", 26, 1, 0, 0);
	l7t_expect(&o, 1, "insert coll", 0, 0, 0, 0);
	l7t_expect(&o, 2, "find coll", 0, 0, 0, 0);
}

/* A 200 KB reply of which 600 bytes were captured: skipped by count, the next request pairs. */
static void test_big_reply_gap(void **state)
{
	static const char big[] = FIND_BIG_R;
	static const struct l7t_step steps[] = {
		REQ(FIND_BIG),
		{L7_FLOW_RESP, big, sizeof(big) - 1, FIND_BIG_R_TOTAL},
		REQ(FIND),
		RESP(FIND_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run_all_splits(L7_PROTO_MONGO, steps, NSTEPS(steps), &o);
	l7t_expect_stats(&o, 2, 0, 0, 0);
	l7t_expect(&o, 0, "find big", 0, 0, sizeof(FIND_BIG) - 1, FIND_BIG_R_TOTAL);
	l7t_expect(&o, 1, "find coll", 0, 0, 0, 0);
}

/* A capture that starts with a reply, garbage, a header lost in a gap, a reply to nothing waiting. */
static void test_garbage(void **state)
{
	static const struct l7t_step steps[] = {
		RESP(FIND_R), /* its request was before the capture */
		REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8a\x1b\x00\x00\x00\x00\x00"), /* TLS */
		REQ(DROP),
		RESP_GAP("\x69\x00\x00\x00", 105), /* the reply's header in a gap: lost */
		REQ(FIND),
		RESP(INSERT_R), /* answers nothing waiting */
		RESP(FIND_R),
		RESP(FIND_R), /* again: the drop still waits, so it is no reply to anything waiting */
	};
	struct l7t_out o;

	(void)state;
	l7t_run(L7_PROTO_MONGO, L7_TRANSPORT_TCP, steps, NSTEPS(steps), SIZE_MAX, 0, 0, &o);
	l7t_dump(&o);
	/* unmatched: the first reply (nothing waited); unparsable: TLS, the cut reply, the two replies to
	 * nothing waiting while the drop waits (it stays, evicted when the queue is full) */
	l7t_expect_stats(&o, 1, 4, 1, 0);
	l7t_expect(&o, 0, "find coll", 0, 0, 0, 0);
}

static void test_bounded(void **state)
{
	(void)state;
	/* requestID: little-endian at 4 */
	l7t_check_unanswered_bounded(L7_PROTO_MONGO, FIND, sizeof(FIND) - 1, 4, L7T_LITTLE_ENDIAN);
}

static void test_infer(void **state)
{

	(void)state;
	l7t_expect_infer(HELLO_Q, sizeof(HELLO_Q) - 1, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_MONGO, L7_FLOW_REQ);
	l7t_expect_infer(FIND, sizeof(FIND) - 1, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_MONGO, L7_FLOW_REQ);
	l7t_expect_infer(FIND_R, sizeof(FIND_R) - 1, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_MONGO, L7_FLOW_RESP);
	l7t_expect_infer(FIND, 31, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_UNKNOWN, -1);
	assert_int_equal(l7_proto__by_name("mongo"), L7_PROTO_MONGO);
	assert_string_equal(l7_proto__name(L7_PROTO_MONGO), "mongo");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session),	      cmocka_unit_test(test_by_response_to),
		cmocka_unit_test(test_big_reply_gap), cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_bounded),	      cmocka_unit_test(test_infer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
