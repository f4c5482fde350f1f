/* pyframes.c - Python frames in on-CPU stacks, user side: finds the CPython 3.11 processes in scope
 * (a python3.11 executable or libpython3.11 mapped), resolves _PyRuntime with libelf and registers
 * it with the version's offsets in the py_procs map (bpf/stackprobe_py.h walks the frames); turns
 * the code objects of a sampled stack into "py:qualname (file.py)" names, read from the process's
 * memory. */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "probe.h"
#include "stackprobe.h"
#include "uproc.h"

#define PY_MAPS_MAX   (8u << 20)
#define PY_FILES      16u
#define PY_NAME_CACHE 2048u /* code objects whose names are cached (direct-mapped) */
#define PY_NAME_MAX   SP_PY_NAME_MAX
#define PY_STR_MAX    120u

/* One CPython version's layout (x86_64): offsets of the structures the walk and the names need.
 * 3.11 from its internal headers (Include/internal/pycore_{runtime,interp,frame}.h, cpython/code.h):
 * compiled against python3.11-dev with Py_BUILD_CORE and offsetof. */
struct py_layout {
	const char *exe, *lib; /* file name of the executable, prefix of the library */
	struct sp_py_proc off; /* runtime is filled per process */
	uint16_t co_filename, co_qualname;
};

static const struct py_layout layouts[] = {
	{"python3.11",
	 "libpython3.11.so",
	 {.interp_head = 40,
	  .tstate_current = 576,
	  .threads_head = 16,
	  .ts_next = 8,
	  .ts_thread_id = 152,
	  .ts_cframe = 56,
	  .cframe_current = 8,
	  .frame_code = 32,
	  .frame_previous = 48,
	  .frame_is_entry = 68},
	 112,
	 128},
};

/* A CPython file: where _PyRuntime is in it (file offset), by device and inode. */
struct py_file {
	uint64_t dev, ino;
	int64_t runtime_off; /* -1: no _PyRuntime */
};

struct py_pid {
	uint32_t pid;
	int layout; /* -1: not Python */
	uint64_t start;
};

struct py_name {
	uint32_t tgid;
	uint64_t code;
	char name[PY_NAME_MAX];
};

struct sp_py {
	int procs_fd, stacks_fd;
	struct py_file files[PY_FILES];
	unsigned int nfiles;
	struct py_pid *pids, *prev; /* this scan's and the last one's, sorted by pid */
	size_t npids, nprev, cap, prev_cap;
	struct py_name *names;
	struct probe_buf buf;
	unsigned int registered;
};

struct sp_py *sp_py__new(int procs_fd, int stacks_fd)
{
	struct sp_py *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->procs_fd = procs_fd;
	p->stacks_fd = stacks_fd;
	return p;
}

void sp_py__free(struct sp_py *p)
{
	if (!p)
		return;
	free(p->pids);
	free(p->prev);
	free(p->names);
	probe_buf__free(&p->buf);
	free(p);
}

/* File offset of _PyRuntime in path (.dynsym or .symtab), -1 when absent. */
static int64_t runtime_offset(const char *path)
{
	static const char *const name[] = {"_PyRuntime"};
	int64_t off = -1;

	(void)uproc_elf_syms(path, name, 1, UPROC_ELF_SYMTAB | UPROC_ELF_ANY_TYPE, &off);
	return off;
}

static int64_t file_runtime(struct sp_py *p, const char *path, uint64_t dev, uint64_t ino)
{
	for (unsigned int i = 0; i < p->nfiles; i++)
		if (p->files[i].dev == dev && p->files[i].ino == ino)
			return p->files[i].runtime_off;
	if (p->nfiles == PY_FILES)
		p->nfiles = 0; /* many interpreters (containers): start over */
	p->files[p->nfiles] = (struct py_file){dev, ino, runtime_offset(path)};
	return p->files[p->nfiles++].runtime_off;
}

/* Which layout pid's interpreter has and where its _PyRuntime is; -1 when it is not one we know. */
static int detect(struct sp_py *p, uint32_t pid, uint64_t *ret_runtime)
{
	char path[64], target[96];
	int layout = -1, in_lib = 0;
	int64_t roff = -1;
	uint64_t dev = 0, ino = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (probe_read_file(path, &p->buf, PY_MAPS_MAX))
		return -1;
	/* first pass: the interpreter's file; second: the mapping that holds _PyRuntime's file offset */
	for (int pass = 0; pass < 2; pass++) {
		char *line = p->buf.data;

		while (line && *line) {
			char *nl = strchr(line, '\n'), *file, *base;
			unsigned long long start, end, off, fino;
			unsigned int maj, min;
			int n = 0;

			if (nl)
				*nl = '\0';
			if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %n", &start, &end, &off, &maj, &min, &fino,
				   &n) >= 6 &&
			    n) {
				file = line + n;
				base = strrchr(file, '/');
				base = base ? base + 1 : file;
				if (pass == 0 && file[0] == '/' && !in_lib) {
					/* the library wins: an executable linked with libpython has no _PyRuntime */
					for (unsigned int l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++)
						if ((layout < 0 && !strcmp(base, layouts[l].exe)) ||
						    !strncmp(base, layouts[l].lib, strlen(layouts[l].lib))) {
							in_lib = !strncmp(base, layouts[l].lib, strlen(layouts[l].lib));
							layout = (int)l;
							dev = ((uint64_t)maj << 32) | min;
							ino = fino;
							snprintf(target, sizeof(target), "/proc/%u/map_files/%llx-%llx",
								 pid, start, end);
						}
				} else if (pass == 1 && ((uint64_t)maj << 32 | min) == dev && fino == ino &&
					   (uint64_t)roff >= off && (uint64_t)roff < off + (end - start)) {
					*ret_runtime = start + ((uint64_t)roff - off);
					if (nl)
						*nl = '\n';
					return layout;
				}
			}
			if (nl)
				*nl = '\n';
			line = nl ? nl + 1 : NULL;
		}
		if (pass == 0) {
			if (layout < 0)
				return -1;
			roff = file_runtime(p, target, dev, ino);
			if (roff < 0)
				return -1;
		}
	}
	return -1;
}

static int pid_cmp(const void *a, const void *b)
{
	const struct py_pid *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void consider(void *ctx, uint32_t pid)
{
	struct sp_py *p = ctx;
	struct py_pid key = {.pid = pid}, *old, *cur;
	uint64_t start = uproc_start_time(&p->buf, pid), runtime = 0;

	if (!start)
		return;
	if (p->npids == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct py_pid *v = realloc(p->pids, cap * sizeof(*v));

		if (!v)
			return;
		p->pids = v;
		p->cap = cap;
	}
	cur = &p->pids[p->npids];
	cur->pid = pid;
	cur->start = start;
	old = p->nprev ? bsearch(&key, p->prev, p->nprev, sizeof(key), pid_cmp) : NULL;
	if (old && old->start == start) {
		cur->layout = old->layout; /* known: registered already (or not Python) */
		p->npids++;
		return;
	}
	cur->layout = detect(p, pid, &runtime);
	if (cur->layout >= 0) {
		struct sp_py_proc v = layouts[cur->layout].off;

		v.runtime = runtime;
		if (bpf_map_update_elem(p->procs_fd, &pid, &v, BPF_ANY))
			cur->layout = -1;
	} else if (old && old->layout >= 0) {
		(void)bpf_map_delete_elem(p->procs_fd, &pid); /* exec'ed into something else */
	}
	p->npids++;
}

void sp_py__sync(struct sp_py *p, const struct gg_scope *scope)
{
	struct py_pid *t;
	size_t j = 0;

	/* the names of code objects are read again: a freed code object's address may be reused */
	if (p->names)
		memset(p->names, 0, PY_NAME_CACHE * sizeof(*p->names));
	t = p->prev;
	p->prev = p->pids;
	p->nprev = p->npids;
	p->pids = t;
	j = p->prev_cap;
	p->prev_cap = p->cap;
	p->cap = j;
	j = 0;
	p->npids = 0;
	uproc_each_pid(scope->all || scope->ncgrp, scope->tgid, scope->ntgid, consider, p);
	if (p->npids) /* pids is NULL before the first process */
		qsort(p->pids, p->npids, sizeof(*p->pids), pid_cmp);
	/* processes gone or out of scope */
	for (size_t i = 0; i < p->nprev; i++) {
		if (p->prev[i].layout < 0)
			continue;
		while (j < p->npids && p->pids[j].pid < p->prev[i].pid)
			j++;
		if (j == p->npids || p->pids[j].pid != p->prev[i].pid)
			(void)bpf_map_delete_elem(p->procs_fd, &p->prev[i].pid);
	}
	p->registered = 0;
	for (size_t i = 0; i < p->npids; i++)
		p->registered += p->pids[i].layout >= 0;
}

unsigned int sp_py__registered(const struct sp_py *p)
{
	return p->registered;
}

static int read_mem(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};

	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* A str object's text (ASCII or Latin-1 compact strings; others as "?"). */
static void read_str(uint32_t pid, uint64_t obj, char *out, size_t len)
{
	unsigned char hdr[48];
	uint64_t n;
	uint32_t state;
	size_t want;

	snprintf(out, len, "?");
	if (!obj || read_mem(pid, obj, hdr, sizeof(hdr)))
		return;
	memcpy(&n, hdr + 16, sizeof(n));
	memcpy(&state, hdr + 32, sizeof(state));
	/* state: interned:2 kind:3 compact:1 ascii:1 */
	if (!(state & (1u << 5)) || ((state >> 2) & 7) != 1)
		return;
	want = n < len - 1 ? (size_t)n : len - 1;
	if (want > PY_STR_MAX)
		want = PY_STR_MAX;
	if (read_mem(pid, obj + ((state & (1u << 6)) ? 48 : 72), out, want))
		want = 0;
	out[want] = '\0';
	for (size_t i = 0; i < want; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == ';')
			out[i] = '_';
}

static const char *code_name(struct sp_py *p, uint32_t tgid, uint64_t code, int layout)
{
	struct py_name *c;
	uint64_t h = (code >> 4) ^ ((uint64_t)tgid * 0x9e3779b97f4a7c15ull);
	uint64_t ptrs[3];
	char file[PY_STR_MAX + 1], name[PY_STR_MAX + 1];
	const char *base;

	if (!p->names) {
		p->names = calloc(PY_NAME_CACHE, sizeof(*p->names));
		if (!p->names)
			return "py:?";
	}
	c = &p->names[(h ^ (h >> 29)) % PY_NAME_CACHE];
	if (c->code == code && c->tgid == tgid && c->name[0])
		return c->name;
	c->code = code;
	c->tgid = tgid;
	/* co_filename, co_name, co_qualname are consecutive in 3.11 */
	if (read_mem(tgid, code + layouts[layout].co_filename, ptrs, sizeof(ptrs))) {
		snprintf(c->name, sizeof(c->name), "py:[gone]");
		return c->name;
	}
	read_str(tgid, ptrs[0], file, sizeof(file));
	read_str(tgid, ptrs[(layouts[layout].co_qualname - layouts[layout].co_filename) / 8], name, sizeof(name));
	base = strrchr(file, '/');
	/* bounded so that both fit: long names are cut, never the file */
	snprintf(c->name, sizeof(c->name), "py:%.90s (%.60s)", name, base ? base + 1 : file);
	return c->name;
}

unsigned int sp_py__frames(struct sp_py *p, uint32_t tgid, uint32_t id, char (*names)[SP_PY_NAME_MAX],
			   unsigned char *entry, unsigned int max)
{
	struct sp_py_stack st;
	struct py_pid key = {.pid = tgid}, *pp;
	unsigned int n = 0;

	if (!id || bpf_map_lookup_elem(p->stacks_fd, &id, &st) || st.tgid != tgid)
		return 0;
	pp = p->npids ? bsearch(&key, p->pids, p->npids, sizeof(key), pid_cmp) : NULL;
	if (!pp || pp->layout < 0)
		return 0;
	for (unsigned int i = 0; i < st.n && i < SP_PY_DEPTH && n < max; i++) {
		snprintf(names[n], SP_PY_NAME_MAX, "%s", code_name(p, tgid, st.codes[i] & ~SP_PY_ENTRY, pp->layout));
		entry[n++] = (st.codes[i] & SP_PY_ENTRY) != 0;
	}
	return n;
}
