/* store.c - the profile store behind the query API: per store period and event type, one text file of
 * per-thread stacks (<flame_dir>/store/<event>/<from_ms>-<until_ms>.prof), expired after the
 * retention and bounded in total size. The format is read by supervisor/rest/profile_query.c. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackprobe.h"

int sp_store__write(const char *flame_dir, enum sp_event ev, uint64_t from_ms, uint64_t until_ms,
		    unsigned int period_us, struct ftab *t)
{
	char sub[64], name[64];
	struct ftab_ent **ents;
	size_t n = 0;
	FILE *f;
	int dfd, err = 0;

	if (!t->n)
		return 0;
	snprintf(sub, sizeof(sub), "store/%s", sp_event_query_names[ev]);
	dfd = probe_outdir__open_sub(flame_dir, sub, 1);
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), "%013" PRIu64 "-%013" PRIu64 ".prof", from_ms, until_ms);
	ents = ftab__list(t, 0, &n);
	f = ents ? probe_outdir__fopen_tmp(dfd, name) : NULL;
	if (!f) {
		err = ents ? -errno : -ENOMEM;
		free(ents);
		close(dfd);
		return err;
	}
	fprintf(f, "# gala-gopher-profile v1 event=%s unit=%s period_us=%u from_ms=%" PRIu64 " until_ms=%" PRIu64 "\n",
		sp_event_query_names[ev], sp_event_units[ev], period_us, from_ms, until_ms);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%u\t%u\t%s\t%" PRIu64 "\n", ents[i]->a, ents[i]->b, ents[i]->key, ents[i]->value);
	free(ents);
	err = probe_outdir__commit(dfd, name, f, 0);
	close(dfd);
	return err;
}

struct sfile {
	char name[64];
	uint64_t until_ms;
	off_t size;
};

static int sfile_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sfile *)a)->name, ((const struct sfile *)b)->name);
}

int sp_store__expire(const char *flame_dir, uint64_t now_ms, unsigned int retention_s, uint64_t max_bytes)
{
	for (int ev = 0; ev < SP_EV_NR; ev++) {
		char sub[64];
		struct sfile *v = NULL;
		size_t n = 0, cap = 0;
		uint64_t total = 0;
		struct dirent *de;
		int dfd, fd;
		DIR *d;

		snprintf(sub, sizeof(sub), "store/%s", sp_event_query_names[ev]);
		dfd = probe_outdir__open_sub(flame_dir, sub, 0);
		if (dfd < 0)
			continue;
		fd = dup(dfd);
		d = fd < 0 ? NULL : fdopendir(fd);
		if (!d) {
			if (fd >= 0)
				close(fd);
			close(dfd);
			continue;
		}
		while ((de = readdir(d))) {
			uint64_t from, until;
			struct stat sb;
			char end;

			if (strlen(de->d_name) >= sizeof(v->name) ||
			    sscanf(de->d_name, "%" SCNu64 "-%" SCNu64 ".pro%c", &from, &until, &end) != 3 || end != 'f')
				continue;
			if (until + (uint64_t)retention_s * 1000u < now_ms) {
				(void)unlinkat(dfd, de->d_name, 0);
				continue;
			}
			if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
				continue;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct sfile *nv = realloc(v, ncap * sizeof(*nv));

				if (!nv)
					break;
				v = nv;
				cap = ncap;
			}
			snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
			v[n].until_ms = until;
			v[n].size = sb.st_size;
			total += (uint64_t)sb.st_size;
			n++;
		}
		closedir(d);
		/* over the size budget (per event type): the oldest go first */
		if (n > 1)
			qsort(v, n, sizeof(*v), sfile_cmp);
		for (size_t i = 0; i + 1 < n && total > max_bytes / SP_EV_NR; i++) {
			if (!unlinkat(dfd, v[i].name, 0))
				total -= (uint64_t)v[i].size;
		}
		free(v);
		close(dfd);
	}
	return 0;
}
