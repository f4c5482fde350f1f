/* kd_table.h - a bounded table of fixed-size keys and values (flows -> counters) in insertion order, with a
 * hash index: kdiag's cumulative flow tables, whose rows past `max` go to an overflow row instead. */
#ifndef GG_KD_TABLE_H
#define GG_KD_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct kd_table {
	size_t key_size, val_size;
	uint32_t n;	 /* rows */
	uint32_t max;	 /* rows at most (may be lowered or raised live; rows already there stay) */
	uint32_t cap;	 /* rows allocated */
	uint32_t nslots; /* index slots (power of two, > 2 * cap) */
	uint8_t *keys, *vals;
	uint32_t *slots; /* row + 1, 0: empty */
};

/* An empty table. 0 or -EINVAL (sizes 0). */
int kd_table__init(struct kd_table *t, size_t key_size, size_t val_size, uint32_t max);
/* Accepts a zeroed or half-built table. */
void kd_table__free(struct kd_table *t);
/* The value of key (zero-filled when new) into *ret_val: 0; -ENOSPC when it is new and the table has max
 * rows; -ENOMEM. *ret_val stays valid until the next kd_table__get. */
int kd_table__get(struct kd_table *t, const void *key, void **ret_val);
/* Row i's key and value (i < n). */
const void *kd_table__key(const struct kd_table *t, uint32_t i);
void *kd_table__val(const struct kd_table *t, uint32_t i);

#endif
