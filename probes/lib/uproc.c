/* uproc.c - per-process uprobes on a mapped library (see uproc.h): the bookkeeping of which process has
 * which links, and the /proc and ELF lookups behind it. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uproc.h"

/* The kernel's multi-uprobe link (uapi since 6.6; Debian 12's headers and libbpf 1.1 predate it). */
#define UPROC_TRACE_UPROBE_MULTI 48
#define UPROC_UPROBE_MULTI_RET	 1u

/* union bpf_attr as BPF_LINK_CREATE reads it for BPF_TRACE_UPROBE_MULTI. */
struct uproc_link_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

#define UPROC_MAPS_MAX	 (8u << 20)
#define UPROC_SCAN_PROCS 65536u

struct uproc_set {
	struct uproc_ops ops;
	struct uproc_att *att;
	unsigned int natt;
	unsigned int want;
	int syswide; /* this sync attaches per library file */
	struct uproc_lib *libs;
	unsigned int nlibs;
	uint32_t self;
	struct probe_buf maps;
	struct uproc_stats st;
};

struct uproc_set *uproc_set__new(const struct uproc_ops *ops)
{
	struct uproc_set *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ops = *ops;
	s->att = calloc(ops->max_procs, sizeof(*s->att));
	s->libs = calloc(ops->max_libs, sizeof(*s->libs));
	if (!s->att || !s->libs) {
		uproc_set__free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->self = (uint32_t)getpid();
	return s;
}

void uproc_detach(struct uproc_set *s, struct uproc_att *a)
{
	for (unsigned int i = 0; i < UPROC_MAX_LINKS; i++)
		uproc_unlink(s, a, i);
}

void uproc_unlink(struct uproc_set *s, struct uproc_att *a, unsigned int slot)
{
	if (a->links[slot]) {
		bpf_link__destroy(a->links[slot]);
		a->links[slot] = NULL;
		s->st.links--;
	}
	if (a->mlinks[slot]) {
		close(a->mlinks[slot] - 1);
		a->mlinks[slot] = 0;
		s->st.links--;
	}
}

static int link_create_multi(int prog_fd, uint32_t pid, bool retprobe, const char *path, const uint64_t *off,
			     const uint64_t *cookie, unsigned int n)
{
	struct uproc_link_attr at = {.prog_fd = (uint32_t)prog_fd,
				     .attach_type = UPROC_TRACE_UPROBE_MULTI,
				     .path = (uint64_t)(uintptr_t)path,
				     .offsets = (uint64_t)(uintptr_t)off,
				     .cookies = (uint64_t)(uintptr_t)cookie,
				     .cnt = n,
				     .multi_flags = retprobe ? UPROC_UPROBE_MULTI_RET : 0,
				     .pid = pid == UPROC_SYSWIDE_PID ? 0 : pid};
	int fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &at, sizeof(at));

	return fd < 0 ? -errno : fd;
}

/* Does this kernel take multi-uprobe links? A link on "/" (a directory, not a file with code) is refused
 * with EBADF by a kernel that has them and with EINVAL by one that does not know the attach type. */
static int multi_supported(void)
{
	static int known = -1;
	struct bpf_insn ret0[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o);
	uint64_t off = 0, cookie = 0;
	int pfd, fd;

	if (known >= 0)
		return known;
	o.expected_attach_type = UPROC_TRACE_UPROBE_MULTI;
	pfd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "uproc_probe", "GPL", ret0, 2, &o);
	if (pfd < 0)
		return known = 0;
	fd = link_create_multi(pfd, 0, false, "/", &off, &cookie, 1);
	if (fd >= 0)
		close(fd);
	close(pfd);
	return known = fd == -EBADF;
}

int uproc_prefer_multi(struct bpf_program *prog)
{
	int err;

	if (!multi_supported())
		return 0;
	err = bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)UPROC_TRACE_UPROBE_MULTI);
	return err ? err : 1;
}

bool uproc_is_multi(const struct bpf_program *prog)
{
	return (int)bpf_program__expected_attach_type(prog) == UPROC_TRACE_UPROBE_MULTI;
}

int uproc_link_multi(struct uproc_set *s, struct uproc_att *a, unsigned int slot, struct bpf_program *prog,
		     bool retprobe, const char *path, struct uproc_lib *lib, uint32_t funcs, const uint64_t *cookie)
{
	uint64_t offs[UPROC_MAX_FUNCS], cookies[UPROC_MAX_FUNCS];
	unsigned int m = 0;
	int fd, prog_fd = bpf_program__fd(prog);

	if (!uproc_is_multi(prog) || prog_fd < 0)
		return -EINVAL;
	for (unsigned int f = 0; f < UPROC_MAX_FUNCS; f++)
		if ((funcs >> f & 1u) && lib->off[f] >= 0) {
			offs[m] = (uint64_t)lib->off[f];
			cookies[m++] = cookie ? cookie[f] : 0;
		}
	if (!m)
		return -ENOENT;
	fd = link_create_multi(prog_fd, a->pid, retprobe, path, offs, cookies, m);
	if (fd < 0 && m > 1) {
		/* one of them may be refused: find which, alone (a link that is made is dropped again at once) */
		int refused = 0;

		for (unsigned int f = 0; f < UPROC_MAX_FUNCS; f++) {
			uint64_t c;
			int one;

			if (!(funcs >> f & 1u) || lib->off[f] < 0)
				continue;
			c = cookie ? cookie[f] : 0;
			offs[0] = (uint64_t)lib->off[f];
			one = link_create_multi(prog_fd, a->pid, retprobe, path, offs, &c, 1);
			if (one >= 0) {
				close(one);
			} else {
				lib->off[f] = -1;
				s->st.attach_errors++;
				refused++;
			}
		}
		if (refused)
			return uproc_link_multi(s, a, slot, prog, retprobe, path, lib, funcs, cookie);
	}
	if (fd < 0) {
		s->st.attach_errors++;
		return fd;
	}
	uproc_unlink(s, a, slot);
	a->mlinks[slot] = fd + 1;
	s->st.links++;
	return 0;
}

uint32_t uproc_lib_funcs(const struct uproc_lib *lib, uint32_t want)
{
	uint32_t set = 0;

	for (unsigned int f = 0; f < UPROC_MAX_FUNCS; f++) {
		int dup = 0;

		if (!(want >> f & 1u) || lib->off[f] < 0)
			continue;
		for (unsigned int g = 0; g < f; g++)
			dup |= lib->off[g] == lib->off[f];
		if (!dup)
			set |= 1u << f;
	}
	return set;
}

int uproc_link(struct uproc_set *s, struct uproc_att *a, unsigned int slot, struct bpf_program *prog, bool retprobe,
	       const char *path, size_t off, uint64_t cookie)
{
	struct bpf_uprobe_opts o = {.sz = sizeof(o), .retprobe = retprobe, .bpf_cookie = cookie};

	a->links[slot] =
		bpf_program__attach_uprobe_opts(prog, a->pid == UPROC_SYSWIDE_PID ? -1 : (int)a->pid, path, off, &o);
	if (!a->links[slot]) {
		s->st.attach_errors++;
		return -errno;
	}
	s->st.links++;
	return 0;
}

void uproc_set__clear(struct uproc_set *s)
{
	for (unsigned int i = 0; i < s->natt; i++)
		uproc_detach(s, &s->att[i]);
	s->natt = 0;
}

void uproc_set__free(struct uproc_set *s)
{
	if (!s)
		return;
	if (s->att)
		uproc_set__clear(s);
	free(s->att);
	free(s->libs);
	probe_buf__free(&s->maps);
	free(s);
}

/*
 * The library file of process pid: a path the kernel resolves to the mapped inode whatever the
 * process's mount namespace (/proc/<pid>/map_files/<range>), and its device and inode. -ENOENT when
 * the process is gone or maps no file the rank callback knows.
 */
static int find_lib(struct uproc_set *s, uint32_t pid, char *ret_path, size_t len, uint64_t *ret_dev, uint64_t *ret_ino)
{
	char path[64], best_range[64] = "";
	uint64_t best_dev = 0, best_ino = 0;
	int best = 0, err;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	err = probe_read_file(path, &s->maps, UPROC_MAPS_MAX);
	if (err)
		return err;
	for (char *line = s->maps.data, *nl; line && *line; line = nl) {
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
		rank = s->ops.rank(file);
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

static struct uproc_lib *lib_get(struct uproc_set *s, const char *path, uint64_t dev, uint64_t ino)
{
	struct uproc_lib lib = {.dev = dev, .ino = ino};

	for (unsigned int i = 0; i < s->nlibs; i++)
		if (s->libs[i].dev == dev && s->libs[i].ino == ino)
			return s->libs[i].off[0] >= 0 ? &s->libs[i] : NULL;
	for (unsigned int i = 0; i < UPROC_MAX_FUNCS; i++)
		lib.off[i] = -1;
	s->ops.resolve(s->ops.ctx, path, &lib);
	if (s->nlibs == s->ops.max_libs)
		s->nlibs = 0; /* many distinct library files (containers): start over */
	s->libs[s->nlibs++] = lib;
	s->st.libs_resolved++;
	return lib.off[0] >= 0 ? &s->libs[s->nlibs - 1] : NULL;
}

static struct uproc_att *att_find(struct uproc_set *s, uint32_t pid, uint64_t dev, uint64_t ino, int by_file)
{
	for (unsigned int i = 0; i < s->natt; i++) {
		struct uproc_att *a = &s->att[i];

		if (by_file ? (a->pid == UPROC_SYSWIDE_PID && a->dev == dev && a->ino == ino) : a->pid == pid)
			return a;
	}
	return NULL;
}

/* Make sure pid (or, system-wide, the library file pid maps) has its uprobes. */
static void want_pid(void *ctx, uint32_t pid)
{
	struct uproc_set *s = ctx;
	int syswide = s->syswide;
	char path[96];
	uint64_t dev, ino, start = syswide ? 0 : uproc_start_time(&s->maps, pid);
	struct uproc_lib *lib;
	struct uproc_att *a;

	if (pid == s->self || find_lib(s, pid, path, sizeof(path), &dev, &ino))
		return;
	a = att_find(s, syswide ? UPROC_SYSWIDE_PID : pid, dev, ino, syswide);
	if (a && a->dev == dev && a->ino == ino && a->start == start && a->want == s->want) {
		a->seen = 1;
		return;
	}
	if (a)
		uproc_detach(s, a); /* exec'ed into another file, the pid was reused, or other functions are wanted */
	lib = lib_get(s, path, dev, ino);
	if (!lib)
		return;
	if (!a) {
		if (s->natt == s->ops.max_procs) {
			s->st.skipped++;
			return;
		}
		a = &s->att[s->natt++];
		memset(a, 0, sizeof(*a));
	}
	a->pid = syswide ? UPROC_SYSWIDE_PID : pid;
	a->start = start;
	a->dev = dev;
	a->ino = ino;
	a->want = s->want;
	a->seen = 1;
	if (s->ops.attach(s->ops.ctx, s, a, path, lib))
		a->dev = a->ino = 0; /* retried at the next sync */
}

int uproc_set__sync(struct uproc_set *s, const struct gg_scope *scope, unsigned int want)
{
	unsigned int j = 0;

	s->want = want;
	s->syswide = scope->all;
	for (unsigned int i = 0; i < s->natt; i++)
		s->att[i].seen = 0;
	s->st.skipped = 0;
	if (want)
		uproc_each_pid(scope->all, scope->tgid, scope->ntgid, want_pid, s);
	/* processes that left the scope or exited */
	for (unsigned int i = 0; i < s->natt; i++) {
		if (!s->att[i].seen)
			uproc_detach(s, &s->att[i]);
		else
			s->att[j++] = s->att[i];
	}
	s->natt = j;
	s->st.procs = 0;
	for (unsigned int i = 0; i < s->natt; i++)
		for (unsigned int l = 0; l < UPROC_MAX_LINKS; l++)
			if (s->att[i].links[l] || s->att[i].mlinks[l]) {
				s->st.procs++;
				break;
			}
	return 0;
}

void uproc_set__stats(const struct uproc_set *s, struct uproc_stats *ret)
{
	*ret = s->st;
}

uint64_t uproc_start_time(struct probe_buf *buf, uint32_t pid)
{
	uint64_t start = 0;

	(void)probe_proc_start(buf, NULL, pid, &start);
	return start;
}

void uproc_each_pid(int scan, const uint32_t *tgid, uint32_t ntgid, void (*fn)(void *ctx, uint32_t pid), void *ctx)
{
	DIR *d;
	struct dirent *de;
	unsigned int n = 0;

	if (!scan) {
		for (uint32_t i = 0; i < ntgid; i++)
			fn(ctx, tgid[i]);
		return;
	}
	d = opendir("/proc");
	while (d && (de = readdir(d)) && n++ < UPROC_SCAN_PROCS) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!*end && pid)
			fn(ctx, (uint32_t)pid);
	}
	if (d)
		closedir(d);
}

int64_t uproc_elf_vaddr_off(Elf *e, uint64_t vaddr)
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

static int sym_wanted(const GElf_Sym *sym, unsigned int flags)
{
	unsigned int type = GELF_ST_TYPE(sym->st_info);

	if (sym->st_shndx == SHN_UNDEF || !sym->st_value)
		return 0;
	return (flags & UPROC_ELF_ANY_TYPE) || type == STT_FUNC || ((flags & UPROC_ELF_IFUNC) && type == STT_GNU_IFUNC);
}

int uproc_elf_syms(const char *path, const char *const *names, unsigned int n, unsigned int flags, int64_t *ret_off)
{
	Elf_Scn *scn = NULL;
	int found = 0;
	Elf *e;
	int fd;

	for (unsigned int i = 0; i < n; i++)
		ret_off[i] = -1;
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

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    !(sh.sh_type == SHT_DYNSYM || ((flags & UPROC_ELF_SYMTAB) && sh.sh_type == SHT_SYMTAB)))
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || !sym_wanted(&sym, flags))
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			for (unsigned int f = 0; name && f < n; f++)
				if (ret_off[f] < 0 && !strcmp(name, names[f])) {
					ret_off[f] = uproc_elf_vaddr_off(e, sym.st_value);
					found += ret_off[f] >= 0;
				}
		}
	}
	elf_end(e);
	close(fd);
	return found;
}
