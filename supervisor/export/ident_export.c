/* ident_export.c - identity labels on exported tables and records: a per-table copy with the labels
 * appended (made once per table), and per record one cache lookup of its tgid. */
#include "ident_export.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "supervisor.h" /* gg_now_ms */

static const char *const descriptions[GG_IDENT__COUNT] = {
	"container id (from the cgroup path; empty outside containers)",
	"container name (from the container runtime's state)",
	"container image (from the container runtime's state)",
	"pod UID (from the cgroup path; empty outside Kubernetes pods)",
	"pod name (from the container runtime's state)",
	"pod namespace (from the container runtime's state)",
};

/* One table of the registry: its exported form. */
struct tmap_entry {
	const struct meta_table *orig;
	struct meta_table *aug; /* NULL: exported as it is */
	int tgid_idx;
	unsigned int nadd;
	uint8_t add[GG_IDENT__COUNT]; /* identity fields appended, in order */
};

struct gg_ident_export {
	struct gg_identity *id;
	struct tmap_entry *slots; /* open addressing by table pointer */
	size_t nslots, used;
	struct meta_record rec;
	char short_id[13]; /* a container id cut to docker's 12 digits, for a flame graph layer */
};

struct gg_ident_export *gg_ident_export__new(struct gg_identity *id)
{
	struct gg_ident_export *x = calloc(1, sizeof(*x));

	if (!x)
		goto err_out;
	x->nslots = 128;
	x->slots = calloc(x->nslots, sizeof(*x->slots));
	if (!x->slots)
		goto err_out;
	x->id = id;
	return x;

err_out:
	if (x)
		free(x->slots);
	free(x);
	gg_identity__free(id);
	errno = ENOMEM;
	return NULL;
}

void gg_ident_export__free(struct gg_ident_export *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nslots; i++) {
		if (x->slots[i].aug) {
			free(x->slots[i].aug->fields);
			free(x->slots[i].aug);
		}
	}
	free(x->slots);
	gg_identity__free(x->id);
	free(x);
}

struct gg_identity *gg_ident_export__identity(struct gg_ident_export *x)
{
	return x ? x->id : NULL;
}

static struct tmap_entry *slot_of(struct tmap_entry *slots, size_t nslots, const struct meta_table *t)
{
	size_t mask = nslots - 1, i = gg_ptr_hash(t) & mask;

	while (slots[i].orig && slots[i].orig != t)
		i = (i + 1) & mask;
	return &slots[i];
}

static int grow(struct gg_ident_export *x)
{
	size_t n = x->nslots * 2;
	struct tmap_entry *ns = calloc(n, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < x->nslots; i++) {
		if (x->slots[i].orig)
			*slot_of(ns, n, x->slots[i].orig) = x->slots[i];
	}
	free(x->slots);
	x->slots = ns;
	x->nslots = n;
	return 0;
}

/* The exported form of t (computed at its first sight). NULL when out of memory. */
static struct tmap_entry *entry_of(struct gg_ident_export *x, const struct meta_table *t)
{
	struct tmap_entry *e = slot_of(x->slots, x->nslots, t);
	struct meta_table *aug;
	int tgid = -1;

	if (e->orig)
		return e;
	if ((x->used + 1) * 2 > x->nslots) {
		if (grow(x))
			return NULL;
		e = slot_of(x->slots, x->nslots, t);
	}
	e->orig = t;
	e->tgid_idx = -1;
	x->used++;
	for (unsigned int i = 0; i < t->nfields; i++) {
		if (t->fields[i].type == META_KEY && !strcmp(t->fields[i].name, "tgid"))
			tgid = (int)i;
	}
	if (tgid < 0)
		return e;
	for (int k = 0; k < GG_IDENT__COUNT; k++) {
		int have = 0;

		for (unsigned int i = 0; i < t->nfields && !have; i++)
			have = !strcmp(t->fields[i].name, gg_ident_names[k]);
		if (!have)
			e->add[e->nadd++] = (uint8_t)k;
	}
	if (!e->nadd || t->nfields + e->nadd > META_FIELDS_MAX)
		return e; /* nothing to add, or no room: exported as it is */
	aug = malloc(sizeof(*aug));
	if (aug)
		aug->fields = calloc(t->nfields + e->nadd, sizeof(*aug->fields));
	if (!aug || !aug->fields) {
		free(aug);
		e->nadd = 0;
		return e;
	}
	{
		struct meta_field *f = aug->fields;

		memcpy(aug, t, offsetof(struct meta_table, fields));
		memcpy(f, t->fields, t->nfields * sizeof(*f));
		for (unsigned int j = 0; j < e->nadd; j++) {
			struct meta_field *nf = &f[t->nfields + j];

			snprintf(nf->name, sizeof(nf->name), "%s", gg_ident_names[e->add[j]]);
			snprintf(nf->description, sizeof(nf->description), "%s", descriptions[e->add[j]]);
			nf->type = META_LABEL;
		}
		aug->nfields = t->nfields + e->nadd;
	}
	e->aug = aug;
	e->tgid_idx = tgid;
	return e;
}

const struct meta_table *gg_ident_export__table(struct gg_ident_export *x, const struct meta_table *t)
{
	struct tmap_entry *e = x ? entry_of(x, t) : NULL;

	return e && e->aug ? e->aug : t;
}

/* The tgid a key value names; 0 (no process) when it is not a number. */
static uint32_t parse_tgid(const char *s, size_t n)
{
	uint64_t v = 0;

	if (!n || n > 10)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return v > UINT32_MAX ? 0 : (uint32_t)v;
}

const struct meta_record *gg_ident_export__record(struct gg_ident_export *x, const struct meta_record *rec,
						  uint64_t now_ms)
{
	struct tmap_entry *e = x ? entry_of(x, rec->table) : NULL;
	const struct gg_ident *id;
	struct meta_record *r;

	if (!e || !e->aug)
		return rec;
	id = gg_identity__lookup(x->id, parse_tgid(rec->values[e->tgid_idx], rec->lens[e->tgid_idx]), now_ms);
	r = &x->rec;
	r->table = e->aug;
	r->nvalues = rec->nvalues + e->nadd;
	memcpy(r->values, rec->values, rec->nvalues * sizeof(r->values[0]));
	memcpy(r->lens, rec->lens, rec->nvalues * sizeof(r->lens[0]));
	for (unsigned int j = 0; j < e->nadd; j++) {
		r->values[rec->nvalues + j] = id->v[e->add[j]];
		r->lens[rec->nvalues + j] = id->len[e->add[j]];
	}
	return r;
}

void gg_ident_export__json_members(struct gg_ident_export *x, uint32_t tgid, uint64_t now_ms, struct gg_buf *out)
{
	const struct gg_ident *id = gg_identity__lookup(x->id, tgid, now_ms);

	for (int i = 0; i < GG_IDENT__COUNT; i++) {
		gg_buf__putc(out, ',');
		gg_buf__put_json_str(out, gg_ident_names[i], strlen(gg_ident_names[i]));
		gg_buf__putc(out, ':');
		gg_buf__put_json_str(out, id->v[i], id->len[i]);
	}
}

void gg_ident_export__names(void *ctx, uint32_t tgid, const char **ret_pod, const char **ret_container)
{
	struct gg_ident_export *x = ctx;
	const struct gg_ident *id;

	*ret_pod = *ret_container = NULL;
	if (!x)
		return;
	id = gg_identity__lookup(x->id, tgid, gg_now_ms());
	*ret_pod = id->len[GG_IDENT_POD] ? id->v[GG_IDENT_POD] : id->v[GG_IDENT_POD_ID];
	if (id->len[GG_IDENT_CONTAINER_NAME]) {
		*ret_container = id->v[GG_IDENT_CONTAINER_NAME];
	} else if (id->len[GG_IDENT_CONTAINER_ID]) {
		memcpy(x->short_id, id->v[GG_IDENT_CONTAINER_ID], 12);
		x->short_id[12] = '\0';
		*ret_container = x->short_id;
	}
}
