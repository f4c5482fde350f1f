/* imdb.c - in-memory tables: latest values per key, bounded, aged, every refusal counted. */
#include "imdb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "outbuf.h"

#define TABLE_SLOTS_MIN 64u
#define ROW_BUCKETS_MIN 16u

struct imdb {
	struct imdb_limits lim;
	char *extra; /* pre-rendered extra label pairs */
	size_t extra_len;
	char **extra_names;

	struct imdb_table **tables; /* in order of appearance */
	unsigned int ntables, tables_cap;
	unsigned int nactive; /* tables that may hold rows (count against max_tables) */
	/* open addressing: meta_table pointer -> tables[] index + 1 */
	uint32_t *slots;
	size_t nslots;

	uint64_t seed;
	uint64_t generation;
	uint64_t bytes;
	uint64_t rows;
	uint64_t dropped_untracked;
	struct gg_buf scratch; /* the content of the row being written */
};

static const char *const drop_names[IMDB_DROP__COUNT] = {
	[IMDB_DROP_MAX_TABLES] = "max_tables",
	[IMDB_DROP_MAX_RECORDS] = "max_records",
	[IMDB_DROP_MAX_METRICS] = "max_metrics",
	[IMDB_DROP_MEMORY] = "memory",
};

const char *imdb_drop__str(enum imdb_drop d)
{
	return (unsigned int)d < IMDB_DROP__COUNT ? drop_names[d] : "unknown";
}

/* FNV-1a with a per-process seed, finished with a mixer so that the low bits (the bucket) depend on
 * every byte. */
static uint64_t key_hash(uint64_t seed, const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

struct imdb *imdb__new(const struct imdb_limits *lim, const char *extra_labels, const char *const *extra_names)
{
	struct imdb *db = calloc(1, sizeof(*db));
	struct timespec ts;
	size_t n = 0;

	if (!db)
		return NULL;
	db->lim = *lim;
	db->extra = strdup(extra_labels ? extra_labels : "");
	if (!db->extra)
		goto err_out;
	db->extra_len = strlen(db->extra);
	while (extra_names && extra_names[n])
		n++;
	db->extra_names = calloc(n + 1, sizeof(char *));
	if (!db->extra_names)
		goto err_out;
	for (size_t i = 0; i < n; i++) {
		db->extra_names[i] = strdup(extra_names[i]);
		if (!db->extra_names[i])
			goto err_out;
	}
	db->nslots = TABLE_SLOTS_MIN;
	db->slots = calloc(db->nslots, sizeof(*db->slots));
	if (!db->slots)
		goto err_out;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	db->seed = gg_ptr_hash(db) ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec;
	gg_buf__init(&db->scratch, 0);
	if (gg_buf__reserve(&db->scratch, 4 * META_RECORD_MAX_LEN))
		goto err_out;
	db->bytes = sizeof(*db) + db->nslots * sizeof(*db->slots);
	return db;

err_out:
	imdb__free(db);
	errno = ENOMEM;
	return NULL;
}

static void row_free(void *row)
{
	struct imdb_row *r = row;

	free(r->buf);
	free(r);
}

static void table_free(struct imdb_table *t)
{
	if (!t)
		return;
	gg_lru__drain(&t->age, row_free);
	free(t->buckets);
	free(t->metric_idx);
	free(t);
}

void imdb__free(struct imdb *db)
{
	if (!db)
		return;
	for (unsigned int i = 0; i < db->ntables; i++)
		table_free(db->tables[i]);
	free(db->tables);
	free(db->slots);
	if (db->extra_names) {
		for (char **p = db->extra_names; *p; p++)
			free(*p);
		free(db->extra_names);
	}
	free(db->extra);
	gg_buf__fini(&db->scratch);
	free(db);
}

/* ---- tables ---------------------------------------------------------------------------------------- */

static struct imdb_table *table_find(const struct imdb *db, const struct meta_table *mt)
{
	size_t mask = db->nslots - 1, i = gg_ptr_hash(mt) & mask;

	for (;;) {
		uint32_t s = db->slots[i];

		if (!s)
			return NULL;
		if (db->tables[s - 1]->meta == mt)
			return db->tables[s - 1];
		i = (i + 1) & mask;
	}
}

static void slot_insert(uint32_t *slots, size_t nslots, const struct meta_table *mt, uint32_t v)
{
	size_t mask = nslots - 1, i = gg_ptr_hash(mt) & mask;

	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = v;
}

static int table_index_add(struct imdb *db, struct imdb_table *t)
{
	if (db->ntables == db->tables_cap) {
		unsigned int cap = db->tables_cap ? db->tables_cap * 2 : 16;
		struct imdb_table **nt = realloc(db->tables, cap * sizeof(*nt));

		if (!nt)
			return -ENOMEM;
		db->bytes += (cap - db->tables_cap) * sizeof(*nt);
		db->tables = nt;
		db->tables_cap = cap;
	}
	if ((db->ntables + 1) * 2 > db->nslots) {
		size_t n = db->nslots * 2;
		uint32_t *ns = calloc(n, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (unsigned int i = 0; i < db->ntables; i++)
			slot_insert(ns, n, db->tables[i]->meta, i + 1);
		db->bytes += (n - db->nslots) * sizeof(*ns);
		free(db->slots);
		db->slots = ns;
		db->nslots = n;
	}
	db->tables[db->ntables] = t;
	slot_insert(db->slots, db->nslots, t->meta, db->ntables + 1);
	db->ntables++;
	db->generation++;
	return 0;
}

static struct imdb_table *table_create(struct imdb *db, const struct meta_table *mt)
{
	struct imdb_table *t = calloc(1, sizeof(*t));
	size_t bytes = sizeof(*t);

	if (!t)
		return NULL;
	t->meta = mt;
	for (unsigned int i = 0; i < mt->nfields; i++)
		t->nmetrics += mt->fields[i].type != META_KEY && mt->fields[i].type != META_LABEL;
	if (t->nmetrics > db->lim.max_metrics) {
		t->refused = 1 + IMDB_DROP_MAX_METRICS;
	} else if (db->nactive >= db->lim.max_tables) {
		t->refused = 1 + IMDB_DROP_MAX_TABLES;
	} else {
		unsigned int j = 0;

		t->metric_idx = calloc(t->nmetrics ? t->nmetrics : 1, sizeof(*t->metric_idx));
		t->nbuckets = ROW_BUCKETS_MIN;
		t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
		if (!t->metric_idx || !t->buckets) {
			table_free(t);
			return NULL;
		}
		for (unsigned int i = 0; i < mt->nfields; i++) {
			if (mt->fields[i].type != META_KEY && mt->fields[i].type != META_LABEL)
				t->metric_idx[j++] = (uint16_t)i;
		}
		bytes += t->nmetrics * sizeof(*t->metric_idx) + t->nbuckets * sizeof(*t->buckets);
	}
	if (table_index_add(db, t)) {
		table_free(t);
		return NULL;
	}
	if (!t->refused)
		db->nactive++;
	db->bytes += bytes;
	return t;
}

/* ---- rows ------------------------------------------------------------------------------------------ */

static int is_extra_name(const struct imdb *db, const char *name)
{
	for (char **p = db->extra_names; *p; p++) {
		if (!strcmp(*p, name))
			return 1;
	}
	return 0;
}

/* key, label set and metric values of rec into db->scratch; the key and label-set lengths out. */
static int build_content(struct imdb *db, const struct imdb_table *t, const struct meta_record *rec,
			 uint32_t *ret_key_len, uint32_t *ret_lbl_len)
{
	const struct meta_table *mt = t->meta;
	struct gg_buf *b = &db->scratch;
	size_t lbl_start;
	int first = 1;

	b->len = 0;
	for (unsigned int i = 0; i < mt->nfields; i++) {
		if (mt->fields[i].type != META_KEY)
			continue;
		if (b->len)
			gg_buf__putc(b, '|');
		gg_buf__put(b, rec->values[i], rec->lens[i]);
	}
	*ret_key_len = (uint32_t)b->len;
	lbl_start = b->len;
	gg_buf__putc(b, '{');
	for (unsigned int i = 0; i < mt->nfields; i++) {
		const struct meta_field *f = &mt->fields[i];

		if ((f->type != META_KEY && f->type != META_LABEL) || is_extra_name(db, f->name))
			continue;
		if (!first)
			gg_buf__putc(b, ',');
		first = 0;
		gg_buf__puts(b, f->name);
		gg_buf__put(b, "=\"", 2);
		gg_buf__put_prom_label(b, rec->values[i], rec->lens[i]);
		gg_buf__putc(b, '"');
	}
	if (db->extra_len) {
		if (!first)
			gg_buf__putc(b, ',');
		gg_buf__put(b, db->extra, db->extra_len);
	}
	gg_buf__putc(b, '}');
	*ret_lbl_len = (uint32_t)(b->len - lbl_start);
	for (unsigned int j = 0; j < t->nmetrics; j++) {
		unsigned int i = t->metric_idx[j];

		gg_buf__put(b, rec->values[i], rec->lens[i]);
	}
	return b->oom ? -ENOMEM : 0;
}

static void row_fill(const struct imdb *db, const struct imdb_table *t, struct imdb_row *r,
		     const struct meta_record *rec, uint32_t key_len, uint32_t lbl_len)
{
	uint32_t off;

	memcpy(r->buf, db->scratch.data, db->scratch.len);
	r->key_len = key_len;
	r->lbl_off = key_len;
	r->lbl_len = lbl_len;
	off = key_len + lbl_len;
	for (unsigned int j = 0; j < t->nmetrics; j++) {
		uint16_t l = rec->lens[t->metric_idx[j]];

		r->voff[j] = off;
		r->vlen[j] = l;
		off += l;
	}
}

static void buckets_grow(struct imdb *db, struct imdb_table *t)
{
	size_t n = t->nbuckets * 2;
	struct imdb_row **nb = calloc(n, sizeof(*nb));

	if (!nb)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct imdb_row *r = t->buckets[i], *next;

		for (; r; r = next) {
			next = r->hnext;
			r->hnext = nb[r->hash & (n - 1)];
			nb[r->hash & (n - 1)] = r;
		}
	}
	db->bytes += (n - t->nbuckets) * sizeof(*nb);
	free(t->buckets);
	t->buckets = nb;
	t->nbuckets = n;
}

static uint64_t row_bytes(const struct imdb_table *t, uint32_t cap)
{
	return sizeof(struct imdb_row) + t->nmetrics * (sizeof(uint32_t) + sizeof(uint16_t)) + cap;
}

static int drop(struct imdb_table *t, enum imdb_drop why, enum imdb_drop *ret_why)
{
	t->dropped[why]++;
	if (ret_why)
		*ret_why = why;
	return -ENOSPC;
}

int imdb__update(struct imdb *db, const struct meta_record *rec, uint64_t now_ms, enum imdb_drop *ret_why)
{
	struct imdb_table *t = table_find(db, rec->table);
	uint32_t key_len, lbl_len, need, cap;
	struct imdb_row *r, **bucket;
	uint64_t h;

	if (!t) {
		t = table_create(db, rec->table);
		if (!t) {
			db->dropped_untracked++;
			return -ENOMEM;
		}
	}
	if (t->refused)
		return drop(t, (enum imdb_drop)(t->refused - 1), ret_why);
	if (build_content(db, t, rec, &key_len, &lbl_len))
		return drop(t, IMDB_DROP_MEMORY, ret_why);
	need = (uint32_t)db->scratch.len;
	h = key_hash(db->seed, db->scratch.data, key_len);
	bucket = &t->buckets[h & (t->nbuckets - 1)];
	for (r = *bucket; r; r = r->hnext) {
		if (r->hash == h && r->key_len == key_len && !memcmp(r->buf, db->scratch.data, key_len))
			break;
	}

	if (r) {
		if (need > r->cap) {
			char *nb;

			cap = (need + 31u) & ~31u;
			if (db->bytes + (cap - r->cap) > db->lim.max_bytes)
				return drop(t, IMDB_DROP_MEMORY, ret_why);
			nb = realloc(r->buf, cap);
			if (!nb)
				return drop(t, IMDB_DROP_MEMORY, ret_why);
			db->bytes += cap - r->cap;
			r->buf = nb;
			r->cap = cap;
		}
		row_fill(db, t, r, rec, key_len, lbl_len);
		r->updated_ms = now_ms;
		gg_lru__touch(&t->age, &r->age);
		t->updates++;
		return 0;
	}

	if (t->age.n >= db->lim.max_records)
		return drop(t, IMDB_DROP_MAX_RECORDS, ret_why);
	cap = (need + 31u) & ~31u;
	if (db->bytes + row_bytes(t, cap) > db->lim.max_bytes)
		return drop(t, IMDB_DROP_MEMORY, ret_why);
	r = calloc(1, sizeof(*r) + t->nmetrics * (sizeof(uint32_t) + sizeof(uint16_t)));
	if (!r)
		return drop(t, IMDB_DROP_MEMORY, ret_why);
	r->buf = malloc(cap);
	if (!r->buf) {
		free(r);
		return drop(t, IMDB_DROP_MEMORY, ret_why);
	}
	r->voff = (uint32_t *)(r + 1);
	r->vlen = (uint16_t *)(r->voff + t->nmetrics);
	r->cap = cap;
	r->hash = h;
	row_fill(db, t, r, rec, key_len, lbl_len);
	r->updated_ms = now_ms;
	r->hnext = *bucket;
	*bucket = r;
	gg_lru__push(&t->age, &r->age);
	t->updates++;
	db->rows++;
	db->bytes += row_bytes(t, cap);
	if (t->age.n > t->nbuckets)
		buckets_grow(db, t);
	return 0;
}

static void row_remove(struct imdb *db, struct imdb_table *t, struct imdb_row *r)
{
	struct imdb_row **pp = &t->buckets[r->hash & (t->nbuckets - 1)];

	while (*pp && *pp != r)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = r->hnext;
	gg_lru__unlink(&t->age, &r->age);
	db->rows--;
	db->bytes -= row_bytes(t, r->cap);
	row_free(r);
}

uint64_t imdb__clear(struct imdb *db, const struct meta_table *mt)
{
	struct imdb_table *t = db ? table_find(db, mt) : NULL;
	uint64_t n = 0;

	while (t && t->age.oldest) {
		row_remove(db, t, (struct imdb_row *)t->age.oldest);
		n++;
	}
	return n;
}

uint64_t imdb__expire(struct imdb *db, uint64_t now_ms)
{
	uint64_t n = 0, tmo = db->lim.record_timeout_ms;

	if (!tmo)
		return 0;
	for (unsigned int i = 0; i < db->ntables; i++) {
		struct imdb_table *t = db->tables[i];

		while (t->age.oldest && ((struct imdb_row *)t->age.oldest)->updated_ms + tmo <= now_ms) {
			row_remove(db, t, (struct imdb_row *)t->age.oldest);
			t->expired++;
			n++;
		}
	}
	return n;
}

unsigned int imdb__ntables(const struct imdb *db)
{
	return db->ntables;
}

const struct imdb_table *imdb__table(const struct imdb *db, unsigned int i)
{
	return i < db->ntables ? db->tables[i] : NULL;
}

uint64_t imdb__generation(const struct imdb *db)
{
	return db->generation;
}

uint64_t imdb__bytes(const struct imdb *db)
{
	return db->bytes;
}

uint64_t imdb__rows(const struct imdb *db)
{
	return db->rows;
}

uint64_t imdb__dropped_untracked(const struct imdb *db)
{
	return db->dropped_untracked;
}
