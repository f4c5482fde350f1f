/* test_sup_rest_http.c - unit tests of the HTTP server glue (supervisor/rest/http.c): requests reach the
 * handler on the loop thread, keep-alive, body limits (413), several clients, shutdown (503). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "unit.h"

#include "../../supervisor/rest/http.h"
#include "../helpers/loopback.h"

/* What the handler saw (loop thread only). */
struct seen {
	pthread_t loop_thread;
	int wrong_thread;
	unsigned int calls;
	char method[16], path[256], arg_x[64], ctype[64];
	char body[8192];
	size_t body_len;
};

static void handler(void *ctx, const struct gg_http_request *req, struct gg_http_response *resp)
{
	struct seen *s = ctx;
	const char *x = gg_http_request__arg(req, "x");
	char *out;

	if (!pthread_equal(pthread_self(), s->loop_thread))
		s->wrong_thread = 1;
	s->calls++;
	snprintf(s->method, sizeof(s->method), "%s", req->method);
	snprintf(s->path, sizeof(s->path), "%s", req->path);
	snprintf(s->arg_x, sizeof(s->arg_x), "%s", x ? x : "(none)");
	snprintf(s->ctype, sizeof(s->ctype), "%s", req->content_type);
	s->body_len = req->body_len < sizeof(s->body) ? req->body_len : sizeof(s->body);
	memcpy(s->body, req->body, s->body_len);
	if (asprintf(&out, "{\"path\":\"%s\",\"len\":%zu}", req->path, req->body_len) < 0)
		out = NULL;
	resp->status = strcmp(req->path, "/teapot") ? 200 : 418;
	resp->body = out;
	resp->body_len = out ? strlen(out) : 0;
}

/* ---- a tiny blocking HTTP/1.1 client (runs on its own thread) ----------------------------------- */

static int connect_to(int port)
{
	struct timeval tv = {.tv_sec = 10};
	int fd = loopback__connect(port);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read one response (headers + Content-Length body). Returns the status or -1; body into out. */
static int read_response(int fd, char *out, size_t outlen)
{
	char buf[16384];
	size_t got = 0;
	char *hdr_end = NULL;
	long clen = 0;
	int status = -1;

	while (!hdr_end) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = 0;
		hdr_end = strstr(buf, "\r\n\r\n");
	}
	sscanf(buf, "HTTP/1.%*d %d", &status);
	{
		char *cl = strcasestr(buf, "\r\nContent-Length:");

		if (cl)
			clen = strtol(cl + 17, NULL, 10);
	}
	hdr_end += 4;
	while ((long)(got - (size_t)(hdr_end - buf)) < clen) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	buf[got] = 0;
	snprintf(out, outlen, "%.*s", (int)clen, hdr_end);
	return status;
}

/* ---- harness: the loop runs on the test's thread, a client thread does the talking --------------- */

struct client {
	int port;
	void (*fn)(struct client *c);
	uv_async_t done;
	int result[8];
	char body[8][512];
	int sent; /* set once the last request was written */
};

static void *client_main(void *arg)
{
	struct client *c = arg;

	c->fn(c);
	uv_async_send(&c->done);
	return NULL;
}

static void on_client_done(uv_async_t *h)
{
	uv_close((uv_handle_t *)h, NULL);
	uv_stop(h->loop); /* the server's handle keeps the loop alive */
}

static struct seen g_seen;

static struct gg_http_server *start_server(uv_loop_t *loop, size_t max_body)
{
	struct gg_http_opts o = {
		.name = "test",
		.bind_addr = "127.0.0.1",
		.port = 0,
		.max_body = max_body,
		.handler = handler,
		.ctx = &g_seen,
	};
	struct gg_http_server *srv;

	memset(&g_seen, 0, sizeof(g_seen));
	g_seen.loop_thread = pthread_self();
	srv = gg_http_server__new(loop, &o);
	assert_non_null(srv);
	assert_true(gg_http_server__port(srv) > 0);
	return srv;
}

/* A server (2048-byte body limit) on a loop of its own, run until the client thread is done; then
 * ret_stats (if not NULL) gets the server's counters, the server is closed and the loop must close
 * cleanly (nothing left open). */
static void run_client(struct client *c, struct gg_http_stats *ret_stats)
{
	struct gg_http_server *srv;
	uv_loop_t loop;
	pthread_t t;

	uv_loop_init(&loop);
	srv = start_server(&loop, 2048);
	c->port = gg_http_server__port(srv);
	uv_async_init(&loop, &c->done, on_client_done);
	assert_int_equal(pthread_create(&t, NULL, client_main, c), 0);
	uv_run(&loop, UV_RUN_DEFAULT); /* ends when the client is done... */
	pthread_join(t, NULL);
	if (ret_stats)
		gg_http_server__stats(srv, ret_stats);
	gg_http_server__close(srv);
	uv_run(&loop, UV_RUN_DEFAULT); /* ...and the server's handles are closed here */
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* Request i of the client: req sent on fd, the status and body of the response in result[i] and body[i]
 * (-1: the request could not be sent). */
static void exchange(struct client *c, int i, int fd, const char *req, size_t len)
{
	c->result[i] = send_all(fd, req, len) ? -1 : read_response(fd, c->body[i], sizeof(c->body[i]));
}

static void keepalive_client(struct client *c)
{
	static const char put[] = "PUT /tcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
				  "Content-Length: 10\r\n\r\n{\"a\":\"\0b\"}";
	int fd = connect_to(c->port);
	char req[256];

	if (fd < 0)
		return;
	snprintf(req, sizeof(req), "GET /metrics?x=a%%20b&y=2 HTTP/1.1\r\nHost: x\r\n\r\n");
	exchange(c, 0, fd, req, strlen(req));
	/* same connection: keep-alive */
	exchange(c, 1, fd, put, sizeof(put) - 1);
	snprintf(req, sizeof(req), "GET /teapot HTTP/1.1\r\nHost: x\r\n\r\n");
	exchange(c, 2, fd, req, strlen(req));
	close(fd);
}

GG_TEST(test_keepalive_args_body)
{
	struct client c = {.fn = keepalive_client};

	run_client(&c, NULL);
	assert_int_equal(c.result[0], 200);
	assert_string_equal(c.body[0], "{\"path\":\"/metrics\",\"len\":0}");
	assert_int_equal(c.result[1], 200);
	assert_string_equal(c.body[1], "{\"path\":\"/tcp\",\"len\":10}");
	assert_int_equal(c.result[2], 418);
	assert_int_equal(g_seen.calls, 3);
	assert_false(g_seen.wrong_thread);
	/* the last request the handler saw is the GET; the PUT's body was checked through len */
	assert_string_equal(g_seen.method, "GET");
	assert_string_equal(g_seen.path, "/teapot");
}

static void args_client(struct client *c)
{
	int fd = connect_to(c->port);
	const char *put =
		"PUT /probe?x=a%20b HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
		"Content-Length: 7\r\n\r\njson=%7";

	if (fd < 0)
		return;
	exchange(c, 0, fd, put, strlen(put));
	close(fd);
}

GG_TEST(test_args_and_raw_body)
{
	struct client c = {.fn = args_client};

	run_client(&c, NULL);
	assert_int_equal(c.result[0], 200);
	assert_string_equal(g_seen.method, "PUT");
	assert_string_equal(g_seen.path, "/probe");
	assert_string_equal(g_seen.arg_x, "a b");
	assert_string_equal(g_seen.ctype, "application/x-www-form-urlencoded");
	/* the body is passed as sent: not URL-decoded, not parsed as a form */
	assert_int_equal(g_seen.body_len, 7);
	assert_memory_equal(g_seen.body, "json=%7", 7);
}

static void limit_client(struct client *c)
{
	char req[8192];
	int fd, n;

	/* announced too large: refused before the body is read */
	fd = connect_to(c->port);
	n = snprintf(req, sizeof(req), "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2049\r\n\r\n");
	memset(req + n, 'a', 2049);
	exchange(c, 0, fd, req, (size_t)n + 2049);
	close(fd);
	/* exactly at the limit: accepted */
	fd = connect_to(c->port);
	n = snprintf(req, sizeof(req), "PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n");
	memset(req + n, 'a', 2048);
	exchange(c, 1, fd, req, (size_t)n + 2048);
	close(fd);
	/* chunked, no length announced: counted while it arrives */
	fd = connect_to(c->port);
	n = snprintf(req, sizeof(req), "PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 3; i++) {
		n += snprintf(req + n, sizeof(req) - (size_t)n, "400\r\n");
		memset(req + n, 'b', 1024);
		n += 1024;
		n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n");
	}
	n += snprintf(req + n, sizeof(req) - (size_t)n, "0\r\n\r\n");
	exchange(c, 2, fd, req, (size_t)n);
	close(fd);
}

GG_TEST(test_body_limit)
{
	struct client c = {.fn = limit_client};
	struct gg_http_stats st;

	run_client(&c, &st);
	assert_int_equal(c.result[0], 413);
	assert_string_equal(c.body[0], "{\"result\":\"failed\",\"message\":\"request body too large\"}");
	assert_int_equal(c.result[1], 200);
	assert_string_equal(c.body[1], "{\"path\":\"/x\",\"len\":2048}");
	assert_int_equal(c.result[2], 413);
	assert_int_equal(g_seen.calls, 1); /* only the request within the limit reached the handler */
	assert_int_equal(st.too_large, 2);
	assert_int_equal(st.requests, 1);
}

/* Several clients at once, each with several keep-alive requests. */
#define NCLIENTS 8
#define NREQS	 50

static void *one_client(void *arg)
{
	int port = *(int *)arg, ok = 0, fd = connect_to(port);
	char body[512], req[128];

	for (int i = 0; fd >= 0 && i < NREQS; i++) {
		snprintf(req, sizeof(req), "GET /c%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
		if (send_all(fd, req, strlen(req)) || read_response(fd, body, sizeof(body)) != 200)
			break;
		snprintf(req, sizeof(req), "{\"path\":\"/c%d\",\"len\":0}", i);
		if (strcmp(body, req))
			break;
		ok++;
	}
	if (fd >= 0)
		close(fd);
	return (void *)(intptr_t)ok;
}

static void many_clients(struct client *c)
{
	pthread_t t[NCLIENTS];

	for (int i = 0; i < NCLIENTS; i++)
		pthread_create(&t[i], NULL, one_client, &c->port);
	for (int i = 0; i < NCLIENTS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		c->result[i] = (int)(intptr_t)ret;
	}
}

GG_TEST(test_concurrent_clients)
{
	struct client c = {.fn = many_clients};

	run_client(&c, NULL);
	for (int i = 0; i < NCLIENTS; i++)
		assert_int_equal(c.result[i], NREQS);
	assert_int_equal(g_seen.calls, NCLIENTS * NREQS);
	assert_false(g_seen.wrong_thread);
}

/* A request waiting for the loop when the server closes gets 503, and nothing leaks or hangs. */
static void shutdown_client(struct client *c)
{
	int fd = connect_to(c->port);
	const char *req = "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n";

	if (fd < 0)
		return;
	if (send_all(fd, req, strlen(req)) == 0) {
		__atomic_store_n(&c->sent, 1, __ATOMIC_RELEASE);
		c->result[0] = read_response(fd, c->body[0], sizeof(c->body[0]));
	}
	close(fd);
}

GG_TEST(test_close_answers_503)
{
	uv_loop_t loop;
	struct client c = {.fn = shutdown_client};
	struct gg_http_server *srv;
	struct gg_http_stats st;
	pthread_t t;

	uv_loop_init(&loop);
	srv = start_server(&loop, 2048);
	c.port = gg_http_server__port(srv);
	uv_async_init(&loop, &c.done, on_client_done);
	assert_int_equal(pthread_create(&t, NULL, client_main, &c), 0);
	/* Do not run the loop: the request stays queued. */
	for (int i = 0; i < 500 && !__atomic_load_n(&c.sent, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	usleep(300000); /* let MHD's thread read and queue it */
	gg_http_server__stats(srv, &st);
	gg_http_server__close(srv);
	uv_run(&loop, UV_RUN_DEFAULT); /* stops when the client is done */
	pthread_join(t, NULL);
	uv_run(&loop, UV_RUN_DEFAULT); /* the server's handles finish closing */
	assert_int_equal(c.result[0], 503);
	assert_string_equal(c.body[0], "{\"result\":\"failed\",\"message\":\"server shutting down\"}");
	assert_int_equal(g_seen.calls, 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

GG_TEST(test_errors)
{
	uv_loop_t loop;
	struct gg_http_opts o = {.name = "t", .bind_addr = "127.0.0.1", .port = 0, .max_body = 10, .handler = handler};
	struct gg_http_server *a, *b;

	uv_loop_init(&loop);
	a = gg_http_server__new(&loop, &o);
	assert_non_null(a);
	o.port = gg_http_server__port(a);
	b = gg_http_server__new(&loop, &o);
	assert_null(b);
	assert_int_equal(errno, EADDRINUSE);
	o.port = 0;
	o.bind_addr = "not-an-address";
	assert_null(gg_http_server__new(&loop, &o));
	assert_int_equal(errno, EINVAL);
	o.bind_addr = "::1";
	b = gg_http_server__new(&loop, &o);
	if (b) /* IPv6 may be disabled on the machine */
		gg_http_server__close(b);
	o.bind_addr = "127.0.0.1";
	o.tls = 1;
	o.key_file = "/nonexistent/key.pem";
	o.cert_file = "/nonexistent/cert.pem";
	assert_null(gg_http_server__new(&loop, &o));
	assert_int_equal(errno, ENOENT);
	o.key_file = NULL;
	assert_null(gg_http_server__new(&loop, &o));
	assert_int_equal(errno, EINVAL);
	gg_http_server__close(a);
	gg_http_server__close(NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}
