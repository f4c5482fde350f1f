/* cgroup_path.h - what a cgroup path names: container id and pod UID (docker, containerd, CRI-O,
 * podman, kubepods layouts). Pure string parsing, for the supervisor and the probes alike. */
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

#endif
