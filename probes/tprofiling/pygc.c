/* pygc.c - python_gc: CPython's USDT probes python:gc__start and python:gc__done (Debian's python3 is
 * built with them), attached per Python process in scope through libbpf's USDT support (which sets the
 * probes' semaphores, so an interpreter not traced pays nothing). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "tprof_pygc.h"
#include "uproc.h"

#define PG_MAX_PROCS 64u

struct pg_att {
	uint32_t pid;
	int seen;
	struct bpf_link *start, *done;
};

struct tp_pygc {
	struct bpf_program *start, *done;
	struct pg_att att[PG_MAX_PROCS];
	unsigned int natt;
	uint32_t self;
	uint64_t errors;
};

struct tp_pygc *tp_pygc__new(struct bpf_program *start, struct bpf_program *done)
{
	struct tp_pygc *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->start = start;
	g->done = done;
	g->self = (uint32_t)getpid();
	return g;
}

static void detach(struct pg_att *a)
{
	bpf_link__destroy(a->start);
	bpf_link__destroy(a->done);
	a->start = a->done = NULL;
}

void tp_pygc__free(struct tp_pygc *g)
{
	if (!g)
		return;
	for (unsigned int i = 0; i < g->natt; i++)
		detach(&g->att[i]);
	free(g);
}

/* A Python interpreter: its executable's name starts with "python". */
static int is_python(uint32_t pid, char *exe, size_t len)
{
	char link[64], target[256];
	const char *base;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	snprintf(exe, len, "%s", link); /* the file as the process maps it, whatever its mount namespace */
	return !strncmp(base, "python", 6);
}

static void want(void *ctx, uint32_t pid)
{
	struct tp_pygc *g = ctx;
	char exe[64];
	struct pg_att *a = NULL;

	if (pid == g->self)
		return;
	for (unsigned int i = 0; i < g->natt; i++)
		if (g->att[i].pid == pid)
			a = &g->att[i];
	if (a) {
		a->seen = 1;
		return;
	}
	if (!is_python(pid, exe, sizeof(exe)) || g->natt == PG_MAX_PROCS)
		return;
	a = &g->att[g->natt];
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->start = bpf_program__attach_usdt(g->start, (pid_t)pid, exe, "python", "gc__start", NULL);
	a->done = a->start ? bpf_program__attach_usdt(g->done, (pid_t)pid, exe, "python", "gc__done", NULL) : NULL;
	if (!a->start || !a->done) {
		detach(a);
		g->errors++;
		return; /* an interpreter built without the probes: tried again at the next sync */
	}
	a->seen = 1;
	g->natt++;
}

int tp_pygc__sync(struct tp_pygc *g, const struct gg_scope *scope, int enabled)
{
	unsigned int j = 0;

	for (unsigned int i = 0; i < g->natt; i++)
		g->att[i].seen = 0;
	if (enabled)
		uproc_each_pid(scope->all, scope->tgid, scope->ntgid, want, g);
	for (unsigned int i = 0; i < g->natt; i++) {
		if (!g->att[i].seen)
			detach(&g->att[i]);
		else
			g->att[j++] = g->att[i];
	}
	g->natt = j;
	return 0;
}

unsigned int tp_pygc__procs(const struct tp_pygc *g)
{
	return g->natt;
}
