/* symbolizer.h - instruction addresses to function names: the kernel from /proc/kallsyms, processes from
 * /proc/<pid>/maps and the ELF files they map (symtab and dynsym, read through /proc/<pid>/root so
 * containers work; .gnu_debuglink and build-id debug files; /tmp/perf-<pid>.map for JIT code). */
#ifndef GG_SYMBOLIZER_H
#define GG_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

/* Where a frame's address was found. */
enum sym_kind {
	SYM_KERNEL = 0, /* kernel text (kallsyms) */
	SYM_EXE,	/* the process's main executable */
	SYM_LIB,	/* another mapped file: shared libraries, the vdso */
	SYM_JIT,	/* /tmp/perf-<pid>.map */
	SYM_UNKNOWN,	/* in no known mapping */
};

/*
 * One resolved frame. name is NULL when the module is known but has no symbol covering the address
 * (stripped); module is NULL for SYM_UNKNOWN. The strings stay valid until the next
 * symbolizer__begin_round() or symbolizer__free().
 */
struct sym_frame {
	enum sym_kind kind;
	const char *name;
	const char *module; /* path as the process sees it, "[kernel]", "[vdso]", "[anon]" */
	uint64_t offset;    /* address - symbol start (or - module load address when name is NULL) */
};

struct symbolizer_opts {
	unsigned int max_procs;	  /* processes whose maps are cached (0: 4096) */
	unsigned int max_modules; /* ELF files whose symbols are cached (0: 1024) */
	unsigned int idle_rounds; /* drop a process/module unused for this many rounds (0: 10) */
	size_t max_elf_bytes;	  /* ELF symbol tables held at most (0: no bound); least recently used go first */
	const char *proc_root;	  /* "/proc" unless testing */
};

/* Counters for health records and benchmarks. */
struct symbolizer_stats {
	uint64_t lookups;     /* addresses resolved (kernel + user) */
	uint64_t unknown;     /* in no mapping */
	uint64_t module_only; /* in a mapping whose file has no symbol for it */
	uint64_t elf_loads;   /* ELF files read */
	uint64_t maps_loads;  /* /proc/<pid>/maps read */
	uint64_t execs;	      /* cached processes found to have exec'ed (cache invalidated) */
	uint64_t evictions;   /* ELF symbol tables dropped to stay within max_elf_bytes (reloaded when used) */
	unsigned int procs;   /* cached now */
	unsigned int modules; /* cached now */
	size_t mem_bytes;     /* memory held by the caches (symbols, strings, maps) */
};

struct symbolizer;

/* NULL + errno (ENOMEM, EINVAL). */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
/* Accepts NULL. */
void symbolizer__free(struct symbolizer *s);

/*
 * Start a round (one batch of stacks). Each cached process is re-validated the first time it is used
 * in a round (exec detected through /proc/<pid>/exe; a new mapping reloads the maps at most once per
 * round); processes and modules unused for idle_rounds rounds are dropped. Frames returned in earlier
 * rounds become invalid.
 */
void symbolizer__begin_round(struct symbolizer *s);

/* Kernel address. 0, or -ENOENT when kallsyms has nothing below it (ret->kind SYM_UNKNOWN). */
int symbolizer__kernel(struct symbolizer *s, uint64_t ip, struct sym_frame *ret);
/*
 * User address of process tgid (host pid). 0 when a symbol was found; -ENOENT when only the module
 * (ret->name NULL) or nothing (SYM_UNKNOWN) is known; ret is always filled in. A process that has
 * exited keeps its last maps for the rest of the round, so its stacks still resolve.
 */
int symbolizer__user(struct symbolizer *s, uint32_t tgid, uint64_t ip, struct sym_frame *ret);
/* Drop what is cached about tgid (it exited). */
void symbolizer__forget(struct symbolizer *s, uint32_t tgid);
void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret);

#endif
