/* l7_proto.h - l7probe's protocol layer: inference from a connection's first bytes, message framing
 * and request/response matching per protocol. Pure user space: no I/O, no BPF, no logging. */
#ifndef GG_L7_PROTO_H
#define GG_L7_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Protocols, also the bit positions of a mask of enabled ones (1u << proto). Names as in the REST
 * parameter l7_protocol: "http", "pgsql", "mysql", "redis", "dns", "kafka", "mongo",
 * "rocketmq"; "http2" is enabled
 * with "http" (gala-gopher's l7_protocol has no name of its own for it). */
enum l7_proto {
	L7_PROTO_UNKNOWN = 0,
	L7_PROTO_HTTP,
	L7_PROTO_PGSQL,
	L7_PROTO_MYSQL,
	L7_PROTO_REDIS,
	L7_PROTO_DNS,
	L7_PROTO_KAFKA,
	L7_PROTO_MONGO,
	L7_PROTO_HTTP2, /* HTTP/2 and gRPC over it (gala-gopher's name: "http2") */
	L7_PROTO_ROCKETMQ,
	L7_PROTO__COUNT,
};

/* Which way bytes flow, in protocol terms (the connection tracker maps send/recv and the process's
 * role onto this). */
enum l7_flow {
	L7_FLOW_REQ = 0,  /* client -> server */
	L7_FLOW_RESP = 1, /* server -> client */
};

enum l7_transport {
	L7_TRANSPORT_TCP = 0, /* a byte stream: messages may be split across and packed into chunks */
	L7_TRANSPORT_UDP = 1, /* datagrams: each chunk is one whole message */
};

#define L7_API_MAX 64

/* One request with its response. */
struct l7_rpc {
	uint64_t req_ts_ns;  /* timestamp of the chunk holding the request's first byte */
	uint64_t resp_ts_ns; /* timestamp of the chunk holding the response's last byte */
	uint64_t req_bytes;  /* wire size of the request (including bytes not captured) */
	uint64_t resp_bytes; /* wire size of the response */
	int error;	     /* 1 when the response says the request failed (see each parser) */
	int status; /* HTTP status, DNS rcode, MySQL/Kafka/MongoDB/RocketMQ error code, gRPC status, 0 when none */
	char api[L7_API_MAX]; /* "GET /path" (query string cut; HTTP/2 and gRPC: :method :path), "SELECT",
			       * "SET", "A example.org", ... */
	/* W3C trace context the request carried (HTTP traceparent): trace-id (16 bytes) then parent-id
	 * (8 bytes); all zero when none. */
	uint8_t trace[24];
};

typedef void (*l7_rpc_cb)(void *ctx, const struct l7_rpc *rpc);

/* Counters of what a session could not account for (cumulative). */
struct l7_session_stats {
	uint64_t rpcs;		 /* requests matched with a response and reported */
	uint64_t unparsable;	 /* chunks (or parts) that matched no message of the protocol; a resync followed */
	uint64_t resp_unmatched; /* responses with no pending request (capture started mid-request, lost data) */
	uint64_t req_overflow;	 /* requests dropped because too many were pending (L7_PENDING_MAX) */
	uint64_t gap_bytes;	 /* bytes the session was told about but never given (truncated capture) */
	uint64_t req_lost;	 /* requests dropped unanswered: their response was unparsable (or, DNS, never came) */
	uint64_t resp_end_guessed; /* responses whose end fell in a gap, taken to end at their last chunk before
				    * the next request (reported; only when that request was the one waiting) */
	uint64_t hpack_unresolved; /* HTTP/2 header fields that referred to HPACK dynamic table entries not
				    * seen (capture started mid-connection, a header block lost in a gap) */
};

/* Most requests a session keeps waiting for their responses (pipelining); more are counted and dropped. */
#define L7_PENDING_MAX 256

/* Name of a protocol ("http", ...), "unknown" for anything else. */
const char *l7_proto__name(enum l7_proto proto);
/* Protocol by name; L7_PROTO_UNKNOWN when there is none of that name. */
enum l7_proto l7_proto__by_name(const char *name);

/*
 * Guess a connection's protocol from the first chunk seen in one direction, among the protocols of
 * enabled_mask (1u << proto). On a match, *ret_flow says whether the bytes are a request (the sender
 * is the client) or a response (the sender is the server). L7_PROTO_UNKNOWN when nothing matches
 * (the tracker may try again with the next chunk, a bounded number of times). len is what was
 * captured (a prefix); port is the server port when known (0 when not), used only as a hint to break
 * ties (e.g. 53 for DNS), never alone.
 */
enum l7_proto l7_infer(const uint8_t *buf, size_t len, enum l7_transport transport, uint16_t port,
		       unsigned int enabled_mask, enum l7_flow *ret_flow);

/* One connection's parsing and matching state, both directions. */
struct l7_session;

/* NULL + errno (EINVAL for an unknown protocol, ENOMEM). */
struct l7_session *l7_session__new(enum l7_proto proto, enum l7_transport transport);
/* Accepts NULL. */
void l7_session__free(struct l7_session *s);

/*
 * Feed one chunk that flowed in direction flow at ts_ns. data[0..len) are the bytes captured; total
 * (>= len) is how many bytes the syscall really moved: the last total - len bytes are a gap (not
 * captured) that the parser skips by count (a body) or, when the gap falls where it needed to read
 * (a header), counts as unparsable and resynchronises (except a response whose request is the only
 * one waiting: it is then taken to end at its last chunk before the next request, see
 * resp_end_guessed). Calls cb(ctx, rpc) for each request whose response completed in this chunk (or,
 * for such a response, when the next request's chunk is fed), in request order (DNS: as answered).
 * The rpc passed to cb is valid only during the call. Memory held per session is
 * bounded (at most L7_PENDING_MAX pending requests, bounded reassembly buffers) whatever is fed.
 * Returns 0, or -EINVAL for bad arguments; bad protocol data is never an error, only counted.
 */
int l7_session__feed(struct l7_session *s, enum l7_flow flow, const uint8_t *data, size_t len, uint64_t total,
		     uint64_t ts_ns, l7_rpc_cb cb, void *ctx);

/* The session's counters. */
void l7_session__stats(const struct l7_session *s, struct l7_session_stats *ret);
/* The session's protocol now (HTTP/1 becomes HTTP/2 after an h2c upgrade). */
enum l7_proto l7_session__proto(const struct l7_session *s);

/*
 * The connection closed at ts_ns: a response whose end is the close (HTTP without Content-Length or
 * chunked) completes now, and one whose end fell in a gap completes at its last chunk; both are
 * reported through cb. Optional: without it such a response is never reported. The session stays usable (and keeps
 * counting) until freed. -EINVAL for bad arguments.
 */
int l7_session__close(struct l7_session *s, uint64_t ts_ns, l7_rpc_cb cb, void *ctx);

/* Bytes of heap the session holds now (itself, reassembly buffers, the pending queue): bounded. */
size_t l7_session__mem(const struct l7_session *s);

#endif
