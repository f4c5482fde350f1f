/* log.c - size-rotated files and the supervisor's own log. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int rot_file__open(struct rot_file *f, const char *path, uint64_t max_size, unsigned int keep)
{
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	f->max_size = max_size;
	f->keep = keep ? keep : 1;
	f->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (f->fd < 0) {
		int err = -errno;

		free(f->path);
		f->path = NULL;
		return err;
	}
	if (fstat(f->fd, &st) == 0)
		f->size = (uint64_t)st.st_size;
	return 0;
}

static int rot_file__rotate(struct rot_file *f)
{
	size_t n = strlen(f->path) + 16;
	char *from = malloc(n), *to = malloc(n);
	int fd;

	if (!from || !to) {
		free(from);
		free(to);
		return -ENOMEM;
	}
	for (unsigned int i = f->keep; i > 1; i--) {
		snprintf(from, n, "%s.%u", f->path, i - 1);
		snprintf(to, n, "%s.%u", f->path, i);
		(void)rename(from, to);
	}
	snprintf(to, n, "%s.1", f->path);
	(void)rename(f->path, to);
	free(from);
	free(to);
	fd = open(f->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	close(f->fd);
	f->fd = fd;
	f->size = 0;
	return 0;
}

int rot_file__write(struct rot_file *f, const void *buf, size_t len)
{
	const char *p = buf;

	if (f->fd < 0)
		return -EBADF;
	if (f->max_size && f->size && f->size + len > f->max_size)
		(void)rot_file__rotate(f);
	while (len) {
		ssize_t w = write(f->fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			f->write_errors++;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
		f->size += (uint64_t)w;
	}
	return 0;
}

static size_t count_lines(const char *p, size_t len)
{
	size_t n = 0;

	for (const char *e = p + len; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
		n++;
	return n;
}

int rot_file__write_lines(struct rot_file *f, const char *buf, size_t len, size_t *ret_lost)
{
	size_t done = 0, keep;
	off_t start;
	int err = 0;

	*ret_lost = 0;
	if (f->fd < 0) {
		*ret_lost = count_lines(buf, len);
		return -EBADF;
	}
	if (f->max_size && f->size && f->size + len > f->max_size)
		(void)rot_file__rotate(f);
	start = lseek(f->fd, 0, SEEK_END); /* O_APPEND: where this write lands */
	while (done < len) {
		ssize_t w = write(f->fd, buf + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -ENOSPC;
			break;
		}
		done += (size_t)w;
	}
	if (!err) {
		f->size += len;
		return 0;
	}
	f->write_errors++;
	/* Keep what ends a line; take back the partial one. */
	for (keep = done; keep && buf[keep - 1] != '\n'; keep--)
		;
	if (start >= 0 && keep < done && ftruncate(f->fd, start + (off_t)keep) == 0)
		done = keep;
	f->size = start >= 0 ? (uint64_t)start + done : f->size + done;
	*ret_lost = count_lines(buf + keep, len - keep);
	return err;
}

void rot_file__close(struct rot_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->path);
	f->path = NULL;
}

static struct {
	struct rot_file file;
	int open;
	int to_stderr;
	enum gg_log_level level;
} g_log = {.to_stderr = 1, .level = GG_LOG_INFO};

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

int gg_log_level__parse(const char *s, enum gg_log_level *ret)
{
	static const char *const alt[] = {"debug", "info", "warn", "error"};

	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(s, alt[i])) {
			*ret = (enum gg_log_level)i;
			return 0;
		}
	}
	if (!strcasecmp(s, "warning")) {
		*ret = GG_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

int gg_log_open(const char *path, uint64_t max_size, enum gg_log_level level)
{
	int err = rot_file__open(&g_log.file, path, max_size, 2);

	if (err)
		return err;
	g_log.open = 1;
	g_log.level = level;
	return 0;
}

void gg_log_set_stderr(int on)
{
	g_log.to_stderr = on;
}

void gg_log_close(void)
{
	if (g_log.open)
		rot_file__close(&g_log.file);
	g_log.open = 0;
}

void gg_log_timestamp(char *buf, size_t len)
{
	struct timeval tv;
	struct tm tm;
	size_t n;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	if (n && n < len)
		snprintf(buf + n, len - n, ".%03ld", (long)(tv.tv_usec / 1000));
}

size_t gg_log_vformat(char *line, size_t size, const char *tag, const char *fmt, va_list ap)
{
	char ts[32];
	int n, m;

	gg_log_timestamp(ts, sizeof(ts));
	n = snprintf(line, size, "%s %s ", ts, tag);
	if (n < 0 || (size_t)n >= size - 1)
		n = 0;
	m = vsnprintf(line + n, size - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > size - 2)
		n = (int)size - 2;
	line[n++] = '\n';
	return (size_t)n;
}

void gg_log(enum gg_log_level level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	size_t n;

	if (level < g_log.level)
		return;
	va_start(ap, fmt);
	n = gg_log_vformat(line, sizeof(line), level_names[level], fmt, ap);
	va_end(ap);
	if (g_log.open) {
		size_t lost;

		(void)rot_file__write_lines(&g_log.file, line, n, &lost); /* whole lines, even on a full disk */
	}
	if (g_log.to_stderr || !g_log.open)
		(void)!write(STDERR_FILENO, line, n);
}
