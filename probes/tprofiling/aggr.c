/* aggr.c - per-thread aggregation of thread events (gala-gopher's tprofiling): same-name events of one
 * thread within min_aggr_dur of the first become one event with the sum of their durations and their
 * count. A fixed pool of slots chained from a hash table; no allocation after tp_aggr__new. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tprof.h"

#define NBUCKETS (2u * TP_AGGR_SLOTS)

struct tp_aggr {
	int32_t bucket[NBUCKETS]; /* first slot of the chain, -1 none */
	int32_t free_head;	  /* free slots, chained through next */
	unsigned int open;
	uint64_t overflow;
	struct tp_agg slot[TP_AGGR_SLOTS];
};

struct tp_aggr *tp_aggr__new(void)
{
	struct tp_aggr *a = malloc(sizeof(*a));

	if (!a)
		return NULL;
	for (unsigned int i = 0; i < NBUCKETS; i++)
		a->bucket[i] = -1;
	for (unsigned int i = 0; i < TP_AGGR_SLOTS; i++)
		a->slot[i].next = i + 1 < TP_AGGR_SLOTS ? (int32_t)(i + 1) : -1;
	a->free_head = 0;
	a->open = 0;
	a->overflow = 0;
	return a;
}

void tp_aggr__free(struct tp_aggr *a)
{
	free(a);
}

static unsigned int hash(uint32_t pid, uint16_t name)
{
	uint64_t h = ((uint64_t)pid << 16 | name) * 0x9E3779B97F4A7C15ull;

	return (unsigned int)(h >> 40) % NBUCKETS;
}

static void fill(struct tp_agg *s, const struct tp_event *e)
{
	int32_t next = s->next;

	s->start_ns = e->start_ns;
	s->end_ns = e->end_ns;
	s->dur_ns = e->end_ns - e->start_ns;
	s->count = 1;
	s->pid = e->pid;
	s->tgid = e->tgid;
	s->name = e->name;
	s->type = e->type;
	s->arg = e->arg;
	s->ret = e->ret;
	s->bytes = e->type == TP_TYPE_MEM && e->arg > 0 ? (uint64_t)e->arg : 0;
	memcpy(s->comm, e->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
	s->nstack = e->nstack < TP_STACK_DEPTH ? e->nstack : TP_STACK_DEPTH;
	memcpy(s->stack, e->stack, s->nstack * sizeof(s->stack[0]));
	memcpy(s->path, e->path, sizeof(s->path));
	for (int i = 0; i < TP_PATH_DEPTH; i++)
		s->path[i][TP_PATH_NAME - 1] = '\0';
	s->next = next;
}

void tp_aggr__add(struct tp_aggr *a, const struct tp_event *e, uint64_t window_ns, tp_emit_fn emit, void *ctx)
{
	unsigned int b = hash(e->pid, e->name);
	struct tp_agg *s;
	int32_t i;

	if (e->end_ns < e->start_ns || e->name >= TP_NAME_NR || e->type >= TP_TYPE_NR)
		return;
	for (i = a->bucket[b]; i >= 0; i = a->slot[i].next) {
		s = &a->slot[i];
		if (s->pid != e->pid || s->name != e->name)
			continue;
		if (e->start_ns >= s->start_ns && e->start_ns - s->start_ns < window_ns && s->tgid == e->tgid) {
			s->dur_ns += e->end_ns - e->start_ns;
			s->count++;
			if (e->type == TP_TYPE_MEM && e->arg > 0)
				s->bytes += (uint64_t)e->arg;
			if (e->end_ns > s->end_ns)
				s->end_ns = e->end_ns;
			if (!strncmp(s->comm, e->comm, sizeof(s->comm) - 1))
				return;
			memcpy(s->comm, e->comm, sizeof(s->comm)); /* renamed: the latest name */
			s->comm[sizeof(s->comm) - 1] = '\0';
			return;
		}
		emit(ctx, s); /* its window is over: this event opens the next one in its place */
		fill(s, e);
		return;
	}
	if (a->free_head < 0) {
		struct tp_agg alone;

		memset(&alone, 0, sizeof(alone));
		fill(&alone, e);
		a->overflow++;
		emit(ctx, &alone);
		return;
	}
	i = a->free_head;
	s = &a->slot[i];
	a->free_head = s->next;
	s->next = a->bucket[b];
	a->bucket[b] = i;
	fill(s, e);
	a->open++;
}

void tp_aggr__flush(struct tp_aggr *a, uint64_t now_ns, uint64_t window_ns, tp_emit_fn emit, void *ctx)
{
	for (unsigned int b = 0; b < NBUCKETS; b++) {
		int32_t *link = &a->bucket[b];

		while (*link >= 0) {
			int32_t i = *link;
			struct tp_agg *s = &a->slot[i];

			if (now_ns != UINT64_MAX && (now_ns < s->start_ns || now_ns - s->start_ns < window_ns)) {
				link = &s->next;
				continue;
			}
			emit(ctx, s);
			*link = s->next;
			s->next = a->free_head;
			a->free_head = i;
			a->open--;
		}
	}
}

unsigned int tp_aggr__open(const struct tp_aggr *a)
{
	return a->open;
}

uint64_t tp_aggr__overflow(const struct tp_aggr *a)
{
	return a->overflow;
}
