/* proto_pgsql.c - PostgreSQL frontend/backend protocol v3 for l7probe: startup, SSLRequest and auth
 * consumed silently, simple Query, extended query (Parse/Bind/Describe/Execute... up to Sync) as one
 * request ended by ReadyForQuery, ErrorResponse as error, api = first SQL keyword. */
#include <string.h>

#include "l7_api.h"
#include "l7_proto_impl.h"

#define PG_STARTUP_V3  0x00030000u
#define PG_SSL_REQUEST 80877103u
#define PG_GSS_REQUEST 80877104u
#define PG_CANCEL      80877102u
#define PG_STARTUP_MAX 10000u
#define PG_MSG_MAX     (1u << 30)
#define PG_SQL_PREFIX  256 /* bytes of a query read for its statement type and table */
#define PG_AUX_SSLREQ  1u

static bool frontend_type(uint8_t t)
{
	return t && strchr("QPBEDCHSFXdcfp", t);
}

static bool backend_type(uint8_t t)
{
	return t && strchr("RKSZTDCENIGHWdcA12356nstvV", t);
}

/* Shortest length (self included) a message of type t can have: what keeps garbage that happens to
 * start with a type letter from being taken for a message and skipped by a random length. */
static uint32_t min_len(enum l7_flow flow, uint8_t t)
{
	if (flow == L7_FLOW_REQ) {
		switch (t) {
		case 'Q':
			return 5; /* the text's NUL */
		case 'P':
			return 8; /* two NULs, a parameter count */
		case 'B':
			return 12;
		case 'E':
			return 9;
		case 'D':
		case 'C':
			return 6;
		default:
			return 4;
		}
	}
	switch (t) {
	case 'Z':
		return 5;
	case 'R':
	case 'E':
	case 'N':
		return 8;
	case 'K':
		return 12;
	case 'S':
	case 'C':
	case 'T':
	case 't':
	case 'D':
		return 6;
	default:
		return 4;
	}
}

/* Types whose length is fixed at 4 (no body). */
static bool bodiless(enum l7_flow flow, uint8_t t)
{
	return strchr(flow == L7_FLOW_REQ ? "SHXc" : "123nsI", t) != NULL;
}

/* Untyped first message: startup, SSL or GSS encryption request, cancel. */
static long parse_startup(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_msg *m = &s->dir[L7_FLOW_REQ].msg;
	uint32_t len, code;

	if (n < 8)
		return 0;
	len = l7__be32(p);
	code = l7__be32(p + 4);
	if (len < 8 || len > PG_STARTUP_MAX)
		return -1;
	if (code == PG_CANCEL && len == 16) {
		s->dir[L7_FLOW_REQ].skip = len - 8; /* answered by closing the connection */
		return 8;
	}
	if (code != PG_STARTUP_V3 && !((code == PG_SSL_REQUEST || code == PG_GSS_REQUEST) && len == 8))
		return -1;
	/* a handshake step: its answer (one byte, or authentication up to ReadyForQuery) is not a request's */
	l7__msg_start(s, L7_FLOW_REQ, ts);
	m->hs = true;
	m->aux = code == PG_STARTUP_V3 ? 0 : PG_AUX_SSLREQ;
	s->dir[L7_FLOW_REQ].skip = len - 8;
	l7__msg_end(s, L7_FLOW_REQ);
	return 8;
}

long l7__pgsql_parse_req(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_dir *d = &s->dir[L7_FLOW_REQ];
	struct l7_msg *m = &d->msg;
	size_t body, take = 0;
	uint32_t len;
	uint8_t t = p[0];

	if (t == 0 && !m->started)
		return parse_startup(s, p, n, ts);
	if (!frontend_type(t))
		return -1;
	if (n < 5)
		return 0;
	len = l7__be32(p + 1);
	if (len < min_len(L7_FLOW_REQ, t) || len > PG_MSG_MAX || (bodiless(L7_FLOW_REQ, t) && len != 4))
		return -1;
	body = len - 4;
	if (t == 'Q' || t == 'P' || t == 'B') {
		/* read the start of the SQL text for its keyword, of a Bind for its statement's name */
		take = body < PG_SQL_PREFIX ? body : PG_SQL_PREFIX;
		if (n < 5 + take && s->gap_follows)
			take = n - 5; /* the rest was not captured: the keyword from what was */
		if (n < 5 + take)
			return 0;
	}
	switch (t) {
	case 'd':
	case 'c':
	case 'f':
	case 'p':
		/* COPY data from the client, password and SASL messages: part of an exchange under way */
		break;
	case 'X':
		/* Terminate: never answered */
		break;
	case 'Q':
	case 'F':
		if (m->started) /* an unfinished extended batch: what the server answers ends it anyway */
			memset(m, 0, sizeof(*m));
		l7__msg_start(s, L7_FLOW_REQ, ts);
		if (t == 'Q')
			l7_api__sql(m->api, sizeof(m->api), p + 5, take);
		else
			l7__api_put(m->api, sizeof(m->api), "FUNCTION", 8);
		if (!m->api[0])
			l7__api_put(m->api, sizeof(m->api), "QUERY", 5);
		l7__msg_end(s, L7_FLOW_REQ);
		break;
	default:
		/* extended query: Parse, Bind, Describe, Execute, Close, Flush accumulate until Sync */
		if (!m->started)
			l7__msg_start(s, L7_FLOW_REQ, ts);
		if (t == 'P' && take) {
			const uint8_t *q = memchr(p + 5, '\0', take); /* statement name, then the query */
			char kw[L7_API_MAX];

			if (q) {
				l7_api__sql(kw, sizeof(kw), q + 1, (size_t)(p + 5 + take - q - 1));
				if (!m->api[0])
					l7__api_put(m->api, sizeof(m->api), kw, sizeof(kw));
				l7__stmt_put(s, l7__hash(p + 5, (size_t)(q - p - 5)), kw);
			}
		} else if (t == 'B' && take && !m->api[0]) {
			/* portal name, then the prepared statement's: named by its Parse, maybe long before */
			const uint8_t *a = memchr(p + 5, '\0', take);
			const uint8_t *b = a ? memchr(a + 1, '\0', (size_t)(p + 5 + take - a - 1)) : NULL;
			const char *kw = b ? l7__stmt_get(s, l7__hash(a + 1, (size_t)(b - a - 1))) : NULL;

			if (kw)
				l7__api_put(m->api, sizeof(m->api), kw, strlen(kw));
		}
		if (t == 'S') {
			if (!m->api[0])
				l7__api_put(m->api, sizeof(m->api), t == 'S' && m->bytes ? "EXECUTE" : "SYNC", 7);
			l7__msg_end(s, L7_FLOW_REQ);
		}
		break;
	}
	d->skip = body - take;
	return (long)(5 + take);
}

long l7__pgsql_parse_resp(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_dir *d = &s->dir[L7_FLOW_RESP];
	struct l7_msg *m = &d->msg;
	const struct l7_pend *front = l7__pend_front(s);
	uint32_t len;
	uint8_t t = p[0];

	if (!m->started && front && front->ignore && front->aux == PG_AUX_SSLREQ) {
		/* the one-byte answer to SSLRequest/GSSENCRequest: S or G (encryption follows), N (no) */
		if (t != 'S' && t != 'N' && t != 'G')
			return -1;
		l7__msg_start(s, L7_FLOW_RESP, ts);
		l7__msg_end(s, L7_FLOW_RESP);
		return 1;
	}
	if (!backend_type(t))
		return -1;
	if (n < 5)
		return 0;
	len = l7__be32(p + 1);
	if (len < min_len(L7_FLOW_RESP, t) || len > PG_MSG_MAX || (t == 'Z' && len != 5) ||
	    (bodiless(L7_FLOW_RESP, t) && len != 4))
		return -1;
	if (!m->started) {
		if (!front && (t == 'N' || t == 'S' || t == 'A')) {
			/* notice, parameter change, notification between requests: nobody's answer */
			d->skip = len - 4;
			return 5;
		}
		l7__msg_start(s, L7_FLOW_RESP, ts);
	}
	if (t == 'E')
		m->error = 1;
	if (t == 'Z')
		l7__msg_end(s, L7_FLOW_RESP);
	d->skip = len - 4;
	return 5;
}

bool l7__pgsql_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t len, code;
	size_t i;

	if (n < 8)
		return false;
	len = l7__be32(p);
	code = l7__be32(p + 4);
	/* startup (protocol 3.0 and a user parameter), SSLRequest, GSSENCRequest */
	if (p[0] == 0) {
		if ((code == PG_SSL_REQUEST || code == PG_GSS_REQUEST) && len == 8 && n == 8) {
			*ret_flow = L7_FLOW_REQ;
			return true;
		}
		if (code == PG_STARTUP_V3 && len >= 8 && len <= PG_STARTUP_MAX && (len == n || n >= 32) && n >= 13 &&
		    memmem(p + 8, (len < n ? len : n) - 8, "user\0", 5)) {
			*ret_flow = L7_FLOW_REQ;
			return true;
		}
		return false;
	}
	/* a simple query: 'Q', its length, SQL text ending with NUL exactly at the end */
	len = l7__be32(p + 1);
	if (p[0] == 'Q' && len + 1 == n && len > 5 && p[n - 1] == '\0') {
		for (i = 5; i + 1 < n; i++)
			if (p[i] == 0)
				return false;
		*ret_flow = L7_FLOW_REQ;
		return true;
	}
	/* the server's answer to a startup: AuthenticationXXX with a known code */
	if (p[0] == 'R' && n >= 9 && len >= 8 && len <= 2048) {
		code = l7__be32(p + 5);
		if (code == 0 || code == 2 || code == 3 || code == 5 || (code >= 7 && code <= 12)) {
			*ret_flow = L7_FLOW_RESP;
			return true;
		}
	}
	/* a whole response: backend messages back to back up to ReadyForQuery at the very end */
	for (i = 0; i + 5 <= n;) {
		len = l7__be32(p + i + 1);
		if (!backend_type(p[i]) || len < 4 || len > n)
			return false;
		if (p[i] == 'Z') {
			if (len == 5 && i + 6 == n && (p[i + 5] == 'I' || p[i + 5] == 'T' || p[i + 5] == 'E')) {
				*ret_flow = L7_FLOW_RESP;
				return true;
			}
			return false;
		}
		i += 1 + (size_t)len;
	}
	return false;
}
