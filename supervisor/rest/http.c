/* http.c - the supervisor's HTTP(S) servers on libmicrohttpd: MHD's thread reads requests and enforces
 * limits, the libuv loop thread runs the handler (suspend -> uv_async_send -> handler -> resume). */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#define PEM_MAX	       (1u << 20) /* key, certificate and CA files are read whole; anything larger is refused */
#define CONN_TIMEOUT_S 10u	  /* idle keep-alive connections and stalled uploads are closed after this */
/* The gate (slow clients): a connection reaches MHD only once its request head (or, with TLS, its whole
 * ClientHello) has arrived, within GATE_HEAD_MS that bytes do not extend; GATE_PENDING_MAX wait at most,
 * the oldest is dropped for a newcomer. A body must arrive within BODY_MS of its head. */
#define GATE_PENDING_MAX 256u
#define GATE_HEAD_MS	 5000u
#define GATE_PEEK	 8192u
#define GATE_TICK_MS	 250u
#define BODY_MS		 10000u
#define LISTEN_BACKLOG	 128
#define DRAIN_MS	 1000u /* at close, how long answered requests get to be written out */
#define DRAIN_POLL_MS	 10u

/* Replies the server gives on its own; the REST API's format, harmless for the other servers. */
#define BODY_413 "{\"result\":\"failed\",\"message\":\"request body too large\"}"
#define BODY_403 "{\"result\":\"failed\",\"message\":\"a client certificate signed by the configured CA is required\"}"
#define BODY_503 "{\"result\":\"failed\",\"message\":\"server shutting down\"}"
#define BODY_500 "{\"result\":\"failed\",\"message\":\"out of memory\"}"
#define BODY_408 "{\"result\":\"failed\",\"message\":\"request body not received in time\"}"

enum req_state {
	REQ_RECEIVING = 0, /* headers and body arriving on MHD's thread */
	REQ_QUEUED,	   /* suspended, waiting for the loop thread */
	REQ_DONE,	   /* response filled in by the loop thread, connection resumed */
};

/* One request: created on MHD's first handler call, freed in the request-completed callback. */
struct req_ctx {
	struct gg_http_server *srv;
	struct MHD_Connection *conn;
	enum req_state state;
	int too_large;
	char *method, *path, *content_type, *host, *origin;
	char *body;
	size_t body_len, body_cap;
	char *arg_names[GG_HTTP_ARGS_MAX], *arg_values[GG_HTTP_ARGS_MAX];
	unsigned int nargs;
	struct gg_http_request req;
	struct gg_http_response resp;
	int counted;	      /* in the server's inflight count */
	uint64_t head_ms;     /* when the head had arrived (body deadline) */
	struct req_ctx *next; /* in the server's queue */
};

/* A connection in the gate: accepted, its head not complete yet. */
struct gate_conn {
	int fd; /* -1: free slot */
	uint64_t t0;
	struct sockaddr_storage sa;
	socklen_t salen;
};

struct gg_http_server {
	uv_loop_t *loop;
	/* the gate, a thread of its own: the listening socket and the pending connections in one epoll set,
	 * woken by gate_stop_fd to end */
	int listen_fd, gate_ep, gate_stop_fd;
	pthread_t gate_thread;
	int gate_init;
	unsigned int npending;
	struct gate_conn gate[GATE_PENDING_MAX];
	uv_async_t async; /* MHD thread -> loop thread: requests are waiting */
	uv_timer_t drain; /* at close: waits for answered requests to be written before MHD stops */
	uint64_t drain_start;
	int open_handles; /* freed when the last one is closed */
	struct MHD_Daemon *daemon;
	pthread_mutex_t mu; /* guards queue and closing */
	struct req_ctx *qhead, *qtail;
	int closing;
	int mu_init, async_init;
	unsigned int inflight; /* handed to the loop, connection not completed yet (atomic) */

	gg_http_handler handler;
	void *ctx;
	size_t max_body;
	int tls, need_client_cert;
	int port;
	char *key_pem, *cert_pem, *ca_pem;

	/* touched by both threads: atomics */
	unsigned long long n_requests, n_too_large, n_tls_refused, n_unavailable;
	unsigned long long n_head_timeout, n_evicted, n_body_timeout;
	unsigned int max_conns;
};

static void count(unsigned long long *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

static int read_pem(const char *path, char **ret)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (size_t)st.st_size > PEM_MAX) {
		close(fd);
		return -EINVAL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return -EIO;
	}
	buf[got] = '\0';
	*ret = buf;
	return 0;
}

/* A listening socket on addr:port (IPv4 or IPv6 literal, or "localhost"); we bind it ourselves so
 * that the caller gets the real errno (EADDRINUSE, EACCES) and port 0 works. */
static int make_listener(const char *addr, int port, int *ret_fd, int *ret_port, int *ret_v6)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, one = 1, v6 = 0, err;

	memset(&ss, 0, sizeof(ss));
	if (!addr || !addr[0] || port < 0 || port > 65535)
		return -EINVAL;
	if (!strcmp(addr, "localhost"))
		addr = "127.0.0.1";
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		((struct sockaddr_in *)&ss)->sin_family = AF_INET;
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
		sl = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
		sl = sizeof(struct sockaddr_in6);
		v6 = 1;
	} else {
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
	*ret_fd = fd;
	*ret_port = port;
	*ret_v6 = v6;
	return 0;
}

static uint64_t mono_ms(void);

/* Under pressure (more than half the connections in use) no keep-alive: every next request passes the
 * gate again, so an idle or slow keep-alive connection cannot hold a slot. */
static void maybe_close(const struct gg_http_server *srv, struct MHD_Response *r)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	if (di && di->num_connections > srv->max_conns / 2)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
}

/* ---- MHD thread ---------------------------------------------------------------------------------- */

static enum MHD_Result queue_static(const struct gg_http_server *srv, struct MHD_Connection *c, unsigned int status,
				    const char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	maybe_close(srv, r);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result queue_done(struct req_ctx *r)
{
	struct gg_http_response *resp = &r->resp;
	struct MHD_Response *mr;
	enum MHD_Result ret;

	if (resp->body) {
		mr = MHD_create_response_from_buffer(resp->body_len, resp->body, MHD_RESPMEM_MUST_FREE);
		if (mr)
			resp->body = NULL; /* MHD owns it now */
	} else {
		mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!mr)
		return MHD_NO;
	(void)MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE,
				      resp->content_type ? resp->content_type : "application/json");
	for (const char *const *h = resp->headers; h && h[0] && h[1]; h += 2)
		(void)MHD_add_response_header(mr, h[0], h[1]);
	maybe_close(r->srv, mr);
	ret = MHD_queue_response(r->conn, resp->status ? resp->status : 500, mr);
	MHD_destroy_response(mr);
	return ret;
}

/* 1 when the TLS peer presented an X.509 certificate that verifies against the trusted CA. */
static int client_cert_ok(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t s;
	const gnutls_datum_t *certs;
	unsigned int n = 0, status = 0;

	if (!ci || !ci->tls_session)
		return 0;
	s = (gnutls_session_t)ci->tls_session;
	if (gnutls_certificate_type_get(s) != GNUTLS_CRT_X509)
		return 0;
	certs = gnutls_certificate_get_peers(s, &n);
	if (!certs || !n)
		return 0;
	if (gnutls_certificate_verify_peers2(s, &status) < 0 || status)
		return 0;
	return 1;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct req_ctx *r = cls;

	(void)kind;
	if (r->nargs >= GG_HTTP_ARGS_MAX || !key)
		return MHD_NO; /* stop iterating: the rest are ignored */
	r->arg_names[r->nargs] = strdup(key);
	r->arg_values[r->nargs] = strdup(value ? value : "");
	if (!r->arg_names[r->nargs] || !r->arg_values[r->nargs]) {
		free(r->arg_names[r->nargs]);
		free(r->arg_values[r->nargs]);
		return MHD_NO;
	}
	r->nargs++;
	return MHD_YES;
}

static int append_body(struct req_ctx *r, const char *data, size_t len)
{
	size_t max = r->srv->max_body;

	if (r->too_large)
		return 0;
	if (r->body_len + len > max) {
		r->too_large = 1;
		free(r->body);
		r->body = NULL;
		r->body_len = r->body_cap = 0;
		return 0;
	}
	if (r->body_len + len + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 1024;
		char *nb;

		while (cap < r->body_len + len + 1)
			cap *= 2;
		if (cap > max + 1)
			cap = max + 1;
		nb = realloc(r->body, cap);
		if (!nb)
			return -ENOMEM;
		r->body = nb;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, len);
	r->body_len += len;
	r->body[r->body_len] = '\0';
	return 0;
}

static void fill_request(struct req_ctx *r)
{
	const union MHD_ConnectionInfo *ci;
	const char *ct;

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, r);
	ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	r->content_type = strdup(ct ? ct : "");
	ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	r->host = strdup(ct ? ct : "");
	ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Origin");
	r->origin = strdup(ct ? ct : "");
	r->req.method = r->method;
	r->req.path = r->path;
	r->req.body = r->body ? r->body : "";
	r->req.body_len = r->body_len;
	r->req.nargs = r->nargs;
	for (unsigned int i = 0; i < r->nargs; i++) {
		r->req.arg_names[i] = r->arg_names[i];
		r->req.arg_values[i] = r->arg_values[i];
	}
	r->req.content_type = r->content_type ? r->content_type : "";
	r->req.host = r->host ? r->host : "";
	r->req.origin = r->origin ? r->origin : "";
	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	r->req.tls = r->srv->tls && ci && ci->tls_session;
	r->req.client_cert_verified = r->req.tls && r->srv->need_client_cert; /* checked on the first call */
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				 const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct gg_http_server *srv = cls;
	struct req_ctx *r = *con_cls;

	(void)version;
	if (!r) {
		const char *cl;

		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->srv = srv;
		r->conn = c;
		r->head_ms = mono_ms();
		*con_cls = r;
		if (srv->need_client_cert && !client_cert_ok(c)) {
			count(&srv->n_tls_refused);
			return queue_static(srv, c, 403, BODY_403);
		}
		/* Refuse an announced oversized body before reading it (and before "100 Continue"). */
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > srv->max_body) {
			count(&srv->n_too_large);
			return queue_static(srv, c, 413, BODY_413);
		}
		r->method = strdup(method ? method : "");
		r->path = strdup(url ? url : "/");
		if (!r->method || !r->path)
			return queue_static(srv, c, 500, BODY_500);
		return MHD_YES;
	}
	if (r->state == REQ_DONE)
		return queue_done(r);
	if (r->state == REQ_QUEUED)
		return MHD_YES; /* not expected while suspended */
	if (*upload_data_size && mono_ms() - r->head_ms > BODY_MS) {
		*upload_data_size = 0;
		count(&srv->n_body_timeout);
		return queue_static(srv, c, 408, BODY_408);
	}
	if (*upload_data_size) {
		int err = append_body(r, upload_data, *upload_data_size);

		*upload_data_size = 0;
		return err ? MHD_NO : MHD_YES;
	}
	/* The whole request is here. */
	if (r->too_large) {
		count(&srv->n_too_large);
		return queue_static(srv, c, 413, BODY_413);
	}
	fill_request(r);
	pthread_mutex_lock(&srv->mu);
	if (srv->closing) {
		pthread_mutex_unlock(&srv->mu);
		count(&srv->n_unavailable);
		return queue_static(srv, c, 503, BODY_503);
	}
	/* Suspend before the loop thread can see it: a resume that comes first would be lost. */
	MHD_suspend_connection(c);
	r->state = REQ_QUEUED;
	r->counted = 1;
	__atomic_add_fetch(&srv->inflight, 1, __ATOMIC_RELAXED);
	r->next = NULL;
	if (srv->qtail)
		srv->qtail->next = r;
	else
		srv->qhead = r;
	srv->qtail = r;
	uv_async_send(&srv->async);
	pthread_mutex_unlock(&srv->mu);
	return MHD_YES;
}

static void free_req(struct req_ctx *r)
{
	if (!r)
		return;
	for (unsigned int i = 0; i < r->nargs; i++) {
		free(r->arg_names[i]);
		free(r->arg_values[i]);
	}
	free(r->method);
	free(r->path);
	free(r->content_type);
	free(r->host);
	free(r->origin);
	free(r->body);
	free(r->resp.body);
	free(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct gg_http_server *srv = cls;
	struct req_ctx *r = *con_cls;

	(void)c;
	(void)toe;
	if (r && r->counted)
		__atomic_sub_fetch(&srv->inflight, 1, __ATOMIC_RELEASE);
	free_req(r);
	*con_cls = NULL;
}

/* ---- loop thread --------------------------------------------------------------------------------- */

static struct req_ctx *take_queue(struct gg_http_server *srv)
{
	struct req_ctx *q;

	pthread_mutex_lock(&srv->mu);
	q = srv->qhead;
	srv->qhead = srv->qtail = NULL;
	pthread_mutex_unlock(&srv->mu);
	return q;
}

static void set_static_reply(struct req_ctx *r, unsigned int status, const char *body)
{
	free(r->resp.body);
	r->resp.status = status;
	r->resp.content_type = "application/json";
	r->resp.body = strdup(body);
	r->resp.body_len = r->resp.body ? strlen(body) : 0;
}

static void on_async(uv_async_t *h)
{
	struct gg_http_server *srv = h->data;
	struct req_ctx *r = take_queue(srv), *next;

	for (; r; r = next) {
		next = r->next;
		if (srv->closing) {
			set_static_reply(r, 503, BODY_503);
		} else {
			memset(&r->resp, 0, sizeof(r->resp));
			r->resp.status = 200;
			srv->handler(srv->ctx, &r->req, &r->resp);
			if (r->resp.body && !r->resp.body_len)
				r->resp.body_len = strlen(r->resp.body);
			count(&srv->n_requests);
		}
		r->state = REQ_DONE;
		/* Last touch: once resumed, MHD's thread may answer and free r. */
		MHD_resume_connection(r->conn);
	}
}

/* ---- the gate (its own thread): slow clients wait here, not in MHD's connection table --------------- */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void gate_drop(struct gg_http_server *srv, struct gate_conn *g)
{
	(void)epoll_ctl(srv->gate_ep, EPOLL_CTL_DEL, g->fd, NULL);
	close(g->fd);
	g->fd = -1;
	srv->npending--;
}

/* 1 when what has arrived is a whole request head (or ClientHello), or enough to let MHD answer it. */
static int head_complete(const struct gg_http_server *srv, const unsigned char *b, size_t n)
{
	if (n >= GATE_PEEK)
		return 1; /* MHD refuses a head this large itself */
	if (srv->tls) {
		/* a TLS handshake record: type 22, length in bytes 3..4; anything else fails in MHD */
		if (n >= 1 && b[0] != 22)
			return 1;
		return n >= 5 && n >= 5u + ((size_t)b[3] << 8 | b[4]);
	}
	for (size_t i = 3; i < n; i++) {
		if (b[i] == '\n' && ((b[i - 1] == '\n') || (b[i - 1] == '\r' && b[i - 2] == '\n')))
			return 1;
	}
	return 0;
}

static void gate_handoff(struct gg_http_server *srv, struct gate_conn *g)
{
	int fd = g->fd;

	(void)epoll_ctl(srv->gate_ep, EPOLL_CTL_DEL, fd, NULL);
	g->fd = -1;
	srv->npending--;
	/* MHD closes the socket itself when it cannot take it (its connection limit) */
	if (MHD_add_connection(srv->daemon, fd, (const struct sockaddr *)&g->sa, g->salen) != MHD_YES)
		count(&srv->n_unavailable);
}

static void gate_readable(struct gg_http_server *srv, struct gate_conn *g)
{
	static unsigned char buf[GATE_PEEK];
	ssize_t n = recv(g->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		gate_drop(srv, g); /* closed or failed before sending a request */
		return;
	}
	if (head_complete(srv, buf, (size_t)n))
		gate_handoff(srv, g);
}

static void gate_accept(struct gg_http_server *srv)
{
	for (unsigned int k = 0; k < 64; k++) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		struct gate_conn *g = NULL, *oldest = NULL;
		struct epoll_event ev;
		int fd = accept4(srv->listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		for (unsigned int i = 0; i < GATE_PENDING_MAX; i++) {
			struct gate_conn *c = &srv->gate[i];

			if (c->fd < 0) {
				g = c;
				break;
			}
			if (!oldest || c->t0 < oldest->t0)
				oldest = c;
		}
		if (!g) {
			/* full: the one that has waited longest is the slowest client; a newcomer is likely not */
			count(&srv->n_evicted);
			gate_drop(srv, oldest);
			g = oldest;
		}
		g->fd = fd;
		g->t0 = mono_ms();
		g->sa = sa;
		g->salen = sl;
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = g;
		if (epoll_ctl(srv->gate_ep, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			g->fd = -1;
			continue;
		}
		srv->npending++;
	}
}

static void gate_deadlines(struct gg_http_server *srv)
{
	uint64_t now = mono_ms();

	for (unsigned int i = 0; i < GATE_PENDING_MAX && srv->npending; i++) {
		struct gate_conn *g = &srv->gate[i];

		if (g->fd >= 0 && now - g->t0 >= GATE_HEAD_MS) {
			count(&srv->n_head_timeout);
			gate_drop(srv, g);
		}
	}
}

static void *gate_main(void *arg)
{
	struct gg_http_server *srv = arg;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(srv->gate_ep, evs, 64, (int)GATE_TICK_MS);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &srv->gate_stop_fd)
				goto out;
			if (evs[i].data.ptr == NULL)
				gate_accept(srv);
			else if (((struct gate_conn *)evs[i].data.ptr)->fd >= 0)
				gate_readable(srv, evs[i].data.ptr);
		}
		gate_deadlines(srv);
	}
out:
	for (unsigned int i = 0; i < GATE_PENDING_MAX && srv->npending; i++) {
		if (srv->gate[i].fd >= 0)
			gate_drop(srv, &srv->gate[i]);
	}
	return NULL;
}

static int gate_start(struct gg_http_server *srv)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	struct epoll_event stop = {.events = EPOLLIN, .data.ptr = &srv->gate_stop_fd};

	for (unsigned int i = 0; i < GATE_PENDING_MAX; i++)
		srv->gate[i].fd = -1;
	srv->gate_ep = epoll_create1(EPOLL_CLOEXEC);
	srv->gate_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->gate_ep < 0 || srv->gate_stop_fd < 0)
		return -errno;
	if (epoll_ctl(srv->gate_ep, EPOLL_CTL_ADD, srv->listen_fd, &ev) ||
	    epoll_ctl(srv->gate_ep, EPOLL_CTL_ADD, srv->gate_stop_fd, &stop))
		return -errno;
	if (pthread_create(&srv->gate_thread, NULL, gate_main, srv))
		return -EAGAIN;
	srv->gate_init = 1;
	return 0;
}

/* No new connections; those waiting in the gate are closed. Idempotent. */
static void gate_stop(struct gg_http_server *srv)
{
	if (srv->gate_init) {
		uint64_t one = 1;

		(void)!write(srv->gate_stop_fd, &one, sizeof(one));
		pthread_join(srv->gate_thread, NULL);
		srv->gate_init = 0;
	}
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		srv->listen_fd = -1;
	}
}

static void on_handle_closed(uv_handle_t *h)
{
	struct gg_http_server *srv = h->data;

	if (--srv->open_handles > 0)
		return;
	if (srv->mu_init)
		pthread_mutex_destroy(&srv->mu);
	if (srv->gate_ep >= 0)
		close(srv->gate_ep);
	if (srv->gate_stop_fd >= 0)
		close(srv->gate_stop_fd);
	free(srv->key_pem);
	free(srv->cert_pem);
	free(srv->ca_pem);
	free(srv);
}

static void srv_free(struct gg_http_server *srv)
{
	srv->open_handles = 1; /* this call */
	gate_stop(srv);
	if (srv->async_init) {
		srv->open_handles += 2;
		uv_close((uv_handle_t *)&srv->async, on_handle_closed);
		uv_close((uv_handle_t *)&srv->drain, on_handle_closed);
	}

	on_handle_closed((uv_handle_t *)&srv->async);
}

struct gg_http_server *gg_http_server__new(uv_loop_t *loop, const struct gg_http_opts *o)
{
	struct gg_http_server *srv;
	/* no listening socket in MHD: connections come from the gate (MHD_add_connection, woken by its ITC) */
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
			     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
	int fd = -1, v6 = 0, err;
	struct MHD_OptionItem opts[12];
	unsigned int n = 0;

	if (!loop || !o || !o->handler ||
	    (o->tls && (!o->key_file || !o->cert_file || !o->key_file[0] || !o->cert_file[0]))) {
		errno = EINVAL;
		return NULL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return NULL;
	srv->async.data = srv;
	srv->drain.data = srv;
	srv->loop = loop;
	srv->listen_fd = srv->gate_ep = srv->gate_stop_fd = -1;
	srv->handler = o->handler;
	srv->ctx = o->ctx;
	srv->max_body = o->max_body;
	srv->tls = o->tls;
	if (pthread_mutex_init(&srv->mu, NULL)) {
		err = -ENOMEM;
		goto err_out;
	}
	srv->mu_init = 1;
	if (o->tls) {
		err = read_pem(o->key_file, &srv->key_pem);
		if (!err)
			err = read_pem(o->cert_file, &srv->cert_pem);
		if (!err && o->ca_file && o->ca_file[0]) {
			err = read_pem(o->ca_file, &srv->ca_pem);
			srv->need_client_cert = 1;
		}
		if (err)
			goto err_out;
		flags |= MHD_USE_TLS;
	}
	err = uv_async_init(loop, &srv->async, on_async);
	if (err) {
		err = -ENOMEM;
		goto err_out;
	}
	uv_timer_init(loop, &srv->drain);
	srv->async.data = srv->drain.data = srv;
	srv->async_init = 1;
	err = make_listener(o->bind_addr, o->port, &fd, &srv->port, &v6);
	if (err)
		goto err_out;
	if (v6)
		flags |= MHD_USE_IPv6;

	srv->max_conns = o->max_connections ? o->max_connections : 64;
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)srv->max_conns, NULL};
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S, NULL};
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv};
	if (o->tls) {
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, srv->key_pem};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, srv->cert_pem};
		/* A trust CA makes MHD ask for a client certificate; on_access refuses when none verifies. */
		if (srv->ca_pem)
			opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, srv->ca_pem};
	}
	opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

	srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, srv, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!srv->daemon) {
		close(fd);
		err = -EINVAL; /* a bad key or certificate is the usual reason */
		goto err_out;
	}
	srv->listen_fd = fd;
	err = gate_start(srv);
	if (err) {
		MHD_stop_daemon(srv->daemon);
		srv->daemon = NULL;
		goto err_out;
	}
	return srv;

err_out:
	srv_free(srv);
	errno = -err;
	return NULL;
}

/* At close: once every answered request is written (or DRAIN_MS passed), stop MHD and free. */
static void on_drain(uv_timer_t *t)
{
	struct gg_http_server *srv = t->data;

	if (__atomic_load_n(&srv->inflight, __ATOMIC_ACQUIRE) && uv_now(srv->loop) - srv->drain_start < DRAIN_MS)
		return;
	uv_timer_stop(t);
	MHD_stop_daemon(srv->daemon);
	srv->daemon = NULL;
	srv_free(srv);
}

void gg_http_server__close(struct gg_http_server *srv)
{
	struct req_ctx *r, *next;
	MHD_socket lfd;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->closing = 1;
	pthread_mutex_unlock(&srv->mu);
	/* No new connections; requests waiting for the loop get 503 (and every suspended connection must
	 * be resumed before MHD_stop_daemon). */
	gate_stop(srv);
	lfd = MHD_quiesce_daemon(srv->daemon);
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
	for (r = take_queue(srv); r; r = next) {
		next = r->next;
		set_static_reply(r, 503, BODY_503);
		count(&srv->n_unavailable);
		r->state = REQ_DONE;
		MHD_resume_connection(r->conn);
	}
	srv->drain_start = uv_now(srv->loop);
	uv_timer_start(&srv->drain, on_drain, 0, DRAIN_POLL_MS);
}

unsigned long long gg_http_server__requests(const struct gg_http_server *srv)
{
	return srv ? __atomic_load_n(&srv->n_requests, __ATOMIC_RELAXED) : 0;
}

void gg_http_server__stats(const struct gg_http_server *srv, struct gg_http_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!srv)
		return;
	ret->requests = __atomic_load_n(&srv->n_requests, __ATOMIC_RELAXED);
	ret->too_large = __atomic_load_n(&srv->n_too_large, __ATOMIC_RELAXED);
	ret->tls_refused = __atomic_load_n(&srv->n_tls_refused, __ATOMIC_RELAXED);
	ret->unavailable = __atomic_load_n(&srv->n_unavailable, __ATOMIC_RELAXED);
	ret->head_timeout = __atomic_load_n(&srv->n_head_timeout, __ATOMIC_RELAXED);
	ret->evicted = __atomic_load_n(&srv->n_evicted, __ATOMIC_RELAXED);
	ret->body_timeout = __atomic_load_n(&srv->n_body_timeout, __ATOMIC_RELAXED);
}

int gg_http_server__port(const struct gg_http_server *srv)
{
	return srv ? srv->port : 0;
}

const char *gg_http_request__arg(const struct gg_http_request *req, const char *name)
{
	for (unsigned int i = 0; i < req->nargs; i++) {
		if (!strcmp(req->arg_names[i], name))
			return req->arg_values[i];
	}
	return NULL;
}
