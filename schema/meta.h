/* meta.h - .meta table schemas: loading (libconfig, gala-gopher format) and record validation. */
#ifndef GG_META_H
#define GG_META_H

#include <stddef.h>
#include <stdint.h>

#define META_NAME_MAX	      64u /* table, entity and field names */
#define META_DESC_MAX	      512u
#define META_FIELDS_MAX	      256u  /* fields per table */
#define META_LABEL_MAX	      1024u /* bytes of one key or label value in a record */
#define META_HIST_BUCKETS_MAX 64u
#define META_RECORD_MAX_LEN   8192u	 /* must equal IPC_RECORD_MAX_LEN; kept here so schema/ needs no ipc.h */
#define META_TABLES_MAX	      4096u	 /* tables in one registry */
#define META_FILE_MAX	      (4u << 20) /* bytes of one .meta file */
#define META_NUMBER_MAX_LEN   400u	 /* longest number text accepted (printf("%f", DBL_MAX) is 316) */

enum meta_field_type {
	META_KEY = 0,
	META_LABEL,
	META_GAUGE,
	META_COUNTER,
	META_HISTOGRAM,
	META_SUMMARY,
};

/* One field of a table, in record order. */
struct meta_field {
	char name[META_NAME_MAX];
	char description[META_DESC_MAX];
	enum meta_field_type type;
};

/* One measurement (table) of a .meta file. */
struct meta_table {
	char name[META_NAME_MAX];
	char entity[META_NAME_MAX];
	char version[META_NAME_MAX];
	char source[256]; /* file it came from */
	unsigned int nfields;
	unsigned int nkeys;
	struct meta_field *fields;
};

/* All tables known to the supervisor (or to a test), looked up by name. */
struct meta_registry;

struct meta_registry *meta_registry__new(void);
void meta_registry__free(struct meta_registry *reg);

/*
 * Load one .meta file and add its tables. On error returns a negative errno and writes a message
 * naming the file, the line (when known) and the problem into err (size errlen; err may be NULL).
 * Nothing is added when the file has any error. A table name already present is an error (-EEXIST).
 * Other errors: -EINVAL (syntax or content), -EFBIG (over META_FILE_MAX), -ENOSPC (over
 * META_TABLES_MAX), -ENOMEM, or the errno of open/read. Field numbers in messages count from 1.
 * Trailing commas in lists (accepted by libconfig >= 1.7) are accepted; @include is refused.
 */
int meta_registry__load_file(struct meta_registry *reg, const char *path, char *err, size_t errlen);
/* Same, from a buffer (name is used in messages). */
int meta_registry__load_buf(struct meta_registry *reg, const char *name, const char *buf, size_t len, char *err,
			    size_t errlen);
/* Load every *.meta file of a directory (sorted by name, dot files skipped). Stops at the first bad
 * file; the files before it stay loaded. */
int meta_registry__load_dir(struct meta_registry *reg, const char *dir, char *err, size_t errlen);
/* One name, one meaning: Prometheus names a field gala_gopher_<entity>_<field>, so two tables of one
 * entity with a metric field of one name and different key/label sets, or a gauge/counter named like a
 * histogram's or summary's _sum/_count/_bucket series, would mix two meanings in one family. -EEXIST
 * with a message naming both tables, or 0. meta_registry__load_dir runs it after the last file (the
 * schema directory of the supervisor and --check); a registry built with load_buf/load_file is not
 * checked unless its owner calls this. */
int meta_registry__check_families(const struct meta_registry *reg, char *err, size_t errlen);

/* Table named [name, name+len) (not NUL-terminated), or NULL. Hash lookup, no allocation. */
const struct meta_table *meta_registry__find(const struct meta_registry *reg, const char *name, size_t len);
unsigned int meta_registry__count(const struct meta_registry *reg);
const struct meta_table *meta_registry__at(const struct meta_registry *reg, unsigned int i);

/* "key", "label", ... ("unknown" for a value out of range). */
const char *meta_field_type__str(enum meta_field_type t);

/* Why a record was rejected. Stable names: they become label values of self-metrics. */
enum meta_reject {
	META_OK = 0,
	META_REJ_MALFORMED, /* not "|...|" framed, empty table name, line too long */
	META_REJ_UNKNOWN_TABLE,
	META_REJ_FIELD_COUNT,
	META_REJ_EMPTY_KEY,
	META_REJ_NOT_NUMERIC, /* gauge or counter value */
	META_REJ_NEGATIVE_COUNTER,
	META_REJ_BAD_HISTOGRAM,
	META_REJ_BAD_SUMMARY,
	META_REJ_BAD_UTF8,
	META_REJ_LABEL_TOO_LONG,
	META_REJ__COUNT,
};
const char *meta_reject__str(enum meta_reject r);

/* A validated record: the table and the value of each field (pointers into the line, not
 * NUL-terminated). */
struct meta_record {
	const struct meta_table *table;
	unsigned int nvalues;
	const char *values[META_FIELDS_MAX];
	uint16_t lens[META_FIELDS_MAX];
};

/*
 * Validate one record line "|table|v1|...|vN|" (without the trailing newline) against the registry.
 * Returns META_OK and fills *ret_rec, or the reason of rejection; *ret_field (may be NULL) gets the
 * index (from 0) of the offending field or -1. ret_rec may be NULL (validate only); on rejection its
 * contents are unspecified. No allocation; one pass over the line. Checks, in this order: framing
 * (MALFORMED; also a '\n' in the line or len > META_RECORD_MAX_LEN), UNKNOWN_TABLE, FIELD_COUNT, then
 * the fields in order. An empty gauge or counter value is NOT_NUMERIC (no "missing value" encoding).
 */
enum meta_reject meta_record__parse(const struct meta_registry *reg, const char *line, size_t len,
				    struct meta_record *ret_rec, int *ret_field);

/*
 * Histogram value encoding (space separated): "N le_1 cum_1 ... le_N cum_N sum count"
 *   N        number of finite buckets, 1..META_HIST_BUCKETS_MAX
 *   le_i     bucket upper bound, strictly increasing numbers
 *   cum_i    observations <= le_i, non-negative integers, non-decreasing
 *   sum      sum of all observations (number)
 *   count    total observations, >= cum_N (the +Inf bucket)
 * Summary encoding: "N q_1 v_1 ... q_N v_N sum count", q_i strictly increasing in [0, 1].
 */
struct meta_hist {
	unsigned int n;
	double le[META_HIST_BUCKETS_MAX];
	uint64_t cum[META_HIST_BUCKETS_MAX];
	double sum;
	uint64_t count;
};
/* 0 or -EINVAL; ret may be NULL (validate only) and is untouched on error. Tokens are separated by
 * exactly one space; counts are unsigned decimal integers. */
int meta_hist__parse(const char *s, size_t len, struct meta_hist *ret);

struct meta_summary {
	unsigned int n;
	double q[META_HIST_BUCKETS_MAX];
	double v[META_HIST_BUCKETS_MAX];
	double sum;
	uint64_t count;
};
/* Same rules as meta_hist__parse; N is 1..META_HIST_BUCKETS_MAX. */
int meta_summary__parse(const char *s, size_t len, struct meta_summary *ret);

/* Strict number parse of [s, s+len): -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)? (no '+' sign, no hex, no
 * spaces, no inf/nan, at most META_NUMBER_MAX_LEN bytes). 0, -EINVAL (syntax) or -ERANGE (overflows
 * a double; underflow gives 0 or a subnormal). *ret is untouched on error. */
int meta_parse_number(const char *s, size_t len, double *ret);
/* 1 when [s, s+len) is valid UTF-8 without control characters except tab. */
int meta_utf8_valid(const char *s, size_t len);

#endif
