/* identity.h - the container and Kubernetes identity of a process (container_id, container_name,
 * container_image, pod_id, pod, pod_namespace): its cgroup path names the container and the pod, the
 * container runtimes' own state files name them. One resolver, cached per process and per cgroup, for
 * every series, event and message the supervisor exports. */
#ifndef GG_IDENTITY_H
#define GG_IDENTITY_H

#include <errno.h>
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

/* The label name a pod label key is exported as: itself when it is a Prometheus label name, else with
 * every character outside [A-Za-z0-9_] made '_' (app.kubernetes.io/name -> app_kubernetes_io_name, as
 * Prometheus' own Kubernetes discovery names them), '_' first when it starts with a digit. 0, or
 * -ENAMETOOLONG when it does not fit len (inline: the REST validator is built alone into a fuzzer). */
static inline int gg_pod_label__name(const char *key, char *ret, size_t len)
{
	size_t n = 0;

	if (key[0] >= '0' && key[0] <= '9') {
		if (len < 2)
			return -ENAMETOOLONG;
		ret[n++] = '_';
	}
	for (; *key; key++) {
		char c = *key;

		if (n + 1 >= len)
			return -ENAMETOOLONG;
		ret[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
	}
	if (!len)
		return -ENAMETOOLONG;
	ret[n] = '\0';
	return 0;
}

#define GG_IDENT_VALUE_MAX 1024u /* a label value longer than this is left empty (the imdb's label limit) */

#define GG_POD_LABELS_MAX   64u		/* labels kept per pod (more are left out) */
#define GG_POD_LABELS_BYTES (16u << 10) /* their keys and values together */

/* One identity: every value NUL-terminated, "" when unknown. */
struct gg_ident {
	const char *v[GG_IDENT__COUNT];
	uint16_t len[GG_IDENT__COUNT];
	/* the labels of the pod (from its sandbox's state, when the runtime keeps them on disk and they
	 * were asked for: gg_identity__want_pod_labels): "key\0value\0" pairs; NULL when unknown */
	const char *pod_labels;
	uint32_t pod_labels_len;
};

/* The value of the pod label key of an identity (NUL-terminated); NULL when the pod has no such label
 * or its labels are unknown. */
const char *gg_ident__pod_label(const struct gg_ident *id, const char *key, size_t *ret_len);

/* The cgroup path parsers (container id, pod UID, runtime, the path of /proc/<pid>/cgroup): ipc/cgroup_path.h. */

/* ---- runtime state files ----------------------------------------------------------------------------- */

/* Values read from one state file; "" when absent. */
struct gg_ident_names {
	char name[GG_IDENT_VALUE_MAX + 1];
	char image[GG_IDENT_VALUE_MAX + 1];
	char pod[GG_IDENT_VALUE_MAX + 1];
	char pod_ns[GG_IDENT_VALUE_MAX + 1];
	char pod_uid[GG_IDENT_VALUE_MAX + 1];
	char sandbox[65]; /* the pod sandbox's container id (64 hex digits), "" when not named */
};

/* The labels of a pod: "key\0value\0" pairs. */
struct gg_pod_labels {
	char buf[GG_POD_LABELS_BYTES];
	uint32_t len;
	unsigned int n;
	/* set by the caller: only these keys are kept (nwant 0: every key, up to the bounds) */
	const char *const *want;
	unsigned int nwant;
};

/* An OCI bundle config.json: the annotations containerd's CRI plugin (io.kubernetes.cri.*) and CRI-O
 * (io.kubernetes.pod.*, io.kubernetes.container.name, io.kubernetes.cri-o.ImageName) write. Fields
 * already set in ret are kept. 0, -EINVAL (not JSON, not an object) or -ENOENT (no annotations). */
int gg_ident__parse_oci_config(const char *json, size_t len, struct gg_ident_names *ret);
/* docker's containers/<id>/config.v2.json: Name, Config.Image, Config.Labels (io.kubernetes.* for
 * dockershim). 0, -EINVAL, -ENOENT. */
int gg_ident__parse_docker_config(const char *json, size_t len, struct gg_ident_names *ret);
/* The pod's labels from its sandbox's state file: CRI-O's sandbox config.json (annotation
 * io.kubernetes.cri-o.Labels, a JSON object written as a string) or the sandbox container's
 * config.v2.json of docker with dockershim or cri-dockerd (Config.Labels). Labels whose key or value is
 * not a usable label value, and those past GG_POD_LABELS_MAX or GG_POD_LABELS_BYTES, are left out.
 * 0, -EINVAL (not a JSON object), -ENOENT (no labels). */
int gg_ident__parse_pod_labels(const char *json, size_t len, struct gg_pod_labels *ret);
/* The pod labels containerd keeps (for the CRI plugin's pods): the labels of the sandbox container in
 * its metadata database db (bbolt), v1/<ns>/containers/<sandbox>/labels. 0, -ENOENT, or an error of the
 * database's reading (bolt.h). */
int gg_ident__containerd_pod_labels(const char *db, const char *ns, const char *sandbox, struct gg_pod_labels *ret);
/* containers/storage's overlay-containers/containers.json (podman, CRI-O): the entry of container id
 * (names[0], metadata's "image-name", "name", "pod-name"). 0, -EINVAL, -ENOENT (not listed). */
int gg_ident__parse_storage_containers(const char *json, size_t len, const char *id, struct gg_ident_names *ret);

/* ---- the resolver ------------------------------------------------------------------------------------ */

struct gg_identity_opts {
	const char *proc_root;	     /* "/proc" */
	const char *containerd_dir;  /* "/run/containerd/io.containerd.runtime.v2.task": <ns>/<id>/config.json */
	const char *crio_dir;	     /* "/run/containers/storage": overlay-containers/<id>/userdata/config.json */
	const char *storage_dir;     /* "/var/lib/containers/storage": podman's (and CRI-O's) container storage */
	const char *docker_dir;	     /* "/var/lib/docker": containers/<id>/config.v2.json */
	const char *containerd_root; /* "/var/lib/containerd": io.containerd.metadata.v1.bolt/meta.db */
	unsigned int max_procs;	     /* processes cached; the least recently used go first */
	unsigned int max_cgroups;    /* container cgroups cached */
	uint64_t proc_ttl_ms;	     /* a process's cgroup is read again after this long */
	uint64_t cgroup_ttl_ms;	     /* a container's names are read again after this long */
	uint64_t retry_ms;	     /* ... or after this long while its state files are not (yet) there, doubling */
	int watch;		     /* follow cgroup creation and removal with inotify (gg_identity__watch_fd) */
	unsigned int max_watches;    /* cgroup directories watched at most; past it the TTLs alone */
	const char *mountinfo;	     /* "/proc/self/mountinfo": where the cgroup hierarchies are mounted */
};

struct gg_identity_stats {
	uint64_t lookups;
	uint64_t proc_reads;  /* /proc/<pid>/cgroup reads (cache misses and refreshes) */
	uint64_t state_reads; /* runtime state files read */
	uint64_t state_errors;
	uint64_t evictions;
	unsigned int procs, cgroups; /* entries cached */
	unsigned int watches;	     /* cgroup directories watched */
	uint64_t cgroup_events;	     /* cgroups created or removed, processes moved (inotify) */
	uint64_t watch_overflows;    /* inotify queue overflows, or directories not watched (limit) */
	uint64_t pod_label_reads;    /* sandbox state files read for pod labels */
};

struct gg_identity;

/* NULL + errno. Strings are copied. */
struct gg_identity *gg_identity__new(const struct gg_identity_opts *o);
void gg_identity__free(struct gg_identity *id);
/* The identity of process tgid (every value "" outside containers, for tgid 0, or for a process that is
 * gone). Never NULL; valid until the next call. */
const struct gg_ident *gg_identity__lookup(struct gg_identity *id, uint32_t tgid, uint64_t now_ms);
const struct gg_identity_stats *gg_identity__stats(const struct gg_identity *id);
/* Read these labels of the pods from now on (n 0: none, the default; reading them costs one more state
 * file per pod). At most GG_POD_LABELS_MAX keys (more are left out); the keys are copied. */
void gg_identity__want_pod_labels(struct gg_identity *id, const char *const *keys, unsigned int n);

/* The inotify descriptor to poll when opts.watch was set (readable: gg_identity__process_events), or
 * -1. Every cgroup hierarchy of mountinfo is watched, directory by directory, up to max_watches. */
int gg_identity__watch_fd(const struct gg_identity *id);
/* Take the pending cgroup events: new directories are watched, a removed cgroup's cached identity is
 * dropped, and after a write to a cgroup's cgroup.procs (tasks, cgroup.threads; or a v2 cgroup.events
 * change) the cached processes its cgroup.procs lists read their cgroup again at their next lookup.
 * When that cannot be known (an inotify overflow, more than 64 such cgroups in one batch, a list over
 * 256 KiB) every cached process does, at most once per 100 ms. 0 or a negative errno. */
int gg_identity__process_events(struct gg_identity *id);

#endif
