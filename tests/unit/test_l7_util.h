/* test_l7_util.h - helpers for the l7probe protocol tests: feed a script of chunks to a session whole,
 * split at every byte boundary and byte by byte, and check that every way gives the same records. */
#ifndef GG_TEST_L7_UTIL_H
#define GG_TEST_L7_UTIL_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "../../probes/l7probe/l7_proto.h"
#include "l7_steps.h"

#define L7T_MAX 1024

struct l7t_out {
	struct l7_rpc rpc[L7T_MAX];
	size_t n;
	struct l7_session_stats st;
};

static inline void l7t_cb(void *ctx, const struct l7_rpc *r)
{
	struct l7t_out *o = ctx;

	if (o->n < L7T_MAX)
		o->rpc[o->n++] = *r;
}

/* Chunk i is fed at ts 1000 * (i + 1). split_step/split_at: that chunk is fed in two pieces (the gap
 * after the second); bytewise: every chunk is fed one captured byte at a time. */
static inline void l7t_run(enum l7_proto proto, enum l7_transport tr, const struct l7t_step *steps, size_t n,
			   size_t split_step, size_t split_at, int bytewise, struct l7t_out *out)
{
	struct l7_session *s = l7_session__new(proto, tr);

	assert_non_null(s);
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const uint8_t *d = steps[i].data;
		uint64_t total = steps[i].total ? steps[i].total : steps[i].len;
		uint64_t ts = 1000 * (i + 1);

		if (bytewise && steps[i].len > 1) {
			for (size_t k = 0; k < steps[i].len; k++)
				assert_int_equal(l7_session__feed(s, steps[i].flow, d + k, 1,
								  k + 1 == steps[i].len ? 1 + total - steps[i].len : 1,
								  ts, l7t_cb, out),
						 0);
		} else if (i == split_step && split_at > 0 && split_at < steps[i].len) {
			assert_int_equal(l7_session__feed(s, steps[i].flow, d, split_at, split_at, ts, l7t_cb, out), 0);
			assert_int_equal(l7_session__feed(s, steps[i].flow, d + split_at, steps[i].len - split_at,
							  total - split_at, ts, l7t_cb, out),
					 0);
		} else {
			assert_int_equal(l7_session__feed(s, steps[i].flow, d, steps[i].len, total, ts, l7t_cb, out),
					 0);
		}
		if (getenv("L7T_DEBUG") && split_step == SIZE_MAX && !bytewise) {
			struct l7_session_stats st;

			l7_session__stats(s, &st);
			fprintf(stderr, "step %zu %s: rpcs %llu unparsable %llu unmatched %llu lost %llu\n", i,
				steps[i].flow == L7_FLOW_REQ ? "req" : "resp", (unsigned long long)st.rpcs,
				(unsigned long long)st.unparsable, (unsigned long long)st.resp_unmatched,
				(unsigned long long)st.req_lost);
		}
	}
	l7_session__stats(s, &out->st);
	l7_session__free(s);
}

static inline int l7t_same(const struct l7t_out *a, const struct l7t_out *b)
{
	return a->n == b->n && memcmp(a->rpc, b->rpc, a->n * sizeof(a->rpc[0])) == 0 &&
	       memcmp(&a->st, &b->st, sizeof(a->st)) == 0;
}

/* With L7T_DEBUG set in the environment: the records and counters of a run on stderr. */
static inline void l7t_dump(const struct l7t_out *o)
{
	if (!getenv("L7T_DEBUG"))
		return;
	for (size_t i = 0; i < o->n; i++)
		fprintf(stderr, "%zu: %s status %d error %d req %llu resp %llu\n", i, o->rpc[i].api, o->rpc[i].status,
			o->rpc[i].error, (unsigned long long)o->rpc[i].req_bytes,
			(unsigned long long)o->rpc[i].resp_bytes);
	fprintf(stderr, "rpcs %llu unparsable %llu unmatched %llu lost %llu\n", (unsigned long long)o->st.rpcs,
		(unsigned long long)o->st.unparsable, (unsigned long long)o->st.resp_unmatched,
		(unsigned long long)o->st.req_lost);
}

/* Run the script whole into out, then split every chunk at every byte and byte by byte: each must
 * give exactly the same records and counters (TCP; a datagram is never split). The whole run is
 * dumped with L7T_DEBUG (l7t_dump). */
static inline void l7t_run_all_splits(enum l7_proto proto, const struct l7t_step *steps, size_t n, struct l7t_out *out)
{
	struct l7t_out *o2 = malloc(sizeof(*o2));

	assert_non_null(o2);
	l7t_run(proto, L7_TRANSPORT_TCP, steps, n, SIZE_MAX, 0, 0, out);
	l7t_dump(out);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 1; k < steps[i].len; k++) {
			l7t_run(proto, L7_TRANSPORT_TCP, steps, n, i, k, 0, o2);
			if (!l7t_same(out, o2))
				fail_msg("chunk %zu split at %zu: %zu records (whole: %zu), unparsable %llu (whole: "
					 "%llu)",
					 i, k, o2->n, out->n, (unsigned long long)o2->st.unparsable,
					 (unsigned long long)out->st.unparsable);
		}
	}
	l7t_run(proto, L7_TRANSPORT_TCP, steps, n, SIZE_MAX, 0, 1, o2);
	if (!l7t_same(out, o2))
		fail_msg("byte by byte: %zu records (whole: %zu), unparsable %llu (whole: %llu)", o2->n, out->n,
			 (unsigned long long)o2->st.unparsable, (unsigned long long)out->st.unparsable);
	free(o2);
}

static inline void l7t_expect(const struct l7t_out *o, size_t i, const char *api, int status, int error,
			      uint64_t req_bytes, uint64_t resp_bytes)
{
	assert_true(i < o->n);
	assert_string_equal(o->rpc[i].api, api);
	assert_int_equal(o->rpc[i].status, status);
	assert_int_equal(o->rpc[i].error, error);
	if (req_bytes)
		assert_int_equal(o->rpc[i].req_bytes, req_bytes);
	if (resp_bytes)
		assert_int_equal(o->rpc[i].resp_bytes, resp_bytes);
}

static inline void l7t_expect_stats(const struct l7t_out *o, uint64_t rpcs, uint64_t unparsable,
				    uint64_t resp_unmatched, uint64_t req_lost)
{
	assert_int_equal(o->n, rpcs);
	assert_int_equal(o->st.rpcs, rpcs);
	assert_int_equal(o->st.unparsable, unparsable);
	assert_int_equal(o->st.resp_unmatched, resp_unmatched);
	assert_int_equal(o->st.req_lost, req_lost);
}

/* What record i of a run must be: its api, status and error (not checked when api is NULL); its
 * req_bytes, resp_bytes, req_ts_ns and resp_ts_ns when not 0. */
struct l7t_want {
	const char *api;
	int status;
	int error;
	uint64_t req_bytes;
	uint64_t resp_bytes;
	uint64_t req_ts_ns;
	uint64_t resp_ts_ns;
};

/* How l7t_check_script feeds its script */
enum l7t_feed {
	L7T_ALL_SPLITS, /* TCP, whole, split at every byte and byte by byte: l7t_run_all_splits */
	L7T_WHOLE_TCP,	/* TCP, every chunk whole, once (a split chunk of garbage would be two) */
	L7T_WHOLE_UDP,	/* UDP, every chunk a datagram */
};

/* Feed the script (n steps) to a proto session: the run must give exactly nwant records, record i as
 * want[i] says, and end with the counters given. The run is left in o for further checks (o NULL: none). */
static inline void l7t_check_script(enum l7_proto proto, enum l7t_feed feed, const struct l7t_step *steps, size_t n,
				    const struct l7t_want *want, size_t nwant, uint64_t unparsable,
				    uint64_t resp_unmatched, uint64_t req_lost, struct l7t_out *o)
{
	struct l7t_out *run = o ? o : malloc(sizeof(*run));

	assert_non_null(run);
	if (feed == L7T_ALL_SPLITS) {
		l7t_run_all_splits(proto, steps, n, run);
	} else {
		l7t_run(proto, feed == L7T_WHOLE_UDP ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP, steps, n, SIZE_MAX, 0, 0,
			run);
		l7t_dump(run);
	}
	l7t_expect_stats(run, nwant, unparsable, resp_unmatched, req_lost);
	for (size_t i = 0; i < nwant; i++) {
		const struct l7t_want *w = &want[i];

		if (w->api)
			l7t_expect(run, i, w->api, w->status, w->error, w->req_bytes, w->resp_bytes);
		if (w->req_ts_ns)
			assert_int_equal(run->rpc[i].req_ts_ns, w->req_ts_ns);
		if (w->resp_ts_ns)
			assert_int_equal(run->rpc[i].resp_ts_ns, w->resp_ts_ns);
	}
	if (!o)
		free(run);
}

/* A request, its response (whole: len bytes) and the api the request is named by */
struct l7t_exchange {
	const void *req;
	size_t req_len;
	const void *resp;
	size_t resp_len;
	const char *api;
};

#define L7T_EXCHANGE(req, resp, api)                                    \
	{                                                               \
		(req), sizeof(req) - 1, (resp), sizeof(resp) - 1, (api) \
	}

/* big's request answered by a reply of which its resp_len bytes were captured of resp_total (the rest a
 * gap), then the exchange next: the reply is passed by count and next pairs (whole, split at every byte
 * and byte by byte). */
static inline void l7t_check_big_reply_gap(enum l7_proto proto, const struct l7t_exchange *big, uint64_t resp_total,
					   const struct l7t_exchange *next)
{
	const struct l7t_step steps[] = {
		{L7_FLOW_REQ, big->req, big->req_len, 0},
		{L7_FLOW_RESP, big->resp, big->resp_len, resp_total},
		{L7_FLOW_REQ, next->req, next->req_len, 0},
		{L7_FLOW_RESP, next->resp, next->resp_len, 0},
	};
	const struct l7t_want want[] = {
		{.api = big->api, .req_bytes = big->req_len, .resp_bytes = resp_total},
		{.api = next->api},
	};

	l7t_check_script(proto, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A capture that starts with next's response (its request was before the capture), then a TLS hello,
 * the request waiting and its answer's header cut by a gap (cut: a response chunk of fewer bytes than it
 * moved), then next's exchange amid responses to nothing waiting: stray before next's response, next's
 * response again after it (the request waiting still waits, so it answers nothing). Fed once, every chunk
 * whole: next is the one record; unmatched: the first response; unparsable: the TLS hello, the cut header
 * and the two responses to nothing waiting. */
static inline void l7t_check_garbage_resync(enum l7_proto proto, const struct l7t_exchange *next,
					    const struct l7t_step *waiting, const struct l7t_step *cut,
					    const struct l7t_step *stray)
{
	static const struct l7t_step tls_hello =
		REQ("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8a\x1b\x00\x00\x00\x00\x00");
	const struct l7t_step next_req = {L7_FLOW_REQ, next->req, next->req_len, 0};
	const struct l7t_step next_resp = {L7_FLOW_RESP, next->resp, next->resp_len, 0};
	const struct l7t_step steps[] = {next_resp, tls_hello, *waiting, *cut, next_req, *stray, next_resp, next_resp};
	const struct l7t_want want[] = {{.api = next->api}};

	l7t_check_script(proto, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 4, 1, 0, NULL);
}

/* l7_infer on len bytes of data (transport tr, server port, the protocols allowed) names want and, for a
 * protocol, the direction want_flow (-1: not checked); the direction is set to the other one first, so that
 * a guess that leaves it is seen. */
static inline void l7t_expect_infer(const void *data, size_t len, enum l7_transport tr, uint16_t port,
				    unsigned int allowed, enum l7_proto want, int want_flow)
{
	enum l7_flow f = want_flow == L7_FLOW_REQ ? L7_FLOW_RESP : L7_FLOW_REQ;
	enum l7_proto got = l7_infer(data, len, tr, port, allowed, &f);

	if (got != want || (want != L7_PROTO_UNKNOWN && want_flow >= 0 && (int)f != want_flow))
		fail_msg("l7_infer of %zu bytes: %s %s, want %s %s", len, l7_proto__name(got),
			 f == L7_FLOW_REQ ? "request" : "response", l7_proto__name(want),
			 want_flow < 0		    ? "any"
			 : want_flow == L7_FLOW_REQ ? "request"
						    : "response");
}

/* How a request's number is written in l7t_check_unanswered_bounded */
enum l7t_byte_order {
	L7T_BIG_ENDIAN,
	L7T_LITTLE_ENDIAN,
};

/* 10000 requests never answered, each a copy of req (len bytes) with its number written as 4 bytes at
 * id_at in the given order: the pending queue stays bounded (the session under 48 KiB), the oldest are
 * dropped and counted as lost, none is unparsable. */
static inline void l7t_check_unanswered_bounded(enum l7_proto proto, const void *req, size_t len, size_t id_at,
						enum l7t_byte_order order)
{
	struct l7_session *s = l7_session__new(proto, L7_TRANSPORT_TCP);
	struct l7_session_stats st;
	uint8_t *r = malloc(len);

	assert_non_null(s);
	assert_non_null(r);
	assert_true(id_at + 4 <= len);
	memcpy(r, req, len);
	for (uint32_t i = 0; i < 10000; i++) {
		for (int b = 0; b < 4; b++)
			r[id_at + b] = (uint8_t)(i >> (order == L7T_BIG_ENDIAN ? 24 - 8 * b : 8 * b));
		assert_int_equal(l7_session__feed(s, L7_FLOW_REQ, r, len, len, i, NULL, NULL), 0);
		assert_true(l7_session__mem(s) < 48 * 1024);
	}
	l7_session__stats(s, &st);
	assert_int_equal(st.req_lost, 10000 - L7_PENDING_MAX);
	assert_int_equal(st.unparsable, 0);
	l7_session__free(s);
	free(r);
}

#endif
