/* imdb.h - the in-memory tables behind the Prometheus endpoint: one table per .meta table, one row per
 * key (a new record replaces the row's values), bounded by table, row and byte limits, rows aged out
 * when not updated. Every refused record is counted per table and reason. Single-threaded. */
#ifndef GG_IMDB_H
#define GG_IMDB_H

#include <stddef.h>
#include <stdint.h>

#include "lru.h"
#include "meta.h"

struct imdb_limits {
	unsigned int max_tables;    /* tables holding rows */
	unsigned int max_records;   /* rows per table */
	unsigned int max_metrics;   /* metric fields per table: a wider table is refused */
	uint64_t max_bytes;	    /* every row and table structure together */
	uint64_t record_timeout_ms; /* a row not updated for this long is removed; 0 = never */
};

/* Why a record did not make it into the imdb. Stable names: label values of self-metrics. */
enum imdb_drop {
	IMDB_DROP_MAX_TABLES = 0,
	IMDB_DROP_MAX_RECORDS,
	IMDB_DROP_MAX_METRICS,
	IMDB_DROP_MEMORY,
	IMDB_DROP__COUNT,
};
const char *imdb_drop__str(enum imdb_drop d);

/* One key's latest values. buf holds, in order: the key (values joined by '|'), the Prometheus label
 * set "{k="v",...,machine_id="..",hostname=".."}", then the text of every metric field. */
struct imdb_row {
	struct gg_lru_link age; /* first member: the table's age list */
	struct imdb_row *hnext; /* hash chain */
	uint64_t hash;
	uint64_t updated_ms;
	char *buf;
	uint32_t cap; /* bytes allocated for buf */
	uint32_t key_len;
	uint32_t lbl_off, lbl_len;
	uint32_t *voff; /* per metric field: offset in buf; vlen: its length */
	uint16_t *vlen;
};

struct imdb_table {
	const struct meta_table *meta;
	unsigned int nmetrics; /* metric (gauge/counter/histogram/summary) fields */
	uint16_t *metric_idx;  /* their field indexes */
	int refused;	       /* over max_tables or max_metrics: only counts drops */
	struct imdb_row **buckets;
	size_t nbuckets;   /* power of two */
	struct gg_lru age; /* the rows, least recently updated first; age.n of them */
	uint64_t updates;  /* records stored (new rows and replacements) */
	uint64_t expired;  /* rows removed by record_timeout */
	uint64_t dropped[IMDB_DROP__COUNT];
};

struct imdb;

/* extra_labels: already-escaped label pairs appended to every row's label set, e.g.
 * `machine_id="x",hostname="y"`; key or label fields whose names appear in extra_names (NULL-terminated
 * list) are left out of the label set so that no label is given twice. NULL + errno on error. */
struct imdb *imdb__new(const struct imdb_limits *lim, const char *extra_labels, const char *const *extra_names);
void imdb__free(struct imdb *db);

/* Store a validated record (its row is created or its values replaced). 0, or -ENOSPC when a limit
 * refused it (counted in its table's dropped[]; *ret_why, may be NULL, says which). */
int imdb__update(struct imdb *db, const struct meta_record *rec, uint64_t now_ms, enum imdb_drop *ret_why);
/* Remove every row of table mt (its label set changed); the table stays. Returns the number removed. */
uint64_t imdb__clear(struct imdb *db, const struct meta_table *mt);
/* Remove rows not updated within record_timeout. Returns the number removed. */
uint64_t imdb__expire(struct imdb *db, uint64_t now_ms);

unsigned int imdb__ntables(const struct imdb *db); /* every table seen, refused ones included */
const struct imdb_table *imdb__table(const struct imdb *db, unsigned int i); /* in order of appearance */
/* Changes whenever a table is added (renderers cache what they derive from the table list). */
uint64_t imdb__generation(const struct imdb *db);
uint64_t imdb__bytes(const struct imdb *db);
uint64_t imdb__rows(const struct imdb *db);
/* Records refused because the table could not be created and no stub could be either (out of memory
 * or over META_TABLES_MAX distinct tables). */
uint64_t imdb__dropped_untracked(const struct imdb *db);

#endif
