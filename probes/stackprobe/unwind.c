/* unwind.c - the user half of stackprobe's .eh_frame unwinder: builds the tables the BPF side asks for
 * (a process's executable mappings, each file's rows once and shared), forgets processes that exited. */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ehframe.h"
#include "probe.h"
#include "stackprobe.h"

/* Processes are checked this often for exit, exec and pid reuse. */
#define UW_CHECK_MS 5000u
/* A process is rebuilt at most this often when its samples fall outside its known mappings. */
#define UW_REFRESH_MS 1000u
/* When the rows are full, everything is dropped and rebuilt on demand at most this often. */
#define UW_RESET_MS 60000u
/* Distinct files remembered (those that did not fit or have no .eh_frame too). */
#define UW_FILES_MAX 4096u
#define UW_MAPS_MAX  (1u << 20)
/* Processes of an explicit scope built at once (the others when first sampled). */
#define UW_PREPARE_MAX 256u

struct uw_file {
	uint64_t dev, ino;
	uint32_t row_start, row_count; /* row_count 0: no rows (no .eh_frame, not ELF, did not fit) */
	struct sp_eh_load loads[SP_EH_LOADS];
	unsigned int nloads;
};

struct uw_proc {
	uint32_t tgid;
	uint64_t exe_dev, exe_ino; /* exec changes it */
	uint64_t start;		   /* start time in ticks: pid reuse changes it */
	uint64_t built_ms;
};

struct sp_unwind {
	int rows_fd, procs_fd, want_fd;
	struct sp_uw_row *rows; /* the BPF array, mmap'ed */
	size_t rows_next;
	struct uw_file *files;
	size_t nfiles, files_cap;
	struct uw_proc procs[SP_UW_PROCS];
	size_t nprocs;
	uint64_t checked_ms, reset_ms;
	struct probe_buf buf;
	struct sp_uw_proc entry;
	struct sp_unwind_stats st;
};

struct sp_unwind *sp_unwind__new(int rows_fd, int procs_fd, int want_fd)
{
	struct sp_unwind *u = calloc(1, sizeof(*u));
	void *p;

	if (!u)
		return NULL;
	u->rows_fd = rows_fd;
	u->procs_fd = procs_fd;
	u->want_fd = want_fd;
	p = mmap(NULL, (size_t)SP_UW_ROWS * sizeof(struct sp_uw_row), PROT_READ | PROT_WRITE, MAP_SHARED, rows_fd, 0);
	if (p == MAP_FAILED) {
		int err = errno;

		free(u);
		errno = err;
		return NULL;
	}
	u->rows = p;
	return u;
}

void sp_unwind__free(struct sp_unwind *u)
{
	if (!u)
		return;
	if (u->rows)
		munmap(u->rows, (size_t)SP_UW_ROWS * sizeof(struct sp_uw_row));
	free(u->files);
	probe_buf__free(&u->buf);
	free(u);
}

void sp_unwind__stats(const struct sp_unwind *u, struct sp_unwind_stats *ret)
{
	*ret = u->st;
	ret->procs = u->nprocs;
	ret->rows = u->rows_next;
	ret->files = 0;
	for (size_t i = 0; i < u->nfiles; i++)
		ret->files += u->files[i].row_count != 0;
}

/* Drop every table (the rows are full): processes are rebuilt when they are sampled again. */
static void uw_reset(struct sp_unwind *u, uint64_t now_ms)
{
	for (size_t i = 0; i < u->nprocs; i++)
		(void)bpf_map_delete_elem(u->procs_fd, &u->procs[i].tgid);
	u->nprocs = 0;
	u->nfiles = 0;
	u->rows_next = 0;
	u->reset_ms = now_ms;
	u->st.resets++;
}

static struct uw_file *uw_file_get(struct sp_unwind *u, int fd, const struct stat *sb, uint64_t now_ms)
{
	struct sp_eh_file ef = {0};
	struct uw_file *f;
	int err;

	for (size_t i = 0; i < u->nfiles; i++)
		if (u->files[i].dev == (uint64_t)sb->st_dev && u->files[i].ino == (uint64_t)sb->st_ino)
			return &u->files[i];
	if (u->nfiles >= UW_FILES_MAX)
		return NULL;
	if (u->nfiles == u->files_cap) {
		size_t cap = u->files_cap ? u->files_cap * 2 : 64;
		struct uw_file *v = realloc(u->files, cap * sizeof(*v));

		if (!v)
			return NULL;
		u->files = v;
		u->files_cap = cap;
	}
	err = sp_ehframe__read_elf(fd, SP_UW_FILE_ROWS, &ef);
	u->st.elf_reads++;
	if (err == -E2BIG)
		u->st.overflow++;
	else if (err && err != -ENOENT && err != -ENOEXEC)
		u->st.errors++;
	if (!err && ef.n && u->rows_next + ef.n > SP_UW_ROWS) {
		if (now_ms - u->reset_ms >= UW_RESET_MS && u->rows_next) {
			/* the caller's process is rebuilt from scratch: its entry is not written yet */
			uw_reset(u, now_ms);
		}
		if (u->rows_next + ef.n > SP_UW_ROWS) {
			u->st.overflow++;
			ef.n = 0;
		}
	}
	f = &u->files[u->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = (uint64_t)sb->st_dev;
	f->ino = (uint64_t)sb->st_ino;
	if (!err) {
		memcpy(f->loads, ef.loads, sizeof(f->loads));
		f->nloads = ef.nloads;
		if (ef.n) {
			memcpy(&u->rows[u->rows_next], ef.rows, ef.n * sizeof(*ef.rows));
			f->row_start = (uint32_t)u->rows_next;
			f->row_count = (uint32_t)ef.n;
			u->rows_next += ef.n;
		}
	}
	sp_eh_file__clear(&ef);
	return f;
}

static struct uw_proc *uw_proc_find(struct sp_unwind *u, uint32_t tgid)
{
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].tgid == tgid)
			return &u->procs[i];
	return NULL;
}

/* Start time (field 22 of /proc/<pid>/stat) and the executable's identity of a process. */
static int proc_ident(struct sp_unwind *u, uint32_t tgid, uint64_t *ret_start, uint64_t *ret_dev, uint64_t *ret_ino)
{
	char path[64];
	struct stat sb;
	uint64_t start = 0;
	int err = probe_proc_start(&u->buf, NULL, tgid, &start);

	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/exe", tgid);
	if (stat(path, &sb)) {
		sb.st_dev = 0;
		sb.st_ino = 0; /* a kernel thread */
	}
	*ret_start = start;
	*ret_dev = (uint64_t)sb.st_dev;
	*ret_ino = (uint64_t)sb.st_ino;
	return 0;
}

/* The ELF address bias of a mapping of file f at start with file offset off. */
static int map_bias(const struct uw_file *f, uint64_t start, uint64_t off, uint64_t *ret)
{
	for (unsigned int i = 0; i < f->nloads; i++) {
		const struct sp_eh_load *l = &f->loads[i];

		if (off >= (l->offset & ~4095ull) && off < l->offset + l->filesz) {
			*ret = start - off + l->offset - l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* Build (or rebuild) a process's entry from /proc/<tgid>/maps. */
static int uw_build(struct sp_unwind *u, uint32_t tgid, uint64_t now_ms)
{
	struct sp_uw_proc *e = &u->entry;
	struct uw_proc *pr;
	uint64_t start_time, exe_dev, exe_ino;
	char path[96];
	char *line, *next;
	int err;

	uint64_t resets = u->st.resets;
	int attempt = 0;

	err = proc_ident(u, tgid, &start_time, &exe_dev, &exe_ino);
	if (err)
		return err;
again:
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", tgid);
	err = probe_read_file(path, &u->buf, UW_MAPS_MAX);
	if (err)
		return err;
	memset(e, 0, sizeof(*e));
	for (line = u->buf.data; line && *line && e->n < SP_UW_MAPS; line = next) {
		unsigned long long start, end, off, ino;
		char perms[8];
		int name_at = 0;
		struct stat sb;
		struct uw_file *f;
		struct sp_uw_map *m;
		int fd;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &start, &end, perms, &off, &ino, &name_at) < 5)
			continue;
		if (perms[2] != 'x')
			continue;
		m = &e->maps[e->n++];
		m->start = start;
		m->end = end;
		if (!ino || line[name_at] != '/')
			continue; /* anonymous (JIT), [vdso], [vsyscall]: frame pointers */
		/* the mapped file itself, whatever the mount namespace or a later replacement */
		snprintf(path, sizeof(path), "/proc/%" PRIu32 "/map_files/%llx-%llx", tgid, start, end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &sb) == 0) {
			f = uw_file_get(u, fd, &sb, now_ms);
			uint64_t bias;

			if (f && f->row_count && !map_bias(f, start, off, &bias)) {
				m->bias = bias;
				m->row_start = f->row_start;
				m->row_count = f->row_count;
			}
		}
		close(fd);
	}
	if (u->st.resets != resets && !attempt++) {
		resets = u->st.resets;
		goto again; /* the rows were dropped and refilled meanwhile: rows of the first mappings are gone */
	}
	pr = uw_proc_find(u, tgid);
	if (!pr && u->nprocs >= SP_UW_PROCS) {
		u->st.errors++;
		return -E2BIG;
	}
	if (bpf_map_update_elem(u->procs_fd, &tgid, e, BPF_ANY)) {
		err = -errno;
		u->st.errors++;
		return err; /* an entry of an earlier build stays as it was */
	}
	if (!pr)
		pr = &u->procs[u->nprocs++];
	pr->tgid = tgid;
	pr->start = start_time;
	pr->exe_dev = exe_dev;
	pr->exe_ino = exe_ino;
	pr->built_ms = now_ms;
	u->st.builds++;
	return 0;
}

/* Forget processes that exited; rebuild those that exec'ed (or whose pid was reused). */
static void uw_check(struct sp_unwind *u, uint64_t now_ms)
{
	for (size_t i = 0; i < u->nprocs;) {
		struct uw_proc *pr = &u->procs[i];
		uint64_t start, dev, ino;

		if (proc_ident(u, pr->tgid, &start, &dev, &ino) == 0 && start == pr->start) {
			if ((dev != pr->exe_dev || ino != pr->exe_ino) && uw_build(u, pr->tgid, now_ms) == 0)
				u->st.rebuilds++;
			i++;
			continue;
		}
		(void)bpf_map_delete_elem(u->procs_fd, &pr->tgid);
		u->procs[i] = u->procs[--u->nprocs];
	}
}

void sp_unwind__tick(struct sp_unwind *u, uint64_t now_ms)
{
	uint32_t tgids[SP_UW_WANT], key, *prev = NULL;
	uint32_t why[SP_UW_WANT];
	size_t n = 0;

	while (n < SP_UW_WANT && bpf_map_get_next_key(u->want_fd, prev, &key) == 0) {
		tgids[n] = key;
		prev = &tgids[n];
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		if (bpf_map_lookup_and_delete_elem(u->want_fd, &tgids[i], &why[i]))
			why[i] = 0;
		if (why[i] == 0 && bpf_map_lookup_elem(u->want_fd, &tgids[i], &why[i]) == 0)
			(void)bpf_map_delete_elem(u->want_fd, &tgids[i]);
	}
	if (now_ms - u->checked_ms >= UW_CHECK_MS) {
		uw_check(u, now_ms);
		u->checked_ms = now_ms;
	}
	for (size_t i = 0; i < n; i++) {
		struct uw_proc *pr = uw_proc_find(u, tgids[i]);

		if (pr && (why[i] != SP_UW_WANT_REFRESH || now_ms - pr->built_ms < UW_REFRESH_MS))
			continue; /* built already (a request raced with it), or rebuilt a moment ago */
		if (uw_build(u, tgids[i], now_ms) == 0 && pr)
			u->st.rebuilds++;
	}
}

void sp_unwind__prepare(struct sp_unwind *u, const uint32_t *tgids, size_t n, uint64_t now_ms)
{
	for (size_t i = 0; i < n && i < UW_PREPARE_MAX; i++)
		if (!uw_proc_find(u, tgids[i]))
			(void)uw_build(u, tgids[i], now_ms);
}
