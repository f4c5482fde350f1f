/* live.c - mem_live from user space: reads the live allocation sites the BPF side keeps
 * (bpf/stackprobe_live.h, stackprobe_mmap.bpf.h) as one snapshot per drain, and keeps the maps bounded:
 * empty sites, the sites, blocks and region tables of processes that exited and stacks no site uses any
 * more are deleted. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "stackprobe.h"

#define LIVE_DEAD_MAX 256u /* exited processes purged per drain (the rest at the next) */

struct sp_live {
	struct sp_live_fds fd; /* the maps read and kept bounded */
	/* sites empty at this drain and at the previous one: empty_bufs, swapped at each drain */
	struct sp_live_key *empty, *empty_prev;
	size_t nempty, nempty_prev;
	size_t nuused;
	/* the tables are as large as the maps, allocated with the struct */
	struct sp_live_key keys[SP_LIVE_KEYS];
	struct sp_live_key empty_bufs[2][SP_LIVE_KEYS];
	unsigned char used[SP_LIVE_STACKS]; /* stack ids in use, one byte each */
	uint64_t uused[SP_LIVE_KEYS];	    /* live_ustacks keys in use, sorted after the walk */
};

struct sp_live *sp_live__new(const struct sp_live_fds *fds)
{
	struct sp_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->fd = *fds;
	l->empty = l->empty_bufs[0];
	l->empty_prev = l->empty_bufs[1];
	return l;
}

void sp_live__free(struct sp_live *l)
{
	free(l);
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sp_live_key));
}

/* Delete every key of a hash map whose key starts with a tgid in dead[] (every key when dead is NULL),
 * looking at max keys at most. Keys are collected in batches, then deleted: deleting while
 * walking would restart the walk. */
static void purge(int fd, size_t key_size, const uint32_t *dead, size_t ndead, size_t max)
{
	static unsigned char batch[256][32];
	unsigned char cur[32], last[32];
	size_t seen = 0;

	if (key_size > sizeof(cur))
		return;
	for (;;) {
		unsigned int n = 0;
		int have_last = 0;

		while (n < 256 && seen < max && bpf_map_get_next_key(fd, have_last ? last : NULL, cur) == 0) {
			uint32_t tgid;
			int hit = !dead;

			seen++;
			memcpy(last, cur, key_size);
			have_last = 1;
			memcpy(&tgid, cur, sizeof(tgid));
			for (size_t i = 0; dead && !hit && i < ndead; i++)
				hit = dead[i] == tgid;
			if (hit)
				memcpy(batch[n++], cur, key_size);
		}
		for (unsigned int i = 0; i < n; i++)
			(void)bpf_map_delete_elem(fd, batch[i]);
		if (n < 256 || seen >= max)
			break;
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Delete the keys of a u64-keyed map not in the sorted keep[] (all when keep is NULL), looking at max
 * keys at most. */
static void purge_u64(int fd, const uint64_t *keep, size_t nkeep, size_t max)
{
	uint64_t batch[256], cur, last = 0;
	size_t seen = 0;
	unsigned int n;

	do {
		int have_last = 0;

		n = 0;
		while (n < 256 && seen < max && bpf_map_get_next_key(fd, have_last ? &last : NULL, &cur) == 0) {
			seen++;
			last = cur;
			have_last = 1;
			if (!keep || !bsearch(&cur, keep, nkeep, sizeof(cur), u64_cmp))
				batch[n++] = cur;
		}
		for (unsigned int i = 0; i < n; i++)
			(void)bpf_map_delete_elem(fd, &batch[i]);
	} while (n == 256 && seen < max);
}

/* Memory syscalls in flight of processes that exited (a thread killed inside one leaves its entry):
 * keys are pid_tgid, the tgid in the upper half. */
static void purge_pending(int fd, const uint32_t *dead, size_t ndead)
{
	uint64_t batch[256], cur, last = 0;
	unsigned int n = 0;
	size_t seen = 0;
	int have_last = 0;

	while (n < 256 && seen < SP_MM_PENDING && bpf_map_get_next_key(fd, have_last ? &last : NULL, &cur) == 0) {
		seen++;
		last = cur;
		have_last = 1;
		for (size_t i = 0; i < ndead; i++)
			if (dead[i] == (uint32_t)(cur >> 32)) {
				batch[n++] = cur;
				break;
			}
	}
	for (unsigned int i = 0; i < n; i++)
		(void)bpf_map_delete_elem(fd, &batch[i]);
}

void sp_live__reset(struct sp_live *l)
{
	uint32_t id, next;

	purge(l->fd.sites, sizeof(struct sp_live_key), NULL, 0, 4u * SP_LIVE_KEYS);
	purge(l->fd.ptrs, sizeof(struct sp_live_ptr_key), NULL, 0, 4u * SP_LIVE_PTRS);
	purge(l->fd.mm_procs, sizeof(uint32_t), NULL, 0, 4u * SP_MM_PROCS);
	purge_u64(l->fd.mm_pend, NULL, 0, 4u * SP_MM_PENDING);
	purge_u64(l->fd.ustacks, NULL, 0, 4u * SP_LIVE_STACKS);
	while (bpf_map_get_next_key(l->fd.stacks, NULL, &next) == 0) {
		id = next;
		if (bpf_map_delete_elem(l->fd.stacks, &id))
			break;
	}
	l->nempty = l->nempty_prev = 0;
}

int sp_live__drain(struct sp_live *l, sp_sample_cb cb, void *ctx, uint64_t *ret_drained)
{
	uint64_t uips[SP_MAX_DEPTH + 1];
	uint32_t dead[LIVE_DEAD_MAX], alive[LIVE_DEAD_MAX];
	size_t n = 0, ndead = 0, nalive = 0;
	struct sp_live_key *prev = NULL, *tmp;
	int err = 0;

	while (n < SP_LIVE_KEYS && bpf_map_get_next_key(l->fd.sites, prev, &l->keys[n]) == 0) {
		prev = &l->keys[n];
		n++;
	}
	memset(l->used, 0, SP_LIVE_STACKS);
	l->nempty = 0;
	l->nuused = 0;
	for (size_t i = 0; i < n; i++) {
		struct sp_live_key *k = &l->keys[i];
		struct sp_live_val v;
		struct sp_sample smp;
		uint32_t sid = (uint32_t)k->ustack;
		int is_dead = 0, known = 0;

		if (bpf_map_lookup_elem(l->fd.sites, k, &v))
			continue;
		for (size_t j = 0; j < ndead && !known; j++)
			known = is_dead = dead[j] == k->tgid;
		for (size_t j = 0; j < nalive && !known; j++)
			known = alive[j] == k->tgid;
		if (!known) {
			is_dead = kill((pid_t)k->tgid, 0) < 0 && errno == ESRCH;
			if (is_dead && ndead < LIVE_DEAD_MAX)
				dead[ndead++] = k->tgid;
			else if (!is_dead && nalive < LIVE_DEAD_MAX)
				alive[nalive++] = k->tgid;
		}
		if (is_dead) {
			(void)bpf_map_delete_elem(l->fd.sites, k);
			continue;
		}
		if (v.bytes <= 0 && v.allocs <= 0) {
			/* empty twice in a row: deleted (an allocation between the site's creation and its
			 * first count is not mistaken for an empty site) */
			if (l->nempty_prev && bsearch(k, l->empty_prev, l->nempty_prev, sizeof(*k), key_cmp))
				(void)bpf_map_delete_elem(l->fd.sites, k);
			else
				l->empty[l->nempty++] = *k;
			continue;
		}
		if (k->uw && l->nuused < SP_LIVE_KEYS)
			l->uused[l->nuused++] = ((uint64_t)k->uw << 32) | (uint32_t)k->ustack;
		else if (!k->uw && k->ustack >= 0 && sid < SP_LIVE_STACKS)
			l->used[sid] = 1;
		if (v.bytes <= 0)
			continue;
		v.comm[SP_COMM_LEN - 1] = '\0';
		v.pcomm[SP_COMM_LEN - 1] = '\0';
		memset(&smp, 0, sizeof(smp));
		smp.event = SP_EV_MEM_LIVE;
		smp.tgid = smp.pid = k->tgid;
		smp.comm = v.comm;
		smp.pcomm = v.pcomm;
		smp.uips = uips;
		if (k->uw) { /* unwound with the .eh_frame tables (mmap/brk sites) */
			uint64_t uk = ((uint64_t)k->uw << 32) | (uint32_t)k->ustack;

			if (!bpf_map_lookup_elem(l->fd.ustacks, &uk, uips))
				while (smp.un < SP_MAX_DEPTH && uips[smp.un])
					smp.un++;
		} else if (k->ustack >= 0 && !bpf_map_lookup_elem(l->fd.stacks, &sid, uips)) {
			while (smp.un < SP_MAX_DEPTH && uips[smp.un])
				smp.un++;
		}
		/* the allocator's caller, which the frame-pointer walk from its entry misses (as mem_alloc) */
		if (k->ret_ip > 1 && smp.un >= 1 && (smp.un == 1 || uips[1] != k->ret_ip)) {
			memmove(&uips[2], &uips[1], (smp.un - 1) * sizeof(uips[0]));
			uips[1] = k->ret_ip;
			smp.un++;
		}
		smp.kstack_id = -1;
		smp.ustack_id = smp.un ? k->ustack : -1;
		smp.value = (uint64_t)v.bytes;
		(*ret_drained)++;
		if (!err)
			err = cb(ctx, &smp);
	}
	if (l->nempty) /* empty is NULL until the first one */
		qsort(l->empty, l->nempty, sizeof(*l->empty), key_cmp);
	tmp = l->empty_prev;
	l->empty_prev = l->empty;
	l->empty = tmp;
	l->nempty_prev = l->nempty;
	if (ndead) {
		purge(l->fd.ptrs, sizeof(struct sp_live_ptr_key), dead, ndead, 2u * SP_LIVE_PTRS);
		purge(l->fd.mm_procs, sizeof(uint32_t), dead, ndead, 2u * SP_MM_PROCS);
		purge_pending(l->fd.mm_pend, dead, ndead);
	}
	if (n < SP_LIVE_KEYS) {
		qsort(l->uused, l->nuused, sizeof(*l->uused), u64_cmp);
		purge_u64(l->fd.ustacks, l->uused, l->nuused, 2u * SP_LIVE_STACKS);
	}
	/* stacks of no site left (a site being created now gets its stack again at its next call) */
	if (n < SP_LIVE_KEYS) {
		uint32_t ids[256], id;
		unsigned int nids = 0;
		uint32_t *pid = NULL;

		while (bpf_map_get_next_key(l->fd.stacks, pid, &id) == 0) {
			if (id < SP_LIVE_STACKS && !l->used[id] && nids < 256)
				ids[nids++] = id;
			pid = &id;
			if (nids == 256)
				break;
		}
		for (unsigned int i = 0; i < nids; i++)
			(void)bpf_map_delete_elem(l->fd.stacks, &ids[i]);
	}
	return err;
}
