/* test_l7_dns.c - l7probe's DNS parser on bytes recorded from dig 9.18 and dnsmasq 2.89 (strace) over
 * UDP and TCP, and crafted ones: matching by id out of order, rcodes, truncation, retries, loss. */
#include "test_l7_util.h"

/* dig @127.0.0.1 www.example.test A (EDNS with a cookie) and dnsmasq's answer 192.0.2.7 */
#define DIG_Q_A                                                                                                        \
	"\xe2\x17\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01\x03\x77\x77\x77\x07\x65\x78\x61\x6d\x70\x6c\x65\x04\x74\x65" \
	"\x73\x74\x00\x00\x01\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c\x00\x0a\x00\x08\x38\xfa\xd1\x37\xb1" \
	"\xe1\x65\x99"
#define DNSMASQ_R_A                                                                                                    \
	"\xe2\x17\x85\x80\x00\x01\x00\x01\x00\x00\x00\x01\x03\x77\x77\x77\x07\x65\x78\x61\x6d\x70\x6c\x65\x04\x74\x65" \
	"\x73\x74\x00\x00\x01\x00\x01\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04\xc0\x00\x02\x07\x00\x00\x29\x04" \
	"\xd0\x00\x00\x00\x00\x00\x00"
/* dnsmasq refusing nothere.invalid (no upstream): rcode 5; the query is the same with QR clear */
#define DNSMASQ_REFUSED                                                                                                \
	"\x7d\x99\x81\x85\x00\x01\x00\x00\x00\x00\x00\x01\x07\x6e\x6f\x74\x68\x65\x72\x65\x07\x69\x6e\x76\x61\x6c\x69" \
	"\x64\x00\x00\x01\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x06\x00\x0f\x00\x02\x00\x0e"
#define Q_REFUSED                                                                                                      \
	"\x7d\x99\x01\x20\x00\x01\x00\x00\x00\x00\x00\x00\x07\x6e\x6f\x74\x68\x65\x72\x65\x07\x69\x6e\x76\x61\x6c\x69" \
	"\x64\x00\x00\x01\x00\x01"
/* dig +tcp v6.example.test AAAA: length prefix and query (one writev), the answer (one read) */
#define DIG_TCP_Q                                                                                                      \
	"\x00\x38\x7f\xd5\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01\x02\x76\x36\x07\x65\x78\x61\x6d\x70\x6c\x65\x04\x74" \
	"\x65\x73\x74\x00\x00\x1c\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c\x00\x0a\x00\x08\x99\x9b\x2f\x19" \
	"\x34\x5a\x4b\xb5"
#define DNSMASQ_TCP_R                                                                                                  \
	"\x00\x48\x7f\xd5\x85\x80\x00\x01\x00\x01\x00\x00\x00\x01\x02\x76\x36\x07\x65\x78\x61\x6d\x70\x6c\x65\x04\x74" \
	"\x65\x73\x74\x00\x00\x1c\x00\x01\xc0\x0c\x00\x1c\x00\x01\x00\x00\x00\x00\x00\x10\x20\x01\x0d\xb8\x00\x00\x00" \
	"\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"
/* crafted: id 0x0001 MX example.org, id 0x0002 TXT example.org, NXDOMAIN for the second */
#define Q1_MX                                                  \
	"\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07" \
	"example\x03org\x00\x00\x0f\x00\x01"
#define Q2_TXT                                                 \
	"\x00\x02\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07" \
	"example\x03org\x00\x00\x10\x00\x01"
#define R1_MX                                                  \
	"\x00\x01\x81\x80\x00\x01\x00\x00\x00\x00\x00\x00\x07" \
	"example\x03org\x00\x00\x0f\x00\x01"
#define R2_NXDOM                                               \
	"\x00\x02\x81\x83\x00\x01\x00\x00\x00\x00\x00\x00\x07" \
	"example\x03org\x00\x00\x10\x00\x01"

GG_TEST(test_udp)
{
	static const struct l7t_step steps[] = {
		REQ(DIG_Q_A),
		RESP(DNSMASQ_R_A),
		REQ(Q_REFUSED),
		RESP(DNSMASQ_REFUSED),
		/* two queries in flight, answered in the other order */
		REQ(Q1_MX),
		REQ(Q2_TXT),
		RESP(R2_NXDOM),
		RESP(R1_MX),
	};
	static const struct l7t_want want[] = {
		{.api = "A www.example.test", .req_bytes = sizeof(DIG_Q_A) - 1, .resp_bytes = sizeof(DNSMASQ_R_A) - 1},
		{.api = "A nothere.invalid", .status = 5, .error = 1},
		{.api = "TXT example.org", .status = 3, .error = 1, .req_ts_ns = 6000, .resp_ts_ns = 7000},
		{.api = "MX example.org", .req_ts_ns = 5000, .resp_ts_ns = 8000},
	};

	l7t_check_script(L7_PROTO_DNS, L7T_WHOLE_UDP, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

GG_TEST(test_tcp)
{
	static const struct l7t_step steps[] = {
		REQ(DIG_TCP_Q),
		RESP(DNSMASQ_TCP_R),
		/* two pipelined queries on one connection, answers out of order in one segment */
		REQ("\x00\x1d" Q1_MX "\x00\x1d" Q2_TXT),
		RESP("\x00\x1d" R2_NXDOM "\x00\x1d" R1_MX),
	};
	static const struct l7t_want want[] = {
		{.api = "AAAA v6.example.test",
		 .req_bytes = sizeof(DIG_TCP_Q) - 1,
		 .resp_bytes = sizeof(DNSMASQ_TCP_R) - 1},
		{.api = "TXT example.org", .status = 3, .error = 1, .req_bytes = 31, .resp_bytes = 31},
		{.api = "MX example.org", .req_bytes = 31, .resp_bytes = 31},
	};

	l7t_check_script(L7_PROTO_DNS, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A truncated capture still has the header and question; garbage is counted; a retried id replaces
 * the unanswered one; queries never answered are evicted oldest first, memory bounded. */
GG_TEST(test_truncated_garbage_loss)
{
	struct l7_session *s = l7_session__new(L7_PROTO_DNS, L7_TRANSPORT_UDP);
	struct l7t_out o;
	uint8_t q[sizeof(Q1_MX) - 1];

	memset(&o, 0, sizeof(o));
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)DIG_Q_A, 40, 57, 1, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)DNSMASQ_R_A, 40, 61, 2, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)"\x01\x02\x03", 3, 3, 3, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)DIG_Q_A, 20, 57, 4, l7t_cb, &o); /* question cut */
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)Q1_MX, sizeof(Q1_MX) - 1, sizeof(Q1_MX) - 1, 5, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)Q1_MX, sizeof(Q1_MX) - 1, sizeof(Q1_MX) - 1, 6, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)R1_MX, sizeof(R1_MX) - 1, sizeof(R1_MX) - 1, 7, l7t_cb, &o);
	l7_session__stats(s, &o.st);
	l7t_expect_stats(&o, 2, 2, 0, 1);
	l7t_expect(&o, 0, "A www.example.test", 0, 0, 57, 61);
	assert_int_equal(o.st.gap_bytes, 17 + 21 + 37);
	assert_int_equal(o.rpc[1].req_ts_ns, 6);
	memcpy(q, Q1_MX, sizeof(q));
	for (int i = 0; i < 1000; i++) {
		q[0] = (uint8_t)(i >> 8);
		q[1] = (uint8_t)i;
		l7_session__feed(s, L7_FLOW_REQ, q, sizeof(q), sizeof(q), 10, l7t_cb, &o);
	}
	l7_session__stats(s, &o.st);
	assert_int_equal(o.st.req_lost, 1 + 1000 - L7_PENDING_MAX);
	assert_int_equal(o.st.req_overflow, 0);
	assert_true(l7_session__mem(s) <= sizeof(struct l7_rpc) * 0 + 4096 + L7_PENDING_MAX * 128);
	/* the newest are still there */
	q[0] = 999 >> 8;
	q[1] = 999 & 0xff;
	q[2] = 0x81;
	l7_session__feed(s, L7_FLOW_RESP, q, sizeof(q), sizeof(q), 11, l7t_cb, &o);
	assert_int_equal(o.n, 3);
	l7_session__free(s);
}

GG_TEST(test_infer)
{
	const unsigned int all = ~0u;

	l7t_expect_infer(DIG_Q_A, sizeof(DIG_Q_A) - 1, L7_TRANSPORT_UDP, 18953, all, L7_PROTO_DNS, L7_FLOW_REQ);
	l7t_expect_infer(DNSMASQ_R_A, sizeof(DNSMASQ_R_A) - 1, L7_TRANSPORT_UDP, 18953, all, L7_PROTO_DNS,
			 L7_FLOW_RESP);
	l7t_expect_infer(DIG_TCP_Q, sizeof(DIG_TCP_Q) - 1, L7_TRANSPORT_TCP, 0, all, L7_PROTO_DNS, L7_FLOW_REQ);
	l7t_expect_infer(DIG_Q_A, sizeof(DIG_Q_A) - 1, L7_TRANSPORT_UDP, 53, all & ~(1u << L7_PROTO_DNS),
			 L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05hello", 19, L7_TRANSPORT_UDP, 53, all,
			 L7_PROTO_UNKNOWN, -1); /* the question is cut */
	l7t_expect_infer("GET / HTTP/1.1\r\n\r\n", 18, L7_TRANSPORT_UDP, 53, all, L7_PROTO_UNKNOWN, -1);
}
