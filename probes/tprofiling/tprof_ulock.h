/* tprof_ulock.h - pthread_sync and mem_glibc: uprobes on libc's lock and allocator functions, attached
 * per process in scope (ulock.c). */
#ifndef GG_TPROF_ULOCK_H
#define GG_TPROF_ULOCK_H

#include <bpf/libbpf.h>
#include <stdint.h>

#include "ctrl_msg.h"
#include "tprof.h"
#include "uproc.h"

/* Processes with their own uprobes at most (the rest of a larger scope is skipped, counted). */
#define TP_ULOCK_MAX_PROCS 256u

struct tp_ulock;
/* Before the programs are loaded: multi-uprobe links where the kernel has them (uproc_prefer_multi). */
int tp_ulock__prepare(struct bpf_program *enter, struct bpf_program *exit);
struct tp_ulock *tp_ulock__new(struct bpf_program *enter, struct bpf_program *exit);
void tp_ulock__free(struct tp_ulock *u);
/* Which functions: pthread_sync's, mem_glibc's. */
#define TP_ULOCK_SYNC 0x1u
#define TP_ULOCK_MEM  0x2u
/* Attach the functions of want (TP_ULOCK_* bits) to every process of the scope (system-wide per libc
 * file when scope->all), detach from those that left it or exited; everything detached when want is 0. */
int tp_ulock__sync(struct tp_ulock *u, const struct gg_scope *scope, unsigned int want);
/* links, procs (or libc files, system-wide), skipped (left out at the last sync), attach_errors. */
void tp_ulock__stats(const struct tp_ulock *u, struct uproc_stats *ret);

#endif
