/* lru.h - the intrusive use-order list (least recently used first) of the identity cache, the event
 * dedup table and the imdb tables. An entry embeds a gg_lru_link as its first member, so a link
 * pointer converts back to its entry with a cast. */
#ifndef GG_LRU_H
#define GG_LRU_H

#include <stddef.h>
#include <stdint.h>

struct gg_lru_link {
	struct gg_lru_link *older, *newer;
};

struct gg_lru {
	struct gg_lru_link *oldest, *newest;
	uint64_t n; /* entries on the list */
};

static inline void gg_lru__unlink(struct gg_lru *l, struct gg_lru_link *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		l->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		l->newest = e->older;
	e->older = e->newer = NULL;
	l->n--;
}

/* Append e as the newest. */
static inline void gg_lru__push(struct gg_lru *l, struct gg_lru_link *e)
{
	e->newer = NULL;
	e->older = l->newest;
	if (l->newest)
		l->newest->newer = e;
	else
		l->oldest = e;
	l->newest = e;
	l->n++;
}

/* Make e, already on the list, the newest. */
static inline void gg_lru__touch(struct gg_lru *l, struct gg_lru_link *e)
{
	if (l->newest == e)
		return;
	gg_lru__unlink(l, e);
	gg_lru__push(l, e);
}

/* Every entry handed to release (free, or the entry's destructor) and the list left empty. */
static inline void gg_lru__drain(struct gg_lru *l, void (*release)(void *entry))
{
	struct gg_lru_link *e = l->oldest, *next;

	for (; e; e = next) {
		next = e->newer;
		release(e);
	}
	l->oldest = l->newest = NULL;
	l->n = 0;
}

#endif
