/* util.c - small file helpers for stackprobe's writers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stackprobe.h"

int sp_tmp_commit(const char *tmp, const char *path, int err)
{
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int sp_write_file_atomic(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX + 8];
	const char *p = data;
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) && !err)
		err = -errno;
	return sp_tmp_commit(tmp, path, err);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void sp_dir_trim(const char *dir, const char *suffix, unsigned int max)
{
	size_t slen = strlen(suffix), n = 0, cap = 0;
	char **names = NULL;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
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
		for (size_t i = 0; i < n - max; i++) {
			char path[PATH_MAX + 256];

			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			(void)unlink(path);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
