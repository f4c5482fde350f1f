/* l7_proto.c - l7probe's protocol layer, the parts every protocol shares: names, inference dispatch,
 * per-direction framing (reassembly of units that span chunks, bodies skipped by count across gaps,
 * resynchronisation), the pending-request queue and request/response matching. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "l7_proto_impl.h"
#include "probe_array.h"

static const char *const l7_names[L7_PROTO__COUNT] = {
	[L7_PROTO_UNKNOWN] = "unknown",	  [L7_PROTO_HTTP] = "http",   [L7_PROTO_PGSQL] = "pgsql",
	[L7_PROTO_MYSQL] = "mysql",	  [L7_PROTO_REDIS] = "redis", [L7_PROTO_DNS] = "dns",
	[L7_PROTO_KAFKA] = "kafka",	  [L7_PROTO_MONGO] = "mongo", [L7_PROTO_HTTP2] = "http2",
	[L7_PROTO_ROCKETMQ] = "rocketmq",
};

/* Each protocol's parser and how its requests and responses are paired (L7_PROTO_UNKNOWN: none). */
static const struct l7_proto_ops l7_ops[L7_PROTO__COUNT] = {
	[L7_PROTO_HTTP] = {.parse = l7__http_parse},
	[L7_PROTO_PGSQL] = {.parse_req = l7__pgsql_parse_req, .parse_resp = l7__pgsql_parse_resp},
	[L7_PROTO_MYSQL] = {.parse_req = l7__mysql_parse_req, .parse_resp = l7__mysql_parse_resp},
	[L7_PROTO_REDIS] = {.parse = l7__redis_parse},
	/* request ids; unanswered datagrams are the ones to drop */
	[L7_PROTO_DNS] = {.parse = l7__dns_parse,
			  .datagram = l7__dns_datagram,
			  .match_by_id = true,
			  .evict_oldest = true},
	[L7_PROTO_KAFKA] = {.parse_req = l7__kafka_parse_req,
			    .parse_resp = l7__kafka_parse_resp,
			    .match_by_id = true,
			    .evict_oldest = true},
	[L7_PROTO_MONGO] = {.parse = l7__mongo_parse, .match_by_id = true, .evict_oldest = true},
	[L7_PROTO_ROCKETMQ] = {.parse = l7__rocketmq_parse, .match_by_id = true, .evict_oldest = true},
	/* streams: never the in-order end-of-response guess */
	[L7_PROTO_HTTP2] = {.parse = l7__http2_parse,
			    .match_by_id = true,
			    .finish = l7__http2_finish,
			    .desync = l7__http2_desync,
			    .close = l7__http2_close,
			    .destroy = l7__http2_destroy,
			    .mem = l7__http2_mem},
};

const char *l7_proto__name(enum l7_proto proto)
{
	if ((unsigned int)proto >= L7_PROTO__COUNT)
		return l7_names[L7_PROTO_UNKNOWN];
	return l7_names[proto];
}

enum l7_proto l7_proto__by_name(const char *name)
{
	if (!name)
		return L7_PROTO_UNKNOWN;
	for (int p = L7_PROTO_UNKNOWN + 1; p < L7_PROTO__COUNT; p++)
		if (strcmp(name, l7_names[p]) == 0)
			return (enum l7_proto)p;
	return L7_PROTO_UNKNOWN;
}

/* Over TCP, the cheapest and most specific checks first; then the binary length-prefixed headers,
 * checked strictly (known api keys/opcodes, sane lengths); DNS and HTTP/2 from the middle of a
 * connection (the weakest) are tried after them. */
static const struct {
	enum l7_proto proto;
	bool (*infer)(const uint8_t *p, size_t n, enum l7_flow *ret_flow);
} l7_tcp_infer[] = {
	{L7_PROTO_HTTP, l7__http_infer},	 {L7_PROTO_HTTP2, l7__http2_infer}, {L7_PROTO_REDIS, l7__redis_infer},
	{L7_PROTO_PGSQL, l7__pgsql_infer},	 {L7_PROTO_MYSQL, l7__mysql_infer}, {L7_PROTO_MONGO, l7__mongo_infer},
	{L7_PROTO_ROCKETMQ, l7__rocketmq_infer}, {L7_PROTO_KAFKA, l7__kafka_infer},
};

enum l7_proto l7_infer(const uint8_t *buf, size_t len, enum l7_transport transport, uint16_t port,
		       unsigned int enabled_mask, enum l7_flow *ret_flow)
{
	enum l7_flow flow = L7_FLOW_REQ;
	enum l7_proto found = L7_PROTO_UNKNOWN;

	if (!buf || len == 0 || !ret_flow)
		return L7_PROTO_UNKNOWN;
	/* DNS is the only datagram protocol here */
	if (transport == L7_TRANSPORT_UDP) {
		if ((enabled_mask & (1u << L7_PROTO_DNS)) && l7__dns_infer(buf, len, transport, port, &flow))
			found = L7_PROTO_DNS;
		goto out;
	}
	for (size_t i = 0; i < sizeof(l7_tcp_infer) / sizeof(l7_tcp_infer[0]); i++) {
		if ((enabled_mask & (1u << l7_tcp_infer[i].proto)) && l7_tcp_infer[i].infer(buf, len, &flow)) {
			found = l7_tcp_infer[i].proto;
			goto out;
		}
	}
	if ((enabled_mask & (1u << L7_PROTO_DNS)) && l7__dns_infer(buf, len, transport, port, &flow))
		found = L7_PROTO_DNS;
	else if ((enabled_mask & (1u << L7_PROTO_HTTP2)) && l7__http2_infer_mid(buf, len, &flow))
		found = L7_PROTO_HTTP2;
out:
	if (found != L7_PROTO_UNKNOWN)
		*ret_flow = flow;
	return found;
}

struct l7_session *l7_session__new(enum l7_proto proto, enum l7_transport transport)
{
	struct l7_session *s;

	if ((unsigned int)proto >= L7_PROTO__COUNT || (!l7_ops[proto].parse && !l7_ops[proto].parse_req) ||
	    (transport != L7_TRANSPORT_TCP && transport != L7_TRANSPORT_UDP) ||
	    (transport == L7_TRANSPORT_UDP && !l7_ops[proto].datagram)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->ops = &l7_ops[proto];
	s->proto = proto;
	s->transport = transport;
	return s;
}

void l7_session__free(struct l7_session *s)
{
	if (!s)
		return;
	if (s->ops->destroy)
		s->ops->destroy(s);
	free(s->dir[0].buf);
	free(s->dir[1].buf);
	free(s->pend);
	free(s);
}

void l7_session__stats(const struct l7_session *s, struct l7_session_stats *ret)
{
	if (!s || !ret)
		return;
	*ret = s->st;
}

size_t l7_session__mem(const struct l7_session *s)
{
	if (!s)
		return 0;
	return sizeof(*s) + s->dir[0].buf_cap + s->dir[1].buf_cap + (size_t)s->pend_cap * sizeof(*s->pend) +
	       (s->ops->mem ? s->ops->mem(s) : 0);
}

/* ---- pending requests ---------------------------------------------------------------------------- */

struct l7_pend *l7__pend_front(struct l7_session *s)
{
	return s->pend_cnt ? &s->pend[s->pend_head] : NULL;
}

static struct l7_pend *pend_at(struct l7_session *s, uint32_t i)
{
	return &s->pend[(s->pend_head + i) & (s->pend_cap - 1)];
}

struct l7_pend *l7__pend_at(struct l7_session *s, uint32_t i)
{
	return i < s->pend_cnt ? pend_at(s, i) : NULL;
}

static void pend_pop(struct l7_session *s)
{
	s->pend_head = (s->pend_head + 1) & (s->pend_cap - 1);
	s->pend_cnt--;
}

void l7__pend_drop(struct l7_session *s, uint32_t n)
{
	while (n-- && s->pend_cnt) {
		if (!l7__pend_front(s)->ignore)
			s->st.req_lost++;
		pend_pop(s);
	}
}

/* Remove entry i (0 = front), keeping the order of the others. */
static void pend_remove(struct l7_session *s, uint32_t i)
{
	for (; i + 1 < s->pend_cnt; i++)
		*pend_at(s, i) = *pend_at(s, i + 1);
	s->pend_cnt--;
}

/* A free slot at the back, NULL when the queue is full (L7_PENDING_MAX) or cannot grow. */
static struct l7_pend *pend_push(struct l7_session *s)
{
	if (s->pend_cnt == s->pend_cap) {
		uint32_t cap = s->pend_cap ? s->pend_cap * 2 : 4;
		struct l7_pend *n;

		if (cap > L7_PENDING_MAX)
			return NULL;
		n = malloc(cap * sizeof(*n));
		if (!n)
			return NULL;
		/* unroll the ring into the new array */
		for (uint32_t i = 0; i < s->pend_cnt; i++)
			n[i] = *pend_at(s, i);
		free(s->pend);
		s->pend = n;
		s->pend_cap = cap;
		s->pend_head = 0;
	}
	s->pend_cnt++;
	return pend_at(s, s->pend_cnt - 1);
}

/* ---- messages ------------------------------------------------------------------------------------ */

void l7__msg_start(struct l7_session *s, enum l7_flow flow, uint64_t ts)
{
	struct l7_msg *m = &s->dir[flow].msg;

	memset(m, 0, sizeof(*m));
	m->started = true;
	m->ts_ns = ts;
}

void l7__msg_end(struct l7_session *s, enum l7_flow flow)
{
	s->dir[flow].msg.end = true;
}

void l7__req_commit(struct l7_session *s)
{
	struct l7_msg *m = &s->dir[L7_FLOW_REQ].msg;
	struct l7_pend *p;

	if (m->committed || m->ignore)
		return;
	m->committed = true;
	if (s->ops->match_by_id) {
		/* a retry reuses its id: the older one will never be answered as itself */
		for (uint32_t i = 0; i < s->pend_cnt; i++) {
			if (pend_at(s, i)->aux == m->aux) {
				pend_remove(s, i);
				s->st.req_lost++;
				break;
			}
		}
	}
	p = pend_push(s);
	if (!p && s->ops->evict_oldest && s->pend_cnt) {
		pend_pop(s);
		s->st.req_lost++;
		p = pend_push(s);
	}
	if (!p) {
		s->st.req_overflow++;
		return;
	}
	p->ts_ns = m->ts_ns;
	p->bytes = m->bytes;
	p->seq = ++s->pend_seq;
	p->aux = m->aux;
	p->aux2 = m->aux2;
	p->ignore = m->hs;
	memcpy(p->api, m->api, sizeof(p->api));
	memcpy(p->trace, m->trace, sizeof(p->trace));
	m->pend_seq = p->seq;
}

void l7__rpc_report(struct l7_session *s, const struct l7_rpc *rpc)
{
	s->st.rpcs++;
	if (s->cb)
		s->cb(s->ctx, rpc);
}

static void resp_report(struct l7_session *s, const struct l7_pend *p, const struct l7_msg *m)
{
	struct l7_rpc rpc;

	if (p->ignore)
		return;
	rpc.req_ts_ns = p->ts_ns;
	rpc.resp_ts_ns = s->ts_ns;
	rpc.req_bytes = p->bytes;
	rpc.resp_bytes = m->bytes;
	rpc.error = m->error;
	rpc.status = m->status;
	memcpy(rpc.api, p->api, sizeof(rpc.api));
	memcpy(rpc.trace, p->trace, sizeof(rpc.trace));
	s->st.rpcs++;
	if (s->cb)
		s->cb(s->ctx, &rpc);
}

void l7__msg_finish(struct l7_session *s, enum l7_flow flow)
{
	struct l7_msg *m = &s->dir[flow].msg;

	if (s->ops->finish) {
		s->ops->finish(s, flow);
		memset(m, 0, sizeof(*m));
		return;
	}
	if (flow == L7_FLOW_REQ) {
		if (!m->ignore)
			l7__req_commit(s);
	} else if (!m->ignore) {
		if (s->ops->match_by_id) {
			uint32_t i;

			for (i = 0; i < s->pend_cnt; i++)
				if (pend_at(s, i)->aux == m->aux)
					break;
			if (i < s->pend_cnt) {
				resp_report(s, pend_at(s, i), m);
				pend_remove(s, i);
			} else {
				s->st.resp_unmatched++;
			}
		} else if (s->pend_cnt) {
			resp_report(s, l7__pend_front(s), m);
			pend_pop(s);
		} else {
			s->st.resp_unmatched++;
		}
	}
	memset(m, 0, sizeof(*m));
}

/* ---- framing ------------------------------------------------------------------------------------- */

/* n bytes of the current message passed (parsed or skipped). */
static void account(struct l7_session *s, enum l7_flow flow, uint64_t n)
{
	struct l7_msg *m = &s->dir[flow].msg;

	m->bytes += n;
	if (flow == L7_FLOW_REQ && m->committed && s->pend_cnt) {
		struct l7_pend *b = pend_at(s, s->pend_cnt - 1);

		if (b->seq == m->pend_seq)
			b->bytes += n;
	}
}

static void maybe_finish(struct l7_session *s, enum l7_flow flow)
{
	struct l7_dir *d = &s->dir[flow];

	if (d->msg.end && d->skip == 0)
		l7__msg_finish(s, flow);
}

/* HTTP/1.1 -> HTTP/2 after a 101 to "Upgrade: h2c": the request that asked is answered on stream 1;
 * the HTTP/1 state goes, what follows in either direction is read as HTTP/2 (the client's preface
 * first). */
static void switch_h2(struct l7_session *s)
{
	struct l7_pend req, *front = l7__pend_front(s);
	bool have = front && !front->ignore;

	if (have)
		req = *front;
	if (s->ops->destroy)
		s->ops->destroy(s);
	s->pend_cnt = 0;
	for (int f = 0; f < 2; f++) {
		memset(&s->dir[f].msg, 0, sizeof(s->dir[f].msg));
		memset(&s->dir[f].p, 0, sizeof(s->dir[f].p));
		s->dir[f].skip = 0;
	}
	s->upgrade_h2 = false;
	s->ops = &l7_ops[L7_PROTO_HTTP2];
	s->proto = L7_PROTO_HTTP2;
	l7__http2_upgraded(s, have ? &req : NULL);
}

enum l7_proto l7_session__proto(const struct l7_session *s)
{
	return s ? s->proto : L7_PROTO_UNKNOWN;
}

/* The direction lost its place (garbage, a header lost in a gap): drop what it held and start over
 * at the next chunk. A response that could not be read leaves its request unanswered for good. */
static void desync(struct l7_session *s, enum l7_flow flow)
{
	struct l7_dir *d = &s->dir[flow];

	s->st.unparsable++;
	/* whether a response was under way or garbage stood where one should start, it was the front
	 * request's answer */
	if (flow == L7_FLOW_RESP && !s->ops->match_by_id && s->pend_cnt) {
		if (!l7__pend_front(s)->ignore)
			s->st.req_lost++;
		pend_pop(s);
	}
	d->buf_len = 0;
	d->skip = 0;
	memset(&d->msg, 0, sizeof(d->msg));
	memset(&d->p, 0, sizeof(d->p));
	if (s->ops->desync)
		s->ops->desync(s, flow);
}

/* A gap took a response's framing (a result set bigger than the capture, replies of a pipeline cut
 * short). A client sends its next request once it has read the answers it waits for (a pipelining
 * client, once it has read its batch's): the responses in flight are taken to end at their last chunk
 * before the next request, everything until then belonging to them. */
static bool gap_hold(struct l7_session *s, enum l7_flow flow)
{
	struct l7_dir *d = &s->dir[flow];

	if (flow != L7_FLOW_RESP || s->ops->match_by_id || d->msg.until_close || !s->pend_cnt ||
	    l7__pend_front(s)->ignore)
		return false;
	if (!d->msg.started)
		l7__msg_start(s, flow, s->ts_ns); /* the gap starts with the response */
	d->buf_len = 0;
	d->msg.ignore = false;
	d->msg.end = true;
	d->msg.until_req = true;
	d->skip = UINT64_MAX;
	memset(&d->p, 0, sizeof(d->p));
	return true;
}

/* The next request started (or the connection closed): the responses held by gap_hold end at the
 * last response chunk, and so does a body read up to the close. */
static void gap_release(struct l7_session *s)
{
	struct l7_dir *d = &s->dir[L7_FLOW_RESP];
	uint64_t ts = s->ts_ns;
	bool held = d->msg.until_req;

	/* a body up to the close, yet the client asks again on this connection: the body ended */
	if (!held && !(d->msg.until_close && s->pend_cnt == 1 && !l7__pend_front(s)->ignore && !d->buf_len))
		return;
	s->ts_ns = d->last_ts;
	d->skip = 0;
	if (s->pend_cnt && l7__pend_front(s)->ts_ns > d->last_ts) {
		/* sent after the last response byte: not what was answered */
		s->st.resp_unmatched++;
		memset(&d->msg, 0, sizeof(d->msg));
	} else {
		s->st.resp_end_guessed++;
		l7__msg_finish(s, L7_FLOW_RESP);
	}
	memset(&d->p, 0, sizeof(d->p));
	/* the rest of a pipeline's answers were in the gap too (those sent before the last response byte) */
	while (held && s->pend_cnt && l7__pend_front(s)->ts_ns <= d->last_ts) {
		struct l7_msg none = {0};

		if (!l7__pend_front(s)->ignore) {
			resp_report(s, l7__pend_front(s), &none);
			s->st.resp_end_guessed++;
		}
		pend_pop(s);
	}
	s->ts_ns = ts;
}

/* Make room for need bytes in d->buf (need <= L7_BUF_MAX). */
static int buf_reserve(struct l7_dir *d, size_t need)
{
	size_t cap = d->buf_cap;
	uint8_t *n = probe_array_reserve(d->buf, &cap, 1, need, 256, L7_BUF_MAX);

	if (!n)
		return -ENOMEM;
	d->buf = n;
	d->buf_cap = (uint32_t)cap;
	return 0;
}

/* Parse data[0..len) in direction flow. Returns false when the direction lost sync (rest dropped). */
/* The protocol's parser for direction flow (struct l7_proto_ops.parse). */
static long ops_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	if (s->ops->parse)
		return s->ops->parse(s, flow, p, n, start_ts);
	return flow == L7_FLOW_REQ ? s->ops->parse_req(s, p, n, start_ts) : s->ops->parse_resp(s, p, n, start_ts);
}

static bool feed_stream(struct l7_session *s, enum l7_flow flow, const uint8_t *data, size_t len, uint64_t ts, bool gap)
{
	struct l7_dir *d = &s->dir[flow];
	size_t pos = 0;
	long r;

	while (pos < len) {
		if (d->skip) {
			uint64_t n;

			if (d->buf_len) {
				/* after a parser consumed less than it held: pass over the held bytes first */
				n = d->skip < d->buf_len ? d->skip : d->buf_len;
				memmove(d->buf, d->buf + n, d->buf_len - n);
				d->buf_len -= (uint32_t)n;
			} else {
				n = d->skip < len - pos ? d->skip : len - pos;
				pos += n;
			}
			d->skip -= n;
			account(s, flow, n);
			maybe_finish(s, flow);
			continue;
		}
		if (d->buf_len) {
			size_t old = d->buf_len, add = len - pos;

			if (add > L7_BUF_MAX - old)
				add = L7_BUF_MAX - old;
			if (buf_reserve(d, old + add) < 0) {
				desync(s, flow);
				return false;
			}
			memcpy(d->buf + old, data + pos, add);
			s->gap_follows = gap && pos + add == len;
			r = ops_parse(s, flow, d->buf, old + add, d->buf_ts);
			if (r < 0 || (r == 0 && old + add >= L7_BUF_MAX)) {
				desync(s, flow);
				return false;
			}
			if (r == 0) {
				d->buf_len = (uint32_t)(old + add);
				pos += add;
				continue;
			}
			if ((size_t)r > old + add)
				r = (long)(old + add);
			account(s, flow, (uint64_t)r);
			if ((size_t)r >= old) {
				pos += (size_t)r - old;
				d->buf_len = 0;
			} else {
				/* a parser that peeks consumed less than it held: the rest stays first in line */
				memmove(d->buf, d->buf + r, old - (size_t)r);
				d->buf_len = (uint32_t)(old - (size_t)r);
			}
			maybe_finish(s, flow);
			if (s->upgrade_h2)
				switch_h2(s);
			if (s->opaque)
				return false;
			continue;
		}
		s->gap_follows = gap;
		r = ops_parse(s, flow, data + pos, len - pos, ts);
		if (r < 0 || (r == 0 && len - pos >= L7_BUF_MAX)) {
			desync(s, flow);
			return false;
		}
		if (r == 0) {
			/* a unit spans chunks: hold its start */
			if (buf_reserve(d, len - pos) < 0) {
				desync(s, flow);
				return false;
			}
			memcpy(d->buf, data + pos, len - pos);
			d->buf_len = (uint32_t)(len - pos);
			d->buf_ts = ts;
			break;
		}
		if ((size_t)r > len - pos)
			r = (long)(len - pos); /* a parser never consumes more than it was given */
		account(s, flow, (uint64_t)r);
		pos += (size_t)r;
		maybe_finish(s, flow);
		if (s->upgrade_h2)
			switch_h2(s);
		if (s->opaque)
			return false;
	}
	return true;
}

/* gap bytes were not captured after what was fed: a body skips them, anything else loses sync. */
static void feed_gap(struct l7_session *s, enum l7_flow flow, uint64_t gap)
{
	struct l7_dir *d = &s->dir[flow];
	uint64_t n;

	if (d->buf_len) {
		uint64_t held = d->buf_len;

		if (gap_hold(s, flow))
			account(s, flow, held + gap);
		else
			desync(s, flow);
		return;
	}
	n = d->skip < gap ? d->skip : gap;
	d->skip -= n;
	gap -= n;
	account(s, flow, n);
	maybe_finish(s, flow);
	if (!gap)
		return;
	if (gap_hold(s, flow))
		account(s, flow, gap);
	else
		desync(s, flow);
}

int l7_session__feed(struct l7_session *s, enum l7_flow flow, const uint8_t *data, size_t len, uint64_t total,
		     uint64_t ts_ns, l7_rpc_cb cb, void *ctx)
{
	if (!s || (flow != L7_FLOW_REQ && flow != L7_FLOW_RESP) || (len && !data) || total < len)
		return -EINVAL;
	s->cb = cb;
	s->ctx = ctx;
	s->ts_ns = ts_ns;
	s->st.gap_bytes += total - len;
	if (s->opaque)
		goto out;
	/* a new request (not more of the one under way, like a body after 100 Continue) */
	if (flow == L7_FLOW_REQ && !s->dir[flow].msg.started && !s->dir[flow].skip && !s->dir[flow].buf_len)
		gap_release(s);
	if (s->transport == L7_TRANSPORT_UDP) {
		if (total)
			s->ops->datagram(s, flow, data, len, total, ts_ns);
		goto out;
	}
	if (feed_stream(s, flow, data, len, ts_ns, total > len) && total > len)
		feed_gap(s, flow, total - len);
out:
	s->dir[flow].last_ts = ts_ns;
	s->gap_follows = false;
	s->cb = NULL;
	s->ctx = NULL;
	return 0;
}

int l7_session__close(struct l7_session *s, uint64_t ts_ns, l7_rpc_cb cb, void *ctx)
{
	struct l7_dir *d;

	if (!s)
		return -EINVAL;
	d = &s->dir[L7_FLOW_RESP];
	if (s->ops->close) {
		s->cb = cb;
		s->ctx = ctx;
		s->ts_ns = ts_ns;
		s->ops->close(s);
		s->cb = NULL;
		s->ctx = NULL;
		return 0;
	}
	if (d->msg.until_req) {
		s->cb = cb;
		s->ctx = ctx;
		gap_release(s);
		s->cb = NULL;
		s->ctx = NULL;
	} else if (d->msg.started && d->msg.until_close && !d->buf_len) {
		s->cb = cb;
		s->ctx = ctx;
		s->ts_ns = ts_ns;
		d->skip = 0;
		l7__msg_finish(s, L7_FLOW_RESP);
		memset(&d->p, 0, sizeof(d->p));
		s->cb = NULL;
		s->ctx = NULL;
	}
	return 0;
}

/* ---- prepared statements ------------------------------------------------------------------------ */

uint32_t l7__hash(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h ? h : 1;
}

void l7__stmt_put(struct l7_session *s, uint32_t key, const char *kw)
{
	size_t i;

	if (!key || !kw[0])
		return;
	for (i = 0; i < L7_STMTS && s->stmt[i].key != key; i++)
		;
	if (i == L7_STMTS) {
		i = s->stmt_next;
		s->stmt_next = (uint8_t)((s->stmt_next + 1) % L7_STMTS);
	}
	s->stmt[i].key = key;
	l7__api_put(s->stmt[i].kw, sizeof(s->stmt[i].kw), kw, sizeof(s->stmt[i].kw));
}

const char *l7__stmt_get(const struct l7_session *s, uint32_t key)
{
	for (size_t i = 0; key && i < L7_STMTS; i++)
		if (s->stmt[i].key == key)
			return s->stmt[i].kw;
	return NULL;
}

void l7__stmt_del(struct l7_session *s, uint32_t key)
{
	for (size_t i = 0; key && i < L7_STMTS; i++)
		if (s->stmt[i].key == key)
			s->stmt[i].key = 0;
}

/* ---- text helpers -------------------------------------------------------------------------------- */

size_t l7__api_put(char *dst, size_t max, const char *src, size_t n)
{
	size_t i;

	if (max == 0)
		return 0;
	for (i = 0; i < n && i + 1 < max && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
	return i;
}
