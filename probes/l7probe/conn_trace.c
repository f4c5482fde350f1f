/* conn_trace.c - l7probe's traces (sub-probe l7_rpc_trace): one span per request kept by the sampling
 * rules (every error, every request slower than trace_slow_ms, a trace_sample_permille share of the
 * rest, at most trace_max_per_s a second), as a record of the supervisor's reserved trace_span table,
 * which the supervisor turns into OpenTelemetry JSON on the event channel. A request that carried a
 * W3C traceparent (HTTP) joins its trace: its trace id, and its parent id as the span's parent. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "l7_trace.h"

/* The supervisor's reserved table (supervisor/export/traces.c has the same fields in this order). */
static const char *const span_fields[] = {
	"trace_id",  "span_id",	    "parent_span_id", "kind",	 "start_unix_ns", "end_unix_ns", "tgid",
	"protocol",  "api",	    "raw_api",	      "status",	 "error",	  "client_ip",	 "client_port",
	"server_ip", "server_port", "l4_role",	      "l7_role", "ssl",		  "req_bytes",	 "resp_bytes",
};
static const unsigned char span_kinds[] = {
	PROBE_F_KEY,   PROBE_F_KEY,   PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_COUNTER, PROBE_F_COUNTER, PROBE_F_LABEL,
	PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_GAUGE, PROBE_F_GAUGE,   PROBE_F_LABEL,   PROBE_F_LABEL,
	PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL, PROBE_F_LABEL,   PROBE_F_COUNTER, PROBE_F_COUNTER,
};
const struct probe_table gg_tbl_trace_span = {"trace_span", sizeof(span_fields) / sizeof(span_fields[0]), span_fields,
					      span_kinds};

struct l7_trace {
	struct probe_rt *rt;
	struct l7_trace_conf conf;
	uint64_t rng;
	int64_t wall_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
	uint64_t window;  /* the second (monotonic) spans are being counted in */
	uint32_t in_window;
	struct l7_trace_stats st;
	struct probe_rec rec;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* xorshift64*: ids and sampling need to be unpredictable enough to not collide, not secret. */
static uint64_t rnd(struct l7_trace *tr)
{
	uint64_t x = tr->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	tr->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

struct l7_trace *l7_trace__new(struct probe_rt *rt)
{
	struct l7_trace *tr = calloc(1, sizeof(*tr));

	if (!tr)
		return NULL;
	tr->rt = rt;
	if (getrandom(&tr->rng, sizeof(tr->rng), GRND_NONBLOCK) != (ssize_t)sizeof(tr->rng))
		tr->rng = (uint64_t)clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
	tr->rng |= 1;
	tr->conf = (struct l7_trace_conf){.permille = 10, .slow_ms = 500, .max_per_s = 1000};
	l7_trace__clock(tr);
	return tr;
}

void l7_trace__free(struct l7_trace *tr)
{
	free(tr);
}

void l7_trace__set_conf(struct l7_trace *tr, const struct l7_trace_conf *c)
{
	tr->conf = *c;
}

void l7_trace__clock(struct l7_trace *tr)
{
	tr->wall_off = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

void l7_trace__stats(const struct l7_trace *tr, struct l7_trace_stats *ret)
{
	*ret = tr->st;
}

static void hex(char *out, uint64_t v, int digits)
{
	static const char h[] = "0123456789abcdef";

	for (int i = digits - 1; i >= 0; i--) {
		out[i] = h[v & 15];
		v >>= 4;
	}
	out[digits] = '\0';
}

static void put_ip(struct probe_rec *r, uint16_t family, const uint8_t *ip)
{
	char s[INET6_ADDRSTRLEN];

	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, ip, s, sizeof(s)))
		strcpy(s, "?");
	probe_rec__str(r, s);
}

int l7_trace__want(struct l7_trace *tr, const struct l7_span *sp)
{
	const struct l7_rpc *rpc = sp->rpc;
	uint64_t lat = rpc->resp_ts_ns > rpc->req_ts_ns ? rpc->resp_ts_ns - rpc->req_ts_ns : 0;
	uint64_t window = rpc->resp_ts_ns / 1000000000ull;

	if (!rpc->error && !(tr->conf.slow_ms && lat >= (uint64_t)tr->conf.slow_ms * 1000000ull) &&
	    !(tr->conf.permille >= 1000 || (tr->conf.permille && rnd(tr) % 1000u < tr->conf.permille))) {
		tr->st.sampled_out++;
		return 0;
	}
	if (window != tr->window) {
		tr->window = window;
		tr->in_window = 0;
	}
	if (tr->in_window >= tr->conf.max_per_s) {
		tr->st.dropped++;
		return 0;
	}
	tr->in_window++;
	return 1;
}

void l7_trace__span(struct l7_trace *tr, const struct l7_span *sp)
{
	static const char *const l4[] = {"udp", "tcp_client", "tcp_server"};
	static const char *const l7[] = {"unknown", "client", "server"};
	const struct l7_rpc *rpc = sp->rpc;
	struct probe_rec *r = &tr->rec;
	char tid[33], sid[17], pid[17] = "";
	uint64_t hi = 0, lo = 0, parent = 0;

	if (!l7_trace__want(tr, sp))
		return;
	for (int i = 0; i < 8; i++) {
		hi = hi << 8 | rpc->trace[i];
		lo = lo << 8 | rpc->trace[8 + i];
		parent = parent << 8 | rpc->trace[16 + i];
	}
	if (!(hi | lo)) {
		/* no trace context in the request: a trace of its own */
		hi = rnd(tr);
		lo = rnd(tr);
	} else {
		hex(pid, parent, 16);
	}
	hex(tid, hi, 16);
	hex(tid + 16, lo, 16);
	hex(sid, rnd(tr) | 1, 16);
	probe_rec__begin(r, &gg_tbl_trace_span);
	probe_rec__str(r, tid);
	probe_rec__str(r, sid);
	probe_rec__str(r, pid);
	probe_rec__str(r, sp->l7_role == 1 ? "client" : "server");
	probe_rec__u64(r, (uint64_t)((int64_t)rpc->req_ts_ns + tr->wall_off));
	probe_rec__u64(r, (uint64_t)((int64_t)(rpc->resp_ts_ns > rpc->req_ts_ns ? rpc->resp_ts_ns : rpc->req_ts_ns) +
				     tr->wall_off));
	probe_rec__u64(r, sp->tgid);
	probe_rec__str(r, l7_proto__name((enum l7_proto)sp->proto));
	probe_rec__str(r, sp->api && sp->api[0] ? sp->api : "-");
	probe_rec__str(r, rpc->api);
	probe_rec__i64(r, rpc->status);
	probe_rec__u64(r, rpc->error ? 1 : 0);
	put_ip(r, sp->family, sp->client_ip);
	probe_rec__u64(r, sp->client_port);
	put_ip(r, sp->family, sp->server_ip);
	probe_rec__u64(r, sp->server_port);
	probe_rec__str(r, l4[sp->l4_role % 3]);
	probe_rec__str(r, l7[sp->l7_role % 3]);
	probe_rec__u64(r, sp->ssl);
	probe_rec__u64(r, rpc->req_bytes);
	probe_rec__u64(r, rpc->resp_bytes);
	if (tr->rt && probe_rt__emit(tr->rt, r) == 0)
		tr->st.spans++;
	else
		tr->st.dropped++;
}
