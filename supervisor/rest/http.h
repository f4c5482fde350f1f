/* http.h - the supervisor's HTTP(S) servers (Prometheus web_server, REST API): libmicrohttpd's own
 * thread parses requests and enforces limits; each complete request is handed to the libuv loop
 * thread (suspend -> uv_async_send -> handler -> resume), so handlers touch supervisor state safely. */
#ifndef GG_HTTP_H
#define GG_HTTP_H

#include <stddef.h>
#include <uv.h>

#define GG_HTTP_ARGS_MAX 32u

/* A complete request, as the loop thread sees it. All strings are NUL-terminated copies. */
struct gg_http_request {
	const char *method; /* "GET", "PUT", ... */
	const char *path;   /* URL path without the query string, e.g. "/metrics" */
	const char *body;   /* request body (NUL-terminated; may contain NULs: use body_len) */
	size_t body_len;
	unsigned int nargs; /* query-string arguments, decoded */
	const char *arg_names[GG_HTTP_ARGS_MAX];
	const char *arg_values[GG_HTTP_ARGS_MAX];
	const char *content_type; /* request Content-Type or "" */
	const char *host;	  /* request Host header or "" */
	const char *origin;	  /* request Origin header or "" (browsers send it with a PUT) */
	int tls;		  /* 1 when served over TLS */
	int client_cert_verified; /* TLS with a client certificate that verified against ca_file */
};

/* The reply a handler fills in. body is malloc'd by the handler (or NULL) and freed by the server. */
struct gg_http_response {
	unsigned int status;
	const char *content_type; /* static string; default "application/json" */
	char *body;
	size_t body_len;
	/* extra headers: name, value, name, value, ..., NULL (static strings), or NULL */
	const char *const *headers;
};

typedef void (*gg_http_handler)(void *ctx, const struct gg_http_request *req, struct gg_http_response *resp);

struct gg_http_opts {
	const char *name;		  /* for messages: "web_server", "rest_api_server" */
	const char *bind_addr;		  /* IPv4 or IPv6 literal */
	int port;			  /* 0 = any free port (see gg_http_server__port) */
	int tls;			  /* ssl_auth on */
	const char *key_file, *cert_file; /* PEM, required with tls */
	const char *ca_file;	      /* with tls: a client certificate signed by this CA is required (403 otherwise) */
	size_t max_body;	      /* larger bodies get 413 without reaching the handler */
	unsigned int max_connections; /* 0 = 64 */
	gg_http_handler handler;
	void *ctx;
};

struct gg_http_server;

/* Start listening. NULL + errno on error (EADDRINUSE, ENOENT for a missing key/cert, EINVAL). */
struct gg_http_server *gg_http_server__new(uv_loop_t *loop, const struct gg_http_opts *opts);
/* Stop accepting, finish in-flight requests with 503, close the uv handles; memory is released once
 * the loop has closed them. Accepts NULL. Call from the loop thread, not from inside a handler. */
void gg_http_server__close(struct gg_http_server *srv);
/* Requests answered by the handler. */
unsigned long long gg_http_server__requests(const struct gg_http_server *srv);

/* What the server answered on its own (never reaching the handler). */
struct gg_http_stats {
	unsigned long long requests;	 /* answered by the handler */
	unsigned long long too_large;	 /* 413: body over max_body */
	unsigned long long tls_refused;	 /* 403: client certificate missing or not trusted */
	unsigned long long unavailable;	 /* 503: arrived while the server was closing, or over the connection limit */
	unsigned long long head_timeout; /* closed: no whole request head (or ClientHello) within 5 s */
	unsigned long long evicted;	 /* closed: waiting longest for its head when the gate was full */
	unsigned long long body_timeout; /* 408: body not received within 10 s of its head */
};
void gg_http_server__stats(const struct gg_http_server *srv, struct gg_http_stats *ret);
/* The port actually listened on (useful with port 0). */
int gg_http_server__port(const struct gg_http_server *srv);

/* Look up a decoded query argument; NULL when absent. */
const char *gg_http_request__arg(const struct gg_http_request *req, const char *name);

#endif
