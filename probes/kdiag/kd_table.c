/* kd_table.c - a bounded table of fixed-size keys and values with a hash index (kd_table.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kd_table.h"

int kd_table__init(struct kd_table *t, size_t key_size, size_t val_size, uint32_t max)
{
	if (!key_size || !val_size)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->key_size = key_size;
	t->val_size = val_size;
	t->max = max;
	return 0;
}

void kd_table__free(struct kd_table *t)
{
	if (!t)
		return;
	free(t->keys);
	free(t->vals);
	free(t->slots);
	t->keys = t->vals = NULL;
	t->slots = NULL;
	t->n = t->cap = t->nslots = 0;
}

static uint64_t hash(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The slot of key: where it is, or the empty one where it would go. */
static uint32_t find(const struct kd_table *t, const void *key)
{
	uint32_t mask = t->nslots - 1, i = (uint32_t)hash(key, t->key_size) & mask;

	while (t->slots[i] && memcmp(t->keys + (size_t)(t->slots[i] - 1) * t->key_size, key, t->key_size))
		i = (i + 1) & mask;
	return i;
}

static int grow(struct kd_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 64, nslots = 4;
	uint8_t *k, *v;
	uint32_t *s;

	if (cap < t->cap)
		return -ENOMEM;
	while (nslots <= 2 * cap)
		nslots *= 2;
	k = realloc(t->keys, (size_t)cap * t->key_size);
	if (!k)
		return -ENOMEM;
	t->keys = k;
	v = realloc(t->vals, (size_t)cap * t->val_size);
	if (!v)
		return -ENOMEM;
	t->vals = v;
	s = calloc(nslots, sizeof(*s));
	if (!s)
		return -ENOMEM;
	free(t->slots);
	t->slots = s;
	t->nslots = nslots;
	t->cap = cap;
	for (uint32_t r = 0; r < t->n; r++)
		t->slots[find(t, t->keys + (size_t)r * t->key_size)] = r + 1;
	return 0;
}

int kd_table__get(struct kd_table *t, const void *key, void **ret_val)
{
	uint32_t i;
	int err;

	if (t->nslots) {
		i = find(t, key);
		if (t->slots[i]) {
			*ret_val = t->vals + (size_t)(t->slots[i] - 1) * t->val_size;
			return 0;
		}
	}
	if (t->n >= t->max)
		return -ENOSPC;
	if (t->n >= t->cap && (err = grow(t)))
		return err;
	i = find(t, key);
	memcpy(t->keys + (size_t)t->n * t->key_size, key, t->key_size);
	memset(t->vals + (size_t)t->n * t->val_size, 0, t->val_size);
	t->slots[i] = ++t->n;
	*ret_val = t->vals + (size_t)(t->n - 1) * t->val_size;
	return 0;
}

const void *kd_table__key(const struct kd_table *t, uint32_t i)
{
	return t->keys + (size_t)i * t->key_size;
}

void *kd_table__val(const struct kd_table *t, uint32_t i)
{
	return t->vals + (size_t)i * t->val_size;
}
