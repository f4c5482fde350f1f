/* test_l7conn.c - l7probe's connection tracker (probes/l7probe/conn.c) fed synthetic kernel events:
 * roles from connect/accept or inferred, inference over split chunks, fd reuse, close, exit, TLS,
 * bounded connections and keys. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "../../probes/l7probe/l7_trace.h"
#include "../../probes/l7probe/l7_user.h"

#define TGID  4242
#define SPORT 8080
#define CPORT 50000

struct evbuf {
	struct l7_ev h;
	uint8_t data[4096];
};

/* A data event of process TGID on fd: dir, role from the syscall, sk, payload s at ts. */
static void data_ev(struct l7_tracker *t, uint32_t tgid, int fd, uint64_t sk, int dir, int role, uint8_t flags,
		    const char *s, uint64_t ts)
{
	static struct evbuf e;
	size_t len = strlen(s);
	uint32_t lo = htonl(0x7f000001), peer = htonl(0x7f000002);

	memset(&e, 0, sizeof(e));
	e.h.type = L7_EV_DATA;
	e.h.dir = (uint8_t)dir;
	e.h.flags = flags;
	e.h.role = (uint8_t)role;
	e.h.tgid = tgid;
	e.h.pid = tgid;
	e.h.fd = fd;
	e.h.ts_ns = ts;
	e.h.sk = sk;
	e.h.total = (uint32_t)len;
	e.h.len = (uint32_t)len;
	e.h.family = AF_INET;
	/* the local end is the server when role says so or, unknown, when it receives a request */
	if (role == L7_ROLE_CLIENT) {
		e.h.lport = CPORT;
		e.h.rport = SPORT;
		memcpy(e.h.laddr, &peer, 4);
		memcpy(e.h.raddr, &lo, 4);
	} else {
		e.h.lport = SPORT;
		e.h.rport = CPORT;
		memcpy(e.h.laddr, &lo, 4);
		memcpy(e.h.raddr, &peer, 4);
	}
	memcpy(e.data, s, len);
	assert_int_equal(l7_tracker__event(t, &e, sizeof(e.h) + len), 0);
}

static void close_ev(struct l7_tracker *t, uint32_t tgid, int fd, uint64_t sk, uint64_t ts)
{
	struct l7_ev h = {.type = L7_EV_CLOSE, .tgid = tgid, .fd = fd, .sk = sk, .ts_ns = ts};

	assert_int_equal(l7_tracker__event(t, &h, sizeof(h)), 0);
}

static const char REQ[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
static const char NOTFOUND[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

static uint64_t nconns(struct l7_tracker *t)
{
	struct l7_tracker_stats st;

	l7_tracker__stats(t, &st);
	return st.conns;
}

/* connect() made the client: two requests, one 404; latency from the send to the receive. */
GG_TEST(test_client_from_connect)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_key_values v;

	data_ev(t, TGID, 5, 1, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1000);
	data_ev(t, TGID, 5, 1, L7_DIR_RECV, L7_ROLE_CLIENT, 0, OK, 1600);
	data_ev(t, TGID, 5, 1, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 2000);
	data_ev(t, TGID, 5, 1, L7_DIR_RECV, L7_ROLE_CLIENT, 0, NOTFOUND, 2400);
	assert_int_equal(l7_tracker__lookup(t, TGID, 1, SPORT, &v), 0);
	assert_int_equal(v.rpcs, 2);
	assert_int_equal(v.errs, 1);
	assert_int_equal(v.lat_sum, 600 + 400);
	assert_int_equal(v.proto, L7_PROTO_HTTP);
	assert_int_equal(v.l4_role, 1);
	assert_int_equal(v.bytes_sent, 2 * strlen(REQ));
	assert_int_equal(v.bytes_recv, strlen(OK) + strlen(NOTFOUND));
	assert_int_equal(v.segs_sent, 2);
	assert_int_equal(v.segs_recv, 2);
	assert_int_equal(v.client_ip[3], 2); /* the local address of a client */
	l7_tracker__free(t);
}

/* A connection older than the probe: no role from the syscalls; whoever receives the request is
 * the server. Its request split in two reads ("GE", "T /a ...") is recognised once joined. */
GG_TEST(test_role_inferred_split)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_key_values v;

	data_ev(t, TGID, 7, 2, L7_DIR_RECV, L7_ROLE_UNKNOWN, 0, "GE", 1000);
	data_ev(t, TGID, 7, 2, L7_DIR_RECV, L7_ROLE_UNKNOWN, 0, REQ + 2, 1100);
	data_ev(t, TGID, 7, 2, L7_DIR_SEND, L7_ROLE_UNKNOWN, 0, OK, 1500);
	assert_int_equal(l7_tracker__lookup(t, TGID, 2, SPORT, &v), 0);
	assert_int_equal(v.rpcs, 1);
	assert_int_equal(v.lat_sum, 500); /* from the first piece of the request */
	assert_int_equal(v.l4_role, 2);
	assert_int_equal(v.bytes_recv, strlen(REQ));
	assert_int_equal(v.segs_recv, 2);
	assert_int_equal(l7_tracker__lookup(t, TGID, 1, SPORT, &v), -ENOENT);
	l7_tracker__free(t);
}

/* close() ends a connection; a new socket on the same fd (another sk) replaces the old one even
 * when the close was not seen; a process exit drops its connections. */
GG_TEST(test_close_reuse_exit)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_ev ex = {.type = L7_EV_EXIT, .tgid = TGID};
	struct l7_key_values v;

	data_ev(t, TGID, 5, 1, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1000);
	assert_int_equal(nconns(t), 1);
	close_ev(t, TGID, 5, 1, 1100);
	assert_int_equal(nconns(t), 0);
	/* reuse: the request of sk 2 is not answered by what sk 3 receives */
	data_ev(t, TGID, 5, 2, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 2000);
	data_ev(t, TGID, 5, 3, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 2100);
	assert_int_equal(nconns(t), 1);
	data_ev(t, TGID, 5, 3, L7_DIR_RECV, L7_ROLE_CLIENT, 0, OK, 2300);
	assert_int_equal(l7_tracker__lookup(t, TGID, 1, SPORT, &v), 0);
	assert_int_equal(v.rpcs, 1);
	assert_int_equal(v.lat_sum, 200);
	data_ev(t, TGID, 6, 4, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 3000);
	data_ev(t, TGID + 1, 6, 5, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 3000);
	assert_int_equal(nconns(t), 3);
	assert_int_equal(l7_tracker__event(t, &ex, sizeof(ex)), 0);
	assert_int_equal(nconns(t), 1);
	l7_tracker__free(t);
}

/* Bytes that are no protocol of ours: given up after L7_INFER_TRIES chunks, counted once; TLS
 * records do not spend the tries and the SSL plaintext is what gets parsed (key with ssl 1, bytes
 * from the socket calls). */
GG_TEST(test_garbage_and_tls)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_tracker_stats st;
	struct l7_key_values v;

	for (int i = 0; i < L7_INFER_TRIES + 2; i++)
		data_ev(t, TGID, 9, 1, i % 2 ? L7_DIR_SEND : L7_DIR_RECV, L7_ROLE_SERVER, 0, "\x01\x02garbage",
			100 + i);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.untracked, 1);
	assert_int_equal(l7_tracker__lookup(t, TGID, 2, SPORT, &v), -ENOENT);

	for (int i = 0; i < L7_INFER_TRIES + 2; i++)
		data_ev(t, TGID, 10, 2, L7_DIR_RECV, L7_ROLE_SERVER, 0, "\x16\x03\x01\x02\x00hello", 100 + i);
	data_ev(t, TGID, 10, 2, L7_DIR_RECV, L7_ROLE_SERVER, L7_EF_ENCRYPTED, "", 1000);
	data_ev(t, TGID, 10, 2, L7_DIR_RECV, L7_ROLE_SERVER, L7_EF_SSL, REQ, 1001);
	data_ev(t, TGID, 10, 2, L7_DIR_SEND, L7_ROLE_SERVER, L7_EF_SSL, OK, 1301);
	data_ev(t, TGID, 10, 2, L7_DIR_SEND, L7_ROLE_SERVER, L7_EF_ENCRYPTED, "", 1302);
	assert_int_equal(l7_tracker__lookup(t, TGID, 2, SPORT, &v), 0);
	assert_int_equal(v.ssl, 1);
	assert_int_equal(v.rpcs, 1);
	assert_int_equal(v.lat_sum, 300);
	assert_int_equal(v.segs_recv, L7_INFER_TRIES + 2 + 1); /* the socket calls, not the SSL ones */
	assert_int_equal(v.segs_sent, 1);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.untracked, 1);
	l7_tracker__free(t);
}

/* At most max_conns connections and max_keys keys; the rest is counted. Keys without connections
 * go after L7_KEY_IDLE_NS. */
GG_TEST(test_bounds_and_key_aging)
{
	struct l7_tracker *t = l7_tracker__new(2, 1);
	struct l7_tracker_stats st;
	struct l7_key_values v;

	data_ev(t, TGID, 5, 1, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1000);
	data_ev(t, TGID, 6, 2, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1000);
	data_ev(t, TGID, 7, 3, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1000);
	data_ev(t, TGID + 1, 8, 4, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1000);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.conns, 2);
	assert_int_equal(st.conn_overflow, 2);
	close_ev(t, TGID, 6, 2, 1100);
	data_ev(t, TGID + 1, 8, 4, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 1200);
	data_ev(t, TGID + 1, 8, 4, L7_DIR_RECV, L7_ROLE_CLIENT, 0, OK, 1300);
	l7_tracker__stats(t, &st);
	assert_true(st.key_overflow >= 1); /* one key only: TGID's */
	assert_int_equal(l7_tracker__lookup(t, TGID + 1, 1, SPORT, &v), -ENOENT);

	/* TGID's last connection closes; the key stays while recent, goes once idle long enough */
	close_ev(t, TGID, 5, 1, 1400);
	l7_tracker__report(t, NULL, L7_SP_DEFAULT, 1.0, 2000);
	assert_int_equal(l7_tracker__lookup(t, TGID, 1, SPORT, &v), 0);
	l7_tracker__report(t, NULL, L7_SP_DEFAULT, 1.0, 2000 + L7_KEY_IDLE_NS);
	assert_int_equal(l7_tracker__lookup(t, TGID, 1, SPORT, &v), -ENOENT);
	/* a new process can have a key now */
	data_ev(t, TGID + 1, 8, 4, L7_DIR_SEND, L7_ROLE_CLIENT, 0, REQ, 3000 + L7_KEY_IDLE_NS);
	data_ev(t, TGID + 1, 8, 4, L7_DIR_RECV, L7_ROLE_CLIENT, 0, OK, 3100 + L7_KEY_IDLE_NS);
	assert_int_equal(l7_tracker__lookup(t, TGID + 1, 1, SPORT, &v), 0);
	assert_int_equal(v.rpcs, 1);
	l7_tracker__free(t);
}

/* Truncated or malformed events are counted, never read past. */
GG_TEST(test_bad_events)
{
	struct l7_tracker *t = l7_tracker__new(4, 4);
	struct l7_tracker_stats st;
	struct l7_ev h = {.type = L7_EV_DATA, .tgid = TGID, .fd = 3, .len = 100, .total = 100};
	uint8_t small[4] = {0};

	assert_int_equal(l7_tracker__event(t, small, sizeof(small)), 0);
	assert_int_equal(l7_tracker__event(t, &h, sizeof(h)), 0); /* len beyond the record */
	h.type = 99;
	assert_int_equal(l7_tracker__event(t, &h, sizeof(h)), 0);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.bad_events, 3);
	assert_int_equal(st.conns, 0);
	l7_tracker__free(t);
	l7_tracker__free(NULL);
}

/* One request and its response on fd 5 of TGID (client side) at ts, ts + lat. */
static void rpc_ev(struct l7_tracker *t, const char *req, const char *resp, uint64_t ts, uint64_t lat)
{
	data_ev(t, TGID, 5, 1, L7_DIR_SEND, L7_ROLE_CLIENT, 0, req, ts);
	data_ev(t, TGID, 5, 1, L7_DIR_RECV, L7_ROLE_CLIENT, 0, resp, ts + lat);
}

/* l7_rpc_api: paths normalised into rows, errors split client/server. */
GG_TEST(test_api_rows)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_api_values v;
	struct l7_tracker_stats st;
	static const char E500[] = "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n";

	rpc_ev(t, "GET /a/1 HTTP/1.1\r\n\r\n", OK, 1000, 100);
	rpc_ev(t, "GET /a/2?x=y HTTP/1.1\r\n\r\n", OK, 2000, 300);
	rpc_ev(t, "GET /b HTTP/1.1\r\n\r\n", NOTFOUND, 3000, 10);
	rpc_ev(t, "GET /b HTTP/1.1\r\n\r\n", E500, 4000, 10);
	assert_int_equal(l7_tracker__lookup_api(t, TGID, 1, SPORT, "GET /a/{id}", &v), 0);
	assert_int_equal(v.rpcs, 2);
	assert_int_equal(v.lat_sum, 400);
	assert_int_equal(v.errs, 0);
	assert_int_equal(l7_tracker__lookup_api(t, TGID, 1, SPORT, "GET /b", &v), 0);
	assert_int_equal(v.rpcs, 2);
	assert_int_equal(v.errs, 2);
	assert_int_equal(v.client_errs, 1);
	assert_int_equal(v.server_errs, 1);
	assert_int_equal(l7_tracker__lookup_api(t, TGID, 1, SPORT, "GET /a/1", &v), -ENOENT);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.apis, 2);
	assert_int_equal(st.api_overflow, 0);
	/* rows idle for long go */
	l7_tracker__report(t, NULL, L7_SP_DEFAULT, 1.0, 5000 + L7_KEY_IDLE_NS);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.apis, 0);
	l7_tracker__free(t);
}

/* A process past api_limit apis: the rest in one "__other__" row, counted; api_limit 0: no rows. */
GG_TEST(test_api_cap)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_api_values v;
	struct l7_tracker_stats st;
	char req[64];

	l7_tracker__set_api_limit(t, 3);
	for (int i = 0; i < 10; i++) {
		snprintf(req, sizeof(req), "GET /page%c HTTP/1.1\r\n\r\n", 'a' + i);
		rpc_ev(t, req, OK, 1000 * (uint64_t)(i + 1), 50);
	}
	rpc_ev(t, "GET /pagea HTTP/1.1\r\n\r\n", OK, 20000, 50); /* a row it has already */
	l7_tracker__stats(t, &st);
	assert_int_equal(st.apis, 4);
	assert_int_equal(st.api_overflow, 7);
	assert_int_equal(l7_tracker__lookup_api(t, TGID, 1, SPORT, "GET /pagea", &v), 0);
	assert_int_equal(v.rpcs, 2);
	assert_int_equal(l7_tracker__lookup_api(t, TGID, 1, SPORT, "__other__", &v), 0);
	assert_int_equal(v.rpcs, 7);
	/* a request whose api is literally __other__ is never a row of its own */
	l7_tracker__set_api_limit(t, 0);
	rpc_ev(t, "GET /pageb HTTP/1.1\r\n\r\n", OK, 30000, 50);
	l7_tracker__stats(t, &st);
	assert_int_equal(st.apis, 4);
	assert_int_equal(st.api_overflow, 7);
	l7_tracker__free(t);
}

struct spans {
	unsigned int n;
	struct l7_span last;
	char api[L7_API_MAX];
	int status;
	struct l7_trace *tr;
	unsigned int kept;
};

static void span_cb(void *ctx, const struct l7_span *sp)
{
	struct spans *s = ctx;

	s->n++;
	s->last = *sp;
	snprintf(s->api, sizeof(s->api), "%s", sp->api);
	s->status = sp->rpc->status;
	if (s->tr)
		s->kept += (unsigned int)l7_trace__want(s->tr, sp);
}

/* The span callback sees each request with its connection; the sampling rules keep errors and slow
 * requests at any rate, all at 1000 per mille, and at most max_per_s a second. */
GG_TEST(test_spans_sampling)
{
	struct l7_tracker *t = l7_tracker__new(16, 16);
	struct l7_trace *tr = l7_trace__new(NULL);
	struct spans s = {.tr = tr};
	struct l7_trace_conf c = {.permille = 0, .slow_ms = 1, .max_per_s = 1000};
	struct l7_trace_stats ts;

	assert_non_null(tr);
	l7_trace__set_conf(tr, &c);
	l7_tracker__set_span_cb(t, span_cb, &s);
	rpc_ev(t, "GET /u/42 HTTP/1.1\r\n\r\n", OK, 1000, 100);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.api, "GET /u/{id}");
	assert_int_equal(s.last.client_port, CPORT);
	assert_int_equal(s.last.server_port, SPORT);
	assert_int_equal(s.last.l7_role, 1);
	assert_int_equal(s.last.tgid, TGID);
	assert_int_equal(s.last.fd, 5);
	assert_int_equal(s.kept, 0);
	rpc_ev(t, "GET /u/43 HTTP/1.1\r\n\r\n", NOTFOUND, 2000, 100); /* error: kept */
	assert_int_equal(s.status, 404);
	assert_int_equal(s.kept, 1);
	rpc_ev(t, "GET /u/44 HTTP/1.1\r\n\r\n", OK, 3000, 1000000); /* slow (1 ms): kept */
	assert_int_equal(s.kept, 2);
	l7_trace__stats(tr, &ts);
	assert_int_equal(ts.sampled_out, 1);
	c.permille = 1000;
	c.slow_ms = 0;
	c.max_per_s = 5;
	l7_trace__set_conf(tr, &c);
	for (int i = 0; i < 10; i++)
		rpc_ev(t, "GET /v HTTP/1.1\r\n\r\n", OK, 10000 + 1000 * (uint64_t)i, 10);
	assert_int_equal(s.kept, 2 + 3); /* 2 + 3 in the same second as the first 2 */
	l7_trace__stats(tr, &ts);
	assert_int_equal(ts.dropped, 7);
	assert_int_equal(ts.sampled_out, 1);
	l7_trace__free(tr);
	l7_tracker__free(t);
}

/* The SLI tables: server side of their protocol only, one row per connection (Redis) or per
 * connection and statement type (PostgreSQL), forgotten after each report. */
GG_TEST(test_sli_rows)
{
	struct l7_sli *r = l7_sli__new(L7_SLI_REDIS), *p = l7_sli__new(L7_SLI_PG);
	struct l7_rpc rpc = {.req_ts_ns = 100, .resp_ts_ns = 300};
	uint8_t ip[16] = {127, 0, 0, 1};
	struct l7_span sp = {.rpc = &rpc,
			     .api = "SET",
			     .tgid = 1,
			     .fd = 7,
			     .family = AF_INET,
			     .client_ip = ip,
			     .server_ip = ip,
			     .l7_role = 2,
			     .proto = L7_PROTO_REDIS};

	l7_sli__span(r, &sp);
	sp.api = "GET";
	l7_sli__span(r, &sp);
	sp.fd = 8;
	l7_sli__span(r, &sp);
	sp.l7_role = 1; /* the client's view: not an SLI row */
	sp.fd = 9;
	l7_sli__span(r, &sp);
	assert_int_equal(l7_sli__rows(r), 2);
	sp.l7_role = 2;
	sp.proto = L7_PROTO_PGSQL;
	sp.api = "SELECT t";
	l7_sli__span(r, &sp); /* not Redis */
	assert_int_equal(l7_sli__rows(r), 2);
	l7_sli__span(p, &sp);
	sp.api = "SELECT u";
	l7_sli__span(p, &sp);
	sp.api = "INSERT t";
	l7_sli__span(p, &sp);
	assert_int_equal(l7_sli__rows(p), 2);
	l7_sli__report(r, NULL, 0);
	assert_int_equal(l7_sli__rows(r), 0);
	l7_sli__free(r);
	l7_sli__free(p);
	l7_sli__free(NULL);
}
