/* main.c - l7probe ("l7"): application requests on the wire (HTTP/1.x, HTTP/2 and gRPC, PostgreSQL,
 * MySQL, Redis, DNS, Kafka, MongoDB, RocketMQ, and TLS through OpenSSL) from socket system call and SSL_read/SSL_write
 * payloads, as l7_link and l7_rpc rows per process, peer and protocol. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "l7_main.h"
#include "l7_trace.h"
#include "l7_user.h"
#include "l7share.h"
#include "probe_conf.h"
#include "probe_runner.h"
#include "l7probe.meta.h"
#include "l7probe.skel.h"

/* What this binary is: l7probe, or ksliprobe / pgsliprobe (l7_main.h). */
static const struct l7_mode *M;
#define PROG	 (M->contract->bin)
#define CONTRACT (M->contract)
/* Under the supervisor the first configuration (its scope) follows the start; nothing is captured
 * before it or before this much time, so that processes outside the scope it brings leave no row. */
#define FIRST_CONFIG_WAIT_MS 3000u
/* The ring is drained every DRAIN_MIN_MS..DRAIN_MAX_MS, sooner when busy. */
#define DRAIN_MIN_MS 5u
#define DRAIN_MAX_MS 50u

#define SUBPROBES (CONTRACT->subprobes)
#define NSUBS	  (CONTRACT->nsubprobes)

struct l7_ctx {
	struct probe_rt *rt;
	struct l7probe *skel;
	struct l7_tracker *tracker;
	struct l7_tls *tls;
	struct l7_trace *trace;
	struct l7_sli *sli;
	struct ring_buffer *rb;
	struct l7_conf base, cur;
	struct gg_scope base_scope; /* --pid / --comm, or everything */
	struct gg_scope scope;	    /* in force */
	const char *comm;
	int live_scope; /* the supervisor sent a scope */
	int configured; /* a live configuration arrived (or none is expected) */
	uint64_t start_ms;
	uint64_t last_report_ns;
	int bpf_stats;		     /* --bpf-stats: set, and collected */
	unsigned int cap, max_conns; /* -c, -m */
	struct gg_bpf_stats_prev stats_prev[40];
	/* per-process aggregates for autotrace's l7 triggers (l7share.h): l7probe only, not the SLI modes */
	struct l7s_table *share;
	char share_path[4096];
	uint64_t share_ms; /* last publish */
	int share_err;	   /* last error logged (logged once per kind) */
};

static const char notes[] =
	"l7_protocol takes http (HTTP/1.x and HTTP/2 with gRPC, reported as http and http2), pgsql, mysql,\n"
	"redis, kafka, mongo, rocketmq, dns. Tables: l7_link\n"
	"(l7_bytes_metrics), l7_rpc and l7_rpc_api (l7_rpc_metrics), l7_stats (always); l7_rpc_trace sends\n"
	"trace_span records (OpenTelemetry spans on the event channel).\n"
	"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N, \"l7_protocol\": [...],\n"
	"\"support_ssl\": 0|1}, \"scope\": {\"all\": false, \"pids\": [...], \"cgroup_ids\": [...]}}\n";

/* "http,redis" into a protocol mask. 0, or -EINVAL with the bad name in bad. */
static int parse_protos(const char *csv, unsigned int *ret, char *bad, size_t badlen)
{
	unsigned int mask = 0;
	const char *p = csv;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char name[32];
		enum l7_proto pr;

		if (n && n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = '\0';
			pr = l7_proto__by_name(name);
			if (pr != L7_PROTO_UNKNOWN) {
				mask |= 1u << pr;
			} else {
				snprintf(bad, badlen, "%s", name);
				return -EINVAL;
			}
		} else if (n) {
			snprintf(bad, badlen, "%.*s", (int)(n > 31 ? 31 : n), p);
			return -EINVAL;
		}
		p = e ? e + 1 : p + n;
	}
	*ret = mask;
	return 0;
}

/* l7probe's own options: -c, -m. */
static const struct probe_opt own[] = {
	{NULL, 'c', required_argument, 'c', "BYTES", "payload prefix captured per call, 64..8192 (default 4096)"},
	{NULL, 'm', required_argument, 'm', "N", "most connections tracked at once, 16..4194304 (default 65536)"},
};

static int own_option(void *data, int id, const char *arg)
{
	struct l7_ctx *ctx = data;

	if (id == 'c') {
		if (probe_parse_uint(arg, 64, L7_DATA_MAX, &ctx->cap)) {
			fprintf(stderr, "%s: invalid value '%s' for -c (expected 64..%u)\n", PROG, arg, L7_DATA_MAX);
			return 2;
		}
		return 0;
	}
	if (probe_parse_uint(arg, 16, 1u << 22, &ctx->max_conns)) {
		fprintf(stderr, "%s: invalid value '%s' for -m (expected 16..4194304)\n", PROG, arg);
		return 2;
	}
	return 0;
}

/* -p names protocols l7probe knows. */
static int check_args(void *arg)
{
	struct l7_ctx *ctx = arg;
	char bad[32];

	if (parse_protos(ctx->base.protos_str, &ctx->base.protos, bad, sizeof(bad))) {
		fprintf(stderr,
			"%s: unknown protocol '%s' in -p (expected http, pgsql, mysql, redis, kafka, mongo, "
			"rocketmq, dns)\n",
			PROG, bad);
		return -EINVAL;
	}
	if (M->protos)
		ctx->base.protos = M->protos;
	return 0;
}

/* Scope maps, then a fresh verdict cache. A program that read the old maps just before the update
 * may set its verdict bit just after the clear: clear again once such programs are over (they run
 * for microseconds), so that no stale verdict outlives the change. */
/* The scope under the supervisor until its first configuration: no process. */
static const struct gg_scope nothing = {.all = 0};

static void apply_scope(struct l7_ctx *ctx, const struct gg_scope *s)
{
	const struct timespec pause = {.tv_nsec = 2000000};
	int err;

	ctx->scope = *s;
	err = gg_scope__apply(&ctx->scope, ctx->skel->obj);
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
	memset(ctx->skel->bss->verdict, 0, sizeof(ctx->skel->bss->verdict));
	nanosleep(&pause, NULL);
	memset(ctx->skel->bss->verdict, 0, sizeof(ctx->skel->bss->verdict));
}

static void rescan_comm(struct l7_ctx *ctx)
{
	static struct gg_scope s;

	if (ctx->comm && !ctx->live_scope && ctx->configured &&
	    gg_scope__rescan_comm(&ctx->base_scope, 1, ctx->comm, &ctx->scope, &s) > 0)
		apply_scope(ctx, &s);
}

/* Every request matched: to the traces and the SLI tables when they are on. */
static void on_span(void *data, const struct l7_span *sp)
{
	struct l7_ctx *ctx = data;

	if (ctx->cur.subs & L7_SP_TRACE)
		l7_trace__span(ctx->trace, sp);
	if (ctx->sli)
		l7_sli__span(ctx->sli, sp);
}

/* The hooks only UDP protocols need (the peer of a datagram on an unconnected socket, the time of a
 * datagram's send): attached while dns is parsed, and UDP payloads copied only then. Both hooks fire
 * for every socket wake-up or packet of the host (~2 each per HTTP/2 request of nginx), which TCP-only
 * configurations then do not pay. */
static void apply_udp_hooks(struct l7_ctx *ctx)
{
	struct l7probe *s = ctx->skel;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.l7_dgram, &s->links.l7_dgram, 1},
		{s->progs.l7_xmit_q, &s->links.l7_xmit_q, 1},
	};

	unsigned int dns = (ctx->cur.protos & (1u << L7_PROTO_DNS)) ? 1u : 0u;

	ctx->skel->bss->udp_on = dns;
	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), dns);
}

/* What the kernel half does for the configuration in force. */
static void apply_conf(struct l7_ctx *ctx)
{
	const struct l7_trace_conf tc = {.permille = ctx->cur.trace_permille,
					 .slow_ms = ctx->cur.trace_slow_ms,
					 .max_per_s = ctx->cur.trace_max_per_s ? ctx->cur.trace_max_per_s : 1};

	ctx->skel->bss->ssl_on = ctx->cur.ssl;
	apply_udp_hooks(ctx);
	l7_tracker__set_protocols(ctx->tracker, ctx->cur.protos);
	l7_tracker__set_api_limit(ctx->tracker, (ctx->cur.subs & L7_SP_RPC) ? ctx->cur.api_limit : 0);
	l7_trace__set_conf(ctx->trace, &tc);
	l7_tracker__set_span_cb(ctx->tracker, (ctx->cur.subs & L7_SP_TRACE) || ctx->sli ? on_span : NULL, ctx);
	if (ctx->cur.ssl)
		(void)l7_tls__scan(ctx->tls, &ctx->scope);
	else
		l7_tls__clear(ctx->tls);
}

static int on_config(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct l7_ctx *ctx = data;
	struct l7_conf conf = ctx->base;
	char names[128], bad[32];
	int err;

	err = probe_conf__apply(CONTRACT, msg, &conf, &conf.subs);
	if (err < 0)
		return err;
	if (parse_protos(conf.protos_str, &conf.protos, bad, sizeof(bad))) {
		probe_log(PLOG_WARN, "configuration: unknown protocol '%s' in l7_protocol", bad);
		return -EINVAL;
	}
	if (M->protos)
		conf.protos = M->protos;
	ctx->cur = conf;
	ctx->configured = 1;
	ctx->live_scope = msg->has_scope;
	apply_scope(ctx, msg->has_scope ? &msg->scope : &ctx->base_scope);
	rescan_comm(ctx);
	apply_conf(ctx);
	gg_subprobes_str(conf.subs, SUBPROBES, NSUBS, names, sizeof(names));
	probe_log(PLOG_INFO,
		  "configuration %llu: report period %u s, sub-probes %s, protocols %s (mask 0x%x), ssl %d, scope %s",
		  (unsigned long long)version, conf.period_s, names, conf.protos_str, conf.protos, conf.ssl,
		  ctx->scope.all ? "all" : "filtered");
	probe_rt__wake(ctx->rt);
	return 0;
}

/* Sum of a per-CPU counter of l7_stats. */
static uint64_t bpf_stat(struct l7_ctx *ctx, uint32_t i)
{
	static uint64_t vals[1024];
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0;

	if (ncpu <= 0 || ncpu > 1024 ||
	    bpf_map__lookup_elem(ctx->skel->maps.l7_stats, &i, sizeof(i), vals, sizeof(vals[0]) * (size_t)ncpu, 0))
		return 0;
	for (int c = 0; c < ncpu; c++)
		sum += vals[c];
	return sum;
}

static void report_stats(struct l7_ctx *ctx)
{
	static struct probe_rec r;
	struct l7_tracker_stats ts;
	struct l7_trace_stats tr;

	l7_tracker__stats(ctx->tracker, &ts);
	l7_trace__stats(ctx->trace, &tr);
	probe_rec__begin(&r, &TBL_l7_stats);
	probe_rec__str(&r, PROG);
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_EVENTS));
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_RB_FULL));
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_TRUNCATED));
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_INFLIGHT_FULL));
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_SSL_NOFD));
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_SOCKS_FULL));
	probe_rec__u64(&r, ts.unparsable);
	probe_rec__u64(&r, ts.resp_unmatched);
	probe_rec__u64(&r, ts.req_lost);
	probe_rec__u64(&r, ts.untracked);
	probe_rec__u64(&r, ts.conn_overflow);
	probe_rec__u64(&r, ts.key_overflow);
	probe_rec__u64(&r, ts.conns);
	probe_rec__u64(&r, ts.hpack_unresolved);
	probe_rec__u64(&r, ts.api_overflow);
	probe_rec__u64(&r, ts.apis);
	probe_rec__u64(&r, tr.spans);
	probe_rec__u64(&r, tr.sampled_out);
	probe_rec__u64(&r, tr.dropped);
	probe_rec__u64(&r, bpf_stat(ctx, L7_ST_UNKNOWN_CALL));
	(void)probe_rt__emit(ctx->rt, &r);
}

/* Between reports: drain the ring, sooner when it is busy. */
static unsigned int drain_tick(void *arg)
{
	struct l7_ctx *ctx = arg;
	int n;

	if (!ctx->configured && probe_now_mono_ms() >= ctx->start_ms + FIRST_CONFIG_WAIT_MS) {
		probe_log(PLOG_WARN, "no configuration from the supervisor after %u ms: using the command line's",
			  FIRST_CONFIG_WAIT_MS);
		ctx->configured = 1;
		apply_scope(ctx, &ctx->base_scope);
		rescan_comm(ctx);
		apply_conf(ctx);
	}
	n = ring_buffer__consume(ctx->rb);
	if (n < 0) {
		probe_log(PLOG_WARN, "reading the event ring: %s", strerror(-n));
		return DRAIN_MAX_MS;
	}
	if (ctx->share && probe_now_mono_ms() >= ctx->share_ms + 1000u) {
		/* at most once a second, and only when requests were answered since */
		int err = l7s_table__publish(ctx->share, ctx->share_path, 0);

		ctx->share_ms = probe_now_mono_ms();
		if (err && err != ctx->share_err)
			probe_log(PLOG_WARN, "cannot write %s: %s", ctx->share_path, strerror(-err));
		ctx->share_err = err;
	}
	return n > 2000 ? DRAIN_MIN_MS : n > 200 ? 20u : DRAIN_MAX_MS;
}

static void report(void *arg)
{
	struct l7_ctx *ctx = arg;
	uint64_t now = gg_mono_ns();
	double period = (double)(now - ctx->last_report_ns) / 1e9;

	(void)ring_buffer__consume(ctx->rb);
	ctx->last_report_ns = now;
	if (!ctx->configured)
		return;
	rescan_comm(ctx);
	if (ctx->cur.ssl)
		(void)l7_tls__scan(ctx->tls, &ctx->scope);
	l7_trace__clock(ctx->trace);
	l7_tracker__report(ctx->tracker, ctx->rt, ctx->cur.subs, period, now);
	if (ctx->sli)
		l7_sli__report(ctx->sli, ctx->rt, (uint64_t)ctx->cur.latency_thr_ms * 1000000ull);
	/* Socket entries live in the sockets' local storage (bpf/l7probe.bpf.c): freed with the socket,
	 * nothing to sweep when processes exit. */
	report_stats(ctx);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats) {
		char buf[2048];

		gg_bpf_stats_fmt(ctx->skel->obj, ctx->stats_prev, sizeof(ctx->stats_prev) / sizeof(ctx->stats_prev[0]),
				 buf, sizeof(buf));
		probe_log(PLOG_INFO, "bpf stats (runs/ns per run): %s", buf);
	}
}

static int setup_bpf(struct l7_ctx *ctx, unsigned int cap)
{
	struct l7probe *s;
	const struct gg_bpf_hook *bad = NULL;
	int err;

	gg_bpf_begin();
	s = l7probe__open();
	if (!s)
		return -errno;
	ctx->skel = s;
	s->data->cap_bytes = cap;
	gg_bpf_autoload(s->obj);
	err = l7probe__load(s);
	if (err)
		return err;
	/* The scope before the hooks: until its maps are written every process is in scope, and what
	 * other processes did while the programs were being attached would become rows. */
	apply_scope(ctx, probe_rt__supervised(ctx->rt) ? &nothing : &ctx->base_scope);
	{
		/* Every hook but the uprobes (tls.c attaches those per libssl file). */
		const struct gg_bpf_hook hooks[] = {
			{s->progs.l7_sock_send, &s->links.l7_sock_send, ~0u},
			{s->progs.l7_sock_recv, &s->links.l7_sock_recv, ~0u},
			{s->progs.l7_send_begin, &s->links.l7_send_begin, ~0u},
			{s->progs.l7_state, &s->links.l7_state, ~0u},
			{s->progs.l7_exit, &s->links.l7_exit, ~0u},
		};

		err = gg_bpf_apply_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), ~0u, &bad);
		if (err)
			probe_log(PLOG_ERROR, "cannot attach %s: %s", bpf_program__name(bad->prog), strerror(-err));
	}
	return err;
}

/* After the command line: the connection tracker, the BPF programs, the event ring, the scope. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct l7_ctx *ctx = arg;
	char names[128];
	int ret;

	ctx->rt = rt;
	ctx->cur = ctx->base;
	ctx->tracker = l7_tracker__new(ctx->max_conns, L7_KEYS_MAX);
	ctx->trace = l7_trace__new(rt);
	if (M->sli)
		ctx->sli = l7_sli__new(M->sli);
	if (!ctx->tracker || !ctx->trace || (M->sli && !ctx->sli)) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	ret = setup_bpf(ctx, ctx->cap);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-ret));
		return ret;
	}
	ctx->tls = l7_tls__new(ctx->skel);
	ctx->rb = ring_buffer__new(bpf_map__fd(ctx->skel->maps.l7_events), l7_tracker__event, ctx->tracker, NULL);
	if (!ctx->rb || !ctx->tls) {
		ret = errno ? -errno : -ENOMEM;
		probe_log(PLOG_ERROR, "cannot map the event ring: %s", strerror(-ret));
		return ret;
	}
	if (!M->sli && !M->protos && !l7s_path(ctx->share_path, sizeof(ctx->share_path))) {
		ctx->share = l7s_table__new(L7S_PROCS_MAX);
		if (!ctx->share) {
			probe_log(PLOG_ERROR, "out of memory");
			return -ENOMEM;
		}
		l7_tracker__set_share(ctx->tracker, ctx->share);
		/* an empty file at once: readers tell "l7probe runs, no requests yet" from "not running" */
		ret = l7s_table__publish(ctx->share, ctx->share_path, 1);
		if (ret)
			probe_log(PLOG_WARN, "cannot write %s: %s", ctx->share_path, strerror(-ret));
		ctx->share_err = ret;
	}
	ctx->start_ms = probe_now_mono_ms();
	ctx->last_report_ns = gg_mono_ns();
	if (probe_rt__supervised(ctx->rt)) {
		/* Nothing in scope until the supervisor says what is (or FIRST_CONFIG_WAIT_MS passed). */
		apply_scope(ctx, &nothing);
	} else {
		ctx->configured = 1;
		apply_scope(ctx, &ctx->base_scope);
		rescan_comm(ctx);
		apply_conf(ctx);
	}
	gg_subprobes_str(ctx->cur.subs, SUBPROBES, NSUBS, names, sizeof(names));
	probe_log(PLOG_INFO,
		  "started: report period %u s, sub-probes %s, protocols %s (mask 0x%x), ssl %d, capture %u bytes",
		  ctx->cur.period_s, names, ctx->cur.protos_str, ctx->cur.protos, ctx->cur.ssl, ctx->cap);
	return 0;
}

static void teardown(void *arg)
{
	struct l7_ctx *ctx = arg;

	ring_buffer__free(ctx->rb);
	l7_tls__free(ctx->tls);
	l7probe__destroy(ctx->skel);
	l7_tracker__free(ctx->tracker);
	l7_trace__free(ctx->trace);
	l7_sli__free(ctx->sli);
	if (ctx->share)
		(void)unlink(ctx->share_path);
	l7s_table__free(ctx->share);
}

int l7_main(int argc, char **argv, const struct l7_mode *mode)
{
	static struct l7_ctx ctx = {.cap = L7_CAP_DEFAULT, .max_conns = L7_CONNS_DEFAULT};
	const struct probe_runner r = {
		.contract = mode->contract,
		.ctx = &ctx,
		.args = {.conf = &ctx.base,
			 .subprobes = mode->contract->nsubprobes ? &ctx.base.subs : NULL,
			 .scope = &ctx.base_scope,
			 .comm = &ctx.comm,
			 .bpf_stats = &ctx.bpf_stats,
			 .own = own,
			 .nown = sizeof(own) / sizeof(own[0]),
			 .own_cb = own_option,
			 .notes = mode->notes ? mode->notes : notes},
		.check_args = check_args,
		.setup = setup,
		.on_config = on_config,
		.period_s = &ctx.cur.period_s,
		.report = report,
		.tick = drain_tick,
		.teardown = teardown,
	};

	M = mode;
	return probe_runner__main(&r, argc, argv);
}
