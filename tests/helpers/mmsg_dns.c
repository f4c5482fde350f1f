/* mmsg_dns.c - a DNS responder on 127.0.0.1:PORT (UDP) that reads queries with recvmmsg (up to 8 at
 * once, MSG_WAITFORONE: the batch ends with a failing EAGAIN message) and answers each batch with one
 * sendmmsg: NXDOMAIN for names whose first label starts with "no", else NOERROR without answers. For
 * test_l7_gaps. Usage: mmsg_dns PORT N; prints "ready", exits after answering N queries, printing
 * "answered N batches B". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VLEN 8

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	static unsigned char buf[VLEN][512];
	struct sockaddr_in peer[VLEN];
	struct mmsghdr msgs[VLEN];
	struct iovec iov[VLEN];
	int s, want, done = 0, batches = 0;

	if (argc < 3)
		return 2;
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	want = atoi(argv[2]);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("mmsg_dns");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	/* set up once, as servers do: the msg_len fields keep the previous batch's values */
	memset(msgs, 0, sizeof(msgs));
	while (done < want) {
		int n;

		for (int i = 0; i < VLEN; i++) {
			iov[i].iov_base = buf[i];
			iov[i].iov_len = sizeof(buf[i]);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &peer[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(peer[i]);
		}
		n = recvmmsg(s, msgs, VLEN, MSG_WAITFORONE, NULL);
		if (n <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			unsigned char *q = buf[i];
			unsigned int len = msgs[i].msg_len;

			if (len < 13)
				continue;
			q[2] |= 0x80; /* QR */
			q[3] = (q[3] & 0xf0) | (q[13] == 'n' && q[14] == 'o' ? 3 : 0);
			iov[i].iov_len = len;
			msgs[i].msg_hdr.msg_namelen = sizeof(peer[i]);
		}
		if (sendmmsg(s, msgs, (unsigned int)n, 0) != n)
			perror("sendmmsg");
		done += n;
		batches++;
	}
	printf("answered %d batches %d\n", done, batches);
	close(s);
	return 0;
}
