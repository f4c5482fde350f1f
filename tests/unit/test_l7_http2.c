/* test_l7_http2.c - l7probe's HTTP/2 and gRPC parser on traffic recorded from nghttp against nginx (h2c,
 * three concurrent streams: 200, 404, 500) and from python3-grpcio (unary calls, trailers, trailers-only
 * errors, dynamic table references), each split at every byte and byte by byte; a capture started
 * mid-connection; and crafted frames (RST_STREAM, GOAWAY, CONTINUATION with a field split between
 * frames, padding and priority, 1xx, header blocks lost in a gap); an HTTP/1.1 upgrade to h2c. */
#include "test_l7_util.h"

#include "data/l7_h2_caps.h"

static const struct l7t_step nghttp[] = {NGHTTP_0};
static const struct l7t_step grpc[] = {GRPC_1};

GG_TEST(test_nghttp_nginx)
{
	/* responses in the order nginx sent them: streams 13, 15, 17; sizes: frames of each stream; all three
	 * were answered in the chunk after the requests' */
	static const struct l7t_want want[] = {
		{.api = "GET /index.html",
		 .status = 200,
		 .req_bytes = 9 + 39,
		 .resp_bytes = 9 + 104 + 9 + 6,
		 .req_ts_ns = 1000},
		{.api = "GET /missing", .status = 404, .error = 1, .req_bytes = 9 + 19, .resp_bytes = 9 + 50 + 9 + 153},
		{.api = "GET /err",
		 .status = 500,
		 .error = 1,
		 .req_bytes = 9 + 16,
		 .resp_bytes = 9 + 48 + 9 + 5,
		 .resp_ts_ns = 2000},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_HTTP2, L7T_ALL_SPLITS, nghttp, NSTEPS(nghttp), want, NSTEPS(want), 0, 0, 0, &o);
	assert_int_equal(o.st.hpack_unresolved, 0);
}

GG_TEST(test_grpc)
{
	static const struct l7t_want want[] = {
		{.api = "POST /l7.Echo/Say"},
		{.api = "POST /l7.Echo/Say"},
		{.api = "POST /l7.Echo/Say", .status = 5, .error = 1},
		{.api = "POST /l7.Echo/Say"},
		{.api = "POST /l7.Echo/Say", .status = 5, .error = 1},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_HTTP2, L7T_ALL_SPLITS, grpc, NSTEPS(grpc), want, NSTEPS(want), 0, 0, 0, &o);
	assert_int_equal(o.st.hpack_unresolved, 0);
}

/* The capture starts at the second call (stream 3): its header fields are all dynamic table references. */
GG_TEST(test_grpc_mid_connection)
{
	static const struct l7t_want want[] = {
		/* api: the method only (static), the path is unresolved; ok calls whose grpc-status is an unknown
		 * entry: 200; the first NOT_FOUND brings grpc-status 5 as a literal (indexed), which the second then
		 * refers to */
		{.api = "POST", .status = 200},
		{.api = "POST", .status = 5, .error = 1},
		{.api = "POST", .status = 200},
		{.api = "POST", .status = 5, .error = 1},
	};
	struct l7t_out o;
	size_t first = 0;
	enum l7_flow f;

	while (first < NSTEPS(grpc) && memcmp(grpc[first].data, "\x00\x00\x08\x01\x04\x00\x00\x00\x03", 9))
		first++;
	assert_true(first < NSTEPS(grpc));
	assert_int_equal(l7_infer(grpc[first].data, grpc[first].len, L7_TRANSPORT_TCP, 0, ~0u, &f), L7_PROTO_HTTP2);
	assert_int_equal(f, L7_FLOW_REQ);
	l7t_check_script(L7_PROTO_HTTP2, L7T_ALL_SPLITS, grpc + first, NSTEPS(grpc) - first, want, NSTEPS(want), 0, 0,
			 0, &o);
	assert_true(o.st.hpack_unresolved >= 4 * 8);
}

/* ---- crafted frames ---- */

#define PREFACE	 "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"
#define SETTINGS "\x00\x00\x00\x04\x00\x00\x00\x00\x00"
/* HEADERS stream 1, END_STREAM|END_HEADERS: :method GET, :path /x (literal, not indexed) */
#define GET_X "\x00\x00\x05\x01\x05\x00\x00\x00\x01\x82\x04\x02/x"
#define GET_Y "\x00\x00\x05\x01\x05\x00\x00\x00\x03\x82\x04\x02/y"
/* HEADERS :status 200, END_HEADERS (body follows) / END_STREAM too */
#define OK_1	 "\x00\x00\x01\x01\x04\x00\x00\x00\x01\x88"
#define OK_1_END "\x00\x00\x01\x01\x05\x00\x00\x00\x01\x88"
#define OK_3_END "\x00\x00\x01\x01\x05\x00\x00\x00\x03\x88"

GG_TEST(test_rst_goaway)
{
	static const struct l7t_step steps[] = {
		REQ(PREFACE GET_X GET_Y),
		RESP(SETTINGS "\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x00\x07"), /* RST_STREAM 1 REFUSED */
		REQ("\x00\x00\x05\x01\x05\x00\x00\x00\x05\x82\x04\x02/z"),
		RESP("\x00\x00\x08\x07\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00" OK_3_END), /* GOAWAY last 3
													*/
	};
	static const struct l7t_want want[] = {
		{.api = "GET /x", .error = 1},
		{.api = "GET /y", .status = 200},
	};

	/* stream 5 dropped by the GOAWAY */
	l7t_check_script(L7_PROTO_HTTP2, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 1, NULL);
}

/* A header block in HEADERS + CONTINUATION, split in the middle of a field; padding and priority. */
GG_TEST(test_continuation_padding)
{
	static const struct l7t_step steps[] = {
		REQ(PREFACE
		    /* HEADERS padded (2) + priority, END_STREAM, no END_HEADERS: 82 86 84 41 0f "www.e" */
		    "\x00\x00\x12\x01\x29\x00\x00\x00\x01\x02\x00\x00\x00\x00\x10\x82\x86\x84\x41\x0fwww.e\x00\x00"
		    /* CONTINUATION END_HEADERS: "xample.com" 04 05 /path */
		    "\x00\x00\x11\x09\x04\x00\x00\x00\x01xample.com\x04\x05/path"),
		/* 100 Continue (interim), then 200 with a padded DATA END_STREAM */
		RESP(SETTINGS "\x00\x00\x05\x01\x04\x00\x00\x00\x01\x08\x03\x31\x30\x30" OK_1
			      "\x00\x00\x05\x00\x09\x00\x00\x00\x01\x02hi\x00\x00"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /path", .status = 200, .req_bytes = 9 + 18 + 9 + 17, .resp_bytes = 9 + 5 + 9 + 1 + 9 + 5},
	};

	l7t_check_script(L7_PROTO_HTTP2, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* DATA bodies in a gap are passed over; a response header block lost in a gap loses the table, not the
 * stream; a gap that cuts a frame header loses sync until a frame is recognised again. */
GG_TEST(test_gaps)
{
	static const struct l7t_step steps[] = {
		REQ(PREFACE GET_X GET_Y),
		/* :status 404 as a literal with indexing (0x48 03 "404"); then a 100 kB body, 60 captured */
		RESP_GAP(SETTINGS "\x00\x00\x05\x01\x04\x00\x00\x00\x01\x48\x03\x34\x30\x34"
				  "\x01\x86\xa0\x00\x01\x00\x00\x00\x01"
				  "0123456789012345678901234567890123456789012345678901234567890",
			 9 + 14 + 9 + 100000),
		/* stream 3: a header block of 40 bytes of which 3 captured: 0xbe (the 404 entry) then lost */
		RESP_GAP("\x00\x00\x28\x01\x05\x00\x00\x00\x03\xbe\x40\x01", 9 + 40),
		/* stream 5: refers to 0xbe again: the table was forgotten, so unresolved */
		REQ("\x00\x00\x05\x01\x05\x00\x00\x00\x05\x82\x04\x02/z"),
		RESP("\x00\x00\x01\x01\x05\x00\x00\x00\x05\xbe"),
		/* a frame header cut by a gap: sync lost; garbage is refused; a good frame syncs again */
		REQ_GAP("\x00\x00\x05\x01\x05\x00\x00", 100),
		REQ("garbage, not a frame"),
		REQ("\x00\x00\x05\x01\x05\x00\x00\x00\x07\x82\x04\x02/w"),
		RESP("\x00\x00\x01\x01\x05\x00\x00\x00\x07\x88"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /x", .status = 404, .error = 1, .resp_bytes = 9 + 5 + 9 + 100000},
		{.api = "GET /y", .status = 404, .error = 1},
		{.api = "GET /z"},
		{.api = "GET /w", .status = 200},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_HTTP2, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 2, 0, 0, &o);
	assert_int_equal(o.st.hpack_unresolved, 1);
}

/* A response for a stream whose request was never seen; streams open at the close. */
GG_TEST(test_unmatched_close)
{
	struct l7_session *s = l7_session__new(L7_PROTO_HTTP2, L7_TRANSPORT_TCP);
	struct l7t_out o = {0};

	assert_non_null(s);
	assert_int_equal(l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)OK_1_END, 10, 10, 1000, l7t_cb, &o), 0);
	assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)PREFACE GET_Y, 24 + 9 + 14, 24 + 9 + 14,
					  2000, l7t_cb, &o),
			 0);
	assert_int_equal(l7_session__close(s, 3000, l7t_cb, &o), 0);
	l7_session__stats(s, &o.st);
	assert_int_equal(o.n, 0);
	assert_int_equal(o.st.resp_unmatched, 1);
	assert_int_equal(o.st.req_lost, 1);
	l7_session__free(s);
}

/* Many concurrent streams: bounded, the oldest dropped. */
GG_TEST(test_many_streams)
{
	struct l7_session *s = l7_session__new(L7_PROTO_HTTP2, L7_TRANSPORT_TCP);
	struct l7t_out o = {0};
	uint8_t f[14];

	assert_non_null(s);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)PREFACE, 33, 33, 1, l7t_cb, &o);
	memcpy(f, GET_X, 14);
	for (uint32_t i = 0; i < 1000; i++) {
		uint32_t sid = 2 * i + 1;

		f[5] = (uint8_t)(sid >> 24);
		f[6] = (uint8_t)(sid >> 16);
		f[7] = (uint8_t)(sid >> 8);
		f[8] = (uint8_t)sid;
		assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, f, 14, 14, 10 + i, l7t_cb, &o), 0);
	}
	assert_true(l7_session__mem(s) < 64 * 1024);
	l7_session__stats(s, &o.st);
	assert_int_equal(o.st.req_lost, 1000 - L7_PENDING_MAX);
	/* the newest is still waiting */
	memcpy(f, OK_1_END, 10);
	f[7] = (uint8_t)(1999 >> 8);
	f[8] = (uint8_t)(1999 & 0xff);
	assert_int_equal(l7_session__feed(s, L7_FLOW_RESP, f, 10, 10, 5000, l7t_cb, &o), 0);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.rpc[0].req_ts_ns, 10 + 999);
	l7_session__free(s);
}

/* Server push: the PUSH_PROMISE's block is decoded for the table (the response refers to what it
 * inserted), the pushed stream's response is not an answer to a request. */
GG_TEST(test_push_promise)
{
	static const struct l7t_step steps[] = {
		REQ(PREFACE GET_X),
		RESP(SETTINGS
		     /* PUSH_PROMISE on 1, promised 2, END_HEADERS: 82 (GET) 40 03 "x-a" 01 "1" (inserted) */
		     "\x00\x00\x0c\x05\x04\x00\x00\x00\x01\x00\x00\x00\x02\x82\x40\x03x-a\x01\x31"
		     /* stream 1: 88 be (:status 200, x-a: 1 from the table) */
		     "\x00\x00\x02\x01\x04\x00\x00\x00\x01\x88\xbe"
		     /* pushed stream 2: a whole response */
		     "\x00\x00\x01\x01\x05\x00\x00\x00\x02\x88"
		     /* stream 1 ends */
		     "\x00\x00\x00\x00\x01\x00\x00\x00\x01"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /x", .status = 200, .resp_bytes = 9 + 12 + 9 + 2 + 9},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_HTTP2, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, &o);
	assert_int_equal(o.st.hpack_unresolved, 0);
}

/* HTTP/1.1 Upgrade to h2c (RFC 7540 3.2): the 101 and the server's first frames in one chunk; the
 * upgrade request answered on stream 1, then a stream of HTTP/2 proper. Split at every byte too. */
GG_TEST(test_h2c_upgrade)
{
	static const struct l7t_step steps[] = {
		REQ("GET /up HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
		    "HTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"),
		RESP("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n" SETTINGS OK_1
		     "\x00\x00\x02\x00\x01\x00\x00\x00\x01hi"),
		REQ(PREFACE GET_Y),
		RESP(OK_3_END),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /up", .status = 200, .req_bytes = 114, .resp_bytes = 10 + 11},
		{.api = "GET /y", .status = 200, .req_bytes = 14, .resp_bytes = 10},
	};

	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}
