/* main.c - endpoint ("socket"): listening sockets, outgoing connects, UDP sockets and socket-less
 * drops, from tracepoints and a per-period snapshot of the sockets' queues and drop counters. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf_util.h"
#include "endpoint.h"
#include "endpoint.meta.h"
#include "endpoint.skel.h"
#include "ep_conf.h"
#include "probe.h"
#include "probe_runner.h"

#define PROG	   "endpoint"
#define HIST_FIRST 3u  /* <= 16 us */
#define HIST_N	   21u /* .. 8.4 s */

extern const struct gg_contract gg_contract_endpoint;
#define CONTRACT  (&gg_contract_endpoint)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)

struct ep_ctx {
	struct probe_rt *rt;
	struct endpoint *skel;
	struct ep_conf base, cur;
	struct gg_scope base_scope, scope;
	const char *comm;
	int live_scope;
	int bpf_stats; /* --bpf-stats: set, and collected */
	struct gg_bpf_stats_prev stats_prev[16];
	/* Dump buffers, sized by the maps. */
	__u64 *lkeys;
	struct ep_listen *lvals;
	struct ep_connect_key *ckeys;
	struct ep_connect *cvals;
	__u64 *ukeys;
	struct ep_udp *uvals;
	struct ep_drop_key *dkeys;
	__u64 *dvals;
	__u64 *del;
};

/* --help after the options (generated from the contract). */
static const char notes[] =
	"udp_socket counts UDP bytes on every send()/recv() of the host, TCP included: asked for, never on\n"
	"by default.\n"
	"Tables: listen and connect (tcp_socket), udp (udp_socket), skb_drop (host wide, both).\n"
	"Live configuration: {\"probe\": [...], \"params\": {\"report_period\": N}, \"scope\": {...}}\n";

static void apply_subprobes(struct ep_ctx *ctx)
{
	struct endpoint *s = ctx->skel;
	unsigned int sp = ctx->cur.subprobes;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.ep_state, &s->links.ep_state, SP_TCP},
		{s->progs.ep_synack_retrans, &s->links.ep_synack_retrans, SP_TCP},
		{s->progs.ep_retrans, &s->links.ep_retrans, SP_TCP},
		{s->progs.ep_udp_send, &s->links.ep_udp_send, SP_UDP},
		{s->progs.ep_udp_recv, &s->links.ep_udp_recv, SP_UDP},
		{s->progs.ep_udp_fail, &s->links.ep_udp_fail, SP_UDP},
		{s->progs.ep_drop4, &s->links.ep_drop4, SP_ALL},
		{s->progs.ep_drop3, &s->links.ep_drop3, SP_ALL},
	};

	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), sp);
}

static void apply_scope(struct ep_ctx *ctx, const struct gg_scope *s)
{
	int err;

	ctx->scope = *s;
	err = gg_scope__apply(&ctx->scope, ctx->skel->obj);
	if (err)
		probe_log(PLOG_WARN, "cannot apply the scope: %s", strerror(-err));
}

static void rescan_comm(struct ep_ctx *ctx)
{
	static struct gg_scope s;

	if (ctx->comm && !ctx->live_scope && gg_scope__rescan_comm(&ctx->base_scope, 0, ctx->comm, &ctx->scope, &s) > 0)
		apply_scope(ctx, &s);
}

static int on_config(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct ep_ctx *ctx = data;
	struct ep_conf conf = ctx->base;
	int err = probe_conf__apply(CONTRACT, msg, &conf, &conf.subprobes);

	(void)version;
	if (err < 0)
		return err;
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
	const struct ep_ctx *ctx = arg;

	snprintf(buf, len, ", scope %s", ctx->scope.all ? "all" : "filtered");
}

static int in_scope(const struct ep_ctx *ctx, __u32 tgid, __u64 cgroup_id)
{
	const struct gg_scope *s = &ctx->scope;

	if (s->all)
		return 1;
	for (uint32_t i = 0; i < s->ntgid; i++)
		if (s->tgid[i] == tgid)
			return 1;
	for (uint32_t i = 0; i < s->ncgrp; i++)
		if (s->cgrp[i] == cgroup_id)
			return 1;
	return 0;
}

static void addr_str(__u8 family, const __u8 *addr, char *buf, size_t len)
{
	static const __u8 mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (family == AF_INET6 && !memcmp(addr, mapped, sizeof(mapped)))
		inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len);
	else if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void rec_keys(struct probe_rec *r, const struct probe_table *t, __u32 tgid, __u8 family, const __u8 *addr,
		     __u16 port, const char *type, const char *comm)
{
	char a[INET6_ADDRSTRLEN];

	addr_str(family, addr, a, sizeof(a));
	probe_rec__begin(r, t);
	probe_rec__u64(r, tgid);
	probe_rec__str(r, a);
	probe_rec__u64(r, port);
	probe_rec__str(r, type);
	probe_rec__strn(r, comm, strnlen(comm, 16));
}

/* A whole map into keys/vals (room for max entries); returns the count (a read error is logged). */
static uint32_t dump_all(int fd, void *keys, void *vals, uint32_t ksz, uint32_t vsz, uint32_t max, const char *what)
{
	uint32_t n = 0;
	int err = gg_bpf_map_dump_all(fd, keys, vals, ksz, vsz, max, &n, 0);

	if (err)
		probe_log(PLOG_WARN, "reading %s: %s", what, strerror(-err));
	return n;
}

/* Entries of one reported key are summed: sort so that they are next to each other. */
static int listen_cmp(const void *a, const void *b)
{
	const struct ep_listen *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static int udp_cmp(const void *a, const void *b)
{
	const struct ep_udp *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

static void report_listen(struct ep_ctx *ctx)
{
	static struct probe_rec r;
	int fd = bpf_map__fd(ctx->skel->maps.ep_listen);
	uint32_t n = dump_all(fd, ctx->lkeys, ctx->lvals, sizeof(__u64), sizeof(struct ep_listen), EP_LISTEN_MAX,
			      "ep_listen");
	uint32_t ndel = 0;

	for (uint32_t i = 0; i < n; i++)
		if (ctx->lvals[i].flags & EP_F_CLOSED)
			ctx->del[ndel++] = ctx->lkeys[i];
	qsort(ctx->lvals, n, sizeof(ctx->lvals[0]), listen_cmp);
	for (uint32_t i = 0; i < n;) {
		struct ep_listen sum = ctx->lvals[i];
		uint32_t j = i + 1;

		for (; j < n && !listen_cmp(&ctx->lvals[i], &ctx->lvals[j]); j++) {
			const struct ep_listen *o = &ctx->lvals[j];

			sum.passive_open += o->passive_open;
			sum.passive_open_failed += o->passive_open_failed;
			sum.retran_synacks += o->retran_synacks;
			sum.listen_drops += o->listen_drops;
			sum.accept_overflow += o->accept_overflow;
			sum.syn_overflow += o->syn_overflow;
			sum.acceptq_len += o->acceptq_len;
			sum.acceptq_max += o->acceptq_max;
			sum.synq_len += o->synq_len;
			sum.hs_sum_us += o->hs_sum_us;
			for (int s = 0; s < GG_LOG2_SLOTS; s++)
				sum.hs_hist[s] += o->hs_hist[s];
		}
		i = j;
		if (!in_scope(ctx, sum.tgid, sum.cgroup_id))
			continue;
		rec_keys(&r, &TBL_listen, sum.tgid, sum.family, sum.addr, sum.port, "listen", sum.comm);
		probe_rec__u64(&r, sum.listen_drops);
		probe_rec__u64(&r, sum.accept_overflow);
		probe_rec__u64(&r, sum.syn_overflow);
		probe_rec__u64(&r, sum.passive_open);
		probe_rec__u64(&r, sum.passive_open_failed);
		probe_rec__u64(&r, sum.retran_synacks);
		probe_rec__u64(&r, sum.acceptq_len);
		probe_rec__u64(&r, sum.acceptq_max);
		probe_rec__u64(&r, sum.synq_len);
		gg_hist_rec(&r, sum.hs_hist, HIST_FIRST, HIST_N, 1.0, (double)sum.hs_sum_us);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	(void)gg_bpf_map_delete_keys(fd, ctx->del, sizeof(__u64), ndel);
}

static int tgid_alive(__u32 tgid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%u", tgid);
	return access(path, F_OK) == 0;
}

static void report_connect(struct ep_ctx *ctx)
{
	static struct probe_rec r;
	int fd = bpf_map__fd(ctx->skel->maps.ep_connect);
	uint32_t n = dump_all(fd, ctx->ckeys, ctx->cvals, sizeof(struct ep_connect_key), sizeof(struct ep_connect),
			      EP_CONNECT_MAX, "ep_connect");
	uint32_t ndead = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct ep_connect_key *k = &ctx->ckeys[i];
		const struct ep_connect *c = &ctx->cvals[i];

		if (in_scope(ctx, k->tgid, c->cgroup_id)) {
			rec_keys(&r, &TBL_connect, k->tgid, k->family, k->raddr, k->rport, "connect", c->comm);
			probe_rec__u64(&r, c->active_open);
			probe_rec__u64(&r, c->active_open_failed);
			probe_rec__u64(&r, c->syn_retrans);
			gg_hist_rec(&r, c->lat_hist, HIST_FIRST, HIST_N, 1.0, (double)c->lat_sum_us);
			(void)probe_rt__emit(ctx->rt, &r);
		}
		/* Reported one last time: forget processes that are gone. */
		if (!tgid_alive(k->tgid))
			ctx->ckeys[ndead++] = *k;
	}
	(void)gg_bpf_map_delete_keys(fd, ctx->ckeys, sizeof(struct ep_connect_key), ndead);
}

static void report_udp(struct ep_ctx *ctx)
{
	static struct probe_rec r;
	int fd = bpf_map__fd(ctx->skel->maps.ep_udp);
	uint32_t n = dump_all(fd, ctx->ukeys, ctx->uvals, sizeof(__u64), sizeof(struct ep_udp), EP_UDP_MAX, "ep_udp");
	uint32_t ndel = 0;

	for (uint32_t i = 0; i < n; i++)
		if (ctx->uvals[i].flags & EP_F_CLOSED)
			ctx->del[ndel++] = ctx->ukeys[i];
	qsort(ctx->uvals, n, sizeof(ctx->uvals[0]), udp_cmp);
	for (uint32_t i = 0; i < n;) {
		struct ep_udp sum = ctx->uvals[i];
		uint32_t j = i + 1;

		for (; j < n && !udp_cmp(&ctx->uvals[i], &ctx->uvals[j]); j++) {
			const struct ep_udp *o = &ctx->uvals[j];

			sum.tx_bytes += o->tx_bytes;
			sum.rx_bytes += o->rx_bytes;
			sum.tx_pkts += o->tx_pkts;
			sum.rx_pkts += o->rx_pkts;
			sum.rcv_drops += o->rcv_drops;
			sum.sk_drops += o->sk_drops;
			sum.rmem_alloc += o->rmem_alloc;
			if (o->last_err)
				sum.last_err = o->last_err;
		}
		i = j;
		if (!in_scope(ctx, sum.tgid, sum.cgroup_id))
			continue;
		rec_keys(&r, &TBL_udp, sum.tgid, sum.family, sum.addr, sum.port, "udp", sum.comm);
		probe_rec__u64(&r, sum.tx_pkts);
		probe_rec__u64(&r, sum.rx_pkts);
		probe_rec__u64(&r, sum.tx_bytes);
		probe_rec__u64(&r, sum.rx_bytes);
		probe_rec__u64(&r, sum.rcv_drops);
		probe_rec__u64(&r, sum.sk_drops);
		probe_rec__u64(&r, (uint64_t)(sum.last_err > 0 ? sum.last_err : 0));
		probe_rec__u64(&r, sum.rmem_alloc);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	(void)gg_bpf_map_delete_keys(fd, ctx->del, sizeof(__u64), ndel);
}

static void report_drops(struct ep_ctx *ctx)
{
	static struct probe_rec r;
	int fd = bpf_map__fd(ctx->skel->maps.ep_drops);
	uint32_t n = dump_all(fd, ctx->dkeys, ctx->dvals, sizeof(struct ep_drop_key), sizeof(__u64), EP_DROP_MAX,
			      "ep_drops");
	char reason[64];

	for (uint32_t i = 0; i < n; i++) {
		const struct ep_drop_key *k = &ctx->dkeys[i];
		int tcp = k->proto == 6;

		if (!(ctx->cur.subprobes & (tcp ? SP_TCP : SP_UDP)))
			continue;
		gg_btf_enum_name("skb_drop_reason", k->reason, "SKB_DROP_REASON_", reason, sizeof(reason));
		probe_rec__begin(&r, &TBL_skb_drop);
		probe_rec__str(&r, tcp ? "tcp" : "udp");
		probe_rec__str(&r, reason);
		probe_rec__u64(&r, k->port);
		probe_rec__u64(&r, ctx->dvals[i]);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

/* One report period (probe_rt__run_periodic). */
static void report(void *arg)
{
	struct ep_ctx *ctx = arg;
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	rescan_comm(ctx);
	if (bpf_prog_test_run_opts(bpf_program__fd(ctx->skel->progs.ep_snapshot), &opts) < 0)
		probe_log(PLOG_WARN, "snapshot walk failed: %s", strerror(errno));
	if (ctx->cur.subprobes & SP_TCP) {
		report_listen(ctx);
		report_connect(ctx);
	}
	if (ctx->cur.subprobes & SP_UDP)
		report_udp(ctx);
	report_drops(ctx);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 16);
}

static int alloc_buffers(struct ep_ctx *ctx)
{
	ctx->lkeys = calloc(EP_LISTEN_MAX, sizeof(*ctx->lkeys));
	ctx->lvals = calloc(EP_LISTEN_MAX, sizeof(*ctx->lvals));
	ctx->ckeys = calloc(EP_CONNECT_MAX, sizeof(*ctx->ckeys));
	ctx->cvals = calloc(EP_CONNECT_MAX, sizeof(*ctx->cvals));
	ctx->ukeys = calloc(EP_UDP_MAX, sizeof(*ctx->ukeys));
	ctx->uvals = calloc(EP_UDP_MAX, sizeof(*ctx->uvals));
	ctx->dkeys = calloc(EP_DROP_MAX, sizeof(*ctx->dkeys));
	ctx->dvals = calloc(EP_DROP_MAX, sizeof(*ctx->dvals));
	ctx->del = calloc(EP_UDP_MAX > EP_LISTEN_MAX ? EP_UDP_MAX : EP_LISTEN_MAX, sizeof(*ctx->del));
	if (!ctx->lkeys || !ctx->lvals || !ctx->ckeys || !ctx->cvals || !ctx->ukeys || !ctx->uvals || !ctx->dkeys ||
	    !ctx->dvals || !ctx->del)
		return -ENOMEM;
	return 0;
}

static void free_buffers(struct ep_ctx *ctx)
{
	free(ctx->lkeys);
	free(ctx->lvals);
	free(ctx->ckeys);
	free(ctx->cvals);
	free(ctx->ukeys);
	free(ctx->uvals);
	free(ctx->dkeys);
	free(ctx->dvals);
	free(ctx->del);
}

static int setup_bpf(struct ep_ctx *ctx)
{
	struct endpoint *s;
	int err;

	gg_bpf_begin();
	s = endpoint__open();
	if (!s)
		return -errno;
	ctx->skel = s;
	gg_bpf_autoload(s->obj);
	if (gg_bpf_tp_btf_nargs("kfree_skb") >= 4)
		bpf_program__set_autoload(s->progs.ep_drop3, false);
	else
		bpf_program__set_autoload(s->progs.ep_drop4, false);
	err = endpoint__load(s);
	return err;
}

/* After the command line: dump buffers, the BPF programs, the scope and the sub-probes. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct ep_ctx *ctx = arg;
	int ret;

	ctx->rt = rt;
	ctx->cur = ctx->base;
	if (alloc_buffers(ctx)) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	ret = setup_bpf(ctx);
	if (ret) {
		probe_log(PLOG_ERROR, "cannot load the BPF programs: %s", strerror(-ret));
		return ret;
	}
	apply_scope(ctx, &ctx->base_scope);
	rescan_comm(ctx);
	apply_subprobes(ctx);
	return 0;
}

static void teardown(void *arg)
{
	struct ep_ctx *ctx = arg;

	endpoint__destroy(ctx->skel);
	free_buffers(ctx);
}

int main(int argc, char **argv)
{
	static struct ep_ctx ctx;
	const struct probe_runner r = {
		.contract = CONTRACT,
		.ctx = &ctx,
		.args = {.conf = &ctx.base,
			 .subprobes = &ctx.base.subprobes,
			 .scope = &ctx.base_scope,
			 .comm = &ctx.comm,
			 .bpf_stats = &ctx.bpf_stats,
			 .notes = notes},
		.setup = setup,
		.on_config = on_config,
		.period_s = &ctx.cur.period_s,
		.cur_subprobes = &ctx.cur.subprobes,
		.describe = describe,
		.report = report,
		.teardown = teardown,
	};

	return probe_runner__main(&r, argc, argv);
}
