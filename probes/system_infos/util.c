/* util.c - small helpers the system_infos sub-probes share: one-line file reads and percentages. */
#include "system_infos.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int si_read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

double si_percent(double part, double whole)
{
	double v;

	if (!(whole > 0) || !(part >= 0))
		return 0;
	v = part * 100.0 / whole;
	return (double)(uint64_t)(v * 100.0 + 0.5) / 100.0;
}
