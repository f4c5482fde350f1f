/* cglimits.h - hard limits per probe: memory, CPU and pids of each probe in a cgroup of its own. */
#ifndef GG_CGLIMITS_H
#define GG_CGLIMITS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h" /* struct gg_limits */

enum { GG_CG_MEM = 0, GG_CG_CPU, GG_CG_PIDS, GG_CG__N };

struct gg_cglimits {
	char base[GG_CG__N][PATH_MAX]; /* the supervisor's directory per controller; "" when unavailable */
	int v2[GG_CG__N];
	int available; /* controllers in use */
};

/* Find each controller (v1 hierarchy, else cgroup v2) and make <own cgroup>/<prefix><pid> in it, after
 * removing those of supervisors that are gone. 0, or -ENOENT when none can be used (logged per
 * controller). */
int gg_cglimits__init(struct gg_cglimits *cg, const char *prefix);
/* Make the probe's cgroups and write lim; procs gets the ':' separated cgroup.procs files the probe
 * joins (gg_cglimits__join). 0, or the last negative errno (what could be set is set). */
int gg_cglimits__prepare(const struct gg_cglimits *cg, const char *probe, const struct gg_limits *lim, char *procs,
			 size_t len);
/* In the child, before exec: move this process into every cgroup.procs of procs. 0 or negative errno. */
int gg_cglimits__join(const char *procs);
/* OOM kills within the probe's memory cgroup since it was made (memory.oom_control / memory.events). */
uint64_t gg_cglimits__oom_kills(const struct gg_cglimits *cg, const char *probe);
/* Remove the probes' cgroups and the supervisor's directories (those still holding a process stay). */
void gg_cglimits__cleanup(const struct gg_cglimits *cg, const char *const *probes, unsigned int n);

#endif
