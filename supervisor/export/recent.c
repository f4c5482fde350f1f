/* recent.c - a ring of the last events reported, for the web page (its memory is fixed at creation). */
#include "recent.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct gg_recent_slot {
	uint64_t seq; /* 0: empty */
	int cut;
	char text[GG_RECENT_LINE_MAX + 1];
};

struct gg_recent {
	uint64_t next; /* sequence number of the next push */
	struct gg_recent_slot slot[GG_RECENT_EVENTS];
};

struct gg_recent *gg_recent__new(void)
{
	struct gg_recent *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->next = 1;
	return r;
}

void gg_recent__free(struct gg_recent *r)
{
	free(r);
}

void gg_recent__push(struct gg_recent *r, const char *json, size_t len)
{
	struct gg_recent_slot *s;

	if (!r || !json)
		return;
	s = &r->slot[r->next % GG_RECENT_EVENTS];
	s->cut = len > GG_RECENT_LINE_MAX;
	if (s->cut)
		len = GG_RECENT_LINE_MAX;
	memcpy(s->text, json, len);
	s->text[len] = '\0';
	s->seq = r->next++;
}

uint64_t gg_recent__next_seq(const struct gg_recent *r)
{
	return r ? r->next : 1;
}

const char *gg_recent__get(const struct gg_recent *r, uint64_t seq, int *ret_cut)
{
	const struct gg_recent_slot *s;

	if (!r || !seq)
		return NULL;
	s = &r->slot[seq % GG_RECENT_EVENTS];
	if (s->seq != seq)
		return NULL;
	if (ret_cut)
		*ret_cut = s->cut;
	return s->text;
}
