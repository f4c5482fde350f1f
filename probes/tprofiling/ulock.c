/* ulock.c - the pthread_sync and mem_glibc uprobes: the libc each process in scope maps, its lock and
 * allocator functions resolved to file offsets with libelf, a uprobe and a uretprobe on each attached per process (the
 * name as the BPF cookie), so processes outside the scope are never trapped. With an unfiltered scope they are attached
 * system-wide, once per libc file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "tprof_ulock.h"
#include "uproc.h"

#define UL_MAX_LIBS 32u
#define UL_NFUNC    (TP_FREE - TP_PTHREAD_MUTEX_LOCK + 1)

/* The set a function belongs to. */
static unsigned int func_set(unsigned int f)
{
	return TP_PTHREAD_MUTEX_LOCK + f >= TP_MALLOC ? TP_ULOCK_MEM : TP_ULOCK_SYNC;
}

struct tp_ulock {
	struct bpf_program *enter, *exit;
	struct uproc_set *set;
};

static int is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "libc.so.6") || !strncmp(base, "libc-2.", 7) || !strncmp(base, "libpthread", 10);
}

/* Offsets of the lock functions defined in path (.dynsym; the default version of a versioned name is
 * the one with the highest address of its duplicates only by chance, so the first definition is kept). */
static void resolve_lib(void *ctx, const char *path, struct uproc_lib *lib)
{
	(void)uproc_elf_syms(path, &tp_names[TP_PTHREAD_MUTEX_LOCK], UL_NFUNC, 0, lib->off);
}

/* The functions a is attached for (uproc_lib_funcs' want). */
static uint32_t want_funcs(const struct uproc_att *a)
{
	uint32_t want = 0;

	for (unsigned int f = 0; f < UL_NFUNC; f++)
		if (func_set(f) & a->want)
			want |= 1u << f;
	return want;
}

/* With multi-uprobe links: the entries in one link (slot 0) and the returns in another (slot 1). */
static int att_attach_multi(struct tp_ulock *u, struct uproc_set *s, struct uproc_att *a, const char *path,
			    struct uproc_lib *lib)
{
	uint32_t funcs = uproc_lib_funcs(lib, want_funcs(a));
	uint64_t cookie[UL_NFUNC];
	int err;

	for (unsigned int f = 0; f < UL_NFUNC; f++)
		cookie[f] = TP_PTHREAD_MUTEX_LOCK + f;
	err = uproc_link_multi(s, a, 0, u->enter, false, path, lib, funcs, cookie);
	if (!err)
		err = uproc_link_multi(s, a, 1, u->exit, true, path, lib, funcs, cookie);
	/* a return refused where its entry was taken: no entry without its return */
	if (!err && uproc_lib_funcs(lib, funcs) != funcs)
		err = uproc_link_multi(s, a, 0, u->enter, false, path, lib, funcs, cookie);
	if (err)
		uproc_detach(s, a);
	return err;
}

/* Every function of lib that can be probed: one that cannot (an instruction uprobes refuse, such as
 * pthread_spin_lock's lock-prefixed first one on x86) is counted once and left out from then on. */
static int att_attach(void *ctx, struct uproc_set *s, struct uproc_att *a, const char *path, struct uproc_lib *lib)
{
	struct tp_ulock *u = ctx;
	int attached = 0;

	if (uproc_is_multi(u->enter))
		return att_attach_multi(u, s, a, path, lib);
	for (unsigned int f = 0; f < UL_NFUNC; f++) {
		int err = 0;

		if (!(uproc_lib_funcs(lib, want_funcs(a)) >> f & 1u))
			continue;
		for (int ret = 0; ret < 2 && !err; ret++)
			err = uproc_link(s, a, 2 * f + (unsigned int)ret, ret ? u->exit : u->enter, ret != 0, path,
					 (size_t)lib->off[f], TP_PTHREAD_MUTEX_LOCK + f);
		if (err) {
			uproc_unlink(s, a, 2 * f);
			uproc_unlink(s, a, 2 * f + 1);
			lib->off[f] = -1;
		} else {
			attached++;
		}
	}
	return attached ? 0 : -ENOENT;
}

int tp_ulock__prepare(struct bpf_program *enter, struct bpf_program *exit)
{
	int err = uproc_prefer_multi(enter);

	if (err > 0)
		err = uproc_prefer_multi(exit);
	return err < 0 ? err : 0;
}

struct tp_ulock *tp_ulock__new(struct bpf_program *enter, struct bpf_program *exit)
{
	struct tp_ulock *u = calloc(1, sizeof(*u));
	struct uproc_ops ops = {.rank = is_libc,
				.resolve = resolve_lib,
				.attach = att_attach,
				.ctx = u,
				.max_procs = TP_ULOCK_MAX_PROCS,
				.max_libs = UL_MAX_LIBS};

	if (!u)
		return NULL;
	u->enter = enter;
	u->exit = exit;
	u->set = uproc_set__new(&ops);
	if (!u->set) {
		free(u);
		return NULL;
	}
	return u;
}

void tp_ulock__free(struct tp_ulock *u)
{
	if (!u)
		return;
	uproc_set__free(u->set);
	free(u);
}

int tp_ulock__sync(struct tp_ulock *u, const struct gg_scope *scope, unsigned int want)
{
	return uproc_set__sync(u->set, scope, want);
}

void tp_ulock__stats(const struct tp_ulock *u, struct uproc_stats *ret)
{
	uproc_set__stats(u->set, ret);
}
