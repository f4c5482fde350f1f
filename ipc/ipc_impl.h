/* ipc_impl.h - helpers shared by the ipc/ sources only (not part of the public contract). */
#ifndef GG_IPC_IMPL_H
#define GG_IPC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>

/* NNG error code -> negative errno, so callers see one error convention. */
int ipc__nng_err(int rv);
/* An endpoint's zeroed state (calloc(1, size)), or NULL with errno EINVAL when !valid (the caller's
 * arguments are not) or ENOMEM. */
void *ipc__alloc(int valid, size_t size);
/* The socket state every endpoint keeps: whether the socket is open (so __free knows to close it), the
 * endpoint's own listener (listening ends, so that relisten can replace it) and the fd that polls
 * readable when a message waits (receiving ends; -1 until fetched). */
struct ipc__ep {
	nng_socket sock;
	int sock_open;
	nng_listener listener;
	int fd;
};
/* Open ep's socket with open (nng_pub0_open, nng_sub0_open); no listener, fd -1 yet. 0 or negative
 * errno. */
int ipc__ep_open(struct ipc__ep *ep, int (*open)(nng_socket *));
/* Listen on url, replacing ep's listener (see ipc__relisten): 0, negative errno, -EINVAL when ep is
 * NULL or its socket is not open. */
int ipc__ep_relisten(struct ipc__ep *ep, const char *url);
/* Fetch ep->fd from the socket. 0 or negative errno. */
int ipc__ep_recvfd(struct ipc__ep *ep);
/* How an endpoint's socket is set up, in this order: opened with open; its queue lengths (messages)
 * and largest message set, 0 leaving NNG's default; subscribed to topic (SUB sockets; NULL: none); the
 * pipe callbacks with cb NULL skipped registered; then it listens on url (relisten-able) or dials it;
 * last, with want_fd, the fd that polls readable is fetched. */
struct ipc__ep_conf {
	int (*open)(nng_socket *);
	int sendbuf;
	int recvbuf;
	size_t recvmaxsz;
	const char *topic;
	size_t topic_len;
	struct {
		nng_pipe_ev ev;
		nng_pipe_cb cb;
	} notify[2];
	const char *url;
	int listen;
	int want_fd;
};
/* Set up ep's socket as c says, cb_arg going to the pipe callbacks. 0 or negative errno; on failure
 * the caller's __free closes what was opened. */
int ipc__ep_start(struct ipc__ep *ep, const struct ipc__ep_conf *c, void *cb_arg);
/* A zeroed endpoint of size bytes whose struct begins with its struct ipc__ep, started as c says with
 * itself as the pipe callbacks' arg; NULL with errno EINVAL when !valid, or the error. Only for
 * endpoints with nothing else to set up or free until this returns. */
void *ipc__ep_new(int valid, size_t size, const struct ipc__ep_conf *c);
/* Take the next waiting message without blocking: 1 and *ret_msg, 0 when none waits, or negative
 * errno. */
int ipc__ep_recv(struct ipc__ep *ep, nng_msg **ret_msg);
/* Close ep's socket when it is open (NULL: nothing). */
void ipc__ep_close(struct ipc__ep *ep);
/* Monotonic clock in ms (flush ages, linger deadlines). */
uint64_t ipc__now_ms(void);
/*
 * Before listening on an ipc:// url, remove a socket file left by a dead process; a file someone is
 * still accepting on is left alone (-EADDRINUSE), as is anything that is not a socket (the listen then
 * fails). Other schemes: no-op, 0.
 */
int ipc__unlink_stale(const char *url);
/* Dial url in the background (NNG redials, IPC__RECONN_MIN_MS to _MAX_MS apart, until the listener is
 * there). 0 or negative errno. */
int ipc__dial(nng_socket s, const char *url);
/* Listen on url with a listener of our own (so that it can be replaced): the old one, when *l is
 * valid, is closed first. Stale sockets at url are removed as by ipc__unlink_stale. */
int ipc__relisten(nng_socket sock, nng_listener *l, const char *url);
/* s as a decimal integer: 1 to 19 digits, nothing else (no sign, no space). 0, or -EINVAL (also for
 * NULL). */
int ipc__decimal(const char *s, unsigned long long *ret);

/* Dialers retry quickly at first (the supervisor usually comes up within milliseconds) but back off
 * to 1 s so a probe without a supervisor does not spin. */
#define IPC__RECONN_MIN_MS 50
#define IPC__RECONN_MAX_MS 1000

#endif
