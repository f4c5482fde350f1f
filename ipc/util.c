/* util.c - small helpers the ipc/ sources share: NNG error mapping, endpoint allocation, an endpoint's
 * socket (open, listen, receive, close), clock, stale socket cleanup. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/sub.h>

#include "ipc_impl.h"

void *ipc__alloc(int valid, size_t size)
{
	void *p;

	if (!valid) {
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, size);
	if (!p)
		errno = ENOMEM;
	return p;
}

int ipc__ep_open(struct ipc__ep *ep, int (*open)(nng_socket *))
{
	int rv;

	ep->fd = -1;
	ep->listener = (nng_listener)NNG_LISTENER_INITIALIZER;
	rv = open(&ep->sock);
	if (rv != 0)
		return ipc__nng_err(rv);
	ep->sock_open = 1;
	return 0;
}

int ipc__ep_relisten(struct ipc__ep *ep, const char *url)
{
	if (!ep || !ep->sock_open)
		return -EINVAL;
	return ipc__relisten(ep->sock, &ep->listener, url);
}

int ipc__ep_recvfd(struct ipc__ep *ep)
{
	return ipc__nng_err(nng_socket_get_int(ep->sock, NNG_OPT_RECVFD, &ep->fd));
}

/* The socket options: applied before any peer can connect, so no message sees NNG's defaults. */
static int ep_set_options(struct ipc__ep *ep, const struct ipc__ep_conf *c, void *cb_arg)
{
	int rv = 0;

	if (c->sendbuf && (rv = nng_socket_set_int(ep->sock, NNG_OPT_SENDBUF, c->sendbuf)) != 0)
		return ipc__nng_err(rv);
	if (c->recvbuf && (rv = nng_socket_set_int(ep->sock, NNG_OPT_RECVBUF, c->recvbuf)) != 0)
		return ipc__nng_err(rv);
	if (c->recvmaxsz && (rv = nng_socket_set_size(ep->sock, NNG_OPT_RECVMAXSZ, c->recvmaxsz)) != 0)
		return ipc__nng_err(rv);
	if (c->topic && (rv = nng_socket_set(ep->sock, NNG_OPT_SUB_SUBSCRIBE, c->topic, c->topic_len)) != 0)
		return ipc__nng_err(rv);
	for (size_t i = 0; i < sizeof(c->notify) / sizeof(c->notify[0]); i++) {
		if (c->notify[i].cb && (rv = nng_pipe_notify(ep->sock, c->notify[i].ev, c->notify[i].cb, cb_arg)) != 0)
			return ipc__nng_err(rv);
	}
	return 0;
}

int ipc__ep_start(struct ipc__ep *ep, const struct ipc__ep_conf *c, void *cb_arg)
{
	int err;

	err = ipc__ep_open(ep, c->open);
	if (err < 0)
		return err;
	err = ep_set_options(ep, c, cb_arg);
	if (err < 0)
		return err;
	err = c->listen ? ipc__ep_relisten(ep, c->url) : ipc__dial(ep->sock, c->url);
	if (err < 0)
		return err;
	return c->want_fd ? ipc__ep_recvfd(ep) : 0;
}

void *ipc__ep_new(int valid, size_t size, const struct ipc__ep_conf *c)
{
	struct ipc__ep *ep = ipc__alloc(valid, size);
	int err;

	if (!ep)
		return NULL;
	err = ipc__ep_start(ep, c, ep);
	if (err < 0) {
		ipc__ep_close(ep);
		free(ep);
		errno = -err;
		return NULL;
	}
	return ep;
}

int ipc__ep_recv(struct ipc__ep *ep, nng_msg **ret_msg)
{
	int rv = nng_recvmsg(ep->sock, ret_msg, NNG_FLAG_NONBLOCK);

	if (rv == NNG_EAGAIN)
		return 0;
	return rv != 0 ? ipc__nng_err(rv) : 1;
}

void ipc__ep_close(struct ipc__ep *ep)
{
	if (ep && ep->sock_open)
		nng_close(ep->sock);
}

int ipc__nng_err(int rv)
{
	if (rv == 0)
		return 0;
	if (rv & NNG_ESYSERR)
		return -(rv & ~NNG_ESYSERR);
	switch (rv) {
	case NNG_EINTR:
		return -EINTR;
	case NNG_ENOMEM:
		return -ENOMEM;
	case NNG_EINVAL:
	case NNG_EADDRINVAL:
	case NNG_EBADTYPE:
		return -EINVAL;
	case NNG_EBUSY:
		return -EBUSY;
	case NNG_ETIMEDOUT:
		return -ETIMEDOUT;
	case NNG_ECONNREFUSED:
		return -ECONNREFUSED;
	case NNG_ECLOSED:
		return -EBADF;
	case NNG_EAGAIN:
		return -EAGAIN;
	case NNG_ENOTSUP:
		return -ENOTSUP;
	case NNG_EADDRINUSE:
		return -EADDRINUSE;
	case NNG_ESTATE:
		return -EPROTO;
	case NNG_ENOENT:
		return -ENOENT;
	case NNG_EPROTO:
		return -EPROTO;
	case NNG_EUNREACHABLE:
		return -EHOSTUNREACH;
	case NNG_EPERM:
		return -EPERM;
	case NNG_EMSGSIZE:
		return -EMSGSIZE;
	case NNG_ECONNABORTED:
		return -ECONNABORTED;
	case NNG_ECONNRESET:
		return -ECONNRESET;
	case NNG_ECANCELED:
		return -ECANCELED;
	case NNG_ENOFILES:
		return -EMFILE;
	case NNG_ENOSPC:
		return -ENOSPC;
	case NNG_EEXIST:
		return -EEXIST;
	case NNG_EREADONLY:
		return -EROFS;
	case NNG_EWRITEONLY:
		return -EACCES;
	default:
		return -EIO;
	}
}

uint64_t ipc__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int ipc__unlink_stale(const char *url)
{
	static const char scheme[] = "ipc://";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path;
	struct stat st;
	int fd, rc;

	if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
		return 0;
	path = url + sizeof(scheme) - 1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return 0;
	/* Only a refused connection proves nobody listens; unlinking a live socket would silently take
	 * the probes away from a running supervisor. */
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (rc == 0) {
		close(fd);
		return -EADDRINUSE;
	}
	rc = errno;
	close(fd);
	if (rc != ECONNREFUSED)
		return -rc;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int ipc__decimal(const char *s, unsigned long long *ret)
{
	unsigned long long v = 0;
	size_t n = 0;

	if (!s)
		return -EINVAL;
	for (; s[n]; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= 19)
			return -EINVAL;
		v = v * 10 + (unsigned long long)(s[n] - '0');
	}
	if (!n)
		return -EINVAL;
	*ret = v;
	return 0;
}

int ipc__relisten(nng_socket sock, nng_listener *l, const char *url)
{
	int rv, err;

	if (nng_listener_id(*l) > 0) {
		/* The path may be gone (run_dir deleted): closing only releases the listening fd. */
		(void)nng_listener_close(*l);
		*l = (nng_listener)NNG_LISTENER_INITIALIZER;
	}
	err = ipc__unlink_stale(url);
	if (err < 0)
		return err;
	rv = nng_listener_create(l, sock, url);
	if (rv == 0)
		rv = nng_listener_start(*l, 0);
	if (rv != 0) {
		if (nng_listener_id(*l) > 0)
			(void)nng_listener_close(*l);
		*l = (nng_listener)NNG_LISTENER_INITIALIZER;
		return ipc__nng_err(rv);
	}
	return 0;
}

int ipc__dial(nng_socket s, const char *url)
{
	int rv;

	if ((rv = nng_socket_set_ms(s, NNG_OPT_RECONNMINT, IPC__RECONN_MIN_MS)) != 0 ||
	    (rv = nng_socket_set_ms(s, NNG_OPT_RECONNMAXT, IPC__RECONN_MAX_MS)) != 0 ||
	    (rv = nng_dial(s, url, NULL, NNG_FLAG_NONBLOCK)) != 0)
		return ipc__nng_err(rv);
	return 0;
}
