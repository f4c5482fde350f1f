/* test_l7_mongo.c - l7probe's MongoDB parser on wire-exact messages (requests encoded by pymongo 3.11,
 * replies built from the wire protocol spec: tests/unit/data/l7_mongo_gen.py; Debian 12 has no MongoDB
 * server): OP_QUERY/OP_REPLY handshake, OP_MSG find/insert (kind 1 section)/errors (ok 0.0, ok int 0),
 * moreToCome, OP_COMPRESSED; split at every byte, a reply mostly in a gap, garbage, bounded memory. */
#include "test_l7_util.h"

#include "data/l7_mongo_msgs.h"

/* The exchange the gap and garbage scenarios end with */
static const struct l7t_exchange find = L7T_EXCHANGE(FIND, FIND_R, "find coll");

GG_TEST(test_session)
{
	static const struct l7t_step steps[] = {
		REQ(HELLO_Q), RESP(HELLO_R), REQ(FIND),	  RESP(FIND_R),	  REQ(INSERT), RESP(INSERT_R), REQ(INSERT_W0),
		REQ(DROP),    RESP(DROP_R),  REQ(LISTDB), RESP(LISTDB_R), REQ(PING_Z), RESP(PING_Z_R),
	};
	static const struct l7t_want want[] = {
		{.api = "isMaster", .req_bytes = sizeof(HELLO_Q) - 1, .resp_bytes = sizeof(HELLO_R) - 1},
		{.api = "find coll", .req_bytes = sizeof(FIND) - 1, .resp_bytes = sizeof(FIND_R) - 1},
		{.api = "insert coll", .req_bytes = sizeof(INSERT) - 1, .resp_bytes = sizeof(INSERT_R) - 1},
		/* the w:0 insert (moreToCome) expects no reply: the drop's is not its */
		{.api = "drop nosuch",
		 .status = 26,
		 .error = 1,
		 .req_bytes = sizeof(DROP) - 1,
		 .resp_bytes = sizeof(DROP_R) - 1,
		 .req_ts_ns = 8000},
		{.api = "listDatabases", .status = 13, .error = 1}, /* ok: 0 as an int32, after errmsg and code */
		{.api = "OP_COMPRESSED", .req_bytes = sizeof(PING_Z) - 1, .resp_bytes = sizeof(PING_Z_R) - 1},
	};

	l7t_check_script(L7_PROTO_MONGO, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* Replies come back out of order (several connections' worth of requests in flight on one is not
 * what drivers do, but responseTo says which is which). */
GG_TEST(test_by_response_to)
{
	static const struct l7t_step steps[] = {
		REQ(FIND), REQ(DROP), REQ(INSERT), RESP(DROP_R), RESP(INSERT_R), RESP(FIND_R),
	};
	static const struct l7t_want want[] = {
		{.api = "drop nosuch", .status = 26, .error = 1},
		{.api = "insert coll"},
		{.api = "find coll"},
	};

	l7t_check_script(L7_PROTO_MONGO, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A 200 KB reply of which 600 bytes were captured: skipped by count, the next request pairs. */
GG_TEST(test_big_reply_gap)
{
	static const struct l7t_exchange big = L7T_EXCHANGE(FIND_BIG, FIND_BIG_R, "find big");

	l7t_check_big_reply_gap(L7_PROTO_MONGO, &big, FIND_BIG_R_TOTAL, &find);
}

/* A capture that starts with a reply, garbage, the drop's reply's header lost in a gap, a reply to
 * nothing waiting (an insert's): the drop still waits (it stays, evicted when the queue is full). */
GG_TEST(test_garbage)
{
	static const struct l7t_step drop = REQ(DROP), drop_r_cut = RESP_GAP("\x69\x00\x00\x00", 105),
				     insert_r = RESP(INSERT_R);

	l7t_check_garbage_resync(L7_PROTO_MONGO, &find, &drop, &drop_r_cut, &insert_r);
}

GG_TEST(test_bounded)
{
	/* requestID: little-endian at 4 */
	l7t_check_unanswered_bounded(L7_PROTO_MONGO, FIND, sizeof(FIND) - 1, 4, L7T_LITTLE_ENDIAN);
}

GG_TEST(test_infer)
{

	l7t_expect_infer(HELLO_Q, sizeof(HELLO_Q) - 1, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_MONGO, L7_FLOW_REQ);
	l7t_expect_infer(FIND, sizeof(FIND) - 1, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_MONGO, L7_FLOW_REQ);
	l7t_expect_infer(FIND_R, sizeof(FIND_R) - 1, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_MONGO, L7_FLOW_RESP);
	l7t_expect_infer(FIND, 31, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_UNKNOWN, -1);
	assert_int_equal(l7_proto__by_name("mongo"), L7_PROTO_MONGO);
	assert_string_equal(l7_proto__name(L7_PROTO_MONGO), "mongo");
}
