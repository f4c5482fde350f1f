/* fsutil.c - mkdir -p and reading small and whole files, for the supervisor and the probes alike. */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gg_mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t n = strlen(path);

	if (!n || n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -ENAMETOOLONG;
	}
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

ssize_t gg_read_small(const char *path, char *buf, size_t len)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)got + 1 < len) {
		n = read(fd, buf + got, len - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return err ? err : got;
}

int gg_read_file(const char *path, int flags, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0, cap;
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags), err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto cleanup;
	}
	if ((uint64_t)st.st_size > max) {
		err = -EFBIG;
		goto cleanup;
	}
	/* What the size says, read to the end when it says 0 (/proc, cgroupfs) */
	cap = st.st_size ? (size_t)st.st_size : 16384;
	buf = malloc(cap + 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		ssize_t n;

		if (got == cap) {
			char *nb;

			/* the size may change under us (a runtime rewriting it): what it said is what is read */
			if (st.st_size)
				break;
			if (cap >= max) {
				err = -EFBIG;
				goto cleanup;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = nb;
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*ret = buf;
	if (ret_len)
		*ret_len = got;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return err;
}

size_t gg_path_base_len(const char *path, const char *bases)
{
	const char *b = bases;

	while (b && *b) {
		size_t w = strcspn(b, ":"), bl = w;

		while (bl > 1 && b[bl - 1] == '/')
			bl--;
		if (bl && b[0] == '/' && !strncmp(path, b, bl) &&
		    (path[bl] == '/' || path[bl] == '\0' || (bl == 1 && path[0] == '/')))
			return bl;
		b += w;
		if (*b == ':')
			b++;
	}
	return 0;
}
