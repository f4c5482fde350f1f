/* l7_proto_impl.h - what the protocol modules (proto_*.c) share with l7_proto.c: the session's layout,
 * per-direction framing state, and the helpers that start, commit and end messages. Not for callers. */
#ifndef GG_L7_PROTO_IMPL_H
#define GG_L7_PROTO_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l7_proto.h"

/* Prepared statements remembered per session (name or id -> statement type and table), oldest replaced. */
#define L7_STMTS 8

/* Most bytes of one unit (an HTTP line, a message header with the prefix a parser reads) held across
 * chunks; a longer unit is unparsable. Only a unit that spans chunks is copied. */
#define L7_BUF_MAX 8192
/* Deepest RESP nesting followed; deeper is unparsable. */
#define L7_REDIS_DEPTH 16

/* A request waiting for its response. */
struct l7_pend {
	uint64_t ts_ns;
	uint64_t bytes;
	uint64_t seq;  /* identifies it while its body still flows (bytes grow) */
	uint32_t aux;  /* the protocol's own: HTTP HEAD/CONNECT, MySQL command, DNS id, Redis replies due */
	uint32_t aux2; /* Kafka: api_key << 16 | api_version (how to read the response) */
	bool ignore;   /* a handshake step: its response is consumed silently */
	char api[L7_API_MAX];
	uint8_t trace[24]; /* the request's trace context (l7_rpc.trace) */
};

/* The message being read in one direction. */
struct l7_msg {
	uint64_t ts_ns;	   /* its first byte */
	uint64_t bytes;	   /* wire bytes so far */
	uint64_t pend_seq; /* request: the pending entry it was committed as */
	bool started;
	bool end;	  /* ends once the bytes being consumed and d->skip are passed */
	bool committed;	  /* request: already queued */
	bool ignore;	  /* request: expects no response; response: not one (push, 1xx) */
	bool hs;	  /* request: a handshake step (queued with ignore) */
	bool until_close; /* response: its body ends with the connection */
	bool until_req;	  /* response: its end fell in a gap; taken to end before the next request */
	int error;
	int status;
	uint32_t aux;
	uint32_t aux2;
	char api[L7_API_MAX];
	uint8_t trace[24]; /* request: its trace context (HTTP traceparent), zeros when none */
};

struct l7_http_dir {
	uint8_t state;
	bool chunked, has_len;
	bool long_line; /* passing over the rest of a line too long to hold */
	uint64_t content_len;
};

struct l7_redis_dir {
	uint8_t depth;
	bool first_pending; /* the next bulk string is the first element of the top-level array */
	bool push;	    /* top level is a RESP3 push */
	uint16_t attr;	    /* bit per level: an attribute map (not an element of its parent) */
	int64_t rem[L7_REDIS_DEPTH];
	uint32_t nargs; /* request: elements of the top-level array */
	char first[32]; /* first bulk string of the top-level array, upper-cased */
};

struct l7_pgsql_dir {
	bool in_ext; /* request: inside an extended-query batch (until Sync) */
};

struct l7_mysql_dir {
	uint8_t state;
	bool cont;	  /* the previous packet was 16 MiB - 1: this one continues it */
	bool fresh;	  /* prepare: no definition read yet in this block (an EOF may end the previous one) */
	uint8_t phase;	  /* prepare: 0 reading parameter definitions, 1 column definitions */
	uint8_t last_seq; /* sequence id of the last response packet */
	uint64_t left;	  /* column definitions or parameters still due */
	uint32_t cols;	  /* prepare: columns after the parameters */
};

/* One direction of a session. */
struct l7_dir {
	uint8_t *buf; /* reassembly of a unit that spans chunks; allocated on first need */
	uint32_t buf_len, buf_cap;
	uint64_t buf_ts;  /* timestamp of buf[0] */
	uint64_t skip;	  /* bytes to pass over by count (bodies), captured or not */
	uint64_t last_ts; /* timestamp of the last chunk fed */
	struct l7_msg msg;
	union {
		struct l7_http_dir http;
		struct l7_redis_dir redis;
		struct l7_pgsql_dir pgsql;
		struct l7_mysql_dir mysql;
	} p;
};

struct l7_session;

struct l7_proto_ops {
	/*
	 * Read one unit at p[0..n) (n > 0; start_ts is p[0]'s timestamp): return the bytes consumed (> 0)
	 * after updating the direction's state (it may set d->skip, start, commit or end the message),
	 * 0 when the unit needs more than n bytes (state untouched), -1 when p is not this protocol
	 * (state untouched; the session resynchronises).
	 */
	long (*parse)(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
	/* Or (parse NULL), for a protocol whose requests and responses are read apart: one parser each. */
	long (*parse_req)(struct l7_session *s, const uint8_t *p, size_t n, uint64_t start_ts);
	long (*parse_resp)(struct l7_session *s, const uint8_t *p, size_t n, uint64_t start_ts);
	/* UDP: one whole datagram (captured prefix p[0..n) of total bytes). NULL: no UDP. */
	void (*datagram)(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t total,
			 uint64_t ts);
	/* Responses are matched by msg.aux == pend.aux (DNS id), not in order. */
	bool match_by_id;
	/* Pending requests full: drop the oldest (unanswered datagrams) instead of the newest. */
	bool evict_oldest;
	/* Optional hooks of a protocol with state of its own (s->ext; HTTP/2's streams and HPACK tables):
	 * finish replaces l7__msg_finish's matching (the message of flow ended: msg.end and its skip passed),
	 * desync is told that flow lost its place (after the shared state was reset), close that the
	 * connection closed (s->cb set), destroy frees s->ext, mem counts its heap bytes. */
	void (*finish)(struct l7_session *s, enum l7_flow flow);
	void (*desync)(struct l7_session *s, enum l7_flow flow);
	void (*close)(struct l7_session *s);
	void (*destroy)(struct l7_session *s);
	size_t (*mem)(const struct l7_session *s);
};

struct l7_session {
	const struct l7_proto_ops *ops;
	enum l7_proto proto;
	enum l7_transport transport;
	bool opaque;	 /* no longer this protocol (HTTP upgrade, tunnel): bytes only counted */
	bool upgrade_h2; /* HTTP/1.1 switched to h2c (101): HTTP/2 from the next byte on */
	uint32_t flags;	 /* the protocol's own, session-wide (MySQL: EOF packets deprecated or not) */
	struct l7_dir dir[2];
	struct {
		uint32_t key; /* statement name hash (PostgreSQL), statement id (MySQL) */
		char kw[44];  /* "SELECT table" (l7_api__sql) */
	} stmt[L7_STMTS];
	uint8_t stmt_next;
	struct l7_pend *pend; /* ring: pend_cap grows by doubling up to L7_PENDING_MAX */
	uint32_t pend_cap, pend_head, pend_cnt;
	uint64_t pend_seq;
	struct l7_session_stats st;
	void *ext; /* the protocol's own state (ops->destroy frees it) */
	/* during one feed */
	bool gap_follows; /* bytes not captured follow the end of what parse() is given: take a prefix */
	l7_rpc_cb cb;
	void *ctx;
	uint64_t ts_ns;
};

/* The protocols' entry points (struct l7_proto_ops), gathered in one table in l7_proto.c. */
long l7__http_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
long l7__pgsql_parse_req(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts);
long l7__pgsql_parse_resp(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts);
long l7__mysql_parse_req(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts);
long l7__mysql_parse_resp(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts);
long l7__redis_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
long l7__dns_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
void l7__dns_datagram(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t total, uint64_t ts);
long l7__kafka_parse_req(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts);
long l7__kafka_parse_resp(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts);
long l7__mongo_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
long l7__rocketmq_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
long l7__http2_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts);
void l7__http2_finish(struct l7_session *s, enum l7_flow flow);
void l7__http2_desync(struct l7_session *s, enum l7_flow flow);
void l7__http2_close(struct l7_session *s);
void l7__http2_destroy(struct l7_session *s);
size_t l7__http2_mem(const struct l7_session *s);

/* The session became HTTP/2 by an h2c upgrade (RFC 7540 3.2): req (NULL if not seen) is the HTTP/1.1
 * request that asked, answered on stream 1. */
void l7__http2_upgraded(struct l7_session *s, const struct l7_pend *req);

/* Report one request with its response (protocols that match by their own means: HTTP/2 streams). */
void l7__rpc_report(struct l7_session *s, const struct l7_rpc *rpc);

/* The i-th request waiting (0 = oldest); NULL when i >= pend_cnt. */
struct l7_pend *l7__pend_at(struct l7_session *s, uint32_t i);
/* Drop the n oldest waiting requests as never answered (req_lost, handshake steps not counted). */
void l7__pend_drop(struct l7_session *s, uint32_t n);

/* Start a new message in direction flow; its first byte was seen at ts. */
void l7__msg_start(struct l7_session *s, enum l7_flow flow, uint64_t ts);
/* The message ends once the unit being parsed and any skip set are passed. */
void l7__msg_end(struct l7_session *s, enum l7_flow flow);
/* Queue the request being read now (before its end: its body's bytes are still added to it). */
void l7__req_commit(struct l7_session *s);
/* The oldest request waiting for a response, NULL when none. */
struct l7_pend *l7__pend_front(struct l7_session *s);
/* The message finished: queue it (request) or match and report it (response). */
void l7__msg_finish(struct l7_session *s, enum l7_flow flow);

/* Prepared statements: remember the keyword of statement key, find it (NULL when unknown), forget it. */
void l7__stmt_put(struct l7_session *s, uint32_t key, const char *kw);
const char *l7__stmt_get(const struct l7_session *s, uint32_t key);
void l7__stmt_del(struct l7_session *s, uint32_t key);
/* FNV-1a of p[0..n), never 0 (0 marks a free slot). */
uint32_t l7__hash(const uint8_t *p, size_t n);

/* Copy text into an api string: at most max - 1 bytes of src, stops at NUL. Returns bytes written. */
size_t l7__api_put(char *dst, size_t max, const char *src, size_t n);

/* Inference checks, each: does p look like the start of a request or of a response of its protocol? */
bool l7__http_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__redis_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__pgsql_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__mysql_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__kafka_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__mongo_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__rocketmq_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
/* HTTP/2: the client's connection preface or the server's first SETTINGS (strong); mid: a HEADERS
 * frame whose header block starts with a pseudo-header (a connection older than the capture; weaker,
 * checked last). */
bool l7__http2_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__http2_infer_mid(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
bool l7__dns_infer(const uint8_t *p, size_t n, enum l7_transport transport, uint16_t port, enum l7_flow *ret_flow);

static inline uint16_t l7__be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t l7__le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline uint32_t l7__be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
