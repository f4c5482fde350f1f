/* proto_mongo.c - the MongoDB wire protocol for l7probe: OP_MSG (section kind 0 body), the legacy
 * OP_QUERY/OP_REPLY handshake, OP_COMPRESSED counted (not decompressed); replies matched by responseTo,
 * api = command name (+ collection), error = ok: 0 in the reply body (or OP_REPLY QueryFailure). */
#include <string.h>

#include "l7_proto_impl.h"

#define MONGO_MSG_MAX	 48000000u /* maxMessageSizeBytes */
#define MONGO_PEEK	 512	   /* bytes of a message read: header, flags, the body's first elements */
#define OP_REPLY	 1
#define OP_UPDATE	 2001
#define OP_INSERT	 2002
#define OP_QUERY	 2004
#define OP_GET_MORE	 2005
#define OP_DELETE	 2006
#define OP_KILL_CURSORS	 2007
#define OP_COMPRESSED	 2012
#define OP_MSG		 2013
#define MSG_CHECKSUM	 (1u << 0)
#define MSG_MORE_TO_COME (1u << 1)
#define MSG_EXHAUST	 (1u << 16)
#define REPLY_QUERY_FAIL (1u << 1)

static bool req_opcode(uint32_t op)
{
	return op == OP_MSG || op == OP_QUERY || op == OP_COMPRESSED || op == OP_GET_MORE || op == OP_UPDATE ||
	       op == OP_INSERT || op == OP_DELETE || op == OP_KILL_CURSORS;
}

static bool resp_opcode(uint32_t op)
{
	return op == OP_MSG || op == OP_REPLY || op == OP_COMPRESSED;
}

/* Length of a cstring at p[0..n) with its NUL, 0 when not terminated there. */
static size_t cstr_len(const uint8_t *p, size_t n)
{
	const uint8_t *z = memchr(p, '\0', n);

	return z ? (size_t)(z - p) + 1 : 0;
}

/* Size of a BSON value of type t at p[0..n); 0 when it does not fit or t is unknown. */
static size_t bson_value_len(uint8_t t, const uint8_t *p, size_t n)
{
	size_t k = 0, k2;
	uint32_t v;
	bool doc;

	switch (t) {
	case 0x06:		 /* undefined */
	case 0x0a:		 /* null */
	case 0x7f:		 /* maxkey */
	case 0xff:		 /* minkey */
		return SIZE_MAX; /* empty: told apart from "does not fit" */
	case 0x08:
		k = 1;
		break;
	case 0x10:
		k = 4;
		break;
	case 0x01:
	case 0x09:
	case 0x11:
	case 0x12:
		k = 8;
		break;
	case 0x07:
		k = 12;
		break;
	case 0x13:
		k = 16;
		break;
	case 0x02:
	case 0x0d:
	case 0x0e:
	case 0x05:
	case 0x0c:
	case 0x03:
	case 0x04:
	case 0x0f:
		/* an int32 length first: of a whole document (embedded, array, code with scope), else of a
		 * string or binary after it (binary has a subtype byte, a DBPointer a 12-byte id after) */
		doc = t == 0x03 || t == 0x04 || t == 0x0f;
		if (n < 4)
			return 0;
		v = l7__le32(p);
		if (v > MONGO_MSG_MAX || (doc && v < 5))
			return 0;
		k = doc ? v : 4 + (size_t)v + (t == 0x05 ? 1 : 0) + (t == 0x0c ? 12 : 0);
		break;
	case 0x0b:
		k = cstr_len(p, n);
		k2 = k ? cstr_len(p + k, n - k) : 0;
		if (!k || !k2)
			return 0;
		k += k2;
		break;
	default:
		return 0;
	}
	return k <= n ? k : 0;
}

/* The first element of the document at p[0..n): its name (and string value) into api. */
static bool bson_first(const uint8_t *p, size_t n, char *api, size_t max)
{
	size_t k, w;

	if (n < 6 || l7__le32(p) < 5 || p[4] == 0)
		return false;
	k = cstr_len(p + 5, n - 5);
	if (k < 2)
		return false;
	w = l7__api_put(api, max, (const char *)p + 5, k - 1);
	if (p[4] == 0x02 && n >= 5 + k + 4) {
		uint32_t sl = l7__le32(p + 5 + k);
		size_t have = n - (5 + k + 4);

		if (sl >= 2 && w + 1 < max) {
			api[w++] = ' ';
			l7__api_put(api + w, max - w, (const char *)p + 5 + k + 4, sl - 1 < have ? sl - 1 : have);
		}
	}
	return true;
}

/* ok (number or bool) and code (int32) of the document's top-level elements at p[0..n), as far as
 * they were captured: 1 when ok is 0, 0 otherwise. */
static int bson_failed(const uint8_t *p, size_t n, int *ret_code)
{
	size_t i = 4, end;
	int failed = 0;

	if (n < 5)
		return 0;
	end = l7__le32(p);
	if (end > n)
		end = n;
	while (i < end && p[i] != 0) {
		uint8_t t = p[i];
		size_t k = cstr_len(p + i + 1, end - i - 1), v;
		const uint8_t *name = p + i + 1, *val;

		if (!k)
			break;
		val = name + k;
		v = bson_value_len(t, val, (size_t)(p + end - val));
		if (!v)
			break;
		if (v == SIZE_MAX)
			v = 0;
		if (k == 3 && memcmp(name, "ok", 2) == 0) {
			uint64_t raw = 0;

			if (t == 0x01 || t == 0x12)
				memcpy(&raw, val, 8);
			else if (t == 0x10)
				raw = l7__le32(val);
			else if (t == 0x08)
				raw = val[0];
			else
				raw = 1;
			/* double 0.0 or -0.0, int 0, false */
			failed = t == 0x01 ? (raw & ~(1ull << 63)) == 0 : raw == 0;
		} else if (k == 5 && memcmp(name, "code", 4) == 0 && t == 0x10) {
			*ret_code = (int)l7__le32(val);
		}
		i = (size_t)(val + v - p);
	}
	return failed;
}

long l7__mongo_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	struct l7_dir *d = &s->dir[flow];
	struct l7_msg *m = &d->msg;
	uint32_t len, id, to, op, flags = 0;
	size_t take;
	bool found = false;

	if (n < 16)
		return n >= 4 && (l7__le32(p) < 16 || l7__le32(p) > MONGO_MSG_MAX) ? -1 : 0;
	len = l7__le32(p);
	id = l7__le32(p + 4);
	to = l7__le32(p + 8);
	op = l7__le32(p + 12);
	if (len < 16 || len > MONGO_MSG_MAX)
		return -1;
	if (flow == L7_FLOW_REQ ? (!req_opcode(op) || to != 0) : !resp_opcode(op))
		return -1;
	if ((op == OP_MSG && len < 21) || (op == OP_REPLY && len < 36) || (op == OP_COMPRESSED && len < 25))
		return -1;
	if (flow == L7_FLOW_RESP && s->pend_cnt) {
		/* with requests waiting, a reply must answer one of them: anything else is garbage (or lost) */
		for (uint32_t i = 0; i < s->pend_cnt && !found; i++)
			found = l7__pend_at(s, i)->aux == to;
		if (!found)
			return -1;
	}
	take = len < MONGO_PEEK ? len : MONGO_PEEK;
	if (n < take && s->gap_follows)
		take = n;
	if (n < take)
		return 0;
	if (op == OP_MSG && take >= 20) { /* (a prefix cut by the capture may end sooner) */
		flags = l7__le32(p + 16);
		if (flags & ~(MSG_CHECKSUM | MSG_MORE_TO_COME | MSG_EXHAUST))
			return -1;
	}
	l7__msg_start(s, flow, start_ts);
	m->aux = flow == L7_FLOW_REQ ? id : to;
	if (flow == L7_FLOW_REQ) {
		switch (op) {
		case OP_MSG:
			if (take > 21 && p[20] == 0)
				bson_first(p + 21, take - 21, m->api, sizeof(m->api));
			m->ignore = (flags & MSG_MORE_TO_COME) != 0; /* fire and forget: no reply */
			break;
		case OP_QUERY: {
			size_t k = take > 20 ? cstr_len(p + 20, take - 20) : 0;

			if (!k || take < 20 + k + 8 || !bson_first(p + 28 + k, take - 28 - k, m->api, sizeof(m->api)))
				l7__api_put(m->api, sizeof(m->api), "OP_QUERY", 8);
			break;
		}
		case OP_GET_MORE:
			l7__api_put(m->api, sizeof(m->api), "OP_GET_MORE", 11);
			break;
		case OP_COMPRESSED:
			l7__api_put(m->api, sizeof(m->api), "OP_COMPRESSED", 13);
			break;
		default:
			m->ignore = true; /* legacy writes: never answered */
			break;
		}
		if (!m->api[0])
			l7__api_put(m->api, sizeof(m->api), "OP_MSG", 6);
	} else if (op == OP_MSG) {
		if (take > 21 && p[20] == 0)
			m->error = bson_failed(p + 21, take - 21, &m->status);
	} else if (op == OP_REPLY) {
		m->error = take >= 20 && (l7__le32(p + 16) & REPLY_QUERY_FAIL) != 0;
		if (take > 36)
			m->error |= bson_failed(p + 36, take - 36, &m->status);
	}
	if (!m->error)
		m->status = 0;
	l7__msg_end(s, flow);
	d->skip = len - take;
	return (long)take;
}

bool l7__mongo_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t len, to, op, dl;
	char name[L7_API_MAX];

	/* OP_MSG and OP_QUERY with a well-formed start of a document whose first key is a word */
	if (n < 32)
		return false;
	len = l7__le32(p);
	to = l7__le32(p + 8);
	op = l7__le32(p + 12);
	if (len < 26 || len > MONGO_MSG_MAX)
		return false;
	if (op == OP_MSG) {
		if ((l7__le32(p + 16) & ~(MSG_CHECKSUM | MSG_MORE_TO_COME | MSG_EXHAUST)) || p[20] != 0)
			return false;
		p += 21;
		n -= 21;
		len -= 21;
	} else if (op == OP_QUERY && to == 0) {
		size_t k = cstr_len(p + 20, n - 20);

		if (k < 3 || n < 28 + k + 6)
			return false;
		p += 28 + k;
		n -= 28 + k;
		len -= (uint32_t)(28 + k);
	} else {
		return false;
	}
	dl = l7__le32(p);
	if (dl < 5 || dl > len || !bson_first(p, n, name, sizeof(name)))
		return false;
	for (const char *c = name; *c && *c != ' '; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == '$'))
			return false;
	*ret_flow = to == 0 ? L7_FLOW_REQ : L7_FLOW_RESP;
	return true;
}
