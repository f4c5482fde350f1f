/* identity.h - the container and Kubernetes identity of a process (container_id, container_name,
 * container_image, pod_id, pod, pod_namespace): its cgroup path names the container and the pod, the
 * container runtimes' own state files name them. One resolver, cached per process and per cgroup, for
 * every series, event and message the supervisor exports. */
#ifndef GG_IDENTITY_H
#define GG_IDENTITY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cgroup_path.h"

/* The labels, in this order everywhere (gala-gopher's names). */
enum gg_ident_field {
	GG_IDENT_CONTAINER_ID = 0,
	GG_IDENT_CONTAINER_NAME,
	GG_IDENT_CONTAINER_IMAGE,
	GG_IDENT_POD_ID,
	GG_IDENT_POD,
	GG_IDENT_POD_NAMESPACE,
	GG_IDENT__COUNT,
};
extern const char *const gg_ident_names[GG_IDENT__COUNT];

/* 1 when [name, name+len) is one of the identity labels (inline: the event renderer is also built
 * alone, into the export fuzzer). */
static inline int gg_ident__is_label(const char *name, size_t len)
{
	static const char *const names[GG_IDENT__COUNT] = {
		"container_id", "container_name", "container_image", "pod_id", "pod", "pod_namespace"};

	for (int i = 0; i < GG_IDENT__COUNT; i++) {
		if (strlen(names[i]) == len && !memcmp(names[i], name, len))
			return 1;
	}
	return 0;
}

#define GG_IDENT_VALUE_MAX 1024u /* a label value longer than this is left empty (the imdb's label limit) */

/* One identity: every value NUL-terminated, "" when unknown. */
struct gg_ident {
	const char *v[GG_IDENT__COUNT];
	uint16_t len[GG_IDENT__COUNT];
};

/* The cgroup path parsers (container id, pod UID, runtime, the path of /proc/<pid>/cgroup): ipc/cgroup_path.h. */

/* ---- runtime state files ----------------------------------------------------------------------------- */

/* Values read from one state file; "" when absent. */
struct gg_ident_names {
	char name[GG_IDENT_VALUE_MAX + 1];
	char image[GG_IDENT_VALUE_MAX + 1];
	char pod[GG_IDENT_VALUE_MAX + 1];
	char pod_ns[GG_IDENT_VALUE_MAX + 1];
	char pod_uid[GG_IDENT_VALUE_MAX + 1];
};

/* An OCI bundle config.json: the annotations containerd's CRI plugin (io.kubernetes.cri.*) and CRI-O
 * (io.kubernetes.pod.*, io.kubernetes.container.name, io.kubernetes.cri-o.ImageName) write. Fields
 * already set in ret are kept. 0, -EINVAL (not JSON, not an object) or -ENOENT (no annotations). */
int gg_ident__parse_oci_config(const char *json, size_t len, struct gg_ident_names *ret);
/* docker's containers/<id>/config.v2.json: Name, Config.Image, Config.Labels (io.kubernetes.* for
 * dockershim). 0, -EINVAL, -ENOENT. */
int gg_ident__parse_docker_config(const char *json, size_t len, struct gg_ident_names *ret);
/* containers/storage's overlay-containers/containers.json (podman, CRI-O): the entry of container id
 * (names[0], metadata's "image-name", "name", "pod-name"). 0, -EINVAL, -ENOENT (not listed). */
int gg_ident__parse_storage_containers(const char *json, size_t len, const char *id, struct gg_ident_names *ret);

/* ---- the resolver ------------------------------------------------------------------------------------ */

struct gg_identity_opts {
	const char *proc_root;	    /* "/proc" */
	const char *containerd_dir; /* "/run/containerd/io.containerd.runtime.v2.task": <ns>/<id>/config.json */
	const char *crio_dir;	    /* "/run/containers/storage": overlay-containers/<id>/userdata/config.json */
	const char *storage_dir;    /* "/var/lib/containers/storage": podman's (and CRI-O's) container storage */
	const char *docker_dir;	    /* "/var/lib/docker": containers/<id>/config.v2.json */
	unsigned int max_procs;	    /* processes cached; the least recently used go first */
	unsigned int max_cgroups;   /* container cgroups cached */
	uint64_t proc_ttl_ms;	    /* a process's cgroup is read again after this long */
	uint64_t cgroup_ttl_ms;	    /* a container's names are read again after this long */
	uint64_t retry_ms;	    /* ... or after this long while its state files are not (yet) there, doubling */
};

struct gg_identity_stats {
	uint64_t lookups;
	uint64_t proc_reads;  /* /proc/<pid>/cgroup reads (cache misses and refreshes) */
	uint64_t state_reads; /* runtime state files read */
	uint64_t state_errors;
	uint64_t evictions;
	unsigned int procs, cgroups; /* entries cached */
};

struct gg_identity;

/* NULL + errno. Strings are copied. */
struct gg_identity *gg_identity__new(const struct gg_identity_opts *o);
void gg_identity__free(struct gg_identity *id);
/* The identity of process tgid (every value "" outside containers, for tgid 0, or for a process that is
 * gone). Never NULL; valid until the next call. */
const struct gg_ident *gg_identity__lookup(struct gg_identity *id, uint32_t tgid, uint64_t now_ms);
const struct gg_identity_stats *gg_identity__stats(const struct gg_identity *id);

#endif
