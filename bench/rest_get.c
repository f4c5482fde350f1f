/* rest_get.c - keep-alive HTTP GET load generator for the REST API: C connections, each on its own
 * thread, send GET PATH back to back on one connection for S seconds; prints requests/s and latency.
 *
 * usage: rest_get PORT [CONNECTIONS=1] [SECONDS=3] [PATH=/probes]
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "bench_util.h"
#include "../tests/helpers/loopback.h"

#define MAX_CONN 64
#define LAT_MAX	 2000000

struct worker {
	int port;
	const char *path;
	double seconds;
	uint64_t ok, bad, reconnects;
	double *lat_us; /* per-request latency samples */
	size_t nlat;
};

static int dial(int port)
{
	int fd = loopback__connect(port), one = 1;

	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* One response: headers, then Content-Length bytes. Returns the status or -1. */
static int read_response(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	char *end = NULL;
	long clen = 0;
	int status = -1;

	while (!end) {
		ssize_t n = recv(fd, buf + got, cap - 1 - got, 0);

		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = 0;
		end = strstr(buf, "\r\n\r\n");
		if (!end && got >= cap - 1)
			return -1;
	}
	sscanf(buf, "HTTP/1.%*d %d", &status);
	{
		char *cl = strcasestr(buf, "\r\nContent-Length:");

		if (cl)
			clen = strtol(cl + 17, NULL, 10);
	}
	{
		size_t have = got - (size_t)(end + 4 - buf);

		while ((long)have < clen) {
			char sink[65536];
			ssize_t n = recv(fd, sink,
					 sizeof(sink) < (size_t)(clen - (long)have) ? sizeof(sink)
										    : (size_t)(clen - (long)have),
					 0);

			if (n <= 0)
				return -1;
			have += (size_t)n;
		}
	}
	return status;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char req[256], *buf = malloc(1 << 20);
	int fd = dial(w->port), n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", w->path);
	double end = bench_now_s(CLOCK_MONOTONIC) + w->seconds;

	while (buf && fd >= 0 && bench_now_s(CLOCK_MONOTONIC) < end) {
		double t0 = bench_now_s(CLOCK_MONOTONIC);
		int st;

		if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
			st = -1;
		} else {
			st = read_response(fd, buf, 1 << 20);
		}
		if (st == 200) {
			w->ok++;
			if (w->nlat < LAT_MAX)
				w->lat_us[w->nlat++] = (bench_now_s(CLOCK_MONOTONIC) - t0) * 1e6;
		} else {
			w->bad++;
			close(fd);
			fd = dial(w->port);
			w->reconnects++;
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_CONN];
	pthread_t t[MAX_CONN];
	int port, nconn;
	double secs, t0, el;
	const char *path;
	uint64_t ok = 0, bad = 0, rc = 0;
	double *all;
	size_t nall = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: rest_get PORT [CONNECTIONS=1] [SECONDS=3] [PATH=/probes]\n");
		return 2;
	}
	port = atoi(argv[1]);
	nconn = argc > 2 ? atoi(argv[2]) : 1;
	secs = argc > 3 ? atof(argv[3]) : 3;
	path = argc > 4 ? argv[4] : "/probes";
	if (nconn < 1 || nconn > MAX_CONN)
		nconn = 1;
	t0 = bench_now_s(CLOCK_MONOTONIC);
	for (int i = 0; i < nconn; i++) {
		w[i] = (struct worker){.port = port, .path = path, .seconds = secs};
		w[i].lat_us = malloc(sizeof(double) * LAT_MAX);
		pthread_create(&t[i], NULL, run, &w[i]);
	}
	for (int i = 0; i < nconn; i++)
		pthread_join(t[i], NULL);
	el = bench_now_s(CLOCK_MONOTONIC) - t0;
	all = malloc(sizeof(double) * LAT_MAX * (size_t)nconn);
	for (int i = 0; i < nconn; i++) {
		ok += w[i].ok;
		bad += w[i].bad;
		rc += w[i].reconnects;
		memcpy(all + nall, w[i].lat_us, w[i].nlat * sizeof(double));
		nall += w[i].nlat;
		free(w[i].lat_us);
	}
	qsort(all, nall, sizeof(double), bench_cmp_double);
	printf("GET %s: %d connection(s), %.1f s: %llu ok, %llu failed, %llu reconnects, %.0f req/s, "
	       "latency median %.0f us, p99 %.0f us\n",
	       path, nconn, el, (unsigned long long)ok, (unsigned long long)bad, (unsigned long long)rc, ok / el,
	       nall ? all[nall / 2] : 0, nall ? all[(size_t)(nall * 0.99)] : 0);
	free(all);
	return bad ? 1 : 0;
}
