/* identity.c - container and pod identity of processes: cgroup path layouts of docker, containerd,
 * CRI-O, podman and kubepods; names from the runtimes' state files; a bounded two-level cache
 * (process -> cgroup -> identity) so that a record costs a hash lookup, not a file read. */
#include "identity.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "bolt.h"
#include "meta.h"
#include "lru.h"

#define CGROUP_FILE_MAX	      8192u
#define OCI_CONFIG_MAX	      (4u << 20)  /* an OCI config.json is tens of KiB */
#define STORAGE_LIST_MAX      (16u << 20) /* containers.json: about 1 KiB per container */
#define OCI_LABELS_MAX	      (64u << 10) /* CRI-O's labels JSON string */
#define CONTAINERD_NS_MAX     64u	  /* namespaces looked at for a container of unknown namespace */
#define CACHE_BUCKETS_MIN     64u
#define DEFAULT_MAX_PROCS     16384u
#define DEFAULT_MAX_CGROUPS   4096u
#define DEFAULT_PROC_TTL_MS   5000u
#define DEFAULT_CGROUP_TTL_MS 60000u
#define DEFAULT_RETRY_MS      2000u
#define EPOCH_MIN_MS	      100u /* cgroup events take effect at most this often */

const char *const gg_ident_names[GG_IDENT__COUNT] = {"container_id", "container_name", "container_image", "pod_id",
						     "pod",	     "pod_namespace"};

/* ---- runtime state files ----------------------------------------------------------------------------- */

/* dst = the string value of j when it is a usable label value (valid UTF-8, no control characters, at
 * most GG_IDENT_VALUE_MAX bytes); dst is kept when already set or when j is not usable. */
static void take(char *dst, const cJSON *j)
{
	const char *s = cJSON_GetStringValue(j);
	size_t n;

	if (dst[0] || !s)
		return;
	n = strlen(s);
	if (!n || n > GG_IDENT_VALUE_MAX || !meta_utf8_valid(s, n))
		return;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return;
	}
	memcpy(dst, s, n + 1);
}

static const cJSON *member(const cJSON *o, const char *name)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

static int names_any(const struct gg_ident_names *n)
{
	return n->name[0] || n->image[0] || n->pod[0] || n->pod_ns[0] || n->pod_uid[0];
}

/* Kubernetes labels (dockershim's container labels; CRI-O's annotations carry the same keys). */
static void take_kube_labels(struct gg_ident_names *ret, const cJSON *m)
{
	take(ret->name, member(m, "io.kubernetes.container.name"));
	take(ret->pod, member(m, "io.kubernetes.pod.name"));
	take(ret->pod_ns, member(m, "io.kubernetes.pod.namespace"));
	take(ret->pod_uid, member(m, "io.kubernetes.pod.uid"));
}

/* dst = j when it is a container id (64 hex digits: it names a directory of the runtime's state) */
static void take_id(char *dst, const cJSON *j)
{
	const char *s = cJSON_GetStringValue(j);

	if (dst[0] || !s || strlen(s) != 64)
		return;
	for (int i = 0; i < 64; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return;
	}
	for (int i = 0; i <= 64; i++)
		dst[i] = (char)tolower((unsigned char)s[i]);
}

/* 1 when [s, s+n) is usable as a label key or value: valid UTF-8, no control characters. */
static int label_text_ok(const char *s, size_t n)
{
	if (!meta_utf8_valid(s, n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	}
	return 1;
}

/* A Kubernetes label key is at most 253 (prefix) + 1 + 63 (name) characters. */
#define POD_LABEL_KEY_MAX 317u

/* One label into ret when it is usable and fits (else left out). Always 0: a walk goes on. */
static int pod_label_add(void *ctx, const char *k, size_t kn, const char *v, size_t vn)
{
	struct gg_pod_labels *ret = ctx;

	if (ret->nwant) {
		unsigned int i = 0;

		while (i < ret->nwant && (strlen(ret->want[i]) != kn || memcmp(ret->want[i], k, kn)))
			i++;
		if (i == ret->nwant)
			return 0;
	}
	if (ret->n >= GG_POD_LABELS_MAX || !kn || kn > POD_LABEL_KEY_MAX || vn > GG_IDENT_VALUE_MAX ||
	    memchr(k, '\0', kn) || memchr(v, '\0', vn) || !label_text_ok(k, kn) || !label_text_ok(v, vn) ||
	    ret->len + kn + vn + 2 > sizeof(ret->buf))
		return 0;
	memcpy(ret->buf + ret->len, k, kn);
	ret->len += (uint32_t)kn;
	ret->buf[ret->len++] = '\0';
	memcpy(ret->buf + ret->len, v, vn);
	ret->len += (uint32_t)vn;
	ret->buf[ret->len++] = '\0';
	ret->n++;
	return 0;
}

static int pod_labels_from(const cJSON *obj, struct gg_pod_labels *ret)
{
	const cJSON *e;

	if (!cJSON_IsObject(obj))
		return -ENOENT;
	cJSON_ArrayForEach(e, obj)
	{
		const char *k = e->string, *v = cJSON_GetStringValue(e);

		if (k && v)
			pod_label_add(ret, k, strlen(k), v, strlen(v));
	}
	return ret->n ? 0 : -ENOENT;
}

int gg_ident__containerd_pod_labels(const char *db, const char *ns, const char *sandbox, struct gg_pod_labels *ret)
{
	/* containerd's metadata (metadata/buckets.go): v1/<namespace>/containers/<id>/labels; the CRI
	 * plugin gives the sandbox (pause) container the pod's labels */
	const char *const path[] = {"v1", ns, "containers", sandbox, "labels"};
	int err;

	ret->len = 0;
	ret->n = 0;
	err = gg_bolt__file_bucket_pairs(db, path, 5, GG_POD_LABELS_MAX * 4, pod_label_add, ret);
	if (err)
		return err;
	return ret->n ? 0 : -ENOENT;
}

int gg_ident__parse_pod_labels(const char *json, size_t len, struct gg_pod_labels *ret)
{
	cJSON *root = cJSON_ParseWithLength(json, len), *labels = NULL;
	const char *lj;
	int err;

	ret->len = 0;
	ret->n = 0;
	if (!cJSON_IsObject(root)) {
		err = -EINVAL;
		goto cleanup;
	}
	/* CRI-O: the sandbox's spec keeps the pod's labels as one JSON string (server/sandbox_run_linux.go) */
	lj = cJSON_GetStringValue(member(member(root, "annotations"), "io.kubernetes.cri-o.Labels"));
	if (lj && strlen(lj) <= OCI_LABELS_MAX) {
		labels = cJSON_Parse(lj);
		err = pod_labels_from(labels, ret);
		goto cleanup;
	}
	/* dockershim / cri-dockerd: the sandbox (pause) container's labels are the pod's */
	err = pod_labels_from(member(member(root, "Config"), "Labels"), ret);
cleanup:
	cJSON_Delete(labels);
	cJSON_Delete(root);
	return err;
}

const char *gg_ident__pod_label(const struct gg_ident *id, const char *key, size_t *ret_len)
{
	const char *p = id->pod_labels, *end = p ? p + id->pod_labels_len : NULL;

	while (p && p < end) {
		size_t kn = strlen(p);
		const char *v = p + kn + 1;
		size_t vn = strlen(v);

		if (!strcmp(p, key)) {
			if (ret_len)
				*ret_len = vn;
			return v;
		}
		p = v + vn + 1;
	}
	return NULL;
}

int gg_ident__parse_oci_config(const char *json, size_t len, struct gg_ident_names *ret)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *a;
	int err = 0;

	if (!cJSON_IsObject(root)) {
		err = -EINVAL;
		goto cleanup;
	}
	a = member(root, "annotations");
	if (!cJSON_IsObject(a)) {
		err = -ENOENT;
		goto cleanup;
	}
	/* containerd's CRI plugin (pkg/cri/annotations) */
	take(ret->name, member(a, "io.kubernetes.cri.container-name"));
	take(ret->image, member(a, "io.kubernetes.cri.image-name"));
	take(ret->pod, member(a, "io.kubernetes.cri.sandbox-name"));
	take(ret->pod_ns, member(a, "io.kubernetes.cri.sandbox-namespace"));
	take(ret->pod_uid, member(a, "io.kubernetes.cri.sandbox-uid"));
	take_id(ret->sandbox, member(a, "io.kubernetes.cri.sandbox-id"));
	take_id(ret->sandbox, member(a, "io.kubernetes.cri-o.SandboxID"));
	/* CRI-O (the kubelet's label keys, and its own image annotation) */
	take_kube_labels(ret, a);
	take(ret->image, member(a, "io.kubernetes.cri-o.ImageName"));
	if (!ret->name[0] || !ret->pod[0] || !ret->pod_ns[0]) {
		/* CRI-O also keeps the container's labels as one JSON string */
		const char *lj = cJSON_GetStringValue(member(a, "io.kubernetes.cri-o.Labels"));
		cJSON *labels = lj && strlen(lj) <= OCI_LABELS_MAX ? cJSON_Parse(lj) : NULL;

		take_kube_labels(ret, labels);
		cJSON_Delete(labels);
	}
	/* nerdctl's containers (containerd without Kubernetes) */
	take(ret->name, member(a, "nerdctl/name"));
	if (!names_any(ret))
		err = -ENOENT;
cleanup:
	cJSON_Delete(root);
	return err;
}

int gg_ident__parse_docker_config(const char *json, size_t len, struct gg_ident_names *ret)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *cfg;
	char name[GG_IDENT_VALUE_MAX + 1] = "";
	int err = 0;

	if (!cJSON_IsObject(root)) {
		err = -EINVAL;
		goto cleanup;
	}
	cfg = member(root, "Config");
	/* a dockershim container: the Kubernetes names are labels; Name is k8s_<container>_<pod>_... */
	take_kube_labels(ret, member(cfg, "Labels"));
	take_id(ret->sandbox, member(member(cfg, "Labels"), "io.kubernetes.sandbox.id"));
	take(ret->image, member(cfg, "Image"));
	take(name, member(root, "Name"));
	if (!ret->name[0] && name[0])
		memmove(ret->name, name + (name[0] == '/'), strlen(name + (name[0] == '/')) + 1);
	if (!names_any(ret))
		err = -ENOENT;
cleanup:
	cJSON_Delete(root);
	return err;
}

/* The entry of container id in a parsed containers.json: 0, -EINVAL (not a list), -ENOENT. */
static int storage_find(const cJSON *root, const char *id, struct gg_ident_names *ret)
{
	const cJSON *e;
	cJSON *md;

	if (!cJSON_IsArray(root))
		return -EINVAL;
	cJSON_ArrayForEach(e, root)
	{
		const char *eid = cJSON_GetStringValue(member(e, "id"));
		const char *mds;

		if (!eid || strcmp(eid, id))
			continue;
		/* "metadata" is itself JSON, as a string: podman's {"image-name", "name", ...}; CRI-O's
		 * also "pod-name" */
		mds = cJSON_GetStringValue(member(e, "metadata"));
		md = mds ? cJSON_Parse(mds) : NULL;
		take(ret->name, member(md, "name"));
		take(ret->name, cJSON_GetArrayItem(member(e, "names"), 0));
		take(ret->image, member(md, "image-name"));
		take(ret->pod, member(md, "pod-name"));
		cJSON_Delete(md);
		return names_any(ret) ? 0 : -ENOENT;
	}
	return -ENOENT;
}

int gg_ident__parse_storage_containers(const char *json, size_t len, const char *id, struct gg_ident_names *ret)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	int err = storage_find(root, id, ret);

	cJSON_Delete(root);
	return err;
}

/* ---- the cache ---------------------------------------------------------------------------------------- */

/* One container (or pod) cgroup: its identity. Freed only when no process entry refers to it. */
struct cg_entry {
	struct gg_lru_link lru; /* first member: the list links */
	struct cg_entry *hnext;
	uint64_t hash;
	uint64_t expires_ms;
	unsigned int refs;
	uint64_t retry_ms; /* the next wait while its state cannot be read: doubles, up to cgroup_ttl_ms */
	char *path;
	char *buf; /* the six values, NUL-terminated one after another, then the pod's labels */
	struct gg_ident ident;
	int hashed; /* in the hash table; 0 once its cgroup was removed (kept while processes refer to it) */
};

struct proc_entry {
	struct gg_lru_link lru;
	struct proc_entry *hnext;
	uint32_t tgid;
	uint64_t expires_ms;
	uint64_t epoch;	     /* the cgroup event count when its cgroup was read */
	struct cg_entry *cg; /* NULL: not in a container */
};

/* One watched cgroup directory. */
struct watch {
	struct watch *hnext;
	int wd;
	unsigned int root; /* index into roots */
	char *rel;	   /* path below the mount point, "" for the mount point itself, else "/a/b" */
};

/* One cgroup hierarchy: where it is mounted and which cgroup path its mount point is. */
struct cg_root {
	char *mnt;
	char *root; /* "/" normally */
};

struct gg_identity {
	struct gg_identity_opts o;
	char *strs[6];
	struct proc_entry **pbuckets;
	struct cg_entry **cbuckets;
	size_t npb, ncb; /* powers of two */
	struct gg_lru procs, cgroups;
	struct gg_identity_stats st;
	struct gg_ident_names scratch;
	struct gg_pod_labels plscratch;
	char *want_keys[GG_POD_LABELS_MAX];
	unsigned int nwant_keys;
	/* cgroup events (inotify) */
	int ifd;
	uint64_t epoch;	       /* bumped by the events that may have moved a process */
	int epoch_pending;     /* such an event came after the last bump */
	uint64_t epoch_bumped; /* when the last bump was (ms, the lookups' clock) */
	struct cg_root *roots;
	unsigned int nroots;
	struct watch **wbuckets; /* by wd */
	size_t nwb;
	/* containers.json and volatile-containers.json, parsed once per version of the file: every
	 * podman container would otherwise parse the whole list again */
	struct storage_list {
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime;
		cJSON *root;
	} lists[2];
};

static const struct gg_ident empty_ident = {{"", "", "", "", "", ""}, {0}, NULL, 0};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 29);
}

static size_t tgid_bucket(const struct gg_identity *id, uint32_t tgid)
{
	uint64_t x = tgid * 0x9e3779b97f4a7c15ULL;

	return (size_t)(x >> 32) & (id->npb - 1);
}

static size_t pow2_at_least(size_t n)
{
	size_t p = CACHE_BUCKETS_MIN;

	while (p < n)
		p <<= 1;
	return p;
}

static void watch_start(struct gg_identity *id);
static void watch_stop(struct gg_identity *id);
static void want_keys_clear(struct gg_identity *id);

struct gg_identity *gg_identity__new(const struct gg_identity_opts *o)
{
	struct gg_identity *id = calloc(1, sizeof(*id));
	const char *defaults[6] = {"/proc",
				   "/run/containerd/io.containerd.runtime.v2.task",
				   "/run/containers/storage",
				   "/var/lib/containers/storage",
				   "/var/lib/docker",
				   "/var/lib/containerd"};
	const char *given[6] = {o->proc_root,	o->containerd_dir, o->crio_dir,
				o->storage_dir, o->docker_dir,	   o->containerd_root};

	if (!id)
		return NULL;
	id->o = *o;
	id->ifd = -1;
	for (int i = 0; i < 6; i++) {
		id->strs[i] = strdup(given[i] && given[i][0] ? given[i] : defaults[i]);
		if (!id->strs[i])
			goto err_out;
	}
	id->o.proc_root = id->strs[0];
	id->o.containerd_dir = id->strs[1];
	id->o.crio_dir = id->strs[2];
	id->o.storage_dir = id->strs[3];
	id->o.docker_dir = id->strs[4];
	id->o.containerd_root = id->strs[5];
	if (!id->o.max_procs)
		id->o.max_procs = DEFAULT_MAX_PROCS;
	if (!id->o.max_cgroups)
		id->o.max_cgroups = DEFAULT_MAX_CGROUPS;
	if (!id->o.proc_ttl_ms)
		id->o.proc_ttl_ms = DEFAULT_PROC_TTL_MS;
	if (!id->o.cgroup_ttl_ms)
		id->o.cgroup_ttl_ms = DEFAULT_CGROUP_TTL_MS;
	if (!id->o.retry_ms)
		id->o.retry_ms = DEFAULT_RETRY_MS;
	id->npb = pow2_at_least(id->o.max_procs);
	id->ncb = pow2_at_least(id->o.max_cgroups);
	id->pbuckets = calloc(id->npb, sizeof(*id->pbuckets));
	id->cbuckets = calloc(id->ncb, sizeof(*id->cbuckets));
	if (!id->pbuckets || !id->cbuckets)
		goto err_out;
	if (o->watch)
		watch_start(id); /* without it (no inotify, no cgroupfs): the TTLs alone */
	return id;

err_out:
	gg_identity__free(id);
	errno = ENOMEM;
	return NULL;
}

static void cg_free(void *entry)
{
	struct cg_entry *c = entry;

	free(c->path);
	free(c->buf);
	free(c);
}

void gg_identity__free(struct gg_identity *id)
{
	if (!id)
		return;
	gg_lru__drain(&id->procs, free);
	gg_lru__drain(&id->cgroups, cg_free);
	free(id->pbuckets);
	free(id->cbuckets);
	watch_stop(id);
	want_keys_clear(id);
	for (int i = 0; i < 2; i++)
		cJSON_Delete(id->lists[i].root);
	for (int i = 0; i < 6; i++)
		free(id->strs[i]);
	free(id);
}

const struct gg_identity_stats *gg_identity__stats(const struct gg_identity *id)
{
	struct gg_identity_stats *st = (struct gg_identity_stats *)&id->st;

	st->procs = id->procs.n;
	st->cgroups = id->cgroups.n;
	return st;
}

static void cg_unhash(struct gg_identity *id, struct cg_entry *c)
{
	struct cg_entry **pp = &id->cbuckets[c->hash & (id->ncb - 1)];

	if (!c->hashed)
		return;
	while (*pp != c)
		pp = &(*pp)->hnext;
	*pp = c->hnext;
	c->hashed = 0;
}

static void cg_remove(struct gg_identity *id, struct cg_entry *c)
{
	cg_unhash(id, c);
	gg_lru__unlink(&id->cgroups, &c->lru);
	cg_free(c);
	id->st.evictions++;
}

/* A process no longer refers to c: a cgroup that was removed goes with its last process. */
static void cg_unref(struct gg_identity *id, struct cg_entry *c)
{
	if (!c)
		return;
	c->refs--;
	if (!c->refs && !c->hashed)
		cg_remove(id, c);
}

static void proc_remove(struct gg_identity *id, struct proc_entry *p)
{
	struct proc_entry **pp = &id->pbuckets[tgid_bucket(id, p->tgid)];

	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	gg_lru__unlink(&id->procs, &p->lru);
	cg_unref(id, p->cg);
	free(p);
	id->st.evictions++;
}

/* Make room for one more cgroup: the least recently used one no process refers to goes; when every
 * one is referred to, the least recently used processes go first. */
static void cg_make_room(struct gg_identity *id)
{
	while (id->cgroups.n >= id->o.max_cgroups) {
		struct gg_lru_link *l;

		for (l = id->cgroups.oldest; l && ((struct cg_entry *)l)->refs; l = l->newer)
			;
		if (l) {
			cg_remove(id, (struct cg_entry *)l);
			continue;
		}
		if (!id->procs.oldest)
			return; /* cannot happen: a referenced cgroup has a process */
		proc_remove(id, (struct proc_entry *)id->procs.oldest);
	}
}

/* ---- resolution ---------------------------------------------------------------------------------------- */

static int read_json(struct gg_identity *id, const char *path, size_t max, char **ret, size_t *ret_len)
{
	int err = gg_read_file(path, O_NOCTTY, max, ret, ret_len);

	if (err != -ENOENT)
		id->st.state_reads++;
	if (err && err != -ENOENT && err != -ENOTDIR)
		id->st.state_errors++;
	return err;
}

/* A runtime's state file at path read and parsed by parse (an OCI config.json, docker's config.v2.json). */
static int read_names(struct gg_identity *id, const char *path,
		      int (*parse)(const char *json, size_t len, struct gg_ident_names *ret), struct gg_ident_names *nm)
{
	char *buf;
	size_t len;
	int err = read_json(id, path, OCI_CONFIG_MAX, &buf, &len);

	if (err)
		return err;
	err = parse(buf, len, nm);
	if (err == -EINVAL)
		id->st.state_errors++;
	free(buf);
	return err;
}

static int try_oci(struct gg_identity *id, const char *path, struct gg_ident_names *nm)
{
	return read_names(id, path, gg_ident__parse_oci_config, nm);
}

static int from_containerd(struct gg_identity *id, const struct gg_cgroup_info *ci, struct gg_ident_names *nm)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned int seen = 0;
	DIR *d;
	int err = -ENOENT;

	if (ci->ns[0]) {
		snprintf(path, sizeof(path), "%s/%s/%s/config.json", id->o.containerd_dir, ci->ns, ci->container_id);
		return try_oci(id, path, nm);
	}
	/* Kubernetes' namespace first, then any other */
	snprintf(path, sizeof(path), "%s/k8s.io/%s/config.json", id->o.containerd_dir, ci->container_id);
	if (!try_oci(id, path, nm))
		return 0;
	d = opendir(id->o.containerd_dir);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d)) && seen++ < CONTAINERD_NS_MAX) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "k8s.io"))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s/config.json", id->o.containerd_dir, de->d_name,
			 ci->container_id);
		err = try_oci(id, path, nm);
		if (!err)
			break;
	}
	closedir(d);
	return err;
}

static int from_crio(struct gg_identity *id, const struct gg_cgroup_info *ci, struct gg_ident_names *nm)
{
	char path[PATH_MAX];

	/* CRI-O saves the spec in the run directory (the bundle) and in the persistent one */
	snprintf(path, sizeof(path), "%s/overlay-containers/%s/userdata/config.json", id->o.crio_dir, ci->container_id);
	if (!try_oci(id, path, nm))
		return 0;
	snprintf(path, sizeof(path), "%s/overlay-containers/%s/userdata/config.json", id->o.storage_dir,
		 ci->container_id);
	return try_oci(id, path, nm);
}

static int from_docker(struct gg_identity *id, const struct gg_cgroup_info *ci, struct gg_ident_names *nm)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/containers/%s/config.v2.json", id->o.docker_dir, ci->container_id);
	return read_names(id, path, gg_ident__parse_docker_config, nm);
}

/* The parsed list at path, read again only when the file changed (NULL when absent or bad). */
static const cJSON *storage_list(struct gg_identity *id, struct storage_list *l, const char *path)
{
	struct stat st;
	char *buf;
	size_t len;

	if (stat(path, &st)) {
		cJSON_Delete(l->root);
		l->root = NULL;
		return NULL;
	}
	if (l->root && l->dev == st.st_dev && l->ino == st.st_ino && l->size == st.st_size &&
	    l->mtime.tv_sec == st.st_mtim.tv_sec && l->mtime.tv_nsec == st.st_mtim.tv_nsec)
		return l->root;
	cJSON_Delete(l->root);
	l->root = NULL;
	if (read_json(id, path, STORAGE_LIST_MAX, &buf, &len))
		return NULL;
	l->root = cJSON_ParseWithLength(buf, len);
	free(buf);
	if (!cJSON_IsArray(l->root)) {
		id->st.state_errors++;
		cJSON_Delete(l->root);
		l->root = NULL;
		return NULL;
	}
	/* a list rewritten within one mtime tick keeps its old parse until the next change: podman
	 * rewrites it with a new inode (rename), which is seen */
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	l->size = st.st_size;
	l->mtime = st.st_mtim;
	return l->root;
}

static int from_podman(struct gg_identity *id, const struct gg_cgroup_info *ci, struct gg_ident_names *nm)
{
	static const char *const lists[] = {"containers.json", "volatile-containers.json"};
	char path[PATH_MAX];

	/* the bundle's annotations (a pod of `podman kube play` carries the Kubernetes names) */
	snprintf(path, sizeof(path), "%s/overlay-containers/%s/userdata/config.json", id->o.storage_dir,
		 ci->container_id);
	(void)try_oci(id, path, nm);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const cJSON *root;

		snprintf(path, sizeof(path), "%s/overlay-containers/%s", id->o.storage_dir, lists[i]);
		root = storage_list(id, &id->lists[i], path);
		if (root && !storage_find(root, ci->container_id, nm))
			return 0;
	}
	return names_any(nm) ? 0 : -ENOENT;
}

/* Read the names of a container; 0 when its state was found. */
static int resolve_names(struct gg_identity *id, const struct gg_cgroup_info *ci, struct gg_ident_names *nm)
{
	static int (*const order[])(struct gg_identity *, const struct gg_cgroup_info *,
				    struct gg_ident_names *) = {from_containerd, from_crio, from_docker, from_podman};

	memset(nm, 0, sizeof(*nm));
	switch (ci->rt) {
	case GG_RT_DOCKER:
		return from_docker(id, ci, nm);
	case GG_RT_CONTAINERD:
		return from_containerd(id, ci, nm);
	case GG_RT_CRIO:
		return from_crio(id, ci, nm);
	case GG_RT_PODMAN:
		return from_podman(id, ci, nm);
	case GG_RT_UNKNOWN:
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
			if (!order[i](id, ci, nm))
				return 0;
			memset(nm, 0, sizeof(*nm));
		}
		return -ENOENT;
	default:
		return -ENOENT;
	}
}

/* The labels of the pod whose sandbox is nm->sandbox, into id->plscratch: the sandbox container's labels
 * in containerd's metadata database (no other file of the node has them), CRI-O's sandbox spec (in its
 * run root, else its graph root) or docker's sandbox container (dockershim, cri-dockerd). 0 or -ENOENT. */
static int resolve_pod_labels(struct gg_identity *id, const struct gg_cgroup_info *ci, const struct gg_ident_names *nm)
{
	char path[PATH_MAX], *buf;
	const char *paths[3];
	size_t len;
	unsigned int n = 0;
	int err = -ENOENT;

	id->plscratch.len = 0;
	id->plscratch.n = 0;
	if (!nm->sandbox[0])
		return -ENOENT;
	if (ci->rt == GG_RT_CRIO || ci->rt == GG_RT_UNKNOWN) {
		paths[n++] = id->o.crio_dir;
		paths[n++] = id->o.storage_dir;
	}
	if (ci->rt == GG_RT_DOCKER || ci->rt == GG_RT_UNKNOWN)
		paths[n++] = id->o.docker_dir;
	if (ci->rt == GG_RT_CONTAINERD || ci->rt == GG_RT_UNKNOWN) {
		snprintf(path, sizeof(path), "%s/io.containerd.metadata.v1.bolt/meta.db", id->o.containerd_root);
		err = gg_ident__containerd_pod_labels(path, ci->ns[0] ? ci->ns : "k8s.io", nm->sandbox, &id->plscratch);
		if (err != -ENOENT)
			id->st.pod_label_reads++;
		if (err && err != -ENOENT)
			id->st.state_errors++;
		if (!err)
			return 0;
		id->plscratch.len = 0;
		id->plscratch.n = 0;
		err = -ENOENT;
	}
	for (unsigned int i = 0; i < n && err; i++) {
		if (paths[i] == id->o.docker_dir)
			snprintf(path, sizeof(path), "%s/containers/%s/config.v2.json", paths[i], nm->sandbox);
		else
			snprintf(path, sizeof(path), "%s/overlay-containers/%s/userdata/config.json", paths[i],
				 nm->sandbox);
		if (read_json(id, path, OCI_CONFIG_MAX, &buf, &len))
			continue;
		id->st.pod_label_reads++;
		err = gg_ident__parse_pod_labels(buf, len, &id->plscratch);
		if (err == -EINVAL)
			id->st.state_errors++;
		free(buf);
	}
	return err;
}

/* How long until the next try to read a container's state that could not be read: retry_ms at first
 * (a container just starting), doubling up to cgroup_ttl_ms (a path that looks like a container but
 * that no runtime knows costs a few failed opens per minute, not every 2 s). */
static uint64_t next_retry(const struct gg_identity *id, struct cg_entry *c)
{
	c->retry_ms = c->retry_ms ? c->retry_ms * 2 : id->o.retry_ms;
	if (c->retry_ms > id->o.cgroup_ttl_ms)
		c->retry_ms = id->o.cgroup_ttl_ms;
	return c->retry_ms;
}

/* (Re)compute the identity of cgroup entry c. */
static int cg_resolve(struct gg_identity *id, struct cg_entry *c, uint64_t now_ms)
{
	struct gg_cgroup_info ci;
	struct gg_ident_names *nm = &id->scratch;
	char uid[65];
	const char *vals[GG_IDENT__COUNT];
	size_t lens[GG_IDENT__COUNT], total = 0, off = 0;
	char *buf;
	int found;

	gg_cgroup__parse(c->path, &ci);
	found = ci.container_id[0] ? resolve_names(id, &ci, nm) == 0 : (memset(nm, 0, sizeof(*nm)), 1);
	if (!found && c->buf &&
	    (c->ident.len[GG_IDENT_CONTAINER_NAME] || c->ident.len[GG_IDENT_CONTAINER_IMAGE] ||
	     c->ident.len[GG_IDENT_POD])) {
		/* known before, not readable now (being rewritten, or the container is gone while its
		 * processes still report): the names stay, the next try is soon */
		c->expires_ms = now_ms + next_retry(id, c);
		return 0;
	}
	uid[0] = '\0';
	if (!ci.pod_uid[0] && nm->pod_uid[0] && strlen(nm->pod_uid) < sizeof(uid)) {
		/* the pod's uid from the annotations when the path has none (cgroupfs layouts of some hosts) */
		for (size_t i = 0; nm->pod_uid[i]; i++)
			uid[i] = (char)tolower((unsigned char)nm->pod_uid[i]);
		uid[strlen(nm->pod_uid)] = '\0';
	}
	vals[GG_IDENT_CONTAINER_ID] = ci.container_id;
	vals[GG_IDENT_CONTAINER_NAME] = nm->name;
	vals[GG_IDENT_CONTAINER_IMAGE] = nm->image;
	vals[GG_IDENT_POD_ID] = ci.pod_uid[0] ? ci.pod_uid : uid;
	vals[GG_IDENT_POD] = nm->pod;
	vals[GG_IDENT_POD_NAMESPACE] = nm->pod_ns;
	id->plscratch.want = (const char *const *)id->want_keys;
	id->plscratch.nwant = id->nwant_keys;
	if (!(found && id->nwant_keys && !resolve_pod_labels(id, &ci, nm))) {
		id->plscratch.len = 0;
		id->plscratch.n = 0;
	}
	for (int i = 0; i < GG_IDENT__COUNT; i++) {
		lens[i] = strlen(vals[i]);
		total += lens[i] + 1;
	}
	buf = malloc(total + id->plscratch.len);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < GG_IDENT__COUNT; i++) {
		memcpy(buf + off, vals[i], lens[i] + 1);
		c->ident.v[i] = buf + off;
		c->ident.len[i] = (uint16_t)lens[i];
		off += lens[i] + 1;
	}
	memcpy(buf + off, id->plscratch.buf, id->plscratch.len);
	c->ident.pod_labels = id->plscratch.len ? buf + off : NULL;
	c->ident.pod_labels_len = id->plscratch.len;
	free(c->buf);
	c->buf = buf;
	if (found)
		c->retry_ms = 0;
	c->expires_ms = now_ms + (found ? id->o.cgroup_ttl_ms : next_retry(id, c));
	return 0;
}

/* The entry of a container cgroup path, found or made (NULL when out of memory). */
static struct cg_entry *cg_get(struct gg_identity *id, const char *path, uint64_t now_ms)
{
	uint64_t h = hash_str(path);
	struct cg_entry *c;

	for (c = id->cbuckets[h & (id->ncb - 1)]; c; c = c->hnext) {
		if (c->hash == h && !strcmp(c->path, path))
			break;
	}
	if (c) {
		if (now_ms >= c->expires_ms)
			(void)cg_resolve(id, c, now_ms); /* out of memory: the old values stay */
		gg_lru__touch(&id->cgroups, &c->lru);
		return c;
	}
	cg_make_room(id);
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(path);
	if (!c->path || cg_resolve(id, c, now_ms)) {
		cg_free(c);
		return NULL;
	}
	c->hash = h;
	c->hnext = id->cbuckets[h & (id->ncb - 1)];
	id->cbuckets[h & (id->ncb - 1)] = c;
	c->hashed = 1;
	gg_lru__push(&id->cgroups, &c->lru);
	return c;
}

static const struct gg_ident *ident_of(const struct cg_entry *c)
{
	return c ? &c->ident : &empty_ident;
}

static struct proc_entry *proc_find(struct gg_identity *id, uint32_t tgid)
{
	struct proc_entry *p;

	for (p = id->pbuckets[tgid_bucket(id, tgid)]; p; p = p->hnext) {
		if (p->tgid == tgid)
			return p;
	}
	return NULL;
}

const struct gg_ident *gg_identity__lookup(struct gg_identity *id, uint32_t tgid, uint64_t now_ms)
{
	char path[96], text[CGROUP_FILE_MAX], cgpath[PATH_MAX];
	struct gg_cgroup_info ci;
	struct cg_entry *cg = NULL;
	struct proc_entry *p;
	ssize_t n;

	id->st.lookups++;
	if (!tgid)
		return &empty_ident;
	/* a burst of cgroup events (systemd starting units) costs each process one read of its cgroup per
	 * EPOCH_MIN_MS at most, not one per event */
	if (id->epoch_pending && now_ms - id->epoch_bumped >= EPOCH_MIN_MS) {
		id->epoch++;
		id->epoch_bumped = now_ms;
		id->epoch_pending = 0;
	}
	p = proc_find(id, tgid);
	if (p && now_ms < p->expires_ms && p->epoch == id->epoch) {
		gg_lru__touch(&id->procs, &p->lru);
		if (p->cg && now_ms >= p->cg->expires_ms)
			(void)cg_resolve(id, p->cg, now_ms);
		return ident_of(p->cg);
	}
	snprintf(path, sizeof(path), "%s/%u/cgroup", id->o.proc_root, tgid);
	id->st.proc_reads++;
	n = gg_read_small(path, text, sizeof(text));
	if (n <= 0) {
		/* gone: a process keeps the identity it had for its last records */
		if (p) {
			p->expires_ms = now_ms + id->o.proc_ttl_ms;
			p->epoch = id->epoch;
			gg_lru__touch(&id->procs, &p->lru);
			return ident_of(p->cg);
		}
	} else {
		text[n] = '\0';
		if (!gg_proc_cgroup__path(text, cgpath, sizeof(cgpath), NULL)) {
			gg_cgroup__parse(cgpath, &ci);
			if (ci.rt != GG_RT_NONE || ci.pod_uid[0])
				cg = cg_get(id, cgpath, now_ms);
		}
		p = proc_find(id, tgid); /* making room for the cgroup may have removed it */
	}
	if (!p) {
		if (id->procs.n >= id->o.max_procs)
			proc_remove(id, (struct proc_entry *)id->procs.oldest);
		p = calloc(1, sizeof(*p));
		if (!p)
			return ident_of(cg);
		p->tgid = tgid;
		p->hnext = id->pbuckets[tgid_bucket(id, tgid)];
		id->pbuckets[tgid_bucket(id, tgid)] = p;
		gg_lru__push(&id->procs, &p->lru);
	} else {
		gg_lru__touch(&id->procs, &p->lru);
	}
	if (p->cg != cg) {
		if (cg)
			cg->refs++;
		cg_unref(id, p->cg);
		p->cg = cg;
	}
	p->expires_ms = now_ms + id->o.proc_ttl_ms;
	p->epoch = id->epoch;
	return ident_of(cg);
}

static void want_keys_clear(struct gg_identity *id)
{
	for (unsigned int i = 0; i < id->nwant_keys; i++)
		free(id->want_keys[i]);
	id->nwant_keys = 0;
}

void gg_identity__want_pod_labels(struct gg_identity *id, const char *const *keys, unsigned int n)
{
	unsigned int same = n == id->nwant_keys;

	for (unsigned int i = 0; same && i < n; i++)
		same = !strcmp(keys[i], id->want_keys[i]);
	if (same)
		return;
	want_keys_clear(id);
	for (unsigned int i = 0; i < n && id->nwant_keys < GG_POD_LABELS_MAX; i++) {
		id->want_keys[id->nwant_keys] = strdup(keys[i]);
		if (id->want_keys[id->nwant_keys])
			id->nwant_keys++;
	}
	/* the labels of the containers known already are read again at their next lookup */
	for (struct gg_lru_link *l = id->cgroups.oldest; l; l = l->newer)
		((struct cg_entry *)l)->expires_ms = 0;
}

/* ---- cgroup events ------------------------------------------------------------------------------------ */

#define WATCH_MASK	    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR)
#define DEFAULT_MAX_WATCHES 8192u
#define WATCH_DEPTH_MAX	    32

static struct watch **watch_slot(struct gg_identity *id, int wd)
{
	struct watch **pp = &id->wbuckets[(unsigned int)wd & (id->nwb - 1)];

	while (*pp && (*pp)->wd != wd)
		pp = &(*pp)->hnext;
	return pp;
}

/* Watch directory <root mount><rel> and, below it, every directory (depth-first, bounded). */
static void watch_tree(struct gg_identity *id, unsigned int root, const char *rel, int depth)
{
	char path[PATH_MAX], sub[PATH_MAX];
	struct watch **pp, *w;
	struct dirent *de;
	DIR *d;
	int wd;

	if (depth > WATCH_DEPTH_MAX ||
	    (size_t)snprintf(path, sizeof(path), "%s%s", id->roots[root].mnt, rel) >= sizeof(path))
		return;
	if (id->st.watches >= id->o.max_watches) {
		id->st.watch_overflows++;
		return;
	}
	wd = inotify_add_watch(id->ifd, path, WATCH_MASK);
	if (wd < 0) {
		if (errno == ENOSPC)
			id->st.watch_overflows++;
		return;
	}
	pp = watch_slot(id, wd);
	if (!*pp) { /* a directory watched already (after an overflow) keeps its entry */
		w = calloc(1, sizeof(*w));
		if (!w || !(w->rel = strdup(rel))) {
			free(w);
			inotify_rm_watch(id->ifd, wd);
			return;
		}
		w->wd = wd;
		w->root = root;
		*pp = w;
		id->st.watches++;
	}
	/* directories made before the watch was in place (a pod slice and its container at once) */
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) < sizeof(sub))
			watch_tree(id, root, sub, depth + 1);
	}
	closedir(d);
}

/* The cgroup hierarchies of mountinfo: " - cgroup2 " and " - cgroup " mounts (hybrid hosts have both). */
static void roots_load(struct gg_identity *id, const char *mountinfo)
{
	char *text = NULL, *line, *save = NULL;
	size_t len;

	if (gg_read_file(mountinfo, 0, 1u << 20, &text, &len))
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sep = strstr(line, " - "), *f[5], *save2 = NULL;
		struct cg_root *nr;
		int i;

		if (!sep || (strncmp(sep + 3, "cgroup2 ", 8) && strncmp(sep + 3, "cgroup ", 7)))
			continue;
		*sep = '\0';
		/* fields: id, parent, major:minor, root, mount point */
		for (i = 0; i < 5; i++) {
			f[i] = strtok_r(i ? NULL : line, " ", &save2);
			if (!f[i])
				break;
		}
		if (i < 5 || strchr(f[4], '\\')) /* octal escapes: not a path we can name */
			continue;
		nr = realloc(id->roots, (id->nroots + 1) * sizeof(*nr));
		if (!nr)
			break;
		id->roots = nr;
		nr[id->nroots].mnt = strdup(f[4]);
		nr[id->nroots].root = strdup(f[3]);
		if (!nr[id->nroots].mnt || !nr[id->nroots].root) {
			free(nr[id->nroots].mnt);
			free(nr[id->nroots].root);
			break;
		}
		id->nroots++;
	}
	free(text);
}

static void watch_start(struct gg_identity *id)
{
	if (!id->o.max_watches)
		id->o.max_watches = DEFAULT_MAX_WATCHES;
	id->nwb = pow2_at_least(id->o.max_watches);
	id->wbuckets = calloc(id->nwb, sizeof(*id->wbuckets));
	if (!id->wbuckets)
		return;
	roots_load(id, id->o.mountinfo && id->o.mountinfo[0] ? id->o.mountinfo : "/proc/self/mountinfo");
	if (!id->nroots)
		return;
	id->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (id->ifd < 0)
		return;
	/* the unified hierarchy first: on a hybrid host the v1 ones would use the watches up */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < id->nroots; i++) {
			char path[PATH_MAX];
			struct stat st;
			int v2;

			snprintf(path, sizeof(path), "%s/cgroup.controllers", id->roots[i].mnt);
			v2 = stat(path, &st) == 0;
			if (v2 == !pass)
				watch_tree(id, i, "", 0);
		}
	}
}

static void watch_stop(struct gg_identity *id)
{
	for (size_t i = 0; id->wbuckets && i < id->nwb; i++) {
		struct watch *w, *next;

		for (w = id->wbuckets[i]; w; w = next) {
			next = w->hnext;
			free(w->rel);
			free(w);
		}
	}
	free(id->wbuckets);
	id->wbuckets = NULL;
	for (unsigned int i = 0; i < id->nroots; i++) {
		free(id->roots[i].mnt);
		free(id->roots[i].root);
	}
	free(id->roots);
	id->roots = NULL;
	id->nroots = 0;
	if (id->ifd >= 0)
		close(id->ifd);
	id->ifd = -1;
}

int gg_identity__watch_fd(const struct gg_identity *id)
{
	return id ? id->ifd : -1;
}

/* The cgroup at <w's directory>/<name> was removed: its cached identity is no longer found by path. */
static void cgroup_removed(struct gg_identity *id, const struct watch *w, const char *name)
{
	const char *root = id->roots[w->root].root;
	char path[PATH_MAX];
	struct cg_entry *c;
	uint64_t h;

	if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", strcmp(root, "/") ? root : "", w->rel, name) >=
	    sizeof(path))
		return;
	h = hash_str(path);
	for (c = id->cbuckets[h & (id->ncb - 1)]; c; c = c->hnext) {
		if (c->hash == h && !strcmp(c->path, path))
			break;
	}
	if (!c)
		return;
	cg_unhash(id, c);
	if (!c->refs)
		cg_remove(id, c);
}

/* A write to one of these files moves processes between cgroups (cgroup.events: a v2 cgroup became
 * populated or empty, as when a runtime starts its payload with clone3(CLONE_INTO_CGROUP)). */
static int moves_processes(const char *name)
{
	return !strcmp(name, "cgroup.procs") || !strcmp(name, "cgroup.threads") || !strcmp(name, "tasks") ||
	       !strcmp(name, "cgroup.events");
}

#define MOVED_DIRS_MAX	 64u	      /* directories with moves taken per batch; more: every process */
#define CGROUP_PROCS_MAX (256u << 10) /* bytes of a cgroup.procs read; longer: every process */

/* Processes were moved into w's directory: the cached ones listed in its cgroup.procs read their cgroup
 * again at their next lookup (a process moved elsewhere shows in its new cgroup's cgroup.procs). 0, or
 * -E2BIG when the list could not be read whole (the caller invalidates every process). */
static int moved_into(struct gg_identity *id, const struct watch *w)
{
	char path[PATH_MAX], *text = NULL, *c;
	size_t len;
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s%s/cgroup.procs", id->roots[w->root].mnt, w->rel) >= sizeof(path))
		return -E2BIG;
	err = gg_read_file(path, 0, CGROUP_PROCS_MAX, &text, &len);
	if (err)
		return err == -ENOENT ? 0 : -E2BIG; /* removed since: nobody is in it */
	for (c = text; *c;) {
		char *end;
		unsigned long pid = strtoul(c, &end, 10);
		struct proc_entry *p;

		if (end == c) {
			c++;
			continue;
		}
		p = pid && pid <= UINT32_MAX ? proc_find(id, (uint32_t)pid) : NULL;
		if (p)
			p->expires_ms = 0;
		c = end;
	}
	free(text);
	return 0;
}

int gg_identity__process_events(struct gg_identity *id)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct watch *moved[MOVED_DIRS_MAX];
	unsigned int nmoved = 0;
	int bump = 0, err = 0;

	if (!id || id->ifd < 0)
		return -EBADF;
	for (;;) {
		ssize_t n = read(id->ifd, buf, sizeof(buf));
		const char *p;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (errno != EAGAIN)
				err = -errno;
			break;
		}
		if (n == 0)
			break;
		for (p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			struct watch **pp, *w;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				/* events were lost: every process reads its cgroup again, new directories
				 * are found by walking the hierarchies again */
				id->st.watch_overflows++;
				bump = 1;
				for (unsigned int i = 0; i < id->nroots; i++)
					watch_tree(id, i, "", 0);
				continue;
			}
			pp = watch_slot(id, ev->wd);
			w = *pp;
			if (!w)
				continue;
			if (ev->mask & IN_IGNORED) { /* the directory is gone (or its watch was removed) */
				for (unsigned int i = 0; i < nmoved; i++) {
					if (moved[i] == w)
						moved[i--] = moved[--nmoved];
				}
				*pp = w->hnext;
				free(w->rel);
				free(w);
				id->st.watches--;
				continue;
			}
			if (!ev->len)
				continue;
			/* a cgroup made holds no process yet, one removed none any more: the moves in and
			 * out are writes to cgroup.procs files, seen below */
			if (ev->mask & IN_ISDIR) {
				if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
					char sub[PATH_MAX];

					if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", w->rel, ev->name) < sizeof(sub))
						watch_tree(id, w->root, sub, 1);
				} else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
					cgroup_removed(id, w, ev->name);
				}
				id->st.cgroup_events++;
			} else if ((ev->mask & IN_MODIFY) && moves_processes(ev->name)) {
				unsigned int i = 0;

				id->st.cgroup_events++;
				while (i < nmoved && moved[i] != w)
					i++;
				if (i == nmoved && nmoved < MOVED_DIRS_MAX)
					moved[nmoved++] = w;
				else if (i == nmoved)
					bump = 1;
			}
		}
	}
	/* after the batch, once per directory (a directory gone since was taken out of the list) */
	for (unsigned int i = 0; i < nmoved && !bump; i++) {
		if (moved_into(id, moved[i]))
			bump = 1;
	}
	if (bump)
		id->epoch_pending = 1;
	return err;
}
