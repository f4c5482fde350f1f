/* prom.h - the Prometheus text exposition (format 0.0.4) of the imdb's tables. */
#ifndef GG_PROM_H
#define GG_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "outbuf.h"

/* "# HELP name help\n# TYPE name type\n". */
void prom_family_header(struct gg_buf *b, const char *name, const char *help, const char *type);

struct imdb;

/* The metric families derived from the imdb's table list, cached between scrapes (rebuilt when the
 * imdb's generation changes). */
struct prom_families;
struct prom_families *prom_families__new(void);
void prom_families__free(struct prom_families *f);

/* Optional filter: family names for which it returns 1 are left out (names the agent reserves for its
 * own metrics). */
typedef int (*prom_reserved_fn)(const char *family);

/*
 * Render every table of the imdb: one family per metric field, named gala_gopher_<entity>_<field>;
 * tables of the same entity share a family when they share a field name (a later table whose field
 * type differs is left out of that family and counted in *ret_conflicts, may be NULL). Series carry the
 * row's pre-rendered label set; histograms become _bucket{le}/_sum/_count, summaries {quantile}/_sum/
 * _count. Returns the number of series (sample lines) written. Read-only for the imdb.
 */
uint64_t prom_render_imdb(struct gg_buf *b, const struct imdb *db, struct prom_families *cache,
			  prom_reserved_fn reserved, uint64_t *ret_conflicts);

#endif
