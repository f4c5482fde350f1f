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
	/* NULL: exported as it is. Once made, the table is exported as aug for good: its fields array
	 * has room for every label (cap) and is rewritten in place when the owner's labels change, so the
	 * imdb's table and the field pointers the renderers keep stay valid */
	struct meta_table *aug;
	unsigned int cap;
	int tgid_idx; /* -1: no tgid key (no identity, no pod labels) */
	unsigned int nadd;
	uint8_t add[GG_IDENT__COUNT]; /* identity fields appended, in order */
	/* the owner's labels appended after them: custom ones (their values), then pod ones (their keys) */
	unsigned int next;
	uint8_t ext_pod[2 * GG_EXT_LABELS_MAX];	    /* 1: a pod label */
	const char *ext_src[2 * GG_EXT_LABELS_MAX]; /* the custom value, or the pod label key */
	const void *owner;			    /* whose labels, at generation gen */
	uint64_t gen;
};

/* One probe's labels. */
struct owner_labels {
	const void *owner;
	uint64_t gen; /* changes whenever the labels do */
	struct gg_ext_labels l;
};

struct gg_ident_export {
	struct gg_identity *id;
	struct tmap_entry *slots; /* open addressing by table pointer */
	size_t nslots, used;
	struct owner_labels **owners;
	unsigned int nowners;
	uint64_t next_gen;
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
	for (unsigned int i = 0; i < x->nowners; i++)
		free(x->owners[i]);
	free(x->owners);
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

/* The exported copy of e->orig with its identity labels, room for the owner's labels. NULL when out of
 * memory. */
static struct meta_table *make_aug(struct tmap_entry *e)
{
	const struct meta_table *t = e->orig;
	unsigned int cap = t->nfields + e->nadd + 2 * GG_EXT_LABELS_MAX;
	struct meta_table *aug = malloc(sizeof(*aug));
	struct meta_field *f;

	if (cap > META_FIELDS_MAX)
		cap = META_FIELDS_MAX;
	if (aug)
		aug->fields = calloc(cap, sizeof(*aug->fields));
	if (!aug || !aug->fields) {
		free(aug);
		return NULL;
	}
	f = aug->fields;
	memcpy(aug, t, offsetof(struct meta_table, fields));
	memcpy(f, t->fields, t->nfields * sizeof(*f));
	for (unsigned int j = 0; j < e->nadd; j++) {
		struct meta_field *nf = &f[t->nfields + j];

		snprintf(nf->name, sizeof(nf->name), "%s", gg_ident_names[e->add[j]]);
		snprintf(nf->description, sizeof(nf->description), "%s", descriptions[e->add[j]]);
		nf->type = META_LABEL;
	}
	aug->nfields = t->nfields + e->nadd;
	e->aug = aug;
	e->cap = cap;
	return aug;
}

/* The exported form of t (computed at its first sight). NULL when out of memory. */
static struct tmap_entry *entry_of(struct gg_ident_export *x, const struct meta_table *t)
{
	struct tmap_entry *e = slot_of(x->slots, x->nslots, t);
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
	if (t->nfields + e->nadd > META_FIELDS_MAX)
		e->nadd = 0; /* no room: exported as it is */
	e->tgid_idx = tgid;  /* kept without a copy too: pod labels may come later */
	if (e->nadd && !make_aug(e))
		e->nadd = 0;
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

static struct owner_labels *owner_find(struct gg_ident_export *x, const void *owner)
{
	for (unsigned int i = 0; owner && i < x->nowners; i++) {
		if (x->owners[i]->owner == owner)
			return x->owners[i];
	}
	return NULL;
}

int gg_ident_export__set_labels(struct gg_ident_export *x, const void *owner, const struct gg_ext_labels *l)
{
	static const struct gg_ext_labels none;
	struct owner_labels *o;
	const char *keys[GG_POD_LABELS_MAX];
	unsigned int nkeys = 0;

	if (!x || !owner)
		return 0;
	if (!l)
		l = &none;
	o = owner_find(x, owner);
	if (!o) {
		struct owner_labels **no;

		if (!l->ncustom && !l->npod)
			return 0;
		no = realloc(x->owners, (x->nowners + 1) * sizeof(*no));
		if (!no)
			return -ENOMEM;
		x->owners = no;
		o = calloc(1, sizeof(*o));
		if (!o)
			return -ENOMEM;
		o->owner = owner;
		x->owners[x->nowners++] = o;
	}
	if (!memcmp(&o->l, l, sizeof(*l)))
		return 0; /* the same labels: the stored rows stay */
	o->l = *l;
	o->gen = ++x->next_gen;
	/* the resolver keeps the keys some probe asks for (the union; a pod may have many labels) */
	for (unsigned int i = 0; i < x->nowners; i++) {
		for (unsigned int j = 0; j < x->owners[i]->l.npod && nkeys < GG_POD_LABELS_MAX; j++) {
			unsigned int k = 0;

			while (k < nkeys && strcmp(keys[k], x->owners[i]->l.pod_key[j]))
				k++;
			if (k == nkeys)
				keys[nkeys++] = x->owners[i]->l.pod_key[j];
		}
	}
	gg_identity__want_pod_labels(x->id, keys, nkeys);
	return 0;
}

/* 1 when t (with its identity labels) has a field of this name already. */
static int has_field(const struct meta_table *t, unsigned int n, const char *name)
{
	for (unsigned int i = 0; i < n; i++) {
		if (!strcmp(t->fields[i].name, name))
			return 1;
	}
	return 0;
}

/* Rewrite the owner's labels of e's exported table (ol NULL: none). Returns the table whose stored
 * rows have the old label set (e->orig when the copy is made now), NULL when nothing changed. */
static const struct meta_table *relabel(struct tmap_entry *e, const struct owner_labels *ol)
{
	const struct meta_table *old = e->aug ? e->aug : e->orig;
	unsigned int base = e->orig->nfields + e->nadd, want = 0, old_n = e->aug ? e->aug->nfields : 0;
	char old_names[2 * GG_EXT_LABELS_MAX][META_NAME_MAX];
	struct meta_table *aug;

	if (ol)
		want = ol->l.ncustom + (e->tgid_idx >= 0 ? ol->l.npod : 0);
	if (!e->aug && !want)
		return NULL;
	if (!e->aug && !make_aug(e))
		return NULL; /* out of memory: exported without them */
	aug = e->aug;
	for (unsigned int i = base; i < old_n; i++)
		memcpy(old_names[i - base], aug->fields[i].name, META_NAME_MAX);
	e->next = 0;
	for (unsigned int i = 0; ol && i < ol->l.ncustom + ol->l.npod; i++) {
		int pod = i >= ol->l.ncustom;
		unsigned int k = pod ? i - ol->l.ncustom : i;
		const char *name = pod ? ol->l.pod_name[k] : ol->l.custom_name[k];
		struct meta_field *nf;

		if ((pod && e->tgid_idx < 0) || base + e->next >= e->cap)
			continue;
		/* a name the table has already keeps the table's own value */
		if (has_field(aug, base + e->next, name))
			continue;
		nf = &aug->fields[base + e->next];
		memset(nf, 0, sizeof(*nf));
		snprintf(nf->name, sizeof(nf->name), "%s", name);
		if (pod)
			snprintf(nf->description, sizeof(nf->description), "pod label %s (REST snoopers.pod_labels)",
				 ol->l.pod_key[k]);
		else
			snprintf(nf->description, sizeof(nf->description),
				 "custom label (REST snoopers.custom_labels)");
		nf->type = META_LABEL;
		e->ext_pod[e->next] = (uint8_t)pod;
		e->ext_src[e->next] = pod ? ol->l.pod_key[k] : ol->l.custom_value[k];
		e->next++;
	}
	aug->nfields = base + e->next;
	if (old == aug && old_n == aug->nfields) {
		unsigned int i = base;

		while (i < old_n && !strcmp(old_names[i - base], aug->fields[i].name))
			i++;
		if (i == old_n)
			return NULL; /* the same label names: the stored rows stay (their values follow) */
	}
	return old;
}

const struct meta_record *gg_ident_export__probe_record(struct gg_ident_export *x, const void *owner,
							const struct meta_record *rec, uint64_t now_ms,
							const struct meta_table **ret_stale)
{
	struct tmap_entry *e = x ? entry_of(x, rec->table) : NULL;
	const struct owner_labels *ol;
	const struct gg_ident *id = NULL;
	struct meta_record *r;
	unsigned int n;

	if (ret_stale)
		*ret_stale = NULL;
	if (!e)
		return rec;
	ol = owner_find(x, owner);
	if (e->owner != owner || e->gen != (ol ? ol->gen : 0)) {
		const struct meta_table *stale = relabel(e, ol);

		if (ret_stale)
			*ret_stale = stale;
		e->owner = owner;
		e->gen = ol ? ol->gen : 0;
	}
	if (!e->aug)
		return rec;
	if (e->tgid_idx >= 0)
		id = gg_identity__lookup(x->id, parse_tgid(rec->values[e->tgid_idx], rec->lens[e->tgid_idx]), now_ms);
	r = &x->rec;
	r->table = e->aug;
	n = rec->nvalues;
	memcpy(r->values, rec->values, n * sizeof(r->values[0]));
	memcpy(r->lens, rec->lens, n * sizeof(r->lens[0]));
	for (unsigned int j = 0; j < e->nadd; j++, n++) {
		r->values[n] = id->v[e->add[j]];
		r->lens[n] = id->len[e->add[j]];
	}
	for (unsigned int j = 0; j < e->next; j++, n++) {
		const char *v = e->ext_src[j];
		size_t len = 0;

		if (e->ext_pod[j]) {
			v = gg_ident__pod_label(id, e->ext_src[j], &len);
			if (!v || len > GG_IDENT_VALUE_MAX) {
				v = "";
				len = 0;
			}
		} else {
			len = strlen(v);
		}
		r->values[n] = v;
		r->lens[n] = (uint16_t)len;
	}
	r->nvalues = n;
	return r;
}

const struct meta_record *gg_ident_export__record(struct gg_ident_export *x, const struct meta_record *rec,
						  uint64_t now_ms)
{
	return gg_ident_export__probe_record(x, NULL, rec, now_ms, NULL);
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
