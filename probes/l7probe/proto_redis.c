/* proto_redis.c - Redis RESP2/RESP3 framing for l7probe: commands as arrays of bulk strings or inline,
 * replies of every RESP3 type (nested, attributes), bulk strings skipped by count, pipelining, -ERR and
 * !blob errors, push messages and RESP2 pub/sub messages told apart from replies. */
#include <string.h>
#include <strings.h>

#include "l7_proto_impl.h"

#define REDIS_PUBSUB	  1u /* session flag: a SUBSCRIBE was seen, RESP2 "message" arrays are pushes */
#define REDIS_BULK_MAX	  (1ll << 40)
#define REDIS_ELEMS_MAX	  (1ll << 32)
#define REDIS_LINE_MAX	  (64 * 1024)
#define REDIS_INLINE_ARGS 1024

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* A signed decimal filling p[0..n) exactly. */
static bool parse_int(const uint8_t *p, size_t n, int64_t *ret)
{
	int64_t v = 0;
	size_t i = 0;
	bool neg = false;

	if (n > 0 && (p[0] == '-' || p[0] == '+')) {
		neg = p[0] == '-';
		i = 1;
	}
	if (i == n || n - i > 18)
		return false;
	for (; i < n; i++) {
		if (!is_digit(p[i]))
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*ret = neg ? -v : v;
	return true;
}

static void upper_copy(char *dst, size_t max, const uint8_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n && i + 1 < max; i++) {
		uint8_t c = src[i];

		dst[i] = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
	}
	dst[i] = '\0';
}

static bool first_is(const struct l7_redis_dir *r, const char *const *names)
{
	for (; *names; names++)
		if (strcmp(r->first, *names) == 0)
			return true;
	return false;
}

static const char *const subscribe_cmds[] = {"SUBSCRIBE",    "PSUBSCRIBE",   "SSUBSCRIBE", "UNSUBSCRIBE",
					     "PUNSUBSCRIBE", "SUNSUBSCRIBE", NULL};
static const char *const pubsub_msgs[] = {"MESSAGE", "PMESSAGE", "SMESSAGE", NULL};

/* The top-level value of a message is complete. */
static void msg_complete(struct l7_session *s, enum l7_flow flow)
{
	struct l7_dir *d = &s->dir[flow];
	struct l7_redis_dir *r = &d->p.redis;
	struct l7_msg *m = &d->msg;

	if (flow == L7_FLOW_REQ) {
		l7__api_put(m->api, sizeof(m->api), r->first, sizeof(r->first));
		if (first_is(r, subscribe_cmds)) {
			/* one confirmation per channel named (at least one for a bare UNSUBSCRIBE) */
			m->aux = r->nargs > 1 ? r->nargs - 1 : 1;
			s->flags |= REDIS_PUBSUB;
		}
	} else if (first_is(r, subscribe_cmds) && (r->push || (s->flags & REDIS_PUBSUB))) {
		/* a subscription confirmation: the last one due answers the command */
		struct l7_pend *p = l7__pend_front(s);

		if (p && p->aux > 1) {
			p->aux--;
			m->ignore = true;
		}
	} else if (r->push || ((s->flags & REDIS_PUBSUB) && first_is(r, pubsub_msgs))) {
		m->ignore = true; /* out-of-band data, not a reply */
	}
	memset(r, 0, sizeof(*r));
	l7__msg_end(s, flow);
}

static void elem_done(struct l7_session *s, enum l7_flow flow)
{
	struct l7_redis_dir *r = &s->dir[flow].p.redis;

	r->first_pending = false;
	while (r->depth) {
		uint16_t bit = (uint16_t)(1u << (r->depth - 1));

		if (--r->rem[r->depth - 1] > 0)
			return;
		r->depth--;
		if (r->attr & bit) {
			/* an attribute annotates the value that follows; it is not one itself */
			r->attr &= (uint16_t)~bit;
			return;
		}
	}
	msg_complete(s, flow);
}

/* An inline command: words on one line. */
static long parse_inline(struct l7_session *s, const uint8_t *p, size_t e, size_t len, uint64_t ts)
{
	struct l7_redis_dir *r = &s->dir[L7_FLOW_REQ].p.redis;
	size_t i, w0 = 0, w1;
	uint32_t words = 0;

	for (i = 0; i < e; i++)
		if ((p[i] < 0x20 && p[i] != '\t') || p[i] >= 0x7f)
			return -1;
	while (w0 < e && (p[w0] == ' ' || p[w0] == '\t'))
		w0++;
	if (w0 == e)
		return (long)len; /* blank line: ignored by the server */
	for (w1 = w0; w1 < e && p[w1] != ' ' && p[w1] != '\t'; w1++)
		;
	for (i = w0; i < e && words < REDIS_INLINE_ARGS; words++) {
		while (i < e && p[i] != ' ' && p[i] != '\t')
			i++;
		while (i < e && (p[i] == ' ' || p[i] == '\t'))
			i++;
	}
	l7__msg_start(s, L7_FLOW_REQ, ts);
	memset(r, 0, sizeof(*r));
	upper_copy(r->first, sizeof(r->first), p + w0, w1 - w0);
	r->nargs = words;
	msg_complete(s, L7_FLOW_REQ);
	return (long)len;
}

static bool type_ok(uint8_t t)
{
	return strchr("+-:,#_($=!*%~>|", t) != NULL && t != '\0';
}

long l7__redis_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	struct l7_dir *d = &s->dir[flow];
	struct l7_redis_dir *r = &d->p.redis;
	const uint8_t *nl = memchr(p, '\n', n < REDIS_LINE_MAX ? n : REDIS_LINE_MAX);
	bool fresh = !d->msg.started;
	size_t len, e;
	uint8_t t = p[0];
	int64_t v = 0;

	if (!(fresh && flow == L7_FLOW_REQ && t != '*') && !type_ok(t))
		return -1;
	if (!nl) {
		if (fresh && flow == L7_FLOW_REQ && t != '*')
			for (size_t i = 0; i < n && i < 64; i++)
				if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\r') || p[i] >= 0x7f)
					return -1; /* binary: not an inline command */
		return n >= REDIS_LINE_MAX ? -1 : 0;
	}
	len = (size_t)(nl - p) + 1;
	e = len - 1;
	if (e > 0 && p[e - 1] == '\r')
		e--;
	if (fresh && flow == L7_FLOW_REQ && t != '*')
		return parse_inline(s, p, e, len, start_ts);
	switch (t) {
	case ':':
	case '(':
		if (!parse_int(p + 1, e - 1, &v) && t == ':')
			return -1;
		break;
	case '$':
	case '=':
	case '!':
	case '*':
	case '%':
	case '~':
	case '>':
	case '|':
		if (!parse_int(p + 1, e - 1, &v) || v < -1)
			return -1;
		if ((t == '$' || t == '=' || t == '!') ? v > REDIS_BULK_MAX : v > REDIS_ELEMS_MAX)
			return -1;
		break;
	default:
		break;
	}
	if (t == '$' || t == '=' || t == '!') {
		size_t k = 0;

		if (v >= 0 && r->first_pending) {
			/* the command name (or the reply's kind): wait until its first bytes are here */
			k = (size_t)v < sizeof(r->first) - 1 ? (size_t)v : sizeof(r->first) - 1;
			if (n < len + k && s->gap_follows)
				k = n - len; /* the rest was not captured */
			if (n < len + k)
				return 0;
		}
		if (fresh) {
			l7__msg_start(s, flow, start_ts);
			memset(r, 0, sizeof(*r));
			d->msg.error = t == '!';
		}
		if (k)
			upper_copy(r->first, sizeof(r->first), p + len, k);
		if (v >= 0)
			d->skip = (uint64_t)v + 2 - k;
		elem_done(s, flow);
		return (long)(len + k);
	}
	if (fresh) {
		l7__msg_start(s, flow, start_ts);
		memset(r, 0, sizeof(*r));
		d->msg.error = t == '-';
		r->push = t == '>';
	}
	if (strchr("*%~>|", t)) {
		if (v <= 0) {
			if (t != '|')
				elem_done(s, flow);
			return (long)len;
		}
		if (r->depth >= L7_REDIS_DEPTH)
			return -1;
		if (r->depth == 0 && (t == '*' || t == '>')) {
			r->first_pending = true;
			r->nargs = (uint32_t)(v < UINT32_MAX ? v : UINT32_MAX);
		}
		r->rem[r->depth] = (t == '%' || t == '|') ? 2 * v : v;
		if (t == '|')
			r->attr |= (uint16_t)(1u << r->depth);
		r->depth++;
		return (long)len;
	}
	elem_done(s, flow);
	return (long)len;
}

static bool digits_crlf(const uint8_t *p, size_t n, size_t *ret_len)
{
	size_t i = 0;

	if (i < n && p[i] == '-')
		i++;
	while (i < n && i < 12 && is_digit(p[i]))
		i++;
	if (i == 0 || i + 1 >= n || p[i] != '\r' || p[i + 1] != '\n')
		return false;
	*ret_len = i + 2;
	return true;
}

bool l7__redis_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	size_t k, k2, i;

	if (n < 3)
		return false;
	switch (p[0]) {
	case '*':
		/* a command: *<n>\r\n$<len>\r\n<letters>; a reply array of bulk strings looks the same and
		 * is taken for a request only when its first string is a word */
		if (!digits_crlf(p + 1, n - 1, &k) || p[1] == '-' || 1 + k >= n || p[1 + k] != '$' ||
		    !digits_crlf(p + 2 + k, n - 2 - k, &k2))
			return false;
		i = 2 + k + k2;
		if (i >= n || !((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z'))
			return false;
		*ret_flow = L7_FLOW_REQ;
		return true;
	case '+':
	case '-':
		/* +OK, +PONG, -ERR ..., -WRONGTYPE ...: a word in capitals, the line ended */
		if (!(p[1] >= 'A' && p[1] <= 'Z'))
			return false;
		for (i = 1; i < n && i < 512 && p[i] != '\r'; i++)
			if (p[i] < 0x20 || p[i] >= 0x7f)
				return false;
		if (i + 1 >= n || p[i] != '\r' || p[i + 1] != '\n')
			return false;
		*ret_flow = L7_FLOW_RESP;
		return true;
	case ':':
	case '$':
		if (!digits_crlf(p + 1, n - 1, &k))
			return false;
		*ret_flow = L7_FLOW_RESP;
		return true;
	default:
		return false;
	}
}
