/* conn.c - l7probe's connection tracker: kernel events into connections (per tgid and fd), each
 * with its role, addresses, protocol (inferred from its first chunks) and protocol session, whose
 * matched requests add up in bounded per-key aggregates that become l7_link and l7_rpc rows.
 *
 * Ordering: every event goes through one ring buffer, whose records are in the order they were
 * reserved, i.e. the order the system calls returned (BPF writes at the exit). One thread's calls
 * are therefore in program order, and a response written by one thread after another thread read
 * the request is behind it: causality is kept without sorting by timestamp. Timestamps are only
 * used for latency (a send's entry, a receive's exit). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l7_api.h"
#include "l7share.h"
#include "l7_user.h"
#include "l7probe.meta.h"

enum conn_state {
	CS_INFER = 0, /* protocol not known yet */
	CS_TRACK,     /* session set up */
	CS_IGNORE,    /* not a protocol of ours: bytes are not looked at */
};

/* What rows are keyed by. */
struct agg_key {
	uint32_t tgid;
	uint16_t family;
	uint16_t server_port;
	uint8_t client_ip[16];
	uint8_t server_ip[16];
	uint8_t l4_role; /* 0 udp, 1 tcp_client, 2 tcp_server (gala-gopher's l4_role_name order) */
	uint8_t l7_role; /* 1 client, 2 server */
	uint8_t proto;	 /* enum l7_proto */
	uint8_t ssl;
};

/* One row's cumulative values. */
struct agg {
	struct agg *next;
	struct agg_key k;
	uint64_t bytes_sent, bytes_recv, segs_sent, segs_recv;
	uint64_t rpcs, errs, lat_sum;
	__u64 hist[GG_LOG2_SLOTS];
	uint64_t prev_rpcs, prev_errs, prev_lat_sum; /* at the previous report */
	uint64_t last_ns;			     /* last traffic */
	uint32_t refs;				     /* connections holding it (conn.agg) */
	struct api_row *apis;			     /* its l7_rpc_api rows */
};

/* One l7_rpc_api row: an api of a key, cumulative. */
struct api_row {
	struct api_row *hnext; /* chain of the tracker's api hash */
	struct api_row *sib;   /* next row of the same key (agg.apis) */
	struct agg *agg;
	uint32_t hash;
	uint8_t other; /* the "__other__" row: not counted against api_limit */
	uint64_t rpcs, errs, cerrs, serrs, lat_sum;
	uint64_t prev_rpcs, prev_errs, prev_cerrs, prev_serrs, prev_lat_sum;
	uint64_t last_ns;
	__u64 hist[GG_LOG2_SLOTS];
	char api[L7_API_MAX];
};

/* Distinct apis (rows other than "__other__") of one process. */
struct proc_apis {
	struct proc_apis *next;
	uint32_t tgid;
	uint32_t n;
};
#define PROC_APIS_BUCKETS 1024u

/* One tracked connection. */
struct conn {
	struct conn *next;
	uint32_t tgid;
	int32_t fd;
	uint64_t sk;
	uint64_t last_ns;
	uint8_t role; /* enum l7_sock_role */
	uint8_t udp;
	uint8_t ssl; /* plaintext seen from SSL calls: raw bytes are not parsed */
	uint8_t state;
	uint8_t tries;
	uint8_t proto;
	uint16_t family;
	uint16_t lport, rport;
	uint8_t laddr[16], raddr[16];
	struct l7_session *sess;
	struct agg *agg; /* TCP: set once the protocol is known */
	/* first chunks of one direction joined for l7_infer (CS_INFER only) */
	uint8_t *ibuf;
	uint16_t ilen;
	uint8_t idir;
	uint64_t igap; /* bytes not captured after the joined ones (nothing more is joined then) */
	uint64_t its;  /* timestamp of the first joined chunk */
	/* bytes moved before the protocol was known, added to the aggregate then */
	uint64_t pre_sent, pre_recv, pre_segs_sent, pre_segs_recv;
};

struct l7_tracker {
	uint32_t max_conns, max_keys;
	uint32_t nconns, nkeys;
	uint32_t conn_mask, key_mask;
	struct conn **conns;
	struct agg **keys;
	unsigned int proto_mask;
	struct agg *cur_agg; /* the aggregate rpcs of the chunk being fed go to */
	struct conn *cur_conn;
	const struct l7_ev *cur_ev; /* the event being fed (NULL at a close) */
	uint64_t now_ns;	    /* timestamp of the event being handled */
	/* l7_rpc_api */
	uint32_t api_limit; /* per process; 0: off */
	uint32_t napis;	    /* rows, "__other__" ones included */
	uint32_t api_mask;
	struct api_row **apis;
	struct proc_apis *procs[PROC_APIS_BUCKETS];
	l7_span_cb span_cb;
	void *span_ctx;
	struct l7s_table *share; /* per-process aggregates for other probes (l7share.h), or NULL */
	struct l7_tracker_stats st;
	/* session counters of connections already freed */
	uint64_t gone_unparsable, gone_unmatched, gone_lost, gone_hpack;
};

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

struct l7_tracker *l7_tracker__new(uint32_t max_conns, uint32_t max_keys)
{
	struct l7_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_conns = max_conns;
	t->max_keys = max_keys;
	t->conn_mask = pow2_at_least(max_conns) - 1;
	t->key_mask = pow2_at_least(max_keys) - 1;
	t->conns = calloc((size_t)t->conn_mask + 1, sizeof(*t->conns));
	t->keys = calloc((size_t)t->key_mask + 1, sizeof(*t->keys));
	t->api_mask = pow2_at_least(L7_API_ROWS_MAX) - 1;
	t->apis = calloc((size_t)t->api_mask + 1, sizeof(*t->apis));
	t->api_limit = L7_API_LIMIT_DEFAULT;
	l7_tracker__set_protocols(t, 1u << L7_PROTO_HTTP);
	if (!t->conns || !t->keys || !t->apis) {
		l7_tracker__free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void conn_free(struct l7_tracker *t, struct conn *c)
{
	struct l7_session_stats ss;

	if (c->sess) {
		l7_session__stats(c->sess, &ss);
		t->gone_unparsable += ss.unparsable;
		t->gone_unmatched += ss.resp_unmatched;
		t->gone_lost += ss.req_lost;
		t->gone_hpack += ss.hpack_unresolved;
		l7_session__free(c->sess);
	}
	if (c->agg)
		c->agg->refs--;
	free(c->ibuf);
	free(c);
}

void l7_tracker__free(struct l7_tracker *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; t->conns && i <= t->conn_mask; i++) {
		while (t->conns[i]) {
			struct conn *c = t->conns[i];

			t->conns[i] = c->next;
			conn_free(t, c);
		}
	}
	for (uint32_t i = 0; t->keys && i <= t->key_mask; i++) {
		while (t->keys[i]) {
			struct agg *a = t->keys[i];

			t->keys[i] = a->next;
			while (a->apis) {
				struct api_row *r = a->apis;

				a->apis = r->sib;
				free(r);
			}
			free(a);
		}
	}
	for (uint32_t i = 0; i < PROC_APIS_BUCKETS; i++) {
		while (t->procs[i]) {
			struct proc_apis *p = t->procs[i];

			t->procs[i] = p->next;
			free(p);
		}
	}
	free(t->conns);
	free(t->keys);
	free(t->apis);
	free(t);
}

void l7_tracker__set_protocols(struct l7_tracker *t, unsigned int mask)
{
	/* l7_protocol "http" means HTTP/1.x and HTTP/2 (gala-gopher has no name of its own for HTTP/2) */
	if (mask & (1u << L7_PROTO_HTTP))
		mask |= 1u << L7_PROTO_HTTP2;
	t->proto_mask = mask;
}

void l7_tracker__set_api_limit(struct l7_tracker *t, uint32_t limit)
{
	t->api_limit = limit;
}

void l7_tracker__set_span_cb(struct l7_tracker *t, l7_span_cb cb, void *ctx)
{
	t->span_cb = cb;
	t->span_ctx = ctx;
}

void l7_tracker__set_share(struct l7_tracker *t, struct l7s_table *share)
{
	t->share = share;
}

static uint32_t hash_u64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 33;
	return (uint32_t)v;
}

static uint32_t conn_hash(uint32_t tgid, int32_t fd)
{
	return hash_u64(((uint64_t)tgid << 32) | (uint32_t)fd);
}

static struct conn **conn_slot(struct l7_tracker *t, uint32_t tgid, int32_t fd)
{
	struct conn **pp = &t->conns[conn_hash(tgid, fd) & t->conn_mask];

	while (*pp && ((*pp)->tgid != tgid || (*pp)->fd != fd))
		pp = &(*pp)->next;
	return pp;
}

static void conn_drop(struct l7_tracker *t, struct conn **pp)
{
	struct conn *c = *pp;

	*pp = c->next;
	conn_free(t, c);
	t->nconns--;
}

/* ---- aggregates -------------------------------------------------------------------------------- */

static uint32_t key_hash(const struct agg_key *k)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const unsigned char *p = (const unsigned char *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ (h >> 32));
}

static struct agg *agg_get(struct l7_tracker *t, const struct agg_key *k)
{
	struct agg **pp = &t->keys[key_hash(k) & t->key_mask];

	for (struct agg *a = *pp; a; a = a->next)
		if (!memcmp(&a->k, k, sizeof(*k)))
			return a;
	if (t->nkeys >= t->max_keys) {
		t->st.key_overflow++;
		return NULL;
	}
	struct agg *a = calloc(1, sizeof(*a));

	if (!a) {
		t->st.key_overflow++;
		return NULL;
	}
	a->k = *k;
	a->next = *pp;
	*pp = a;
	t->nkeys++;
	return a;
}

/* The aggregate a connection's traffic goes to, with the peer of this chunk (UDP: per datagram). */
static struct agg *conn_agg(struct l7_tracker *t, struct conn *c, const struct l7_ev *h)
{
	struct agg_key k;
	const uint8_t *raddr = c->raddr;
	uint16_t rport = c->rport;

	if (!c->udp && c->agg) {
		c->agg->last_ns = t->now_ns;
		return c->agg;
	}
	if (c->udp && h && h->rport) {
		/* An unconnected socket: each datagram's peer; one whose peer the kernel half could not
		 * take (the first one queued before the socket was followed) goes with the last known. */
		memcpy(c->raddr, h->raddr, 16);
		c->rport = h->rport;
	}
	if (c->udp && !c->rport)
		return NULL; /* no peer known yet: its bytes wait in pre_* */
	raddr = c->raddr;
	rport = c->rport;
	memset(&k, 0, sizeof(k));
	k.tgid = c->tgid;
	k.family = c->family;
	k.proto = c->proto;
	k.ssl = c->ssl;
	k.l7_role = c->role == L7_ROLE_CLIENT ? 1 : 2;
	k.l4_role = c->udp ? 0 : c->role == L7_ROLE_CLIENT ? 1 : 2;
	if (c->role == L7_ROLE_CLIENT) {
		memcpy(k.client_ip, c->laddr, 16);
		memcpy(k.server_ip, raddr, 16);
		k.server_port = rport;
	} else {
		memcpy(k.client_ip, raddr, 16);
		memcpy(k.server_ip, c->laddr, 16);
		k.server_port = c->lport;
	}
	if (c->family != AF_INET6) {
		memset(k.client_ip + 4, 0, 12);
		memset(k.server_ip + 4, 0, 12);
	}
	struct agg *a = agg_get(t, &k);

	if (a)
		a->last_ns = t->now_ns;
	if (!c->udp && a) {
		c->agg = a;
		a->refs++;
	}
	return a;
}

/* ---- l7_rpc_api rows ----------------------------------------------------------------------------- */

static uint32_t api_hash(const struct agg *a, const char *api)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(uintptr_t)a;

	for (const unsigned char *p = (const unsigned char *)api; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (uint32_t)(h ^ (h >> 32));
}

static struct proc_apis **proc_slot(struct l7_tracker *t, uint32_t tgid)
{
	struct proc_apis **pp = &t->procs[hash_u64(tgid) & (PROC_APIS_BUCKETS - 1)];

	while (*pp && (*pp)->tgid != tgid)
		pp = &(*pp)->next;
	return pp;
}

/* One distinct api fewer for tgid. */
static void proc_api_put(struct l7_tracker *t, uint32_t tgid)
{
	struct proc_apis **pp = proc_slot(t, tgid);
	struct proc_apis *p = *pp;

	if (p && !--p->n) {
		*pp = p->next;
		free(p);
	}
}

/* Unlink r from the hash and free it (its key's list is the caller's). */
static void api_row_free(struct l7_tracker *t, struct api_row *r)
{
	struct api_row **pp = &t->apis[r->hash & t->api_mask];

	while (*pp && *pp != r)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = r->hnext;
	if (!r->other)
		proc_api_put(t, r->agg->k.tgid);
	t->napis--;
	free(r);
}

static void agg_free(struct l7_tracker *t, struct agg *a)
{
	while (a->apis) {
		struct api_row *r = a->apis;

		a->apis = r->sib;
		api_row_free(t, r);
	}
	free(a);
}

static struct api_row *api_find(struct l7_tracker *t, struct agg *a, const char *api, uint32_t h)
{
	for (struct api_row *r = t->apis[h & t->api_mask]; r; r = r->hnext)
		if (r->hash == h && r->agg == a && !strcmp(r->api, api))
			return r;
	return NULL;
}

static struct api_row *api_new(struct l7_tracker *t, struct agg *a, const char *api, uint32_t h, int other)
{
	struct api_row *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->agg = a;
	r->hash = h;
	r->other = (uint8_t)other;
	snprintf(r->api, sizeof(r->api), "%s", api);
	r->hnext = t->apis[h & t->api_mask];
	t->apis[h & t->api_mask] = r;
	r->sib = a->apis;
	a->apis = r;
	t->napis++;
	return r;
}

/* The row of api under a, created when the process is under api_limit (and the table under
 * L7_API_ROWS_MAX), else a's "__other__" row (counted). NULL when out of memory. */
static struct api_row *api_row(struct l7_tracker *t, struct agg *a, const char *api)
{
	uint32_t h = api_hash(a, api);
	struct api_row *r = api_find(t, a, api, h);
	struct proc_apis **pp, *p;

	if (r)
		return r;
	pp = proc_slot(t, a->k.tgid);
	p = *pp;
	if ((!p || p->n < t->api_limit) && t->napis < L7_API_ROWS_MAX && strcmp(api, L7_API_OTHER)) {
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (p) {
				p->tgid = a->k.tgid;
				*pp = p;
			}
		}
		if (p) {
			r = api_new(t, a, api, h, 0);
			if (r) {
				p->n++;
				return r;
			}
			if (!p->n) {
				*pp = p->next;
				free(p);
			}
		}
	}
	t->st.api_overflow++;
	h = api_hash(a, L7_API_OTHER);
	r = api_find(t, a, L7_API_OTHER, h);
	return r ? r : api_new(t, a, L7_API_OTHER, h, 1);
}

/* The span of rpc on the connection being fed, for the span callback. */
static void span_of(const struct l7_tracker *t, const struct agg *a, const struct l7_rpc *rpc, const char *api,
		    struct l7_span *sp)
{
	const struct conn *c = t->cur_conn;

	memset(sp, 0, sizeof(*sp));
	sp->rpc = rpc;
	sp->api = api;
	sp->tgid = a->k.tgid;
	sp->family = a->k.family;
	sp->client_ip = a->k.client_ip;
	sp->server_ip = a->k.server_ip;
	sp->server_port = a->k.server_port;
	sp->l4_role = a->k.l4_role;
	sp->l7_role = a->k.l7_role;
	sp->proto = a->k.proto;
	sp->ssl = a->k.ssl;
	sp->fd = -1;
	if (!c)
		return;
	sp->fd = c->fd;
	if (c->role == L7_ROLE_CLIENT)
		sp->client_port = c->lport;
	else
		sp->client_port = c->udp && t->cur_ev && t->cur_ev->rport ? t->cur_ev->rport : c->rport;
}

/* ---- events ------------------------------------------------------------------------------------ */

/* The connection's session changed protocol (an h2c upgrade): its traffic goes to a row of the new
 * protocol from now on. */
static void conn_reproto(struct l7_tracker *t, struct conn *c)
{
	enum l7_proto p = l7_session__proto(c->sess);

	if (!c->sess || p == (enum l7_proto)c->proto)
		return;
	c->proto = (uint8_t)p;
	c->agg = NULL;
	if (t->cur_conn == c)
		t->cur_agg = conn_agg(t, c, t->cur_ev);
}

static void on_rpc(void *ctx, const struct l7_rpc *rpc)
{
	struct l7_tracker *t = ctx;
	struct agg *a;
	uint64_t lat;

	char api[L7_API_MAX];
	unsigned int slot;

	if (t->cur_conn)
		conn_reproto(t, t->cur_conn);
	a = t->cur_agg;
	if (!a)
		return;
	lat = rpc->resp_ts_ns > rpc->req_ts_ns ? rpc->resp_ts_ns - rpc->req_ts_ns : 0;
	slot = gg_hist_slot(lat);
	a->rpcs++;
	a->errs += rpc->error ? 1 : 0;
	a->lat_sum += lat;
	a->hist[slot]++;
	if (t->share)
		l7s_table__add(t->share, a->k.tgid, a->k.l7_role, lat, rpc->error);
	if (!t->api_limit && !t->span_cb)
		return;
	l7_api__normalize((enum l7_proto)a->k.proto, rpc->api, api, sizeof(api));
	if (t->api_limit) {
		struct api_row *r = api_row(t, a, api);

		if (r) {
			r->rpcs++;
			r->lat_sum += lat;
			r->hist[slot]++;
			r->last_ns = t->now_ns;
			if (rpc->error) {
				int client = l7_api__client_error((enum l7_proto)a->k.proto, rpc->api, rpc->status);

				r->errs++;
				r->cerrs += client ? 1 : 0;
				r->serrs += client ? 0 : 1;
			}
		}
	}
	if (t->span_cb) {
		struct l7_span sp;

		span_of(t, a, rpc, api, &sp);
		t->span_cb(t->span_ctx, &sp);
	}
}

static struct conn *conn_new(struct l7_tracker *t, struct conn **pp, const struct l7_ev *h)
{
	struct conn *c;

	if (t->nconns >= t->max_conns) {
		t->st.conn_overflow++;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		t->st.conn_overflow++;
		return NULL;
	}
	c->tgid = h->tgid;
	c->fd = h->fd;
	c->sk = h->sk;
	c->role = h->role;
	c->udp = !!(h->flags & L7_EF_UDP);
	c->family = h->family;
	c->lport = h->lport;
	c->rport = h->rport;
	memcpy(c->laddr, h->laddr, 16);
	memcpy(c->raddr, h->raddr, 16);
	*pp = c;
	t->nconns++;
	return c;
}

/* Feed a chunk to c's session, its rpcs to the aggregate of this chunk. */
static void conn_feed(struct l7_tracker *t, struct conn *c, const struct l7_ev *h, const uint8_t *data, size_t len,
		      uint64_t total, uint64_t ts)
{
	enum l7_flow flow = (h->dir == L7_DIR_SEND) == (c->role == L7_ROLE_CLIENT) ? L7_FLOW_REQ : L7_FLOW_RESP;

	t->cur_agg = conn_agg(t, c, h);
	t->cur_conn = c;
	t->cur_ev = h;
	(void)l7_session__feed(c->sess, flow, data, len, total, ts, on_rpc, t);
	conn_reproto(t, c);
	t->cur_agg = NULL;
	t->cur_conn = NULL;
	t->cur_ev = NULL;
}

static void infer_done(struct conn *c)
{
	free(c->ibuf);
	c->ibuf = NULL;
	c->ilen = 0;
}

/*
 * The protocol of c from its first bytes in one direction: chunks that go the same way are joined
 * (up to L7_INFER_BUF bytes) until l7_infer recognises them, since a server may read a message in
 * pieces (mariadb reads a packet's 4-byte header, then its body). On a match the session is set up
 * and fed what was joined; returns 1 then (the chunk is consumed), 0 otherwise.
 */
static int conn_infer(struct l7_tracker *t, struct conn *c, const struct l7_ev *h, const uint8_t *data)
{
	enum l7_transport tr = c->udp ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP;
	enum l7_flow flow = L7_FLOW_REQ;
	uint16_t port = c->role == L7_ROLE_SERVER ? c->lport : c->role == L7_ROLE_CLIENT ? c->rport : 0;
	const uint8_t *buf = data;
	size_t len = h->len;
	uint64_t gap = h->total - h->len, ts = h->ts_ns;
	enum l7_proto p;

	if (!h->len)
		return 0;
	/* A TLS record (handshake, alert or data) on a connection not seen through SSL calls yet: wait
	 * for the plaintext, without spending the tries. */
	if (!c->ssl && !c->ilen && h->len >= 3 && data[0] >= 0x14 && data[0] <= 0x17 && data[1] == 0x03 &&
	    data[2] <= 0x04)
		return 0;
	if (c->ilen && c->idir == h->dir && !c->igap && !c->udp) {
		size_t n = h->len < L7_INFER_BUF - c->ilen ? h->len : L7_INFER_BUF - c->ilen;

		memcpy(c->ibuf + c->ilen, data, n);
		c->ilen += (uint16_t)n;
		c->igap = (h->len - n) + gap;
		buf = c->ibuf;
		len = c->ilen;
		gap = c->igap;
		ts = c->its;
	} else {
		c->ilen = 0;
	}
	p = l7_infer(buf, len, tr, port, t->proto_mask, &flow);
	if (p == L7_PROTO_UNKNOWN) {
		if (++c->tries >= L7_INFER_TRIES) {
			c->state = CS_IGNORE;
			t->st.untracked++;
			infer_done(c);
			return 0;
		}
		if (buf == data) {
			/* keep this chunk to join the next ones to */
			if (!c->ibuf)
				c->ibuf = malloc(L7_INFER_BUF);
			if (c->ibuf) {
				size_t n = len < L7_INFER_BUF ? len : L7_INFER_BUF;

				memcpy(c->ibuf, data, n);
				c->ilen = (uint16_t)n;
				c->igap = (len - n) + gap;
				c->idir = h->dir;
				c->its = h->ts_ns;
			}
		}
		return 0;
	}
	if (c->role == L7_ROLE_UNKNOWN)
		c->role = (flow == L7_FLOW_REQ) == (h->dir == L7_DIR_SEND) ? L7_ROLE_CLIENT : L7_ROLE_SERVER;
	c->sess = l7_session__new(p, tr);
	if (!c->sess) {
		c->state = CS_IGNORE;
		t->st.untracked++;
		infer_done(c);
		return 0;
	}
	c->proto = (uint8_t)p;
	c->state = CS_TRACK;
	/* joined chunks: a request starts at the first one, a response ends at the last */
	conn_feed(t, c, h, buf, len, len + gap, buf == data || flow == L7_FLOW_RESP ? h->ts_ns : ts);
	infer_done(c);
	return 1;
}

/* The bytes a connection counted before it had an aggregate, into a. */
static void pre_flush(struct agg *a, struct conn *c)
{
	a->bytes_sent += c->pre_sent;
	a->bytes_recv += c->pre_recv;
	a->segs_sent += c->pre_segs_sent;
	a->segs_recv += c->pre_segs_recv;
	c->pre_sent = c->pre_recv = c->pre_segs_sent = c->pre_segs_recv = 0;
}

static void add_bytes(struct agg *a, struct conn *c, const struct l7_ev *h)
{
	if (a && (c->pre_segs_sent || c->pre_segs_recv))
		pre_flush(a, c);
	/* before the connection has an aggregate: kept in the connection until it has one */
	if (h->dir == L7_DIR_SEND) {
		*(a ? &a->bytes_sent : &c->pre_sent) += h->total;
		(*(a ? &a->segs_sent : &c->pre_segs_sent))++;
	} else {
		*(a ? &a->bytes_recv : &c->pre_recv) += h->total;
		(*(a ? &a->segs_recv : &c->pre_segs_recv))++;
	}
}

static void on_data(struct l7_tracker *t, const struct l7_ev *h, const uint8_t *data)
{
	struct conn **pp = conn_slot(t, h->tgid, h->fd);
	struct conn *c = *pp;
	struct agg *a;

	if (c && c->sk != h->sk) {
		/* The fd was closed and reused without us seeing the close. */
		conn_drop(t, pp);
		c = NULL;
	}
	if (!c) {
		c = conn_new(t, pp, h);
		if (!c)
			return;
	}
	c->last_ns = h->ts_ns;
	if ((h->flags & L7_EF_SSL) && !c->ssl) {
		/* First plaintext: what was inferred from ciphertext (nothing, normally) starts over. */
		l7_session__free(c->sess);
		c->sess = NULL;
		infer_done(c);
		c->ssl = 1;
		c->state = CS_INFER;
		c->tries = 0;
		if (c->agg)
			c->agg->refs--;
		c->agg = NULL;
	}
	/* On a TLS connection the socket calls count the bytes, the SSL calls feed the parser. */
	if (!(h->flags & L7_EF_SSL))
		add_bytes(c->state == CS_TRACK ? conn_agg(t, c, h) : NULL, c, h);
	if (c->ssl != !!(h->flags & L7_EF_SSL) || (h->flags & L7_EF_ENCRYPTED))
		return;
	if (c->state == CS_INFER) {
		if (!conn_infer(t, c, h, data))
			return;
		/* the bytes counted before the protocol was known (this chunk's included, when not plaintext) */
		a = conn_agg(t, c, h);
		if (a)
			pre_flush(a, c);
		return;
	}
	if (c->state == CS_TRACK)
		conn_feed(t, c, h, data, h->len, h->total, h->ts_ns);
}

static void on_exit_tgid(struct l7_tracker *t, uint32_t tgid)
{
	if (!t->nconns)
		return;
	for (uint32_t i = 0; i <= t->conn_mask; i++) {
		struct conn **pp = &t->conns[i];

		while (*pp) {
			if ((*pp)->tgid == tgid)
				conn_drop(t, pp);
			else
				pp = &(*pp)->next;
		}
	}
}

int l7_tracker__event(void *ctx, void *data, size_t size)
{
	struct l7_tracker *t = ctx;
	const struct l7_ev *h = data;

	if (size < sizeof(*h)) {
		t->st.bad_events++;
		return 0;
	}
	t->now_ns = h->ts_ns;
	switch (h->type) {
	case L7_EV_DATA:
		if (h->len > size - sizeof(*h) || h->len > h->total) {
			t->st.bad_events++;
			return 0;
		}
		on_data(t, h, (const uint8_t *)data + sizeof(*h));
		break;
	case L7_EV_CLOSE: {
		struct conn **pp = conn_slot(t, h->tgid, h->fd);
		struct conn *c = *pp;

		/* The close of a socket comes at its TCP_CLOSE, which may be after its fd was reused for
		 * another connection: only the connection of that socket ends. */
		if (!c || c->sk != h->sk)
			break;
		if (c->state == CS_TRACK) {
			/* A response that ends with the connection (HTTP without a length) completes now. */
			t->cur_agg = conn_agg(t, c, NULL);
			t->cur_conn = c;
			(void)l7_session__close(c->sess, h->ts_ns, on_rpc, t);
			t->cur_agg = NULL;
			t->cur_conn = NULL;
		}
		conn_drop(t, pp);
		break;
	}
	case L7_EV_EXIT:
		t->st.exits++;
		on_exit_tgid(t, h->tgid);
		break;
	default:
		t->st.bad_events++;
	}
	return 0;
}

/* ---- reports ----------------------------------------------------------------------------------- */

static const char *const l4_role_name[] = {"udp", "tcp_client", "tcp_server"};
static const char *const l7_role_name[] = {"unknown", "client", "server"};

/* The seven keys of l7_link/l7_rpc/l7_rpc_api (ssl, a label, follows; l7_rpc_api puts api between). */
static void rec_keys7(struct probe_rec *r, const struct agg *a)
{
	char cip[INET6_ADDRSTRLEN], sip[INET6_ADDRSTRLEN];
	int af = a->k.family == AF_INET6 ? AF_INET6 : AF_INET;

	if (!inet_ntop(af, a->k.client_ip, cip, sizeof(cip)))
		strcpy(cip, "?");
	if (!inet_ntop(af, a->k.server_ip, sip, sizeof(sip)))
		strcpy(sip, "?");
	probe_rec__u64(r, a->k.tgid);
	probe_rec__str(r, cip);
	probe_rec__str(r, sip);
	probe_rec__u64(r, a->k.server_port);
	probe_rec__str(r, l4_role_name[a->k.l4_role % 3]);
	probe_rec__str(r, l7_role_name[a->k.l7_role % 3]);
	probe_rec__str(r, l7_proto__name((enum l7_proto)a->k.proto));
}

static void rec_keys(struct probe_rec *r, const struct agg *a)
{
	rec_keys7(r, a);
	probe_rec__u64(r, a->k.ssl);
}

static double ratio(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* The request fields l7_rpc and l7_rpc_api share: the rate (twice: the seed's throughput and req_count
 * rate), the count (twice), the mean latency of the period, the latency histogram. */
static void rec_rpcs(struct probe_rec *r, uint64_t drpc, uint64_t rpcs, uint64_t dlat, const __u64 *hist,
		     uint64_t lat_sum, double period_s)
{
	probe_rec__f64(r, period_s > 0 ? (double)drpc / period_s : 0);
	probe_rec__f64(r, period_s > 0 ? (double)drpc / period_s : 0);
	probe_rec__u64(r, rpcs);
	probe_rec__u64(r, rpcs);
	probe_rec__f64(r, drpc ? (double)dlat / (double)drpc : 0);
	gg_hist_rec(r, hist, L7_HIST_FIRST, L7_HIST_N, 1.0, (double)lat_sum);
}

static void report_api(struct probe_rt *rt, const struct agg *a, struct api_row *x, double period_s)
{
	static struct probe_rec r;
	uint64_t drpc = x->rpcs - x->prev_rpcs, dlat = x->lat_sum - x->prev_lat_sum;

	probe_rec__begin(&r, &TBL_l7_rpc_api);
	rec_keys7(&r, a);
	probe_rec__str(&r, x->api[0] ? x->api : "-");
	probe_rec__u64(&r, a->k.ssl);
	rec_rpcs(&r, drpc, x->rpcs, dlat, x->hist, x->lat_sum, period_s);
	probe_rec__f64(&r, ratio(x->errs - x->prev_errs, drpc));
	probe_rec__f64(&r, ratio(x->cerrs - x->prev_cerrs, drpc));
	probe_rec__f64(&r, ratio(x->serrs - x->prev_serrs, drpc));
	probe_rec__u64(&r, x->errs);
	probe_rec__u64(&r, x->cerrs);
	probe_rec__u64(&r, x->serrs);
	(void)probe_rt__emit(rt, &r);
}

/* l7_rpc_api rows of a (L7_SP_RPC), then rows idle for L7_KEY_IDLE_NS go. */
static void report_apis(struct l7_tracker *t, struct probe_rt *rt, struct agg *a, unsigned int subs, double period_s,
			uint64_t now_ns)
{
	struct api_row **pp = &a->apis;

	while (*pp) {
		struct api_row *x = *pp;

		if (rt && (subs & L7_SP_RPC))
			report_api(rt, a, x, period_s);
		x->prev_rpcs = x->rpcs;
		x->prev_errs = x->errs;
		x->prev_cerrs = x->cerrs;
		x->prev_serrs = x->serrs;
		x->prev_lat_sum = x->lat_sum;
		if (x->last_ns + L7_KEY_IDLE_NS < now_ns) {
			*pp = x->sib;
			api_row_free(t, x);
			continue;
		}
		pp = &x->sib;
	}
}

static void report_agg(struct probe_rt *rt, struct agg *a, unsigned int subs, double period_s)
{
	static struct probe_rec r;
	uint64_t drpc = a->rpcs - a->prev_rpcs, derr = a->errs - a->prev_errs;
	uint64_t dlat = a->lat_sum - a->prev_lat_sum;

	if (!rt)
		subs = 0;
	if (subs & L7_SP_BYTES) {
		probe_rec__begin(&r, &TBL_l7_link);
		rec_keys(&r, a);
		probe_rec__u64(&r, a->bytes_sent);
		probe_rec__u64(&r, a->bytes_recv);
		probe_rec__u64(&r, a->segs_sent);
		probe_rec__u64(&r, a->segs_recv);
		(void)probe_rt__emit(rt, &r);
	}
	if (subs & L7_SP_RPC) {
		probe_rec__begin(&r, &TBL_l7_rpc);
		rec_keys(&r, a);
		rec_rpcs(&r, drpc, a->rpcs, dlat, a->hist, a->lat_sum, period_s);
		probe_rec__f64(&r, drpc ? 100.0 * (double)derr / (double)drpc : 0);
		probe_rec__u64(&r, a->errs);
		(void)probe_rt__emit(rt, &r);
	}
	a->prev_rpcs = a->rpcs;
	a->prev_errs = a->errs;
	a->prev_lat_sum = a->lat_sum;
}

void l7_tracker__report(struct l7_tracker *t, struct probe_rt *rt, unsigned int subs, double period_s, uint64_t now_ns)
{
	for (uint32_t i = 0; i <= t->key_mask; i++) {
		struct agg **pp = &t->keys[i];

		while (*pp) {
			struct agg *a = *pp;

			report_agg(rt, a, subs, period_s);
			report_apis(t, rt, a, subs, period_s, now_ns);
			/* A key of processes gone or quiet for long goes (its counters start over if it comes back,
			 * a reset Prometheus' rate() handles), so that short-lived clients do not fill the table. */
			if (!a->refs && a->last_ns + L7_KEY_IDLE_NS < now_ns) {
				*pp = a->next;
				agg_free(t, a);
				t->nkeys--;
				continue;
			}
			pp = &a->next;
		}
	}
	unsigned int shown = 0;

	for (uint32_t i = 0; i <= t->conn_mask && t->nconns; i++) {
		struct conn **pp = &t->conns[i];

		while (*pp) {
			if (shown < 8 && probe_log_get_level() == PLOG_DEBUG) {
				shown++;
				probe_log(PLOG_DEBUG,
					  "conn tgid %u fd %d state %u role %u proto %u ports %u/%u idle %llu ms",
					  (*pp)->tgid, (*pp)->fd, (*pp)->state, (*pp)->role, (*pp)->proto, (*pp)->lport,
					  (*pp)->rport, (unsigned long long)((now_ns - (*pp)->last_ns) / 1000000u));
			}
			if ((*pp)->last_ns + L7_CONN_IDLE_NS < now_ns)
				conn_drop(t, pp);
			else
				pp = &(*pp)->next;
		}
	}
}

void l7_tracker__stats(const struct l7_tracker *t, struct l7_tracker_stats *ret)
{
	struct l7_session_stats ss;

	*ret = t->st;
	ret->unparsable = t->gone_unparsable;
	ret->resp_unmatched = t->gone_unmatched;
	ret->req_lost = t->gone_lost;
	ret->hpack_unresolved = t->gone_hpack;
	for (uint32_t i = 0; i <= t->conn_mask; i++) {
		for (const struct conn *c = t->conns[i]; c; c = c->next) {
			if (!c->sess)
				continue;
			l7_session__stats(c->sess, &ss);
			ret->unparsable += ss.unparsable;
			ret->resp_unmatched += ss.resp_unmatched;
			ret->req_lost += ss.req_lost;
			ret->hpack_unresolved += ss.hpack_unresolved;
		}
	}
	ret->conns = t->nconns;
	ret->apis = t->napis;
}

int l7_tracker__lookup(const struct l7_tracker *t, uint32_t tgid, int l7_role, uint16_t server_port,
		       struct l7_key_values *ret)
{
	for (uint32_t i = 0; i <= t->key_mask; i++) {
		for (const struct agg *a = t->keys[i]; a; a = a->next) {
			if (a->k.tgid != tgid || a->k.l7_role != l7_role || a->k.server_port != server_port)
				continue;
			*ret = (struct l7_key_values){.rpcs = a->rpcs,
						      .errs = a->errs,
						      .lat_sum = a->lat_sum,
						      .bytes_sent = a->bytes_sent,
						      .bytes_recv = a->bytes_recv,
						      .segs_sent = a->segs_sent,
						      .segs_recv = a->segs_recv,
						      .proto = a->k.proto,
						      .l4_role = a->k.l4_role,
						      .ssl = a->k.ssl};
			memcpy(ret->client_ip, a->k.client_ip, 16);
			return 0;
		}
	}
	return -ENOENT;
}

int l7_tracker__lookup_api(const struct l7_tracker *t, uint32_t tgid, int l7_role, uint16_t server_port,
			   const char *api, struct l7_api_values *ret)
{
	for (uint32_t i = 0; i <= t->key_mask; i++) {
		for (const struct agg *a = t->keys[i]; a; a = a->next) {
			if (a->k.tgid != tgid || a->k.l7_role != l7_role || a->k.server_port != server_port)
				continue;
			for (const struct api_row *x = a->apis; x; x = x->sib) {
				if (strcmp(x->api, api))
					continue;
				*ret = (struct l7_api_values){.rpcs = x->rpcs,
							      .errs = x->errs,
							      .client_errs = x->cerrs,
							      .server_errs = x->serrs,
							      .lat_sum = x->lat_sum};
				return 0;
			}
			return -ENOENT;
		}
	}
	return -ENOENT;
}
