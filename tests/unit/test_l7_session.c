/* test_l7_session.c - what every l7probe session promises whatever it is fed: bounded memory (random
 * bytes, never-answered requests, endless units), counters that add up, argument checks. */
#include "test_l7_util.h"

/* the session, two reassembly buffers, a full pending queue (see PARSERS.md) */
#define MEM_MAX (1024 + 2 * 8192 + L7_PENDING_MAX * 96)

struct proto_case {
	enum l7_proto proto;
	enum l7_transport tr;
	const char *req;
	size_t req_len;
};

#define C(p, t, s)                     \
	{                              \
		p, t, s, sizeof(s) - 1 \
	}

static const struct proto_case cases[] = {
	C(L7_PROTO_HTTP, L7_TRANSPORT_TCP, "GET /x HTTP/1.1\r\nHost: y\r\n\r\n"),
	C(L7_PROTO_REDIS, L7_TRANSPORT_TCP, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
	C(L7_PROTO_PGSQL, L7_TRANSPORT_TCP, "Q\x00\x00\x00\x0dSELECT 1\x00"),
	C(L7_PROTO_MYSQL, L7_TRANSPORT_TCP,
	  "\x05\x00\x00\x00\x03"
	  "DO 1"),
	C(L7_PROTO_DNS, L7_TRANSPORT_TCP,
	  "\x00\x1d\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07"
	  "example\x03org\x00\x00\x0f\x00\x01"),
	C(L7_PROTO_DNS, L7_TRANSPORT_UDP,
	  "\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07"
	  "example\x03org\x00\x00\x0f\x00\x01"),
};

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* 4 MB of random bytes in random chunk sizes, both directions, some with gaps. */
GG_TEST(test_random_bytes)
{
	static uint8_t buf[8192];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct l7_session *s = l7_session__new(cases[c].proto, cases[c].tr);
		struct l7_session_stats st;
		uint64_t x = 88172645463325252ull + c, fed = 0, gaps = 0;

		assert_non_null(s);
		while (fed < 4u << 20) {
			size_t n = 1 + rnd(&x) % sizeof(buf);
			uint64_t gap = (rnd(&x) & 7) == 0 ? rnd(&x) % 100000 : 0;

			for (size_t k = 0; k < n; k++)
				buf[k] = (uint8_t)rnd(&x);
			assert_int_equal(
				l7_session__feed(s, (enum l7_flow)(rnd(&x) & 1), buf, n, n + gap, fed, NULL, NULL), 0);
			fed += n;
			gaps += gap;
			assert_true(l7_session__mem(s) <= MEM_MAX);
		}
		l7_session__stats(s, &st);
		assert_int_equal(st.gap_bytes, gaps);
		print_message("%s: unparsable %llu\n", l7_proto__name(cases[c].proto),
			      (unsigned long long)st.unparsable);
		assert_true(st.unparsable >= 50); /* of ~1000 chunks: garbage is not absorbed as lengths */
		l7_session__free(s);
	}
}

/* 10k requests never answered: L7_PENDING_MAX kept, the rest counted; answers then pair with them. */
GG_TEST(test_unanswered)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct l7_session *s = l7_session__new(cases[c].proto, cases[c].tr);
		struct l7_session_stats st;

		for (int i = 0; i < 10000; i++) {
			uint8_t req[64];

			memcpy(req, cases[c].req, cases[c].req_len);
			if (cases[c].proto == L7_PROTO_DNS) {
				/* distinct ids */
				size_t id = cases[c].tr == L7_TRANSPORT_TCP ? 2 : 0;

				req[id] = (uint8_t)(i >> 8);
				req[id + 1] = (uint8_t)i;
			}
			l7_session__feed(s, L7_FLOW_REQ, req, cases[c].req_len, cases[c].req_len, (uint64_t)i, NULL,
					 NULL);
			assert_true(l7_session__mem(s) <= MEM_MAX);
		}
		l7_session__stats(s, &st);
		/* DNS drops the oldest unanswered query, the others the newest request */
		if (cases[c].proto == L7_PROTO_DNS)
			assert_int_equal(st.req_lost, 10000 - L7_PENDING_MAX);
		else
			assert_int_equal(st.req_overflow, 10000 - L7_PENDING_MAX);
		assert_int_equal(st.unparsable, 0);
		l7_session__free(s);
	}
}

/* Units that never end: they are held up to the buffer's bound, then counted as unparsable. */
GG_TEST(test_endless_units)
{
	static const struct {
		enum l7_proto proto;
		const char *start;
		size_t len;
	} starts[] = {
		{L7_PROTO_HTTP, "HTTP/1.1 200 OK\r\nX-Long: ", 25}, /* a header line: passed over, not held */
		{L7_PROTO_HTTP, "GET /", 5},			    /* a request line: read from its start */
		{L7_PROTO_REDIS, "+OK", 3},			    /* a simple string that never ends */
		{L7_PROTO_REDIS, "*1\r\n$5\r\nhel", 11},	    /* the command name, cut */
		{L7_PROTO_PGSQL, "Q\x00\x01\x00\x00SEL", 8},	    /* a query whose keyword never comes */
		{L7_PROTO_MYSQL, "\x00\x01\x00\x00\x03SEL", 8},
	};
	static uint8_t filler[1024];

	memset(filler, ' ', sizeof(filler));
	for (size_t c = 0; c < sizeof(starts) / sizeof(starts[0]); c++) {
		struct l7_session *s = l7_session__new(starts[c].proto, L7_TRANSPORT_TCP);
		enum l7_flow f = starts[c].start[0] == 'H' || starts[c].start[0] == '+' ? L7_FLOW_RESP : L7_FLOW_REQ;

		l7_session__feed(s, f, (const uint8_t *)starts[c].start, starts[c].len, starts[c].len, 1, NULL, NULL);
		for (int i = 0; i < 1000; i++) {
			l7_session__feed(s, f, filler, 1, 1, 2, NULL, NULL);
			assert_true(l7_session__mem(s) <= MEM_MAX);
		}
		l7_session__free(s);
	}
}

GG_TEST(test_arguments)
{
	struct l7_session *s = l7_session__new(L7_PROTO_REDIS, L7_TRANSPORT_TCP);
	struct l7_session_stats st;

	assert_null(l7_session__new((enum l7_proto)42, L7_TRANSPORT_TCP));
	assert_int_equal(errno, EINVAL);
	assert_null(l7_session__new(L7_PROTO_DNS, (enum l7_transport)7));
	assert_int_equal(l7_session__feed(s, (enum l7_flow)2, (const uint8_t *)"x", 1, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, NULL, 1, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, (const uint8_t *)"xy", 2, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, NULL, 0, 100, 0, NULL, NULL), 0); /* all lost */
	assert_int_equal(l7_session__close(NULL, 0, NULL, NULL), -EINVAL);
	l7_session__stats(s, &st);
	assert_int_equal(st.gap_bytes, 100);
	assert_int_equal(l7_session__mem(NULL), 0);
	l7_session__stats(NULL, &st);
	l7_session__free(s);
}
