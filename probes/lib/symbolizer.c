/* symbolizer.c - address to symbol resolution for kernel and user stacks, with per-process and per-ELF
 * caches (see symbolizer.h). */
#include "symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include "hash.h"
#include "probe.h"
#include "probe_array.h"
#include "procfs.h"

#define NAME_MAX_LEN	       512u /* longer symbol names are cut */
#define MAPS_FILE_MAX	       (32u << 20)
#define KALLSYMS_MAX	       (64u << 20)
#define PERFMAP_MAX	       (64u << 20)
#define BUILD_ID_MAX	       64u
#define SEGS_MAX	       32u
#define KALLSYMS_RELOAD_ROUNDS 60u

/* One function: [addr, addr + size) in the ELF's virtual address space (size 0: up to the next). 16
 * bytes: kallsyms alone has 120,000 of them. */
#define SYM_SIZE_MAX ((1u << 28) - 1) /* larger sizes are cut: no function is 256 MiB */
struct sym {
	uint64_t addr;
	uint32_t size : 28;
	uint32_t rank : 4; /* among aliases at one address the lowest is shown (public names first) */
	uint32_t name;	   /* offset in the table's string pool */
};

/* A sorted symbol table and the string pool its names live in. */
struct symtab {
	struct sym *syms;
	size_t n, cap;
	char *strs;
	size_t strs_len, strs_cap;
};

/* A loadable segment: file offsets [off, off + filesz) are mapped at vaddr. */
struct seg {
	uint64_t off, vaddr, filesz;
};

/* Symbols of one ELF file, shared by every module (inode) with the same build-id. */
struct elfsyms {
	unsigned int refs;
	unsigned char build_id[BUILD_ID_MAX];
	unsigned int build_id_len;
	struct symtab tab;
	struct seg segs[SEGS_MAX];
	unsigned int nsegs;
	int et_dyn;
	int full; /* has a .symtab (its own or a debug file's), not only .dynsym */
};

/* A mapped file as the host sees it (device + inode), with its symbols once loaded. */
struct module {
	uint64_t dev, ino;
	char *path;
	struct elfsyms *es; /* NULL until loaded; loaded once even when it failed */
	int loaded;
	unsigned int refs; /* process mappings pointing here */
	unsigned int last_round;
};

/* An executable mapping of a process. */
struct pmap {
	uint64_t start, end, pgoff;
	struct module *mod;  /* NULL: anonymous or special */
	const char *special; /* "[vdso]", "[anon]", ... when mod is NULL */
	int is_exe;
};

/* /tmp/perf-<pid>.map of a process (JIT code). */
struct perfmap {
	struct symtab tab;
	int64_t mtime_ns;
	off_t size;
	int present;
	unsigned int checked_round;
};

/* A process: its executable mappings, identity (to detect exec and pid reuse) and JIT map. */
struct proc {
	uint32_t tgid;
	uint32_t nspid; /* pid inside its own pid namespace (perf map file name) */
	uint64_t exe_dev, exe_ino;
	uint64_t start_time; /* /proc/<pid>/stat field 22: a reused pid has another */
	char exe_path[PATH_MAX];
	struct pmap *maps;
	unsigned int nmaps;
	unsigned int validated_round;
	unsigned int maps_round;
	unsigned int last_round;
	int gone;
	struct perfmap jit;
};

struct symbolizer {
	struct symbolizer_opts opts;
	char proc_root[128];
	unsigned int round;
	/* processes: open addressing on tgid */
	struct proc **procs;
	unsigned int procs_cap, nprocs;
	/* modules: plain array (hundreds at most), searched by dev/ino */
	struct module **mods;
	unsigned int nmods, mods_cap;
	struct elfsyms **ess;
	unsigned int ness, ess_cap;
	struct symtab kallsyms;
	int kallsyms_state; /* 0 not loaded, 1 loaded, -1 unavailable */
	unsigned int kallsyms_round;
	struct probe_buf buf;
	struct symbolizer_stats st;
};

static const char SPECIAL_ANON[] = "[anon]";

/* ---- symbol tables -------------------------------------------------------------------------------- */

static size_t symtab__mem(const struct symtab *t)
{
	return t->cap * sizeof(struct sym) + t->strs_cap;
}

static void symtab__free(struct symtab *t)
{
	free(t->syms);
	free(t->strs);
	memset(t, 0, sizeof(*t));
}

static int symtab__add(struct symtab *t, uint64_t addr, uint64_t size, const char *name, size_t len)
{
	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	if (t->n == t->cap) {
		struct sym *p = probe_array_grow(t->syms, &t->cap, sizeof(*p), 256);

		if (!p)
			return -ENOMEM;
		t->syms = p;
	}
	if (t->strs_len + len + 1 > t->strs_cap) {
		size_t cap = t->strs_cap ? t->strs_cap * 2 : 4096;
		char *p;

		while (cap < t->strs_len + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return -E2BIG;
		p = realloc(t->strs, cap);
		if (!p)
			return -ENOMEM;
		t->strs = p;
		t->strs_cap = cap;
	}
	t->syms[t->n++] = (struct sym){
		.addr = addr, .size = size > SYM_SIZE_MAX ? SYM_SIZE_MAX : size, .name = (uint32_t)t->strs_len};
	memcpy(t->strs + t->strs_len, name, len);
	t->strs[t->strs_len + len] = '\0';
	t->strs_len += len + 1;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* same address: the one with a size first (it is kept), then the most public name */
	if ((x->size > 0) != (y->size > 0))
		return (y->size > 0) - (x->size > 0);
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Sort and drop duplicate addresses; shrink to fit. */
static void symtab__finish(struct symtab *t)
{
	size_t out = 0;

	if (!t->n)
		return;
	qsort(t->syms, t->n, sizeof(*t->syms), sym_cmp);
	for (size_t i = 0; i < t->n; i++) {
		if (out && t->syms[out - 1].addr == t->syms[i].addr)
			continue;
		t->syms[out++] = t->syms[i];
	}
	t->n = out;
	if (out < t->cap) {
		struct sym *p = realloc(t->syms, out * sizeof(*p));

		if (p) {
			t->syms = p;
			t->cap = out;
		}
	}
	if (t->strs_len < t->strs_cap) {
		char *p = realloc(t->strs, t->strs_len);

		if (p) {
			t->strs = p;
			t->strs_cap = t->strs_len;
		}
	}
}

/* How many of the n entries at base (stride bytes each, sorted by the uint64_t at key_off in each) have a
 * key <= v: the last of them is the only one that can cover v (a symbol by its address, a mapping by
 * its start). */
static size_t sorted_count_le(const void *base, size_t n, size_t stride, size_t key_off, uint64_t v)
{
	const char *p = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;

		memcpy(&key, p + mid * stride + key_off, sizeof(key));
		if (key <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The symbol covering addr: a sized symbol covers [addr, addr + size), an unsized one up to the next
 * symbol (limit_unsized: only when nothing sized follows closer than that). */
static const struct sym *symtab__find(const struct symtab *t, uint64_t addr)
{
	size_t lo = sorted_count_le(t->syms, t->n, sizeof(*t->syms), offsetof(struct sym, addr), addr);
	const struct sym *s;

	if (!lo)
		return NULL;
	s = &t->syms[lo - 1];
	if (s->size && addr >= s->addr + s->size)
		return NULL;
	return s;
}

/* ---- ELF files ---------------------------------------------------------------------------------- */

static int elf_read_build_id(Elf *elf, unsigned char *id, unsigned int *len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0 &&
			    nh.n_descsz <= BUILD_ID_MAX) {
				memcpy(id, (char *)data->d_buf + desc_off, nh.n_descsz);
				*len = nh.n_descsz;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* .gnu_debuglink: file name and CRC32 of the separate debug file. */
static int elf_read_debuglink(Elf *elf, char *name, size_t len, uint32_t *crc)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || data->d_size < 8)
			return -EINVAL;
		n = strnlen(data->d_buf, data->d_size);
		if (n == 0 || n >= len || n >= data->d_size)
			return -EINVAL;
		memcpy(name, data->d_buf, n);
		name[n] = '\0';
		/* the CRC follows the name, NUL padding and 4-byte alignment */
		n = (n + 4) & ~(size_t)3;
		if (n + 4 > data->d_size)
			return -EINVAL;
		memcpy(crc, (char *)data->d_buf + n, 4);
		return 0;
	}
	return -ENOENT;
}

/* Aliases (glibc: malloc, __libc_malloc, __GI___libc_malloc): fewer leading underscores first, then
 * global before weak before local binding. */
static uint32_t alias_rank(const char *name, int bind)
{
	uint32_t u = 0;

	while (u < 3 && name[u] == '_')
		u++;
	return u * 4 + (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
}

/* Add the function symbols of every SHT_SYMTAB (or SHT_DYNSYM) section. Returns how many. */
static long elf_add_symbols(Elf *elf, Elf64_Word type, struct symtab *t)
{
	Elf_Scn *scn = NULL;
	long added = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym sym;
			const char *name;
			int st;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			st = GELF_ST_TYPE(sym.st_info);
			if ((st != STT_FUNC && st != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !name[0])
				continue;
			if (symtab__add(t, sym.st_value, sym.st_size, name, strlen(name)))
				return -ENOMEM;
			t->syms[t->n - 1].rank = alias_rank(name, GELF_ST_BIND(sym.st_info));
			added++;
		}
	}
	return added;
}

static int elf_has_section(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return 1;
	}
	return 0;
}

static uint32_t file_crc32(int fd)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)n);
	return (uint32_t)crc;
}

/* Open a separate debug file for an ELF without .symtab: build-id first, then .gnu_debuglink (CRC
 * checked), under the process's root and then the host's. An fd, or -ENOENT when none. */
static int open_debug_file(const char *root, const char *path, const struct elfsyms *es, Elf *elf)
{
	char name[256], dir[PATH_MAX], cand[PATH_MAX + 512];
	const char *roots[2] = {root, ""};
	uint32_t crc;
	const char *slash;

	for (unsigned int r = 0; r < 2 && es->build_id_len >= 2; r++) {
		int n = snprintf(cand, sizeof(cand), "%s/usr/lib/debug/.build-id/%02x/", roots[r], es->build_id[0]);

		for (unsigned int i = 1; i < es->build_id_len && n > 0 && (size_t)n + 3 < sizeof(cand); i++)
			n += snprintf(cand + n, sizeof(cand) - (size_t)n, "%02x", es->build_id[i]);
		if (n > 0 && (size_t)n + 7 < sizeof(cand)) {
			int fd;

			memcpy(cand + n, ".debug", 7);
			fd = open(cand, O_RDONLY | O_CLOEXEC);
			if (fd >= 0)
				return fd;
		}
	}
	if (elf_read_debuglink(elf, name, sizeof(name), &crc) || strchr(name, '/'))
		return -ENOENT;
	slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -ENOENT;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	for (unsigned int r = 0; r < 2; r++) {
		for (unsigned int f = 0; f < 3; f++) {
			int fd, n;

			if (f == 0)
				n = snprintf(cand, sizeof(cand), "%s%s/%s", roots[r], dir, name);
			else if (f == 1)
				n = snprintf(cand, sizeof(cand), "%s%s/.debug/%s", roots[r], dir, name);
			else
				n = snprintf(cand, sizeof(cand), "%s/usr/lib/debug%s/%s", roots[r], dir, name);
			if (n < 0 || n >= (int)sizeof(cand))
				continue;
			if (f == 0 && !strcmp(name, slash + 1))
				continue; /* the file itself */
			fd = open(cand, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (file_crc32(fd) == crc && lseek(fd, 0, SEEK_SET) == 0)
				return fd;
			close(fd);
		}
	}
	return -ENOENT;
}

static void elfsyms__free(struct elfsyms *es)
{
	if (!es)
		return;
	symtab__free(&es->tab);
	free(es);
}

/* Read one ELF (fd): build-id, loadable segments, symtab + dynsym, or a debug file's symtab. */
static struct elfsyms *elfsyms__load(struct symbolizer *s, int fd, const char *root, const char *path)
{
	struct elfsyms *es = calloc(1, sizeof(*es));
	Elf *elf = NULL;
	GElf_Ehdr eh;
	size_t phnum;

	if (!es)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum))
		goto out; /* not an ELF file: no symbols, the module name is all we have */
	es->et_dyn = eh.e_type == ET_DYN;
	for (size_t i = 0; i < phnum && es->nsegs < SEGS_MAX; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			es->segs[es->nsegs++] =
				(struct seg){.off = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz};
	}
	(void)elf_read_build_id(elf, es->build_id, &es->build_id_len);
	es->full = elf_has_section(elf, SHT_SYMTAB);
	/* share with an ELF already loaded under another inode (same build-id, same code), unless this
	 * one has the full symbol table and that one has not (a stripped copy was seen first) */
	for (unsigned int i = 0; i < s->ness && es->build_id_len; i++) {
		struct elfsyms *o = s->ess[i];

		if (o->build_id_len == es->build_id_len && !memcmp(o->build_id, es->build_id, es->build_id_len) &&
		    (o->full || !es->full)) {
			elf_end(elf);
			free(es);
			o->refs++;
			return o;
		}
	}
	s->st.elf_loads++;
	if (elf_has_section(elf, SHT_SYMTAB)) {
		(void)elf_add_symbols(elf, SHT_SYMTAB, &es->tab);
	} else {
		int dfd = open_debug_file(root, path, es, elf);

		if (dfd >= 0) {
			Elf *delf = elf_begin(dfd, ELF_C_READ_MMAP, NULL);

			if (delf && elf_kind(delf) == ELF_K_ELF && elf_add_symbols(delf, SHT_SYMTAB, &es->tab) > 0)
				es->full = 1;
			if (delf)
				elf_end(delf);
			close(dfd);
		}
	}
	(void)elf_add_symbols(elf, SHT_DYNSYM, &es->tab);
	symtab__finish(&es->tab);
out:
	if (elf)
		elf_end(elf);
	if (s->ness == s->ess_cap) {
		unsigned int cap = s->ess_cap ? s->ess_cap * 2 : 64;
		struct elfsyms **p = realloc(s->ess, cap * sizeof(*p));

		if (!p) {
			elfsyms__free(es);
			return NULL;
		}
		s->ess = p;
		s->ess_cap = cap;
	}
	s->ess[s->ness++] = es;
	es->refs = 1;
	return es;
}

static void elfsyms__put(struct symbolizer *s, struct elfsyms *es)
{
	if (!es || --es->refs)
		return;
	for (unsigned int i = 0; i < s->ness; i++) {
		if (s->ess[i] == es) {
			s->ess[i] = s->ess[--s->ness];
			break;
		}
	}
	elfsyms__free(es);
}

/* ---- modules -------------------------------------------------------------------------------------- */

static struct module *module_get(struct symbolizer *s, uint64_t dev, uint64_t ino, const char *path)
{
	struct module *m;

	for (unsigned int i = 0; i < s->nmods; i++)
		if (s->mods[i]->dev == dev && s->mods[i]->ino == ino)
			return s->mods[i];
	if (s->nmods >= s->opts.max_modules)
		return NULL; /* counted as module-less frames; the cache ages out */
	if (s->nmods == s->mods_cap) {
		unsigned int cap = s->mods_cap ? s->mods_cap * 2 : 64;
		struct module **p = realloc(s->mods, cap * sizeof(*p));

		if (!p)
			return NULL;
		s->mods = p;
		s->mods_cap = cap;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	if (!m->path) {
		free(m);
		return NULL;
	}
	m->dev = dev;
	m->ino = ino;
	m->last_round = s->round;
	s->mods[s->nmods++] = m;
	return m;
}

static void module__free(struct symbolizer *s, struct module *m)
{
	elfsyms__put(s, m->es);
	free(m->path);
	free(m);
}

/* Load a module's symbols through the process that maps it: <proc>/<tgid>/root<path> when it is the
 * same file (device + inode), else the mapping itself (<proc>/<tgid>/map_files/<start>-<end>). */
static void module_load(struct symbolizer *s, struct module *m, uint32_t tgid, const struct pmap *pm)
{
	char path[PATH_MAX + 256], root[192];
	struct stat sb;
	int fd;

	m->loaded = 1;
	snprintf(root, sizeof(root), "%s/%u/root", s->proc_root, tgid);
	fd = snprintf(path, sizeof(path), "%s%s", root, m->path) < (int)sizeof(path) ? open(path, O_RDONLY | O_CLOEXEC)
										     : -1;
	if (fd >= 0 && (fstat(fd, &sb) || sb.st_ino != m->ino || (uint64_t)sb.st_dev != m->dev)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/%u/map_files/%llx-%llx", s->proc_root, tgid,
			 (unsigned long long)pm->start, (unsigned long long)pm->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return;
	m->es = elfsyms__load(s, fd, root, m->path);
	close(fd);
}

/* ---- processes ------------------------------------------------------------------------------------ */

static void perfmap__free(struct perfmap *pm)
{
	symtab__free(&pm->tab);
	memset(pm, 0, sizeof(*pm));
}

static void proc_maps_free(struct symbolizer *s, struct proc *p)
{
	for (unsigned int i = 0; i < p->nmaps; i++)
		if (p->maps[i].mod)
			p->maps[i].mod->refs--;
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

static void proc__free(struct symbolizer *s, struct proc *p)
{
	if (!p)
		return;
	proc_maps_free(s, p);
	perfmap__free(&p->jit);
	free(p);
}

static int hex_u64(const char **pp, uint64_t *ret)
{
	const char *p = *pp;
	uint64_t v = 0;
	int n = 0;

	for (;; p++, n++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (n >= 16)
			return -ERANGE;
		v = v << 4 | (uint64_t)d;
	}
	if (!n)
		return -EINVAL;
	*pp = p;
	*ret = v;
	return 0;
}

/* A number of a perf map: bare hex (perf, V8) or 0x-prefixed (HotSpot's jcmd Compiler.perfmap). */
static int perfmap_hex(const char **pp, uint64_t *ret)
{
	if ((*pp)[0] == '0' && ((*pp)[1] == 'x' || (*pp)[1] == 'X'))
		*pp += 2;
	return hex_u64(pp, ret);
}

static int pmap_cmp(const void *a, const void *b)
{
	const struct pmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* (Re)read the executable mappings of p from /proc/<tgid>/maps. */
static int proc_load_maps(struct symbolizer *s, struct proc *p)
{
	char path[192];
	struct pmap *maps = NULL;
	unsigned int n = 0, cap = 0;
	const char *line;
	int err;

	snprintf(path, sizeof(path), "%s/%u/maps", s->proc_root, p->tgid);
	err = probe_read_file(path, &s->buf, MAPS_FILE_MAX);
	if (err)
		return err;
	s->st.maps_loads++;
	for (line = s->buf.data; line && *line;) {
		const char *eol = strchr(line, '\n');
		const char *q = line, *name;
		uint64_t start, end, off, maj, min, ino = 0;
		char perms[5];
		struct pmap pm = {0};
		size_t nlen;

		if (!eol)
			eol = line + strlen(line);
		if (hex_u64(&q, &start) || *q++ != '-' || hex_u64(&q, &end) || *q++ != ' ')
			goto next;
		if (eol - q < 5)
			goto next;
		memcpy(perms, q, 4);
		perms[4] = '\0';
		q += 4;
		if (*q++ != ' ' || hex_u64(&q, &off) || *q++ != ' ' || hex_u64(&q, &maj) || *q++ != ':' ||
		    hex_u64(&q, &min) || *q++ != ' ')
			goto next;
		while (*q >= '0' && *q <= '9')
			ino = ino * 10 + (uint64_t)(*q++ - '0');
		while (*q == ' ')
			q++;
		name = q;
		nlen = (size_t)(eol - q);
		if (perms[2] != 'x')
			goto next;
		pm.start = start;
		pm.end = end;
		pm.pgoff = off;
		if (ino && nlen && name[0] == '/') {
			char fpath[PATH_MAX];

			if (nlen >= sizeof(fpath))
				goto next;
			memcpy(fpath, name, nlen);
			fpath[nlen] = '\0';
			/* " (deleted)": the mapping still works through map_files */
			if (nlen > 10 && !strcmp(fpath + nlen - 10, " (deleted)"))
				fpath[nlen - 10] = '\0';
			pm.mod = module_get(s, makedev(maj, min), ino, fpath);
			if (pm.mod)
				pm.mod->refs++;
			pm.is_exe = !strcmp(fpath, p->exe_path);
			if (!pm.mod)
				pm.special = SPECIAL_ANON;
		} else if (nlen == 6 && !memcmp(name, "[vdso]", 6)) {
			pm.special = "[vdso]";
		} else if (nlen == 10 && !memcmp(name, "[vsyscall]", 10)) {
			pm.special = "[vsyscall]";
		} else {
			pm.special = SPECIAL_ANON;
		}
		if (n == cap) {
			unsigned int ncap = cap ? cap * 2 : 32;
			struct pmap *np = realloc(maps, ncap * sizeof(*np));

			if (!np) {
				if (pm.mod)
					pm.mod->refs--;
				err = -ENOMEM;
				break;
			}
			maps = np;
			cap = ncap;
		}
		maps[n++] = pm;
	next:
		line = *eol ? eol + 1 : NULL;
	}
	proc_maps_free(s, p);
	p->maps = maps;
	p->nmaps = n;
	if (n > 1)
		qsort(p->maps, n, sizeof(*p->maps), pmap_cmp);
	p->maps_round = s->round;
	return err;
}

/* Identity of the running image: /proc/<tgid>/exe (path and inode). -ENOENT when the process is gone
 * (or a kernel thread). */
static int proc_read_exe(struct symbolizer *s, uint32_t tgid, char *path, size_t len, uint64_t *dev, uint64_t *ino)
{
	char link[192];
	struct stat sb;
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%u/exe", s->proc_root, tgid);
	n = readlink(link, path, len - 1);
	if (n < 0)
		return -errno;
	path[n] = '\0';
	if (n > 10 && !strcmp(path + n - 10, " (deleted)"))
		path[n - 10] = '\0';
	if (stat(link, &sb)) {
		*dev = *ino = 0;
	} else {
		*dev = sb.st_dev;
		*ino = sb.st_ino;
	}
	return 0;
}

static uint32_t read_nspid(struct symbolizer *s, uint32_t tgid)
{
	char path[192];
	uint32_t nspid;

	snprintf(path, sizeof(path), "%s/%u/status", s->proc_root, tgid);
	if (probe_read_file(path, &s->buf, 1u << 20) || procfs_status_nspid(s->buf.data, &nspid))
		return tgid;
	return nspid;
}

/* Start time of the process (clock ticks after boot), 0 when unknown. */
static uint64_t read_start_time(struct symbolizer *s, uint32_t tgid)
{
	char path[192];
	const char *p;

	snprintf(path, sizeof(path), "%s/%u/stat", s->proc_root, tgid);
	if (probe_read_file(path, &s->buf, 1u << 16))
		return 0;
	p = strrchr(s->buf.data, ')'); /* comm may hold spaces and parentheses */
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

static struct proc **proc_slot(struct symbolizer *s, uint32_t tgid)
{
	unsigned int mask = s->procs_cap - 1;

	for (unsigned int i = (unsigned int)gg_mix64(tgid) & mask;; i = (i + 1) & mask)
		if (!s->procs[i] || s->procs[i]->tgid == tgid)
			return &s->procs[i];
}

/* Remove the entry at slot and re-place the ones after it (linear probing deletion). */
static void proc_remove_slot(struct symbolizer *s, struct proc **slot)
{
	unsigned int mask = s->procs_cap - 1;
	unsigned int i = (unsigned int)(slot - s->procs);

	proc__free(s, s->procs[i]);
	s->procs[i] = NULL;
	s->nprocs--;
	for (unsigned int j = (i + 1) & mask; s->procs[j]; j = (j + 1) & mask) {
		struct proc *p = s->procs[j];

		s->procs[j] = NULL;
		*proc_slot(s, p->tgid) = p;
	}
}

static struct proc *proc_new(struct symbolizer *s, uint32_t tgid)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tgid = tgid;
	if (proc_read_exe(s, tgid, p->exe_path, sizeof(p->exe_path), &p->exe_dev, &p->exe_ino)) {
		free(p);
		return NULL;
	}
	p->nspid = read_nspid(s, tgid);
	p->start_time = read_start_time(s, tgid);
	(void)proc_load_maps(s, p);
	p->validated_round = s->round;
	return p;
}

/* The cached process, validated for this round (exec -> reloaded). NULL when unknown and gone. */
static struct proc *proc_get(struct symbolizer *s, uint32_t tgid)
{
	struct proc **slot = proc_slot(s, tgid);
	struct proc *p = *slot;

	if (p && p->validated_round != s->round && !p->gone) {
		char path[PATH_MAX];
		uint64_t dev, ino;

		p->validated_round = s->round;
		if (proc_read_exe(s, tgid, path, sizeof(path), &dev, &ino)) {
			p->gone = 1; /* keep the last maps: its last stacks still resolve */
		} else if (dev != p->exe_dev || ino != p->exe_ino || strcmp(path, p->exe_path) ||
			   read_start_time(s, tgid) != p->start_time) {
			/* exec, or the pid now belongs to another process */
			s->st.execs++;
			p->start_time = read_start_time(s, tgid);
			snprintf(p->exe_path, sizeof(p->exe_path), "%s", path);
			p->exe_dev = dev;
			p->exe_ino = ino;
			p->nspid = read_nspid(s, tgid);
			perfmap__free(&p->jit);
			(void)proc_load_maps(s, p);
		}
	}
	if (!p) {
		if (s->nprocs + 1 > s->opts.max_procs || (s->nprocs + 1) * 2 > s->procs_cap)
			return NULL;
		p = proc_new(s, tgid);
		if (!p)
			return NULL;
		*slot = p;
		s->nprocs++;
	}
	p->last_round = s->round;
	return p;
}

static const struct pmap *proc_find_map(const struct proc *p, uint64_t ip)
{
	size_t lo = sorted_count_le(p->maps, p->nmaps, sizeof(*p->maps), offsetof(struct pmap, start), ip);

	if (lo && ip < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

/* /tmp/perf-<nspid>.map inside the process's root: "START SIZE name" lines in hex. Reloaded when it
 * changes, checked at most once per round. */
static void proc_check_perfmap(struct symbolizer *s, struct proc *p)
{
	char path[256];
	struct stat sb;
	const char *line;

	if (p->jit.checked_round == s->round || p->gone)
		return;
	p->jit.checked_round = s->round;
	snprintf(path, sizeof(path), "%s/%u/root/tmp/perf-%u.map", s->proc_root, p->tgid, p->nspid);
	if (stat(path, &sb)) {
		if (p->jit.present)
			perfmap__free(&p->jit);
		p->jit.checked_round = s->round;
		return;
	}
	if (p->jit.present && p->jit.size == sb.st_size &&
	    p->jit.mtime_ns == (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec)
		return;
	symtab__free(&p->jit.tab);
	p->jit.present = 1;
	p->jit.size = sb.st_size;
	p->jit.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	if (probe_read_file(path, &s->buf, PERFMAP_MAX))
		return;
	for (line = s->buf.data; line && *line;) {
		const char *eol = strchr(line, '\n');
		const char *q = line;
		uint64_t start, size;

		if (!eol)
			eol = line + strlen(line);
		if (!perfmap_hex(&q, &start) && *q++ == ' ' && !perfmap_hex(&q, &size) && *q++ == ' ' && q < eol) {
			if (symtab__add(&p->jit.tab, start, size, q, (size_t)(eol - q)))
				break;
		}
		line = *eol ? eol + 1 : NULL;
	}
	symtab__finish(&p->jit.tab);
}

/* ---- kernel --------------------------------------------------------------------------------------- */

static int kallsyms_load(struct symbolizer *s)
{
	char path[192];
	const char *line;
	int err;

	symtab__free(&s->kallsyms);
	s->kallsyms_round = s->round;
	snprintf(path, sizeof(path), "%s/kallsyms", s->proc_root);
	err = probe_read_file(path, &s->buf, KALLSYMS_MAX);
	if (err) {
		s->kallsyms_state = -1;
		return err;
	}
	for (line = s->buf.data; line && *line;) {
		const char *eol = strchr(line, '\n');
		const char *q = line, *name, *end;
		uint64_t addr;
		char type;

		if (!eol)
			eol = line + strlen(line);
		if (hex_u64(&q, &addr) || *q++ != ' ' || !*q)
			goto next;
		type = *q++;
		if (*q++ != ' ')
			goto next;
		if (addr && (type == 't' || type == 'T' || type == 'w' || type == 'W')) {
			name = q;
			end = memchr(name, '\t', (size_t)(eol - name));
			if (!end)
				end = eol;
			if (symtab__add(&s->kallsyms, addr, 0, name, (size_t)(end - name))) {
				err = -ENOMEM;
				break;
			}
		}
	next:
		line = *eol ? eol + 1 : NULL;
	}
	symtab__finish(&s->kallsyms);
	probe_buf__free(&s->buf); /* megabytes of text: not kept for the small files read later */
	/* kptr_restrict hides addresses (all zero): nothing to resolve with */
	s->kallsyms_state = s->kallsyms.n ? 1 : -1;
	return err ? err : (s->kallsyms.n ? 0 : -EPERM);
}

int symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym_frame *ret)
{
	const struct sym *sym;

	s->st.lookups++;
	*ret = (struct sym_frame){.kind = SYM_KERNEL, .module = "[kernel]"};
	if (s->kallsyms_state == 0)
		(void)kallsyms_load(s);
	sym = s->kallsyms_state > 0 ? symtab__find(&s->kallsyms, ip) : NULL;
	/* a module loaded since: reload, but not more than once a minute's worth of rounds */
	if (!sym && s->round - s->kallsyms_round >= KALLSYMS_RELOAD_ROUNDS) {
		(void)kallsyms_load(s);
		sym = s->kallsyms_state > 0 ? symtab__find(&s->kallsyms, ip) : NULL;
	}
	if (!sym) {
		s->st.unknown++;
		ret->kind = SYM_UNKNOWN;
		ret->module = NULL;
		return -ENOENT;
	}
	ret->name = s->kallsyms.strs + sym->name;
	ret->offset = ip - sym->addr;
	return 0;
}

/* ---- user ----------------------------------------------------------------------------------------- */

/* ELF virtual address of ip in mapping pm: through the segment holding the file offset. */
static int elf_vaddr(const struct elfsyms *es, const struct pmap *pm, uint64_t ip, uint64_t *ret)
{
	uint64_t foff = ip - pm->start + pm->pgoff;

	for (unsigned int i = 0; i < es->nsegs; i++) {
		const struct seg *sg = &es->segs[i];

		if (foff >= sg->off && foff < sg->off + sg->filesz) {
			*ret = foff - sg->off + sg->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int symbolizer__user(struct symbolizer *s, uint32_t tgid, uint64_t ip, struct sym_frame *ret)
{
	struct proc *p;
	const struct pmap *pm;
	const struct sym *sym;

	s->st.lookups++;
	*ret = (struct sym_frame){.kind = SYM_UNKNOWN};
	p = proc_get(s, tgid);
	if (!p)
		goto unknown;
	pm = proc_find_map(p, ip);
	if (!pm && !p->gone && p->maps_round != s->round) {
		(void)proc_load_maps(s, p); /* mapped since (dlopen): once per round */
		pm = proc_find_map(p, ip);
	}
	if (pm && pm->mod) {
		struct module *m = pm->mod;
		uint64_t vaddr;

		m->last_round = s->round;
		if (!m->loaded)
			module_load(s, m, tgid, pm);
		ret->kind = pm->is_exe ? SYM_EXE : SYM_LIB;
		ret->module = m->path;
		ret->offset = ip - pm->start + pm->pgoff;
		if (m->es && !elf_vaddr(m->es, pm, ip, &vaddr)) {
			sym = symtab__find(&m->es->tab, vaddr);
			if (sym) {
				ret->name = m->es->tab.strs + sym->name;
				ret->offset = vaddr - sym->addr;
				return 0;
			}
		}
		s->st.module_only++;
		return -ENOENT;
	}
	/* anonymous executable memory or nothing: JIT code, when the runtime writes a perf map */
	proc_check_perfmap(s, p);
	if (p->jit.present && (sym = symtab__find(&p->jit.tab, ip))) {
		ret->kind = SYM_JIT;
		ret->module = "[jit]";
		ret->name = p->jit.tab.strs + sym->name;
		ret->offset = ip - sym->addr;
		return 0;
	}
	if (pm) {
		ret->kind = SYM_LIB;
		ret->module = pm->special;
		ret->offset = ip - pm->start;
		s->st.module_only++;
		return -ENOENT;
	}
unknown:
	s->st.unknown++;
	return -ENOENT;
}

void symbolizer__forget(struct symbolizer *s, uint32_t tgid)
{
	struct proc **slot = proc_slot(s, tgid);

	if (*slot)
		proc_remove_slot(s, slot);
}

/* ---- life cycle ----------------------------------------------------------------------------------- */

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	unsigned int cap = 16;

	if (!s)
		return NULL;
	if (opts)
		s->opts = *opts;
	if (!s->opts.max_procs)
		s->opts.max_procs = 4096;
	if (!s->opts.max_modules)
		s->opts.max_modules = 1024;
	if (!s->opts.idle_rounds)
		s->opts.idle_rounds = 10;
	snprintf(s->proc_root, sizeof(s->proc_root), "%s", s->opts.proc_root ? s->opts.proc_root : "/proc");
	s->opts.proc_root = NULL;
	while (cap < s->opts.max_procs * 2)
		cap *= 2;
	s->procs = calloc(cap, sizeof(*s->procs));
	if (!s->procs) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->procs_cap = cap;
	s->round = 1;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		free(s->procs);
		free(s);
		errno = EINVAL;
		return NULL;
	}
	return s;
}

/* Bytes of the ELF symbol tables held (shared tables once). */
static size_t elf_bytes(const struct symbolizer *s)
{
	size_t mem = 0;

	for (unsigned int i = 0; i < s->ness; i++)
		mem += sizeof(*s->ess[i]) + symtab__mem(&s->ess[i]->tab);
	return mem;
}

/* Over max_elf_bytes: drop the symbol tables of the modules used longest ago (not in this round); a
 * module dropped is loaded again the next time an address falls in it. Returns how many. */
static unsigned int elf_evict(struct symbolizer *s)
{
	unsigned int n = 0;

	if (!s->opts.max_elf_bytes)
		return 0;
	while (elf_bytes(s) > s->opts.max_elf_bytes) {
		struct module *victim = NULL;

		for (unsigned int i = 0; i < s->nmods; i++) {
			struct module *m = s->mods[i];

			if (m->es && m->last_round < s->round && (!victim || m->last_round < victim->last_round))
				victim = m;
		}
		if (!victim)
			break;
		elfsyms__put(s, victim->es);
		victim->es = NULL;
		victim->loaded = 0;
		s->st.evictions++;
		n++;
	}
	return n;
}

void symbolizer__begin_round(struct symbolizer *s)
{
	unsigned int old = s->opts.idle_rounds, dropped = 0;

	s->round++;
	/* processes unused for a while (or gone and unused this round) */
	for (unsigned int i = 0; i < s->procs_cap;) {
		struct proc *p = s->procs[i];

		if (p && (s->round - p->last_round > old || (p->gone && s->round - p->last_round > 1))) {
			proc_remove_slot(s, &s->procs[i]);
			dropped++;
			continue; /* slot i may hold a moved entry now */
		}
		i++;
	}
	/* modules no process maps any more, unused for a while */
	for (unsigned int i = 0; i < s->nmods;) {
		struct module *m = s->mods[i];

		if (!m->refs && s->round - m->last_round > old) {
			s->mods[i] = s->mods[--s->nmods];
			module__free(s, m);
			dropped++;
			continue;
		}
		i++;
	}
	dropped += elf_evict(s);
	/* symbol tables are megabytes of small and large blocks: hand what was freed back to the kernel,
	 * or the heap keeps its high-water mark */
	if (dropped)
		malloc_trim(0);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
	size_t mem = sizeof(*s) + s->procs_cap * sizeof(*s->procs) + s->mods_cap * sizeof(*s->mods) +
		     s->ess_cap * sizeof(*s->ess) + symtab__mem(&s->kallsyms) + s->buf.cap;

	*ret = s->st;
	for (unsigned int i = 0; i < s->procs_cap; i++) {
		const struct proc *p = s->procs[i];

		if (p)
			mem += sizeof(*p) + p->nmaps * sizeof(*p->maps) + symtab__mem(&p->jit.tab);
	}
	for (unsigned int i = 0; i < s->nmods; i++)
		mem += sizeof(*s->mods[i]) + strlen(s->mods[i]->path) + 1;
	for (unsigned int i = 0; i < s->ness; i++)
		mem += sizeof(*s->ess[i]) + symtab__mem(&s->ess[i]->tab);
	ret->procs = s->nprocs;
	ret->modules = s->nmods;
	ret->mem_bytes = mem;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (unsigned int i = 0; i < s->procs_cap; i++)
		proc__free(s, s->procs[i]);
	free(s->procs);
	for (unsigned int i = 0; i < s->nmods; i++)
		module__free(s, s->mods[i]);
	free(s->mods);
	while (s->ness)
		elfsyms__free(s->ess[--s->ness]);
	free(s->ess);
	symtab__free(&s->kallsyms);
	probe_buf__free(&s->buf);
	free(s);
}
