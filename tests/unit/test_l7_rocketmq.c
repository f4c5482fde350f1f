/* test_l7_rocketmq.c - l7probe's RocketMQ parser on wire-exact remoting frames (encoded by the test peer
 * tests/integration/scripts/rocketmq_wire.py through tests/unit/data/l7_rocketmq_gen.py; Debian 12 has no
 * RocketMQ): binary and JSON headers (fastjson's and the Go client's), pairing by opaque out of order,
 * oneway requests, the broker's own requests, error codes, a reply mostly in a gap, garbage, bounded
 * memory; split at every byte and fed byte by byte. */
#include "test_l7_util.h"

#include "data/l7_rocketmq_msgs.h"

static void test_binary(void **state)
{
	static const struct l7t_step steps[] = {
		REQ(B_HB),	RESP(B_HB_R),	     RESP(B_RUNINFO),	     REQ(B_RUNINFO_R), REQ(B_SEND),
		RESP(B_SEND_R), REQ(B_SEND_MISSING), RESP(B_SEND_MISSING_R), REQ(B_PULL),      RESP(B_PULL_NF_R),
		REQ(B_ONEWAY),	REQ(B_QUERY),	     RESP(B_QUERY_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run_all_splits(L7_PROTO_ROCKETMQ, steps, NSTEPS(steps), &o);
	/* the broker's GET_CONSUMER_RUNNING_INFO and the client's answer are neither request nor response
	 * of the client's; the oneway UPDATE_CONSUMER_OFFSET waits for nothing */
	l7t_expect_stats(&o, 5, 0, 0, 0);
	l7t_expect(&o, 0, "HEART_BEAT", 0, 0, sizeof(B_HB) - 1, sizeof(B_HB_R) - 1);
	assert_int_equal(o.rpc[0].req_ts_ns, 1000);
	assert_int_equal(o.rpc[0].resp_ts_ns, 2000);
	l7t_expect(&o, 1, "SEND_MESSAGE_V2 tb", 0, 0, sizeof(B_SEND) - 1, sizeof(B_SEND_R) - 1);
	l7t_expect(&o, 2, "SEND_MESSAGE_V2 missing", 17, 1, 0, 0); /* TOPIC_NOT_EXIST */
	l7t_expect(&o, 3, "PULL_MESSAGE tb", 19, 0, 0, 0);	   /* PULL_NOT_FOUND: a long poll's end */
	l7t_expect(&o, 4, "QUERY_MESSAGE tb", 3, 1, sizeof(B_QUERY) - 1, sizeof(B_QUERY_R) - 1);
	assert_int_equal(o.rpc[4].req_ts_ns, 12000);
}

/* JSON headers: fastjson's (keys sorted: opaque after extFields) and the Go client's; two sends in flight
 * answered in the other order. */
static void test_json(void **state)
{
	static const struct l7t_step steps[] = {
		REQ(J_SEND_SLOW), REQ(J_SEND), RESP(J_SEND_R), RESP(J_SEND_SLOW_R),  REQ(J_ROUTE),
		RESP(J_ROUTE_R),  REQ(G_SEND), RESP(G_SEND_R), REQ(J_ROUTE_MISSING), RESP(J_ROUTE_MISSING_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run_all_splits(L7_PROTO_ROCKETMQ, steps, NSTEPS(steps), &o);
	l7t_expect_stats(&o, 5, 0, 0, 0);
	l7t_expect(&o, 0, "SEND_MESSAGE tj", 0, 0, sizeof(J_SEND) - 1, sizeof(J_SEND_R) - 1);
	l7t_expect(&o, 1, "SEND_MESSAGE slow", 0, 0, sizeof(J_SEND_SLOW) - 1, sizeof(J_SEND_SLOW_R) - 1);
	assert_int_equal(o.rpc[1].req_ts_ns, 1000);
	assert_int_equal(o.rpc[1].resp_ts_ns, 4000);
	l7t_expect(&o, 2, "GET_ROUTEINFO_BY_TOPIC tj", 0, 0, 0, sizeof(J_ROUTE_R) - 1);
	l7t_expect(&o, 3, "SEND_MESSAGE_V2 tg", 0, 0, sizeof(G_SEND) - 1, 0);
	l7t_expect(&o, 4, "GET_ROUTEINFO_BY_TOPIC missing", 17, 1, 0, 0);
}

/* B_PULL answered by 200 KB of which 600 bytes were captured: its body passed by count, the next pairs. */
static void test_big_reply_gap(void **state)
{
	static const char big[] = B_PULL_BIG_R;
	static const struct l7t_step steps[] = {
		REQ(B_PULL),
		{L7_FLOW_RESP, big, sizeof(big) - 1, B_PULL_BIG_R_TOTAL},
		REQ(B_SEND),
		RESP(B_SEND_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run_all_splits(L7_PROTO_ROCKETMQ, steps, NSTEPS(steps), &o);
	l7t_expect_stats(&o, 2, 0, 0, 0);
	l7t_expect(&o, 0, "PULL_MESSAGE tb", 0, 0, sizeof(B_PULL) - 1, B_PULL_BIG_R_TOTAL);
	l7t_expect(&o, 1, "SEND_MESSAGE_V2 tb", 0, 0, 0, 0);
}

/* A capture that starts with a response, garbage, a header lost in a gap, a response to nothing
 * waiting. */
static void test_garbage(void **state)
{
	static const struct l7t_step steps[] = {
		RESP(B_SEND_R), /* its request was before the capture */
		REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8a\x1b\x00\x00\x00\x00\x00"), /* TLS */
		REQ(B_QUERY),
		RESP_GAP("\x00\x00\x00\x30", 52), /* the answer's header in a gap: lost */
		REQ(B_SEND),
		RESP(B_HB_R), /* answers nothing waiting */
		RESP(B_SEND_R),
		RESP(B_SEND_R), /* again: the query still waits, so it answers nothing waiting */
	};
	struct l7t_out o;

	(void)state;
	l7t_run(L7_PROTO_ROCKETMQ, L7_TRANSPORT_TCP, steps, NSTEPS(steps), SIZE_MAX, 0, 0, &o);
	l7t_dump(&o);
	/* unmatched: the first response; unparsable: TLS, the cut header, two responses to nothing waiting */
	l7t_expect_stats(&o, 1, 4, 1, 0);
	l7t_expect(&o, 0, "SEND_MESSAGE_V2 tb", 0, 0, 0, 0);
}

/* A JSON header that is not one (a truncated object, a missing opaque, flag bits RocketMQ has not):
 * unparsable, never a message. */
static void test_bad_json(void **state)
{
	static const struct l7t_step steps[] = {
		REQ("\x00\x00\x00\x18\x00\x00\x00\x14{\"code\":10,\"flag\":0}"),
		REQ("\x00\x00\x00\x23\x00\x00\x00\x1f{\"code\":10,\"flag\":8,\"opaque\":1}"),
		REQ("\x00\x00\x00\x23\x00\x00\x00\x1f{\"code\":10,\"flag\" 0,\"opaque\":1}"),
		REQ(J_SEND),
		RESP(J_SEND_R),
	};
	struct l7t_out o;

	(void)state;
	l7t_run(L7_PROTO_ROCKETMQ, L7_TRANSPORT_TCP, steps, NSTEPS(steps), SIZE_MAX, 0, 0, &o);
	l7t_expect_stats(&o, 1, 3, 0, 0);
	l7t_expect(&o, 0, "SEND_MESSAGE tj", 0, 0, 0, 0);
}

static void test_bounded(void **state)
{
	(void)state;
	/* opaque: big-endian at 8 + 5 of a binary frame */
	l7t_check_unanswered_bounded(L7_PROTO_ROCKETMQ, B_SEND, sizeof(B_SEND) - 1, 8 + 5, L7T_BIG_ENDIAN);
}

static void test_infer(void **state)
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

	(void)state;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary),	cmocka_unit_test(test_json),	 cmocka_unit_test(test_big_reply_gap),
		cmocka_unit_test(test_garbage), cmocka_unit_test(test_bad_json), cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_infer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
