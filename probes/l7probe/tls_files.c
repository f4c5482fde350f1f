/* tls_files.c - the table of files the TLS uprobes are attached to (tls_files.h). */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tls_files.h"

int tls_files__init(struct tls_files *fs, unsigned int max, unsigned int links_max)
{
	memset(fs, 0, sizeof(*fs));
	fs->f = calloc(max, sizeof(*fs->f));
	fs->pool = calloc((size_t)max * links_max, sizeof(*fs->pool));
	if (!fs->f || !fs->pool) {
		tls_files__fini(fs);
		return -ENOMEM;
	}
	fs->max = max;
	for (unsigned int i = 0; i < max; i++) {
		fs->f[i].links = fs->pool + (size_t)i * links_max;
		fs->f[i].cap = links_max;
	}
	return 0;
}

void tls_files__fini(struct tls_files *fs)
{
	tls_files__clear(fs);
	free(fs->f);
	free(fs->pool);
	memset(fs, 0, sizeof(*fs));
}

void tls_file__detach(struct tls_file *f)
{
	for (unsigned int i = 0; i < f->nlinks; i++)
		bpf_link__destroy(f->links[i]);
	f->nlinks = 0;
}

int tls_file__link(struct tls_file *f, struct bpf_link *l)
{
	if (f->nlinks >= f->cap) {
		bpf_link__destroy(l);
		return -E2BIG;
	}
	f->links[f->nlinks++] = l;
	return 0;
}

void tls_files__clear(struct tls_files *fs)
{
	for (unsigned int i = 0; i < fs->n; i++)
		tls_file__detach(&fs->f[i]);
	fs->n = 0;
}

void tls_files__begin_scan(struct tls_files *fs)
{
	for (unsigned int i = 0; i < fs->n; i++)
		fs->f[i].seen = 0;
}

int tls_files__mark(struct tls_files *fs, const struct stat *st, int pid)
{
	for (unsigned int i = 0; i < fs->n; i++) {
		struct tls_file *f = &fs->f[i];

		if (f->dev == (uint64_t)st->st_dev && f->ino == (uint64_t)st->st_ino && f->pid == pid) {
			f->seen = 1;
			return 1;
		}
	}
	return 0;
}

/* The slots past n hold no links: a file dropped or given up was detached first. */
struct tls_file *tls_files__next(struct tls_files *fs)
{
	return fs->n < fs->max ? &fs->f[fs->n] : NULL;
}

void tls_files__add(struct tls_files *fs, struct tls_file *f, const struct stat *st, int pid)
{
	f->dev = (uint64_t)st->st_dev;
	f->ino = (uint64_t)st->st_ino;
	f->pid = pid;
	f->seen = 1;
	fs->n++;
}

unsigned int tls_files__end_scan(struct tls_files *fs)
{
	unsigned int i, j;

	for (i = 0, j = 0; i < fs->n; i++) {
		struct tls_file keep = fs->f[i];

		if (!keep.seen) {
			tls_file__detach(&fs->f[i]);
			continue;
		}
		/* swapped, not copied: each slot keeps links arrays of its own */
		fs->f[i] = fs->f[j];
		fs->f[j++] = keep;
	}
	fs->n = j;
	return j;
}
