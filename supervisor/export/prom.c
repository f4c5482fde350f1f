/* prom.c - the Prometheus text exposition of the imdb (families cached between scrapes). */
#include "prom.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imdb.h"

void prom_family_header(struct gg_buf *b, const char *name, const char *help, const char *type)
{
	gg_buf__puts(b, "# HELP ");
	gg_buf__puts(b, name);
	gg_buf__putc(b, ' ');
	gg_buf__put_prom_help(b, help, strlen(help));
	gg_buf__puts(b, "\n# TYPE ");
	gg_buf__puts(b, name);
	gg_buf__putc(b, ' ');
	gg_buf__puts(b, type);
	gg_buf__putc(b, '\n');
}

/* ---- families -------------------------------------------------------------------------------------- */

struct fam_member {
	unsigned int table;  /* imdb table index */
	unsigned int metric; /* index into the table's metric fields */
};

struct family {
	char *name;
	const char *help;
	enum meta_field_type type;
	struct fam_member *members;
	unsigned int nmembers, cap;
};

struct prom_families {
	uint64_t generation; /* of the imdb they were built from; 0 = never built */
	const struct imdb *db;
	struct family *fams;
	unsigned int nfams, cap;
	uint32_t *slots; /* name hash -> family index + 1 */
	size_t nslots;
	uint64_t conflicts;
};

struct prom_families *prom_families__new(void)
{
	return calloc(1, sizeof(struct prom_families));
}

static void families_clear(struct prom_families *f)
{
	for (unsigned int i = 0; i < f->nfams; i++) {
		free(f->fams[i].name);
		free(f->fams[i].members);
	}
	free(f->fams);
	free(f->slots);
	f->fams = NULL;
	f->slots = NULL;
	f->nfams = f->cap = 0;
	f->nslots = 0;
	f->conflicts = 0;
	f->generation = 0;
}

void prom_families__free(struct prom_families *f)
{
	if (!f)
		return;
	families_clear(f);
	free(f);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static const char *type_str(enum meta_field_type t)
{
	switch (t) {
	case META_COUNTER:
		return "counter";
	case META_HISTOGRAM:
		return "histogram";
	case META_SUMMARY:
		return "summary";
	default:
		return "gauge";
	}
}

static int member_add(struct family *fam, unsigned int table, unsigned int metric)
{
	if (fam->nmembers == fam->cap) {
		unsigned int cap = fam->cap ? fam->cap * 2 : 2;
		struct fam_member *nm = realloc(fam->members, cap * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		fam->members = nm;
		fam->cap = cap;
	}
	fam->members[fam->nmembers].table = table;
	fam->members[fam->nmembers].metric = metric;
	fam->nmembers++;
	return 0;
}

static int families_build(struct prom_families *f, const struct imdb *db, prom_reserved_fn reserved)
{
	unsigned int nt = imdb__ntables(db), total = 0;
	char name[2 * META_NAME_MAX + 16];

	families_clear(f);
	for (unsigned int i = 0; i < nt; i++)
		total += imdb__table(db, i)->nmetrics;
	f->nslots = 16;
	while (f->nslots < 2 * (size_t)total + 2)
		f->nslots *= 2;
	f->slots = calloc(f->nslots, sizeof(*f->slots));
	f->cap = total ? total : 1;
	f->fams = calloc(f->cap, sizeof(*f->fams));
	if (!f->slots || !f->fams)
		goto err_nomem;
	for (unsigned int i = 0; i < nt; i++) {
		const struct imdb_table *t = imdb__table(db, i);

		if (t->refused)
			continue;
		for (unsigned int j = 0; j < t->nmetrics; j++) {
			const struct meta_field *fld = &t->meta->fields[t->metric_idx[j]];
			size_t mask = f->nslots - 1, s;
			struct family *fam;

			snprintf(name, sizeof(name), "gala_gopher_%s_%s", t->meta->entity, fld->name);
			if (reserved && reserved(name)) {
				f->conflicts++;
				continue;
			}
			for (s = str_hash(name) & mask; f->slots[s]; s = (s + 1) & mask) {
				if (!strcmp(f->fams[f->slots[s] - 1].name, name))
					break;
			}
			if (f->slots[s]) {
				fam = &f->fams[f->slots[s] - 1];
				if (fam->type != fld->type) {
					f->conflicts++;
					continue;
				}
			} else {
				fam = &f->fams[f->nfams];
				fam->name = strdup(name);
				if (!fam->name)
					goto err_nomem;
				fam->help = fld->description[0] ? fld->description : fld->name;
				fam->type = fld->type;
				f->slots[s] = ++f->nfams;
			}
			if (member_add(fam, i, j))
				goto err_nomem;
		}
	}
	f->db = db;
	f->generation = imdb__generation(db);
	return 0;

err_nomem:
	families_clear(f);
	return -ENOMEM;
}

/* ---- rendering ------------------------------------------------------------------------------------- */

/* Next space-separated token of [*p, end): 0, or -ENOENT when there is none (or it is empty). */
static int next_tok(const char **p, const char *end, const char **ret_s, size_t *ret_n)
{
	const char *s = *p, *e;

	if (s >= end)
		return -ENOENT;
	e = memchr(s, ' ', (size_t)(end - s));
	if (!e)
		e = end;
	*ret_s = s;
	*ret_n = (size_t)(e - s);
	*p = e < end ? e + 1 : end;
	return *ret_n ? 0 : -ENOENT;
}

/* name<suffix>{labels<,extra_name="extra">} value\n */
static void put_sample(struct gg_buf *b, const char *name, size_t name_len, const char *suffix, const char *lbl,
		       size_t lbl_len, const char *extra_name, const char *extra, size_t extra_len, const char *v,
		       size_t vl)
{
	size_t sl = suffix ? strlen(suffix) : 0;

	if (gg_buf__reserve(b, name_len + sl + lbl_len + extra_len + 32 + vl))
		return;
	gg_buf__put(b, name, name_len);
	if (sl)
		gg_buf__put(b, suffix, sl);
	if (extra_name) {
		/* lbl always has at least machine_id, so it is "{...}" with something inside */
		gg_buf__put(b, lbl, lbl_len - 1);
		gg_buf__putc(b, ',');
		gg_buf__puts(b, extra_name);
		gg_buf__put(b, "=\"", 2);
		gg_buf__put(b, extra, extra_len);
		gg_buf__put(b, "\"}", 2);
	} else {
		gg_buf__put(b, lbl, lbl_len);
	}
	gg_buf__putc(b, ' ');
	gg_buf__put(b, v, vl);
	gg_buf__putc(b, '\n');
}

/* "N b_1 c_1 ... b_N c_N sum count" -> _bucket/_sum/_count (histogram) or {quantile}/_sum/_count. */
static uint64_t render_dist(struct gg_buf *b, const struct family *fam, size_t name_len, const char *lbl,
			    size_t lbl_len, const char *v, size_t vl)
{
	const int hist = fam->type == META_HISTOGRAM;
	const char *p = v, *end = v + vl, *s, *c;
	size_t sn, cn;
	unsigned long n;
	uint64_t lines = 0;

	if (next_tok(&p, end, &s, &sn))
		return 0;
	n = strtoul(s, NULL, 10);
	for (unsigned long i = 0; i < n; i++) {
		if (next_tok(&p, end, &s, &sn) || next_tok(&p, end, &c, &cn))
			return lines;
		put_sample(b, fam->name, name_len, hist ? "_bucket" : NULL, lbl, lbl_len, hist ? "le" : "quantile", s,
			   sn, c, cn);
		lines++;
	}
	if (next_tok(&p, end, &s, &sn) || next_tok(&p, end, &c, &cn))
		return lines;
	if (hist) {
		put_sample(b, fam->name, name_len, "_bucket", lbl, lbl_len, "le", "+Inf", 4, c, cn);
		lines++;
	}
	put_sample(b, fam->name, name_len, "_sum", lbl, lbl_len, NULL, NULL, 0, s, sn);
	put_sample(b, fam->name, name_len, "_count", lbl, lbl_len, NULL, NULL, 0, c, cn);
	return lines + 2;
}

static uint64_t render_family(struct gg_buf *b, const struct imdb *db, const struct family *fam)
{
	size_t name_len = strlen(fam->name);
	uint64_t rows = 0, lines = 0;

	for (unsigned int m = 0; m < fam->nmembers; m++)
		rows += imdb__table(db, fam->members[m].table)->age.n;
	if (!rows)
		return 0;
	prom_family_header(b, fam->name, fam->help, type_str(fam->type));
	for (unsigned int m = 0; m < fam->nmembers; m++) {
		const struct imdb_table *t = imdb__table(db, fam->members[m].table);
		unsigned int j = fam->members[m].metric;

		for (const struct gg_lru_link *l = t->age.oldest; l; l = l->newer) {
			const struct imdb_row *r = (const struct imdb_row *)l;
			const char *lbl = r->buf + r->lbl_off, *v = r->buf + r->voff[j];
			size_t need = name_len + r->lbl_len + r->vlen[j] + 2;
			char *o;

			if (fam->type == META_HISTOGRAM || fam->type == META_SUMMARY) {
				lines += render_dist(b, fam, name_len, lbl, r->lbl_len, v, r->vlen[j]);
				continue;
			}
			/* the hot path: one reservation, three copies */
			if (gg_buf__reserve(b, need))
				return lines;
			o = b->data + b->len;
			memcpy(o, fam->name, name_len);
			o += name_len;
			memcpy(o, lbl, r->lbl_len);
			o += r->lbl_len;
			*o++ = ' ';
			memcpy(o, v, r->vlen[j]);
			o += r->vlen[j];
			*o++ = '\n';
			b->len = (size_t)(o - b->data);
			lines++;
		}
	}
	if (b->cap > b->len)
		b->data[b->len] = 0;
	return lines;
}

uint64_t prom_render_imdb(struct gg_buf *b, const struct imdb *db, struct prom_families *cache,
			  prom_reserved_fn reserved, uint64_t *ret_conflicts)
{
	uint64_t lines = 0;

	if (cache->db != db || cache->generation != imdb__generation(db) || !cache->fams) {
		if (families_build(cache, db, reserved))
			b->oom = 1;
	}
	for (unsigned int i = 0; i < cache->nfams && !b->oom; i++)
		lines += render_family(b, db, &cache->fams[i]);
	if (ret_conflicts)
		*ret_conflicts = cache->conflicts;
	return lines;
}
