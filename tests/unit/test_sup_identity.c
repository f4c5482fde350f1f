/* test_sup_identity.c - unit tests of the container and pod identity: cgroup path layouts (v1 and v2,
 * every runtime and kubepods driver), /proc/<pid>/cgroup selection, the runtime state readers with bad
 * input, the cache (hits, refresh, bounds) against a fake /proc and state directories, the exported
 * table and record, and events labelled with a tgid. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "unit.h"

#include "../../supervisor/export/events.h"
#include "../../supervisor/export/ident_export.h"
#include "../../supervisor/bolt.h"
#include "../../supervisor/identity.h"
#include "test_sup_fixture.h"
#include "test_tmpdir.h"

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define ID_C "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
#define ID_D "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0"
#define ID_E "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0"
#define ID_F "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1"
#define UID  "1a2b3c4d-0000-1111-2222-333344445555"
#define UID_ "1a2b3c4d_0000_1111_2222_333344445555"

/* ---- cgroup paths ------------------------------------------------------------------------------------ */

static void expect_path(const char *path, enum gg_runtime rt, const char *id, const char *uid, const char *ns)
{
	struct gg_cgroup_info ci;

	assert_int_equal(gg_cgroup__parse(path, &ci), 0);
	if (ci.rt != rt || strcmp(ci.container_id, id) || strcmp(ci.pod_uid, uid) || strcmp(ci.ns, ns))
		fail_msg("%s: got %s/%s/%s/%s", path, gg_runtime__str(ci.rt), ci.container_id, ci.pod_uid, ci.ns);
}

GG_TEST(test_layouts)
{
	/* cgroup v2 and v1 with the systemd driver */
	expect_path("/system.slice/docker-" ID_A ".scope", GG_RT_DOCKER, ID_A, "", "");
	expect_path("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
		    ".slice/cri-containerd-" ID_A ".scope",
		    GG_RT_CONTAINERD, ID_A, UID, "");
	expect_path("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID_A ".scope",
		    GG_RT_CRIO, ID_A, UID, "");
	expect_path("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID_A ".scope", GG_RT_CONTAINERD, ID_A,
		    UID, ""); /* guaranteed: no qos slice */
	expect_path("/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" ID_A ".scope", GG_RT_DOCKER, ID_A, UID, "");
	expect_path("/machine.slice/libpod-" ID_A ".scope", GG_RT_PODMAN, ID_A, "", "");
	expect_path("/machine.slice/libpod-" ID_A ".scope/container", GG_RT_PODMAN, ID_A, "", "");
	expect_path("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID_A ".scope", GG_RT_PODMAN,
		    ID_A, "", "");
	expect_path("/system.slice/nerdctl-" ID_A ".scope", GG_RT_CONTAINERD, ID_A, "", "");
	/* the cgroupfs driver (cgroup v1 typically) */
	expect_path("/docker/" ID_A, GG_RT_DOCKER, ID_A, "", "");
	expect_path("/kubepods/besteffort/pod" UID "/" ID_A, GG_RT_UNKNOWN, ID_A, UID, "");
	expect_path("/kubepods/burstable/pod" UID "/crio-" ID_A, GG_RT_CRIO, ID_A, UID, "");
	expect_path("/kubepods/pod" UID "/" ID_A, GG_RT_UNKNOWN, ID_A, UID, "");
	expect_path("/libpod_parent/libpod-" ID_A, GG_RT_PODMAN, ID_A, "", "");
	expect_path("/libpod_parent/" ID_A, GG_RT_PODMAN, ID_A, "", "");
	expect_path("/default/" ID_A, GG_RT_CONTAINERD, ID_A, "", "default");
	expect_path("/k8s.io/" ID_A, GG_RT_CONTAINERD, ID_A, "", "k8s.io");
	/* nested under a node's own slice (kind, k3s in docker): the same components, deeper */
	expect_path("/gg.slice/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
		    "kubelet-kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID_A ".scope",
		    GG_RT_CONTAINERD, ID_A, UID, "");
	/* upper case ids are folded */
	expect_path("/docker/0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF", GG_RT_DOCKER, ID_A, "",
		    "");
	/* no container: the pod slice itself, conmon, host services, ids of the wrong length */
	expect_path("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice", GG_RT_NONE, "",
		    UID, "");
	expect_path("/machine.slice/libpod-conmon-" ID_A ".scope", GG_RT_NONE, "", "", "");
	expect_path("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" ID_A
		    ".scope",
		    GG_RT_NONE, "", UID, "");
	expect_path("/system.slice/sshd.service", GG_RT_NONE, "", "", "");
	expect_path("/", GG_RT_NONE, "", "", "");
	expect_path("", GG_RT_NONE, "", "", "");
	expect_path("/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", GG_RT_NONE, "", "",
		    ""); /* 63 digits */
	expect_path("/docker/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0", GG_RT_NONE, "", "",
		    "");							     /* 65 */
	expect_path("/system.slice/pod1a2b3c4d-0000.slice", GG_RT_NONE, "", "", ""); /* not under kubepods */
}

GG_TEST(test_proc_cgroup_text)
{
	char p[4096];
	int v2 = -1;

	/* v2 only */
	assert_int_equal(gg_proc_cgroup__path("0::/system.slice/docker-" ID_A ".scope\n", p, sizeof(p), &v2), 0);
	assert_string_equal(p, "/system.slice/docker-" ID_A ".scope");
	assert_int_equal(v2, 1);
	/* hybrid: the unified line names nothing, a v1 controller names the container (docker cgroupfs) */
	assert_int_equal(gg_proc_cgroup__path("12:pids:/docker/" ID_A "\n4:memory:/docker/" ID_A
					      "\n1:name=systemd:/docker/" ID_A "\n0::/\n",
					      p, sizeof(p), &v2),
			 0);
	assert_string_equal(p, "/docker/" ID_A);
	assert_int_equal(v2, 0);
	/* hybrid: the unified line names it */
	assert_int_equal(gg_proc_cgroup__path("4:memory:/\n0::/machine.slice/libpod-" ID_A ".scope/container", p,
					      sizeof(p), &v2),
			 0);
	assert_string_equal(p, "/machine.slice/libpod-" ID_A ".scope/container");
	/* v1 only, no container: the first path */
	assert_int_equal(gg_proc_cgroup__path("5:cpu,cpuacct:/user.slice\n4:memory:/x\n", p, sizeof(p), &v2), 0);
	assert_string_equal(p, "/user.slice");
	/* no container anywhere: the v2 path */
	assert_int_equal(gg_proc_cgroup__path("4:memory:/x\n0::/init.scope\n", p, sizeof(p), NULL), 0);
	assert_string_equal(p, "/init.scope");
	/* garbage */
	assert_int_equal(gg_proc_cgroup__path("", p, sizeof(p), NULL), -ENOENT);
	assert_int_equal(gg_proc_cgroup__path("garbage\n::\n:x:\n0:", p, sizeof(p), NULL), -ENOENT);
	assert_int_equal(gg_proc_cgroup__path("0::/a/very/long/path", p, 8, NULL), -ENAMETOOLONG);
}

/* ---- state readers ------------------------------------------------------------------------------------ */

/* The names parsed: each expected value that is not NULL is checked. */
static void names_are(const struct gg_ident_names *n, const char *name, const char *image, const char *pod,
		      const char *pod_ns, const char *pod_uid)
{
	const char *want[] = {name, image, pod, pod_ns, pod_uid};
	const char *got[] = {n->name, n->image, n->pod, n->pod_ns, n->pod_uid};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (want[i])
			assert_string_equal(got[i], want[i]);
}

static int parse_oci(const char *s, struct gg_ident_names *n)
{
	memset(n, 0, sizeof(*n));
	return gg_ident__parse_oci_config(s, strlen(s), n);
}

GG_TEST(test_oci_config)
{
	struct gg_ident_names n;
	char *big;

	assert_int_equal(parse_oci("{\"ociVersion\":\"1.1.0\",\"annotations\":{"
				   "\"io.kubernetes.cri.container-type\":\"container\","
				   "\"io.kubernetes.cri.container-name\":\"nginx\","
				   "\"io.kubernetes.cri.image-name\":\"docker.io/library/nginx:1.25\","
				   "\"io.kubernetes.cri.sandbox-name\":\"web-0\","
				   "\"io.kubernetes.cri.sandbox-namespace\":\"default\","
				   "\"io.kubernetes.cri.sandbox-uid\":\"" UID "\"}}",
				   &n),
			 0);
	names_are(&n, "nginx", "docker.io/library/nginx:1.25", "web-0", "default", UID);
	/* CRI-O */
	assert_int_equal(parse_oci("{\"annotations\":{\"io.kubernetes.container.name\":\"api\","
				   "\"io.kubernetes.cri-o.ContainerName\":\"k8s_api_p_ns_uid_0\","
				   "\"io.kubernetes.cri-o.ImageName\":\"quay.io/x/api:v2\","
				   "\"io.kubernetes.pod.name\":\"p\",\"io.kubernetes.pod.namespace\":\"ns\","
				   "\"io.kubernetes.pod.uid\":\"" UID "\"}}",
				   &n),
			 0);
	names_are(&n, "api", "quay.io/x/api:v2", "p", "ns", NULL);
	/* CRI-O's labels as one JSON string only */
	assert_int_equal(
		parse_oci("{\"annotations\":{\"io.kubernetes.cri-o.Labels\":\"{\\\"io.kubernetes.container.name\\\":"
			  "\\\"c\\\",\\\"io.kubernetes.pod.name\\\":\\\"p\\\",\\\"io.kubernetes.pod.namespace\\\":"
			  "\\\"n\\\"}\",\"io.kubernetes.cri-o.ImageName\":\"i\"}}",
			  &n),
		0);
	names_are(&n, "c", "i", "p", "n", NULL);
	assert_int_equal(parse_oci("{\"annotations\":{\"io.kubernetes.cri-o.Labels\":\"{not json\"}}", &n), -ENOENT);
	assert_int_equal(parse_oci("{\"annotations\":{\"io.kubernetes.cri-o.Labels\":[1]}}", &n), -ENOENT);
	/* bad input */
	assert_int_equal(parse_oci("{\"annotations\":{\"io.kubernetes.cri.container-name\":\"ngi", &n), -EINVAL);
	assert_int_equal(parse_oci("", &n), -EINVAL);
	assert_int_equal(parse_oci("[1,2]", &n), -EINVAL);
	assert_int_equal(parse_oci("{}", &n), -ENOENT);
	assert_int_equal(parse_oci("{\"annotations\":[\"io.kubernetes.cri.container-name\"]}", &n), -ENOENT);
	/* wrong types, control characters, invalid UTF-8: left empty */
	assert_int_equal(parse_oci("{\"annotations\":{\"io.kubernetes.cri.container-name\":7,"
				   "\"io.kubernetes.cri.sandbox-name\":{\"a\":1},"
				   "\"io.kubernetes.cri.image-name\":\"a\\nb\","
				   "\"io.kubernetes.cri.sandbox-namespace\":\"\\u0000x\","
				   "\"io.kubernetes.pod.name\":\"\xff\xfe\"}}",
				   &n),
			 -ENOENT);
	assert_string_equal(n.name, "");
	/* a value over GG_IDENT_VALUE_MAX is left out, the others are kept */
	big = malloc(4096);
	assert_non_null(big);
	memset(big, 0, 4096);
	strcpy(big, "{\"annotations\":{\"io.kubernetes.cri.container-name\":\"");
	memset(big + strlen(big), 'x', 2000);
	strcat(big, "\",\"io.kubernetes.cri.sandbox-name\":\"p\"}}");
	assert_int_equal(parse_oci(big, &n), 0);
	names_are(&n, "", NULL, "p", NULL, NULL);
	free(big);
	/* deep nesting: refused by the parser, not a crash */
	{
		char deep[8192];
		size_t i;

		for (i = 0; i < 4000; i++)
			deep[i] = '[';
		deep[i] = 0;
		assert_int_equal(parse_oci(deep, &n), -EINVAL);
	}
}

GG_TEST(test_docker_config)
{
	struct gg_ident_names n;
	const char *ok = "{\"ID\":\"" ID_A "\",\"Name\":\"/web-1\",\"Config\":{\"Image\":\"nginx:1.25\","
			 "\"Labels\":{\"maintainer\":\"x\"}},\"State\":{\"Running\":true}}";
	const char *shim = "{\"Name\":\"/k8s_app_pod-1_ns_" UID "_0\",\"Config\":{\"Image\":\"repo/app@sha256:1\","
			   "\"Labels\":{\"io.kubernetes.container.name\":\"app\",\"io.kubernetes.pod.name\":\"pod-1\","
			   "\"io.kubernetes.pod.namespace\":\"ns\",\"io.kubernetes.pod.uid\":\"" UID "\","
			   "\"io.kubernetes.docker.type\":\"container\"}}}";

	memset(&n, 0, sizeof(n));
	assert_int_equal(gg_ident__parse_docker_config(ok, strlen(ok), &n), 0);
	names_are(&n, "web-1", "nginx:1.25", "", NULL, NULL);
	memset(&n, 0, sizeof(n));
	assert_int_equal(gg_ident__parse_docker_config(shim, strlen(shim), &n), 0);
	names_are(&n, "app", NULL, "pod-1", "ns", UID);
	memset(&n, 0, sizeof(n));
	assert_int_equal(gg_ident__parse_docker_config(ok, strlen(ok) - 10, &n), -EINVAL); /* truncated */
	assert_int_equal(gg_ident__parse_docker_config("{\"Name\":5,\"Config\":\"x\"}", 23, &n), -ENOENT);
	assert_int_equal(gg_ident__parse_docker_config("{\"Config\":{\"Labels\":[1]}}", 25, &n), -ENOENT);
	assert_int_equal(gg_ident__parse_docker_config("null", 4, &n), -EINVAL);
}

GG_TEST(test_storage_containers)
{
	struct gg_ident_names n;
	const char *list = "[{\"id\":\"" ID_B "\",\"names\":[\"other\"],\"metadata\":\"{}\"},"
			   "{\"id\":\"" ID_A "\",\"names\":[\"db\"],\"image\":\"" ID_B "\","
			   "\"metadata\":\"{\\\"image-name\\\":\\\"docker.io/library/postgres:16\\\","
			   "\\\"name\\\":\\\"db\\\",\\\"created-at\\\":1700000000}\"}]";

	memset(&n, 0, sizeof(n));
	assert_int_equal(gg_ident__parse_storage_containers(list, strlen(list), ID_A, &n), 0);
	names_are(&n, "db", "docker.io/library/postgres:16", NULL, NULL, NULL);
	memset(&n, 0, sizeof(n));
	assert_int_equal(gg_ident__parse_storage_containers(list, strlen(list), ID_B, &n), 0);
	names_are(&n, "other", "", NULL, NULL, NULL);
	memset(&n, 0, sizeof(n));
	assert_int_equal(gg_ident__parse_storage_containers(list, strlen(list), "abc", &n), -ENOENT);
	assert_int_equal(gg_ident__parse_storage_containers(list, strlen(list) / 2, ID_A, &n), -EINVAL);
	assert_int_equal(gg_ident__parse_storage_containers("{\"id\":1}", 8, ID_A, &n), -EINVAL);
	/* metadata not JSON, names not a list: what can be read is */
	{
		const char *odd = "[{\"id\":\"" ID_A "\",\"names\":\"db\",\"metadata\":\"{not json\"},{\"id\":7}]";

		assert_int_equal(gg_ident__parse_storage_containers(odd, strlen(odd), ID_A, &n), -ENOENT);
	}
}

/* ---- the resolver, on a fake /proc and fake runtime state ---------------------------------------------- */

static char tmp[64];

static void put_file(const char *rel, const char *text)
{
	char path[600], *s;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	for (s = path + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(path, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	if (!f)
		fail_msg("put_file %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static void put_proc(unsigned int pid, const char *cgpath)
{
	char rel[64], text[512];

	snprintf(rel, sizeof(rel), "proc/%u/cgroup", pid);
	snprintf(text, sizeof(text), "4:memory:/\n0::%s\n", cgpath);
	put_file(rel, text);
}

static int tmp_setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/gg-test-ident-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	return 0;
}

static int tmp_teardown(void **state)
{
	(void)state;
	/* only our own temporary directory */
	assert_int_equal(rm_tree(tmp), 0);
	return 0;
}

static struct gg_identity *new_resolver(unsigned int max_procs, unsigned int max_cgroups)
{
	char proc[300], c[300], cr[300], st[300], d[300];
	struct gg_identity_opts o = {.max_procs = max_procs,
				     .max_cgroups = max_cgroups,
				     .proc_ttl_ms = 1000,
				     .cgroup_ttl_ms = 10000,
				     .retry_ms = 500};

	snprintf(proc, sizeof(proc), "%s/proc", tmp);
	snprintf(c, sizeof(c), "%s/containerd", tmp);
	snprintf(cr, sizeof(cr), "%s/crio", tmp);
	snprintf(st, sizeof(st), "%s/storage", tmp);
	snprintf(d, sizeof(d), "%s/docker", tmp);
	o.proc_root = proc;
	o.containerd_dir = c;
	o.crio_dir = cr;
	o.storage_dir = st;
	o.docker_dir = d;
	return gg_identity__new(&o);
}

GG_TEST(test_resolver_cache)
{
	struct gg_identity *id = new_resolver(0, 0);
	const struct gg_ident *i;
	const struct gg_identity_stats *st;

	assert_non_null(id);
	put_proc(100, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		      ".slice/cri-containerd-" ID_A ".scope");
	put_file("containerd/k8s.io/" ID_A "/config.json",
		 "{\"annotations\":{\"io.kubernetes.cri.container-name\":\"c1\",\"io.kubernetes.cri.image-name\":\"img:"
		 "1\","
		 "\"io.kubernetes.cri.sandbox-name\":\"pod1\",\"io.kubernetes.cri.sandbox-namespace\":\"ns1\"}}");
	put_proc(101, "/system.slice/docker-" ID_B ".scope"); /* no state yet */
	put_proc(102, "/user.slice/user-0.slice/session-1.scope");

	i = gg_identity__lookup(id, 100, 1000);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_ID], ID_A);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "c1");
	assert_string_equal(i->v[GG_IDENT_CONTAINER_IMAGE], "img:1");
	assert_string_equal(i->v[GG_IDENT_POD_ID], UID);
	assert_string_equal(i->v[GG_IDENT_POD], "pod1");
	assert_string_equal(i->v[GG_IDENT_POD_NAMESPACE], "ns1");
	assert_int_equal(i->len[GG_IDENT_POD], 4);
	/* cached: 1000 more lookups within the TTL read nothing */
	for (int k = 0; k < 1000; k++)
		i = gg_identity__lookup(id, 100, 1500);
	st = gg_identity__stats(id);
	assert_int_equal(st->proc_reads, 1);
	assert_int_equal(st->state_reads, 1);
	/* no state file: the id now, the names after the retry interval once the file exists */
	i = gg_identity__lookup(id, 101, 1500);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_ID], ID_B);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "");
	put_file("docker/containers/" ID_B "/config.v2.json", "{\"Name\":\"/web\",\"Config\":{\"Image\":\"nginx\"}}");
	i = gg_identity__lookup(id, 101, 1700);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], ""); /* within retry_ms */
	i = gg_identity__lookup(id, 101, 2100);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "web");
	assert_string_equal(i->v[GG_IDENT_CONTAINER_IMAGE], "nginx");
	assert_string_equal(i->v[GG_IDENT_POD], "");
	/* a host process, tgid 0, an unknown process: empty */
	i = gg_identity__lookup(id, 102, 2100);
	for (int k = 0; k < GG_IDENT__COUNT; k++)
		assert_string_equal(i->v[k], "");
	assert_string_equal(gg_identity__lookup(id, 0, 2100)->v[GG_IDENT_CONTAINER_ID], "");
	assert_string_equal(gg_identity__lookup(id, 999, 2100)->v[GG_IDENT_CONTAINER_ID], "");
	/* a process moved to another cgroup: seen after the process TTL */
	put_proc(102, "/system.slice/docker-" ID_B ".scope");
	assert_string_equal(gg_identity__lookup(id, 102, 2500)->v[GG_IDENT_CONTAINER_ID], "");
	assert_string_equal(gg_identity__lookup(id, 102, 3200)->v[GG_IDENT_CONTAINER_NAME], "web");
	/* a state file that disappears (or is being rewritten) at a refresh: the names stay */
	{
		char p[300];

		snprintf(p, sizeof(p), "%s/docker/containers/" ID_B "/config.v2.json", tmp);
		assert_int_equal(unlink(p), 0);
	}
	assert_string_equal(gg_identity__lookup(id, 101, 20000)->v[GG_IDENT_CONTAINER_NAME], "web");
	/* a process that is gone keeps its identity for its last records */
	{
		char p[300];

		snprintf(p, sizeof(p), "%s/proc/100/cgroup", tmp);
		unlink(p);
	}
	assert_string_equal(gg_identity__lookup(id, 100, 9000)->v[GG_IDENT_CONTAINER_NAME], "c1");
	st = gg_identity__stats(id);
	assert_int_equal(st->state_errors, 0);
	assert_int_equal(st->cgroups, 2);
	gg_identity__free(id);
}

GG_TEST(test_resolver_bounds_and_bad_state)
{
	struct gg_identity *id = new_resolver(16, 16);
	const struct gg_identity_stats *st;
	char cg[256], rel[512], json[256], want[32];

	assert_non_null(id);
	/* 100 processes in 100 containers: at most 16 of each cached, every answer right */
	for (unsigned int k = 0; k < 100; k++) {
		snprintf(cg, sizeof(cg), "/system.slice/docker-%064x.scope", k + 1);
		put_proc(1000 + k, cg);
		snprintf(rel, sizeof(rel), "docker/containers/%064x/config.v2.json", k + 1);
		snprintf(json, sizeof(json), "{\"Name\":\"/c%u\",\"Config\":{\"Image\":\"i\"}}", k);
		put_file(rel, json);
	}
	for (int round = 0; round < 3; round++) {
		for (unsigned int k = 0; k < 100; k++) {
			const struct gg_ident *i = gg_identity__lookup(id, 1000 + k, 100);

			snprintf(want, sizeof(want), "c%u", k);
			assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], want);
			st = gg_identity__stats(id);
			assert_true(st->procs <= 16 && st->cgroups <= 16);
		}
	}
	assert_true(gg_identity__stats(id)->evictions > 0);
	/* a state file that is too big, truncated, or a directory: counted, the id still there */
	put_proc(2000, "/kubepods/besteffort/pod" UID "/" ID_A);
	{
		char p[300];
		FILE *f;

		snprintf(p, sizeof(p), "%s/containerd/k8s.io/" ID_A "/config.json", tmp);
		put_file("containerd/k8s.io/" ID_A "/config.json", "");
		f = fopen(p, "w");
		assert_non_null(f);
		assert_int_equal(ftruncate(fileno(f), (5 << 20)), 0); /* over the 4 MiB bound */
		fclose(f);
	}
	put_file("crio/overlay-containers/" ID_A "/userdata/config.json", "{\"annotations\":{\"io.kub");
	snprintf(rel, sizeof(rel), "%s/docker/containers/" ID_A "/config.v2.json", tmp);
	put_file("docker/containers/" ID_A "/x", "");
	mkdir(rel, 0755);
	{
		const struct gg_ident *i = gg_identity__lookup(id, 2000, 100);

		assert_string_equal(i->v[GG_IDENT_CONTAINER_ID], ID_A);
		assert_string_equal(i->v[GG_IDENT_POD_ID], UID);
		assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "");
	}
	assert_true(gg_identity__stats(id)->state_errors >= 3);
	gg_identity__free(id);
	gg_identity__free(NULL);
}

GG_TEST(test_podman_and_crio_state)
{
	struct gg_identity *id = new_resolver(0, 0);
	const struct gg_ident *i;

	put_proc(300, "/machine.slice/libpod-" ID_A ".scope/container");
	put_file("storage/overlay-containers/containers.json",
		 "[{\"id\":\"" ID_A "\",\"names\":[\"pm\"],\"metadata\":\"{\\\"image-name\\\":\\\"alpine:3\\\"}\"}]");
	put_proc(301,
		 "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-" ID_B ".scope");
	/* only in the graph root (the run root's copy is gone after a reboot of the node) */
	put_file("storage/overlay-containers/" ID_B "/userdata/config.json",
		 "{\"annotations\":{\"io.kubernetes.container.name\":\"app\",\"io.kubernetes.pod.name\":\"p\","
		 "\"io.kubernetes.pod.namespace\":\"n\",\"io.kubernetes.cri-o.ImageName\":\"q/app:1\"}}");
	i = gg_identity__lookup(id, 300, 1);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "pm");
	assert_string_equal(i->v[GG_IDENT_CONTAINER_IMAGE], "alpine:3");
	i = gg_identity__lookup(id, 301, 1);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "app");
	assert_string_equal(i->v[GG_IDENT_CONTAINER_IMAGE], "q/app:1");
	assert_string_equal(i->v[GG_IDENT_POD], "p");
	assert_string_equal(i->v[GG_IDENT_POD_NAMESPACE], "n");
	assert_string_equal(i->v[GG_IDENT_POD_ID], UID);
	gg_identity__free(id);
}

/* Many podman containers: containers.json is parsed once per version of the file, not per container. */
GG_TEST(test_podman_list_parsed_once)
{
	struct gg_identity *id = new_resolver(0, 0);
	char list[8192], cg[128], want[16];
	size_t used = 0;
	uint64_t reads;

	used += (size_t)snprintf(list + used, sizeof(list) - used, "[");
	for (unsigned int k = 0; k < 20; k++) {
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s{\"id\":\"%064x\",\"names\":[\"p%u\"]}",
					 k ? "," : "", 0x500 + k, k);
		snprintf(cg, sizeof(cg), "/machine.slice/libpod-%064x.scope", 0x500 + k);
		put_proc(600 + k, cg);
	}
	snprintf(list + used, sizeof(list) - used, "]");
	put_file("storage/overlay-containers/containers.json", list);
	for (unsigned int k = 0; k < 20; k++) {
		snprintf(want, sizeof(want), "p%u", k);
		assert_string_equal(gg_identity__lookup(id, 600 + k, 1)->v[GG_IDENT_CONTAINER_NAME], want);
	}
	reads = gg_identity__stats(id)->state_reads;
	assert_int_equal(reads, 1);
	/* a new version of the list (podman renames a new file into place) is read again */
	put_file("storage/overlay-containers/containers.json.tmp", "[{\"id\":\"" ID_D "\",\"names\":[\"late\"]}]");
	{
		char a[300], b[300];

		snprintf(a, sizeof(a), "%s/storage/overlay-containers/containers.json.tmp", tmp);
		snprintf(b, sizeof(b), "%s/storage/overlay-containers/containers.json", tmp);
		assert_int_equal(rename(a, b), 0);
	}
	put_proc(700, "/machine.slice/libpod-" ID_D ".scope");
	assert_string_equal(gg_identity__lookup(id, 700, 1)->v[GG_IDENT_CONTAINER_NAME], "late");
	assert_int_equal(gg_identity__stats(id)->state_reads, 2);
	gg_identity__free(id);
}

/* A container whose state is missing is tried again after retry_ms, then after twice as long, ... */
GG_TEST(test_retry_backoff)
{
	struct gg_identity *id = new_resolver(0, 0); /* retry 500 ms, names refreshed every 10 s */

	put_proc(800, "/system.slice/docker-" ID_E ".scope");
	assert_string_equal(gg_identity__lookup(id, 800, 0)->v[GG_IDENT_CONTAINER_NAME], "");	/* next at 500 */
	assert_string_equal(gg_identity__lookup(id, 800, 500)->v[GG_IDENT_CONTAINER_NAME], ""); /* next at 1500 */
	put_file("docker/containers/" ID_E "/config.v2.json", "{\"Name\":\"/slow\",\"Config\":{\"Image\":\"i\"}}");
	assert_string_equal(gg_identity__lookup(id, 800, 1400)->v[GG_IDENT_CONTAINER_NAME], "");
	assert_string_equal(gg_identity__lookup(id, 800, 1500)->v[GG_IDENT_CONTAINER_NAME], "slow");
	gg_identity__free(id);
}

/* ---- exported tables, records and events ----------------------------------------------------------------- */

static const char META[] = "version = \"1.0.0\"\n"
			   "measurements: (\n"
			   " { table_name: \"tp\", entity_name: \"proc\", fields: (\n"
			   "   { description: \"d\", type: \"key\", name: \"tgid\" },\n"
			   "   { description: \"d\", type: \"label\", name: \"comm\" },\n"
			   "   { description: \"d\", type: \"gauge\", name: \"g\" } ) },\n"
			   " { table_name: \"tc\", entity_name: \"proc\", fields: (\n"
			   "   { description: \"d\", type: \"key\", name: \"tgid\" },\n"
			   "   { description: \"d\", type: \"label\", name: \"container_id\" },\n"
			   "   { description: \"d\", type: \"gauge\", name: \"g2\" } ) },\n"
			   " { table_name: \"tn\", entity_name: \"net\", fields: (\n"
			   "   { description: \"d\", type: \"key\", name: \"dev\" },\n"
			   "   { description: \"d\", type: \"label\", name: \"tgid\" },\n"
			   "   { description: \"d\", type: \"gauge\", name: \"g3\" } ) }\n"
			   ")\n";

static const struct meta_record *parse(const char *line, struct meta_record *r)
{
	assert_int_equal(meta_record__parse(reg, line, strlen(line), r, NULL), META_OK);
	return r;
}

GG_TEST(test_export_tables_and_records)
{
	struct gg_ident_export *x;
	const struct meta_table *tp = meta_registry__find(reg, "tp", 2), *tc = meta_registry__find(reg, "tc", 2),
				*tn = meta_registry__find(reg, "tn", 2), *a;
	const struct meta_record *out;
	struct meta_record r;

	put_proc(400, "/system.slice/docker-" ID_C ".scope");
	put_file("docker/containers/" ID_C "/config.v2.json", "{\"Name\":\"/web\",\"Config\":{\"Image\":\"nginx\"}}");
	x = gg_ident_export__new(new_resolver(0, 0));
	assert_non_null(x);
	a = gg_ident_export__table(x, tp);
	assert_ptr_not_equal(a, tp);
	assert_int_equal(a->nfields, 9);
	assert_int_equal(a->nkeys, 1);
	assert_string_equal(a->name, "tp");
	for (int k = 0; k < GG_IDENT__COUNT; k++) {
		assert_string_equal(a->fields[3 + k].name, gg_ident_names[k]);
		assert_int_equal(a->fields[3 + k].type, META_LABEL);
	}
	assert_ptr_equal(gg_ident_export__table(x, tp), a); /* made once */
	/* a table that has container_id already: the five others */
	assert_int_equal(gg_ident_export__table(x, tc)->nfields, 8);
	/* tgid as a label, not a key: as it is */
	assert_ptr_equal(gg_ident_export__table(x, tn), tn);

	out = gg_ident_export__record(x, parse("|tp|400|nginx|1.5|", &r), 1);
	assert_ptr_equal(out->table, a);
	assert_int_equal(out->nvalues, 9);
	assert_memory_equal(out->values[1], "nginx", 5);
	assert_int_equal(out->lens[3], 64);
	assert_memory_equal(out->values[3], ID_C, 64);
	assert_int_equal(out->lens[4], 3);
	assert_memory_equal(out->values[4], "web", 3);
	assert_int_equal(out->lens[7], 0);
	out = gg_ident_export__record(x, parse("|tc|400|probe-said|2|", &r), 1);
	assert_int_equal(out->nvalues, 8);
	assert_memory_equal(out->values[1], "probe-said", 10); /* the probe's own value stays */
	assert_memory_equal(out->values[3], "web", 3);
	out = gg_ident_export__record(x, parse("|tp|notanumber|x|1|", &r), 1);
	assert_int_equal(out->lens[3], 0);
	out = gg_ident_export__record(x, parse("|tn|eth0|400|1|", &r), 1);
	assert_ptr_equal(out, &r);
	assert_ptr_equal(gg_ident_export__record(NULL, &r, 1), &r);
	gg_ident_export__free(x);
	gg_ident_export__free(NULL);
}

static void ident_cb(void *ctx, uint32_t tgid, struct gg_buf *out)
{
	gg_ident_export__json_members(ctx, tgid, 1, out);
}

GG_TEST(test_event_labels)
{
	struct gg_ident_export *x;
	struct gg_events_opts o = {600, 0, "mid", "host", 0, ident_cb, NULL};
	struct gg_events *ev;
	struct meta_record r;
	struct gg_buf b;
	cJSON *j, *l;

	put_proc(500, "/system.slice/docker-" ID_C ".scope");
	put_file("docker/containers/" ID_C "/config.v2.json", "{\"Name\":\"/web\",\"Config\":{\"Image\":\"nginx\"}}");
	x = gg_ident_export__new(new_resolver(0, 0));
	o.ident_ctx = x;
	ev = gg_events__new(&o);
	assert_non_null(ev);
	gg_buf__init(&b, 0);
	assert_int_equal(
		gg_events__process(ev,
				   parse("|event_v2|proc|500|slow|WARN|b||comm=x&tgid=500&container_id=fake|sys|", &r),
				   1, 1, &b),
		0);
	j = cJSON_ParseWithLength(b.data, b.len);
	assert_non_null(j);
	l = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "Resource"), "labels");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(l, "container_id")), ID_C);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(l, "container_name")), "web");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(l, "pod")), "");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(l, "comm")), "x");
	cJSON_Delete(j);
	/* no tgid label: nothing added, the probe's labels as they are */
	b.len = 0;
	assert_int_equal(
		gg_events__process(ev, parse("|event_v2|disk|sda|slow|WARN|b||container_id=c|sys|", &r), 1, 1, &b), 0);
	j = cJSON_ParseWithLength(b.data, b.len);
	l = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "Resource"), "labels");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(l, "container_id")), "c");
	assert_null(cJSON_GetObjectItem(l, "pod"));
	cJSON_Delete(j);
	gg_buf__fini(&b);
	gg_events__free(ev);
	gg_ident_export__free(x);
}

static int group_setup(void **state)
{
	char err[256];

	tmp_setup(state);
	reg_setup(META);
	assert_int_equal(gg_events__register(reg, err, sizeof(err)), 0);
	return 0;
}

/* ---- pod labels, custom labels, cgroup events ----------------------------------------------------------- */

GG_TEST(test_pod_labels_parse)
{
	struct gg_pod_labels *pl = calloc(1, sizeof(*pl));
	char big[2100], name[64];
	size_t n;

	assert_non_null(pl);
	/* CRI-O's sandbox spec: the labels as one JSON string */
	const char *crio = "{\"annotations\":{\"io.kubernetes.cri-o.ContainerType\":\"sandbox\","
			   "\"io.kubernetes.cri-o.Labels\":\"{\\\"app\\\":\\\"api\\\",\\\"app.kubernetes.io/name\\\":"
			   "\\\"srv\\\",\\\"bad\\\":\\\"a\\\\u0001b\\\",\\\"n\\\":1}\"}}";
	assert_int_equal(gg_ident__parse_pod_labels(crio, strlen(crio), pl), 0);
	assert_int_equal(pl->n, 2); /* a control character and a number are left out */
	{
		struct gg_ident id = {.pod_labels = pl->buf, .pod_labels_len = pl->len};

		assert_string_equal(gg_ident__pod_label(&id, "app", &n), "api");
		assert_int_equal(n, 3);
		assert_string_equal(gg_ident__pod_label(&id, "app.kubernetes.io/name", NULL), "srv");
		assert_null(gg_ident__pod_label(&id, "bad", NULL));
		assert_null(gg_ident__pod_label(&id, "ap", NULL));
	}
	/* dockershim's pause container: Config.Labels */
	const char *docker = "{\"Name\":\"/k8s_POD_p_n_u_0\",\"Config\":{\"Labels\":{\"app\":\"web\","
			     "\"io.kubernetes.docker.type\":\"podsandbox\"}}}";
	assert_int_equal(gg_ident__parse_pod_labels(docker, strlen(docker), pl), 0);
	assert_int_equal(pl->n, 2);
	assert_int_equal(gg_ident__parse_pod_labels("[1]", 3, pl), -EINVAL);
	assert_int_equal(gg_ident__parse_pod_labels("{\"Config\":{}}", 13, pl), -ENOENT);
	/* bounded: GG_POD_LABELS_MAX labels, each value at most GG_IDENT_VALUE_MAX */
	{
		char *j = malloc(200000);
		size_t off = 0;

		assert_non_null(j);
		off += (size_t)sprintf(j + off, "{\"Config\":{\"Labels\":{");
		memset(big, 'v', 2000);
		big[2000] = '\0';
		off += (size_t)sprintf(j + off, "\"huge\":\"%s\"", big);
		for (int i = 0; i < 100; i++)
			off += (size_t)sprintf(j + off, ",\"k%d\":\"v%d\"", i, i);
		sprintf(j + off, "}}}");
		assert_int_equal(gg_ident__parse_pod_labels(j, strlen(j), pl), 0);
		assert_int_equal(pl->n, GG_POD_LABELS_MAX);
		free(j);
	}
	/* exported names */
	assert_int_equal(gg_pod_label__name("app.kubernetes.io/name", name, sizeof(name)), 0);
	assert_string_equal(name, "app_kubernetes_io_name");
	assert_int_equal(gg_pod_label__name("9lives", name, sizeof(name)), 0);
	assert_string_equal(name, "_9lives");
	assert_int_equal(gg_pod_label__name("abcdef", name, 4), -ENAMETOOLONG);
	free(pl);
}

GG_TEST(test_pod_labels_resolved)
{
	struct gg_identity *id = new_resolver(0, 0);
	const struct gg_ident *i;

	put_proc(500,
		 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID_D ".scope");
	put_file("crio/overlay-containers/" ID_D "/userdata/config.json",
		 "{\"annotations\":{\"io.kubernetes.container.name\":\"c\",\"io.kubernetes.pod.name\":\"p\","
		 "\"io.kubernetes.cri-o.SandboxID\":\"" ID_E "\"}}");
	put_file("crio/overlay-containers/" ID_E "/userdata/config.json",
		 "{\"annotations\":{\"io.kubernetes.cri-o.Labels\":\"{\\\"app\\\":\\\"x\\\"}\"}}");
	/* not asked for: not read */
	i = gg_identity__lookup(id, 500, 1);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "c");
	assert_null(i->pod_labels);
	assert_int_equal(gg_identity__stats(id)->pod_label_reads, 0);
	/* asked for: the known containers read them at their next lookup */
	{
		static const char *const keys[] = {"app", "zone"};

		gg_identity__want_pod_labels(id, keys, 2);
	}
	i = gg_identity__lookup(id, 500, 2);
	assert_string_equal(gg_ident__pod_label(i, "app", NULL), "x");
	assert_int_equal(gg_identity__stats(id)->pod_label_reads, 1);
	gg_identity__free(id);
}

GG_TEST(test_export_custom_and_pod_labels)
{
	const struct meta_table *tp = meta_registry__find(reg, "tp", 2), *tn = meta_registry__find(reg, "tn", 2);
	const struct meta_table *stale, *a;
	struct gg_ext_labels *l = calloc(1, sizeof(*l));
	struct gg_ident_export *x;
	const struct meta_record *out;
	struct meta_record r;
	int owner, other;

	assert_non_null(l);
	put_proc(501,
		 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID_D ".scope");
	x = gg_ident_export__new(new_resolver(0, 0));
	assert_non_null(x);
	/* no labels yet: tn (no tgid key) as it is, nothing stale */
	out = gg_ident_export__probe_record(x, &owner, parse("|tn|eth0|501|1|", &r), 1, &stale);
	assert_ptr_equal(out, &r);
	assert_null(stale);
	l->ncustom = 2;
	strcpy(l->custom_name[0], "team");
	strcpy(l->custom_value[0], "pay");
	strcpy(l->custom_name[1], "tgid"); /* tn has it: the table's own value stays */
	strcpy(l->custom_value[1], "nope");
	l->npod = 2;
	strcpy(l->pod_key[0], "app");
	strcpy(l->pod_name[0], "app");
	strcpy(l->pod_key[1], "tier");
	strcpy(l->pod_name[1], "tier");
	assert_int_equal(gg_ident_export__set_labels(x, &owner, l), 0);
	/* tn: the custom label (no pod labels: no tgid key); the rows of tn as it was are stale */
	out = gg_ident_export__probe_record(x, &owner, parse("|tn|eth0|501|1|", &r), 1, &stale);
	assert_ptr_equal(stale, tn);
	assert_int_equal(out->table->nfields, tn->nfields + 1);
	assert_string_equal(out->table->fields[tn->nfields].name, "team");
	assert_int_equal(out->nvalues, tn->nfields + 1);
	assert_memory_equal(out->values[tn->nfields], "pay", 3);
	a = out->table;
	out = gg_ident_export__probe_record(x, &owner, parse("|tn|eth0|501|1|", &r), 1, &stale);
	assert_null(stale);
	assert_ptr_equal(out->table, a);
	/* tp: identity, then team, app, tier ("" : the pod's labels are unknown) */
	out = gg_ident_export__probe_record(x, &owner, parse("|tp|501|x|1|", &r), 1, &stale);
	assert_non_null(stale);
	assert_int_equal(out->table->nfields, tp->nfields + GG_IDENT__COUNT + 3);
	assert_string_equal(out->table->fields[tp->nfields + GG_IDENT__COUNT + 1].name, "app");
	/* the pod's labels from its sandbox's state (test_pod_labels_resolved's files): tier it has not */
	assert_int_equal(out->lens[tp->nfields + GG_IDENT__COUNT + 1], 1);
	assert_memory_equal(out->values[tp->nfields + GG_IDENT__COUNT + 1], "x", 1);
	assert_int_equal(out->lens[tp->nfields + GG_IDENT__COUNT + 2], 0);
	a = out->table;
	/* the same labels again: nothing stale; other labels: stale is the table in place */
	assert_int_equal(gg_ident_export__set_labels(x, &owner, l), 0);
	out = gg_ident_export__probe_record(x, &owner, parse("|tp|501|x|1|", &r), 1, &stale);
	assert_null(stale);
	l->npod = 0;
	assert_int_equal(gg_ident_export__set_labels(x, &owner, l), 0);
	out = gg_ident_export__probe_record(x, &owner, parse("|tp|501|x|1|", &r), 1, &stale);
	assert_ptr_equal(stale, a);
	assert_ptr_equal(out->table, a); /* rewritten in place */
	assert_int_equal(out->table->nfields, tp->nfields + GG_IDENT__COUNT + 1);
	/* another probe's records of the table: its labels (none) */
	out = gg_ident_export__probe_record(x, &other, parse("|tp|501|x|1|", &r), 1, &stale);
	assert_int_equal(out->table->nfields, tp->nfields + GG_IDENT__COUNT);
	gg_ident_export__free(x);
	free(l);
}

static void write_procs(const char *dir, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

GG_TEST(test_cgroup_events)
{
	char root[300], mi[300], text[600], dir[400], slice[400], path[500];
	struct gg_identity_opts o = {.proc_ttl_ms = 3600000, .cgroup_ttl_ms = 3600000, .watch = 1};
	struct gg_identity *id;
	const struct gg_ident *i;
	char proc[300], d[300];
	uint64_t reads;
	FILE *f;

	/* a directory tree stands for a cgroup2 hierarchy (inotify sees mkdir, rmdir and writes alike) */
	snprintf(root, sizeof(root), "%s/cg", tmp);
	assert_int_equal(mkdir(root, 0755), 0);
	snprintf(mi, sizeof(mi), "%s/mountinfo", tmp);
	snprintf(text, sizeof(text), "30 1 0:26 / %s rw - cgroup2 cgroup2 rw\n31 1 0:27 / /x rw - tmpfs tmpfs rw\n",
		 root);
	f = fopen(mi, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	snprintf(proc, sizeof(proc), "%s/proc", tmp);
	snprintf(d, sizeof(d), "%s/docker", tmp);
	o.proc_root = proc;
	o.docker_dir = d;
	o.mountinfo = mi;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", root); /* marks it a v2 hierarchy */
	f = fopen(path, "w");
	fclose(f);
	id = gg_identity__new(&o);
	assert_non_null(id);
	assert_true(gg_identity__watch_fd(id) >= 0);
	assert_int_equal(gg_identity__stats(id)->watches, 1);
	put_proc(600, "/");
	put_proc(601, "/");
	assert_int_equal(gg_identity__lookup(id, 600, 1000)->len[GG_IDENT_CONTAINER_ID], 0);
	assert_int_equal(gg_identity__lookup(id, 601, 1000)->len[GG_IDENT_CONTAINER_ID], 0);
	/* the container's cgroup is made (a slice and a scope in it at once) */
	snprintf(slice, sizeof(slice), "%s/system.slice", root);
	assert_int_equal(mkdir(slice, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/system.slice/docker-" ID_F ".scope", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	put_file("docker/containers/" ID_F "/config.v2.json", "{\"Name\":\"/w\",\"Config\":{\"Image\":\"i\"}}");
	assert_int_equal(gg_identity__process_events(id), 0);
	/* the scope was made before system.slice was watched: found by the walk of the new directory */
	assert_int_equal(gg_identity__stats(id)->watches, 3);
	assert_true(gg_identity__stats(id)->cgroup_events >= 1);
	/* then 600 is moved in (its cgroup.procs written; the fake /proc says where it is) */
	put_proc(600, "/system.slice/docker-" ID_F ".scope");
	write_procs(dir, "600\n");
	/* before the events are taken: the cached identity (hour-long TTL) */
	assert_int_equal(gg_identity__lookup(id, 600, 2000)->len[GG_IDENT_CONTAINER_ID], 0);
	reads = gg_identity__stats(id)->proc_reads;
	assert_int_equal(gg_identity__process_events(id), 0);
	i = gg_identity__lookup(id, 600, 3000);
	assert_string_equal(i->v[GG_IDENT_CONTAINER_NAME], "w");
	assert_int_equal(gg_identity__stats(id)->cgroups, 1);
	/* 601, not in the list of the cgroup written to, keeps its cache: one read in all, 600's */
	assert_int_equal(gg_identity__lookup(id, 601, 3000)->len[GG_IDENT_CONTAINER_ID], 0);
	assert_int_equal(gg_identity__stats(id)->proc_reads, reads + 1);
	/* moved out (the slice's cgroup.procs written), the cgroup removed: the host's identity, the
	 * container dropped from the cache */
	put_proc(600, "/system.slice");
	write_procs(slice, "600\n");
	assert_int_equal(rmdir(dir), -1); /* a directory tree: the test's cgroup.procs file is in it */
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(gg_identity__process_events(id), 0);
	i = gg_identity__lookup(id, 600, 4000);
	assert_int_equal(i->len[GG_IDENT_CONTAINER_ID], 0);
	assert_int_equal(gg_identity__stats(id)->cgroups, 0);
	assert_int_equal(gg_identity__stats(id)->watches, 2);
	gg_identity__free(id);
}

/* containerd's metadata database, as go.etcd.io/bbolt writes it (tests/fixtures/containerd: the
 * generator and its output), read with the pod labels of its sandbox container */
#define CTD_SANDBOX "5ab0c0de5ab0c0de5ab0c0de5ab0c0de5ab0c0de5ab0c0de5ab0c0de5ab0c0de"

static int count_pair(void *ctx, const char *k, size_t kn, const char *v, size_t vn)
{
	(void)k;
	(void)kn;
	(void)v;
	(void)vn;
	++*(unsigned int *)ctx;
	return 0;
}

GG_TEST(test_containerd_bolt)
{
	char db[400], cmd[900];
	struct gg_pod_labels *pl = calloc(1, sizeof(*pl));
	struct gg_ident id = {0};
	static const char *const containers[] = {"v1", "k8s.io", "containers"};
	unsigned int n = 0;

	assert_non_null(pl);
	snprintf(db, sizeof(db), "%s/meta.db", tmp);
	snprintf(cmd, sizeof(cmd), "gzip -dc tests/fixtures/containerd/meta.db.gz > '%s'", db);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(gg_ident__containerd_pod_labels(db, "k8s.io", CTD_SANDBOX, pl), 0);
	id.pod_labels = pl->buf;
	id.pod_labels_len = pl->len;
	assert_string_equal(gg_ident__pod_label(&id, "app", NULL), "checkout");
	assert_string_equal(gg_ident__pod_label(&id, "app.kubernetes.io/name", NULL), "checkout-api");
	assert_string_equal(gg_ident__pod_label(&id, "io.cri-containerd.kind", NULL), "sandbox");
	assert_string_equal(gg_ident__pod_label(&id, "example.com/filler-59", NULL),
			    "value-59-5ab0c0de5ab0c0de5ab0c0de5ab0c0de5ab0c0de");
	assert_int_equal(pl->n, GG_POD_LABELS_MAX); /* 67 labels: bounded */
	/* only the keys asked for: the last one in key order is found too */
	{
		static const char *const want[] = {"pod-template-hash", "app"};

		pl->want = want;
		pl->nwant = 2;
		assert_int_equal(gg_ident__containerd_pod_labels(db, "k8s.io", CTD_SANDBOX, pl), 0);
		assert_int_equal(pl->n, 2);
		assert_string_equal(gg_ident__pod_label(&id, "pod-template-hash", NULL), "7d9c6b");
		pl->nwant = 0;
	}
	/* another namespace, another container, no such bucket */
	assert_int_equal(gg_ident__containerd_pod_labels(db, "default", CTD_SANDBOX, pl), -ENOENT);
	assert_int_equal(gg_ident__containerd_pod_labels(db, "k8s.io", ID_A, pl), -ENOENT);
	assert_int_equal(gg_ident__containerd_pod_labels("/nonexistent/meta.db", "k8s.io", CTD_SANDBOX, pl), -ENOENT);
	/* the containers bucket: 401 nested buckets (skipped), spread over leaf pages under a branch */
	assert_int_equal(gg_bolt__file_bucket_pairs(db, containers, 3, 1000, count_pair, &n), 0);
	assert_int_equal(n, 0);
	/* not a database */
	assert_int_equal(
		gg_ident__containerd_pod_labels("tests/fixtures/containerd/gen_meta_db.go", "k8s.io", CTD_SANDBOX, pl),
		-EINVAL);
	free(pl);
}

static int group_teardown(void **state)
{
	reg_teardown(state);
	return tmp_teardown(state);
}

GG_TEST_GROUP(group_setup, group_teardown);
