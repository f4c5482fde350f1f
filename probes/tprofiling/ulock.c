/* ulock.c - the pthread_sync and mem_glibc uprobes: the libc each process in scope maps, its lock and
 * allocator functions resolved to file offsets with libelf, a uprobe and a uretprobe on each attached per process (the
 * name as the BPF cookie), so processes outside the scope are never trapped. With an unfiltered scope they are attached
 * system-wide, once per libc file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "tprof_ulock.h"

#define UL_MAX_LIBS    32u
#define UL_SYSWIDE_PID ((uint32_t)-1)
#define UL_MAPS_MAX    (8u << 20)
#define UL_SCAN_PROCS  65536u
#define UL_NFUNC       (TP_FREE - TP_PTHREAD_MUTEX_LOCK + 1)

/* The set a function belongs to. */
static unsigned int func_set(unsigned int f)
{
	return TP_PTHREAD_MUTEX_LOCK + f >= TP_MALLOC ? TP_ULOCK_MEM : TP_ULOCK_SYNC;
}

/* A libc file: its identity and the file offsets of the lock functions (-1: not defined). */
struct ul_lib {
	uint64_t dev, ino;
	int64_t off[UL_NFUNC];
};

/* One attachment: a process (or UL_SYSWIDE_PID) and the libc file it was attached to. */
struct ul_att {
	uint32_t pid;
	uint64_t start;
	uint64_t dev, ino;
	unsigned int want; /* TP_ULOCK_* attached */
	int seen;
	struct bpf_link *links[2 * UL_NFUNC];
};

struct tp_ulock {
	struct bpf_program *enter, *exit;
	struct ul_att att[TP_ULOCK_MAX_PROCS];
	unsigned int natt;
	unsigned int want;
	struct ul_lib libs[UL_MAX_LIBS];
	unsigned int nlibs;
	uint32_t self;
	struct probe_buf maps;
	struct tp_ulock_stats st;
};

struct tp_ulock *tp_ulock__new(struct bpf_program *enter, struct bpf_program *exit)
{
	struct tp_ulock *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->enter = enter;
	u->exit = exit;
	u->self = (uint32_t)getpid();
	return u;
}

static void att_detach(struct tp_ulock *u, struct ul_att *a)
{
	for (unsigned int i = 0; i < 2 * UL_NFUNC; i++) {
		if (a->links[i]) {
			bpf_link__destroy(a->links[i]);
			a->links[i] = NULL;
			u->st.links--;
		}
	}
}

void tp_ulock__free(struct tp_ulock *u)
{
	if (!u)
		return;
	for (unsigned int i = 0; i < u->natt; i++)
		att_detach(u, &u->att[i]);
	probe_buf__free(&u->maps);
	free(u);
}

static int is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strcmp(base, "libc.so.6") || !strncmp(base, "libc-2.", 7) || !strncmp(base, "libpthread", 10);
}

/* The libc of process pid, as /proc/<pid>/map_files/<range> (any mount namespace), its device and inode. */
static int find_libc(struct tp_ulock *u, uint32_t pid, char *ret_path, size_t len, uint64_t *ret_dev, uint64_t *ret_ino)
{
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	err = probe_read_file(path, &u->maps, UL_MAPS_MAX);
	if (err)
		return err;
	for (char *line = u->maps.data, *nl; line && *line; line = nl) {
		char range[64], perms[8], *file;
		unsigned long long off, ino;
		unsigned int maj, min;
		int n = 0;

		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (sscanf(line, "%63s %7s %llx %x:%x %llu %n", range, perms, &off, &maj, &min, &ino, &n) < 6 || !n)
			continue;
		file = line + n;
		if (file[0] != '/' || perms[2] != 'x' || strstr(file, " (deleted)") || !is_libc(file))
			continue;
		if ((size_t)snprintf(ret_path, len, "/proc/%u/map_files/%s", pid, range) >= len)
			return -ENAMETOOLONG;
		*ret_dev = ((uint64_t)maj << 32) | min;
		*ret_ino = ino;
		return 0;
	}
	return -ENOENT;
}

static uint64_t proc_start(struct tp_ulock *u, uint32_t pid)
{
	char path[64];
	const char *p;
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (probe_read_file(path, &u->maps, 4096))
		return 0;
	p = strrchr(u->maps.data, ')');
	if (!p ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &v) != 1)
		return 0;
	return v;
}

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

/* Offsets of the lock functions defined in path (.dynsym; the default version of a versioned name is
 * the one with the highest address of its duplicates only by chance, so the first definition is kept). */
static int resolve_lib(const char *path, struct ul_lib *lib)
{
	Elf_Scn *scn = NULL;
	int found = 0;
	Elf *e;
	int fd;

	for (unsigned int i = 0; i < UL_NFUNC; i++)
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

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			for (unsigned int f = 0; name && f < UL_NFUNC; f++)
				if (lib->off[f] < 0 && !strcmp(name, tp_names[TP_PTHREAD_MUTEX_LOCK + f])) {
					lib->off[f] = vaddr_to_off(e, sym.st_value);
					found += lib->off[f] >= 0;
				}
		}
	}
	elf_end(e);
	close(fd);
	return found ? 0 : -ENOENT;
}

static struct ul_lib *lib_get(struct tp_ulock *u, const char *path, uint64_t dev, uint64_t ino)
{
	struct ul_lib lib = {.dev = dev, .ino = ino};
	int err;

	for (unsigned int i = 0; i < u->nlibs; i++)
		if (u->libs[i].dev == dev && u->libs[i].ino == ino)
			return u->libs[i].off[0] >= 0 ? &u->libs[i] : NULL;
	err = resolve_lib(path, &lib);
	if (u->nlibs == UL_MAX_LIBS)
		u->nlibs = 0; /* many distinct libc files (containers): start over */
	u->libs[u->nlibs++] = lib;
	return err || lib.off[0] < 0 ? NULL : &u->libs[u->nlibs - 1];
}

/* Every function of lib that can be probed: one that cannot (an instruction uprobes refuse, such as
 * pthread_spin_lock's lock-prefixed first one on x86) is counted once and left out from then on. */
static int att_attach(struct tp_ulock *u, struct ul_att *a, const char *path, struct ul_lib *lib)
{
	int attached = 0;

	for (unsigned int f = 0; f < UL_NFUNC; f++) {
		int err = 0;

		int dup = 0;

		if (lib->off[f] < 0 || !(func_set(f) & a->want))
			continue;
		for (unsigned int g = 0; g < f; g++)
			dup |= lib->off[g] == lib->off[f];
		if (dup)
			continue;
		for (int ret = 0; ret < 2; ret++) {
			struct bpf_uprobe_opts o = {
				.sz = sizeof(o), .retprobe = ret != 0, .bpf_cookie = TP_PTHREAD_MUTEX_LOCK + f};
			struct bpf_link **l = &a->links[2 * f + (unsigned int)ret];

			*l = bpf_program__attach_uprobe_opts(ret ? u->exit : u->enter,
							     a->pid == UL_SYSWIDE_PID ? -1 : (int)a->pid, path,
							     (size_t)lib->off[f], &o);
			if (!*l) {
				err = -errno;
				u->st.attach_errors++;
				break;
			}
			u->st.links++;
		}
		if (err) {
			for (int ret = 0; ret < 2; ret++) {
				struct bpf_link **l = &a->links[2 * f + (unsigned int)ret];

				if (*l) {
					bpf_link__destroy(*l);
					*l = NULL;
					u->st.links--;
				}
			}
			lib->off[f] = -1;
		} else {
			attached++;
		}
	}
	return attached ? 0 : -ENOENT;
}

static struct ul_att *att_find(struct tp_ulock *u, uint32_t pid, uint64_t dev, uint64_t ino, int by_file)
{
	for (unsigned int i = 0; i < u->natt; i++) {
		struct ul_att *a = &u->att[i];

		if (by_file ? (a->pid == UL_SYSWIDE_PID && a->dev == dev && a->ino == ino) : a->pid == pid)
			return a;
	}
	return NULL;
}

static void want_proc(struct tp_ulock *u, uint32_t pid, int syswide)
{
	char path[96];
	uint64_t dev, ino, start = syswide ? 0 : proc_start(u, pid);
	struct ul_lib *lib;
	struct ul_att *a;

	if (pid == u->self || find_libc(u, pid, path, sizeof(path), &dev, &ino))
		return;
	a = att_find(u, syswide ? UL_SYSWIDE_PID : pid, dev, ino, syswide);
	if (a && a->dev == dev && a->ino == ino && a->start == start && a->want == u->want) {
		a->seen = 1;
		return;
	}
	if (a)
		att_detach(u, a); /* exec'ed, the pid was reused, or other functions are wanted */
	lib = lib_get(u, path, dev, ino);
	if (!lib)
		return;
	if (!a) {
		if (u->natt == TP_ULOCK_MAX_PROCS) {
			u->st.skipped++;
			return;
		}
		a = &u->att[u->natt++];
		memset(a, 0, sizeof(*a));
	}
	a->pid = syswide ? UL_SYSWIDE_PID : pid;
	a->start = start;
	a->dev = dev;
	a->ino = ino;
	a->want = u->want;
	a->seen = 1;
	if (att_attach(u, a, path, lib))
		a->dev = a->ino = 0; /* retried at the next sync */
}

int tp_ulock__sync(struct tp_ulock *u, const struct gg_scope *scope, unsigned int want)
{
	unsigned int j = 0;
	int enabled = want != 0;

	u->want = want;
	for (unsigned int i = 0; i < u->natt; i++)
		u->att[i].seen = 0;
	u->st.skipped = 0;
	if (enabled && !scope->all) {
		for (uint32_t i = 0; i < scope->ntgid; i++)
			want_proc(u, scope->tgid[i], 0);
	} else if (enabled) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		unsigned int n = 0;

		while (d && (de = readdir(d)) && n++ < UL_SCAN_PROCS) {
			char *end;
			unsigned long pid = strtoul(de->d_name, &end, 10);

			if (*end || !pid)
				continue;
			want_proc(u, (uint32_t)pid, 1);
		}
		if (d)
			closedir(d);
	}
	for (unsigned int i = 0; i < u->natt; i++) {
		if (!u->att[i].seen)
			att_detach(u, &u->att[i]);
		else
			u->att[j++] = u->att[i];
	}
	u->natt = j;
	u->st.procs = 0;
	for (unsigned int i = 0; i < u->natt; i++)
		for (unsigned int l = 0; l < 2 * UL_NFUNC; l++)
			if (u->att[i].links[l]) {
				u->st.procs++;
				break;
			}
	return 0;
}

void tp_ulock__stats(const struct tp_ulock *u, struct tp_ulock_stats *ret)
{
	*ret = u->st;
}
