/* net_pingpong.c - the per-round-trip cost the net probes add to a TCP (or UDP) exchange: two
 * threads ping-pong one small message over loopback; the best of several rounds is printed in ns
 * per round trip, so that a busy machine's noise (which only slows rounds down) is filtered out.
 * usage: net_pingpong [tcp|udp] [ROUND_TRIPS] [ROUNDS] */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

struct peer {
	int fd;
	long trips;
	int udp;
	struct sockaddr_in to;
};

static int xfer(int fd, char *buf, int udp, const struct sockaddr_in *to, int send_it)
{
	ssize_t n;

	if (send_it)
		n = udp ? sendto(fd, buf, MSG, 0, (const struct sockaddr *)to, sizeof(*to)) : send(fd, buf, MSG, 0);
	else
		n = recv(fd, buf, MSG, MSG_WAITALL);
	return n == MSG ? 0 : -1;
}

static void *echo(void *arg)
{
	struct peer *p = arg;
	char buf[MSG];

	for (long i = 0; i < p->trips; i++)
		if (xfer(p->fd, buf, p->udp, &p->to, 0) || xfer(p->fd, buf, p->udp, &p->to, 1))
			return (void *)1;
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* A connected pair over 127.0.0.1: a[0] client, a[1] server side. */
static int make_pair(int udp, int fds[2], struct sockaddr_in addrs[2])
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int one = 1, ls;

	if (udp) {
		for (int i = 0; i < 2; i++) {
			fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
			sa.sin_port = 0;
			if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)) ||
			    getsockname(fds[i], (struct sockaddr *)&addrs[i], &len))
				return -1;
		}
		return 0;
	}
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&sa, &len))
		return -1;
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	fds[1] = accept(ls, NULL, NULL);
	close(ls);
	if (fds[1] < 0)
		return -1;
	setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

int main(int argc, char **argv)
{
	int udp = argc > 1 && !strcmp(argv[1], "udp");
	long trips = argc > 2 ? atol(argv[2]) : 100000;
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	double best = 0;

	if (trips < 1 || rounds < 1) {
		fprintf(stderr, "usage: net_pingpong [tcp|udp] [ROUND_TRIPS] [ROUNDS]\n");
		return 2;
	}
	for (int r = 0; r < rounds; r++) {
		int fds[2];
		struct sockaddr_in addrs[2];
		struct peer p;
		pthread_t th;
		char buf[MSG] = {0};
		double t0, ns;
		void *ret;

		if (make_pair(udp, fds, addrs)) {
			fprintf(stderr, "net_pingpong: socket setup: %s\n", strerror(errno));
			return 1;
		}
		p = (struct peer){.fd = fds[1], .trips = trips, .udp = udp, .to = addrs[0]};
		if (pthread_create(&th, NULL, echo, &p))
			return 1;
		t0 = now_ns();
		for (long i = 0; i < trips; i++) {
			if (xfer(fds[0], buf, udp, &addrs[1], 1) || xfer(fds[0], buf, udp, &addrs[1], 0)) {
				fprintf(stderr, "net_pingpong: transfer failed: %s\n", strerror(errno));
				return 1;
			}
		}
		ns = (now_ns() - t0) / trips;
		pthread_join(th, &ret);
		close(fds[0]);
		close(fds[1]);
		if (ret)
			return 1;
		if (!best || ns < best)
			best = ns;
	}
	printf("%s %.0f ns per round trip (best of %d rounds of %ld)\n", udp ? "udp" : "tcp", best, rounds, trips);
	return 0;
}
