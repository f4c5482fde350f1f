/* hpack.h - HPACK (RFC 7541) decoding for l7probe's HTTP/2 parser: integers, string literals (raw and
 * Huffman), the static table and one dynamic table per connection and direction, which survives a
 * capture that starts mid-connection or loses a header block (entries it never saw are unknown,
 * counted when referenced, never guessed). */
#ifndef GG_HPACK_H
#define GG_HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of names and values one table stores at most (a peer may allow a larger table: the entries
 * beyond are forgotten, as if never seen). Entries of one table at most: HPACK_STORE_MAX / 32. */
#define HPACK_STORE_MAX	  16384u
#define HPACK_ENTRIES_MAX (HPACK_STORE_MAX / 32u)
/* The table size an encoder starts with (SETTINGS_HEADER_TABLE_SIZE's default). */
#define HPACK_DEFAULT_SIZE 4096u
/* Longest string (decoded) handed to the callback or stored; a longer one is passed over (its
 * entry, if indexed, is kept as unknown with its true size). */
#define HPACK_STR_MAX 8192u

/* One entry of the dynamic table. */
struct hpack_entry {
	uint32_t off;  /* of the name in the store; the value follows it */
	uint32_t nlen; /* 0 with vlen 0 and !known: an entry whose text is unknown */
	uint32_t vlen;
	uint32_t size;	 /* RFC 7541 size: nlen + vlen + 32 (what the encoder counts) */
	bool known;	 /* name and value are stored */
	bool name_known; /* the name alone is (value too long to store) */
};

/* A dynamic table (one per connection and direction). */
struct hpack_table {
	uint8_t *store;		 /* names and values, a ring of HPACK_STORE_MAX bytes (allocated on need) */
	uint32_t store_head;	 /* next free byte */
	uint32_t store_used;	 /* bytes held by entries */
	struct hpack_entry *ent; /* ring, newest at ent[(head - 1) % cap] */
	uint32_t ent_cap, ent_head, ent_cnt;
	uint32_t size;	       /* RFC size of the entries held */
	uint32_t max_size;     /* current maximum (dynamic table size updates) */
	uint32_t settings_max; /* the decoder's SETTINGS_HEADER_TABLE_SIZE (bounds max_size) */
	uint64_t unresolved;   /* header fields that referred to an entry not known */
	uint64_t errors;       /* malformed representations (bad index, integer overflow, bad Huffman) */
};

/* One decoded header field; name and value are valid during the callback only. name_len 0 with
 * name NULL: the field referred to an unknown entry (its value may still be known). */
struct hpack_field {
	const char *name, *value;
	size_t name_len, value_len;
};

typedef void (*hpack_field_cb)(void *ctx, const struct hpack_field *f);

/* A table at connection start (empty, max size 4096). */
void hpack_table__init(struct hpack_table *t);
/* Release what the table holds; it is empty (and at its defaults) after. Accepts NULL. */
void hpack_table__fini(struct hpack_table *t);
/* Forget every entry (a header block was lost: the entries it added are unknown), keeping the sizes. */
void hpack_table__forget(struct hpack_table *t);
/* The decoder announced SETTINGS_HEADER_TABLE_SIZE = v: the encoder's table cannot exceed it. */
void hpack_table__settings(struct hpack_table *t, uint32_t v);
/* Heap bytes the table holds. */
size_t hpack_table__mem(const struct hpack_table *t);

/* Entry i of the dynamic table (1 = newest), for tests: 0, -ENOENT beyond the known entries, -ENODATA
 * for an entry whose text is unknown. */
int hpack_table__get(const struct hpack_table *t, uint32_t i, const char **ret_name, size_t *ret_nlen,
		     const char **ret_value, size_t *ret_vlen);
/* Entries known (stored, text known or not) and their RFC size. */
uint32_t hpack_table__count(const struct hpack_table *t);

/*
 * Decode the complete header field representations at the start of p[0..n), updating the table, and
 * call cb for each field. Returns the bytes consumed: a representation cut by the end of p is left
 * (0 when the first one is), so the caller can join it with what follows. An index past the entries
 * known counts in t->unresolved (no callback). A malformed representation (index 0, an integer too
 * large, a bad Huffman string) counts in t->errors and ends decoding: returns -1 (the rest of the
 * block cannot be read).
 * Strings longer than HPACK_STR_MAX are passed over whole when present (their entries kept as
 * unknown); *ret_need, when not NULL, says how many bytes the cut representation needs (0: unknown).
 */
long hpack_decode(struct hpack_table *t, const uint8_t *p, size_t n, hpack_field_cb cb, void *ctx, size_t *ret_need);

/* Huffman-decode src[0..n) into dst (at most cap bytes): the decoded length, or -1 (bad code, EOS,
 * padding longer than 7 bits or not all ones, more than cap bytes). */
long hpack_huff_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap);

/* The static table (1..61): name and value, NULL for other indices. */
const char *hpack_static_name(uint32_t i);
const char *hpack_static_value(uint32_t i);

#endif
