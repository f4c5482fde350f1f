/* proto_kafka.c - the Kafka wire protocol for l7probe: size-prefixed requests (header v1, v2 with tagged
 * fields), responses matched by correlation id, api = API name (+ topic of Produce/Fetch), error codes
 * of ApiVersions, Produce, Fetch, Metadata and the group calls read from the response's first bytes. */
#include <stdio.h>
#include <string.h>

#include "l7_proto_impl.h"

#define KAFKA_MSG_MAX	 (1u << 28) /* brokers refuse more than socket.request.max.bytes (100 MiB) */
#define KAFKA_PEEK	 256	    /* bytes after the size read for the header, topic and error code */
#define KAFKA_KEYS	 69
#define KAFKA_VER_MAX	 20
#define KAFKA_AUX2(k, v) ((uint32_t)(k) << 16 | (uint32_t)(v))

#define K_PRODUCE     0
#define K_FETCH	      1
#define K_METADATA    3
#define K_APIVERSIONS 18

/* Name and first flexible version (header v2 / response header v1; 0xff: never) per api key. */
static const struct {
	const char *name;
	uint8_t flex;
} kafka_apis[KAFKA_KEYS] = {
	[0] = {"Produce", 9},
	[1] = {"Fetch", 12},
	[2] = {"ListOffsets", 6},
	[3] = {"Metadata", 9},
	[4] = {"LeaderAndIsr", 4},
	[5] = {"StopReplica", 2},
	[6] = {"UpdateMetadata", 6},
	[7] = {"ControlledShutdown", 3},
	[8] = {"OffsetCommit", 8},
	[9] = {"OffsetFetch", 6},
	[10] = {"FindCoordinator", 3},
	[11] = {"JoinGroup", 6},
	[12] = {"Heartbeat", 4},
	[13] = {"LeaveGroup", 4},
	[14] = {"SyncGroup", 4},
	[15] = {"DescribeGroups", 5},
	[16] = {"ListGroups", 3},
	[17] = {"SaslHandshake", 0xff},
	[18] = {"ApiVersions", 3},
	[19] = {"CreateTopics", 5},
	[20] = {"DeleteTopics", 4},
	[21] = {"DeleteRecords", 2},
	[22] = {"InitProducerId", 2},
	[23] = {"OffsetForLeaderEpoch", 4},
	[24] = {"AddPartitionsToTxn", 3},
	[25] = {"AddOffsetsToTxn", 3},
	[26] = {"EndTxn", 3},
	[27] = {"WriteTxnMarkers", 1},
	[28] = {"TxnOffsetCommit", 3},
	[29] = {"DescribeAcls", 2},
	[30] = {"CreateAcls", 2},
	[31] = {"DeleteAcls", 2},
	[32] = {"DescribeConfigs", 4},
	[33] = {"AlterConfigs", 2},
	[34] = {"AlterReplicaLogDirs", 2},
	[35] = {"DescribeLogDirs", 2},
	[36] = {"SaslAuthenticate", 2},
	[37] = {"CreatePartitions", 2},
	[38] = {"CreateDelegationToken", 2},
	[39] = {"RenewDelegationToken", 2},
	[40] = {"ExpireDelegationToken", 2},
	[41] = {"DescribeDelegationToken", 2},
	[42] = {"DeleteGroups", 2},
	[43] = {"ElectLeaders", 2},
	[44] = {"IncrementalAlterConfigs", 1},
	[45] = {"AlterPartitionReassignments", 0},
	[46] = {"ListPartitionReassignments", 0},
	[47] = {"OffsetDelete", 0xff},
	[48] = {"DescribeClientQuotas", 1},
	[49] = {"AlterClientQuotas", 1},
	[50] = {"DescribeUserScramCredentials", 0},
	[51] = {"AlterUserScramCredentials", 0},
	[55] = {"DescribeQuorum", 0},
	[57] = {"UpdateFeatures", 0},
	[60] = {"DescribeCluster", 0},
	[61] = {"DescribeProducers", 0},
	[65] = {"DescribeTransactions", 0},
	[66] = {"ListTransactions", 0},
	[67] = {"AllocateProducerIds", 0},
	[68] = {"ConsumerGroupHeartbeat", 0},
};

static bool known(uint16_t key, uint16_t ver)
{
	return key < KAFKA_KEYS && kafka_apis[key].name && ver <= KAFKA_VER_MAX;
}

static bool flexible(uint16_t key, uint16_t ver)
{
	return ver >= kafka_apis[key].flex;
}

/* A bounds-checked reader of the captured prefix: any read past it sets bad. */
struct kcur {
	const uint8_t *p;
	size_t n, i;
	bool flex, bad;
};

static void k_skip(struct kcur *c, uint64_t k)
{
	if (c->bad || k > c->n - c->i)
		c->bad = true;
	else
		c->i += (size_t)k;
}

static uint32_t k_be(struct kcur *c, size_t k)
{
	uint32_t v = 0;

	if (c->bad || k > c->n - c->i) {
		c->bad = true;
		return 0;
	}
	for (size_t j = 0; j < k; j++)
		v = v << 8 | c->p[c->i + j];
	c->i += k;
	return v;
}

static uint64_t k_uvarint(struct kcur *c)
{
	uint64_t v = 0;

	for (int sh = 0; sh < 35; sh += 7) {
		uint8_t b = (uint8_t)k_be(c, 1);

		if (c->bad)
			return 0;
		v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

/* A (nullable) string: its bytes at *ret, length returned; -1 for null or bad. */
static long k_str(struct kcur *c, const uint8_t **ret)
{
	long len;

	if (c->flex)
		len = (long)k_uvarint(c) - 1;
	else
		len = (int16_t)k_be(c, 2);
	if (c->bad || len < 0)
		return -1;
	*ret = c->p + c->i;
	k_skip(c, (uint64_t)len);
	return c->bad ? -1 : len;
}

/* An array's element count (-1 null or bad). */
static long k_array(struct kcur *c)
{
	long n = c->flex ? (long)k_uvarint(c) - 1 : (int32_t)k_be(c, 4);

	return c->bad ? -1 : n;
}

static void k_tags(struct kcur *c)
{
	uint64_t n = k_uvarint(c);

	for (uint64_t j = 0; j < n && !c->bad; j++) {
		k_uvarint(c);
		k_skip(c, k_uvarint(c));
	}
}

/* The first topic named in a Produce or Fetch request (cursor after the request header). */
static long request_topic(struct kcur *c, uint16_t key, uint16_t ver, const uint8_t **ret)
{
	const uint8_t *t;

	if (key == K_PRODUCE) {
		if (ver >= 3)
			k_str(c, &t); /* transactional_id */
		k_skip(c, 6);	      /* acks, timeout */
	} else {
		if (ver >= 13)
			return -1; /* topics by id */
		k_skip(c, ver >= 3 ? 16 : 12);
		k_skip(c, ver >= 4 ? 1 : 0);
		k_skip(c, ver >= 7 ? 8 : 0);
	}
	if (k_array(c) < 1)
		return -1;
	return k_str(c, ret);
}

/* The error code of a response (cursor after its header), -1 when not read. */
static int response_error(struct kcur *c, uint16_t key, uint16_t ver)
{
	const uint8_t *t;
	int top = 0;

	switch (key) {
	case K_APIVERSIONS:
	case 17: /* SaslHandshake */
		return (int16_t)k_be(c, 2);
	case 22: /* InitProducerId */
		k_skip(c, 4);
		return (int16_t)k_be(c, 2);
	case 10: /* FindCoordinator v1-3: throttle_time_ms, error_code (v4: per coordinator) */
	case 12: /* Heartbeat */
	case 13: /* LeaveGroup */
	case 14: /* SyncGroup */
		if (key == 10 && ver >= 4)
			return -1;
		k_skip(c, ver >= 1 ? 4 : 0);
		return (int16_t)k_be(c, 2);
	case 11: /* JoinGroup */
		k_skip(c, ver >= 2 ? 4 : 0);
		return (int16_t)k_be(c, 2);
	case K_PRODUCE:
		if (k_array(c) < 1 || k_str(c, &t) < 0 || k_array(c) < 1)
			return -1;
		k_skip(c, 4);
		return (int16_t)k_be(c, 2);
	case K_FETCH:
		k_skip(c, ver >= 1 ? 4 : 0);
		if (ver >= 7) {
			top = (int16_t)k_be(c, 2);
			if (top || c->bad)
				return c->bad ? -1 : top;
			k_skip(c, 4);
		}
		if (k_array(c) < 1)
			return -1;
		if (ver >= 13)
			k_skip(c, 16);
		else if (k_str(c, &t) < 0)
			return -1;
		if (k_array(c) < 1)
			return -1;
		k_skip(c, 4);
		return (int16_t)k_be(c, 2);
	case K_METADATA: {
		long brokers;

		k_skip(c, ver >= 3 ? 4 : 0);
		brokers = k_array(c);
		for (long b = 0; b < brokers && !c->bad; b++) {
			k_skip(c, 4);
			k_str(c, &t);
			k_skip(c, 4);
			if (ver >= 1)
				k_str(c, &t); /* rack, nullable: -1 is fine */
			if (c->flex)
				k_tags(c);
		}
		if (ver >= 2)
			k_str(c, &t);
		k_skip(c, ver >= 1 ? 4 : 0);
		if (brokers < 0 || k_array(c) < 1)
			return -1;
		return (int16_t)k_be(c, 2);
	}
	default:
		return -1;
	}
}

/* A message's size (the int32 before it), once its first hdr bytes are there: 1, 0 while fewer bytes
 * are, -1 when it is no Kafka message (at least min bytes, at most KAFKA_MSG_MAX). */
static long k_size(const uint8_t *p, size_t n, size_t hdr, uint32_t min, uint32_t *ret_size)
{
	if (p[0] > (KAFKA_MSG_MAX >> 24))
		return -1;
	if (n < hdr)
		return 0;
	*ret_size = l7__be32(p);
	return *ret_size < min || *ret_size > KAFKA_MSG_MAX ? -1 : 1;
}

/* How much of the message after its size to read now (want bytes, what there is when a gap follows
 * this chunk); false while more bytes must come first. */
static bool k_take(const struct l7_session *s, size_t n, size_t want, size_t *ret_take)
{
	if (n < 4 + want && s->gap_follows)
		want = n - 4;
	*ret_take = want;
	return n >= 4 + want;
}

long l7__kafka_parse_req(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_dir *d = &s->dir[L7_FLOW_REQ];
	struct l7_msg *m = &d->msg;
	struct kcur c = {0};
	uint32_t size, corr;
	uint16_t key, ver;
	size_t take;
	const uint8_t *t;
	int16_t cid;
	long len = k_size(p, n, 14, 10, &size);

	if (len <= 0)
		return len;
	key = l7__be16(p + 4);
	ver = l7__be16(p + 6);
	corr = l7__be32(p + 8);
	cid = (int16_t)l7__be16(p + 12);
	if (!known(key, ver) || cid < -1 || cid > (int32_t)size - 10)
		return -1;
	if (!k_take(s, n, size < KAFKA_PEEK ? size : KAFKA_PEEK, &take))
		return 0;
	l7__msg_start(s, L7_FLOW_REQ, ts);
	m->aux = corr;
	m->aux2 = KAFKA_AUX2(key, ver);
	len = (long)snprintf(m->api, sizeof(m->api), "%s", kafka_apis[key].name);
	c.p = p + 4;
	c.n = take;
	c.i = 10 + (cid > 0 ? (size_t)cid : 0);
	if (c.i > c.n)
		c.bad = true;
	if (flexible(key, ver))
		k_tags(&c);
	c.flex = flexible(key, ver);
	if (key == K_PRODUCE && ver >= 3) {
		struct kcur a = c;
		const uint8_t *x;
		uint32_t acks;

		k_str(&a, &x);
		acks = k_be(&a, 2);
		if (!a.bad && acks == 0)
			m->ignore = true; /* acks=0: the broker sends no response */
	} else if (key == K_PRODUCE && !c.bad && c.i + 2 <= c.n && l7__be16(c.p + c.i) == 0) {
		m->ignore = true;
	}
	if (key == K_PRODUCE || key == K_FETCH) {
		long tl = request_topic(&c, key, ver, &t);

		if (tl > 0 && !c.bad && len + 1 < (long)sizeof(m->api)) {
			m->api[len++] = ' ';
			l7__api_put(m->api + len, sizeof(m->api) - (size_t)len, (const char *)t, (size_t)tl);
		}
	}
	l7__msg_end(s, L7_FLOW_REQ);
	d->skip = size - take;
	return (long)(4 + take);
}

/* The waiting request with correlation id corr (its place in the queue at *ret_idx), NULL when none. */
static const struct l7_pend *pend_by_corr(struct l7_session *s, uint32_t corr, uint32_t *ret_idx)
{
	for (uint32_t i = 0; i < s->pend_cnt; i++) {
		if (l7__pend_at(s, i)->aux == corr) {
			*ret_idx = i;
			return l7__pend_at(s, i);
		}
	}
	return NULL;
}

long l7__kafka_parse_resp(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_dir *d = &s->dir[L7_FLOW_RESP];
	struct l7_msg *m = &d->msg;
	const struct l7_pend *q;
	struct kcur c = {0};
	uint32_t size, corr, idx = 0;
	uint16_t key, ver;
	size_t take;
	int err;
	long r = k_size(p, n, 8, 4, &size);

	if (r <= 0)
		return r;
	corr = l7__be32(p + 4);
	q = pend_by_corr(s, corr, &idx);
	/* with requests waiting, a response must answer one of them: what else is garbage (or lost) */
	if (!q && s->pend_cnt)
		return -1;
	if (!k_take(s, n, q ? (size < KAFKA_PEEK ? size : KAFKA_PEEK) : 4, &take))
		return 0;
	l7__msg_start(s, L7_FLOW_RESP, ts);
	m->aux = corr;
	if (q) {
		key = (uint16_t)(q->aux2 >> 16);
		ver = (uint16_t)q->aux2;
		/* a broker answers a connection's requests in order: those sent before this one whose
		 * answers were not seen (lost in a gap, unparsable) will never be */
		l7__pend_drop(s, idx);
		c.p = p + 4;
		c.n = take;
		c.i = 4;
		/* ApiVersions answers with header v0 whatever its version, so an old broker can read it */
		if (flexible(key, ver) && key != K_APIVERSIONS)
			k_tags(&c);
		c.flex = flexible(key, ver);
		err = response_error(&c, key, ver);
		if (!c.bad && err > 0) {
			m->status = err;
			m->error = 1;
		}
	}
	l7__msg_end(s, L7_FLOW_RESP);
	d->skip = size - take;
	return (long)(4 + take);
}

bool l7__kafka_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t size;
	uint16_t key, ver;
	int16_t cid;

	/* requests only: a response's size and correlation id say too little */
	if (n < 15)
		return false;
	size = l7__be32(p);
	key = l7__be16(p + 4);
	ver = l7__be16(p + 6);
	cid = (int16_t)l7__be16(p + 12);
	if (size < 12 || size > (1u << 24) || !known(key, ver) || ver > 15 || cid < 1 || cid > 255 ||
	    (uint32_t)cid > size - 10)
		return false;
	/* client ids are printable (rdkafka, producer-1, consumer-group-...) */
	for (size_t i = 14; i < 14 + (size_t)cid && i < n; i++)
		if (p[i] < 0x20 || p[i] >= 0x7f)
			return false;
	*ret_flow = L7_FLOW_REQ;
	return true;
}
