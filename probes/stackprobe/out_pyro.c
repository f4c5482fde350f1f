/* out_pyro.c - uploads folded stacks to a Pyroscope server (POST /ingest, format=folded) over a plain
 * HTTP/1.1 connection, every step bounded by a timeout. */
#include "probe.h"
#include "stackprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* "host:port", "http://host:port", "[v6]:port" -> host and port strings. */
static int split_server(const char *server, char *host, size_t hlen, char *port, size_t plen)
{
	const char *p = server, *colon;
	size_t n;

	if (!strncmp(p, "http://", 7))
		p += 7;
	if (*p == '[') {
		const char *close = strchr(p, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		n = (size_t)(close - p - 1);
		if (n == 0 || n >= hlen)
			return -EINVAL;
		memcpy(host, p + 1, n);
		host[n] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(p, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - p);
		if (n == 0 || n >= hlen)
			return -EINVAL;
		memcpy(host, p, n);
		host[n] = '\0';
	}
	n = strcspn(colon + 1, "/");
	if (n == 0 || n >= plen)
		return -EINVAL;
	memcpy(port, colon + 1, n);
	port[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (port[i] < '0' || port[i] > '9')
			return -EINVAL;
	return 0;
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = probe_now_mono_ms();
		struct pollfd pfd = {.fd = fd, .events = events};
		int r;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(deadline - now));
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int connect_to(const char *host, const char *port, uint64_t deadline)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	int fd = -1, err = -EHOSTUNREACH;

	if (getaddrinfo(host, port, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS && !(err = wait_fd(fd, POLLOUT, deadline)) &&
		    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) && soerr == 0)
			break;
		if (soerr)
			err = -soerr;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : err;
}

static int send_all(int fd, const char *p, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		int err = wait_fd(fd, POLLOUT, deadline);

		if (err)
			return err;
	}
	return 0;
}

/* Percent-encode everything but unreserved characters. */
static void url_encode(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '_' || c == '.' || c == '~') {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

int sp_pyro__upload(const char *server, const char *name, uint64_t from_s, uint64_t until_s, const char *units,
		    unsigned int sample_rate, const char *body, size_t len, unsigned int timeout_ms, int *ret_status)
{
	char host[256], port[16], ename[512], head[1536], resp[256];
	uint64_t deadline = probe_now_mono_ms() + timeout_ms;
	size_t got = 0;
	int fd, err, hl, status = 0;

	*ret_status = 0;
	err = split_server(server, host, sizeof(host), port, sizeof(port));
	if (err)
		return err;
	url_encode(name, ename, sizeof(ename));
	hl = snprintf(head, sizeof(head),
		      "POST /ingest?name=%s&from=%" PRIu64 "&until=%" PRIu64
		      "&units=%s&sampleRate=%u&format=folded HTTP/1.1\r\n"
		      "Host: %s%s%s:%s\r\n"
		      "User-Agent: gala-gopher-stackprobe\r\n"
		      "Content-Type: text/plain\r\n"
		      "Content-Length: %zu\r\n"
		      "Connection: close\r\n\r\n",
		      ename, from_s, until_s, units, sample_rate, strchr(host, ':') ? "[" : "", host,
		      strchr(host, ':') ? "]" : "", port, len);
	if (hl < 0 || (size_t)hl >= sizeof(head))
		return -E2BIG;
	fd = connect_to(host, port, deadline);
	if (fd < 0)
		return fd;
	err = send_all(fd, head, (size_t)hl, deadline);
	if (!err)
		err = send_all(fd, body, len, deadline);
	/* the status line is all we need */
	while (!err && got < sizeof(resp) - 1 && !memchr(resp, '\n', got)) {
		ssize_t n = recv(fd, resp + got, sizeof(resp) - 1 - got, 0);

		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno != EAGAIN && errno != EINTR) {
			err = -errno;
			break;
		}
		err = wait_fd(fd, POLLIN, deadline);
	}
	close(fd);
	if (err)
		return err;
	resp[got] = '\0';
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		return -EPROTO;
	*ret_status = status;
	return status >= 200 && status < 300 ? 0 : -EREMOTEIO;
}
