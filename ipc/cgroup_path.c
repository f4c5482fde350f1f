/* cgroup_path.c - what a cgroup path names: the container id, pod UID and runtime in the layouts of
 * docker, containerd, CRI-O, podman and kubepods, and the path of /proc/<pid>/cgroup to look at
 * (cgroup_path.h). Shared by the supervisor and the probes. */
#include "cgroup_path.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

int gg_cgroup__container_id_at(const char *path, char *ret, size_t len, const char **ret_cs, const char **ret_ce)
{
	const char *end = path + strlen(path);

	if (len < 65)
		return -EINVAL;

	/* From the leaf up (podman nests the payload in libpod-<id>.scope/container): the first
	 * component holding a word of exactly 64 hex digits (words are split at non-alphanumerics). */
	while (end > path) {
		const char *start = end, *c;

		while (start > path && start[-1] != '/')
			start--;
		if (end > start && !memmem(start, (size_t)(end - start), "conmon", 6)) {
			for (c = start; c < end;) {
				const char *w = c;
				int hex = 1;

				while (c < end && isalnum((unsigned char)*c)) {
					hex &= isxdigit((unsigned char)*c) != 0;
					c++;
				}
				if (c - w == 64 && hex) {
					for (int i = 0; i < 64; i++)
						ret[i] = (char)tolower((unsigned char)w[i]);
					ret[64] = '\0';
					if (ret_cs)
						*ret_cs = start;
					if (ret_ce)
						*ret_ce = end;
					return 0;
				}
				while (c < end && !isalnum((unsigned char)*c))
					c++;
			}
		}
		end = start > path ? start - 1 : path;
	}
	return -ENOENT;
}

int gg_cgroup__container_id(const char *path, char *ret, size_t len)
{
	return gg_cgroup__container_id_at(path, ret, len, NULL, NULL);
}

int gg_cgroup__pod_uid(const char *path, char *ret, size_t len)
{
	const char *c = path;

	if (!strstr(path, "kubepods"))
		return -ENOENT;
	while (*c) {
		const char *comp = c, *p;
		size_t clen;

		while (*c && *c != '/')
			c++;
		clen = (size_t)(c - comp);
		for (p = comp; p + 3 <= comp + clen; p++) {
			const char *u, *ue;
			size_t n;

			if (strncmp(p, "pod", 3) || (p != comp && p[-1] != '-'))
				continue;
			u = p + 3;
			ue = u;
			while (ue < comp + clen && (isxdigit((unsigned char)*ue) || *ue == '-' || *ue == '_'))
				ue++;
			n = (size_t)(ue - u);
			if (n < 8 || n + 1 > len)
				continue;
			if (ue != comp + clen && strncmp(ue, ".slice", 6))
				continue;
			for (size_t i = 0; i < n; i++)
				ret[i] = u[i] == '_' ? '-' : (char)tolower((unsigned char)u[i]);
			ret[n] = '\0';
			return 0;
		}
		if (*c == '/')
			c++;
	}
	return -ENOENT;
}

static const char *const runtime_names[] = {"none", "docker", "containerd", "crio", "podman", "unknown"};

const char *gg_runtime__str(enum gg_runtime rt)
{
	return (unsigned int)rt < sizeof(runtime_names) / sizeof(runtime_names[0]) ? runtime_names[rt] : "?";
}

static int has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t pl = strlen(prefix);

	return n >= pl && !memcmp(s, prefix, pl);
}

/* A containerd namespace name as the parent of /<namespace>/<id> ([A-Za-z0-9._-], not a systemd unit). */
static int ns_name_ok(const char *s, size_t n)
{
	if (!n || n > 63 || s[0] == '.' || (n > 6 && !memcmp(s + n - 6, ".slice", 6)))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return 0;
	}
	return 1;
}

int gg_cgroup__parse(const char *path, struct gg_cgroup_info *ret)
{
	const char *cs, *ce;
	size_t n;

	memset(ret, 0, sizeof(*ret));
	if (gg_cgroup__pod_uid(path, ret->pod_uid, sizeof(ret->pod_uid)))
		ret->pod_uid[0] = '\0';
	if (gg_cgroup__container_id_at(path, ret->container_id, sizeof(ret->container_id), &cs, &ce)) {
		ret->container_id[0] = '\0';
		return 0;
	}
	n = (size_t)(ce - cs);
	if (has_prefix(cs, n, "docker-")) {
		ret->rt = GG_RT_DOCKER;
	} else if (has_prefix(cs, n, "cri-containerd-") || has_prefix(cs, n, "nerdctl-")) {
		ret->rt = GG_RT_CONTAINERD;
	} else if (has_prefix(cs, n, "crio-")) {
		ret->rt = GG_RT_CRIO;
	} else if (has_prefix(cs, n, "libpod-")) {
		ret->rt = GG_RT_PODMAN;
	} else if (n == 64) {
		/* a bare id: the parent names the runtime (cgroupfs driver) */
		const char *pe = cs > path ? cs - 1 : cs, *ps = pe;

		while (ps > path && ps[-1] != '/')
			ps--;
		n = (size_t)(pe - ps);
		if (n == 6 && !memcmp(ps, "docker", 6))
			ret->rt = GG_RT_DOCKER;
		else if (strstr(path, "kubepods"))
			ret->rt = GG_RT_UNKNOWN;
		else if (n == 13 && !memcmp(ps, "libpod_parent", 13))
			ret->rt = GG_RT_PODMAN;
		else if (ns_name_ok(ps, n) && ps == path + 1) {
			ret->rt = GG_RT_CONTAINERD; /* ctr / containerd: /<namespace>/<id> */
			memcpy(ret->ns, ps, n);
			ret->ns[n] = '\0';
		} else {
			ret->rt = GG_RT_UNKNOWN;
		}
	} else {
		ret->rt = GG_RT_UNKNOWN;
	}
	return 0;
}

/* 1 when a path names a container or a pod. */
static int path_interesting(const char *p, size_t n)
{
	char tmp[PATH_MAX], id[65];

	if (n + 1 > sizeof(tmp))
		return 0;
	memcpy(tmp, p, n);
	tmp[n] = '\0';
	return !gg_cgroup__container_id(tmp, id, sizeof(id)) || !gg_cgroup__pod_uid(tmp, id, sizeof(id));
}

static int copy_path(const char *p, size_t n, char *ret, size_t len)
{
	if (n + 1 > len)
		return -ENAMETOOLONG;
	memcpy(ret, p, n);
	ret[n] = '\0';
	return 0;
}

int gg_proc_cgroup__path(const char *text, char *ret, size_t len, int *ret_v2)
{
	const char *line = text, *v2 = NULL, *first = NULL;
	size_t v2n = 0, firstn = 0;

	if (ret_v2)
		*ret_v2 = 0;
	/* pass 1: the v2 line; pass 2 (below): the v1 lines */
	while (*line) {
		const char *nl = strchrnul(line, '\n'), *c1 = memchr(line, ':', (size_t)(nl - line)), *c2;

		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nl - c1 - 1)) : NULL;
		if (c2 && c2 + 1 < nl && c2[1] == '/') {
			const char *p = c2 + 1;
			size_t n = (size_t)(nl - p);

			if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
				v2 = p;
				v2n = n;
			} else if (!first) {
				first = p;
				firstn = n;
			}
		}
		line = *nl ? nl + 1 : nl;
	}
	if (v2 && path_interesting(v2, v2n)) {
		if (ret_v2)
			*ret_v2 = 1;
		return copy_path(v2, v2n, ret, len);
	}
	for (line = text; *line;) {
		const char *nl = strchrnul(line, '\n'), *c1 = memchr(line, ':', (size_t)(nl - line)), *c2;

		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(nl - c1 - 1)) : NULL;
		if (c2 && c2 + 1 < nl && c2[1] == '/' && !(line[0] == '0' && c2 == c1 + 1) &&
		    path_interesting(c2 + 1, (size_t)(nl - c2 - 1)))
			return copy_path(c2 + 1, (size_t)(nl - c2 - 1), ret, len);
		line = *nl ? nl + 1 : nl;
	}
	if (v2) {
		if (ret_v2)
			*ret_v2 = 1;
		return copy_path(v2, v2n, ret, len);
	}
	if (first)
		return copy_path(first, firstn, ret, len);
	return -ENOENT;
}
