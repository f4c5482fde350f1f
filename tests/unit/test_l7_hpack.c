/* test_l7_hpack.c - l7probe's HPACK decoder against RFC 7541 Appendix C (C.1 integers, C.2 literals,
 * C.3/C.4 requests raw and Huffman, C.5/C.6 responses with evictions in a 256-byte table: the exact
 * fields and the dynamic table after each block), the whole Huffman code, and what a capture that
 * started mid-connection or lost a block does (unknown entries counted, never guessed). */
#include "test_l7_util.h"

#include "../../probes/l7probe/hpack.h"
#include "../../probes/l7probe/hpack_huff.h"

#define MAXF 16

struct fields {
	size_t n;
	char name[MAXF][64], value[MAXF][128];
};

static void collect(void *ctx, const struct hpack_field *f)
{
	struct fields *o = ctx;

	assert_true(o->n < MAXF);
	assert_true(f->name_len < 64 && f->value_len < 128);
	memcpy(o->name[o->n], f->name, f->name_len);
	o->name[o->n][f->name_len] = '\0';
	memcpy(o->value[o->n], f->value, f->value_len);
	o->value[o->n][f->value_len] = '\0';
	o->n++;
}

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned int b;

		assert_int_equal(sscanf(hex, "%2x", &b), 1);
		out[n++] = (uint8_t)b;
	}
	return n;
}

/* Decode a whole block; its fields must be exactly want (name, value pairs, NULL-terminated). */
static void block(struct hpack_table *t, const char *hex, const char *const *want)
{
	uint8_t buf[512];
	size_t n = unhex(hex, buf), i;
	struct fields got = {0};

	assert_int_equal(hpack_decode(t, buf, n, collect, &got, NULL), (long)n);
	for (i = 0; want[2 * i]; i++) {
		assert_true(i < got.n);
		assert_string_equal(got.name[i], want[2 * i]);
		assert_string_equal(got.value[i], want[2 * i + 1]);
	}
	assert_int_equal(got.n, i);
}

/* The dynamic table, newest first, must be exactly want (name, value pairs), of RFC size size. */
static void table(const struct hpack_table *t, uint32_t size, const char *const *want)
{
	uint32_t i;

	for (i = 0; want[2 * i]; i++) {
		const char *nm, *v;
		size_t nl, vl;

		assert_int_equal(hpack_table__get(t, i + 1, &nm, &nl, &v, &vl), 0);
		assert_int_equal(nl, strlen(want[2 * i]));
		assert_memory_equal(nm, want[2 * i], nl);
		assert_int_equal(vl, strlen(want[2 * i + 1]));
		assert_memory_equal(v, want[2 * i + 1], vl);
	}
	assert_int_equal(hpack_table__count(t), i);
	assert_int_equal(t->size, size);
}

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE   ((const char *const[]){NULL})

/* C.1: integers (through size updates, 5-bit prefix) */
GG_TEST(test_c1_integers)
{
	struct hpack_table t;

	hpack_table__init(&t);
	block(&t, "2a", NONE); /* C.1.1: 10 */
	assert_int_equal(t.max_size, 10);
	block(&t, "3f9a0a", NONE); /* C.1.2: 1337 */
	assert_int_equal(t.max_size, 1337);
	hpack_table__fini(&t);
}

GG_TEST(test_c2_literals)
{
	struct hpack_table t;

	hpack_table__init(&t);
	block(&t, "400a637573746f6d2d6b65790d637573746f6d2d686561646572", L("custom-key", "custom-header"));
	table(&t, 55, L("custom-key", "custom-header"));
	hpack_table__fini(&t);

	hpack_table__init(&t);
	block(&t, "040c2f73616d706c652f70617468", L(":path", "/sample/path")); /* C.2.2: not indexed */
	table(&t, 0, NONE);
	block(&t, "100870617373776f726406736563726574", L("password", "secret")); /* C.2.3: never indexed */
	table(&t, 0, NONE);
	block(&t, "82", L(":method", "GET")); /* C.2.4 */
	table(&t, 0, NONE);
	hpack_table__fini(&t);
}

static const char *const REQ1[] = {":method", "GET",	    ":scheme",	       "http", ":path",
				   "/",	      ":authority", "www.example.com", NULL};
static const char *const REQ2[] = {":method",	      "GET",	       ":scheme",  "http", ":path", "/", ":authority",
				   "www.example.com", "cache-control", "no-cache", NULL};
static const char *const REQ3[] = {":method",	 "GET",		 ":scheme",    "https",
				   ":path",	 "/index.html",	 ":authority", "www.example.com",
				   "custom-key", "custom-value", NULL};

static void requests(const char *h1, const char *h2, const char *h3)
{
	struct hpack_table t;

	hpack_table__init(&t);
	block(&t, h1, REQ1);
	table(&t, 57, L(":authority", "www.example.com"));
	block(&t, h2, REQ2);
	table(&t, 110, L("cache-control", "no-cache", ":authority", "www.example.com"));
	block(&t, h3, REQ3);
	table(&t, 164, L("custom-key", "custom-value", "cache-control", "no-cache", ":authority", "www.example.com"));
	assert_int_equal(t.unresolved, 0);
	hpack_table__fini(&t);
}

GG_TEST(test_c3_requests)
{
	requests("828684410f7777772e6578616d706c652e636f6d", "828684be58086e6f2d6361636865",
		 "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565");
}

GG_TEST(test_c4_requests_huffman)
{
	requests("828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
		 "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf");
}

/* C.5.2 differs from C.5.1 in :status only (the encoder refers to the table for the rest) */
#define RESP12_FIELDS \
	"cache-control", "private", "date", "Mon, 21 Oct 2013 20:13:21 GMT", "location", "https://www.example.com"
static const char *const RESP1[] = {":status", "302", RESP12_FIELDS, NULL};
static const char *const RESP2[] = {":status", "307", RESP12_FIELDS, NULL};
static const char *const RESP3[] = {":status",
				    "200",
				    "cache-control",
				    "private",
				    "date",
				    "Mon, 21 Oct 2013 20:13:22 GMT",
				    "location",
				    "https://www.example.com",
				    "content-encoding",
				    "gzip",
				    "set-cookie",
				    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
				    NULL};

/* C.5/C.6: the encoder's table is 256 bytes (set here through the decoder's SETTINGS): entries evicted */
static void responses(const char *h1, const char *h2, const char *h3)
{
	struct hpack_table t;

	hpack_table__init(&t);
	hpack_table__settings(&t, 256);
	block(&t, h1, RESP1);
	table(&t, 222,
	      L("location", "https://www.example.com", "date", "Mon, 21 Oct 2013 20:13:21 GMT", "cache-control",
		"private", ":status", "302"));
	block(&t, h2, RESP2);
	table(&t, 222,
	      L(":status", "307", "location", "https://www.example.com", "date", "Mon, 21 Oct 2013 20:13:21 GMT",
		"cache-control", "private"));
	block(&t, h3, RESP3);
	table(&t, 215,
	      L("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1", "content-encoding", "gzip",
		"date", "Mon, 21 Oct 2013 20:13:22 GMT"));
	assert_int_equal(t.unresolved, 0);
	hpack_table__fini(&t);
}

GG_TEST(test_c5_responses)
{
	responses("4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768"
		  "747470733a2f2f7777772e6578616d706c652e636f6d",
		  "4803333037c1c0bf",
		  "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153"
		  "444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e"
		  "3d31");
}

GG_TEST(test_c6_responses_huffman)
{
	responses("488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8"
		  "e9ae82ae43d3",
		  "4883640effc1c0bf",
		  "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b"
		  "3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007");
}

/* Every symbol through the encoder's code and back; bad padding and EOS refused. */
GG_TEST(test_huffman)
{
	uint8_t enc[1024], dec[512], src[256];
	uint64_t acc = 0;
	unsigned int bits = 0;
	size_t n = 0;

	for (int i = 0; i < 256; i++) {
		src[i] = (uint8_t)(255 - i);
		acc = acc << hpack_huff_len[src[i]] | hpack_huff_code[src[i]];
		bits += hpack_huff_len[src[i]];
		while (bits >= 8) {
			enc[n++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	if (bits)
		enc[n++] = (uint8_t)(acc << (8 - bits) | ((1u << (8 - bits)) - 1));
	assert_int_equal(hpack_huff_decode(enc, n, dec, sizeof(dec)), 256);
	assert_memory_equal(dec, src, 256);
	assert_int_equal(hpack_huff_decode(enc, n, NULL, 0), 256); /* counting only */
	assert_int_equal(hpack_huff_decode(enc, n, dec, 100), -1); /* does not fit */
	/* "www.example.com" (C.4.1) */
	assert_int_equal(hpack_huff_decode((const uint8_t *)"\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff", 12, dec,
					   sizeof(dec)),
			 15);
	assert_memory_equal(dec, "www.example.com", 15);
	/* padding: 8 bits of ones (a whole byte) is too long; zeros are not EOS's prefix */
	assert_int_equal(hpack_huff_decode((const uint8_t *)"\xff", 1, dec, sizeof(dec)), -1);
	assert_int_equal(hpack_huff_decode((const uint8_t *)"\x1f\xff", 2, dec, sizeof(dec)), -1);
	assert_int_equal(hpack_huff_decode((const uint8_t *)"\x00", 1, dec, sizeof(dec)), -1); /* '0' + 3 zero bits */
	assert_int_equal(hpack_huff_decode((const uint8_t *)"\x07", 1, dec, sizeof(dec)), 1);  /* '0' + 111 */
	/* EOS (30 ones) inside the string */
	assert_int_equal(hpack_huff_decode((const uint8_t *)"\xff\xff\xff\xfc", 4, dec, sizeof(dec)), -1);
	assert_int_equal(hpack_huff_decode(NULL, 0, dec, sizeof(dec)), 0);
}

/* Huffman-encode src into out (EOS padding); the encoded length. */
static size_t huff_encode(const char *src, uint8_t *out)
{
	uint64_t acc = 0;
	unsigned int bits = 0;
	size_t n = 0;

	for (; *src; src++) {
		acc = acc << hpack_huff_len[(uint8_t)*src] | hpack_huff_code[(uint8_t)*src];
		bits += hpack_huff_len[(uint8_t)*src];
		while (bits >= 8) {
			out[n++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	if (bits)
		out[n++] = (uint8_t)(acc << (8 - bits) | ((1u << (8 - bits)) - 1));
	return n;
}

/* A capture that started after C.3.1: :authority (index 62 then) is unknown; what follows is learnt. */
GG_TEST(test_mid_connection)
{
	struct hpack_table t;

	hpack_table__init(&t);
	block(&t, "828684be58086e6f2d6361636865",
	      L(":method", "GET", ":scheme", "http", ":path", "/", "cache-control", "no-cache"));
	assert_int_equal(t.unresolved, 1);
	/* the entry it inserted is known (the newest), the one before it is not */
	table(&t, 53, L("cache-control", "no-cache"));
	block(&t, "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
	      L(":method", "GET", ":scheme", "https", ":path", "/index.html", "custom-key", "custom-value"));
	assert_int_equal(t.unresolved, 2);
	/* index 63 is cache-control now: right although the table started unknown */
	block(&t, "bf", L("cache-control", "no-cache"));
	assert_int_equal(t.errors, 0);
	/* a lost block: everything forgotten, sizes kept */
	hpack_table__forget(&t);
	block(&t, "bebf82", L(":method", "GET"));
	assert_int_equal(t.unresolved, 4);
	/* a literal whose name is an unknown entry is still inserted (index positions stay right) */
	block(&t, "7f0003616263", NONE); /* name index 62 + 63 - 62 = 63 (unknown), value "abc" */
	assert_int_equal(t.unresolved, 5);
	assert_int_equal(hpack_table__count(&t), 1);
	{
		const char *nm, *v;
		size_t nl, vl;

		assert_int_equal(hpack_table__get(&t, 1, &nm, &nl, &v, &vl), -ENODATA);
		assert_int_equal(hpack_table__get(&t, 2, &nm, &nl, &v, &vl), -ENOENT);
	}
	hpack_table__fini(&t);
}

/* Size updates evict; 0 empties; a block cut in the middle of a field returns what it consumed. */
GG_TEST(test_sizes_and_cuts)
{
	struct hpack_table t;
	uint8_t buf[64];
	size_t n, need;
	struct fields got = {0};

	hpack_table__init(&t);
	block(&t, "828684410f7777772e6578616d706c652e636f6d", REQ1);
	table(&t, 57, L(":authority", "www.example.com"));
	block(&t, "20", NONE); /* size update to 0 */
	table(&t, 0, NONE);
	assert_int_equal(t.max_size, 0);
	/* with a 0-size table an indexed literal is not kept */
	block(&t, "400a637573746f6d2d6b65790d637573746f6d2d686561646572", L("custom-key", "custom-header"));
	table(&t, 0, NONE);
	block(&t, "3fe11f", NONE); /* back to 4096 */
	/* a cut: the first field whole, the second cut in its value */
	n = unhex("82400a637573746f6d2d6b65790d637573746f6d2d686561646572", buf);
	assert_int_equal(hpack_decode(&t, buf, n - 5, collect, &got, &need), 1);
	assert_int_equal(need, n - 1);
	assert_int_equal(got.n, 1);
	assert_int_equal(hpack_decode(&t, buf + 1, n - 1, collect, &got, &need), (long)(n - 1));
	assert_int_equal(got.n, 2);
	assert_string_equal(got.name[1], "custom-key");
	/* malformed: index 0, an integer that never ends within limits */
	assert_int_equal(hpack_decode(&t, (const uint8_t *)"\x80", 1, NULL, NULL, NULL), -1);
	assert_int_equal(hpack_decode(&t, (const uint8_t *)"\xff\xff\xff\xff\xff\xff\x01", 7, NULL, NULL, NULL), -1);
	assert_int_equal(t.errors, 2);
	/* the decoder's SETTINGS below the current size: the encoder has to come down */
	hpack_table__settings(&t, 40);
	assert_true(t.size <= 40);
	hpack_table__fini(&t);
}

/* A peer allowing a huge table: what is held stays bounded, the newest entries stay right. */
GG_TEST(test_bounded)
{
	struct hpack_table t;
	uint8_t buf[300];

	hpack_table__init(&t);
	block(&t, "3fe1ff3f", NONE); /* 1048576 + 31 */
	for (int i = 0; i < 3000; i++) {
		size_t n = 0;

		buf[n++] = 0x40;
		buf[n++] = 8;
		memcpy(buf + n, "x-header", 8);
		n += 8;
		buf[n++] = 100;
		memset(buf + n, 'a' + i % 26, 100);
		n += 100;
		assert_int_equal(hpack_decode(&t, buf, n, NULL, NULL, NULL), (long)n);
		assert_true(hpack_table__mem(&t) <= HPACK_STORE_MAX + HPACK_ENTRIES_MAX * sizeof(struct hpack_entry));
	}
	{
		const char *nm, *v;
		size_t nl, vl;

		assert_int_equal(hpack_table__get(&t, 1, &nm, &nl, &v, &vl), 0);
		assert_int_equal(vl, 100);
		assert_int_equal(v[0], 'a' + 2999 % 26);
		assert_int_equal(hpack_table__get(&t, 2, &nm, &nl, &v, &vl), 0);
		assert_int_equal(v[0], 'a' + 2998 % 26);
	}
	/* an index to what was forgotten is unresolved, not wrong */
	assert_int_equal(hpack_decode(&t, (const uint8_t *)"\xff\xff\x0f", 3, NULL, NULL, NULL), 3);
	assert_int_equal(t.unresolved, 1);
	hpack_table__fini(&t);
}

/* Values decoded through the Huffman cache: the same string twice, then strings of the same length
 * that differ only in the middle (bytes the cache's hash does not read) are told apart; an entry with
 * an empty name and value (nothing stored). */
GG_TEST(test_huffman_cache_and_empty)
{
	static const char *const v[] = {"0000000000000000000000000000000000000000",
					"0000000000000000000100000000000000000000",
					"0000000000000000000200000000000000000000"};
	struct hpack_table t;
	uint8_t buf[128];
	const char *name, *value;
	size_t nl, vl;

	hpack_table__init(&t);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			struct fields got = {0};
			size_t n = 0, e;

			buf[n++] = 0x00; /* literal without indexing, new name "x", Huffman value */
			buf[n++] = 0x01;
			buf[n++] = 'x';
			e = huff_encode(v[i], buf + n + 1);
			assert_true(e > 16 && e < 127);
			buf[n] = (uint8_t)(0x80 | e);
			n += 1 + e;
			assert_int_equal(hpack_decode(&t, buf, n, collect, &got, NULL), (long)n);
			assert_int_equal(got.n, 1);
			assert_string_equal(got.value[0], v[i]);
		}
	}
	assert_int_equal(hpack_decode(&t, (const uint8_t *)"\x40\x00\x00", 3, NULL, NULL, NULL), 3);
	assert_int_equal(hpack_table__count(&t), 1);
	assert_int_equal(hpack_table__get(&t, 1, &name, &nl, &value, &vl), 0);
	assert_int_equal(nl + vl, 0);
	hpack_table__fini(&t);
}
