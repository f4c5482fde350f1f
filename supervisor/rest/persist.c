/* persist.c - atomic per-probe JSON files for the REST API's configuration (temp + fsync + rename). */
#include "persist.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

static int valid_name(const char *s)
{
	if (!s || !s[0] || strlen(s) > 64)
		return 0;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return 0;
	}
	return 1;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int gg_persist__save(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, dfd, err;

	if (!dir || !valid_name(name) || !text)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/%s.json", dir, name) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.json.tmp", dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	err = gg_mkdir_p(dir, 0700);
	if (err)
		return err;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	err = write_all(fd, text, strlen(text));
	if (!err && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err) {
		unlink(tmp);
		return err;
	}
	/* The rename itself must reach the disk too. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) < 0)
			err = -errno;
		close(dfd);
	}
	return err;
}

int gg_persist__load(const char *dir, const char *name, size_t max, char **ret)
{
	char path[PATH_MAX];

	if (!dir || !valid_name(name))
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/.%s.json.tmp", dir, name) < (int)sizeof(path))
		(void)unlink(path); /* an interrupted save: the real file is still the previous one */
	if (snprintf(path, sizeof(path), "%s/%s.json", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return gg_read_file(path, O_NOFOLLOW, max, ret, NULL);
}

int gg_persist__remove(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (!dir || !valid_name(name))
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/%s.json", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
