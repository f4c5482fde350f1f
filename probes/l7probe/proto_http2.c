/* proto_http2.c - HTTP/2 (RFC 9113) and gRPC for l7probe: frames read one at a time (payloads passed
 * over by count), header blocks decoded with HPACK (hpack.c, one dynamic table per direction), streams
 * multiplexed on the connection paired by stream id; api = :method :path, errors = :status >= 400
 * or, for gRPC, grpc-status != 0. */
#include <stdlib.h>
#include <string.h>

#include "hpack.h"
#include "l7_proto_impl.h"

#define H2_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN 24u
#define H2_HDR	       9u

enum {
	F_DATA = 0,
	F_HEADERS = 1,
	F_PRIORITY = 2,
	F_RST_STREAM = 3,
	F_SETTINGS = 4,
	F_PUSH_PROMISE = 5,
	F_PING = 6,
	F_GOAWAY = 7,
	F_WINDOW_UPDATE = 8,
	F_CONTINUATION = 9,
};

#define FL_END_STREAM  0x01u
#define FL_ACK	       0x01u
#define FL_END_HEADERS 0x04u
#define FL_PADDED      0x08u
#define FL_PRIORITY    0x20u

/* Frames longer than this are taken as garbage until a frame was read (after a loss of sync, or a
 * capture that started mid-connection); SETTINGS_MAX_FRAME_SIZE is 16384 unless raised. */
#define H2_STRICT_LEN 65536u
/* Bytes of one field representation split between two frames of a header block carried over. */
#define H2_CARRY 256u
/* A representation that needs more than this is not waited for: the block is given up. */
#define H2_REPR_MAX (L7_BUF_MAX - 64u)

/* One stream (request and response) in flight. */
struct h2_stream {
	uint32_t sid;
	int status;	 /* :status of the final response header block; 0 until then or unresolved */
	int grpc_status; /* -1 until seen */
	bool grpc;	 /* gRPC: content-type application/grpc in the request, or a grpc-status in the response */
	bool resp_headers;
	uint64_t req_ts, req_bytes, resp_bytes;
	char api[L7_API_MAX];
};

/* One direction: its HPACK table, the header block and the frame being read. */
struct h2_dir {
	struct hpack_table hp;
	bool started; /* something was read in this direction */
	bool synced;  /* a frame was read since the start or the last loss of sync: frames are trusted */
	/* the frame being read */
	bool in_frag;	       /* inside a header block fragment, frag_left bytes to go */
	bool frag_end_headers; /* its frame ends the block (END_HEADERS) */
	uint32_t frag_left, frag_pad;
	uint32_t end_sid; /* a DATA frame with END_STREAM: its stream ends when its payload is passed */
	/* the header block being read */
	bool blk_open; /* more of it to come (CONTINUATION) */
	bool blk_lost; /* cannot be decoded any more (its fields are lost, the table forgotten) */
	bool blk_push; /* PUSH_PROMISE: decoded for the table only */
	bool blk_end_stream;
	uint32_t blk_sid;
	uint64_t blk_ts;
	uint64_t blk_bytes; /* wire bytes of its frames (a request's, before its stream exists) */
	uint16_t carry_len;
	uint8_t carry[H2_CARRY];
	/* fields of the block read so far */
	int f_status, f_grpc_status;
	bool f_grpc;
	char f_method[16];
	char f_path[L7_API_MAX];
};

struct l7_h2 {
	struct h2_dir dir[2];
	struct h2_stream *st;
	uint32_t st_cnt, st_cap;
};

static struct l7_h2 *h2_of(struct l7_session *s)
{
	struct l7_h2 *h;

	if (s->ext)
		return s->ext;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	hpack_table__init(&h->dir[0].hp);
	hpack_table__init(&h->dir[1].hp);
	s->ext = h;
	return h;
}

/* ---- streams ------------------------------------------------------------------------------------ */

static struct h2_stream *stream_find(struct l7_h2 *h, uint32_t sid)
{
	for (uint32_t i = 0; i < h->st_cnt; i++)
		if (h->st[i].sid == sid)
			return &h->st[i];
	return NULL;
}

static void stream_remove(struct l7_h2 *h, struct h2_stream *st)
{
	*st = h->st[--h->st_cnt];
}

/* A new stream; when L7_PENDING_MAX are open, the oldest (lowest id: its response was lost) goes. */
static struct h2_stream *stream_new(struct l7_session *s, struct l7_h2 *h, uint32_t sid)
{
	struct h2_stream *st;

	if (h->st_cnt == h->st_cap) {
		uint32_t cap = h->st_cap ? h->st_cap * 2 : 4;

		if (cap > L7_PENDING_MAX) {
			uint32_t old = 0;

			for (uint32_t i = 1; i < h->st_cnt; i++)
				if (h->st[i].sid < h->st[old].sid)
					old = i;
			stream_remove(h, &h->st[old]);
			s->st.req_lost++;
		} else {
			st = realloc(h->st, cap * sizeof(*st));
			if (!st) {
				s->st.req_overflow++;
				return NULL;
			}
			h->st = st;
			h->st_cap = cap;
		}
	}
	st = &h->st[h->st_cnt++];
	memset(st, 0, sizeof(*st));
	st->sid = sid;
	st->grpc_status = -1;
	return st;
}

/* The response of st ended (END_STREAM) or the stream was reset: report it. */
static void stream_report(struct l7_session *s, struct l7_h2 *h, struct h2_stream *st, bool reset)
{
	struct l7_rpc rpc;

	memset(&rpc, 0, sizeof(rpc));
	rpc.req_ts_ns = st->req_ts;
	rpc.resp_ts_ns = s->ts_ns > st->req_ts ? s->ts_ns : st->req_ts;
	rpc.req_bytes = st->req_bytes;
	rpc.resp_bytes = st->resp_bytes;
	rpc.status = st->status;
	rpc.error = st->status >= 400 || reset;
	if (st->grpc && st->grpc_status >= 0 && st->status < 400) {
		/* gRPC answers with 200 and says in grpc-status (trailers) how the call went */
		rpc.status = st->grpc_status;
		rpc.error = st->grpc_status != 0 || reset;
	}
	memcpy(rpc.api, st->api, sizeof(rpc.api));
	stream_remove(h, st);
	l7__rpc_report(s, &rpc);
}

/* ---- header blocks ------------------------------------------------------------------------------ */

static bool name_is(const struct hpack_field *f, const char *name, size_t len)
{
	return f->name_len == len && memcmp(f->name, name, len) == 0;
}

static int small_int(const char *v, size_t n)
{
	int x = 0;

	if (n == 0 || n > 4)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

static void on_field(void *ctx, const struct hpack_field *f)
{
	struct h2_dir *D = ctx;

	if (f->name_len && f->name[0] == ':') {
		if (name_is(f, ":method", 7)) {
			l7__api_put(D->f_method, sizeof(D->f_method), f->value, f->value_len);
		} else if (name_is(f, ":path", 5)) {
			size_t k = 0;

			while (k < f->value_len && f->value[k] != '?' && f->value[k] != '#')
				k++;
			l7__api_put(D->f_path, sizeof(D->f_path), f->value, k);
		} else if (name_is(f, ":status", 7)) {
			D->f_status = small_int(f->value, f->value_len);
		}
	} else if (name_is(f, "content-type", 12)) {
		D->f_grpc = f->value_len >= 16 && memcmp(f->value, "application/grpc", 16) == 0;
	} else if (name_is(f, "grpc-status", 11)) {
		D->f_grpc_status = small_int(f->value, f->value_len);
	}
}

/* Decode p[0..n) of the block into D's table and fields, counting the fields left unresolved. */
static long block_decode(struct l7_session *s, struct h2_dir *D, const uint8_t *p, size_t n, size_t *need)
{
	uint64_t before = D->hp.unresolved;
	long r = hpack_decode(&D->hp, p, n, on_field, D, need);

	s->st.hpack_unresolved += D->hp.unresolved - before;
	return r;
}

/* The block cannot be read on: what it would have added to the table is unknown. */
static void block_lose(struct h2_dir *D)
{
	if (!D->blk_lost)
		hpack_table__forget(&D->hp);
	D->blk_lost = true;
	D->carry_len = 0;
}

static void block_open(struct h2_dir *D, uint32_t sid, uint64_t ts, bool end_stream, bool push)
{
	D->blk_open = true;
	D->blk_lost = false;
	D->blk_push = push;
	D->blk_end_stream = end_stream;
	D->blk_sid = sid;
	D->blk_ts = ts;
	D->blk_bytes = 0;
	D->carry_len = 0;
	D->f_status = 0;
	D->f_grpc_status = -1;
	D->f_grpc = false;
	D->f_method[0] = '\0';
	D->f_path[0] = '\0';
}

/* The stream ended in direction flow (END_STREAM seen and its frame passed). */
static void stream_end(struct l7_session *s, struct l7_h2 *h, enum l7_flow flow, uint32_t sid)
{
	struct h2_stream *st = stream_find(h, sid);

	if (flow == L7_FLOW_REQ)
		return; /* the request is complete; the response decides */
	if (st)
		stream_report(s, h, st, false);
	else if (sid & 1)
		s->st.resp_unmatched++; /* its request was before the capture (or lost) */
}

/* The whole header block was read (or given up): what it means for its stream. */
static void block_done(struct l7_session *s, struct l7_h2 *h, enum l7_flow flow)
{
	struct h2_dir *D = &h->dir[flow];
	struct h2_stream *st;

	D->blk_open = false;
	if (D->carry_len)
		block_lose(D); /* a block must end on a field boundary */
	if (D->blk_push)
		return;
	st = stream_find(h, D->blk_sid);
	if (flow == L7_FLOW_REQ) {
		if (!st && (D->blk_sid & 1)) {
			st = stream_new(s, h, D->blk_sid);
			if (st) {
				size_t k = l7__api_put(st->api, sizeof(st->api), D->f_method, sizeof(D->f_method));

				if (D->f_path[0] && k + 1 < sizeof(st->api)) {
					st->api[k++] = ' ';
					l7__api_put(st->api + k, sizeof(st->api) - k, D->f_path, sizeof(D->f_path));
				}
				st->req_ts = D->blk_ts;
				st->grpc = D->f_grpc;
				/* the bytes of the block's frames were counted before the stream existed */
				st->req_bytes = D->blk_bytes;
			}
		}
	} else if (st) {
		if (D->f_status >= 100 && D->f_status < 200 && !D->blk_end_stream)
			return; /* interim (100 Continue, 103 Early Hints): the final response follows */
		if (!st->resp_headers) {
			st->resp_headers = true;
			st->status = D->f_status > 0 ? D->f_status : 0;
		}
		if (D->f_grpc_status >= 0) {
			st->grpc_status = D->f_grpc_status;
			st->grpc = true; /* a request's content-type may have been unresolved */
		}
	}
	if (D->blk_end_stream)
		stream_end(s, h, flow, D->blk_sid);
}

/* The fragment being read ended (its padding still to pass). */
static void frag_done(struct l7_session *s, struct l7_h2 *h, enum l7_flow flow, bool end_headers)
{
	struct h2_dir *D = &h->dir[flow];

	D->in_frag = false;
	s->dir[flow].skip = D->frag_pad;
	if (end_headers)
		block_done(s, h, flow);
}

/*
 * Read the next bytes p[0..n) of a header block fragment (D->frag_left to go). A field cut by the end of
 * what is here is waited for (0), unless more will never come: a gap follows (the block is lost, the
 * rest of the fragment passed over by count) or it is cut by the end of the frame (carried into the
 * next CONTINUATION).
 */
static long frag_parse(struct l7_session *s, struct l7_h2 *h, enum l7_flow flow, const uint8_t *p, size_t n)
{
	struct h2_dir *D = &h->dir[flow];
	size_t m = n < D->frag_left ? n : D->frag_left, need = 0;
	bool last = m == D->frag_left; /* the fragment ends within p */
	bool end_headers = D->frag_end_headers;
	long r;

	if (D->blk_lost) {
		r = (long)m;
		goto consumed;
	}
	if (D->carry_len) {
		/* a field split between two frames: join its start with this frame's first bytes */
		uint8_t tmp[2 * H2_CARRY];
		size_t add = m < H2_CARRY ? m : H2_CARRY, c = D->carry_len;

		memcpy(tmp, D->carry, c);
		memcpy(tmp + c, p, add);
		r = block_decode(s, D, tmp, c + add, &need);
		if (r > (long)c) {
			D->carry_len = 0;
			r -= (long)c;
			goto consumed;
		}
		if (r < 0 || add == H2_CARRY || last || s->gap_follows) {
			block_lose(D);
			r = (long)m;
			goto consumed;
		}
		return 0;
	}
	r = block_decode(s, D, p, m, &need);
	if (r < 0) {
		block_lose(D);
		r = (long)m;
	} else if (r == 0) {
		if (last && !end_headers && m <= H2_CARRY) {
			memcpy(D->carry, p, m);
			D->carry_len = (uint16_t)m;
			r = (long)m;
		} else if (last || s->gap_follows || need > H2_REPR_MAX || m >= H2_REPR_MAX) {
			block_lose(D);
			r = (long)m;
		} else {
			return 0;
		}
	}
consumed:
	D->frag_left -= (uint32_t)r;
	if (D->frag_left == 0) {
		frag_done(s, h, flow, end_headers);
	} else if (s->gap_follows && (size_t)r == n) {
		/* the rest of the fragment was not captured */
		uint64_t rest = D->frag_left;

		block_lose(D);
		D->frag_left = 0;
		frag_done(s, h, flow, end_headers);
		s->dir[flow].skip += rest;
	}
	return r;
}

/* Is this frame header plausible? Strictly (not synced): only the frame types of RFC 9113 with the
 * lengths and stream ids they must have, so that garbage or the middle of a frame is not taken for
 * one. */
static bool frame_ok(uint32_t len, uint8_t type, uint32_t sid, bool strict)
{
	if (!strict)
		return true;
	if (len > H2_STRICT_LEN || (sid & 0x80000000u))
		return false;
	switch (type) {
	case F_DATA:
	case F_HEADERS:
	case F_CONTINUATION:
		return sid != 0;
	case F_PRIORITY:
		return sid != 0 && len == 5;
	case F_RST_STREAM:
		return sid != 0 && len == 4;
	case F_SETTINGS:
		return sid == 0 && len % 6 == 0;
	case F_PUSH_PROMISE:
		return sid != 0 && len >= 4;
	case F_PING:
		return sid == 0 && len == 8;
	case F_GOAWAY:
		return sid == 0 && len >= 8;
	case F_WINDOW_UPDATE:
		return len == 4;
	default:
		return false;
	}
}

/* Add a frame's wire bytes to its stream (a request's header block: to the block until the stream
 * exists). */
static void stream_bytes(struct l7_h2 *h, enum l7_flow flow, uint32_t sid, uint64_t bytes, bool block)
{
	struct h2_stream *st = stream_find(h, sid);

	if (st) {
		if (flow == L7_FLOW_REQ)
			st->req_bytes += bytes;
		else
			st->resp_bytes += bytes;
	} else if (block) {
		h->dir[flow].blk_bytes += bytes;
	}
}

/* A HEADERS, PUSH_PROMISE or CONTINUATION frame (flags fl) starts a fragment of its header block: left
 * bytes, then pad bytes of padding. at_end: the frame's header is all that was captured before a gap. */
static void frag_begin(struct l7_session *s, struct l7_h2 *h, enum l7_flow flow, uint8_t fl, uint32_t left,
		       uint32_t pad, bool at_end)
{
	struct h2_dir *D = &h->dir[flow];
	struct l7_dir *d = &s->dir[flow];

	D->frag_end_headers = fl & FL_END_HEADERS;
	D->frag_left = left;
	D->frag_pad = pad;
	D->in_frag = true;
	if (D->frag_left && s->gap_follows && at_end) {
		/* the block's fragment was not captured at all */
		block_lose(D);
		d->skip = D->frag_left;
		D->frag_left = 0;
	}
	if (D->frag_left == 0) {
		uint64_t rest = d->skip;

		frag_done(s, h, flow, D->frag_end_headers);
		d->skip += rest;
	}
}

/* A frame header at p[0..n) (n >= 9). */
static long frame_parse(struct l7_session *s, struct l7_h2 *h, enum l7_flow flow, const uint8_t *p, size_t n,
			uint64_t ts)
{
	struct h2_dir *D = &h->dir[flow];
	struct l7_dir *d = &s->dir[flow];
	uint32_t len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	uint8_t type = p[3], fl = p[4];
	uint32_t sid = l7__be32(p + 5) & 0x7fffffffu;
	uint32_t pre = 0, pad = 0;
	bool whole = n >= H2_HDR + len;

	if (!frame_ok(len, type, l7__be32(p + 5), !D->synced))
		return -1;
	D->synced = true;
	if (D->blk_open && (type != F_CONTINUATION || sid != D->blk_sid)) {
		/* a header block must be followed by its CONTINUATION frames: what it lacks is lost */
		block_lose(D);
		block_done(s, h, flow);
	}
	switch (type) {
	case F_DATA:
		stream_bytes(h, flow, sid, H2_HDR + (uint64_t)len, false);
		if (fl & FL_END_STREAM) {
			D->end_sid = sid;
			l7__msg_end(s, flow); /* the stream ends once the payload is passed (finish) */
		}
		d->skip = len;
		return H2_HDR;
	case F_HEADERS:
	case F_PUSH_PROMISE:
		if (fl & FL_PADDED)
			pre = 1;
		if (type == F_HEADERS && (fl & FL_PRIORITY))
			pre += 5;
		if (type == F_PUSH_PROMISE)
			pre += 4;
		if (n < H2_HDR + pre) {
			if (s->gap_follows) {
				/* not even the start of the block was captured */
				block_open(D, sid, ts, type == F_HEADERS && (fl & FL_END_STREAM),
					   type == F_PUSH_PROMISE);
				stream_bytes(h, flow, sid, H2_HDR + (uint64_t)len, true);
				block_lose(D);
				D->frag_end_headers = fl & FL_END_HEADERS;
				d->skip = len;
				D->frag_left = 0;
				D->frag_pad = 0;
				if (D->frag_end_headers)
					block_done(s, h, flow);
				return H2_HDR;
			}
			return 0;
		}
		if (fl & FL_PADDED)
			pad = p[H2_HDR];
		if (pre + pad > len)
			return -1; /* padding longer than the frame: a protocol error, not HTTP/2 as we know it */
		block_open(D, sid, ts, type == F_HEADERS && (fl & FL_END_STREAM), type == F_PUSH_PROMISE);
		stream_bytes(h, flow, sid, H2_HDR + (uint64_t)len, true);
		frag_begin(s, h, flow, fl, len - pre - pad, pad, n == H2_HDR + pre);
		return (long)(H2_HDR + pre);
	case F_CONTINUATION:
		if (!D->blk_open) {
			d->skip = len; /* its HEADERS was not seen: nothing to continue */
			return H2_HDR;
		}
		stream_bytes(h, flow, sid, H2_HDR + (uint64_t)len, true);
		frag_begin(s, h, flow, fl, len, 0, n == H2_HDR);
		return H2_HDR;
	case F_RST_STREAM:
		if (len == 4 && sid) {
			struct h2_stream *st = stream_find(h, sid);

			/* reset before its response ended (the error code does not matter: the request failed) */
			if (st)
				stream_report(s, h, st, true);
		}
		d->skip = len;
		return H2_HDR;
	case F_SETTINGS:
		if (fl & FL_ACK || len % 6 || len > 6 * 64) {
			d->skip = len;
			return H2_HDR;
		}
		if (!whole) {
			if (!s->gap_follows)
				return 0;
			d->skip = len; /* not captured */
			return H2_HDR;
		}
		for (uint32_t i = 0; i < len; i += 6) {
			uint16_t id = l7__be16(p + H2_HDR + i);
			uint32_t v = l7__be32(p + H2_HDR + i + 2);

			/* the sender's decoder limits the other direction's encoder */
			if (id == 1)
				hpack_table__settings(&h->dir[!flow].hp, v);
		}
		return (long)(H2_HDR + len);
	case F_GOAWAY:
		if (flow == L7_FLOW_RESP && len >= 8 && n >= H2_HDR + 4) {
			uint32_t last = l7__be32(p + H2_HDR) & 0x7fffffffu;

			/* streams the server never processed: not answered on this connection */
			for (uint32_t i = 0; i < h->st_cnt;) {
				if (h->st[i].sid > last) {
					stream_remove(h, &h->st[i]);
					s->st.req_lost++;
				} else {
					i++;
				}
			}
		} else if (flow == L7_FLOW_RESP && !whole && !s->gap_follows && n < H2_HDR + 4) {
			return 0;
		}
		d->skip = len;
		return H2_HDR;
	default:
		/* PRIORITY, PING, WINDOW_UPDATE and extension frames: nothing for us */
		d->skip = len;
		return H2_HDR;
	}
}

long l7__http2_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	struct l7_h2 *h = h2_of(s);
	struct h2_dir *D;

	if (!h)
		return -1;
	D = &h->dir[flow];
	if (D->in_frag)
		return frag_parse(s, h, flow, p, n);
	if (flow == L7_FLOW_REQ && !D->started) {
		size_t k = n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN;

		if (memcmp(p, H2_PREFACE, k) == 0) {
			if (n < H2_PREFACE_LEN)
				return 0;
			/* the connection's start: the tables are complete, the frames trusted */
			D->started = true;
			D->synced = true;
			return H2_PREFACE_LEN;
		}
	}
	D->started = true;
	if (n < H2_HDR)
		return 0;
	return frame_parse(s, h, flow, p, n, start_ts);
}

void l7__http2_upgraded(struct l7_session *s, const struct l7_pend *req)
{
	struct l7_h2 *h = h2_of(s);
	struct h2_stream *st;

	if (!h)
		return;
	/* the server's side starts here with its SETTINGS: tables complete, frames trusted */
	h->dir[L7_FLOW_RESP].started = true;
	h->dir[L7_FLOW_RESP].synced = true;
	if (!req)
		return;
	st = stream_new(s, h, 1);
	if (!st)
		return;
	st->req_ts = req->ts_ns;
	st->req_bytes = req->bytes;
	memcpy(st->api, req->api, sizeof(st->api));
}

/* A DATA frame with END_STREAM was passed. */
void l7__http2_finish(struct l7_session *s, enum l7_flow flow)
{
	struct l7_h2 *h = s->ext;

	if (!h || !h->dir[flow].end_sid)
		return;
	stream_end(s, h, flow, h->dir[flow].end_sid);
	h->dir[flow].end_sid = 0;
}

/* flow lost its place: the frame being read is gone, and with it maybe a header block (the table's
 * entries can no longer be trusted). */
void l7__http2_desync(struct l7_session *s, enum l7_flow flow)
{
	struct l7_h2 *h = s->ext;
	struct h2_dir *D;

	if (!h)
		return;
	D = &h->dir[flow];
	D->in_frag = false;
	D->frag_left = 0;
	D->end_sid = 0;
	D->synced = false;
	hpack_table__forget(&D->hp);
	D->blk_open = false;
	D->carry_len = 0;
}

/* The connection closed: streams still open were never answered. */
void l7__http2_close(struct l7_session *s)
{
	struct l7_h2 *h = s->ext;

	if (!h)
		return;
	s->st.req_lost += h->st_cnt;
	h->st_cnt = 0;
}

void l7__http2_destroy(struct l7_session *s)
{
	struct l7_h2 *h = s->ext;

	if (!h)
		return;
	hpack_table__fini(&h->dir[0].hp);
	hpack_table__fini(&h->dir[1].hp);
	free(h->st);
	free(h);
	s->ext = NULL;
}

size_t l7__http2_mem(const struct l7_session *s)
{
	const struct l7_h2 *h = s->ext;

	if (!h)
		return 0;
	return sizeof(*h) + hpack_table__mem(&h->dir[0].hp) + hpack_table__mem(&h->dir[1].hp) +
	       (size_t)h->st_cap * sizeof(*h->st);
}

/* ---- inference ---------------------------------------------------------------------------------- */

bool l7__http2_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t len;

	if (n >= 16 && memcmp(p, H2_PREFACE, n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN) == 0) {
		*ret_flow = L7_FLOW_REQ;
		return true;
	}
	/* a server speaks first with SETTINGS (no ACK, stream 0), its parameters known and in range */
	if (n < H2_HDR || p[3] != F_SETTINGS || p[4] != 0 || l7__be32(p + 5) != 0)
		return false;
	len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	if (len % 6 || len > 60 || n < H2_HDR + len)
		return false;
	for (uint32_t i = 0; i < len; i += 6) {
		uint16_t id = l7__be16(p + H2_HDR + i);
		uint32_t v = l7__be32(p + H2_HDR + i + 2);

		/* unknown ids are allowed (gRPC sends 0xfe03), known ones must be in range */
		if (id == 0 || (id == 2 && v > 1) || (id == 4 && v > 0x7fffffffu) ||
		    (id == 5 && (v < 16384 || v > 0xffffffu)) || (id == 8 && v > 1) || (id == 9 && v > 1))
			return false;
	}
	*ret_flow = L7_FLOW_RESP;
	return true;
}

bool l7__http2_infer_mid(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t len, sid, at = H2_HDR, idx;
	uint8_t fl, b;

	/* control frames that often come first on a busy connection (WINDOW_UPDATE, PING, a SETTINGS ACK,
	 * RST_STREAM, PRIORITY) say nothing of the direction: passed over, whole and well-formed, up to a
	 * HEADERS frame in the same chunk */
	for (int k = 0; k < 8 && n >= H2_HDR && p[3] != F_HEADERS; k++) {
		len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
		if (p[3] == F_DATA || p[3] == F_HEADERS || p[3] == F_PUSH_PROMISE || p[3] == F_CONTINUATION ||
		    p[3] == F_GOAWAY || !frame_ok(len, p[3], l7__be32(p + 5), true) ||
		    (p[3] == F_SETTINGS && p[4] != FL_ACK) || (p[3] != F_SETTINGS && p[3] != F_PING && p[4] != 0) ||
		    n < H2_HDR + len)
			return false;
		p += H2_HDR + len;
		n -= H2_HDR + len;
	}
	if (n < H2_HDR + 2 || p[3] != F_HEADERS)
		return false;
	len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	fl = p[4];
	sid = l7__be32(p + 5);
	if (len < 2 || len > 16384 || (fl & ~(FL_END_STREAM | FL_END_HEADERS | FL_PADDED | FL_PRIORITY)) ||
	    !(sid & 1) || (sid & 0x80000000u))
		return false;
	at += (fl & FL_PADDED ? 1u : 0u) + (fl & FL_PRIORITY ? 5u : 0u);
	if (at >= n || at >= H2_HDR + len)
		return false;
	b = p[at];
	if ((b & 0xe0) == 0x20) {
		/* a table size update first: 5-bit prefix, at most 2 more bytes for sizes up to 2^19 */
		at++;
		if ((b & 0x1f) == 0x1f) {
			while (at < n && (p[at] & 0x80) && at < H2_HDR + 12)
				at++;
			at++;
		}
		if (at >= n)
			return false;
		b = p[at];
	}
	/* the first field is a pseudo-header from the static table: indexed (1..14) or a literal with its
	 * name (incremental 01, without 0000, never 0001) */
	if (b >= 0xbe)
		idx = 62; /* a dynamic entry (a request: a response starts with :status, from the static table) */
	else if (b & 0x80)
		idx = b & 0x7f;
	else if ((b & 0xc0) == 0x40)
		idx = b & 0x3f;
	else if ((b & 0xe0) == 0)
		idx = b & 0x0f;
	else
		return false;
	if (idx < 1 || (idx > 14 && idx != 62))
		return false;
	*ret_flow = idx >= 8 && idx <= 14 ? L7_FLOW_RESP : L7_FLOW_REQ;
	return true;
}
