/* l7_pairs.c - the capture's cost per send/receive pair without a server or load generator in the way:
 * a loopback TCP connection in one process, N times a writev of two iovecs (a 9-byte frame header and a
 * body, as nginx's HTTP/2 writes) on one end and a read of it on the other; prints the process's CPU
 * time per pair. Driven by bench/l7_pairs.py (l7probe off and on, builds alternated). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	size_t body = argc > 2 ? (size_t)atol(argv[2]) : 627;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	static char hdr[9], buf[65536], in[65536];
	int l, c, s, one = 1, ret = 1;
	double t0;

	if (n <= 0 || body > sizeof(buf))
		return 2;
	memset(buf, 'x', sizeof(buf));
	memcpy(hdr, "\0\0\0\0\1\0\0\0\1", 9);
	l = socket(AF_INET, SOCK_STREAM, 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al) || connect(c, (struct sockaddr *)&a, sizeof(a))) {
		perror("l7_pairs: socket");
		return 1;
	}
	s = accept(l, NULL, NULL);
	if (s < 0) {
		perror("l7_pairs: accept");
		return 1;
	}
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* ready: the driver starts the probe on this pid, then writes a line */
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(in, sizeof(in), stdin))
		return 1;
	t0 = cpu_s();
	for (long i = 0; i < n; i++) {
		struct iovec iov[2] = {{hdr, sizeof(hdr)}, {buf, body}};
		size_t want = sizeof(hdr) + body, got = 0;

		if (writev(c, iov, 2) != (ssize_t)want)
			goto cleanup;
		while (got < want) {
			ssize_t r = read(s, in, sizeof(in));

			if (r <= 0)
				goto cleanup;
			got += (size_t)r;
		}
	}
	printf("%.3f\n", (cpu_s() - t0) * 1e9 / (double)n);
	ret = 0;
cleanup:
	close(s);
	close(c);
	close(l);
	return ret;
}
