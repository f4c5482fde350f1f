/* meta_impl.h - schema/ internals shared by meta_load.c and meta_record.c; not for other users. */
#ifndef GG_META_IMPL_H
#define GG_META_IMPL_H

#include <stddef.h>

#include "meta.h"

/* A table as the registry allocates it: the public part, and the field types packed one byte
 * each, so that validating a record reads one cache line of types instead of one per field. */
struct meta_table_impl {
	struct meta_table pub;
	unsigned char kinds[META_FIELDS_MAX];
};

static inline struct meta_table_impl *meta_table__impl(struct meta_table *t)
{
	return (struct meta_table_impl *)((char *)t - offsetof(struct meta_table_impl, pub));
}

static inline const unsigned char *meta_table__kinds(const struct meta_table *t)
{
	return ((const struct meta_table_impl *)((const char *)t - offsetof(struct meta_table_impl, pub)))->kinds;
}

#endif
