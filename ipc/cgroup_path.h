/* cgroup_path.h - what a cgroup path names: container id, pod UID and runtime (docker, containerd,
 * CRI-O, podman, kubepods layouts), and which path of /proc/<pid>/cgroup to look at. Pure string
 * parsing, for the supervisor and the probes alike. */
#ifndef GG_CGROUP_PATH_H
#define GG_CGROUP_PATH_H

#include <stddef.h>

/* The container id (64 hex digits, lower case) a cgroup path names: docker (docker-<id>.scope,
 * /docker/<id>), containerd (cri-containerd-<id>.scope, /kubepods/.../<id>), CRI-O (crio-<id>.scope),
 * podman (libpod-<id>.scope[/container]); conmon cgroups name none. The component nearest the leaf
 * wins. 0, -ENOENT, or -EINVAL when len < 65. */
int gg_cgroup__container_id(const char *path, char *ret, size_t len);
/* The same, and the path component [*ret_cs, *ret_ce) holding the id (either may be NULL). */
int gg_cgroup__container_id_at(const char *path, char *ret, size_t len, const char **ret_cs, const char **ret_ce);
/* The pod UID a kubepods cgroup path names (pod<uid> or kubepods-<qos>-pod<uid_with_underscores>.slice),
 * lower case with '-' separators. 0, or -ENOENT. */
int gg_cgroup__pod_uid(const char *path, char *ret, size_t len);

/* Which runtime a cgroup path's layout belongs to. */
enum gg_runtime {
	GG_RT_NONE = 0,	  /* no container */
	GG_RT_DOCKER,	  /* docker-<id>.scope, /docker/<id> */
	GG_RT_CONTAINERD, /* cri-containerd-<id>.scope, /<namespace>/<id> */
	GG_RT_CRIO,	  /* crio-<id>.scope, /crio-<id> */
	GG_RT_PODMAN,	  /* libpod-<id>.scope[/container], /libpod_parent/libpod-<id> */
	GG_RT_UNKNOWN,	  /* a bare <id> (kubepods with the cgroupfs driver): any runtime */
};
const char *gg_runtime__str(enum gg_runtime rt);

/* What a cgroup path says about a process. */
struct gg_cgroup_info {
	enum gg_runtime rt;
	char container_id[65]; /* 64 hex digits, lower case; "" outside containers */
	char pod_uid[65];      /* lower case, '-' separated; "" outside pods */
	char ns[64];	       /* containerd namespace of a /<namespace>/<id> path, else "" */
};

/* Container id, pod uid and runtime of a path. 0 (ret->rt is GG_RT_NONE outside containers). */
int gg_cgroup__parse(const char *path, struct gg_cgroup_info *ret);
/* From the text of /proc/<pid>/cgroup (v1 "N:controllers:/path" lines, v2 "0::/path"): the path that
 * names a container or pod (the v2 line first, then the v1 lines in order), else the v2 path, else the
 * first path. *ret_v2 (may be NULL) says whether it is the v2 line. 0, -ENOENT, -ENAMETOOLONG. */
int gg_proc_cgroup__path(const char *text, char *ret, size_t len, int *ret_v2);

#endif
