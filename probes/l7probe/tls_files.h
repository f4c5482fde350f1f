/* tls_files.h - the binaries the TLS uprobes are attached to (tls.c's libssl files, tls_go.c's Go
 * programs), each for one process or every process: a scan marks those a scanned process still maps
 * or runs, and unprobes the rest at its end. */
#ifndef GG_L7_TLS_FILES_H
#define GG_L7_TLS_FILES_H

#include <stdint.h>
#include <sys/stat.h>

struct bpf_link;

/* One probed file, for one process or (pid -1) every process, and its uprobes. */
struct tls_file {
	uint64_t dev, ino;
	int pid;
	int seen; /* mapped or run by a process at the last scan */
	unsigned int nlinks, cap;
	struct bpf_link **links; /* this slot's own cap entries */
};

/* At most max files of at most links_max uprobes each, allocated once. */
struct tls_files {
	unsigned int n, max;
	struct tls_file *f;
	struct bpf_link **pool; /* the files' links arrays */
};

/* 0 or -ENOMEM. */
int tls_files__init(struct tls_files *fs, unsigned int max, unsigned int links_max);
/* Detach every file and free the tables (fs may be zeroed, never initialized). */
void tls_files__fini(struct tls_files *fs);
/* Detach every file. */
void tls_files__clear(struct tls_files *fs);
/* Mark every file unseen: the scan marks again those still in use (tls_files__mark, tls_files__add),
 * tls_files__end_scan unprobes the others. */
void tls_files__begin_scan(struct tls_files *fs);
/* 1 when st's file is probed for pid already (marking it seen), else 0. */
int tls_files__mark(struct tls_files *fs, const struct stat *st, int pid);
/* An empty file for the uprobes of the next file to probe (tls_file__link), or NULL when the table is
 * full; it counts only once tls_files__add says so, and tls_file__detach gives it up. */
struct tls_file *tls_files__next(struct tls_files *fs);
/* Count f (from tls_files__next) as st's file probed for pid, seen. */
void tls_files__add(struct tls_files *fs, struct tls_file *f, const struct stat *st, int pid);
/* Unprobe every file not marked since tls_files__begin_scan; the number of files left. */
unsigned int tls_files__end_scan(struct tls_files *fs);

/* Keep link l (not NULL) in f: 0, or -E2BIG (l destroyed) when f holds as many as it can. */
int tls_file__link(struct tls_file *f, struct bpf_link *l);
/* Destroy f's uprobes. */
void tls_file__detach(struct tls_file *f);

#endif
