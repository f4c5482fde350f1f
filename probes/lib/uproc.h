/* uproc.h - uprobes attached per process in scope (system-wide when the scope is unfiltered: once per
 * library file) on the functions of the library each process maps: which mapped file, its symbols'
 * file offsets (libelf), attach, attach again after an exec or a pid reuse, detach when a process
 * leaves the scope. Shared by stackprobe's allocator uprobes and tprofiling's libc lock uprobes; the
 * /proc and ELF helpers also by stackprobe's Python frames. */
#ifndef GG_UPROC_H
#define GG_UPROC_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctrl_msg.h"
#include "probe.h"

struct bpf_link;
struct bpf_program;

#define UPROC_MAX_FUNCS	  16u
#define UPROC_MAX_LINKS	  (2u * UPROC_MAX_FUNCS)
#define UPROC_SYSWIDE_PID ((uint32_t)-1)

/* A library file: its identity and the file offsets of the functions (-1: not defined; off[0] < 0:
 * not usable at all). */
struct uproc_lib {
	uint64_t dev, ino;
	int64_t off[UPROC_MAX_FUNCS];
};

/* One attachment: a process (or UPROC_SYSWIDE_PID) and the library file it was attached to. */
struct uproc_att {
	uint32_t pid;
	uint64_t start; /* the process's start time: a reused pid is another process */
	uint64_t dev, ino;
	unsigned int want; /* what it was attached for (uproc_set__sync's want) */
	int seen;
	struct bpf_link *links[UPROC_MAX_LINKS]; /* slots as the attach callback chooses */
	int mlinks[UPROC_MAX_LINKS];		 /* multi-uprobe link fds + 1 (0: none), same slots */
};

struct uproc_stats {
	uint64_t links;		/* uprobe links now */
	uint64_t procs;		/* processes (or library files, system-wide) attached now */
	uint64_t skipped;	/* processes in scope beyond max_procs at the last sync */
	uint64_t attach_errors; /* since the start */
	uint64_t libs_resolved; /* library files read since the start */
};

struct uproc_set;

struct uproc_ops {
	/* How much a mapped executable file's name says it is the library: 0 not at all; of the highest,
	 * the first mapped wins. */
	int (*rank)(const char *path);
	/* Fill lib->off (all -1 beforehand) from the file at path. */
	void (*resolve)(void *ctx, const char *path, struct uproc_lib *lib);
	/* Attach a's uprobes (uproc_link) for the functions of lib; 0, or a negative errno: a is tried again
	 * at the next sync. lib may be changed (a function that cannot be probed left out from then on). */
	int (*attach)(void *ctx, struct uproc_set *s, struct uproc_att *a, const char *path, struct uproc_lib *lib);
	void *ctx;
	unsigned int max_procs; /* attachments at most */
	unsigned int max_libs;	/* library files remembered (then forgotten all at once) */
};

/* NULL + errno. */
struct uproc_set *uproc_set__new(const struct uproc_ops *ops);
void uproc_set__free(struct uproc_set *s);
/* Detach everything (what is attached for changes). */
void uproc_set__clear(struct uproc_set *s);
/* Attach to every process of the scope (system-wide per library file when scope->all) for want,
 * detach from those that left it or exited; everything detached when want is 0. */
int uproc_set__sync(struct uproc_set *s, const struct gg_scope *scope, unsigned int want);
void uproc_set__stats(const struct uproc_set *s, struct uproc_stats *ret);

/* For the attach callback: a uprobe (retprobe: a uretprobe) on path at off for a's process into
 * a->links[slot], counted; 0 or a negative errno (counted as an attach error). */
int uproc_link(struct uproc_set *s, struct uproc_att *a, unsigned int slot, struct bpf_program *prog, bool retprobe,
	       const char *path, size_t off, uint64_t cookie);
/* Prepare prog (opened, not yet loaded) for multi-uprobe links (kernel 6.6+): all the uprobes of one
 * uproc_link_multi call are one link, and detaching it waits for the kernel's grace periods once, not
 * once per uprobe (~75 ms each here: a process with 30 uprobes took seconds to detach, and a probe
 * that stopped was killed). Returns 1 when prog will take multi links, 0 when this kernel has none (prog
 * left as it is: one uprobe per uproc_link), or a negative errno. */
int uproc_prefer_multi(struct bpf_program *prog);
/* prog was prepared by uproc_prefer_multi and takes multi links. */
bool uproc_is_multi(const struct bpf_program *prog);
/* For the attach callback, with a prog that takes multi links: uprobes (retprobe: uretprobes) on the
 * functions of lib in the bit set funcs (bit f: lib->off[f], when >= 0), with cookie[f] (NULL: 0), for
 * a's process, as one link in a->mlinks[slot]. A function the kernel refuses (an instruction uprobes
 * cannot take) makes the whole link fail: then each is tried alone, and the refused ones are counted as
 * attach errors and left out of lib from then on (lib->off[f] = -1). 0 when at least one was attached,
 * else a negative errno. */
int uproc_link_multi(struct uproc_set *s, struct uproc_att *a, unsigned int slot, struct bpf_program *prog,
		     bool retprobe, const char *path, struct uproc_lib *lib, uint32_t funcs, const uint64_t *cookie);
/* The bit set of the functions of lib that are defined and not aliases (the same offset) of an earlier
 * one, among those of want. */
uint32_t uproc_lib_funcs(const struct uproc_lib *lib, uint32_t want);
/* Destroy a->links[slot] and a->mlinks[slot] (if any). */
void uproc_unlink(struct uproc_set *s, struct uproc_att *a, unsigned int slot);
/* Destroy every link of a. */
void uproc_detach(struct uproc_set *s, struct uproc_att *a);

/* ---- /proc and ELF helpers ------------------------------------------------------------------------- */

/* Start time of pid (clock ticks since boot, /proc/<pid>/stat field 22); 0 when unreadable. buf is
 * scratch space. */
uint64_t uproc_start_time(struct probe_buf *buf, uint32_t pid);
/* fn for each pid of tgid[0..ntgid), or, when scan, for each process in /proc (at most 65536). */
void uproc_each_pid(int scan, const uint32_t *tgid, uint32_t ntgid, void (*fn)(void *ctx, uint32_t pid), void *ctx);
/* File offset of a virtual address: through the PT_LOAD segment that holds it; -1 when none does. */
int64_t uproc_elf_vaddr_off(Elf *e, uint64_t vaddr);

#define UPROC_ELF_SYMTAB   0x1u /* .symtab too, not only .dynsym */
#define UPROC_ELF_IFUNC	   0x2u /* STT_GNU_IFUNC symbols count as functions */
#define UPROC_ELF_ANY_TYPE 0x4u /* any defined symbol, not only functions */
/* ret_off[i]: file offset of the first defined symbol named names[i] in path (-1: none). Returns how
 * many were found, or a negative errno (the file could not be read; ret_off all -1). */
int uproc_elf_syms(const char *path, const char *const *names, unsigned int n, unsigned int flags, int64_t *ret_off);

#endif
