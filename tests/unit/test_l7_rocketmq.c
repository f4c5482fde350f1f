/* test_l7_rocketmq.c - l7probe's RocketMQ parser on wire-exact remoting frames (encoded by the test peer
 * tests/integration/scripts/rocketmq_wire.py through tests/unit/data/l7_rocketmq_gen.py; Debian 12 has no
 * RocketMQ): binary and JSON headers (fastjson's and the Go client's), pairing by opaque out of order,
 * oneway requests, the broker's own requests, error codes, a reply mostly in a gap, garbage, bounded
 * memory; split at every byte and fed byte by byte. */
#include "test_l7_util.h"

#include "data/l7_rocketmq_msgs.h"

/* The exchange the gap and garbage scenarios end with */
static const struct l7t_exchange send = L7T_EXCHANGE(B_SEND, B_SEND_R, "SEND_MESSAGE_V2 tb");

GG_TEST(test_binary)
{
	static const struct l7t_step steps[] = {
		REQ(B_HB),	RESP(B_HB_R),	     RESP(B_RUNINFO),	     REQ(B_RUNINFO_R), REQ(B_SEND),
		RESP(B_SEND_R), REQ(B_SEND_MISSING), RESP(B_SEND_MISSING_R), REQ(B_PULL),      RESP(B_PULL_NF_R),
		REQ(B_ONEWAY),	REQ(B_QUERY),	     RESP(B_QUERY_R),
	};
	/* the broker's GET_CONSUMER_RUNNING_INFO and the client's answer are neither request nor response
	 * of the client's; the oneway UPDATE_CONSUMER_OFFSET waits for nothing */
	static const struct l7t_want want[] = {
		{.api = "HEART_BEAT",
		 .req_bytes = sizeof(B_HB) - 1,
		 .resp_bytes = sizeof(B_HB_R) - 1,
		 .req_ts_ns = 1000,
		 .resp_ts_ns = 2000},
		{.api = "SEND_MESSAGE_V2 tb", .req_bytes = sizeof(B_SEND) - 1, .resp_bytes = sizeof(B_SEND_R) - 1},
		{.api = "SEND_MESSAGE_V2 missing", .status = 17, .error = 1}, /* TOPIC_NOT_EXIST */
		{.api = "PULL_MESSAGE tb", .status = 19},		      /* PULL_NOT_FOUND: a long poll's end */
		{.api = "QUERY_MESSAGE tb",
		 .status = 3,
		 .error = 1,
		 .req_bytes = sizeof(B_QUERY) - 1,
		 .resp_bytes = sizeof(B_QUERY_R) - 1,
		 .req_ts_ns = 12000},
	};

	l7t_check_script(L7_PROTO_ROCKETMQ, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* JSON headers: fastjson's (keys sorted: opaque after extFields) and the Go client's; two sends in flight
 * answered in the other order. */
GG_TEST(test_json)
{
	static const struct l7t_step steps[] = {
		REQ(J_SEND_SLOW), REQ(J_SEND), RESP(J_SEND_R), RESP(J_SEND_SLOW_R),  REQ(J_ROUTE),
		RESP(J_ROUTE_R),  REQ(G_SEND), RESP(G_SEND_R), REQ(J_ROUTE_MISSING), RESP(J_ROUTE_MISSING_R),
	};
	static const struct l7t_want want[] = {
		{.api = "SEND_MESSAGE tj", .req_bytes = sizeof(J_SEND) - 1, .resp_bytes = sizeof(J_SEND_R) - 1},
		{.api = "SEND_MESSAGE slow",
		 .req_bytes = sizeof(J_SEND_SLOW) - 1,
		 .resp_bytes = sizeof(J_SEND_SLOW_R) - 1,
		 .req_ts_ns = 1000,
		 .resp_ts_ns = 4000},
		{.api = "GET_ROUTEINFO_BY_TOPIC tj", .resp_bytes = sizeof(J_ROUTE_R) - 1},
		{.api = "SEND_MESSAGE_V2 tg", .req_bytes = sizeof(G_SEND) - 1},
		{.api = "GET_ROUTEINFO_BY_TOPIC missing", .status = 17, .error = 1},
	};

	l7t_check_script(L7_PROTO_ROCKETMQ, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* B_PULL answered by 200 KB of which 600 bytes were captured: its body passed by count, the next pairs. */
GG_TEST(test_big_reply_gap)
{
	static const struct l7t_exchange pull = L7T_EXCHANGE(B_PULL, B_PULL_BIG_R, "PULL_MESSAGE tb");

	l7t_check_big_reply_gap(L7_PROTO_ROCKETMQ, &pull, B_PULL_BIG_R_TOTAL, &send);
}

/* A capture that starts with a response, garbage, the query's answer's header lost in a gap, a
 * response to nothing waiting (a heartbeat's). */
GG_TEST(test_garbage)
{
	static const struct l7t_step query = REQ(B_QUERY), query_r_cut = RESP_GAP("\x00\x00\x00\x30", 52),
				     hb_r = RESP(B_HB_R);

	l7t_check_garbage_resync(L7_PROTO_ROCKETMQ, &send, &query, &query_r_cut, &hb_r);
}

/* A JSON header that is not one (a truncated object, a missing opaque, flag bits RocketMQ has not):
 * unparsable, never a message. */
GG_TEST(test_bad_json)
{
	static const struct l7t_step steps[] = {
		REQ("\x00\x00\x00\x18\x00\x00\x00\x14{\"code\":10,\"flag\":0}"),
		REQ("\x00\x00\x00\x23\x00\x00\x00\x1f{\"code\":10,\"flag\":8,\"opaque\":1}"),
		REQ("\x00\x00\x00\x23\x00\x00\x00\x1f{\"code\":10,\"flag\" 0,\"opaque\":1}"),
		REQ(J_SEND),
		RESP(J_SEND_R),
	};
	static const struct l7t_want want[] = {{.api = "SEND_MESSAGE tj"}};

	l7t_check_script(L7_PROTO_ROCKETMQ, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 3, 0, 0, NULL);
}

GG_TEST(test_bounded)
{
	/* opaque: big-endian at 8 + 5 of a binary frame */
	l7t_check_unanswered_bounded(L7_PROTO_ROCKETMQ, B_SEND, sizeof(B_SEND) - 1, 8 + 5, L7T_BIG_ENDIAN);
}

GG_TEST(test_infer)
{
	static const struct {
		const char *p;
		size_t n;
		enum l7_flow f;
	} yes[] = {
		{B_HB, sizeof(B_HB) - 1, L7_FLOW_REQ},
		{B_SEND, sizeof(B_SEND) - 1, L7_FLOW_REQ},
		{B_ONEWAY, sizeof(B_ONEWAY) - 1, L7_FLOW_REQ},
		{J_SEND, sizeof(J_SEND) - 1, L7_FLOW_REQ},
		{J_ROUTE, sizeof(J_ROUTE) - 1, L7_FLOW_REQ},
		{G_SEND, sizeof(G_SEND) - 1, L7_FLOW_REQ},
		{B_SEND_R, sizeof(B_SEND_R) - 1, L7_FLOW_RESP},
		{B_QUERY_R, sizeof(B_QUERY_R) - 1, L7_FLOW_RESP},
		{J_ROUTE_R, sizeof(J_ROUTE_R) - 1, L7_FLOW_RESP},
		{G_SEND_R, sizeof(G_SEND_R) - 1, L7_FLOW_RESP},
	};
	uint8_t bad[sizeof(B_SEND) - 1];

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		l7t_expect_infer(yes[i].p, yes[i].n, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_ROCKETMQ, yes[i].f);
		/* and only when enabled */
		l7t_expect_infer(yes[i].p, yes[i].n, L7_TRANSPORT_TCP, 0, ~0u & ~(1u << L7_PROTO_ROCKETMQ),
				 L7_PROTO_UNKNOWN, -1);
	}
	/* too short to tell; an unknown request code; lengths that do not add up */
	l7t_expect_infer(B_SEND, 20, L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_UNKNOWN, -1);
	memcpy(bad, B_SEND, sizeof(bad));
	bad[8] = 0x7f;
	l7t_expect_infer(bad, sizeof(bad), L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_UNKNOWN, -1);
	memcpy(bad, B_SEND, sizeof(bad));
	bad[8 + 16] ^= 1; /* remark length */
	l7t_expect_infer(bad, sizeof(bad), L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_UNKNOWN, -1);
	memcpy(bad, B_SEND, sizeof(bad));
	bad[4] = 2; /* serialize type */
	l7t_expect_infer(bad, sizeof(bad), L7_TRANSPORT_TCP, 0, ~0u, L7_PROTO_UNKNOWN, -1);
	assert_int_equal(l7_proto__by_name("rocketmq"), L7_PROTO_ROCKETMQ);
	assert_string_equal(l7_proto__name(L7_PROTO_ROCKETMQ), "rocketmq");
}
