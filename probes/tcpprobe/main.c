/* main.c - tcpprobe ("tcp"): per TCP link bytes, segments, RTT, windows, rates, socket buffers and
 * abnormal events from tracepoints and a per-period snapshot of every live socket. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "probe_runner.h"
#include "tcp_user.h"
#include "tcpprobe.skel.h"

#define PROG	     "tcpprobe"
#define DUMP_CHUNK   256u
#define AGG_KEYS_MAX 65536u

extern const struct gg_contract gg_contract_tcpprobe;
#define CONTRACT  (&gg_contract_tcpprobe)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)

/* Closed links are drained when the kernel says the ring is a quarter full, and at every report;
 * without epoll on the ring, every DRAIN_MIN_MS..DRAIN_MAX_MS instead (drain_tick). */
#define DRAIN_MIN_MS  25u
#define DRAIN_MAX_MS  100u
#define DRAIN_IDLE_MS 3600000u /* no timer: the ring's fill level wakes the drain */

/* State shared by the main loop and the configuration callback. */
struct tp_ctx {
	struct probe_rt *rt;
	struct tcpprobe *skel;
	struct tp_aggs *aggs;
	struct tp_conf base; /* from the command line */
	struct tp_conf cur;
	struct gg_scope base_scope; /* --pid / --comm, or everything */
	struct gg_scope scope;	    /* in force */
	const char *comm;	    /* --comm: rescanned every period while no live scope is set */
	int live_scope;		    /* the supervisor sent a scope */
	uint64_t scope_changed_ns;
	int bpf_stats;		/* --bpf-stats: set, and collected */
	unsigned int max_links; /* -m */
	struct gg_bpf_stats_prev stats_prev[32];
	struct bpf_link *seed_link; /* iter/task_file: links established before start or a scope change */
	uint64_t closed_lost, links_lost;
	uint64_t start_ns;
	struct ring_buffer *closed_rb;	      /* tcp_closed */
	int closed_efd;			      /* edge-triggered epoll on tcp_closed: its fill-level wakeups */
	const struct tp_report_ctx *drain_rc; /* during a drain */
	uint32_t drained;		      /* closed links drained since the last drain_tick */
	uint64_t drained_ns;		      /* the last drain_tick */
	uint32_t port_lo, port_hi;	      /* ip_local_port_range, read once per report */
};

/* --help after the options (generated from the contract). */
static const char notes[] =
	"Without -P: every table but tcp_delay, with RTT histograms and zero windows read once per period;\n"
	"naming tcp_rtt or tcp_windows samples them per incoming segment, at a cost per segment. -P also\n"
	"takes gala-gopher's bit mask (1 tcp_abnormal .. 128 tcp_delay).\n"
	"Tables: tcp_tx_rx (tcp_stats), tcp_rtt, tcp_windows, tcp_rate, tcp_srtt, tcp_sockbuf, tcp_delay,\n"
	"tcp_abn (tcp_abnormal); event_v2 records (entity tcp_link) for drops_thr and latency_thr.\n"
	"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N, \"report_source_port\": 0|1,\n"
	"\"drops_thr\": N, \"latency_thr\": MS}, \"scope\": {\"all\": false, \"pids\": [...], \"cgroup_ids\": "
	"[...]}}\n";

/* -P takes names, or gala-gopher's numeric bit mask (bits as TCP_SP_*). */
static int parse_subprobes(const char *s, unsigned int *ret)
{

	if (s[0] >= '0' && s[0] <= '9') {
		if (probe_parse_uint(s, 1, TCP_SP_ALL, ret) == 0)
			return 0;
		fprintf(stderr, PROG ": invalid sub-probe mask '%s' for -P (1..%u)\n", s, TCP_SP_ALL);
		return -EINVAL;
	}
	return gg_subprobes_arg(PROG, s, SUBPROBES, NSUB, ret);
}

/* tcpprobe's own options: -P (names or a mask), -m. */
static const struct probe_opt own[] = {
	{NULL, 'P', required_argument, 'P', "LIST",
	 "sub-probes, comma separated, or a bit mask: tcp_abnormal*, tcp_rtt*, tcp_windows*, tcp_rate*, "
	 "tcp_srtt*, tcp_sockbuf*, tcp_stats*, tcp_delay (* = default)"},
	{NULL, 'm', required_argument, 'm', "N", "most live links tracked (map size), 64..1048576 (default 16384)"},
};

static int own_option(void *data, int id, const char *arg)
{
	struct tp_ctx *ctx = data;

	if (id == 'P') {
		if (parse_subprobes(arg, &ctx->base.subprobes))
			return 2;
		ctx->base.explicit_sp = 1;
		return 0;
	}
	if (probe_parse_uint(arg, 64, 1u << 20, &ctx->max_links)) {
		fprintf(stderr, PROG ": invalid value '%s' for -m (expected 64..1048576)\n", arg);
		return 2;
	}
	return 0;
}

static void apply_subprobes(struct tp_ctx *ctx)
{
	struct tcpprobe *s = ctx->skel;
	unsigned int sp = ctx->cur.subprobes;
	const struct gg_bpf_hook hooks[] = {
		/* Per incoming segment, the costliest hook: per-segment RTT samples and zero windows (tcp_rtt or
		 * tcp_windows asked for explicitly), tcp_delay. */
		{s->progs.tcp_rcv, &s->links.tcp_rcv, TCP_SP_SEGMENT | TCP_SP_DELAY},
		/* Every send()/recv() of the host (TCP or not): tcp_delay only. */
		{s->progs.tcp_delay_recv, &s->links.tcp_delay_recv, TCP_SP_DELAY},
		{s->progs.tcp_delay_send, &s->links.tcp_delay_send, TCP_SP_DELAY},
		{s->progs.tcp_retrans, &s->links.tcp_retrans, TCP_SP_ABNORMAL},
		{s->progs.tcp_send_rst, &s->links.tcp_send_rst, TCP_SP_ABNORMAL},
		{s->progs.tcp_recv_rst, &s->links.tcp_recv_rst, TCP_SP_ABNORMAL},
		{s->progs.tcp_drop4, &s->links.tcp_drop4, TCP_SP_ABNORMAL},
		{s->progs.tcp_drop3, &s->links.tcp_drop3, TCP_SP_ABNORMAL},
		{s->progs.tcp_rcvq_full, &s->links.tcp_rcvq_full, TCP_SP_SOCKBUF},
		{s->progs.tcp_buf_limit, &s->links.tcp_buf_limit, TCP_SP_SOCKBUF},
	};

	if (ctx->cur.explicit_sp && (sp & (TCP_SP_RTT | TCP_SP_WINDOWS)))
		sp |= TCP_SP_SEGMENT;
	s->bss->seg_work = (sp & TCP_SP_SEGMENT ? SEG_RTT : 0) | (sp & TCP_SP_DELAY ? SEG_DELAY : 0);
	s->data->snap_samples = !(sp & TCP_SP_SEGMENT);
	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), sp);
}

/* Track the established links of the processes in scope that the hooks have not seen (opened
 * before the probe started, or out of the previous scope): run the iter/task_file program once. */
static int seed_links(struct tp_ctx *ctx)
{
	char buf[256];
	ssize_t n;
	int fd;

	if (!ctx->seed_link)
		return -ENOTSUP;
	fd = bpf_iter_create(bpf_link__fd(ctx->seed_link));
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, sizeof(buf));
	while (n > 0 || (n < 0 && errno == EINTR));
	n = n < 0 ? -errno : 0;
	close(fd);
	return (int)n;
}

static void apply_scope(struct tp_ctx *ctx, const struct gg_scope *s)
{
	uint64_t before = ctx->skel->bss->tcp_seeded;
	int err;

	ctx->scope = *s;
	ctx->scope_changed_ns = gg_mono_ns();
	err = gg_scope__apply(&ctx->scope, ctx->skel->obj);
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
	/* After the maps: the kernel's cached verdicts of the old scope are not used any more. */
	__atomic_fetch_add(&ctx->skel->bss->tcp_scope_gen, 1, __ATOMIC_SEQ_CST);
	err = seed_links(ctx);
	if (err)
		probe_log(PLOG_WARN, "cannot look for links already established: %s", strerror(-err));
	else
		probe_log(PLOG_INFO, "%llu established links found",
			  (unsigned long long)(ctx->skel->bss->tcp_seeded - before));
}

/* --comm: processes come and go; rescan while the supervisor has not sent a scope. */
static void rescan_comm(struct tp_ctx *ctx)
{
	const struct gg_scope *s = gg_scope__comm_update(&ctx->base_scope, ctx->comm, ctx->live_scope, &ctx->scope);

	if (s)
		apply_scope(ctx, s);
}

static int on_config(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct tp_ctx *ctx = data;
	struct tp_conf conf = ctx->base;
	int err;

	(void)version;
	err = probe_conf__apply(CONTRACT, msg, &conf, &conf.subprobes);
	if (err < 0)
		return err;
	if (err > 0)
		conf.explicit_sp = 1;
	ctx->cur = conf;
	apply_subprobes(ctx);
	ctx->live_scope = msg->has_scope;
	apply_scope(ctx, msg->has_scope ? &msg->scope : &ctx->base_scope);
	rescan_comm(ctx);
	return 0;
}

/* After "report period P s, sub-probes a,b" in the started and configuration lines. */
static void describe(void *arg, char *buf, size_t len)
{
	const struct tp_ctx *ctx = arg;

	snprintf(buf, len, ", report_source_port %u, drops_thr %u, latency_thr %u ms, scope %s",
		 ctx->cur.report_source_port, ctx->cur.drops_thr, ctx->cur.latency_thr,
		 ctx->scope.all ? "all" : "filtered");
}

/* The ephemeral port range, to tell clients from servers among links found established. */
static void local_port_range(uint32_t *lo, uint32_t *hi)
{
	static struct probe_buf b;
	unsigned int a, z;

	*lo = 32768;
	*hi = 60999;
	if (probe_read_file("/proc/sys/net/ipv4/ip_local_port_range", &b, 256) == 0 &&
	    sscanf(b.data, "%u %u", &a, &z) == 2 && a <= z && z <= 65535) {
		*lo = a;
		*hi = z;
	}
}

static int run_snapshot(struct tp_ctx *ctx)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	if (bpf_prog_test_run_opts(bpf_program__fd(ctx->skel->progs.tcp_snapshot), &opts) < 0)
		return -errno;
	return 0;
}

/* What tp_aggs__add needs to know of this moment. */
static void report_ctx(struct tp_ctx *ctx, struct tp_report_ctx *rc)
{
	*rc = (struct tp_report_ctx){.rt = ctx->rt, .conf = &ctx->cur, .scope = &ctx->scope};
	rc->scope_changed_ns = ctx->scope_changed_ns;
	rc->start_ns = ctx->start_ns;
	rc->port_lo = ctx->port_lo;
	rc->port_hi = ctx->port_hi;
	rc->now_ns = gg_mono_ns();
}

/* One closed link from the tcp_closed ring (final values) into the aggregates. */
static int on_closed(void *arg, void *data, size_t size)
{
	struct tp_ctx *ctx = arg;

	/* The link, then its histograms if it had samples (struct tcp_link_rec). */
	if (size >= sizeof(struct tcp_link_rec)) {
		const struct tcp_link_rec *r = data;

		tp_aggs__add(ctx->aggs, ctx->drain_rc, &r->l, &r->h, 1);
	} else if (size >= sizeof(struct tcp_link)) {
		tp_aggs__add(ctx->aggs, ctx->drain_rc, data, NULL, 1);
	}
	ctx->drained++;
	return 0;
}

/* Move the closed links from the kernel's ring into the aggregates (counted in ctx->drained). */
static void drain_closed(struct tp_ctx *ctx, const struct tp_report_ctx *rc)
{
	int n;

	ctx->drain_rc = rc;
	n = ring_buffer__consume(ctx->closed_rb);
	if (n < 0)
		probe_log(PLOG_WARN, "reading tcp_closed: %s", strerror(-n));
	ctx->drain_rc = NULL;
}

/* Between reports (probe_rt__run_ticking): closed links are drained as they come, so that the ring
 * never fills up with connection-per-request traffic. The kernel wakes closed_efd once the ring is a
 * quarter full (tcp_closed_wake_at), so a host that closes few connections costs no wakeup between
 * reports. Without that epoll, the next drain is due when, at the rate of closes just seen, the ring
 * would be a quarter full. */
static unsigned int drain_tick(void *arg)
{
	struct tp_ctx *ctx = arg;
	struct tp_report_ctx rc;
	/* a record is the link and an 8-byte header */
	uint32_t n, cap = bpf_map__max_entries(ctx->skel->maps.tcp_closed) / (sizeof(struct tcp_link_rec) + 8);
	uint64_t ms, elapsed;

	if (ctx->closed_efd >= 0) {
		struct epoll_event ev;

		/* consume the edge, or the loop's poll sees it again */
		(void)epoll_wait(ctx->closed_efd, &ev, 1, 0);
	}
	report_ctx(ctx, &rc);
	drain_closed(ctx, &rc);
	if (ctx->closed_efd >= 0) {
		ctx->drained = 0;
		return DRAIN_IDLE_MS;
	}
	/* the report's drain, if one came in between, counts too */
	n = ctx->drained;
	ctx->drained = 0;
	elapsed = ctx->drained_ns && rc.now_ns > ctx->drained_ns ? (rc.now_ns - ctx->drained_ns) / 1000000u
								 : DRAIN_MAX_MS;
	ctx->drained_ns = rc.now_ns;
	ms = n ? (uint64_t)cap / 4 * (elapsed ? elapsed : 1) / n : DRAIN_MAX_MS;
	return ms < DRAIN_MIN_MS ? DRAIN_MIN_MS : ms > DRAIN_MAX_MS ? DRAIN_MAX_MS : (unsigned int)ms;
}

/* The kernel's fill-level wakeups of tcp_closed as an edge-triggered epoll fd the run loop polls;
 * -errno when unavailable (the drain then runs on a timer). */
static int watch_closed(struct tp_ctx *ctx)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
	int efd = epoll_create1(EPOLL_CLOEXEC), err;

	if (efd < 0)
		return -errno;
	if (epoll_ctl(efd, EPOLL_CTL_ADD, bpf_map__fd(ctx->skel->maps.tcp_closed), &ev) < 0) {
		err = -errno;
		close(efd);
		return err;
	}
	ctx->closed_efd = efd;
	probe_rt__watch_fd(ctx->rt, efd);
	return 0;
}

/* One report period (probe_rt__run_ticking). */
/* A stale link made without a cookie is deleted: one fewer uncookied link in the BPF side's count
 * (never below zero, in case a hook raced us to give it the cookie of a socket reusing its address). */
static void uncookied_put(__u32 *count)
{
	__u32 v = __atomic_load_n(count, __ATOMIC_RELAXED);

	while (v && !__atomic_compare_exchange_n(count, &v, v - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

static void report(void *arg)
{
	struct tp_ctx *ctx = arg;
	static __u64 keys[DUMP_CHUNK];
	static struct tcp_link vals[DUMP_CHUNK];
	static __u64 stale[DUMP_CHUNK];
	struct tp_report_ctx rc;
	struct gg_bpf_dump_cursor cur;
	int links_fd = bpf_map__fd(ctx->skel->maps.tcp_links);
	int hists_fd = bpf_map__fd(ctx->skel->maps.tcp_hists);
	static struct tcp_hists h;
	uint32_t n, nstale = 0;
	int err;

	/* Links closed before a --comm rescan changes the scope are judged by the scope they closed in: a
	 * process that exited since would take its last links out of scope with it. */
	report_ctx(ctx, &rc);
	drain_closed(ctx, &rc);
	rescan_comm(ctx);
	/* New passive opens since the last walk: name the processes that hold them. The flag is cleared
	 * before the walk: a passive open made during it sets it again for the next report. */
	if (__atomic_exchange_n(&ctx->skel->bss->tcp_unconfirmed, 0, __ATOMIC_SEQ_CST)) {
		err = seed_links(ctx);
		if (err && err != -ENOTSUP)
			probe_log(PLOG_WARN, "cannot name the processes of new server links: %s", strerror(-err));
	}
	err = run_snapshot(ctx);
	if (err)
		probe_log(PLOG_WARN, "snapshot walk failed: %s (values are from the last events)", strerror(-err));
	local_port_range(&ctx->port_lo, &ctx->port_hi);
	report_ctx(ctx, &rc);

	memset(&cur, 0, sizeof(cur));
	while (!cur.done) {
		err = gg_bpf_map_dump(links_fd, &cur, keys, vals, sizeof(keys[0]), sizeof(vals[0]), DUMP_CHUNK, &n, 0);
		if (err) {
			probe_log(PLOG_WARN, "reading tcp_links: %s", strerror(-err));
			break;
		}
		for (uint32_t i = 0; i < n; i++) {
			/* Its histograms, if it has samples (one lookup per such link: the long-lived ones). */
			const struct tcp_hists *hp =
				vals[i].hists && !bpf_map_lookup_elem(hists_fd, &keys[i], &h) ? &h : NULL;

			if (vals[i].flags & TCP_LF_STALE) {
				/* Its close was missed: report its last values as final. */
				tp_aggs__add(ctx->aggs, &rc, &vals[i], hp, 1);
				if (nstale < DUMP_CHUNK) {
					stale[nstale++] = keys[i];
					if (!vals[i].cookie)
						uncookied_put(&ctx->skel->bss->tcp_uncookied);
				}
				continue;
			}
			tp_aggs__add(ctx->aggs, &rc, &vals[i], hp, 0);
		}
	}
	if (nstale) {
		(void)gg_bpf_map_delete_keys(links_fd, stale, sizeof(stale[0]), nstale);
		for (uint32_t i = 0; i < nstale; i++)
			(void)bpf_map_delete_elem(hists_fd, &stale[i]); /* ENOENT: it had none */
	}
	drain_closed(ctx, &rc);

	(void)tp_aggs__report(ctx->aggs, &rc);
	(void)probe_rt__flush(ctx->rt);

	if (ctx->skel->bss->tcp_closed_lost != ctx->closed_lost || ctx->skel->bss->tcp_links_lost != ctx->links_lost) {
		ctx->closed_lost = ctx->skel->bss->tcp_closed_lost;
		ctx->links_lost = ctx->skel->bss->tcp_links_lost;
		probe_log(PLOG_WARN, "maps full: %llu links not tracked, %llu closed links lost (raise -m)",
			  (unsigned long long)ctx->links_lost, (unsigned long long)ctx->closed_lost);
	}
	if (ctx->bpf_stats)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 32);
}

/* Open, choose program variants for this kernel, size maps, load, attach the life cycle hooks. */
static int setup_bpf(struct tp_ctx *ctx, unsigned int max_links)
{
	struct tcpprobe *s;
	int err, nargs;

	gg_bpf_begin();
	s = tcpprobe__open();
	if (!s)
		return -errno;
	ctx->skel = s;
	bpf_map__set_max_entries(s->maps.tcp_links, max_links);
	bpf_map__set_max_entries(s->maps.tcp_hists, max_links);
	/* Drained every 25-100 ms and as soon as a quarter is used: the default 2 MB (~1,500 links) takes
	 * 55,000 closes a second; smaller -m, smaller ring (a power of two of at least 256 KB). */
	{
		uint32_t ring = TCP_CLOSED_RING;

		while (ring > TCP_CLOSED_RING_MIN && (uint64_t)ring > (uint64_t)max_links * 512u)
			ring >>= 1;
		bpf_map__set_max_entries(s->maps.tcp_closed, ring);
		s->data->tcp_closed_wake_at = ring / 4;
	}
	gg_bpf_autoload(s->obj);
	nargs = gg_bpf_tp_btf_nargs("kfree_skb");
	if (nargs >= 4)
		bpf_program__set_autoload(s->progs.tcp_drop3, false);
	else
		bpf_program__set_autoload(s->progs.tcp_drop4, false);
	if (!bpf_program__autoload(s->progs.tcp_state) || !bpf_program__autoload(s->progs.tcp_snapshot)) {
		probe_log(PLOG_ERROR, "this kernel lacks sock:inet_sock_set_state (tp_btf): cannot follow TCP links");
		return -ENOTSUP;
	}
	err = tcpprobe__load(s);
	if (err)
		return err;
	err = gg_bpf_attach(s->progs.tcp_state, &s->links.tcp_state);
	if (err)
		return err;
	if (bpf_program__autoload(s->progs.tcp_seed)) {
		ctx->seed_link = bpf_program__attach_iter(s->progs.tcp_seed, NULL);
		if (!ctx->seed_link)
			probe_log(PLOG_WARN,
				  "iter/task_file unavailable (%s): links established before the start are "
				  "found at accept() only",
				  strerror(errno));
	}
	if (ctx->seed_link)
		return 0;
	/* No iterator: accept() names the process of server links. A syscall tracepoint puts every system
	 * call of the host on the slow path, hence only as the fallback. */
	if (gg_bpf_attach(s->progs.tcp_accept4, &s->links.tcp_accept4) ||
	    gg_bpf_attach(s->progs.tcp_accept, &s->links.tcp_accept))
		probe_log(PLOG_WARN, "accept tracepoints unavailable: server links have the listener's tgid");
	return 0;
}

/* After the command line: the aggregation table, the BPF programs, the closed-link ring. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct tp_ctx *ctx = arg;
	int ret;

	ctx->rt = rt;
	ctx->closed_efd = -1;
	ctx->cur = ctx->base;
	ctx->aggs = tp_aggs__new(AGG_KEYS_MAX);
	if (!ctx->aggs) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	ret = setup_bpf(ctx, ctx->max_links);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-ret));
		return ret;
	}
	ctx->closed_rb = ring_buffer__new(bpf_map__fd(ctx->skel->maps.tcp_closed), on_closed, ctx, NULL);
	if (!ctx->closed_rb) {
		ret = -errno;
		probe_log(PLOG_ERROR, "cannot map the tcp_closed ring: %s", strerror(-ret));
		return ret;
	}
	ret = watch_closed(ctx);
	if (ret)
		probe_log(PLOG_WARN, "no wakeups from tcp_closed (%s): drained every %u-%u ms", strerror(-ret),
			  DRAIN_MIN_MS, DRAIN_MAX_MS);
	ctx->start_ns = gg_mono_ns();
	local_port_range(&ctx->port_lo, &ctx->port_hi);
	apply_scope(ctx, &ctx->base_scope);
	rescan_comm(ctx);
	apply_subprobes(ctx);
	return 0;
}

static void stop(void *arg, char *note, size_t len)
{
	struct tp_ctx *ctx = arg;

	snprintf(note, len, "%u keys", tp_aggs__count(ctx->aggs));
}

static void teardown(void *arg)
{
	struct tp_ctx *ctx = arg;

	bpf_link__destroy(ctx->seed_link);
	probe_rt__watch_fd(ctx->rt, -1);
	if (ctx->closed_efd >= 0)
		close(ctx->closed_efd);
	ring_buffer__free(ctx->closed_rb);
	tcpprobe__destroy(ctx->skel);
	tp_aggs__free(ctx->aggs);
}

int main(int argc, char **argv)
{
	static struct tp_ctx ctx = {.max_links = TCP_LINKS_MAX};
	const struct probe_runner r = {
		.contract = CONTRACT,
		.ctx = &ctx,
		.args = {.conf = &ctx.base,
			 .scope = &ctx.base_scope,
			 .comm = &ctx.comm,
			 .bpf_stats = &ctx.bpf_stats,
			 .own = own,
			 .nown = sizeof(own) / sizeof(own[0]),
			 .own_cb = own_option,
			 .notes = notes},
		.subprobes = &ctx.base.subprobes, /* -P is tcpprobe's own (names or a mask) */
		.setup = setup,
		.on_config = on_config,
		.period_s = &ctx.cur.period_s,
		.cur_subprobes = &ctx.cur.subprobes,
		.describe = describe,
		.report = report,
		.tick = drain_tick,
		.stop = stop,
		.teardown = teardown,
	};

	return probe_runner__main(&r, argc, argv);
}
