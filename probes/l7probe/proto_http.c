/* proto_http.c - HTTP/1.0 and 1.1 framing for l7probe: request and status lines, the headers that
 * delimit a body (Content-Length, chunked), bodies skipped by count, 1xx, HEAD, 204/304, upgrades. */
#include <string.h>
#include <strings.h>

#include "l7_proto_impl.h"

enum { H_START = 0, H_HEADERS, H_CHUNK_SIZE, H_TRAILERS };

#define HTTP_AUX_HEAD	 1u
#define HTTP_AUX_CONNECT 2u
#define HTTP_AUX_H2C	 4u /* "Upgrade: h2c": a 101 switches the connection to HTTP/2 */
#define HTTP_METHOD_MAX	 16
#define HTTP_LEN_MAX	 (1ull << 50)
/* a line longer than this is not held whole: its start is read, the rest passed over */
#define HTTP_LINE_LONG 2048

static const char *const http_methods[] = {
	"GET ", "POST ", "PUT ", "DELETE ", "HEAD ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE ",
};

static bool is_upper(uint8_t c)
{
	return c >= 'A' && c <= 'Z';
}

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* A line that has not ended yet could still become a request line (method SP ...) or status line. */
static bool start_plausible(const uint8_t *p, size_t n, enum l7_flow flow)
{
	static const char status_prefix[] = "HTTP/1.";

	if (p[0] == '\r')
		return n == 1;
	if (flow == L7_FLOW_RESP) {
		size_t k = n < sizeof(status_prefix) - 1 ? n : sizeof(status_prefix) - 1;

		return memcmp(p, status_prefix, k) == 0;
	}
	for (size_t i = 0; i < n && i <= HTTP_METHOD_MAX; i++) {
		if (p[i] == ' ')
			return i > 0;
		if (!is_upper(p[i]) && p[i] != '-' && p[i] != '_')
			return false;
	}
	return n <= HTTP_METHOD_MAX;
}

static bool version_ok(const uint8_t *v, size_t n)
{
	return n == 8 && memcmp(v, "HTTP/1.", 7) == 0 && is_digit(v[7]);
}

/* "METHOD SP target SP HTTP/1.x" in line[0..n) (no line end); when !whole, the start of a line too
 * long to hold: the method and the start of the target. */
static int parse_request_line(struct l7_session *s, const uint8_t *line, size_t n, uint64_t ts, bool whole)
{
	struct l7_msg *m = &s->dir[L7_FLOW_REQ].msg;
	size_t sp1 = 0, sp2, tlen, k;

	while (sp1 < n && sp1 <= HTTP_METHOD_MAX && (is_upper(line[sp1]) || line[sp1] == '-' || line[sp1] == '_'))
		sp1++;
	if (sp1 == 0 || sp1 > HTTP_METHOD_MAX || sp1 >= n || line[sp1] != ' ')
		return -1;
	sp2 = n;
	while (whole && sp2 > sp1 && line[sp2 - 1] != ' ')
		sp2--;
	if (!whole)
		sp2 = n + 1;
	else if (sp2 <= sp1 + 1 || !version_ok(line + sp2, n - sp2))
		return -1;
	l7__msg_start(s, L7_FLOW_REQ, ts);
	if (sp1 == 4 && memcmp(line, "HEAD", 4) == 0)
		m->aux |= HTTP_AUX_HEAD;
	else if (sp1 == 7 && memcmp(line, "CONNECT", 7) == 0)
		m->aux |= HTTP_AUX_CONNECT;
	/* api: method and path, without the query string */
	for (tlen = 0; sp1 + 1 + tlen < sp2 - 1; tlen++) {
		uint8_t c = line[sp1 + 1 + tlen];

		if (c == '?' || c == '#' || c == ' ')
			break;
	}
	k = l7__api_put(m->api, sizeof(m->api), (const char *)line, sp1 + 1);
	l7__api_put(m->api + k, sizeof(m->api) - k, (const char *)line + sp1 + 1, tlen);
	return 0;
}

/* "HTTP/1.x SSS reason" in line[0..n). */
static int parse_status_line(struct l7_session *s, const uint8_t *line, size_t n, uint64_t ts)
{
	struct l7_msg *m = &s->dir[L7_FLOW_RESP].msg;
	int status;

	if (n < 12 || !version_ok(line, 8) || line[8] != ' ' || !is_digit(line[9]) || !is_digit(line[10]) ||
	    !is_digit(line[11]) || (n > 12 && line[12] != ' '))
		return -1;
	status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	if (status < 100)
		return -1;
	l7__msg_start(s, L7_FLOW_RESP, ts);
	m->status = status;
	m->error = status >= 400;
	return 0;
}

static bool name_is(const uint8_t *line, size_t colon, const char *name)
{
	return strlen(name) == colon && strncasecmp((const char *)line, name, colon) == 0;
}

static int hexval(uint8_t c)
{
	return is_digit(c) ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
}

/* W3C traceparent "00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>" into trace[24]; left as it
 * is (zeros) when malformed, or when an id is all zeros (invalid by the spec). */
static void parse_traceparent(uint8_t trace[24], const uint8_t *v, size_t n)
{
	uint8_t t[24] = {0}, any_t = 0, any_p = 0;

	if (n < 55 || v[0] != '0' || v[1] != '0' || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return;
	for (int i = 0; i < 24; i++) {
		size_t at = i < 16 ? 3 + 2 * (size_t)i : 36 + 2 * (size_t)(i - 16);
		int hi = hexval(v[at]), lo = hexval(v[at + 1]);

		if (hi < 0 || lo < 0)
			return;
		t[i] = (uint8_t)(hi << 4 | lo);
		if (i < 16)
			any_t |= t[i];
		else
			any_p |= t[i];
	}
	if (any_t && any_p)
		memcpy(trace, t, 24);
}

/* One header field line (no line end); m is the message's, for the request's trace context. */
static int parse_header(struct l7_http_dir *h, struct l7_msg *m, const uint8_t *line, size_t n)
{
	const uint8_t *colon;
	size_t c, i;

	if (line[0] == ' ' || line[0] == '\t')
		return 0; /* obsolete line folding: continues the previous field */
	colon = memchr(line, ':', n);
	if (!colon || colon == line)
		return -1;
	c = (size_t)(colon - line);
	for (i = 0; i < c; i++)
		if (line[i] <= ' ' || line[i] >= 0x7f)
			return -1;
	i = c + 1;
	while (i < n && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (name_is(line, c, "content-length")) {
		uint64_t v = 0;
		size_t d = 0;

		for (; i < n && is_digit(line[i]); i++, d++) {
			v = v * 10 + (uint64_t)(line[i] - '0');
			if (v > HTTP_LEN_MAX)
				return -1;
		}
		while (i < n && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (d == 0 || i != n)
			return -1;
		h->content_len = v;
		h->has_len = true;
	} else if (m && name_is(line, c, "upgrade")) {
		for (; i + 3 <= n; i++)
			if (strncasecmp((const char *)line + i, "h2c", 3) == 0 &&
			    (i + 3 == n || line[i + 3] == ',' || line[i + 3] == ' '))
				m->aux |= HTTP_AUX_H2C;
	} else if (m && name_is(line, c, "traceparent")) {
		parse_traceparent(m->trace, line + i, n - i);
	} else if (name_is(line, c, "transfer-encoding")) {
		/* chunked is the last coding when present; look for it anywhere, case-insensitively */
		for (; i + 7 <= n; i++)
			if (strncasecmp((const char *)line + i, "chunked", 7) == 0)
				h->chunked = true;
	}
	return 0;
}

/* The empty line after a message's headers: what follows, and when the message ends. */
static void headers_done(struct l7_session *s, enum l7_flow flow)
{
	struct l7_dir *d = &s->dir[flow];
	struct l7_http_dir *h = &d->p.http;
	struct l7_msg *m = &d->msg;

	h->state = H_START;
	if (flow == L7_FLOW_REQ) {
		/* queued now, so that its response can be read (HEAD) even while the body still flows */
		l7__req_commit(s);
		if (h->chunked) {
			h->state = H_CHUNK_SIZE;
			return;
		}
		if (h->has_len)
			d->skip = h->content_len;
		l7__msg_end(s, flow);
		return;
	}
	const struct l7_pend *req = l7__pend_front(s);
	uint32_t aux = req && !req->ignore ? req->aux : 0;
	int st = m->status;

	if (st < 200 && st != 101) {
		m->ignore = true; /* interim: the final response is still to come */
		l7__msg_end(s, flow);
		return;
	}
	if (st == 101 && (aux & HTTP_AUX_H2C)) {
		/* h2c: the answer to the request comes on stream 1, in HTTP/2 */
		m->ignore = true;
		s->upgrade_h2 = true;
		l7__msg_end(s, flow);
		return;
	}
	if (st == 101 || ((aux & HTTP_AUX_CONNECT) && st < 300)) {
		/* the connection now carries another protocol */
		s->opaque = true;
		l7__msg_end(s, flow);
		return;
	}
	if ((aux & HTTP_AUX_HEAD) || st == 204 || st == 304) {
		l7__msg_end(s, flow);
		return;
	}
	if (h->chunked) {
		h->state = H_CHUNK_SIZE;
		return;
	}
	if (h->has_len) {
		d->skip = h->content_len;
	} else {
		m->until_close = true;
		d->skip = UINT64_MAX;
	}
	l7__msg_end(s, flow);
}

long l7__http_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	struct l7_dir *d = &s->dir[flow];
	struct l7_http_dir *h = &d->p.http;
	const uint8_t *nl = memchr(p, '\n', n);
	size_t len, e;

	if (h->long_line) {
		if (!nl)
			return (long)n;
		h->long_line = false;
		return (long)(nl - p) + 1;
	}
	if (!nl) {
		if (h->state == H_START && !start_plausible(p, n, flow))
			return -1;
		if (n < HTTP_LINE_LONG)
			return 0;
		/* a huge URL or cookie: what matters is at the start of its line */
		if (h->state == H_START) {
			if (flow != L7_FLOW_REQ || parse_request_line(s, p, n, start_ts, false))
				return -1;
			memset(h, 0, sizeof(*h));
			h->state = H_HEADERS;
		} else if (h->state == H_HEADERS || h->state == H_TRAILERS) {
			const uint8_t *colon = memchr(p, ':', 64);

			if (!colon || name_is(p, (size_t)(colon - p), "content-length") ||
			    name_is(p, (size_t)(colon - p), "transfer-encoding"))
				return -1;
		} else {
			return -1;
		}
		h->long_line = true;
		return (long)n;
	}
	len = (size_t)(nl - p) + 1;
	e = len - 1;
	if (e > 0 && p[e - 1] == '\r')
		e--;
	switch (h->state) {
	case H_START:
		if (e == 0)
			return (long)len; /* blank lines between messages are tolerated */
		if (flow == L7_FLOW_REQ ? parse_request_line(s, p, e, start_ts, true)
					: parse_status_line(s, p, e, start_ts))
			return -1;
		memset(h, 0, sizeof(*h));
		h->state = H_HEADERS;
		return (long)len;
	case H_HEADERS:
		if (e == 0) {
			headers_done(s, flow);
			return (long)len;
		}
		if (parse_header(h, flow == L7_FLOW_REQ ? &s->dir[L7_FLOW_REQ].msg : NULL, p, e))
			return -1;
		return (long)len;
	case H_CHUNK_SIZE: {
		uint64_t v = 0;
		size_t i = 0;

		for (; i < e; i++) {
			uint8_t c = p[i];
			int x = is_digit(c)				 ? c - '0'
				: (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
									 : -1;

			if (x < 0)
				break;
			v = v * 16 + (uint64_t)x;
			if (v > HTTP_LEN_MAX)
				return -1;
		}
		if (i == 0 || (i < e && p[i] != ';' && p[i] != ' ' && p[i] != '\t'))
			return -1;
		if (v == 0)
			h->state = H_TRAILERS;
		else
			d->skip = v + 2; /* the data and its CRLF */
		return (long)len;
	}
	case H_TRAILERS:
		if (e == 0) {
			h->state = H_START;
			l7__msg_end(s, flow);
		}
		return (long)len;
	}
	return -1;
}

bool l7__http_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	if (n >= 13 && memcmp(p, "HTTP/1.", 7) == 0 && (p[7] == '0' || p[7] == '1') && p[8] == ' ' && is_digit(p[9]) &&
	    is_digit(p[10]) && is_digit(p[11]) && (p[12] == ' ' || p[12] == '\r')) {
		*ret_flow = L7_FLOW_RESP;
		return true;
	}
	for (size_t i = 0; i < sizeof(http_methods) / sizeof(http_methods[0]); i++) {
		size_t k = strlen(http_methods[i]);

		if (n > k && memcmp(p, http_methods[i], k) == 0 && p[k] > ' ' && p[k] < 0x7f) {
			*ret_flow = L7_FLOW_REQ;
			return true;
		}
	}
	return false;
}
