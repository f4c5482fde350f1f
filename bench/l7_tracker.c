/* l7_tracker.c - cost of l7probe's per-api accounting and trace sampling: HTTP request/response events
 * fed through the connection tracker (inference done, parser, aggregates) on one core, with l7_rpc_api
 * off, on (api_limit 100) and on with l7_rpc_trace's sampling decision (1 per mille, no output), the
 * three alternated for each repeat.
 *   build/bench/l7_tracker [-n requests] [-r repeats] [-a apis] [-c conns] [-m 0|1|2: that mode alone, once]
 * Requests go over c connections to a paths drawn from a routes ("/r<k>/items/<id>", ids random: each
 * route is one api after normalisation). Prints per mode the median ns per request, its min-max, and
 * what it adds over "off" within each repeat (median, min, max of the paired differences). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../probes/l7probe/l7_trace.h"
#include "../probes/l7probe/l7_user.h"
#include "bench_util.h"

#define REPEATS_MAX 64
#define NREQS	    8192u /* distinct requests, cycled */

struct evbuf {
	struct l7_ev h;
	uint8_t data[512];
};

static const char RESP[] = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Type: text/html\r\n"
			   "Content-Length: 6\r\nConnection: keep-alive\r\n\r\nhello\n";

/* The thread's CPU time: the machine is shared, time spent preempted is not the code's. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ev(struct l7_tracker *t, struct evbuf *e, int fd, int dir, const char *s, size_t len, uint64_t ts)
{
	e->h.type = L7_EV_DATA;
	e->h.dir = (uint8_t)dir;
	e->h.role = L7_ROLE_SERVER;
	e->h.tgid = 4242;
	e->h.pid = 4242;
	e->h.fd = fd;
	e->h.sk = (uint64_t)fd;
	e->h.ts_ns = ts;
	e->h.total = (uint32_t)len;
	e->h.len = (uint32_t)len;
	e->h.family = AF_INET;
	e->h.lport = 80;
	e->h.rport = (uint16_t)(40000 + fd);
	memcpy(e->data, s, len);
	(void)l7_tracker__event(t, e, sizeof(e->h) + len);
}

struct trace_ctx {
	struct l7_trace *tr;
	uint64_t kept;
};

static void on_span(void *ctx, const struct l7_span *sp)
{
	struct trace_ctx *c = ctx;

	c->kept += (uint64_t)l7_trace__want(c->tr, sp);
}

/* ns per request of one run; mode 0 off, 1 api rows, 2 api rows + trace decision. */
static double run(int mode, unsigned int n, unsigned int apis, unsigned int conns, uint64_t *ret_rows)
{
	struct l7_tracker *t = l7_tracker__new(conns * 2, 1024);
	struct trace_ctx tc = {.tr = l7_trace__new(NULL)};
	const struct l7_trace_conf conf = {.permille = 1, .slow_ms = 500, .max_per_s = 1000000};
	static struct evbuf e;
	static char reqs[NREQS][160];
	static size_t lens[NREQS];
	uint64_t seed = 12345, t0, t1, ts = 1;
	struct l7_tracker_stats st;

	if (!t || !tc.tr) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	l7_tracker__set_api_limit(t, mode ? 100 : 0);
	l7_trace__set_conf(tc.tr, &conf);
	if (mode == 2)
		l7_tracker__set_span_cb(t, on_span, &tc);
	/* the requests are written before the clock starts */
	for (unsigned int i = 0; i < NREQS; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		lens[i] = (size_t)snprintf(reqs[i], sizeof(reqs[i]),
					   "GET /r%u/items/%u?page=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: "
					   "wrk\r\nAccept: */*\r\n\r\n",
					   (unsigned int)(seed >> 33) % apis, (unsigned int)(seed >> 13) & 0xfffff);
	}
	t0 = now_ns();
	for (unsigned int i = 0; i < n; i++) {
		ev(t, &e, 3 + (int)(i % conns), L7_DIR_RECV, reqs[i % NREQS], lens[i % NREQS], ts);
		ev(t, &e, 3 + (int)(i % conns), L7_DIR_SEND, RESP, sizeof(RESP) - 1, ts + 20000);
		ts += 30000;
	}
	t1 = now_ns();
	l7_tracker__stats(t, &st);
	*ret_rows = st.apis;
	l7_trace__free(tc.tr);
	l7_tracker__free(t);
	return (double)(t1 - t0) / n;
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"off (parser + l7_rpc)", "l7_rpc_api on", "l7_rpc_api + trace decision"};
	unsigned int n = 1000000, repeats = 9, apis = 50, conns = 64;
	int only = -1;
	double r[3][REPEATS_MAX], d[3][REPEATS_MAX];
	uint64_t rows = 0;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:a:c:m:")) != -1) {
		if (opt == 'n')
			n = (unsigned int)strtoul(optarg, NULL, 10);
		else if (opt == 'r')
			repeats = (unsigned int)strtoul(optarg, NULL, 10);
		else if (opt == 'a')
			apis = (unsigned int)strtoul(optarg, NULL, 10);
		else if (opt == 'c')
			conns = (unsigned int)strtoul(optarg, NULL, 10);
		else if (opt == 'm')
			only = atoi(optarg);
		else
			return 2;
	}
	if (!n || !apis || !conns || !repeats || repeats > REPEATS_MAX) {
		fprintf(stderr, "usage: l7_tracker [-n requests] [-r repeats 1..%d] [-a apis] [-c conns]\n",
			REPEATS_MAX);
		return 2;
	}
	if (only >= 0 && only <= 2) {
		/* one mode once (for perf stat: instructions per request whatever the machine's load) */
		printf("%s: %.1f ns/request\n", names[only], run(only, n, apis, conns, &rows));
		return 0;
	}
	/* alternate the order of the modes from one repeat to the next */
	for (unsigned int k = 0; k < repeats; k++) {
		for (int j = 0; j < 3; j++) {
			int m = (j + (int)k) % 3;
			uint64_t rw;

			r[m][k] = run(m, n, apis, conns, &rw);
			if (m == 1)
				rows = rw;
		}
	}
	printf("%u requests x %u repeats, %u routes over %u connections (l7_rpc_api rows: %llu)\n", n, repeats, apis,
	       conns, (unsigned long long)rows);
	/* what each mode adds over "off", repeat by repeat (the runs of one repeat are back to back) */
	for (int m = 1; m < 3; m++)
		for (unsigned int k = 0; k < repeats; k++)
			d[m][k] = r[m][k] - r[0][k];
	for (int m = 0; m < 3; m++) {
		qsort(r[m], repeats, sizeof(double), bench_cmp_double);
		qsort(d[m], repeats, sizeof(double), bench_cmp_double);
	}
	for (int m = 0; m < 3; m++) {
		double med = r[m][repeats / 2];

		printf("  %-30s %7.1f ns/request (min %.1f, max %.1f), %.2f M requests/s", names[m], med, r[m][0],
		       r[m][repeats - 1], 1000.0 / med);
		if (m)
			printf("; added (paired) median %+.1f ns (%+.0f %%), min %+.1f, max %+.1f", d[m][repeats / 2],
			       100.0 * d[m][repeats / 2] / r[0][repeats / 2], d[m][0], d[m][repeats - 1]);
		printf("\n");
	}
	return 0;
}
