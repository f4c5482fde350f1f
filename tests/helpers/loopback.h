/* loopback.h - how the test clients and benchmark tools reach a TCP server of ours: a connection to
 * 127.0.0.1:port. */
#ifndef GG_TEST_LOOPBACK_H
#define GG_TEST_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

/* A socket connected to 127.0.0.1:port, or -1 (nothing left open). */
static inline int loopback__connect(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

#endif
