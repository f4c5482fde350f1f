/* udp_blast.c - sends small UDP datagrams to addr:port at a given rate (0: as fast as it can) for a given
 * time, in sendmmsg batches, and prints "sent N in S s": the drop load of bench/kdiag_drop_cost.py. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	struct mmsghdr msgs[BATCH];
	struct iovec iov;
	char payload[32];
	double rate, dur, t0, t;
	unsigned long long sent = 0;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: udp_blast ADDR PORT PACKETS_PER_S(0: max) SECONDS\n");
		return 2;
	}
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, argv[1], &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((unsigned short)atoi(argv[2]));
		sl = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, argv[1], &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((unsigned short)atoi(argv[2]));
		sl = sizeof(struct sockaddr_in6);
	} else {
		fprintf(stderr, "udp_blast: bad address %s\n", argv[1]);
		return 2;
	}
	rate = atof(argv[3]);
	dur = atof(argv[4]);
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	memset(payload, 'x', sizeof(payload));
	iov.iov_base = payload;
	iov.iov_len = sizeof(payload);
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		msgs[i].msg_hdr.msg_name = &ss;
		msgs[i].msg_hdr.msg_namelen = sl;
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	t0 = now_s();
	while ((t = now_s()) - t0 < dur) {
		int n;

		/* paced: no more than rate * elapsed so far */
		if (rate > 0 && (double)sent >= rate * (t - t0)) {
			struct timespec d = {0, 50000};

			nanosleep(&d, NULL);
			continue;
		}
		n = sendmmsg(fd, msgs, BATCH, 0);
		if (n < 0) {
			if (errno == EPERM || errno == ENOBUFS || errno == EAGAIN)
				continue;
			perror("sendmmsg");
			return 1;
		}
		sent += (unsigned long long)n;
	}
	printf("sent %llu in %.3f s\n", sent, now_s() - t0);
	close(fd);
	return 0;
}
