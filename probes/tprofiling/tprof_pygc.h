/* tprof_pygc.h - python_gc: CPython's gc__start/gc__done USDT probes per Python process in scope (pygc.c). */
#ifndef GG_TPROF_PYGC_H
#define GG_TPROF_PYGC_H

#include <bpf/libbpf.h>
#include <stdint.h>

#include "ctrl_msg.h"

struct tp_pygc;
struct tp_pygc *tp_pygc__new(struct bpf_program *start, struct bpf_program *done);
void tp_pygc__free(struct tp_pygc *g);
/* Attach to the Python processes of the scope (every one found in /proc when scope->all), detach from
 * those that left it or exited; everything detached when !enabled. 0. */
int tp_pygc__sync(struct tp_pygc *g, const struct gg_scope *scope, int enabled);
unsigned int tp_pygc__procs(const struct tp_pygc *g);

#endif
