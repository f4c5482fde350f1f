/* ualloc.c - the mem_alloc uprobes: finds the allocator (libc, or an interposer such as jemalloc,
 * tcmalloc, mimalloc or ASan's runtime) each process in scope maps, resolves malloc & co to file
 * offsets with libelf, and attaches uprobes per process, so processes outside the scope are never
 * trapped. For mem_live the allocators' returns (uretprobes) and free are trapped too. With an unfiltered scope the
 * uprobes are attached system-wide, once per allocator file. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "stackprobe.h"
#include "uproc.h"

#define UA_MAX_LIBS 64u

/* The functions, the program each one runs, and which argument is the size. */
enum ua_func {
	UA_MALLOC,
	UA_CALLOC,
	UA_REALLOC,
	UA_MEMALIGN,
	UA_ALIGNED_ALLOC,
	UA_POSIX_MEMALIGN,
	UA_VALLOC,
	UA_PVALLOC,
	UA_FREE, /* mem_live only */
	UA_NFUNC,
};

static const char *const ua_names[UA_NFUNC] = {"malloc",	 "calloc", "realloc", "memalign", "aligned_alloc",
					       "posix_memalign", "valloc", "pvalloc", "free"};

struct sp_ualloc {
	struct bpf_program *prog[UA_NFUNC];
	struct bpf_program *ret_prog;
	unsigned int mode; /* SP_UALLOC_* of the attached uprobes */
	struct uproc_set *set;
};

/* How much a mapped file's name says it is the process's malloc: interposers win over libc. */
static int alloc_rank(const char *path)
{
	static const char *const interposers[] = {"libjemalloc.so", "libtcmalloc", "libmimalloc.so", "libasan.so"};
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (unsigned int i = 0; i < sizeof(interposers) / sizeof(interposers[0]); i++)
		if (!strncmp(base, interposers[i], strlen(interposers[i])))
			return 2;
	if (!strcmp(base, "libc.so.6") || !strncmp(base, "libc-2.", 7) || !strncmp(base, "ld-musl-", 8) ||
	    !strncmp(base, "libc.musl-", 10))
		return 1;
	return 0;
}

/*
 * glibc's free starts with `test %rdi,%rdi; je ..` (free(NULL)). x86 uprobes emulate branches but
 * single-step `test` out of line, a second trap (#DB) per call: it doubled what a free cost under
 * mem_live. The uprobe goes on the branch instead, which every call executes with the same registers.
 */
static void skip_test_rdi(const char *path, int64_t *off)
{
	unsigned char b[5];
	int fd;

	if (*off < 0)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pread(fd, b, sizeof(b), (off_t)*off) == (ssize_t)sizeof(b) && b[0] == 0x48 && b[1] == 0x85 &&
	    b[2] == 0xff && ((b[3] >= 0x70 && b[3] <= 0x7f) || (b[3] == 0x0f && b[4] >= 0x80 && b[4] <= 0x8f)))
		*off += 3;
	close(fd);
}

/* Offsets of the allocator functions defined in path (.dynsym, then .symtab). */
static void resolve_lib(void *ctx, const char *path, struct uproc_lib *lib)
{
	if (uproc_elf_syms(path, ua_names, UA_NFUNC, UPROC_ELF_SYMTAB | UPROC_ELF_IFUNC, lib->off) > 0)
		skip_test_rdi(path, &lib->off[UA_FREE]);
}

/* With multi-uprobe links: one link per program (slot: the first function that runs it), with every
 * function that runs it; the returns in one more (slot UA_NFUNC). */
static int att_attach_multi(struct sp_ualloc *u, struct uproc_set *s, struct uproc_att *a, const char *path,
			    struct uproc_lib *lib)
{
	uint32_t want = (1u << UA_NFUNC) - 1, funcs, done = 0;
	int err = 0;

	if (!(u->mode & SP_UALLOC_LIVE))
		want &= ~(1u << UA_FREE);
	funcs = uproc_lib_funcs(lib, want);
	for (unsigned int f = 0; f < UA_NFUNC && !err; f++) {
		uint32_t same = 0;

		if (!(funcs >> f & 1u) || (done >> f & 1u))
			continue;
		for (unsigned int g = f; g < UA_NFUNC; g++)
			if (u->prog[g] == u->prog[f])
				same |= 1u << g;
		done |= same;
		err = uproc_link_multi(s, a, f, u->prog[f], false, path, lib, funcs & same, NULL);
	}
	if (!err && (u->mode & SP_UALLOC_LIVE))
		err = uproc_link_multi(s, a, UA_NFUNC, u->ret_prog, true, path, lib, funcs & ~(1u << UA_FREE), NULL);
	if (err)
		uproc_detach(s, a);
	return err;
}

/* Attach every function of lib to a's process (every process, system-wide); aliases (the same offset)
 * once; with mem_live the returns (slots UA_NFUNC + f) and free too. */
static int att_attach(void *ctx, struct uproc_set *s, struct uproc_att *a, const char *path, struct uproc_lib *lib)
{
	struct sp_ualloc *u = ctx;
	int err = 0;

	if (uproc_is_multi(u->prog[UA_MALLOC]))
		return att_attach_multi(u, s, a, path, lib);
	for (unsigned int f = 0; f < UA_NFUNC && !err; f++) {
		int dup = 0;

		if (lib->off[f] < 0 || (f == UA_FREE && !(u->mode & SP_UALLOC_LIVE)))
			continue;
		for (unsigned int g = 0; g < f; g++)
			dup |= lib->off[g] == lib->off[f];
		if (dup)
			continue;
		err = uproc_link(s, a, f, u->prog[f], false, path, (size_t)lib->off[f], 0);
		if (!err && f != UA_FREE && (u->mode & SP_UALLOC_LIVE))
			err = uproc_link(s, a, UA_NFUNC + f, u->ret_prog, true, path, (size_t)lib->off[f], 0);
	}
	if (err)
		uproc_detach(s, a);
	return err;
}

int sp_ualloc__prepare(struct bpf_program *const *progs, unsigned int n)
{
	int multi = uproc_prefer_multi(progs[0]);

	for (unsigned int i = 1; i < n && multi > 0; i++)
		multi = uproc_prefer_multi(progs[i]);
	return multi < 0 ? multi : 0;
}

struct sp_ualloc *sp_ualloc__new(struct bpf_program *malloc_prog, struct bpf_program *calloc_prog,
				 struct bpf_program *realloc_prog, struct bpf_program *memalign_prog,
				 struct bpf_program *posix_memalign_prog, struct bpf_program *ret_prog,
				 struct bpf_program *free_prog)
{
	struct sp_ualloc *u = calloc(1, sizeof(*u));
	struct uproc_ops ops = {.rank = alloc_rank,
				.resolve = resolve_lib,
				.attach = att_attach,
				.ctx = u,
				.max_procs = SP_UALLOC_MAX_PROCS,
				.max_libs = UA_MAX_LIBS};

	if (!u)
		return NULL;
	u->prog[UA_MALLOC] = u->prog[UA_VALLOC] = u->prog[UA_PVALLOC] = malloc_prog;
	u->prog[UA_CALLOC] = calloc_prog;
	u->prog[UA_REALLOC] = realloc_prog;
	u->prog[UA_MEMALIGN] = u->prog[UA_ALIGNED_ALLOC] = memalign_prog;
	u->prog[UA_POSIX_MEMALIGN] = posix_memalign_prog;
	u->prog[UA_FREE] = free_prog;
	u->ret_prog = ret_prog;
	u->set = uproc_set__new(&ops);
	if (!u->set) {
		free(u);
		return NULL;
	}
	return u;
}

void sp_ualloc__free(struct sp_ualloc *u)
{
	if (!u)
		return;
	uproc_set__free(u->set);
	free(u);
}

int sp_ualloc__sync(struct sp_ualloc *u, const struct gg_scope *scope, unsigned int mode)
{
	if (mode != u->mode) { /* other uprobes per process: attach again */
		uproc_set__clear(u->set);
		u->mode = mode;
	}
	return uproc_set__sync(u->set, scope, mode);
}

void sp_ualloc__stats(const struct sp_ualloc *u, struct uproc_stats *ret)
{
	uproc_set__stats(u->set, ret);
}
