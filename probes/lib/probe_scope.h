/* probe_scope.h - a probe's scope (struct gg_scope, ipc/ctrl_msg.h): --pid and --comm on the command
 * line, and writing it into the gg_scope_* filter maps of the probe's BPF object. */
#ifndef GG_PROBE_SCOPE_H
#define GG_PROBE_SCOPE_H

#include <bpf/libbpf.h>

#include "ctrl_msg.h"

/* Parse a "PID[,PID...]" list into s (clears all). 0, -EINVAL or -E2BIG. */
int gg_scope__add_pids(struct gg_scope *s, const char *list);
/* Add every process whose /proc/<pid>/comm equals comm (clears all). Returns how many were added
 * (0 is fine: the process may start later; rescan), or -E2BIG. */
int gg_scope__add_comm(struct gg_scope *s, const char *comm);
/*
 * --comm standalone, rescanned as processes come and go: *ret = base (its --pid tgids kept or not) plus
 * the processes named comm now. 1 when that differs from cur, 0 when not, negative errno (logged).
 */
int gg_scope__rescan_comm(const struct gg_scope *base, int keep_pids, const char *comm, const struct gg_scope *cur,
			  struct gg_scope *ret);
/*
 * Write s into obj's gg_scope_* maps (an object that includes gg_common.bpf.h), replacing what was
 * there; entries are added before the filter goes on and removed after it goes off, so no in-scope
 * event is dropped during the update. 0, -ENOENT (maps missing) or negative errno.
 */
int gg_scope__apply(const struct gg_scope *s, struct bpf_object *obj);

#endif
