/* snoopers.h - monitoring targets (process ids, process names, container ids, pod ids) resolved to
 * the process ids and cgroup v2 ids a probe filters on, by one bounded scan of /proc. */
#ifndef GG_SNOOPERS_H
#define GG_SNOOPERS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "ctrl_msg.h" /* struct gg_scope: what a probe is told to monitor */
#include "identity.h" /* cgroup path layouts */
#include "validate.h"

/* Resolved per probe, as many as the probes' BPF scope maps hold; more are dropped and flagged. */
#define GG_SCOPE_PIDS_MAX    ((unsigned int)GG_SCOPE_TGID_MAX)
#define GG_SCOPE_CGROUPS_MAX ((unsigned int)GG_SCOPE_CGRP_MAX)
#define GG_SCAN_PROCS_MAX    65536u /* /proc entries looked at per scan */
#define GG_SCAN_SETS_MAX     64u    /* snooper sets resolved by one scan */

/* One probe's targets, from the normalized REST "snoopers" object. */
struct gg_snoopers {
	unsigned int npids;
	uint32_t pids[GG_REST_PROC_IDS_MAX];
	unsigned int nnames;
	struct {
		char comm[GG_REST_COMM_RE_MAX + 1];    /* POSIX ERE, unanchored (gg_comm_pattern__check) */
		char cmdline[GG_REST_CMDLINE_MAX + 1]; /* substring of the command line; "" = any */
	} names[GG_REST_PROC_NAMES_MAX];
	unsigned int npods;
	char pods[GG_REST_PODS_MAX][68]; /* lower case, '-' separated, without a "pod" prefix */
	unsigned int nconts;
	char conts[GG_REST_CONTAINERS_MAX][68]; /* lower case */
	unsigned int ncnames;
	char cnames[GG_REST_CONTAINERS_MAX][GG_REST_CONTAINER_NAME_MAX + 1]; /* substrings of container names */
};

struct gg_scan_opts {
	const char *proc_root;	 /* NULL: "/proc" */
	const char *cgroup_root; /* NULL: where cgroup2 is mounted (gg_cgroup2_mount) */
	/* The name of the container of process pid ("" or NULL when unknown): the identity resolver's
	 * (container_name snoopers match nothing without it). */
	const char *(*container_name)(void *ctx, uint32_t pid);
	void *ctx;
	/* exclude[i] (NULL, or NULL entries: none): a blacklist for sets[i]. What it matches is left out:
	 * its processes, and the cgroup ids of the cgroups they are in (the other processes of such a
	 * cgroup are listed by pid). With an empty sets[i], every other process is listed by pid. */
	const struct gg_snoopers *const *exclude;
};

/* The mount point of the cgroup v2 (unified) hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on
 * hybrid systems; cgroup ids are the inode numbers of its directories. 0 or negative errno. */
int gg_cgroup2_mount(char *ret, size_t len);

struct gg_scan_stats {
	unsigned int procs; /* processes looked at */
	unsigned int files; /* files read */
	int truncated;	    /* stopped at GG_SCAN_PROCS_MAX */
};

/* From a normalized "snoopers" object (see gg_rest_conf__check); NULL gives no targets. */
void gg_snoopers__from_json(const cJSON *snoopers, struct gg_snoopers *ret);
int gg_snoopers__empty(const struct gg_snoopers *s);
int gg_snoopers__needs_scan(const struct gg_snoopers *s);

/* Resolve n (<= GG_SCAN_SETS_MAX) target sets in one scan: scopes[i] receives sets[i]'s (sorted). 0 or negative errno
 * (the scopes are then left as they were). */
int gg_snoopers__resolve(const struct gg_snoopers *const *sets, unsigned int n, struct gg_scope *scopes,
			 const struct gg_scan_opts *opts, struct gg_scan_stats *ret_stats);

/* 1 when comm matches pattern (a POSIX ERE anywhere in comm, compiled once and kept in a small cache;
 * a pattern that does not compile matches nothing). */
int gg_comm__match(const char *pattern, const char *comm);
/* Frees the compiled patterns (at exit; the cache refills on use). */
void gg_comm__cache_clear(void);

#endif
