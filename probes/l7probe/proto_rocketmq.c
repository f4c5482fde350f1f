/* proto_rocketmq.c - the RocketMQ remoting protocol for l7probe: length-prefixed commands whose header is
 * JSON or RocketMQ's binary encoding, responses matched by opaque, api = request code name (+ topic),
 * error = a response code other than SUCCESS (0). */
#include <stdio.h>
#include <string.h>

#include "l7_proto_impl.h"

#define RMQ_MSG_MAX	 (64u << 20) /* brokers refuse frames above 16 MiB by default (frameMaxLength) */
#define RMQ_PEEK	 4096	     /* header bytes read: a JSON header names opaque after extFields */
#define RMQ_BIN_FIXED	 21	     /* binary header: code 2, language 1, version 2, opaque 4, flag 4, 2 lengths */
#define RMQ_FLAG_RESP	 (1u << 0)   /* RemotingCommand RPC_TYPE bit: a response */
#define RMQ_FLAG_ONEWAY	 (1u << 1)   /* RPC_ONEWAY bit: a request never answered */
#define RMQ_TYPE_JSON	 0
#define RMQ_TYPE_BINARY	 1
#define RMQ_LANGUAGE_MAX 32 /* LanguageCode: JAVA 0 .. OMS 11, RUST 12; room for more */
#define RMQ_TOPIC_MAX	 48

/* Request codes (org.apache.rocketmq.remoting.protocol.RequestCode), sorted by code. */
static const struct {
	uint16_t code;
	const char *name;
} rmq_codes[] = {
	{10, "SEND_MESSAGE"},
	{11, "PULL_MESSAGE"},
	{12, "QUERY_MESSAGE"},
	{13, "QUERY_BROKER_OFFSET"},
	{14, "QUERY_CONSUMER_OFFSET"},
	{15, "UPDATE_CONSUMER_OFFSET"},
	{17, "UPDATE_AND_CREATE_TOPIC"},
	{18, "UPDATE_AND_CREATE_TOPIC_LIST"},
	{21, "GET_ALL_TOPIC_CONFIG"},
	{22, "GET_TOPIC_CONFIG_LIST"},
	{23, "GET_TOPIC_NAME_LIST"},
	{25, "UPDATE_BROKER_CONFIG"},
	{26, "GET_BROKER_CONFIG"},
	{27, "TRIGGER_DELETE_FILES"},
	{28, "GET_BROKER_RUNTIME_INFO"},
	{29, "SEARCH_OFFSET_BY_TIMESTAMP"},
	{30, "GET_MAX_OFFSET"},
	{31, "GET_MIN_OFFSET"},
	{32, "GET_EARLIEST_MSG_STORETIME"},
	{33, "VIEW_MESSAGE_BY_ID"},
	{34, "HEART_BEAT"},
	{35, "UNREGISTER_CLIENT"},
	{36, "CONSUMER_SEND_MSG_BACK"},
	{37, "END_TRANSACTION"},
	{38, "GET_CONSUMER_LIST_BY_GROUP"},
	{39, "CHECK_TRANSACTION_STATE"},
	{40, "NOTIFY_CONSUMER_IDS_CHANGED"},
	{41, "LOCK_BATCH_MQ"},
	{42, "UNLOCK_BATCH_MQ"},
	{43, "GET_ALL_CONSUMER_OFFSET"},
	{45, "GET_ALL_DELAY_OFFSET"},
	{46, "CHECK_CLIENT_CONFIG"},
	{47, "GET_CLIENT_CONFIG"},
	{50, "UPDATE_AND_CREATE_ACL_CONFIG"},
	{51, "DELETE_ACL_CONFIG"},
	{52, "GET_BROKER_CLUSTER_ACL_INFO"},
	{53, "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG"},
	{54, "GET_BROKER_CLUSTER_ACL_CONFIG"},
	{60, "GET_TIMER_CHECK_POINT"},
	{61, "GET_TIMER_METRICS"},
	{100, "PUT_KV_CONFIG"},
	{101, "GET_KV_CONFIG"},
	{102, "DELETE_KV_CONFIG"},
	{103, "REGISTER_BROKER"},
	{104, "UNREGISTER_BROKER"},
	{105, "GET_ROUTEINFO_BY_TOPIC"},
	{106, "GET_BROKER_CLUSTER_INFO"},
	{200, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"},
	{201, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG"},
	{202, "GET_TOPIC_STATS_INFO"},
	{203, "GET_CONSUMER_CONNECTION_LIST"},
	{204, "GET_PRODUCER_CONNECTION_LIST"},
	{205, "WIPE_WRITE_PERM_OF_BROKER"},
	{206, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"},
	{207, "DELETE_SUBSCRIPTIONGROUP"},
	{208, "GET_CONSUME_STATS"},
	{209, "SUSPEND_CONSUMER"},
	{210, "RESUME_CONSUMER"},
	{211, "RESET_CONSUMER_OFFSET_IN_CONSUMER"},
	{212, "RESET_CONSUMER_OFFSET_IN_BROKER"},
	{213, "ADJUST_CONSUMER_THREAD_POOL"},
	{214, "WHO_CONSUME_THE_MESSAGE"},
	{215, "DELETE_TOPIC_IN_BROKER"},
	{216, "DELETE_TOPIC_IN_NAMESRV"},
	{217, "REGISTER_TOPIC_IN_NAMESRV"},
	{219, "GET_KVLIST_BY_NAMESPACE"},
	{220, "RESET_CONSUMER_CLIENT_OFFSET"},
	{221, "GET_CONSUMER_STATUS_FROM_CLIENT"},
	{222, "INVOKE_BROKER_TO_RESET_OFFSET"},
	{223, "INVOKE_BROKER_TO_GET_CONSUMER_STATUS"},
	{224, "GET_TOPICS_BY_CLUSTER"},
	{225, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST"},
	{300, "QUERY_TOPIC_CONSUME_BY_WHO"},
	{301, "REGISTER_FILTER_SERVER"},
	{302, "REGISTER_MESSAGE_FILTER_CLASS"},
	{303, "QUERY_CONSUME_TIME_SPAN"},
	{304, "GET_SYSTEM_TOPIC_LIST_FROM_NS"},
	{305, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER"},
	{306, "CLEAN_EXPIRED_CONSUMEQUEUE"},
	{307, "GET_CONSUMER_RUNNING_INFO"},
	{308, "QUERY_CORRECTION_OFFSET"},
	{309, "CONSUME_MESSAGE_DIRECTLY"},
	{310, "SEND_MESSAGE_V2"},
	{311, "GET_UNIT_TOPIC_LIST"},
	{312, "GET_HAS_UNIT_SUB_TOPIC_LIST"},
	{313, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST"},
	{314, "CLONE_GROUP_OFFSET"},
	{315, "VIEW_BROKER_STATS_DATA"},
	{316, "CLEAN_UNUSED_TOPIC"},
	{317, "GET_BROKER_CONSUME_STATS"},
	{318, "UPDATE_NAMESRV_CONFIG"},
	{319, "GET_NAMESRV_CONFIG"},
	{320, "SEND_BATCH_MESSAGE"},
	{321, "QUERY_CONSUME_QUEUE"},
	{322, "QUERY_DATA_VERSION"},
	{323, "RESUME_CHECK_HALF_MESSAGE"},
	{324, "SEND_REPLY_MESSAGE"},
	{325, "SEND_REPLY_MESSAGE_V2"},
	{326, "PUSH_REPLY_MESSAGE_TO_CLIENT"},
	{327, "ADD_WRITE_PERM_OF_BROKER"},
	{328, "GET_ALL_PRODUCER_INFO"},
	{329, "DELETE_EXPIRED_COMMITLOG"},
	{343, "QUERY_TOPICS_BY_CONSUMER"},
	{345, "QUERY_SUBSCRIPTION_BY_CONSUMER"},
	{351, "GET_TOPIC_CONFIG"},
	{352, "GET_SUBSCRIPTIONGROUP_CONFIG"},
	{353, "UPDATE_AND_GET_GROUP_FORBIDDEN"},
	{354, "CHECK_ROCKSDB_CQ_WRITE_PROGRESS"},
	{361, "LITE_PULL_MESSAGE"},
	{400, "QUERY_ASSIGNMENT"},
	{401, "SET_MESSAGE_REQUEST_MODE"},
	{402, "GET_ALL_MESSAGE_REQUEST_MODE"},
	{513, "UPDATE_AND_CREATE_STATIC_TOPIC"},
	{901, "GET_BROKER_MEMBER_GROUP"},
	{902, "ADD_BROKER"},
	{903, "REMOVE_BROKER"},
	{904, "BROKER_HEARTBEAT"},
	{905, "NOTIFY_MIN_BROKER_ID_CHANGE"},
	{906, "EXCHANGE_BROKER_HA_INFO"},
	{907, "GET_BROKER_HA_STATUS"},
	{908, "RESET_MASTER_FLUSH_OFFSET"},
	{1001, "CONTROLLER_ALTER_SYNC_STATE_SET"},
	{1002, "CONTROLLER_ELECT_MASTER"},
	{1003, "CONTROLLER_REGISTER_BROKER"},
	{1004, "CONTROLLER_GET_REPLICA_INFO"},
	{1005, "CONTROLLER_GET_METADATA_INFO"},
	{1006, "CONTROLLER_GET_SYNC_STATE_DATA"},
	{1007, "GET_BROKER_EPOCH_CACHE"},
	{1008, "NOTIFY_BROKER_ROLE_CHANGED"},
	{1009, "UPDATE_CONTROLLER_CONFIG"},
	{1010, "GET_CONTROLLER_CONFIG"},
	{1011, "CLEAN_BROKER_DATA"},
	{1012, "CONTROLLER_GET_NEXT_BROKER_ID"},
	{1013, "CONTROLLER_APPLY_BROKER_ID"},
	{2001, "UPDATE_COLD_DATA_FLOW_CTR_CONFIG"},
	{2002, "REMOVE_COLD_DATA_FLOW_CTR_CONFIG"},
	{2003, "GET_COLD_DATA_FLOW_CTR_INFO"},
	{2004, "SET_COMMITLOG_READ_MODE"},
	{3442, "POP_MESSAGE"},
	{3443, "ACK_MESSAGE"},
	{3444, "PEEK_MESSAGE"},
	{3445, "CHANGE_MESSAGE_INVISIBLETIME"},
	{3446, "NOTIFICATION"},
	{3447, "POLLING_INFO"},
	{3543, "BATCH_ACK_MESSAGE"},
};

#define RMQ_NCODES (sizeof(rmq_codes) / sizeof(rmq_codes[0]))

static const char *rmq_code_name(uint32_t code)
{
	size_t lo = 0, hi = RMQ_NCODES;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rmq_codes[mid].code == code)
			return rmq_codes[mid].name;
		if (rmq_codes[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The extFields key that holds the topic: SendMessageRequestHeaderV2 names its fields a, b, c... (b is
 * the topic); the other headers call it topic. */
static bool rmq_v2(uint32_t code)
{
	return code == 310 || code == 320 || code == 325;
}

/* Codes a pull or pop answers when there is nothing (yet) to read: the normal end of a long poll, not
 * a failure (PULL_NOT_FOUND 19, PULL_RETRY_IMMEDIATELY 20, NO_MESSAGE 208, POLLING_TIMEOUT 210). */
static bool rmq_no_message(uint32_t req, int resp)
{
	bool pull = req == 11 || req == 361 || req == 3442 || req == 3444;

	return pull && (resp == 19 || resp == 20 || resp == 208 || resp == 210);
}

/* What a header says. */
struct rmq_hdr {
	int32_t code;
	uint32_t opaque, flag;
	bool has_code, has_opaque, has_flag;
	char topic[RMQ_TOPIC_MAX];
};

static void rmq_topic(struct rmq_hdr *h, const uint8_t *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < sizeof(h->topic); i++)
		if (v[i] > 0x20 && v[i] < 0x7f) /* topics are [%|a-zA-Z0-9_-]; nothing else reaches the api */
			h->topic[k++] = (char)v[i];
	h->topic[k] = '\0';
}

/* RocketMQ's binary header at p[0..n) (n may be a prefix of hlen): the fixed part, then extFields
 * (2-byte key length, key, 4-byte value length, value) for the topic. false when malformed. */
static bool rmq_binary(const uint8_t *p, size_t n, uint32_t hlen, bool req, struct rmq_hdr *h)
{
	uint32_t rlen, elen;
	size_t i, end;

	if (n < RMQ_BIN_FIXED - 4 || hlen < RMQ_BIN_FIXED)
		return false;
	h->code = (int16_t)l7__be16(p);
	h->opaque = l7__be32(p + 5);
	h->flag = l7__be32(p + 9);
	h->has_code = h->has_opaque = h->has_flag = true;
	if (p[2] >= RMQ_LANGUAGE_MAX || (h->flag & ~(RMQ_FLAG_RESP | RMQ_FLAG_ONEWAY)))
		return false;
	rlen = l7__be32(p + 13);
	if (rlen > hlen - RMQ_BIN_FIXED)
		return false;
	if ((size_t)17 + rlen + 4 > n)
		return true; /* the rest was not captured (or not read): enough is known */
	elen = l7__be32(p + 17 + rlen);
	if ((uint64_t)RMQ_BIN_FIXED + rlen + elen != hlen)
		return false; /* the lengths must add up to the header's */
	if (!req)
		return true;
	i = (size_t)RMQ_BIN_FIXED + rlen;
	end = n < hlen ? n : hlen;
	while (i + 2 <= end) {
		uint32_t kl = l7__be16(p + i), vl;
		const uint8_t *key = p + i + 2;

		if (i + 2 + kl + 4 > end)
			break;
		vl = l7__be32(key + kl);
		if (vl > hlen || i + 6 + kl + vl > hlen)
			return false;
		if ((rmq_v2((uint32_t)h->code) ? kl == 1 && key[0] == 'b' : kl == 5 && !memcmp(key, "topic", 5))) {
			size_t have = i + 6 + kl + vl <= end ? vl : end - (i + 6 + kl);

			rmq_topic(h, key + kl + 4, have);
			break;
		}
		i += 6 + kl + vl;
	}
	return true;
}

/* ---- JSON headers: a scanner of the top-level object (and extFields), bounded by n ---- */

static size_t json_ws(const uint8_t *p, size_t n, size_t i)
{
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	return i;
}

/* A string starting at p[i] == '"': the index after its closing quote, 0 when it does not end in n. */
static size_t json_str(const uint8_t *p, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return i + 1;
	}
	return 0;
}

/* Any value at p[i]: the index after it, 0 when it does not end within n or is malformed. Objects and
 * arrays are passed over by depth (at most 32). */
static size_t json_skip(const uint8_t *p, size_t n, size_t i)
{
	unsigned int depth = 0;

	if (i >= n)
		return 0;
	if (p[i] == '"')
		return json_str(p, n, i);
	if (p[i] != '{' && p[i] != '[') {
		size_t s = i;

		while (i < n && ((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'z') || p[i] == '-' ||
				 p[i] == '+' || p[i] == '.' || p[i] == 'E'))
			i++;
		return i > s && i < n ? i : 0;
	}
	for (; i < n; i++) {
		if (p[i] == '"') {
			i = json_str(p, n, i);
			if (!i)
				return 0;
			i--;
		} else if (p[i] == '{' || p[i] == '[') {
			if (++depth > 32)
				return 0;
		} else if (p[i] == '}' || p[i] == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return 0;
}

/* An integer at p[i..n): into *v; the index after it, 0 when none. */
static size_t json_int(const uint8_t *p, size_t n, size_t i, int64_t *v)
{
	bool neg = i < n && p[i] == '-';
	size_t s;
	int64_t x = 0;

	if (neg)
		i++;
	for (s = i; i < n && p[i] >= '0' && p[i] <= '9' && i - s < 11; i++)
		x = x * 10 + (p[i] - '0');
	if (i == s || i >= n || (p[i] >= '0' && p[i] <= '9'))
		return 0;
	*v = neg ? -x : x;
	return i;
}

static bool json_key(const uint8_t *p, size_t k, size_t e, const char *name)
{
	size_t l = strlen(name);

	return e - k == l + 2 && !memcmp(p + k + 1, name, l);
}

/* extFields' members at p[i] == '{' for the topic: its string value. Returns the index after the
 * object, 0 when it does not end within n (what was read is kept). */
static size_t json_ext(const uint8_t *p, size_t n, size_t i, bool v2, struct rmq_hdr *h)
{
	const char *want = v2 ? "b" : "topic";

	i = json_ws(p, n, i + 1);
	if (i < n && p[i] == '}')
		return i + 1;
	while (i < n && p[i] == '"') {
		size_t k = i, e = json_str(p, n, i), ve;

		if (!e)
			return 0;
		i = json_ws(p, n, e);
		if (i >= n || p[i] != ':')
			return 0;
		i = json_ws(p, n, i + 1);
		ve = json_skip(p, n, i);
		if (!ve)
			return 0;
		if (p[i] == '"' && !h->topic[0] && json_key(p, k, e, want))
			rmq_topic(h, p + i + 1, ve - i - 2);
		i = json_ws(p, n, ve);
		if (i < n && p[i] == '}')
			return i + 1;
		if (i >= n || p[i] != ',')
			return 0;
		i = json_ws(p, n, i + 1);
	}
	return 0;
}

/* A JSON header at p[0..n): code, opaque, flag (and extFields' topic) among the top-level members, in
 * any order (fastjson writes them sorted, Go and C++ clients in their structs' order). false when it is
 * not a JSON object; members cut by the end of what was captured are not read. */
static bool rmq_json(const uint8_t *p, size_t n, struct rmq_hdr *h)
{
	size_t i = json_ws(p, n, 0), ext = 0;

	if (i >= n || p[i] != '{')
		return false;
	i = json_ws(p, n, i + 1);
	while (i < n && p[i] == '"') {
		size_t k = i, e = json_str(p, n, i), ve;
		int64_t v;

		if (!e)
			break;
		i = json_ws(p, n, e);
		if (i >= n)
			break;
		if (p[i] != ':')
			return false;
		i = json_ws(p, n, i + 1);
		if (i >= n)
			break;
		if (json_key(p, k, e, "code") || json_key(p, k, e, "opaque") || json_key(p, k, e, "flag")) {
			ve = json_int(p, n, i, &v);
			if (!ve)
				return false;
			if (p[k + 1] == 'c') {
				h->code = (int32_t)v;
				h->has_code = true;
			} else if (p[k + 1] == 'o') {
				h->opaque = (uint32_t)v;
				h->has_opaque = true;
			} else {
				h->flag = (uint32_t)v;
				h->has_flag = true;
			}
		} else if (json_key(p, k, e, "extFields") && p[i] == '{') {
			/* the code says which key is the topic: read now when known (it comes first in fastjson's
			 * order and the Go client's), else once the header is read */
			if (h->has_code) {
				ve = json_ext(p, n, i, rmq_v2((uint32_t)h->code), h);
			} else {
				ext = i;
				ve = json_skip(p, n, i);
			}
		} else {
			ve = json_skip(p, n, i);
		}
		if (!ve)
			break;
		i = json_ws(p, n, ve);
		if (i < n && p[i] == '}')
			break;
		if (i < n && p[i] != ',')
			return false;
		i = json_ws(p, n, i + 1);
	}
	if (ext && h->has_code)
		json_ext(p, n, ext, rmq_v2((uint32_t)h->code), h);
	return h->has_code && h->has_flag && h->has_opaque && !(h->flag & ~(RMQ_FLAG_RESP | RMQ_FLAG_ONEWAY));
}

/* The frame's 8-byte prefix: total length (after itself), serialize type and header length. */
static bool rmq_prefix(const uint8_t *p, uint32_t *ret_len, uint32_t *ret_type, uint32_t *ret_hlen)
{
	uint32_t len = l7__be32(p), hw = l7__be32(p + 4), type = hw >> 24, hlen = hw & 0xffffff;

	if (len > RMQ_MSG_MAX || len < 4 || type > RMQ_TYPE_BINARY || hlen > len - 4 ||
	    hlen < (type == RMQ_TYPE_BINARY ? RMQ_BIN_FIXED : 2))
		return false;
	*ret_len = len;
	*ret_type = type;
	*ret_hlen = hlen;
	return true;
}

long l7__rocketmq_parse(struct l7_session *s, enum l7_flow flow, const uint8_t *p, size_t n, uint64_t start_ts)
{
	struct l7_dir *d = &s->dir[flow];
	struct l7_msg *m = &d->msg;
	struct rmq_hdr h = {0};
	uint32_t len, type, hlen, req_code = 0;
	size_t take;
	bool resp;

	if (n < 8)
		return n >= 5 && p[4] > RMQ_TYPE_BINARY ? -1 : 0;
	if (!rmq_prefix(p, &len, &type, &hlen))
		return -1;
	take = 8 + (size_t)(hlen < RMQ_PEEK ? hlen : RMQ_PEEK);
	if (n < take && s->gap_follows)
		take = n;
	if (n < take)
		return 0;
	if (type == RMQ_TYPE_BINARY ? !rmq_binary(p + 8, take - 8, hlen, flow == L7_FLOW_REQ, &h)
				    : !rmq_json(p + 8, take - 8, &h))
		return -1;
	resp = (h.flag & RMQ_FLAG_RESP) != 0;
	if (flow == L7_FLOW_RESP && resp && s->pend_cnt) {
		/* with requests waiting, a response must answer one of them: anything else is garbage (or lost) */
		struct l7_pend *q = NULL;

		for (uint32_t i = 0; i < s->pend_cnt && !q; i++)
			if (l7__pend_at(s, i)->aux == h.opaque)
				q = l7__pend_at(s, i);
		if (!q)
			return -1;
		req_code = q->aux2;
	}
	l7__msg_start(s, flow, start_ts);
	m->aux = h.opaque;
	if (flow == L7_FLOW_REQ) {
		const char *name = rmq_code_name((uint32_t)h.code);
		size_t w;

		/* a client answering the broker's own request (CHECK_TRANSACTION_STATE...), or a oneway */
		m->ignore = resp || (h.flag & RMQ_FLAG_ONEWAY);
		m->aux2 = (uint32_t)h.code;
		if (name) {
			w = l7__api_put(m->api, sizeof(m->api), name, strlen(name));
		} else {
			int k = snprintf(m->api, sizeof(m->api), "CODE_%d", (int)h.code);

			w = k > 0 ? (size_t)k : 0;
		}
		if (h.topic[0] && w + 2 < sizeof(m->api)) {
			m->api[w++] = ' ';
			l7__api_put(m->api + w, sizeof(m->api) - w, h.topic, sizeof(h.topic));
		}
	} else if (!resp) {
		m->ignore = true; /* the broker's own request to the client: not a response */
	} else {
		m->status = h.code;
		m->error = h.code != 0 && !rmq_no_message(req_code, h.code);
	}
	l7__msg_end(s, flow);
	d->skip = 4 + (uint64_t)len - take;
	return (long)take;
}

bool l7__rocketmq_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t len, type, hlen;
	struct rmq_hdr h = {0};
	size_t have;

	/* the 8-byte prefix in bounds, then a header that is wholly consistent: binary lengths adding up to
	 * the header length, or a JSON object with code, flag and opaque; requests must name a known code */
	if (n < 8 + RMQ_BIN_FIXED || !rmq_prefix(p, &len, &type, &hlen))
		return false;
	have = n - 8 < hlen ? n - 8 : hlen;
	if (type == RMQ_TYPE_BINARY) {
		/* the remark whole, so that extFields' length is checked too */
		if (have < RMQ_BIN_FIXED || (uint64_t)RMQ_BIN_FIXED + l7__be32(p + 8 + 13) > have ||
		    !rmq_binary(p + 8, have, hlen, true, &h))
			return false;
	} else if (p[8] != '{' || p[9] != '"' || !rmq_json(p + 8, have, &h)) {
		return false;
	}
	if (!(h.flag & RMQ_FLAG_RESP) && !rmq_code_name((uint32_t)h.code))
		return false;
	*ret_flow = (h.flag & RMQ_FLAG_RESP) ? L7_FLOW_RESP : L7_FLOW_REQ;
	return true;
}
