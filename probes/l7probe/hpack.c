/* hpack.c - HPACK (RFC 7541) decoder for l7probe: integers, raw and Huffman string literals, the
 * static table, and dynamic tables that hold only what was seen.
 *
 * Why a table that started mid-connection is never wrong: index i names the i-th newest entry. The
 * entries this side saw inserted are the newest ones, in order, so index i <= (entries known) is
 * right whatever older entries exist; a larger index refers to an entry inserted before the capture
 * started (or forgotten) and is counted as unresolved. Keeping an entry the encoder already evicted is
 * harmless too (a valid encoder never refers to it), so a wrong guess of the table's maximum size
 * only costs entries, never values. What does break the order is a header block lost in a gap: it
 * may have inserted entries, so the parser calls hpack_table__forget then. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hpack.h"
#include "hpack_huff.h"

/* Integers past this are malformed here (sizes and indices are far below; RFC 7541 5.1 lets a
 * decoder set its own limit). */
#define HPACK_INT_MAX (1u << 28)

static const char *const static_tab[62][2] = {
	{NULL, NULL},
	{":authority", ""},
	{":method", "GET"},
	{":method", "POST"},
	{":path", "/"},
	{":path", "/index.html"},
	{":scheme", "http"},
	{":scheme", "https"},
	{":status", "200"},
	{":status", "204"},
	{":status", "206"},
	{":status", "304"},
	{":status", "400"},
	{":status", "404"},
	{":status", "500"},
	{"accept-charset", ""},
	{"accept-encoding", "gzip, deflate"},
	{"accept-language", ""},
	{"accept-ranges", ""},
	{"accept", ""},
	{"access-control-allow-origin", ""},
	{"age", ""},
	{"allow", ""},
	{"authorization", ""},
	{"cache-control", ""},
	{"content-disposition", ""},
	{"content-encoding", ""},
	{"content-language", ""},
	{"content-length", ""},
	{"content-location", ""},
	{"content-range", ""},
	{"content-type", ""},
	{"cookie", ""},
	{"date", ""},
	{"etag", ""},
	{"expect", ""},
	{"expires", ""},
	{"from", ""},
	{"host", ""},
	{"if-match", ""},
	{"if-modified-since", ""},
	{"if-none-match", ""},
	{"if-range", ""},
	{"if-unmodified-since", ""},
	{"last-modified", ""},
	{"link", ""},
	{"location", ""},
	{"max-forwards", ""},
	{"proxy-authenticate", ""},
	{"proxy-authorization", ""},
	{"range", ""},
	{"referer", ""},
	{"refresh", ""},
	{"retry-after", ""},
	{"server", ""},
	{"set-cookie", ""},
	{"strict-transport-security", ""},
	{"transfer-encoding", ""},
	{"user-agent", ""},
	{"vary", ""},
	{"via", ""},
	{"www-authenticate", ""},
};

#define STATIC_N 61u

const char *hpack_static_name(uint32_t i)
{
	return i >= 1 && i <= STATIC_N ? static_tab[i][0] : NULL;
}

const char *hpack_static_value(uint32_t i)
{
	return i >= 1 && i <= STATIC_N ? static_tab[i][1] : NULL;
}

/* ---- Huffman ------------------------------------------------------------------------------------ */

long hpack_huff_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap)
{
	uint64_t acc = 0; /* the next bits, MSB first */
	unsigned int bits = 0;
	size_t i = 0, out = 0;

	for (;;) {
		unsigned int len = 0, sym = 0;
		uint16_t f;

		while (bits <= 56 && i < n) {
			acc |= (uint64_t)src[i++] << (56 - bits);
			bits += 8;
		}
		if (bits == 0)
			break;
		f = hpack_huff_fast[acc >> (64 - HPACK_HUFF_FAST)];
		if (f) {
			len = f >> 9;
			sym = f & 511u;
			if (len > bits)
				len = 0; /* only the padding's ones are left */
		} else {
			for (unsigned int l = HPACK_HUFF_FAST + 1; l <= 30 && l <= bits; l++) {
				uint32_t code = (uint32_t)(acc >> (64 - l));

				if (code - hpack_huff_first[l] < hpack_huff_count[l]) {
					len = l;
					sym = hpack_huff_sym[hpack_huff_off[l] + code - hpack_huff_first[l]];
					break;
				}
			}
		}
		if (!len) {
			/* padding: fewer than 8 bits, all ones (the start of EOS) */
			if (bits >= 8 || i < n || (acc >> (64 - bits)) != (1ull << bits) - 1)
				return -1;
			break;
		}
		if (sym == 256)
			return -1; /* EOS inside a string is an error (RFC 7541 5.2) */
		if (dst) {
			if (out >= cap)
				return -1;
			dst[out] = (uint8_t)sym;
		}
		out++;
		acc <<= len;
		bits -= len;
	}
	return (long)out;
}

/* ---- dynamic table ------------------------------------------------------------------------------ */

void hpack_table__init(struct hpack_table *t)
{
	memset(t, 0, sizeof(*t));
	t->max_size = HPACK_DEFAULT_SIZE;
	t->settings_max = HPACK_DEFAULT_SIZE;
}

void hpack_table__fini(struct hpack_table *t)
{
	if (!t)
		return;
	free(t->store);
	free(t->ent);
	hpack_table__init(t);
}

size_t hpack_table__mem(const struct hpack_table *t)
{
	return (t->store ? HPACK_STORE_MAX : 0) + (size_t)t->ent_cap * sizeof(*t->ent);
}

uint32_t hpack_table__count(const struct hpack_table *t)
{
	return t->ent_cnt;
}

/* Entry i (1 = newest) of those held, NULL beyond. */
static struct hpack_entry *ent_at(const struct hpack_table *t, uint32_t i)
{
	if (i < 1 || i > t->ent_cnt)
		return NULL;
	return &t->ent[(t->ent_head + t->ent_cap - i) & (t->ent_cap - 1)];
}

/* Drop the oldest entry held. */
static void evict_one(struct hpack_table *t)
{
	struct hpack_entry *e = ent_at(t, t->ent_cnt);

	t->size -= e->size;
	t->ent_cnt--;
	if (t->ent_cnt == 0) {
		t->store_head = 0;
		t->store_used = 0;
	} else {
		t->store_used -= e->nlen + e->vlen;
	}
}

void hpack_table__forget(struct hpack_table *t)
{
	t->ent_cnt = 0;
	t->size = 0;
	t->store_head = 0;
	t->store_used = 0;
}

static void evict_to(struct hpack_table *t, uint32_t max)
{
	while (t->ent_cnt && t->size > max)
		evict_one(t);
}

void hpack_table__settings(struct hpack_table *t, uint32_t v)
{
	t->settings_max = v;
	/* the encoder must come down to it (and signal it with a size update) */
	if (t->max_size > v) {
		t->max_size = v;
		evict_to(t, v);
	}
}

int hpack_table__get(const struct hpack_table *t, uint32_t i, const char **ret_name, size_t *ret_nlen,
		     const char **ret_value, size_t *ret_vlen)
{
	const struct hpack_entry *e = ent_at(t, i);

	if (!e)
		return -ENOENT;
	if (!e->known)
		return -ENODATA;
	*ret_name = (const char *)t->store + e->off;
	*ret_nlen = e->nlen;
	*ret_value = (const char *)t->store + e->off + e->nlen;
	*ret_vlen = e->vlen;
	return 0;
}

/* Room for len more bytes at the store's head: the live bytes are moved to the front when the end is
 * reached, the oldest entries forgotten when they do not fit at all. 0, or -ENOMEM. */
static int store_room(struct hpack_table *t, uint32_t len)
{
	if (!t->store) {
		t->store = malloc(HPACK_STORE_MAX);
		if (!t->store)
			return -ENOMEM;
	}
	while (t->ent_cnt && t->store_used + len > HPACK_STORE_MAX)
		evict_one(t);
	if (t->store_head + len > HPACK_STORE_MAX) {
		/* compact: live bytes run from the oldest entry's offset to the head */
		uint32_t start = t->store_head - t->store_used;

		memmove(t->store, t->store + start, t->store_used);
		for (uint32_t i = 1; i <= t->ent_cnt; i++)
			ent_at(t, i)->off -= start;
		t->store_head = t->store_used;
	}
	return 0;
}

/* Insert (RFC 7541 4.4): evict until it fits, then add it as the newest. name/value NULL: unknown
 * text (value NULL alone: only the name is stored). size is the RFC size. */
static void insert(struct hpack_table *t, const uint8_t *name, uint32_t nlen, const uint8_t *value, uint32_t vlen,
		   uint32_t size)
{
	struct hpack_entry *e;
	uint32_t slen = 0;

	evict_to(t, size <= t->max_size ? t->max_size - size : 0);
	if (size > t->max_size)
		return; /* larger than the table: it is emptied and nothing added */
	if (t->ent_cnt == t->ent_cap) {
		uint32_t cap = t->ent_cap ? t->ent_cap * 2 : 16;
		struct hpack_entry *n;

		if (cap > HPACK_ENTRIES_MAX) {
			evict_one(t); /* forgotten; references to it will be unresolved */
		} else {
			n = malloc(cap * sizeof(*n));
			if (!n) {
				hpack_table__forget(t);
				return;
			}
			for (uint32_t i = 0; i < t->ent_cnt; i++)
				n[i] = *ent_at(t, t->ent_cnt - i);
			free(t->ent);
			t->ent = n;
			t->ent_cap = cap;
			t->ent_head = t->ent_cnt;
		}
	}
	if (name)
		slen = nlen + (value ? vlen : 0);
	if (slen && store_room(t, slen) < 0) {
		name = NULL;
		slen = 0;
	}
	e = &t->ent[t->ent_head];
	t->ent_head = (t->ent_head + 1) & (t->ent_cap - 1);
	t->ent_cnt++;
	t->size += size;
	memset(e, 0, sizeof(*e));
	e->size = size;
	if (name) {
		e->off = t->store_head;
		e->nlen = nlen;
		/* an empty name and value store nothing (and the store may not exist yet) */
		if (nlen)
			memcpy(t->store + t->store_head, name, nlen);
		if (value) {
			e->vlen = vlen;
			if (vlen)
				memcpy(t->store + t->store_head + nlen, value, vlen);
			e->known = true;
		}
		e->name_known = true;
		t->store_head += slen;
		t->store_used += slen;
	}
}

/* ---- representations ---------------------------------------------------------------------------- */

enum { R_OK = 0, R_SHORT = 1, R_BAD = -1 };

/* An integer with an N-bit prefix at p[*i..n): R_OK, R_SHORT (cut), R_BAD (too large). */
static int get_int(const uint8_t *p, size_t n, size_t *i, unsigned int prefix, uint32_t *ret)
{
	uint32_t max = (1u << prefix) - 1, v;
	unsigned int sh = 0;

	if (*i >= n)
		return R_SHORT;
	v = p[(*i)++] & max;
	if (v < max) {
		*ret = v;
		return R_OK;
	}
	for (;;) {
		uint8_t b;

		if (*i >= n)
			return R_SHORT;
		b = p[(*i)++];
		if (sh > 21)
			return R_BAD;
		v += (uint32_t)(b & 0x7f) << sh;
		sh += 7;
		if (v > HPACK_INT_MAX)
			return R_BAD;
		if (!(b & 0x80))
			break;
	}
	*ret = v;
	return R_OK;
}

/* A string literal, decoded: its text in buf (len in *ret_len; *ret_text NULL when too long to hold,
 * the decoded length still right). */
struct hstr {
	const uint8_t *text;
	uint32_t len;
};

/* Huffman strings decoded lately, by their encoded bytes: a server repeats the same values in every
 * response (nginx sends server, date, content-type, content-length, last-modified and etag as new
 * literals each time, Huffman-coded), and decoding them was 40 % of l7probe's CPU under h2load. One
 * direct-mapped cache per thread; a hit costs a hash and a memcmp of the encoded bytes. */
#define HUFF_CACHE_N   256u
#define HUFF_CACHE_ENC 48u /* longest encoded string cached */
#define HUFF_CACHE_DEC 96u /* longest decoded one (a Huffman code is at least 5 bits) */

struct huff_cached {
	uint8_t elen, dlen;
	uint8_t enc[HUFF_CACHE_ENC];
	uint8_t dec[HUFF_CACHE_DEC];
};

static __thread struct huff_cached huff_cache[HUFF_CACHE_N];

static uint32_t huff_hash(const uint8_t *p, uint32_t len)
{
	uint64_t a = 0, b = 0;

	memcpy(&a, p, len < 8 ? len : 8);
	if (len > 8)
		memcpy(&b, p + len - (len < 16 ? len - 8 : 8), len < 16 ? len - 8 : 8);
	a = (a ^ (b * 0x9e3779b97f4a7c15ull) ^ len) * 0xff51afd7ed558ccdull;
	return (uint32_t)(a >> 56);
}

/* hpack_huff_decode into buf (cap HPACK_STR_MAX), through the cache for short strings. */
static long huff_decode_cached(const uint8_t *src, uint32_t len, uint8_t *buf)
{
	struct huff_cached *c;
	long d;

	if (len == 0 || len > HUFF_CACHE_ENC)
		return hpack_huff_decode(src, len, buf, HPACK_STR_MAX);
	c = &huff_cache[huff_hash(src, len) % HUFF_CACHE_N];
	if (c->elen == len && memcmp(c->enc, src, len) == 0) {
		memcpy(buf, c->dec, c->dlen);
		return c->dlen;
	}
	d = hpack_huff_decode(src, len, buf, HPACK_STR_MAX);
	if (d >= 0 && d <= (long)HUFF_CACHE_DEC) {
		c->elen = (uint8_t)len;
		c->dlen = (uint8_t)d;
		memcpy(c->enc, src, len);
		memcpy(c->dec, buf, (size_t)d);
	}
	return d;
}

static int get_str(const uint8_t *p, size_t n, size_t *i, uint8_t *buf, struct hstr *ret, size_t *need)
{
	bool huff;
	uint32_t len;
	size_t at = *i;
	int r;

	if (at >= n)
		return R_SHORT;
	huff = p[at] & 0x80;
	r = get_int(p, n, &at, 7, &len);
	if (r != R_OK)
		return r;
	if (len > n - at) {
		if (need)
			*need = at + len;
		return R_SHORT;
	}
	if (!huff) {
		ret->text = len <= HPACK_STR_MAX ? p + at : NULL;
		ret->len = len;
	} else {
		long d = len <= HPACK_STR_MAX * 5 / 8 ? huff_decode_cached(p + at, len, buf)
						      : hpack_huff_decode(p + at, len, NULL, HPACK_STR_MAX);

		if (d < 0)
			return R_BAD;
		ret->text = len <= HPACK_STR_MAX * 5 / 8 ? buf : NULL;
		ret->len = (uint32_t)d;
	}
	*i = at + len;
	return R_OK;
}

/* A field from an index: static, known dynamic, or unknown (field name NULL). 0, or -1 for index 0. */
static int lookup(struct hpack_table *t, uint32_t idx, struct hpack_field *f, bool *ret_name_known)
{
	const struct hpack_entry *e;

	memset(f, 0, sizeof(*f));
	*ret_name_known = false;
	if (idx == 0)
		return -1;
	if (idx <= STATIC_N) {
		f->name = static_tab[idx][0];
		f->name_len = strlen(f->name);
		f->value = static_tab[idx][1];
		f->value_len = strlen(f->value);
		*ret_name_known = true;
		return 0;
	}
	e = ent_at(t, idx - STATIC_N);
	if (!e)
		return 0; /* inserted before the capture started, or forgotten: unknown, not malformed */
	if (e->name_known) {
		f->name = (const char *)t->store + e->off;
		f->name_len = e->nlen;
		*ret_name_known = true;
	}
	if (e->known) {
		f->value = (const char *)t->store + e->off + e->nlen;
		f->value_len = e->vlen;
	}
	return 0;
}

long hpack_decode(struct hpack_table *t, const uint8_t *p, size_t n, hpack_field_cb cb, void *ctx, size_t *ret_need)
{
	uint8_t nbuf[HPACK_STR_MAX], vbuf[HPACK_STR_MAX];
	size_t i = 0;

	if (ret_need)
		*ret_need = 0;
	while (i < n) {
		size_t at = i;
		uint8_t b = p[at];
		uint32_t idx;
		int r;

		if (b & 0x80) {
			/* indexed field */
			struct hpack_field f;
			bool nk;

			r = get_int(p, n, &at, 7, &idx);
			if (r == R_SHORT)
				break;
			if (r == R_BAD || lookup(t, idx, &f, &nk) < 0)
				goto bad;
			if (f.name && f.value) {
				if (cb)
					cb(ctx, &f);
			} else {
				t->unresolved++;
			}
		} else if ((b & 0xe0) == 0x20) {
			/* dynamic table size update */
			r = get_int(p, n, &at, 5, &idx);
			if (r == R_SHORT)
				break;
			if (r == R_BAD)
				goto bad;
			t->max_size = idx;
			evict_to(t, idx);
		} else {
			/* literal: with incremental indexing (01), without (0000) or never indexed (0001) */
			bool indexing = (b & 0xc0) == 0x40, nk = false;
			struct hpack_field f;
			struct hstr name = {0}, value = {0};
			size_t nlen_rfc;

			r = get_int(p, n, &at, indexing ? 6 : 4, &idx);
			if (r == R_SHORT)
				break;
			if (r == R_BAD)
				goto bad;
			if (idx) {
				if (lookup(t, idx, &f, &nk) < 0)
					goto bad;
				if (nk) {
					/* a copy: inserting may move or drop the entry it points into */
					memcpy(nbuf, f.name, f.name_len);
					name.text = nbuf;
					name.len = (uint32_t)f.name_len;
				}
			} else {
				r = get_str(p, n, &at, nbuf, &name, ret_need);
				if (r == R_SHORT)
					break;
				if (r == R_BAD)
					goto bad;
				nk = name.text != NULL;
			}
			r = get_str(p, n, &at, vbuf, &value, ret_need);
			if (r == R_SHORT)
				break;
			if (r == R_BAD)
				goto bad;
			if (nk && value.text) {
				f.name = (const char *)name.text;
				f.name_len = name.len;
				f.value = (const char *)value.text;
				f.value_len = value.len;
				if (cb)
					cb(ctx, &f);
			} else {
				t->unresolved++;
			}
			if (indexing) {
				/* an unknown name's length is unknown: the entry's size is then a guess (at
				 * least 32 + value), which only decides evictions (see the top of the file) */
				nlen_rfc = nk || idx == 0 ? name.len : 0;
				insert(t, nk ? name.text : NULL, name.len, value.text, value.len,
				       (uint32_t)(nlen_rfc + value.len + 32));
			}
		}
		i = at;
	}
	if (ret_need && *ret_need)
		*ret_need -= i; /* from the start of the cut representation */
	return (long)i;
bad:
	t->errors++;
	return -1;
}
