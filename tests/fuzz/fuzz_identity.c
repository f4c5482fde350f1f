/* fuzz_identity.c - libFuzzer target: the container identity parsers (supervisor/identity.c) on any
 * input: cgroup paths, /proc/<pid>/cgroup text, OCI config.json, docker config.v2.json and
 * containers/storage's containers.json, the pod labels of a sandbox's state file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../supervisor/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gg_ident_names *n;
	struct gg_cgroup_info ci;
	char path[4096], *s;

	if (size < 1)
		return 0;
	s = malloc(size);
	n = malloc(sizeof(*n));
	if (!s || !n)
		goto cleanup;
	/* the first byte picks the parser, the rest is its input (NUL-terminated for the text parsers) */
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	memset(n, 0, sizeof(*n));
	switch (data[0] % 6) {
	case 0:
		(void)gg_cgroup__parse(s, &ci);
		if (ci.container_id[0] && strlen(ci.container_id) != 64)
			abort();
		break;
	case 1:
		if (gg_proc_cgroup__path(s, path, sizeof(path), NULL) == 0)
			(void)gg_cgroup__parse(path, &ci);
		break;
	case 2:
		(void)gg_ident__parse_oci_config(s, size - 1, n);
		break;
	case 3:
		(void)gg_ident__parse_docker_config(s, size - 1, n);
		break;
	case 5: {
		struct gg_pod_labels *pl = calloc(1, sizeof(*pl));
		struct gg_ident id = {0};
		unsigned int n = 0;

		if (!pl)
			break;
		if (gg_ident__parse_pod_labels(s, size - 1, pl) == 0) {
			/* n "key\0value\0" pairs, every key found again, within the bounds */
			const char *p = pl->buf, *end = pl->buf + pl->len;

			if (pl->n > GG_POD_LABELS_MAX || pl->len > sizeof(pl->buf))
				abort();
			id.pod_labels = pl->buf;
			id.pod_labels_len = pl->len;
			while (p < end) {
				size_t kn = strlen(p), vn = strlen(p + kn + 1);

				if (!kn || vn > GG_IDENT_VALUE_MAX || !gg_ident__pod_label(&id, p, NULL))
					abort();
				p += kn + vn + 2;
				n++;
			}
			if (n != pl->n || p != end)
				abort();
		}
		free(pl);
		break;
	}
	default:
		(void)gg_ident__parse_storage_containers(
			s, size - 1, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", n);
		break;
	}
	/* every value taken is a bounded, NUL-terminated label value */
	if (strlen(n->name) > GG_IDENT_VALUE_MAX || strlen(n->image) > GG_IDENT_VALUE_MAX ||
	    strlen(n->pod) > GG_IDENT_VALUE_MAX)
		abort();
cleanup:
	free(s);
	free(n);
	return 0;
}
