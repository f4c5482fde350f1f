/* main.c - l7probe ("l7"): application requests on the wire (HTTP/1.x, PostgreSQL, MySQL, Redis,
 * DNS, and TLS through OpenSSL) from socket system call and SSL_read/SSL_write payloads, as l7_link
 * and l7_rpc rows per process, peer and protocol. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "l7_user.h"
#include "l7probe.meta.h"
#include "l7probe.skel.h"

#define PROBE_NAME     "l7"
#define PROG	       "l7probe"
#define PERIOD_MIN     1u
#define PERIOD_MAX     600u
#define PERIOD_DEFAULT 5u
/* Under the supervisor the first configuration (its scope) follows the start; nothing is captured
 * before it or before this much time, so that processes outside the scope it brings leave no row. */
#define FIRST_CONFIG_WAIT_MS 3000u
/* The ring is drained every DRAIN_MIN_MS..DRAIN_MAX_MS, sooner when busy. */
#define DRAIN_MIN_MS 5u
#define DRAIN_MAX_MS 50u

static const struct gg_subprobe sub_names[] = {
	{"l7_bytes_metrics", L7_SP_BYTES},
	{"l7_rpc_metrics", L7_SP_RPC},
	{"l7_rpc_trace", 0}, /* accepted, not implemented */
};
#define NSUBS (sizeof(sub_names) / sizeof(sub_names[0]))

/* What the command line or a live configuration sets. */
struct l7_conf {
	unsigned int period_s;
	unsigned int subs;
	unsigned int protos; /* 1u << enum l7_proto */
	unsigned int ssl;
};

struct l7_ctx {
	struct probe_rt *rt;
	struct l7probe *skel;
	struct l7_tracker *tracker;
	struct l7_tls *tls;
	struct ring_buffer *rb;
	struct l7_conf base, cur;
	struct gg_scope base_scope; /* --pid / --comm, or everything */
	struct gg_scope scope;	    /* in force */
	const char *comm;
	int live_scope; /* the supervisor sent a scope */
	int configured; /* a live configuration arrived (or none is expected) */
	uint64_t start_ms;
	uint64_t last_report_ns;
	int stats_fd;
	struct gg_bpf_stats_prev stats_prev[40];
	uint64_t exits_swept; /* tracker's exit count at the last sweep of l7_socks */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [OPTION]...\n"
		"Application requests (HTTP/1.x, PostgreSQL, MySQL, Redis, DNS; TLS through OpenSSL) of the\n"
		"processes in scope, from socket system call payloads (gala-gopher probe \"" PROBE_NAME "\").\n"
		"Without the supervisor, records are printed on stdout, one |table|...| line each.\n"
		"\n"
		"  -t SEC             report period in seconds, %u..%u (default %u)\n"
		"  -l LEVEL           log level: debug, info, warn or error (default info)\n"
		"  -P LIST            sub-probes: l7_bytes_metrics, l7_rpc_metrics (default both; l7_rpc_trace\n"
		"                     is accepted and does nothing yet)\n"
		"  -p LIST            protocols (l7_protocol): http, pgsql, mysql, redis, dns (default http)\n"
		"  -s 0|1             support_ssl: follow SSL_read/SSL_write of OpenSSL (default 0)\n"
		"  -c BYTES           payload prefix captured per call, 64..%u (default %u)\n"
		"  -m N               most connections tracked at once (default %u)\n"
		"      --pid LIST     only these processes (comma separated tgids)\n"
		"      --comm NAME    only processes with this command name (rescanned every period)\n"
		"      --bpf-stats    log each BPF program's runs and ns per run every period\n"
		"  -h, --help         show this help and exit\n"
		"      --version      show the version and exit\n"
		"\n"
		"Tables: l7_link (l7_bytes_metrics), l7_rpc (l7_rpc_metrics), l7_stats (always).\n"
		"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N, \"l7_protocol\": [...],\n"
		"\"support_ssl\": 0|1}, \"scope\": {\"all\": false, \"pids\": [...], \"cgroup_ids\": [...]}}\n",
		PERIOD_MIN, PERIOD_MAX, PERIOD_DEFAULT, L7_DATA_MAX, L7_CAP_DEFAULT, L7_CONNS_DEFAULT);
}

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
			if (pr == L7_PROTO_UNKNOWN) {
				snprintf(bad, badlen, "%s", name);
				return -EINVAL;
			}
			mask |= 1u << pr;
		} else if (n) {
			snprintf(bad, badlen, "%.*s", (int)(n > 31 ? 31 : n), p);
			return -EINVAL;
		}
		p = e ? e + 1 : p + n;
	}
	*ret = mask;
	return 0;
}

/* Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct l7_ctx *ctx, enum probe_log_level *level, unsigned int *cap,
		      unsigned int *max_conns, int *bpf_stats)
{
	enum { OPT_VERSION = 256 };
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		GG_LONGOPTS_COMMON,
		{NULL, 0, NULL, 0},
	};
	struct l7_conf *conf = &ctx->base;
	char bad[32];
	int c, ret;
	const struct gg_opts opts = {.period_s = &conf->period_s,
				     .period_min = PERIOD_MIN,
				     .period_max = PERIOD_MAX,
				     .level = level,
				     .scope = &ctx->base_scope,
				     .comm = &ctx->comm,
				     .bpf_stats = bpf_stats};

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:l:P:p:s:c:m:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'P':
			if (gg_subprobes_arg(PROG, optarg, sub_names, NSUBS, &conf->subs))
				return 2;
			break;
		case 'p':
			if (parse_protos(optarg, &conf->protos, bad, sizeof(bad))) {
				fprintf(stderr,
					PROG
					": unknown protocol '%s' in -p (expected http, pgsql, mysql, redis, dns)\n",
					bad);
				return 2;
			}
			break;
		case 's':
			if (probe_parse_uint(optarg, 0, 1, &conf->ssl)) {
				fprintf(stderr, PROG ": invalid value '%s' for -s (expected 0 or 1)\n", optarg);
				return 2;
			}
			break;
		case 'c':
			if (probe_parse_uint(optarg, 64, L7_DATA_MAX, cap)) {
				fprintf(stderr, PROG ": invalid value '%s' for -c (expected 64..%u)\n", optarg,
					L7_DATA_MAX);
				return 2;
			}
			break;
		case 'm':
			if (probe_parse_uint(optarg, 16, 1u << 22, max_conns)) {
				fprintf(stderr, PROG ": invalid value '%s' for -m (expected 16..4194304)\n", optarg);
				return 2;
			}
			break;
		default:
			ret = gg_opt_common(PROG, c, optarg, &opts);
			if (ret == 1)
				break;
			return ret ? ret : probe_opt_other(PROG, c, OPT_VERSION, argv, usage);
		}
	}
	return probe_opt_rest(PROG, argc, argv);
}

/* Scope maps, then a fresh verdict cache. A program that read the old maps just before the update
 * may set its verdict bit just after the clear: clear again once such programs are over (they run
 * for microseconds), so that no stale verdict outlives the change. */
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
	int n;

	if (!ctx->comm || ctx->live_scope || !ctx->configured)
		return;
	s = ctx->base_scope;
	n = gg_scope__add_comm(&s, ctx->comm);
	if (n < 0) {
		probe_log(PLOG_WARN, "--comm %s: %s", ctx->comm, strerror(-n));
		return;
	}
	if (s.ntgid != ctx->scope.ntgid || memcmp(s.tgid, ctx->scope.tgid, s.ntgid * sizeof(s.tgid[0])))
		apply_scope(ctx, &s);
}

/* What the kernel half does for the configuration in force. */
static void apply_conf(struct l7_ctx *ctx)
{
	ctx->skel->bss->ssl_on = ctx->cur.ssl;
	l7_tracker__set_protocols(ctx->tracker, ctx->cur.protos);
	if (ctx->cur.ssl)
		(void)l7_tls__scan(ctx->tls, &ctx->scope);
	else
		l7_tls__clear(ctx->tls);
}

static int conf_protos(const cJSON *params, unsigned int *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "l7_protocol");
	const cJSON *e;
	unsigned int mask = 0;
	char bad[32];

	if (!v || cJSON_IsNull(v))
		return -ENOENT;
	if (cJSON_IsString(v)) {
		if (parse_protos(v->valuestring, &mask, bad, sizeof(bad)))
			goto unknown;
		*ret = mask;
		return 0;
	}
	if (!cJSON_IsArray(v))
		return -EINVAL;
	cJSON_ArrayForEach(e, v)
	{
		enum l7_proto p;

		if (!cJSON_IsString(e))
			return -EINVAL;
		p = l7_proto__by_name(e->valuestring);
		/* kafka, mongo, rocketmq: accepted by the REST API, not parsed here (yet) */
		if (p != L7_PROTO_UNKNOWN)
			mask |= 1u << p;
		else
			probe_log(PLOG_INFO, "l7_protocol: %s is not supported, ignored", e->valuestring);
	}
	*ret = mask;
	return 0;
unknown:
	probe_log(PLOG_WARN, "configuration: unknown protocol '%s' in l7_protocol", bad);
	return -EINVAL;
}

static int conf_from_json(struct l7_ctx *ctx, const cJSON *root, struct l7_conf *ret)
{
	struct l7_conf conf = ctx->base;
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
	const cJSON *ssl;
	unsigned int v;
	int err;

	if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params)) {
		probe_log(PLOG_WARN, "configuration: \"params\" must be an object");
		return -EINVAL;
	}
	err = gg_conf_uint(params, "report_period", PERIOD_MIN, PERIOD_MAX, &v);
	if (err == -EINVAL) {
		probe_log(PLOG_WARN, "configuration: report_period must be an integer %u..%u", PERIOD_MIN, PERIOD_MAX);
		return err;
	}
	if (!err)
		conf.period_s = v;
	ssl = params ? cJSON_GetObjectItemCaseSensitive(params, "support_ssl") : NULL;
	if (cJSON_IsBool(ssl)) {
		conf.ssl = cJSON_IsTrue(ssl) ? 1 : 0;
	} else {
		err = gg_conf_uint(params, "support_ssl", 0, 1, &v);
		if (err == -EINVAL) {
			probe_log(PLOG_WARN, "configuration: support_ssl must be 0 or 1");
			return err;
		}
		if (!err)
			conf.ssl = v;
	}
	if (params) {
		err = conf_protos(params, &v);
		if (err == -EINVAL)
			return err;
		if (!err)
			conf.protos = v;
	}
	err = gg_subprobes_conf(root, sub_names, NSUBS, &v);
	if (err == -EINVAL)
		return err;
	if (!err)
		conf.subs = v;
	*ret = conf;
	return 0;
}

static int on_config(void *data, uint64_t version, const char *json)
{
	static struct gg_scope scope;
	struct l7_ctx *ctx = data;
	struct l7_conf conf;
	const cJSON *jscope;
	cJSON *root = cJSON_Parse(json);
	char names[128];
	int err = -EINVAL, has_scope = 0;

	if (!root || !cJSON_IsObject(root)) {
		probe_log(PLOG_WARN, "configuration is not a JSON object");
		goto out;
	}
	err = conf_from_json(ctx, root, &conf);
	if (err)
		goto out;
	jscope = cJSON_GetObjectItemCaseSensitive(root, "scope");
	if (jscope && !cJSON_IsNull(jscope)) {
		err = gg_scope__from_json(jscope, &scope);
		if (err) {
			probe_log(PLOG_WARN, "configuration: bad \"scope\" (%s)", strerror(-err));
			goto out;
		}
		has_scope = 1;
	}
	ctx->cur = conf;
	ctx->configured = 1;
	ctx->live_scope = has_scope;
	apply_scope(ctx, has_scope ? &scope : &ctx->base_scope);
	rescan_comm(ctx);
	apply_conf(ctx);
	gg_subprobes_str(conf.subs, sub_names, NSUBS, names, sizeof(names));
	probe_log(PLOG_INFO, "configuration %llu: report period %u s, sub-probes %s, protocols 0x%x, ssl %u, scope %s",
		  (unsigned long long)version, conf.period_s, names, conf.protos, conf.ssl,
		  ctx->scope.all ? "all" : "filtered");
	probe_rt__wake(ctx->rt);
	err = 0;
out:
	cJSON_Delete(root);
	return err;
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

	l7_tracker__stats(ctx->tracker, &ts);
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
	(void)probe_rt__emit(ctx->rt, &r);
}

/* Drop the socket entries of processes that exited without closing them (the kernel half keeps a
 * socket until its close). Run when processes in scope exited since the last sweep. */
static void sweep_socks(struct l7_ctx *ctx)
{
	static __u64 dead[4096];
	int fd = bpf_map__fd(ctx->skel->maps.l7_socks);
	uint32_t n = 0, last = 0;
	int alive = 1, err;
	__u64 key, next;

	err = bpf_map_get_next_key(fd, NULL, &next);
	while (!err && n < sizeof(dead) / sizeof(dead[0])) {
		uint32_t tgid;

		key = next;
		tgid = (uint32_t)(key >> 32);
		if (tgid != last) {
			last = tgid;
			alive = !(kill((pid_t)tgid, 0) < 0 && errno == ESRCH);
		}
		if (!alive)
			dead[n++] = key;
		err = bpf_map_get_next_key(fd, &key, &next);
	}
	if (n)
		(void)gg_bpf_map_delete_keys(fd, dead, sizeof(dead[0]), n);
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
	return n > 2000 ? DRAIN_MIN_MS : n > 200 ? 20u : DRAIN_MAX_MS;
}

static void report(void *arg)
{
	struct l7_ctx *ctx = arg;
	uint64_t now = now_ns();
	double period = (double)(now - ctx->last_report_ns) / 1e9;

	(void)ring_buffer__consume(ctx->rb);
	ctx->last_report_ns = now;
	if (!ctx->configured)
		return;
	rescan_comm(ctx);
	if (ctx->cur.ssl)
		(void)l7_tls__scan(ctx->tls, &ctx->scope);
	l7_tracker__report(ctx->tracker, ctx->rt, ctx->cur.subs, period, now);
	report_stats(ctx);
	{
		struct l7_tracker_stats ts;

		l7_tracker__stats(ctx->tracker, &ts);
		if (ts.exits != ctx->exits_swept) {
			ctx->exits_swept = ts.exits;
			sweep_socks(ctx);
		}
	}
	(void)probe_rt__flush(ctx->rt);
	if (ctx->stats_fd >= 0) {
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

	err = gg_bpf_init();
	if (err)
		probe_log(PLOG_WARN, "tracefs is not mounted and cannot be: %s", strerror(-err));
	s = l7probe__open();
	if (!s)
		return -errno;
	ctx->skel = s;
	s->data->cap_bytes = cap;
	err = l7probe__load(s);
	if (err)
		return err;
	{
		/* Every hook but the uprobes (tls.c attaches those per libssl file). */
		const struct gg_bpf_hook hooks[] = {
			{s->progs.l7_enter_read, &s->links.l7_enter_read, ~0u},
			{s->progs.l7_exit_read, &s->links.l7_exit_read, ~0u},
			{s->progs.l7_enter_write, &s->links.l7_enter_write, ~0u},
			{s->progs.l7_exit_write, &s->links.l7_exit_write, ~0u},
			{s->progs.l7_enter_readv, &s->links.l7_enter_readv, ~0u},
			{s->progs.l7_exit_readv, &s->links.l7_exit_readv, ~0u},
			{s->progs.l7_enter_writev, &s->links.l7_enter_writev, ~0u},
			{s->progs.l7_exit_writev, &s->links.l7_exit_writev, ~0u},
			{s->progs.l7_enter_sendto, &s->links.l7_enter_sendto, ~0u},
			{s->progs.l7_exit_sendto, &s->links.l7_exit_sendto, ~0u},
			{s->progs.l7_enter_recvfrom, &s->links.l7_enter_recvfrom, ~0u},
			{s->progs.l7_exit_recvfrom, &s->links.l7_exit_recvfrom, ~0u},
			{s->progs.l7_enter_sendmsg, &s->links.l7_enter_sendmsg, ~0u},
			{s->progs.l7_exit_sendmsg, &s->links.l7_exit_sendmsg, ~0u},
			{s->progs.l7_enter_recvmsg, &s->links.l7_enter_recvmsg, ~0u},
			{s->progs.l7_exit_recvmsg, &s->links.l7_exit_recvmsg, ~0u},
			{s->progs.l7_enter_sendfile, &s->links.l7_enter_sendfile, ~0u},
			{s->progs.l7_exit_sendfile, &s->links.l7_exit_sendfile, ~0u},
			{s->progs.l7_enter_connect, &s->links.l7_enter_connect, ~0u},
			{s->progs.l7_exit_connect, &s->links.l7_exit_connect, ~0u},
			{s->progs.l7_exit_accept, &s->links.l7_exit_accept, ~0u},
			{s->progs.l7_exit_accept4, &s->links.l7_exit_accept4, ~0u},
			{s->progs.l7_enter_close, &s->links.l7_enter_close, ~0u},
			{s->progs.l7_exit, &s->links.l7_exit, ~0u},
		};

		err = gg_bpf_apply_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), ~0u, &bad);
		if (err)
			probe_log(PLOG_ERROR, "cannot attach %s: %s", bpf_program__name(bad->prog), strerror(-err));
	}
	return err;
}

int main(int argc, char **argv)
{
	static struct l7_ctx ctx;
	static struct gg_scope nothing;
	enum probe_log_level level = PLOG_INFO;
	struct probe_rt_opts opts = {.name = PROBE_NAME, .on_config = on_config, .cb_ctx = &ctx};
	unsigned int cap = L7_CAP_DEFAULT, max_conns = L7_CONNS_DEFAULT;
	int bpf_stats = 0, ret, status = 1;
	char names[128];

	probe_log_setup(PROBE_NAME, PLOG_INFO);
	ctx.base = (struct l7_conf){.period_s = PERIOD_DEFAULT, .subs = L7_SP_DEFAULT, .protos = 1u << L7_PROTO_HTTP};
	gg_scope__init_all(&ctx.base_scope);
	ctx.stats_fd = -1;
	ret = parse_args(argc, argv, &ctx, &level, &cap, &max_conns, &bpf_stats);
	if (ret >= 0)
		return ret;
	ctx.cur = ctx.base;

	opts.log_level = level;
	ctx.rt = probe_rt__new(&opts);
	if (!ctx.rt) {
		probe_log(PLOG_ERROR, "cannot set up the probe runtime: %s", strerror(errno));
		return 1;
	}
	ctx.tracker = l7_tracker__new(max_conns, L7_KEYS_MAX);
	if (!ctx.tracker) {
		probe_log(PLOG_ERROR, "out of memory");
		goto out;
	}
	ret = setup_bpf(&ctx, cap);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-ret));
		goto out;
	}
	ctx.tls = l7_tls__new(ctx.skel);
	ctx.rb = ring_buffer__new(bpf_map__fd(ctx.skel->maps.l7_events), l7_tracker__event, ctx.tracker, NULL);
	if (!ctx.rb || !ctx.tls) {
		probe_log(PLOG_ERROR, "cannot map the event ring: %s", strerror(errno));
		goto out;
	}
	if (bpf_stats) {
		ctx.stats_fd = gg_bpf_stats_enable();
		if (ctx.stats_fd < 0)
			probe_log(PLOG_WARN, "--bpf-stats: %s", strerror(-ctx.stats_fd));
	}
	ctx.start_ms = probe_now_mono_ms();
	ctx.last_report_ns = now_ns();
	if (probe_rt__supervised(ctx.rt)) {
		/* Nothing in scope until the supervisor says what is (or FIRST_CONFIG_WAIT_MS passed). */
		nothing.all = 0;
		apply_scope(&ctx, &nothing);
	} else {
		ctx.configured = 1;
		apply_scope(&ctx, &ctx.base_scope);
		rescan_comm(&ctx);
		apply_conf(&ctx);
	}
	gg_subprobes_str(ctx.cur.subs, sub_names, NSUBS, names, sizeof(names));
	probe_log(PLOG_INFO, "started: report period %u s, sub-probes %s, protocols 0x%x, ssl %u, capture %u bytes",
		  ctx.cur.period_s, names, ctx.cur.protos, ctx.cur.ssl, cap);

	probe_rt__run_ticking(ctx.rt, &ctx.cur.period_s, report, drain_tick, &ctx);
	status = 0;
	probe_log(PLOG_INFO, "stopping: %llu records emitted, %llu invalid",
		  (unsigned long long)probe_rt__records_emitted(ctx.rt),
		  (unsigned long long)probe_rt__records_invalid(ctx.rt));
out:
	if (ctx.stats_fd >= 0)
		close(ctx.stats_fd);
	ring_buffer__free(ctx.rb);
	l7_tls__free(ctx.tls);
	l7probe__destroy(ctx.skel);
	l7_tracker__free(ctx.tracker);
	probe_rt__free(ctx.rt);
	return status;
}
