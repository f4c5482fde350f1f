/* test_l7_http.c - l7probe's HTTP/1.x parser on bytes recorded from curl and nginx 1.22 (strace of a
 * real exchange) and crafted ones: keep-alive, chunked, pipelining, 1xx, HEAD/204/304, gaps, garbage. */
#include "test_l7_util.h"

/* curl 7.88 -> nginx 1.22, recorded with strace -xx */
#define CURL_GET_INDEX                                                                                        \
	"GET /index.html?x=1 HTTP/1.1\r\nHost: 127.0.0.1:18931\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n" \
	"Accept-Encoding: gzip\r\n\r\n"
#define NGINX_200_INDEX                                                                                    \
	"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 06:59:02 GMT\r\nContent-Type: " \
	"text/html\r\nContent-Length: 6\r\nLast-Modified: Tue, 24 Nov 2026 06:59:02 GMT\r\nConnection: "   \
	"keep-alive\r\nETag: \"6b0535b6-6\"\r\nAccept-Ranges: bytes\r\n\r\nhello\n"
#define CURL_GET_MISSING                                                                               \
	"GET /missing HTTP/1.1\r\nHost: 127.0.0.1:18931\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n" \
	"Accept-Encoding: gzip\r\n\r\n"
#define NGINX_404_GZIP                                                                                            \
	"HTTP/1.1 404 Not Found\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 06:59:02 GMT\r\nContent-Type: " \
	"text/html\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nContent-Encoding: gzip\r\n\r\n"     \
	"72\r\n\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03\xb3\xc9(\xc9\xcd\xb1\xe3\xe5\xb2\xc9HML\xb1\xb3)\xc9,"    \
	"\xc9I\xb5"                                                                                               \
	"310Q\xf0\xcb/Qp\xcb/\xcdK\xb1\xd1\x87\x08\xda\xe8\x83\x95\x00\x95&\xe5\xa7T\x82\xb4$\xa7\xe6\x95"        \
	"\xa4\x16\xd9\xd9"                                                                                        \
	"d\x18\xa2\xeb\x00\x8a\xd8\xe8"                                                                           \
	"C\xa5"                                                                                                   \
	"Af\x03\x15"                                                                                              \
	"Ayy\xe9\x99y\x15\xfa\x86zFFz\x86\xc8J"                                                                   \
	"\xf4"                                                                                                    \
	"a\x86\xea"                                                                                               \
	"C\x1d\x04\x00\x97\x8d\x7f\xbd\x99\x00\x00\x00\r\n0\r\n\r\n"
#define NGINX_BIG_HEAD                                                                                             \
	"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 06:59:02 GMT\r\nContent-Type: "         \
	"text/plain\r\nLast-Modified: Tue, 24 Nov 2026 06:59:02 GMT\r\nTransfer-Encoding: chunked\r\nConnection: " \
	"keep-alive\r\nETag: W/\"6b0535b6-1a64\"\r\nContent-Encoding: gzip\r\n\r\n1446\r\n\x1f\x8b\x08"

GG_TEST(test_curl_nginx_keepalive)
{
	static const struct l7t_step steps[] = {
		REQ(CURL_GET_INDEX),  RESP(NGINX_200_INDEX), REQ(CURL_GET_MISSING),
		RESP(NGINX_404_GZIP), REQ(CURL_GET_INDEX),   RESP(NGINX_200_INDEX),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /index.html",
		 .status = 200,
		 .req_bytes = sizeof(CURL_GET_INDEX) - 1,
		 .resp_bytes = sizeof(NGINX_200_INDEX) - 1,
		 .req_ts_ns = 1000,
		 .resp_ts_ns = 2000},
		{.api = "GET /missing",
		 .status = 404,
		 .error = 1,
		 .req_bytes = sizeof(CURL_GET_MISSING) - 1,
		 .resp_bytes = sizeof(NGINX_404_GZIP) - 1,
		 .req_ts_ns = 3000,
		 .resp_ts_ns = 4000},
		{.api = "GET /index.html", .status = 200},
	};

	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* nginx's 5190-byte chunk with only the first 250 bytes captured, then the rest of the body: the chunk
 * is skipped by count through the gap and the next exchange is read normally. */
GG_TEST(test_chunk_body_through_gap)
{
	static const char tail[] = "\r\n0\r\n\r\n";
	const uint64_t head_len = sizeof(NGINX_BIG_HEAD) - 1;
	const uint64_t chunk_total = 0x1446 + 2; /* data and CRLF after the size line */
	const uint64_t resp_total = head_len - 3 + chunk_total + 5;
	struct l7t_step steps[] = {
		REQ(CURL_GET_INDEX),
		/* head + 3 data bytes captured, the rest of the data and its CRLF not */
		{L7_FLOW_RESP, NGINX_BIG_HEAD, head_len, head_len - 3 + chunk_total},
		{L7_FLOW_RESP, tail + 2, 5, 5}, /* "0\r\n\r\n" */
		REQ(CURL_GET_MISSING),
		RESP(NGINX_404_GZIP),
	};
	const struct l7t_want want[] = {
		{.api = "GET /index.html", .status = 200, .resp_bytes = resp_total, .resp_ts_ns = 3000},
		{.api = "GET /missing", .status = 404, .error = 1},
	};
	struct l7t_out *o = malloc(sizeof(*o));

	(void)tail;
	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, o);
	assert_int_equal(o->st.gap_bytes, chunk_total - 3);
	free(o);
}

/* A Content-Length body mostly not captured ends in the gap: the response completes in that chunk. */
GG_TEST(test_length_body_gap)
{
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc";
	struct l7t_step steps[] = {
		REQ("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"),
		{L7_FLOW_RESP, resp, sizeof(resp) - 1, sizeof(resp) - 1 - 3 + 100000},
		REQ("GET /small HTTP/1.1\r\nHost: x\r\n\r\n"),
		RESP("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /big", .status = 200, .resp_bytes = sizeof(resp) - 1 - 3 + 100000, .resp_ts_ns = 2000},
		{.api = "GET /small", .status = 500, .error = 1},
	};

	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* Three requests in one write, their responses in one write and then split oddly: order kept. */
GG_TEST(test_pipelining)
{
	static const struct l7t_step steps[] = {
		REQ("GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
		    "hello"
		    "DELETE /c HTTP/1.1\r\nHost: x\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
		     "HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nno!\r\n0\r\n\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /a", .status = 200, .req_bytes = 28, .resp_bytes = 40},
		{.api = "POST /b", .status = 201, .req_bytes = 57},
		{.api = "DELETE /c", .status = 403, .error = 1},
	};

	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* Chunked request body with trailers; 100 Continue before the final response; HEAD, 204 and 304
 * carry no body even when they announce one. */
GG_TEST(test_interim_and_bodiless)
{
	static const struct l7t_step steps[] = {
		REQ("PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"),
		RESP("HTTP/1.1 100 Continue\r\n\r\n"),
		REQ("4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nX-Trailer: 1\r\n\r\n"),
		RESP("HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nyes"),
		REQ("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n"),
		REQ("GET /e HTTP/1.1\r\n\r\nGET /n HTTP/1.0\r\n\r\n"),
		RESP("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n"),
		REQ("GET /last HTTP/1.1\r\n\r\n"),
		RESP("HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx"),
	};
	static const struct l7t_want want[] = {
		{.api = "PUT /up", .status = 200, .req_bytes = 79 + 44, .req_ts_ns = 1000, .resp_ts_ns = 4000},
		{.api = "HEAD /h", .status = 200},
		{.api = "GET /e", .status = 204},
		{.api = "GET /n", .status = 304},
		{.api = "GET /last", .status = 404, .error = 1},
	};

	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* Garbage (a TLS hello on port 80, binary noise) is counted and the next real request is read. */
GG_TEST(test_garbage_resync)
{
	static const struct l7t_step steps[] = {
		REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
		RESP("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
		REQ("get / http/1.1\r\n\r\n"),
		REQ("GET / HTTP/1.1\r\nBad header line\r\n\r\n"),
		REQ("GET /ok HTTP/1.1\r\nHost: y\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		RESP("\x00\x01garbage"),
		REQ("GET /ok2 HTTP/1.1\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"),
		REQ("GET /ok3 HTTP/1.1\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /ok", .status = 200},
		{.api = "GET /ok3", .status = 200},
	};

	/* unparsable: TLS hello, lower-case request, bad header, stray bytes, bad length; the 400 has no
	 * request; the request whose response had a bad length is lost */
	l7t_check_script(L7_PROTO_HTTP, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 5, 1, 1, NULL);
}

/* A response whose headers are cut by a gap, its request the only one waiting: it is taken to end at
 * its last chunk before the next request. With two requests waiting (pipelined), both answers are
 * taken to end there (the second one's was in the gap: no status). */
GG_TEST(test_header_gap)
{
	static const char partial[] = "HTTP/1.1 200 OK\r\nContent-Le";
	struct l7t_step steps[] = {
		REQ("GET /1 HTTP/1.1\r\n\r\n"),
		{L7_FLOW_RESP, partial, sizeof(partial) - 1, 200},
		RESP("more of the body"),
		REQ("GET /2 HTTP/1.1\r\n\r\n"),
		RESP("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"),
		REQ("GET /3 HTTP/1.1\r\n\r\nGET /4 HTTP/1.1\r\n\r\n"),
		{L7_FLOW_RESP, partial, sizeof(partial) - 1, 200},
		REQ("GET /5 HTTP/1.1\r\n\r\n"),
		RESP("HTTP/1.1 204 No Content\r\n\r\n"),
	};
	static const struct l7t_want want[] = {
		{.api = "GET /1", .status = 200, .resp_bytes = 200 + 16, .resp_ts_ns = 3000},
		{.api = "GET /2", .status = 201},
		{.api = "GET /3", .status = 200, .resp_bytes = 200},
		{.api = "GET /4", .resp_ts_ns = 7000},
		{.api = "GET /5", .status = 204},
	};
	struct l7t_out o;

	l7t_check_script(L7_PROTO_HTTP, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, &o);
	assert_int_equal(o.st.resp_end_guessed, 3);
	assert_int_equal(o.st.gap_bytes, 2 * (200 - (sizeof(partial) - 1)));
}

static void collect(void *ctx, const struct l7_rpc *r)
{
	l7t_cb(ctx, r);
}

/* A response delimited by the close completes when the connection closes; an upgrade ends parsing. */
GG_TEST(test_close_delimited_and_upgrade)
{
	static const char req[] = "GET /old HTTP/1.0\r\n\r\n";
	static const char resp[] = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close";
	static const char ws[] = "GET /chat HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
	static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello";
	struct l7t_out o;
	struct l7_session *s = l7_session__new(L7_PROTO_HTTP, L7_TRANSPORT_TCP);

	memset(&o, 0, sizeof(o));
	assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)req, sizeof(req) - 1, sizeof(req) - 1, 1,
					  collect, &o),
			 0);
	assert_int_equal(
		l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)resp, sizeof(resp) - 1, 5000, 2, collect, &o), 0);
	assert_int_equal(o.n, 0);
	assert_int_equal(l7_session__close(s, 3, collect, &o), 0);
	assert_int_equal(o.n, 1);
	l7t_expect(&o, 0, "GET /old", 200, 0, sizeof(req) - 1, 5000);
	assert_int_equal(o.rpc[0].resp_ts_ns, 3);
	l7_session__free(s);

	/* a body up to the close, yet the client asks again on the connection: the body had ended */
	s = l7_session__new(L7_PROTO_HTTP, L7_TRANSPORT_TCP);
	memset(&o, 0, sizeof(o));
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)req, sizeof(req) - 1, sizeof(req) - 1, 1, collect, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)resp, sizeof(resp) - 1, sizeof(resp) - 1, 2, collect, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)"more", 4, 4, 3, collect, &o);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)req, sizeof(req) - 1, sizeof(req) - 1, 4, collect, &o);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.rpc[0].resp_ts_ns, 3);
	assert_int_equal(o.rpc[0].resp_bytes, sizeof(resp) - 1 + 4);
	l7_session__free(s);

	s = l7_session__new(L7_PROTO_HTTP, L7_TRANSPORT_TCP);
	memset(&o, 0, sizeof(o));
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)ws, sizeof(ws) - 1, sizeof(ws) - 1, 1, collect, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)sw, sizeof(sw) - 1, sizeof(sw) - 1, 2, collect, &o);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)"\x81\x85garbage", 9, 9, 3, collect, &o);
	l7_session__stats(s, &o.st);
	l7t_expect_stats(&o, 1, 0, 0, 0);
	l7t_expect(&o, 0, "GET /chat", 101, 0, 0, 0);
	l7_session__free(s);
}

/* Whatever is fed, the session's memory stays bounded: a 400 KB URL and a 400 KB cookie are read from
 * their start and passed over (the request still counts), an endless line of garbage is unparsable,
 * 10k requests never answered keep at most L7_PENDING_MAX (the rest counted). */
GG_TEST(test_bounded_memory)
{
	struct l7_session *s = l7_session__new(L7_PROTO_HTTP, L7_TRANSPORT_TCP);
	struct l7_session_stats st;
	struct l7t_out o;
	static uint8_t junk[4096];
	static const char req[] = "GET /x HTTP/1.1\r\n\r\n";
	const size_t mem_max = 1024 + 2 * 8192;

	memset(&o, 0, sizeof(o));
	memset(junk, 'a', sizeof(junk));
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)"GET /", 5, 5, 1, l7t_cb, &o);
	for (int i = 0; i < 100; i++)
		l7_session__feed(s, L7_FLOW_REQ, junk, sizeof(junk), sizeof(junk), 2, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)" HTTP/1.1\r\nCookie: ", 20, 20, 3, l7t_cb, &o);
	for (int i = 0; i < 100; i++)
		l7_session__feed(s, L7_FLOW_REQ, junk, sizeof(junk), sizeof(junk), 4, l7t_cb, &o);
	assert_true(l7_session__mem(s) <= mem_max);
	l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)"\r\n\r\n", 4, 4, 5, l7t_cb, &o);
	l7_session__feed(s, L7_FLOW_RESP, (const uint8_t *)"HTTP/1.1 414 URI Too Long\r\nContent-Length: 0\r\n\r\n", 48,
			 48, 6, l7t_cb, &o);
	l7_session__stats(s, &o.st);
	l7t_expect_stats(&o, 1, 0, 0, 0);
	assert_int_equal(strlen(o.rpc[0].api), L7_API_MAX - 1);
	assert_int_equal(memcmp(o.rpc[0].api, "GET /aaaa", 9), 0);
	assert_int_equal(o.rpc[0].req_bytes, 5 + 200 * 4096 + 20 + 4);
	assert_int_equal(o.rpc[0].status, 414);

	memset(junk, 0x01, sizeof(junk));
	for (int i = 0; i < 100; i++)
		l7_session__feed(s, L7_FLOW_REQ, junk, sizeof(junk), sizeof(junk), 7, NULL, NULL);
	l7_session__stats(s, &st);
	assert_int_equal(st.unparsable, 100);
	for (int i = 0; i < 10000; i++)
		l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)req, sizeof(req) - 1, sizeof(req) - 1, 8, NULL, NULL);
	l7_session__stats(s, &st);
	assert_int_equal(st.req_overflow, 10000 - L7_PENDING_MAX);
	assert_true(l7_session__mem(s) <= mem_max + L7_PENDING_MAX * 128);
	l7_session__free(s);
	l7_session__free(NULL);
}

GG_TEST(test_infer)
{
	const unsigned int all = ~0u;

	l7t_expect_infer(CURL_GET_INDEX, 40, L7_TRANSPORT_TCP, 0, all, L7_PROTO_HTTP, L7_FLOW_REQ);
	l7t_expect_infer(NGINX_200_INDEX, 40, L7_TRANSPORT_TCP, 0, all, L7_PROTO_HTTP, L7_FLOW_RESP);
	/* not enabled, not HTTP, too short, over UDP */
	l7t_expect_infer(CURL_GET_INDEX, 40, L7_TRANSPORT_TCP, 0, all & ~(1u << L7_PROTO_HTTP), L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("GETX / HTTP/1.1\r\n", 17, L7_TRANSPORT_TCP, 80, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("GET ", 4, L7_TRANSPORT_TCP, 80, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer("HTTP/2.0 200 ", 13, L7_TRANSPORT_TCP, 80, all, L7_PROTO_UNKNOWN, -1);
	l7t_expect_infer(CURL_GET_INDEX, 40, L7_TRANSPORT_UDP, 80, all, L7_PROTO_UNKNOWN, -1);
	assert_string_equal(l7_proto__name(L7_PROTO_HTTP), "http");
	assert_string_equal(l7_proto__name((enum l7_proto)99), "unknown");
	assert_int_equal(l7_proto__by_name("dns"), L7_PROTO_DNS);
	assert_int_equal(l7_proto__by_name("kafka"), L7_PROTO_KAFKA);
	assert_int_equal(l7_proto__by_name("rocketmq"), L7_PROTO_ROCKETMQ);
	assert_int_equal(l7_proto__by_name("activemq"), L7_PROTO_UNKNOWN);
	assert_null(l7_session__new(L7_PROTO_UNKNOWN, L7_TRANSPORT_TCP));
	assert_null(l7_session__new(L7_PROTO_HTTP, L7_TRANSPORT_UDP));
	assert_int_equal(l7_session__feed(NULL, L7_FLOW_REQ, NULL, 0, 0, 0, NULL, NULL), -EINVAL);
}

/* W3C traceparent: the request's trace context reaches its rpc (the next request without one has
 * none; malformed or all-zero ids are ignored); whole, split at every byte and byte by byte. */
GG_TEST(test_traceparent)
{
	static const struct l7t_step steps[] = {
		REQ("GET /a HTTP/1.1\r\nHost: x\r\n"
		    "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		REQ("GET /b HTTP/1.1\r\nHost: x\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		REQ("GET /c HTTP/1.1\r\nTraceParent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n"
		    "x: y\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
		REQ("GET /d HTTP/1.1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01\r\n\r\n"),
		RESP("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
	};
	static const uint8_t want[24] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d,
					 0x0e, 0x0e, 0x47, 0x36, 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
	static const uint8_t none[24];
	static const struct l7t_want four_records[4];
	struct l7t_out o;

	l7t_check_script(L7_PROTO_HTTP, L7T_ALL_SPLITS, steps, NSTEPS(steps), four_records, NSTEPS(four_records), 0, 0,
			 0, &o);
	assert_memory_equal(o.rpc[0].trace, want, 24);
	for (int i = 1; i < 4; i++)
		assert_memory_equal(o.rpc[i].trace, none, 24);
}
