/* probe_util.c - clocks, tracefs mounting and whole-file reads of /proc and /sys for probes. */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "probe_array.h"

static uint64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int probe_opt_other(const char *prog, int c, int version_opt, char **argv, void (*usage)(FILE *f))
{
	if (c == 'h') {
		usage(stdout);
		return 0;
	}
	if (c == version_opt) {
		printf("%s %s\n", prog, GG_VERSION);
		return 0;
	}
	if (c == ':')
		fprintf(stderr, "%s: option '%s' needs a value\n", prog, argv[optind - 1]);
	else if (optopt)
		fprintf(stderr, "%s: unknown option '-%c'\n", prog, optopt);
	else
		fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[optind - 1]);
	fprintf(stderr, "Try '%s --help'.\n", prog);
	return 2;
}

int probe_opt_rest(const char *prog, int argc, char **argv)
{
	if (optind >= argc)
		return -1;
	fprintf(stderr, "%s: unexpected argument '%s'\nTry '%s --help'.\n", prog, argv[optind], prog);
	return 2;
}

int probe_parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return -ERANGE;
	*ret = (unsigned int)v;
	return 0;
}

uint64_t probe_now_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

uint64_t probe_now_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int probe_ensure_tracefs(void)
{
	if (access("/sys/kernel/tracing/events", F_OK) == 0)
		return 0;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
		return -errno;
	return 0;
}

/* Grow b to hold want bytes, but never more than limit. */
static int buf_grow(struct probe_buf *b, size_t want, size_t limit)
{
	char *p = probe_array_reserve(b->data, &b->cap, 1, want, 4096, limit);

	if (!p)
		return -ENOMEM;
	b->data = p;
	return 0;
}

int probe_read_file(const char *path, struct probe_buf *b, size_t max)
{
	int fd, err;

	b->len = 0;
	err = buf_grow(b, 1, max + 1);
	if (err)
		return err;
	b->data[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		size_t room;
		ssize_t n;

		if (b->len >= max) {
			char c;

			/* Full up to the limit: fine only when this was the end of the file. */
			n = read(fd, &c, 1);
			if (n < 0 && errno == EINTR)
				continue;
			err = n == 0 ? 0 : n < 0 ? -errno : -EFBIG;
			break;
		}
		/* Keep one byte for the NUL; a full buffer means "maybe more": grow and go on. */
		if (b->len + 1 >= b->cap) {
			err = buf_grow(b, b->cap * 2, max + 1);
			if (err)
				break;
		}
		room = (b->cap - 1 < max ? b->cap - 1 : max) - b->len;
		n = read(fd, b->data + b->len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	close(fd);
	if (err)
		b->len = 0;
	b->data[b->len] = '\0';
	return err;
}

void probe_buf__free(struct probe_buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int probe_proc_start(struct probe_buf *b, const char *proc_root, uint32_t pid, uint64_t *ret_start)
{
	char path[192];
	const char *p;
	unsigned long long start = 0;

	snprintf(path, sizeof(path), "%s/%u/stat", proc_root ? proc_root : "/proc", pid);
	if (probe_read_file(path, b, 4096))
		return -ESRCH;
	p = strrchr(b->data, ')'); /* comm may hold spaces and parentheses */
	/* after "(comm)": state is field 3, starttime field 22 */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return -EINVAL;
	*ret_start = start;
	return 0;
}

int probe_wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		uint64_t now = gg_mono_ns();
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (r > 0 || (r < 0 && errno != EINTR))
			return 0;
	}
}
