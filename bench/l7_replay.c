/* l7_replay.c - replays recorded socket traffic through l7probe's protocol layer and prints what it
 * made of it, to check the parsers against real clients and servers (bench/l7_replay.py records).
 *   build/bench/l7_replay [-p proto] [-c bytes] FILE
 * FILE lines: "<conn> <tcp|udp> <req|resp> <ts_ns> <total> <hex of captured bytes>". Each connection's
 * protocol is inferred from its first chunks (up to 4 tries) unless -p NAME; -c keeps only that many
 * bytes of each chunk, the rest becoming a gap, as the probe's capture limit would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../probes/l7probe/l7_proto.h"

#define CONNS	  4096
#define LINE_MAX_ (1 << 22)
#define APIS	  64

struct conn {
	long id;
	struct l7_session *s;
	int tries;
	enum l7_proto proto;
};

struct api_count {
	char api[L7_API_MAX];
	unsigned long n, err;
};

static struct conn conns[CONNS];
static size_t nconns;
static struct api_count apis[APIS];
static unsigned long rpcs[L7_PROTO__COUNT], errs[L7_PROTO__COUNT];
static double lat_sum[L7_PROTO__COUNT];

static void on_rpc(void *ctx, const struct l7_rpc *r)
{
	struct conn *c = ctx;
	size_t i;

	rpcs[c->proto]++;
	errs[c->proto] += (unsigned long)r->error;
	lat_sum[c->proto] += (double)(r->resp_ts_ns - r->req_ts_ns);
	for (i = 0; i < APIS && apis[i].api[0] && strcmp(apis[i].api, r->api); i++)
		;
	if (i == APIS)
		return;
	if (!apis[i].api[0])
		memcpy(apis[i].api, r->api, sizeof(apis[i].api));
	apis[i].n++;
	apis[i].err += (unsigned long)r->error;
}

static struct conn *conn_get(long id)
{
	for (size_t i = 0; i < nconns; i++)
		if (conns[i].id == id)
			return &conns[i];
	if (nconns == CONNS)
		return NULL;
	conns[nconns].id = id;
	return &conns[nconns++];
}

static int unhex(const char *h, uint8_t *out, size_t max)
{
	size_t n = 0;

	for (; h[0] && h[1] && h[0] != '\n' && n < max; h += 2) {
		unsigned int v;

		if (sscanf(h, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t)v;
	}
	return (int)n;
}

int main(int argc, char **argv)
{
	enum l7_proto forced = L7_PROTO_UNKNOWN;
	long cap = 0;
	char *line = malloc(LINE_MAX_);
	uint8_t *buf = malloc(LINE_MAX_ / 2);
	struct l7_session_stats tot = {0};
	FILE *f;
	int opt;

	while ((opt = getopt(argc, argv, "p:c:")) != -1) {
		if (opt == 'p')
			forced = l7_proto__by_name(optarg);
		else if (opt == 'c')
			cap = strtol(optarg, NULL, 10);
	}
	if (optind >= argc || !line || !buf || !(f = fopen(argv[optind], "r"))) {
		fprintf(stderr, "usage: %s [-p proto] [-c bytes] FILE\n", argv[0]);
		return 2;
	}
	while (fgets(line, LINE_MAX_, f)) {
		char dir[8], tr[8], hex_start;
		long id;
		unsigned long long ts, total;
		int off = 0, n;
		struct conn *c;
		enum l7_flow flow;

		if (sscanf(line, "%ld %7s %7s %llu %llu %n%c", &id, tr, dir, &ts, &total, &off, &hex_start) < 5)
			continue;
		n = unhex(line + off, buf, LINE_MAX_ / 2);
		c = conn_get(id);
		if (n < 0 || !c)
			continue;
		if (total < (unsigned long long)n)
			total = (unsigned long long)n;
		if (cap > 0 && n > cap)
			n = (int)cap;
		flow = strcmp(dir, "req") == 0 ? L7_FLOW_REQ : L7_FLOW_RESP;
		if (!c->s) {
			enum l7_flow f2 = flow;
			enum l7_transport t = strcmp(tr, "udp") == 0 ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP;

			if (c->tries++ >= 4)
				continue;
			c->proto = forced ? forced : l7_infer(buf, (size_t)n, t, 0, ~0u, &f2);
			if (c->proto == L7_PROTO_UNKNOWN)
				continue;
			if (f2 != flow)
				fprintf(stderr, "conn %ld: inferred %s as %s\n", id, dir,
					f2 == L7_FLOW_REQ ? "req" : "resp");
			c->s = l7_session__new(c->proto, t);
			if (!c->s)
				continue;
		}
		l7_session__feed(c->s, flow, buf, (size_t)n, total, ts, on_rpc, c);
	}
	for (size_t i = 0; i < nconns; i++) {
		struct l7_session_stats st;

		if (!conns[i].s) {
			printf("conn %ld: protocol not inferred\n", conns[i].id);
			continue;
		}
		l7_session__close(conns[i].s, 0, on_rpc, &conns[i]);
		l7_session__stats(conns[i].s, &st);
		tot.rpcs += st.rpcs;
		tot.unparsable += st.unparsable;
		tot.resp_unmatched += st.resp_unmatched;
		tot.req_overflow += st.req_overflow;
		tot.req_lost += st.req_lost;
		tot.gap_bytes += st.gap_bytes;
		tot.resp_end_guessed += st.resp_end_guessed;
		l7_session__free(conns[i].s);
	}
	for (int p = 1; p < L7_PROTO__COUNT; p++)
		if (rpcs[p])
			printf("%s: %lu rpcs, %lu errors, latency avg %.1f us\n", l7_proto__name((enum l7_proto)p),
			       rpcs[p], errs[p], lat_sum[p] / (double)rpcs[p] / 1000.0);
	printf("connections %zu, unparsable %llu, resp_unmatched %llu, req_overflow %llu, req_lost %llu, gap_bytes "
	       "%llu, resp_end_guessed %llu\n",
	       nconns, (unsigned long long)tot.unparsable, (unsigned long long)tot.resp_unmatched,
	       (unsigned long long)tot.req_overflow, (unsigned long long)tot.req_lost,
	       (unsigned long long)tot.gap_bytes, (unsigned long long)tot.resp_end_guessed);
	for (size_t i = 0; i < 12 && apis[i].api[0]; i++)
		printf("  %-40s %lu (%lu errors)\n", apis[i].api, apis[i].n, apis[i].err);
	fclose(f);
	free(line);
	free(buf);
	return 0;
}
