/* ualloc.c - the mem_alloc uprobes: finds the allocator (libc, or an interposer such as jemalloc,
 * tcmalloc, mimalloc or ASan's runtime) each process in scope maps, resolves malloc & co to file
 * offsets with libelf, and attaches uprobes per process, so processes outside the scope are never
 * trapped. For mem_live the allocators' returns (uretprobes) and free are trapped too. With an unfiltered scope the
 * uprobes are attached system-wide, once per allocator file. */
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "stackprobe.h"

#define UA_MAX_LIBS    64u
#define UA_SYSWIDE_PID ((uint32_t)-1)
#define UA_MAPS_MAX    (8u << 20)
#define UA_SCAN_PROCS  65536u

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

/* An allocator file: its identity and the file offsets of the functions (-1: not defined). */
struct ua_lib {
	uint64_t dev, ino;
	int64_t off[UA_NFUNC];
};

/* One attachment: a process (or UA_SYSWIDE_PID) and the allocator file it was attached to. */
struct ua_att {
	uint32_t pid;
	uint64_t start; /* the process's start time: a reused pid is another process */
	uint64_t dev, ino;
	int seen;
	struct bpf_link *links[UA_NFUNC];
	struct bpf_link *ret_links[UA_NFUNC]; /* mem_live: the allocators' returns */
};

struct sp_ualloc {
	struct bpf_program *prog[UA_NFUNC];
	struct bpf_program *ret_prog;
	unsigned int mode; /* SP_UALLOC_* of the attached uprobes */
	struct ua_att att[SP_UALLOC_MAX_PROCS];
	unsigned int natt;
	struct ua_lib libs[UA_MAX_LIBS];
	unsigned int nlibs;
	uint32_t self;
	struct probe_buf maps;
	struct sp_ualloc_stats st;
};

struct sp_ualloc *sp_ualloc__new(struct bpf_program *malloc_prog, struct bpf_program *calloc_prog,
				 struct bpf_program *realloc_prog, struct bpf_program *memalign_prog,
				 struct bpf_program *posix_memalign_prog, struct bpf_program *ret_prog,
				 struct bpf_program *free_prog)
{
	struct sp_ualloc *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->prog[UA_MALLOC] = u->prog[UA_VALLOC] = u->prog[UA_PVALLOC] = malloc_prog;
	u->prog[UA_CALLOC] = calloc_prog;
	u->prog[UA_REALLOC] = realloc_prog;
	u->prog[UA_MEMALIGN] = u->prog[UA_ALIGNED_ALLOC] = memalign_prog;
	u->prog[UA_POSIX_MEMALIGN] = posix_memalign_prog;
	u->prog[UA_FREE] = free_prog;
	u->ret_prog = ret_prog;
	u->self = (uint32_t)getpid();
	return u;
}

static void att_detach(struct sp_ualloc *u, struct ua_att *a)
{
	for (int i = 0; i < UA_NFUNC; i++) {
		if (a->links[i]) {
			bpf_link__destroy(a->links[i]);
			a->links[i] = NULL;
			u->st.links--;
		}
		if (a->ret_links[i]) {
			bpf_link__destroy(a->ret_links[i]);
			a->ret_links[i] = NULL;
			u->st.links--;
		}
	}
}

void sp_ualloc__free(struct sp_ualloc *u)
{
	if (!u)
		return;
	for (unsigned int i = 0; i < u->natt; i++)
		att_detach(u, &u->att[i]);
	probe_buf__free(&u->maps);
	free(u);
}

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
 * The allocator file of process pid: a path the kernel resolves to the mapped inode whatever the
 * process's mount namespace (/proc/<pid>/map_files/<range>), and its device and inode. -ENOENT when
 * the process is gone or maps no allocator we know.
 */
static int find_alloc_file(struct sp_ualloc *u, uint32_t pid, char *ret_path, size_t len, uint64_t *ret_dev,
			   uint64_t *ret_ino)
{
	char path[64], best_range[64] = "";
	uint64_t best_dev = 0, best_ino = 0;
	int best = 0, err;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	err = probe_read_file(path, &u->maps, UA_MAPS_MAX);
	if (err)
		return err;
	for (char *line = u->maps.data, *nl; line && *line; line = nl) {
		char range[64], perms[8], *file;
		unsigned long long off, ino;
		unsigned int maj, min;
		int n = 0, rank;

		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (sscanf(line, "%63s %7s %llx %x:%x %llu %n", range, perms, &off, &maj, &min, &ino, &n) < 6 || !n)
			continue;
		file = line + n;
		if (file[0] != '/' || perms[2] != 'x' || strstr(file, " (deleted)"))
			continue;
		rank = alloc_rank(file);
		if (rank > best) {
			best = rank;
			snprintf(best_range, sizeof(best_range), "%s", range);
			best_dev = ((uint64_t)maj << 32) | min;
			best_ino = ino;
		}
	}
	if (!best)
		return -ENOENT;
	if ((size_t)snprintf(ret_path, len, "/proc/%u/map_files/%s", pid, best_range) >= len)
		return -ENAMETOOLONG;
	*ret_dev = best_dev;
	*ret_ino = best_ino;
	return 0;
}

/* Start time of pid (clock ticks since boot, /proc/<pid>/stat field 22); 0 when unreadable. */
static uint64_t proc_start(struct sp_ualloc *u, uint32_t pid)
{
	char path[64];
	const char *p;
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (probe_read_file(path, &u->maps, 4096))
		return 0;
	p = strrchr(u->maps.data, ')');
	/* after "(comm)": state is field 3, starttime field 22 */
	if (!p ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) != 1)
		return 0;
	return v;
}

/* File offset of a symbol's address: through the PT_LOAD segment that holds it. */
static int64_t vaddr_to_off(Elf *e, uint64_t vaddr)
{
	size_t n = 0;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
			return (int64_t)(vaddr - ph.p_vaddr + ph.p_offset);
	}
	return -1;
}

/*
 * glibc's free starts with `test %rdi,%rdi; je ..` (free(NULL)). x86 uprobes emulate branches but
 * single-step `test` out of line, a second trap (#DB) per call: it doubled what a free cost under
 * mem_live. The uprobe goes on the branch instead, which every call executes with the same registers.
 */
static void skip_test_rdi(int fd, int64_t *off)
{
	unsigned char b[5];

	if (*off < 0 || pread(fd, b, sizeof(b), (off_t)*off) != (ssize_t)sizeof(b))
		return;
	if (b[0] == 0x48 && b[1] == 0x85 && b[2] == 0xff &&
	    ((b[3] >= 0x70 && b[3] <= 0x7f) || (b[3] == 0x0f && b[4] >= 0x80 && b[4] <= 0x8f)))
		*off += 3;
}

/* Offsets of the allocator functions defined in path (.dynsym, then .symtab). */
static int resolve_lib(const char *path, struct ua_lib *lib)
{
	Elf_Scn *scn = NULL;
	Elf *e;
	int fd;

	for (int i = 0; i < UA_NFUNC; i++)
		lib->off[i] = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		close(fd);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			for (int f = 0; f < UA_NFUNC; f++)
				if (lib->off[f] < 0 && !strcmp(name, ua_names[f])) {
					lib->off[f] = vaddr_to_off(e, sym.st_value);
				}
		}
	}
	elf_end(e);
	skip_test_rdi(fd, &lib->off[UA_FREE]);
	close(fd);
	return lib->off[UA_MALLOC] >= 0 ? 0 : -ENOENT;
}

static const struct ua_lib *lib_get(struct sp_ualloc *u, const char *path, uint64_t dev, uint64_t ino)
{
	struct ua_lib lib = {.dev = dev, .ino = ino};

	for (unsigned int i = 0; i < u->nlibs; i++)
		if (u->libs[i].dev == dev && u->libs[i].ino == ino)
			return u->libs[i].off[UA_MALLOC] >= 0 ? &u->libs[i] : NULL;
	(void)resolve_lib(path, &lib);
	if (u->nlibs == UA_MAX_LIBS)
		u->nlibs = 0; /* many distinct allocator files (containers): start over */
	u->libs[u->nlibs++] = lib;
	u->st.libs_resolved++;
	return lib.off[UA_MALLOC] >= 0 ? &u->libs[u->nlibs - 1] : NULL;
}

/* Attach every function of lib to pid (UA_SYSWIDE_PID: every process); aliases (the same offset) once;
 * with mem_live the returns and free too. */
static int att_attach(struct sp_ualloc *u, struct ua_att *a, const char *path, const struct ua_lib *lib)
{
	int err = 0;

	for (int f = 0; f < UA_NFUNC; f++) {
		int dup = 0;

		if (lib->off[f] < 0 || (f == UA_FREE && !(u->mode & SP_UALLOC_LIVE)))
			continue;
		for (int g = 0; g < f; g++)
			dup |= lib->off[g] == lib->off[f];
		if (dup)
			continue;
		a->links[f] = bpf_program__attach_uprobe(u->prog[f], false, a->pid == UA_SYSWIDE_PID ? -1 : (int)a->pid,
							 path, (size_t)lib->off[f]);
		if (!a->links[f]) {
			err = -errno;
			u->st.attach_errors++;
			break;
		}
		u->st.links++;
		if (f == UA_FREE || !(u->mode & SP_UALLOC_LIVE))
			continue;
		a->ret_links[f] = bpf_program__attach_uprobe(
			u->ret_prog, true, a->pid == UA_SYSWIDE_PID ? -1 : (int)a->pid, path, (size_t)lib->off[f]);
		if (!a->ret_links[f]) {
			err = -errno;
			u->st.attach_errors++;
			break;
		}
		u->st.links++;
	}
	if (err)
		att_detach(u, a);
	return err;
}

static struct ua_att *att_find(struct sp_ualloc *u, uint32_t pid, uint64_t dev, uint64_t ino, int by_file)
{
	for (unsigned int i = 0; i < u->natt; i++) {
		struct ua_att *a = &u->att[i];

		if (by_file ? (a->pid == UA_SYSWIDE_PID && a->dev == dev && a->ino == ino) : a->pid == pid)
			return a;
	}
	return NULL;
}

/* Make sure pid (or, system-wide, the allocator file pid maps) has its uprobes. */
static void want(struct sp_ualloc *u, uint32_t pid, int syswide)
{
	char path[96];
	uint64_t dev, ino, start = syswide ? 0 : proc_start(u, pid);
	const struct ua_lib *lib;
	struct ua_att *a;

	if (pid == u->self || find_alloc_file(u, pid, path, sizeof(path), &dev, &ino))
		return;
	a = att_find(u, syswide ? UA_SYSWIDE_PID : pid, dev, ino, syswide);
	if (a && a->dev == dev && a->ino == ino && a->start == start) {
		a->seen = 1;
		return;
	}
	if (a)
		att_detach(u, a); /* exec'ed into another allocator file, or the pid was reused */
	lib = lib_get(u, path, dev, ino);
	if (!lib)
		return;
	if (!a) {
		if (u->natt == SP_UALLOC_MAX_PROCS) {
			u->st.skipped++;
			return;
		}
		a = &u->att[u->natt++];
		memset(a, 0, sizeof(*a));
	}
	a->pid = syswide ? UA_SYSWIDE_PID : pid;
	a->start = start;
	a->dev = dev;
	a->ino = ino;
	a->seen = 1;
	if (att_attach(u, a, path, lib))
		a->dev = a->ino = 0; /* retried at the next sync */
}

int sp_ualloc__sync(struct sp_ualloc *u, const struct gg_scope *scope, unsigned int mode)
{
	unsigned int j = 0;
	int enabled = mode != 0;

	if (mode != u->mode) { /* other uprobes per process: attach again */
		for (unsigned int i = 0; i < u->natt; i++)
			att_detach(u, &u->att[i]);
		u->natt = 0;
		u->mode = mode;
	}
	for (unsigned int i = 0; i < u->natt; i++)
		u->att[i].seen = 0;
	u->st.skipped = 0;
	if (enabled && !scope->all) {
		for (uint32_t i = 0; i < scope->ntgid; i++)
			want(u, scope->tgid[i], 0);
	} else if (enabled) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		unsigned int n = 0;

		while (d && (de = readdir(d)) && n++ < UA_SCAN_PROCS) {
			char *end;
			unsigned long pid = strtoul(de->d_name, &end, 10);

			if (*end || !pid)
				continue;
			want(u, (uint32_t)pid, 1);
		}
		if (d)
			closedir(d);
	}
	/* processes that left the scope or exited */
	for (unsigned int i = 0; i < u->natt; i++) {
		if (!u->att[i].seen)
			att_detach(u, &u->att[i]);
		else
			u->att[j++] = u->att[i];
	}
	u->natt = j;
	u->st.procs = 0;
	for (unsigned int i = 0; i < u->natt; i++)
		u->st.procs += u->att[i].links[UA_MALLOC] != NULL;
	return 0;
}

void sp_ualloc__stats(const struct sp_ualloc *u, struct sp_ualloc_stats *ret)
{
	*ret = u->st;
}
