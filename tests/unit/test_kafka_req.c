/* test_kafka_req.c - kafkaprobe's Kafka request parser (probes/kafkaprobe/kafka_req.c): Produce v3, v7
 * and v9 (flexible) with several topics and partitions, Fetch v11 and v12 (flexible), every prefix
 * length of each (no crash, no read past the prefix: each prefix is copied into a buffer of exactly its
 * size for ASan), bad sizes and headers. */
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "kafka_req.h"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void uvar(struct buf *b, uint32_t v)
{
	while (v >= 0x80) {
		b->b[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->b[b->n++] = (uint8_t)v;
}

static void str(struct buf *b, const char *s, int flex)
{
	size_t l = strlen(s);

	if (flex)
		uvar(b, (uint32_t)l + 1);
	else
		put(b, l, 2);
	memcpy(b->b + b->n, s, l);
	b->n += l;
}

static void arr(struct buf *b, uint32_t n, int flex)
{
	if (flex)
		uvar(b, n + 1);
	else
		put(b, n, 4);
}

/* a request: size placeholder, header (v1, or v2 with an empty tag buffer when flex) */
static void begin(struct buf *b, int key, int ver, int flex)
{
	b->n = 0;
	put(b, 0, 4);
	put(b, (uint64_t)key, 2);
	put(b, (uint64_t)ver, 2);
	put(b, 7, 4);
	str(b, "client-1", 0); /* client_id stays a classic nullable string in header v2 */
	if (flex)
		uvar(b, 0);
}

static void finish(struct buf *b)
{
	uint32_t s = (uint32_t)b->n - 4;

	b->b[0] = (uint8_t)(s >> 24);
	b->b[1] = (uint8_t)(s >> 16);
	b->b[2] = (uint8_t)(s >> 8);
	b->b[3] = (uint8_t)s;
}

/* one RecordBatch v2 with count records (the records themselves are filler bytes) */
static void batch(struct buf *b, int32_t count, size_t body)
{
	size_t start = b->n;

	put(b, 0, 8);			/* baseOffset */
	put(b, 49 + body, 4);		/* batchLength: after itself */
	put(b, 0, 4);			/* partitionLeaderEpoch */
	put(b, 2, 1);			/* magic */
	put(b, 0, 4);			/* crc */
	put(b, 0, 2);			/* attributes */
	put(b, (uint64_t)count - 1, 4); /* lastOffsetDelta */
	put(b, 0, 8);
	put(b, 0, 8);
	put(b, (uint64_t)-1, 8);
	put(b, 0, 2);
	put(b, 0, 4);
	assert_int_equal(b->n - start, 57);
	put(b, (uint64_t)count, 4);
	memset(b->b + b->n, 0xab, body);
	b->n += body;
}

/* partition p's records: nbatches batches of count each */
static void records(struct buf *b, int flex, int nbatches, int32_t count)
{
	size_t len = (size_t)nbatches * (61 + 20);

	if (flex)
		uvar(b, (uint32_t)len + 1);
	else
		put(b, len, 4);
	for (int i = 0; i < nbatches; i++)
		batch(b, count, 20);
}

/* Produce: topics "a" (partitions 0: 1 batch x 5, 1: 2 batches x 3) and "bb" (partition 2: 1 x 7) */
static void produce(struct buf *b, int ver)
{
	int flex = ver >= 9;

	begin(b, 0, ver, flex);
	if (flex)
		uvar(b, 0); /* null transactional_id */
	else
		put(b, 0xffff, 2);
	put(b, 1, 2);
	put(b, 30000, 4);
	arr(b, 2, flex);
	str(b, "a", flex);
	arr(b, 2, flex);
	put(b, 0, 4);
	records(b, flex, 1, 5);
	if (flex)
		uvar(b, 0);
	put(b, 1, 4);
	records(b, flex, 2, 3);
	if (flex)
		uvar(b, 0), uvar(b, 0);
	str(b, "bb", flex);
	arr(b, 1, flex);
	put(b, 2, 4);
	records(b, flex, 1, 7);
	if (flex)
		uvar(b, 0), uvar(b, 0), uvar(b, 0);
	finish(b);
}

/* Fetch: topic "t1" partitions 0 (offset 100) and 3 (offset 250), topic "t2" partition 1 (offset 9) */
static void fetch(struct buf *b, int ver)
{
	int flex = ver >= 12;
	const struct {
		const char *t;
		int32_t p;
		int64_t off;
	} parts[] = {{"t1", 0, 100}, {"t1", 3, 250}, {"t2", 1, 9}};

	begin(b, 1, ver, flex);
	put(b, (uint64_t)-1, 4);
	put(b, 500, 4);
	put(b, 1, 4);
	put(b, 52428800, 4);
	put(b, 0, 1);
	if (ver >= 7) { /* session_id, session_epoch */
		put(b, 0, 4);
		put(b, 0, 4);
	}
	arr(b, 2, flex);
	for (int t = 0; t < 2; t++) {
		int n = t == 0 ? 2 : 1;

		str(b, parts[t * 2].t, flex);
		arr(b, (uint32_t)n, flex);
		for (int i = 0; i < n; i++) {
			int k = t * 2 + i;

			put(b, (uint64_t)parts[k].p, 4);
			if (ver >= 9)
				put(b, 0, 4); /* current_leader_epoch */
			put(b, (uint64_t)parts[k].off, 8);
			if (ver >= 12)
				put(b, 0, 4); /* last_fetched_epoch */
			if (ver >= 5)
				put(b, 0, 8); /* log_start_offset */
			put(b, 1048576, 4);
			if (flex)
				uvar(b, 0);
		}
		if (flex)
			uvar(b, 0);
	}
	arr(b, 0, flex);  /* forgotten_topics_data */
	str(b, "", flex); /* rack_id */
	if (flex)
		uvar(b, 0);
	finish(b);
}

struct seen {
	int n;
	char topic[8][8];
	int32_t part[8];
	int64_t val[8];
};

static void cb(void *arg, int api_key, const char *topic, size_t len, int32_t partition, int64_t value)
{
	struct seen *s = arg;

	(void)api_key;
	assert_true(len < 8);
	assert_true(s->n < 8);
	memcpy(s->topic[s->n], topic, len);
	s->topic[s->n][len] = 0;
	s->part[s->n] = partition;
	s->val[s->n++] = value;
}

static int parse(const struct buf *b, size_t len, struct seen *s, unsigned int *cut)
{
	uint8_t *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees any read past the prefix */
	struct kreq_hdr h;
	int r;

	memcpy(copy, b->b, len);
	memset(s, 0, sizeof(*s));
	r = kreq_parse(copy, len, cb, s, &h, cut);
	free(copy);
	return r;
}

static void check_produce(int ver)
{
	struct buf b;
	struct seen s;
	unsigned int cut;

	produce(&b, ver);
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_OK);
	assert_int_equal(cut, 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.topic[0], "a");
	assert_int_equal(s.part[0], 0);
	assert_int_equal(s.val[0], 5);
	assert_int_equal(s.part[1], 1);
	assert_int_equal(s.val[1], 6);
	assert_string_equal(s.topic[2], "bb");
	assert_int_equal(s.part[2], 2);
	assert_int_equal(s.val[2], 7);
	/* every prefix: no crash, no over-read; what is reported is never more than the truth */
	for (size_t len = 0; len < b.n; len++) {
		int64_t sum = 0;
		int r = parse(&b, len, &s, &cut);

		assert_true(r == KREQ_BAD || r == KREQ_TRUNCATED || r == KREQ_OK);
		if (len < 14)
			assert_int_equal(r, KREQ_BAD);
		for (int i = 0; i < s.n; i++)
			sum += s.val[i];
		assert_true(sum <= 18);
		if (r == KREQ_OK)
			assert_int_equal(sum, 18); /* the last partition's records past the prefix: all counted */
	}
}

GG_TEST(test_produce_v3)
{
	check_produce(3);
}

GG_TEST(test_produce_v7)
{
	check_produce(7);
}

GG_TEST(test_produce_v9_flexible)
{
	check_produce(9);
}

static void check_fetch(int ver)
{
	struct buf b;
	struct seen s;
	unsigned int cut;

	fetch(&b, ver);
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_OK);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.topic[0], "t1");
	assert_int_equal(s.part[0], 0);
	assert_int_equal(s.val[0], 100);
	assert_int_equal(s.part[1], 3);
	assert_int_equal(s.val[1], 250);
	assert_string_equal(s.topic[2], "t2");
	assert_int_equal(s.part[2], 1);
	assert_int_equal(s.val[2], 9);
	for (size_t len = 0; len < b.n; len++) {
		int r = parse(&b, len, &s, &cut);

		assert_true(r == KREQ_BAD || r == KREQ_TRUNCATED || r == KREQ_OK);
		for (int i = 0; i < s.n; i++) /* a partition reported from a prefix is reported right */
			assert_true(s.val[i] == 100 || s.val[i] == 250 || s.val[i] == 9);
	}
}

/* every layout change of the partition entry: log_start_offset (v5), the session (v7), the leader epoch (v9) */
GG_TEST(test_fetch_v4_to_v9)
{
	check_fetch(4);
	check_fetch(5);
	check_fetch(7);
	check_fetch(9);
}

GG_TEST(test_fetch_v11)
{
	check_fetch(11);
}

GG_TEST(test_fetch_v12_flexible)
{
	check_fetch(12);
}

GG_TEST(test_truncated_batches_counted)
{
	struct buf b;
	struct seen s;
	unsigned int cut;

	produce(&b, 7);
	/* cut inside the first partition's records, after its batch: partition 1's batches unseen */
	assert_int_equal(parse(&b, 120, &s, &cut), KREQ_TRUNCATED);
	assert_true(s.n >= 1);
	assert_int_equal(s.val[0], 5);
}

GG_TEST(test_bad_sizes_and_headers)
{
	struct buf b;
	struct kreq_hdr h;
	struct seen s;
	unsigned int cut;

	produce(&b, 7);
	b.b[0] = 0x7f; /* size far past KREQ_SIZE_MAX */
	assert_int_equal(kreq_header(b.b, b.n, &h), KREQ_BAD);
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_BAD);
	produce(&b, 7);
	b.b[0] = b.b[1] = b.b[2] = 0;
	b.b[3] = 5; /* smaller than a header */
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_BAD);
	produce(&b, 7);
	b.b[4] = 0x7f; /* api_key */
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_BAD);
	produce(&b, 7);
	b.b[12] = 0x7f; /* client_id length past the request */
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_BAD);
	/* a size smaller than the content: the request ends early, bad, never read past it */
	produce(&b, 7);
	b.b[3] = (uint8_t)(b.b[3] - 40);
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_BAD);
	/* versions */
	produce(&b, 2);
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_UNSUPPORTED);
	fetch(&b, 12);
	b.b[7] = 13;
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_UNSUPPORTED);
	begin(&b, 18, 3, 1); /* ApiVersions */
	finish(&b);
	assert_int_equal(parse(&b, b.n, &s, &cut), KREQ_OTHER);
}
