/* probe_scope.h - a probe's scope (struct gg_scope, ipc/ctrl_msg.h): --pid and --comm on the command
 * line, and writing it into the gg_scope_* filter maps of the probe's BPF object. */
#ifndef GG_PROBE_SCOPE_H
#define GG_PROBE_SCOPE_H

#include <bpf/libbpf.h>

#include "ctrl_msg.h"
#include "probe.h"

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
 * gg_scope__rescan_comm (without base's --pid tgids) for a probe whose --comm holds until the supervisor
 * sends a scope (live): the scope to put in force in place of cur (valid until the next call), or NULL
 * when there is no comm, live is set, nothing changed or the rescan failed.
 */
const struct gg_scope *gg_scope__comm_update(const struct gg_scope *base, const char *comm, int live,
					     const struct gg_scope *cur);
/* Where cgroup2 is mounted (the first cgroup2 line of /proc/self/mounts, found once; /sys/fs/cgroup when
 * it cannot be told). */
const char *gg_cgroup2_root(void);
/*
 * Whether process pid is in s, as user space tells it: s->all, one of its tgids, its comm (the first line
 * of <proc_root>/<pid>/comm) equal to comm when comm is not NULL, or its cgroup v2 (or an ancestor) one of
 * s's cgroups: a cgroup v2 id is the inode number of its directory under the cgroup2 mount, as the BPF
 * filter sees it. buf keeps <proc_root>/<pid>/cgroup's text between calls (probe_buf__free it).
 */
int gg_scope__has_process(const struct gg_scope *s, const char *comm, const char *proc_root, int pid,
			  struct probe_buf *buf);
/*
 * Write s into obj's gg_scope_* maps (an object that includes gg_common.bpf.h), replacing what was
 * there; entries are added before the filter goes on and removed after it goes off, so no in-scope
 * event is dropped during the update. 0, -ENOENT (maps missing) or negative errno.
 */
int gg_scope__apply(const struct gg_scope *s, struct bpf_object *obj);

#endif
