/* util.c - small helpers for stackprobe's writers: files in confined directories (probe_outdir.h), output buffers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_array.h"
#include "stackprobe.h"

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void sp_dir_trim(int dfd, const char *suffix, unsigned int max)
{
	size_t slen = strlen(suffix), n = 0, cap = 0;
	char **names = NULL;
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char *s;

		if (l <= slen || strcmp(de->d_name + l - slen, suffix))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			char **nv = realloc(names, ncap * sizeof(*nv));

			if (!nv)
				break;
			names = nv;
			cap = ncap;
		}
		s = strdup(de->d_name);
		if (!s)
			break;
		names[n++] = s;
	}
	closedir(d);
	if (n > max) {
		qsort(names, n, sizeof(*names), name_cmp);
		for (size_t i = 0; i < n - max; i++)
			(void)unlinkat(dfd, names[i], 0);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void sp_buf__reserve(struct sp_buf *b, size_t more)
{
	char *p;

	if (b->err)
		return;
	p = probe_array_reserve(b->s, &b->cap, 1, b->len + more + 1, 1024, SIZE_MAX);
	if (!p)
		b->err = -ENOMEM;
	else
		b->s = p;
}
