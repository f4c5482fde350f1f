/* task_load.c - a workload for the taskprobe tests: on commands read from stdin it makes an exact
 * number of file opens, writes, fsyncs and reads, getaddrinfo calls, forks and sleeps, and answers
 * "ok ..." on stdout when done, so a test knows what the probe must have seen.
 *
 * Commands (one per line):
 *   io N SIZE DIR   open DIR/task_load.<pid> once, then N pwrite + N fsync + N pread of SIZE bytes
 *                   (regular-file operations: 1 open, N writes, N fsyncs, N reads), close, unlink
 *   dns OK FAIL     OK getaddrinfo("127.0.0.1") that succeed and FAIL that fail ("not-an-address"),
 *                   both with AI_NUMERICHOST so that no file or network is touched
 *   fork N          N fork + _exit + waitpid
 *   sleep MS        one nanosleep of MS milliseconds
 *   exit            exit 0
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZE_MAX_IO (1u << 20)

static int do_io(unsigned long n, unsigned long size, const char *dir)
{
	char path[4200];
	char *buf;
	int fd;

	if (size == 0 || size > SIZE_MAX_IO)
		return -EINVAL;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	memset(buf, 'x', size);
	snprintf(path, sizeof(path), "%s/task_load.%d", dir, (int)getpid());
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (unsigned long i = 0; i < n; i++) {
		if (pwrite(fd, buf, size, (off_t)(i * size)) != (ssize_t)size || fsync(fd) < 0)
			goto fail;
	}
	for (unsigned long i = 0; i < n; i++) {
		if (pread(fd, buf, size, (off_t)(i * size)) != (ssize_t)size)
			goto fail;
	}
	close(fd);
	unlink(path);
	free(buf);
	return 0;
fail:
	close(fd);
	unlink(path);
	free(buf);
	return -EIO;
}

static int do_dns(unsigned long ok, unsigned long fail)
{
	struct addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	hints.ai_socktype = SOCK_STREAM;
	for (unsigned long i = 0; i < ok; i++) {
		if (getaddrinfo("127.0.0.1", NULL, &hints, &res) != 0)
			return -EINVAL;
		freeaddrinfo(res);
	}
	for (unsigned long i = 0; i < fail; i++) {
		if (getaddrinfo("not-an-address", NULL, &hints, &res) == 0) {
			freeaddrinfo(res);
			return -EINVAL;
		}
	}
	return 0;
}

static int do_fork(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0)
			return -errno;
		if (p == 0)
			_exit(0);
		if (waitpid(p, NULL, 0) < 0)
			return -errno;
	}
	return 0;
}

int main(void)
{
	char line[4200];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long a = 0, b = 0;
		char dir[4097];
		int err = -EINVAL;

		if (sscanf(line, "io %lu %lu %4096s", &a, &b, dir) == 3)
			err = do_io(a, b, dir);
		else if (sscanf(line, "dns %lu %lu", &a, &b) == 2)
			err = do_dns(a, b);
		else if (sscanf(line, "fork %lu", &a) == 1)
			err = do_fork(a);
		else if (sscanf(line, "sleep %lu", &a) == 1) {
			struct timespec ts = {(time_t)(a / 1000), (long)(a % 1000) * 1000000L};

			err = nanosleep(&ts, NULL) < 0 ? -errno : 0;
		} else if (!strncmp(line, "exit", 4)) {
			return 0;
		}
		if (err)
			printf("error %d %s", err, line);
		else
			printf("ok %s", line);
	}
	return 0;
}
