/* probe_outdir.c - confined output directories: component-by-component opens below the output base. */
#include "probe_outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Length of the output base that path is below (as spelled), 0 when none. */
static size_t base_of(const char *path)
{
	return gg_path_base_len(path, getenv(PROBE_OUTDIR_BASES_ENV));
}

/* Walk rel (components separated by '/') from the directory fd dfd, which is consumed. */
static int walk(int dfd, const char *rel, int create)
{
	char comp[NAME_MAX + 1];

	while (*rel) {
		size_t n = strcspn(rel, "/");
		int fd;

		if (n > NAME_MAX) {
			close(dfd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, rel, n);
		comp[n] = '\0';
		rel += n;
		while (*rel == '/')
			rel++;
		if (!n || !strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..")) {
			close(dfd);
			return -EINVAL;
		}
		fd = openat(dfd, comp, DIR_FLAGS);
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(dfd, comp, 0755) && errno != EEXIST) {
				int err = -errno;

				close(dfd);
				return err;
			}
			fd = openat(dfd, comp, DIR_FLAGS);
		}
		if (fd < 0) {
			int err = -errno;

			close(dfd);
			return err;
		}
		close(dfd);
		dfd = fd;
	}
	return dfd;
}

int probe_outdir__open(const char *path, int create)
{
	size_t bl;
	char base[PATH_MAX];
	int fd;

	if (!path || path[0] != '/')
		return -EINVAL;
	bl = base_of(path);
	if (!bl) {
		if (create && gg_mkdir_p(path, 0755))
			return -errno;
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	if (bl >= sizeof(base))
		return -ENAMETOOLONG;
	memcpy(base, path, bl);
	base[bl] = '\0';
	/* The base itself comes from the root-owned configuration: resolved as it is spelled. */
	fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return walk(fd, path + bl, create);
}

int probe_outdir__open_sub(const char *dir, const char *sub, int create)
{
	int dfd = probe_outdir__open(dir, create);

	return dfd < 0 ? dfd : walk(dfd, sub, create);
}

static int tmp_name(const char *name, char *buf, size_t len)
{
	return snprintf(buf, len, "%s.tmp", name) >= (int)len || strchr(name, '/') ? -EINVAL : 0;
}

FILE *probe_outdir__fopen_tmp(int dfd, const char *name)
{
	char tmp[NAME_MAX + 1];
	FILE *f;
	int fd, err = tmp_name(name, tmp, sizeof(tmp));

	if (err) {
		errno = -err;
		return NULL;
	}
	(void)unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		err = errno;
		close(fd);
		(void)unlinkat(dfd, tmp, 0);
		errno = err;
	}
	return f;
}

int probe_outdir__commit(int dfd, const char *name, FILE *f, int err)
{
	char tmp[NAME_MAX + 1];

	if (tmp_name(name, tmp, sizeof(tmp))) {
		if (f)
			fclose(f);
		return -EINVAL;
	}
	if (f) {
		if (!err && ferror(f))
			err = -EIO;
		if (fclose(f) && !err)
			err = -errno;
	}
	if (!err && renameat(dfd, tmp, dfd, name))
		err = -errno;
	if (err)
		(void)unlinkat(dfd, tmp, 0);
	return err;
}

int probe_outdir__write(int dfd, const char *name, const void *data, size_t len)
{
	FILE *f = probe_outdir__fopen_tmp(dfd, name);

	if (!f)
		return -errno;
	if (len && fwrite(data, 1, len, f) != len)
		return probe_outdir__commit(dfd, name, f, -EIO);
	return probe_outdir__commit(dfd, name, f, 0);
}
