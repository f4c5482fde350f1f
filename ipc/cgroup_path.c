/* cgroup_path.c - what a cgroup path names: the container id and pod UID in the layouts of docker,
 * containerd, CRI-O, podman and kubepods (cgroup_path.h). Shared by the supervisor and the probes. */
#include "cgroup_path.h"

#include <ctype.h>
#include <errno.h>
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
