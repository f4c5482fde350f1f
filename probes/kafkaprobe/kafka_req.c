/* kafka_req.c - Kafka request parsing for kafkaprobe (kafka_req.h). Big-endian fields, classic
 * (int16/int32 lengths) and flexible (unsigned varint lengths + 1, tagged fields) encodings, as the
 * Kafka protocol guide and its JSON message specs define them. Every read is bounds-checked against
 * the prefix; running out of the prefix before the request's end is "truncated", running out of the
 * request itself is "bad". */
#include "kafka_req.h"

#include <string.h>

/* RecordBatch v2 (magic 2): baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, crc 4,
 * attributes 2, lastOffsetDelta 4, baseTimestamp 8, maxTimestamp 8, producerId 8, producerEpoch 2,
 * baseSequence 4, recordsCount 4. */
#define RB_MAGIC_OFF 16
#define RB_COUNT_OFF 57
#define RB_HDR_LEN   61

struct rd {
	const uint8_t *p;
	size_t pos, end; /* end: min(prefix, request) */
	int cut;	 /* end is the prefix's, not the request's */
	int err;	 /* 1: ran out */
	int in_records;	 /* ran out inside a partition's records (after its batch headers) */
};

static int need(struct rd *r, size_t n)
{
	if (r->err || n > r->end - r->pos) {
		r->err = 1;
		return 0;
	}
	return 1;
}

static uint64_t be(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (!need(r, n))
		return 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | r->p[r->pos + i];
	r->pos += n;
	return v;
}

static int16_t i16(struct rd *r)
{
	return (int16_t)be(r, 2);
}

static int32_t i32(struct rd *r)
{
	return (int32_t)be(r, 4);
}

static int64_t i64(struct rd *r)
{
	return (int64_t)be(r, 8);
}

static void skip(struct rd *r, size_t n)
{
	if (need(r, n))
		r->pos += n;
}

/* An unsigned varint of at most 5 bytes (32 bits). */
static uint32_t uvarint(struct rd *r)
{
	uint32_t v = 0;

	for (int i = 0; i < 5; i++) {
		uint8_t b;

		if (!need(r, 1))
			return 0;
		b = r->p[r->pos++];
		v |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	r->err = 1; /* longer than 5 bytes: not ours */
	return 0;
}

/* Tagged fields: a count, then (tag, size, bytes) each. */
static void tags(struct rd *r)
{
	uint32_t n = uvarint(r);

	for (uint32_t i = 0; i < n && !r->err; i++) {
		(void)uvarint(r);
		skip(r, uvarint(r));
	}
}

/* A string's length: classic int16 (-1: null), flexible uvarint - 1. -2: bad. */
static int32_t str_len(struct rd *r, int flex)
{
	if (flex) {
		uint32_t n = uvarint(r);

		return r->err ? -2 : (int32_t)n - 1;
	}
	return r->err ? -2 : i16(r);
}

/* An array's count, classic int32, flexible uvarint - 1; -1 is null. */
static int64_t arr_len(struct rd *r, int flex)
{
	if (flex)
		return (int64_t)uvarint(r) - 1;
	return i32(r);
}

int kreq_header(const uint8_t *buf, size_t len, struct kreq_hdr *hdr)
{
	struct rd r = {.p = buf, .end = len};
	int32_t cid_len;

	hdr->size = (uint32_t)be(&r, 4);
	hdr->api_key = i16(&r);
	hdr->api_version = i16(&r);
	hdr->correlation_id = i32(&r);
	cid_len = i16(&r);
	if (r.err)
		return KREQ_BAD;
	if (hdr->size < 10 || hdr->size > KREQ_SIZE_MAX || hdr->api_key < 0 || hdr->api_key > 80 ||
	    hdr->api_version < 0 || hdr->api_version > 20 || hdr->correlation_id < 0 || cid_len < -1 ||
	    cid_len > 1024 || (cid_len > 0 && (uint32_t)cid_len > hdr->size - 10))
		return KREQ_BAD;
	return 0;
}

/* A partition's records (NULLABLE_BYTES / COMPACT_RECORDS): the sum of the records counts of its v2
 * batches whose header is in the prefix; *cut += those whose header is not. */
static int64_t batches(struct rd *r, int flex, unsigned int *cut)
{
	int64_t len = flex ? (int64_t)uvarint(r) - 1 : i32(r);
	int64_t total = 0;
	size_t start = r->pos, stop;

	if (r->err || len <= 0)
		return 0;
	if ((uint64_t)len > KREQ_SIZE_MAX) {
		r->err = 1;
		return 0;
	}
	stop = start + (size_t)len;
	for (size_t b = start; b < stop;) {
		uint32_t blen;

		if (stop - b < RB_HDR_LEN)
			break; /* a partial batch at the end (producers do not send one): not counted */
		if (b + RB_HDR_LEN > r->end) {
			if (r->cut)
				(*cut)++;
			else
				r->err = 1;
			break;
		}
		if (r->p[b + RB_MAGIC_OFF] != 2) {
			r->err = 1; /* v3+ Produce carries magic 2 batches only */
			return 0;
		}
		blen = (uint32_t)r->p[b + 8] << 24 | (uint32_t)r->p[b + 9] << 16 | (uint32_t)r->p[b + 10] << 8 |
		       r->p[b + 11];
		total += (int32_t)((uint32_t)r->p[b + RB_COUNT_OFF] << 24 | (uint32_t)r->p[b + RB_COUNT_OFF + 1] << 16 |
				   (uint32_t)r->p[b + RB_COUNT_OFF + 2] << 8 | r->p[b + RB_COUNT_OFF + 3]);
		if (blen < RB_HDR_LEN - 12 || blen > stop - b - 12)
			break;
		b += 12 + (size_t)blen;
	}
	skip(r, (size_t)len);
	r->in_records = r->err;
	return total;
}

/* A topic's name (its offset and length in the request) and the number of its partitions; -1 (r->err
 * set) when the name's length is negative. */
static int64_t topic_begin(struct rd *r, int flex, size_t *toff, int32_t *tl)
{
	*tl = str_len(r, flex);
	*toff = r->pos;
	if (*tl < 0) {
		r->err = 1;
		return -1;
	}
	skip(r, (size_t)*tl);
	return arr_len(r, flex);
}

/* Produce v3..v12: transactional_id, acks, timeout_ms, topic_data [name, partition_data [index,
 * records]]; v9+ flexible. Returns 1 when the prefix ended in the records of the request's last
 * partition (everything was seen). */
static int produce(struct rd *r, int v, kreq_part_cb cb, void *arg, unsigned int *cut)
{
	int flex = v >= 9;
	int32_t n;
	int64_t topics;

	n = str_len(r, flex); /* transactional_id */
	if (n > 0)
		skip(r, (size_t)n);
	skip(r, 2 + 4); /* acks, timeout_ms */
	topics = arr_len(r, flex);
	for (int64_t t = 0; t < topics && !r->err; t++) {
		int32_t tl;
		size_t toff;
		int64_t parts = topic_begin(r, flex, &toff, &tl);

		if (parts < 0)
			break;
		for (int64_t p = 0; p < parts && !r->err; p++) {
			int32_t idx = i32(r);
			unsigned int cut_before = *cut;
			int64_t recs;

			if (r->err)
				break;
			recs = batches(r, flex, cut);
			if (cb && (!r->err || r->cut))
				cb(arg, KREQ_PRODUCE, (const char *)r->p + toff, (size_t)tl, idx, recs);
			if (r->err)
				return r->cut && r->in_records && *cut == cut_before && t == topics - 1 &&
				       p == parts - 1;
			if (flex)
				tags(r);
		}
		if (flex)
			tags(r);
	}
	return 0;
}

static void fetch(struct rd *r, int v, kreq_part_cb cb, void *arg)
{
	int flex = v >= 12;
	int64_t topics;

	skip(r, 4 + 4 + 4 + 4 + 1); /* replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level */
	if (v >= 7)
		skip(r, 4 + 4); /* session_id, session_epoch */
	topics = arr_len(r, flex);
	for (int64_t t = 0; t < topics && !r->err; t++) {
		int32_t tl;
		size_t toff;
		int64_t parts = topic_begin(r, flex, &toff, &tl);

		if (parts < 0)
			break;
		for (int64_t p = 0; p < parts && !r->err; p++) {
			int32_t idx = i32(r);
			int64_t off;

			if (v >= 9)
				skip(r, 4); /* current_leader_epoch */
			off = i64(r);
			if (v >= 12)
				skip(r, 4);	       /* last_fetched_epoch */
			skip(r, (v >= 5 ? 8 : 0) + 4); /* log_start_offset (v5+), partition_max_bytes */
			if (flex)
				tags(r);
			if (r->err)
				break;
			if (cb)
				cb(arg, KREQ_FETCH, (const char *)r->p + toff, (size_t)tl, idx, off);
		}
		if (flex)
			tags(r);
	}
}

int kreq_parse(const uint8_t *buf, size_t len, kreq_part_cb cb, void *arg, struct kreq_hdr *hdr,
	       unsigned int *batches_cut)
{
	struct rd r = {.p = buf};
	unsigned int cut = 0;
	int32_t cid_len;
	int flex;

	if (batches_cut)
		*batches_cut = 0;
	if (kreq_header(buf, len, hdr))
		return KREQ_BAD;
	if (hdr->api_key == KREQ_PRODUCE) {
		if (hdr->api_version < 3 || hdr->api_version > 12)
			return KREQ_UNSUPPORTED;
		flex = hdr->api_version >= 9;
	} else if (hdr->api_key == KREQ_FETCH) {
		if (hdr->api_version < 4 || hdr->api_version > 12)
			return KREQ_UNSUPPORTED;
		flex = hdr->api_version >= 12;
	} else {
		return KREQ_OTHER;
	}
	r.end = len < 4 + (size_t)hdr->size ? len : 4 + (size_t)hdr->size;
	r.cut = len < 4 + (size_t)hdr->size;
	r.pos = 12;
	cid_len = i16(&r);
	if (cid_len > 0)
		skip(&r, (size_t)cid_len);
	if (flex)
		tags(&r); /* request header v2 */
	if (hdr->api_key == KREQ_PRODUCE) {
		if (produce(&r, hdr->api_version, cb, arg, &cut))
			r.err = 0; /* the prefix ended in the last partition's records: all seen */
	} else {
		fetch(&r, hdr->api_version, cb, arg);
	}
	if (batches_cut)
		*batches_cut = cut;
	if (r.err)
		return r.cut ? KREQ_TRUNCATED : KREQ_BAD;
	if (cut)
		return KREQ_TRUNCATED;
	return KREQ_OK;
}
