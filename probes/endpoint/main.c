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
	struct gg_bpf_map_buf listen;  /* ep_listen: __u64 (the socket), struct ep_listen */
	struct gg_bpf_map_buf connect; /* ep_connect: struct ep_connect_key, struct ep_connect */
	struct gg_bpf_map_buf udp;     /* ep_udp: __u64 (the socket), struct ep_udp */
	struct gg_bpf_map_buf drops;   /* ep_drops: struct ep_drop_key, __u64 */
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
	const struct gg_scope *s = gg_scope__comm_update(&ctx->base_scope, ctx->comm, ctx->live_scope, &ctx->scope);

	if (s)
		apply_scope(ctx, s);
}

/* A live configuration in force (the runner put it into cur): the hooks, the scope. */
static void applied(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct ep_ctx *ctx = data;

	(void)version;
	apply_subprobes(ctx);
	ctx->live_scope = msg->has_scope;
	apply_scope(ctx, msg->has_scope ? &msg->scope : &ctx->base_scope);
	rescan_comm(ctx);
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

/* Entries of one reported key (process, address, port) are summed: sorted so that they are next to
 * each other. */
struct sock_id {
	__u32 tgid;
	__u16 port;
	__u8 family;
	const __u8 *addr; /* 16 bytes */
};

static int sock_id_cmp(const struct sock_id *x, const struct sock_id *y)
{
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, 16);
}

static int listen_cmp(const void *a, const void *b)
{
	const struct ep_listen *x = a, *y = b;

	return sock_id_cmp(&(struct sock_id){x->tgid, x->port, x->family, x->addr},
			   &(struct sock_id){y->tgid, y->port, y->family, y->addr});
}

static int udp_cmp(const void *a, const void *b)
{
	const struct ep_udp *x = a, *y = b;

	return sock_id_cmp(&(struct sock_id){x->tgid, x->port, x->family, x->addr},
			   &(struct sock_id){y->tgid, y->port, y->family, y->addr});
}

static void listen_add(void *sum, const void *other)
{
	struct ep_listen *s = sum;
	const struct ep_listen *o = other;

	s->passive_open += o->passive_open;
	s->passive_open_failed += o->passive_open_failed;
	s->retran_synacks += o->retran_synacks;
	s->listen_drops += o->listen_drops;
	s->accept_overflow += o->accept_overflow;
	s->syn_overflow += o->syn_overflow;
	s->acceptq_len += o->acceptq_len;
	s->acceptq_max += o->acceptq_max;
	s->synq_len += o->synq_len;
	s->hs_sum_us += o->hs_sum_us;
	for (int k = 0; k < GG_LOG2_SLOTS; k++)
		s->hs_hist[k] += o->hs_hist[k];
}

static void listen_emit(struct ep_ctx *ctx, const void *sum)
{
	static struct probe_rec r;
	const struct ep_listen *s = sum;

	if (!in_scope(ctx, s->tgid, s->cgroup_id))
		return;
	rec_keys(&r, &TBL_listen, s->tgid, s->family, s->addr, s->port, "listen", s->comm);
	probe_rec__u64(&r, s->listen_drops);
	probe_rec__u64(&r, s->accept_overflow);
	probe_rec__u64(&r, s->syn_overflow);
	probe_rec__u64(&r, s->passive_open);
	probe_rec__u64(&r, s->passive_open_failed);
	probe_rec__u64(&r, s->retran_synacks);
	probe_rec__u64(&r, s->acceptq_len);
	probe_rec__u64(&r, s->acceptq_max);
	probe_rec__u64(&r, s->synq_len);
	gg_hist_rec(&r, s->hs_hist, HIST_FIRST, HIST_N, 1.0, (double)s->hs_sum_us);
	(void)probe_rt__emit(ctx->rt, &r);
}

static void udp_add(void *sum, const void *other)
{
	struct ep_udp *s = sum;
	const struct ep_udp *o = other;

	s->tx_bytes += o->tx_bytes;
	s->rx_bytes += o->rx_bytes;
	s->tx_pkts += o->tx_pkts;
	s->rx_pkts += o->rx_pkts;
	s->rcv_drops += o->rcv_drops;
	s->sk_drops += o->sk_drops;
	s->rmem_alloc += o->rmem_alloc;
	if (o->last_err)
		s->last_err = o->last_err;
}

static void udp_emit(struct ep_ctx *ctx, const void *sum)
{
	static struct probe_rec r;
	const struct ep_udp *s = sum;

	if (!in_scope(ctx, s->tgid, s->cgroup_id))
		return;
	rec_keys(&r, &TBL_udp, s->tgid, s->family, s->addr, s->port, "udp", s->comm);
	probe_rec__u64(&r, s->tx_pkts);
	probe_rec__u64(&r, s->rx_pkts);
	probe_rec__u64(&r, s->tx_bytes);
	probe_rec__u64(&r, s->rx_bytes);
	probe_rec__u64(&r, s->rcv_drops);
	probe_rec__u64(&r, s->sk_drops);
	probe_rec__u64(&r, (uint64_t)(s->last_err > 0 ? s->last_err : 0));
	probe_rec__u64(&r, s->rmem_alloc);
	(void)probe_rt__emit(ctx->rt, &r);
}

/* A map of sockets (key: the socket) reported by process, address and port: listen and udp. */
struct sock_map {
	struct bpf_map *map;
	struct gg_bpf_map_buf *buf; /* keys: __u64 */
	size_t flags_off;	    /* of the value's EP_F_CLOSED byte */
	int (*cmp)(const void *a, const void *b);
	void (*add)(void *sum, const void *other); /* other's counters into sum */
	void (*emit)(struct ep_ctx *ctx, const void *sum);
};

/* Read the map, sum the sockets of each reported key, emit them, then forget the closed sockets. */
static void report_socks(struct ep_ctx *ctx, const struct sock_map *m)
{
	union {
		struct ep_listen l;
		struct ep_udp u;
	} sum;
	uint32_t n = gg_bpf_map_buf__read(m->buf, m->map);
	const __u64 *keys = m->buf->keys;
	const char *v = m->buf->vals;
	size_t val_size = m->buf->val_size;
	uint32_t ndel = 0;

	if (val_size > sizeof(sum))
		return;
	for (uint32_t i = 0; i < n; i++)
		if (v[i * val_size + m->flags_off] & EP_F_CLOSED)
			ctx->del[ndel++] = keys[i];
	qsort(m->buf->vals, n, val_size, m->cmp);
	for (uint32_t i = 0, j; i < n; i = j) {
		memcpy(&sum, v + i * val_size, val_size);
		for (j = i + 1; j < n && !m->cmp(v + i * val_size, v + j * val_size); j++)
			m->add(&sum, v + j * val_size);
		m->emit(ctx, &sum);
	}
	(void)gg_bpf_map_delete_keys(bpf_map__fd(m->map), ctx->del, sizeof(__u64), ndel);
}

static void report_listen(struct ep_ctx *ctx)
{
	report_socks(ctx, &(struct sock_map){ctx->skel->maps.ep_listen, &ctx->listen, offsetof(struct ep_listen, flags),
					     listen_cmp, listen_add, listen_emit});
}

static void report_connect(struct ep_ctx *ctx)
{
	static struct probe_rec r;
	uint32_t n = gg_bpf_map_buf__read(&ctx->connect, ctx->skel->maps.ep_connect);
	const struct ep_connect_key *keys = ctx->connect.keys;
	const struct ep_connect *vals = ctx->connect.vals;

	for (uint32_t i = 0; i < n; i++) {
		const struct ep_connect_key *k = &keys[i];
		const struct ep_connect *c = &vals[i];

		if (in_scope(ctx, k->tgid, c->cgroup_id)) {
			rec_keys(&r, &TBL_connect, k->tgid, k->family, k->raddr, k->rport, "connect", c->comm);
			probe_rec__u64(&r, c->active_open);
			probe_rec__u64(&r, c->active_open_failed);
			probe_rec__u64(&r, c->syn_retrans);
			gg_hist_rec(&r, c->lat_hist, HIST_FIRST, HIST_N, 1.0, (double)c->lat_sum_us);
			(void)probe_rt__emit(ctx->rt, &r);
		}
	}
	/* Reported one last time: forget processes that are gone. */
	(void)gg_bpf_map_buf__forget_gone(&ctx->connect, ctx->skel->maps.ep_connect, n,
					  offsetof(struct ep_connect_key, tgid));
}

static void report_udp(struct ep_ctx *ctx)
{
	report_socks(ctx, &(struct sock_map){ctx->skel->maps.ep_udp, &ctx->udp, offsetof(struct ep_udp, flags), udp_cmp,
					     udp_add, udp_emit});
}

static void report_drops(struct ep_ctx *ctx)
{
	static struct probe_rec r;
	uint32_t n = gg_bpf_map_buf__read(&ctx->drops, ctx->skel->maps.ep_drops);
	const struct ep_drop_key *keys = ctx->drops.keys;
	const __u64 *vals = ctx->drops.vals;
	char reason[64];

	for (uint32_t i = 0; i < n; i++) {
		const struct ep_drop_key *k = &keys[i];
		int tcp = k->proto == 6;

		if (!(ctx->cur.subprobes & (tcp ? SP_TCP : SP_UDP)))
			continue;
		gg_btf_enum_name("skb_drop_reason", k->reason, "SKB_DROP_REASON_", reason, sizeof(reason));
		probe_rec__begin(&r, &TBL_skb_drop);
		probe_rec__str(&r, tcp ? "tcp" : "udp");
		probe_rec__str(&r, reason);
		probe_rec__u64(&r, k->port);
		probe_rec__u64(&r, vals[i]);
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
	ctx->del = calloc(EP_UDP_MAX > EP_LISTEN_MAX ? EP_UDP_MAX : EP_LISTEN_MAX, sizeof(*ctx->del));
	if (gg_bpf_map_buf__alloc(&ctx->listen, sizeof(__u64), sizeof(struct ep_listen), EP_LISTEN_MAX) ||
	    gg_bpf_map_buf__alloc(&ctx->connect, sizeof(struct ep_connect_key), sizeof(struct ep_connect),
				  EP_CONNECT_MAX) ||
	    gg_bpf_map_buf__alloc(&ctx->udp, sizeof(__u64), sizeof(struct ep_udp), EP_UDP_MAX) ||
	    gg_bpf_map_buf__alloc(&ctx->drops, sizeof(struct ep_drop_key), sizeof(__u64), EP_DROP_MAX) || !ctx->del)
		return -ENOMEM;
	return 0;
}

static void free_buffers(struct ep_ctx *ctx)
{
	gg_bpf_map_buf__free(&ctx->listen);
	gg_bpf_map_buf__free(&ctx->connect);
	gg_bpf_map_buf__free(&ctx->udp);
	gg_bpf_map_buf__free(&ctx->drops);
	free(ctx->del);
}

/* After the command line: dump buffers, the BPF programs, the scope and the sub-probes. */
static int setup(void *arg, struct probe_rt *rt)
{
	struct ep_ctx *ctx = arg;
	int ret;

	ctx->rt = rt;
	if (alloc_buffers(ctx)) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	gg_bpf_begin();
	ctx->skel = endpoint__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	/* kfree_skb's variant: with or without its rx_sk argument */
	bpf_program__set_autoload(
		gg_bpf_tp_btf_nargs("kfree_skb") >= 4 ? ctx->skel->progs.ep_drop3 : ctx->skel->progs.ep_drop4, false);
	ret = gg_bpf_load(ctx->skel->skeleton);
	if (ret)
		return ret;
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

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct ep_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.scope = &g_ctx.base_scope, .comm = &g_ctx.comm, .bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.setup = setup,
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct ep_conf, subprobes), NULL, applied},
	.period_s = &g_ctx.cur.period_s,
	.describe = describe,
	.report = report,
	.teardown = teardown,
};
