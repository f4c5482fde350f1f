/* main.c - kdiag ("kdiag"): packet drops (skb:kfree_skb) by reason and flow with the kernel stack as events,
 * hard/soft interrupt time and softirq raise->entry delay per CPU and vector, receive latency per flow
 * (netif_receive_skb -> skb_copy_datagram_iovec); all from tp_btf tracepoints. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf_util.h"
#include "cgroup_path.h"
#include "kd_conf.h"
#include "kd_table.h"
#include "kdiag.h"
#include "kdiag.meta.h"
#include "kdiag.skel.h"
#include "probe.h"
#include "probe_runner.h"
#include "symbolizer.h"

#define TICK_MS	      200u
#define IRQ_FIRST     9u  /* ns slots: the first bucket <= 1.024 us */
#define IRQ_N	      16u /* .. 33.6 ms */
#define RL_FIRST      10u /* <= 2.048 us */
#define RL_N	      22u /* .. 4.3 s */
#define DUMP_CHUNK    512u
#define HARDIRQ_CHUNK 64u
#define CG_CACHE      256u
#define CG_TTL_MS     30000u

extern const struct gg_contract gg_contract_kdiag;
#define CONTRACT  (&gg_contract_kdiag)
#define SUBPROBES (CONTRACT->subprobes)
#define NSUB	  (CONTRACT->nsubprobes)

/* What a socket's cgroup id resolved to: its path and, when it is a container's, one of its processes. */
struct kd_cg {
	uint64_t cgid;
	uint64_t at_ms;
	uint32_t tgid;
	char path[256];
};

struct kd_ctx {
	struct probe_rt *rt;
	struct kd_uconf base, cur;
	struct kdiag *skel;
	struct ring_buffer *rb;
	struct symbolizer *sym;
	int bpf_stats;
	struct gg_bpf_stats_prev stats_prev[8];
	int ncpus;
	int cg_mnt_fd;
	char cg_mnt[200];
	char reason_names[KD_REASON_SLOTS][40];
	struct kd_cg cg[CG_CACHE];
	struct kd_table drops;		     /* kd_drop_key -> count */
	struct kd_table rl;		     /* kd_flow -> kd_rl_val */
	uint64_t drop_over[KD_REASON_SLOTS]; /* the overflow rows: user side beyond flow_max */
	struct kd_rl_val rl_over;
	uint64_t ev_sent[KD_EV_KINDS], ev_capped[KD_EV_KINDS], ev_lost[KD_EV_KINDS];
	/* buffers for map dumps */
	struct gg_bpf_map_buf flows;   /* kd_flows: DUMP_CHUNK struct kd_drop_key, struct kd_drop_val */
	struct gg_bpf_map_buf rlat;    /* kd_rl: DUMP_CHUNK struct kd_flow, struct kd_rl_val */
	struct gg_bpf_map_buf hardirq; /* kd_hardirq: HARDIRQ_CHUNK uint32_t, ncpus struct kd_hardirq_val each */
	uint64_t *percpu;	       /* ncpus values of a per-CPU map */
	struct kd_hist *irq_vals;
	struct kd_ev_stat *ev_vals;
};

static const char notes[] =
	"Sub-probes: drop (tables kdiag_drop_reason, kdiag_drop_flow; an event_v2 per drop, entity kdiag_drop,\n"
	"with reason, flow, network namespace, socket cgroup and kernel stack, at most events_per_sec),\n"
	"irq (table kdiag_irq: time in hard and soft interrupts and softirq raise->entry delay per CPU and\n"
	"vector; events with the kernel stack over irq_thr / softirq_delay_thr), net_recv_lat (table\n"
	"kdiag_recv_lat: netif_receive_skb to the application's first copy per flow; events over\n"
	"recv_lat_thr). kdiag_event_stat counts events sent, capped and lost.\n"
	"Live configuration: {\"probe\": [\"drop\", \"irq\", \"net_recv_lat\"], \"params\": {\"filter_port\": 80, "
	"...}}\n";

static const char *const vec_names[KD_NVEC] = {"hi",	  "timer", "net_tx",  "net_rx", "block",  "irq_poll",
					       "tasklet", "sched", "hrtimer", "rcu",	"hardirq"};
static const char *const kind_names[KD_EV_KINDS] = {"drop", "irq", "softirq_delay", "recv_lat"};

/* ---- names ---------------------------------------------------------------------------------------- */

static const char *proto_name(unsigned int p, char *buf, size_t len)
{
	switch (p) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case IPPROTO_SCTP:
		return "sctp";
	default:
		snprintf(buf, len, "%u", p);
		return buf;
	}
}

static void addr_str(int family, const uint8_t *a, char *buf, size_t len)
{
	if (family == AF_INET || family == AF_INET6)
		(void)inet_ntop(family, a, buf, (socklen_t)len);
	else
		snprintf(buf, len, "-");
}

static const char *reason_name(const struct kd_ctx *ctx, uint32_t reason)
{
	return reason < KD_REASON_SLOTS - 1 ? ctx->reason_names[reason] : "OTHER";
}

/* Every reason's name from the running kernel's enum skb_drop_reason (BTF), while it is loaded. */
static void load_reason_names(struct kd_ctx *ctx)
{
	for (unsigned int r = 0; r < KD_REASON_SLOTS; r++)
		(void)gg_btf_enum_name("skb_drop_reason", r, "SKB_DROP_REASON_", ctx->reason_names[r],
				       sizeof(ctx->reason_names[r]));
}

/* drop_reason (a name with or without SKB_DROP_REASON_, or a number) into its value. */
static int reason_value(const struct kd_ctx *ctx, const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	if (!strncmp(s, "SKB_DROP_REASON_", 16))
		s += 16;
	for (unsigned int r = 0; r < KD_REASON_SLOTS - 1; r++)
		if (!strcasecmp(ctx->reason_names[r], s)) {
			*ret = r;
			return 0;
		}
	v = strtoul(s, &end, 10);
	if (*s && !*end && v < 1u << 31) {
		*ret = (uint32_t)v;
		return 0;
	}
	return -EINVAL;
}

/* ---- cgroups: a socket's cgroup id -> path and one of its container's processes ------------------- */

static int find_cg2_mount(char *buf, size_t len)
{
	struct probe_buf b = {0};
	char *line, *save = NULL;
	int err = -ENOENT;

	if (probe_read_file("/proc/self/mounts", &b, 1u << 20))
		return -ENOENT;
	for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char dev[64], mnt[200], type[32];

		if (sscanf(line, "%63s %199s %31s", dev, mnt, type) == 3 && !strcmp(type, "cgroup2")) {
			snprintf(buf, len, "%s", mnt);
			err = 0;
			break;
		}
	}
	probe_buf__free(&b);
	return err;
}

/* The cgroup's path below the cgroup2 mount by its id (a kernfs file handle: the id is the handle). */
static int cg_path(struct kd_ctx *ctx, uint64_t cgid, char *buf, size_t len)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh = {.handle_bytes = sizeof(uint64_t), .handle_type = 0xfe /* FILEID_KERNFS */}, .id = cgid};
	char link[64], target[512];
	ssize_t n;
	size_t ml = strlen(ctx->cg_mnt);
	int fd;

	if (ctx->cg_mnt_fd < 0)
		return -ENOENT;
	fd = open_by_handle_at(ctx->cg_mnt_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	close(fd);
	if (n <= 0)
		return -ENOENT;
	target[n] = '\0';
	if (strncmp(target, ctx->cg_mnt, ml))
		return -ENOENT;
	snprintf(buf, len, "%s", target[ml] ? target + ml : "/");
	return 0;
}

/* A process of the container the cgroup belongs to (its cgroup.procs' first), 0 when not a container. */
static uint32_t cg_container_tgid(struct kd_ctx *ctx, const char *path)
{
	char id[65], file[512];
	struct probe_buf b = {0};
	uint32_t tgid = 0;

	if (gg_cgroup__container_id(path, id, sizeof(id)))
		return 0;
	snprintf(file, sizeof(file), "%s%s/cgroup.procs", ctx->cg_mnt, path);
	if (probe_read_file(file, &b, 1u << 16) == 0)
		tgid = (uint32_t)strtoul(b.data, NULL, 10);
	probe_buf__free(&b);
	return tgid;
}

static const struct kd_cg *cg_lookup(struct kd_ctx *ctx, uint64_t cgid)
{
	unsigned int i = (unsigned int)((cgid * 0x9E3779B97F4A7C15ull) >> 56) % CG_CACHE;
	struct kd_cg *c = &ctx->cg[i];
	uint64_t now = probe_now_mono_ms();

	if (!cgid)
		return NULL;
	if (c->cgid == cgid && now - c->at_ms < CG_TTL_MS)
		return c;
	c->cgid = cgid;
	c->at_ms = now;
	if (cg_path(ctx, cgid, c->path, sizeof(c->path)))
		snprintf(c->path, sizeof(c->path), "cgroup-id:%llu", (unsigned long long)cgid);
	c->tgid = c->path[0] == '/' ? cg_container_tgid(ctx, c->path) : 0;
	return c;
}

/* ---- events --------------------------------------------------------------------------------------- */

/* The kernel stack as "a <- b <- c" (innermost first, without offsets so that more frames fit). */
static void stack_str(struct kd_ctx *ctx, const struct kd_event *e, char *buf, size_t len)
{
	int n = e->nstack > 0 ? e->nstack / 8 : 0;
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && i < KD_STACK_MAX; i++) {
		struct sym_frame f;
		char one[160];
		int w;

		if (symbolizer__kernel(ctx->sym, e->stack[i], &f) == 0 && f.name) {
			/* our own program and the tracepoint's trampoline are not the kernel's path */
			if (!used && (!strncmp(f.name, "bpf_prog_", 9) || !strncmp(f.name, "bpf_trace_run", 13) ||
				      !strncmp(f.name, "__bpf_trace_", 12) || !strncmp(f.name, "__traceiter_", 12)))
				continue;
			snprintf(one, sizeof(one), "%s", f.name);
		} else
			snprintf(one, sizeof(one), "0x%llx", (unsigned long long)e->stack[i]);
		w = snprintf(buf + used, len - used, "%s%s", used ? " <- " : "", one);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0';
			break;
		}
		used += (size_t)w;
	}
}

static void flow_labels(const struct kd_flow *f, char *labels, size_t len, size_t *used, char *desc, size_t dlen)
{
	char sa[INET6_ADDRSTRLEN], da[INET6_ADDRSTRLEN], pb[12], num[24];
	const char *proto = proto_name(f->proto, pb, sizeof(pb));

	addr_str(f->family, f->saddr, sa, sizeof(sa));
	addr_str(f->family, f->daddr, da, sizeof(da));
	gg_event_label(labels, len, used, "protocol", f->family ? proto : "-");
	gg_event_label(labels, len, used, "src_addr", sa);
	snprintf(num, sizeof(num), "%u", f->sport);
	gg_event_label(labels, len, used, "src_port", num);
	gg_event_label(labels, len, used, "dst_addr", da);
	snprintf(num, sizeof(num), "%u", f->dport);
	gg_event_label(labels, len, used, "dst_port", num);
	snprintf(num, sizeof(num), "%u", f->netns);
	gg_event_label(labels, len, used, "netns", num);
	if (!f->family)
		snprintf(desc, dlen, "non-IP packet");
	else if (f->family == AF_INET6)
		snprintf(desc, dlen, "%s [%s]:%u -> [%s]:%u", proto, sa, f->sport, da, f->dport);
	else
		snprintf(desc, dlen, "%s %s:%u -> %s:%u", proto, sa, f->sport, da, f->dport);
}

static void drop_event(struct kd_ctx *ctx, const struct kd_event *e)
{
	char labels[1024], flow[160], stack[800], loc[128], body[2048], num[24];
	const char *reason = e->reason < KD_REASON_SLOTS - 1 ? reason_name(ctx, e->reason) : NULL;
	const struct kd_cg *cg = cg_lookup(ctx, e->cgid);
	struct sym_frame f;
	size_t used = 0;

	if (!reason) {
		snprintf(num, sizeof(num), "%u", e->reason);
		reason = num;
	}
	labels[0] = '\0';
	gg_event_label(labels, sizeof(labels), &used, "reason", reason);
	gg_event_label(labels, sizeof(labels), &used, "direction", e->flow.dir == KD_DIR_IN ? "in" : "out");
	flow_labels(&e->flow, labels, sizeof(labels), &used, flow, sizeof(flow));
	if (cg) {
		char t[16];

		gg_event_label(labels, sizeof(labels), &used, "cgroup", cg->path);
		if (cg->tgid) {
			snprintf(t, sizeof(t), "%u", cg->tgid);
			gg_event_label(labels, sizeof(labels), &used, "tgid", t);
		}
	}
	if (symbolizer__kernel(ctx->sym, e->location, &f) == 0 && f.name)
		snprintf(loc, sizeof(loc), "%s+0x%llx", f.name, (unsigned long long)f.offset);
	else
		snprintf(loc, sizeof(loc), "0x%llx", (unsigned long long)e->location);
	gg_event_label(labels, sizeof(labels), &used, "location", loc);
	stack_str(ctx, e, stack, sizeof(stack));
	snprintf(body, sizeof(body), "drop %s: %s %s netns %u ifindex %u cpu %u at %s; stack: %s", reason, flow,
		 e->flow.dir == KD_DIR_IN ? "in" : "out", e->flow.netns, e->ifindex, e->cpu, loc, stack);
	(void)gg_event_emit(ctx->rt, "kdiag_drop", flow, "drops", "WARN", body, NULL, labels);
}

static void irq_event(struct kd_ctx *ctx, const struct kd_event *e)
{
	char labels[512], stack[800], body[2048], id[48], cpu[16];
	const char *vec = e->vec < KD_NVEC ? vec_names[e->vec] : "?";
	int delay = e->kind == KD_EV_SIRQ_DELAY;
	size_t used = 0;

	snprintf(cpu, sizeof(cpu), "%u", e->cpu);
	snprintf(id, sizeof(id), "cpu%u/%s", e->cpu, vec);
	labels[0] = '\0';
	gg_event_label(labels, sizeof(labels), &used, "cpu", cpu);
	gg_event_label(labels, sizeof(labels), &used, "vector", vec);
	if (e->vec == KD_VEC_HARDIRQ) {
		char irq[16];

		snprintf(irq, sizeof(irq), "%u", e->irq);
		gg_event_label(labels, sizeof(labels), &used, "irq", irq);
		gg_event_label(labels, sizeof(labels), &used, "handler", e->name);
	}
	gg_event_label(labels, sizeof(labels), &used, "comm", e->comm);
	stack_str(ctx, e, stack, sizeof(stack));
	if (delay)
		snprintf(body, sizeof(body),
			 "softirq %s on cpu %u started %.3f ms after it was raised (task %.16s); stack: %s", vec,
			 e->cpu, (double)e->value_ns / 1e6, e->comm, stack);
	else if (e->vec == KD_VEC_HARDIRQ)
		snprintf(body, sizeof(body), "hardirq %u (%.16s) on cpu %u ran %.3f ms (task %.16s); stack: %s", e->irq,
			 e->name, e->cpu, (double)e->value_ns / 1e6, e->comm, stack);
	else
		snprintf(body, sizeof(body), "softirq %s on cpu %u ran %.3f ms (task %.16s); stack: %s", vec, e->cpu,
			 (double)e->value_ns / 1e6, e->comm, stack);
	(void)gg_event_emit(ctx->rt, "kdiag_irq", id, delay ? "delay_ns" : "time_ns", "WARN", body, NULL, labels);
}

static void recvlat_event(struct kd_ctx *ctx, const struct kd_event *e)
{
	char labels[512], flow[160], body[512], t[16];
	size_t used = 0;

	labels[0] = '\0';
	flow_labels(&e->flow, labels, sizeof(labels), &used, flow, sizeof(flow));
	snprintf(t, sizeof(t), "%u", e->tgid);
	gg_event_label(labels, sizeof(labels), &used, "tgid", t);
	gg_event_label(labels, sizeof(labels), &used, "comm", e->comm);
	snprintf(body, sizeof(body), "%s: a packet waited %.3f ms from netif_receive_skb to its read by %.16s (%u)",
		 flow, (double)e->value_ns / 1e6, e->comm, e->tgid);
	(void)gg_event_emit(ctx->rt, "kdiag_recv_lat", flow, "latency", "WARN", body, NULL, labels);
}

static int on_event(void *data, void *rec, size_t size)
{
	struct kd_ctx *ctx = data;
	const struct kd_event *e = rec;

	if (size < sizeof(*e))
		return 0;
	if (e->kind == KD_EV_DROP)
		drop_event(ctx, e);
	else if (e->kind == KD_EV_IRQ || e->kind == KD_EV_SIRQ_DELAY)
		irq_event(ctx, e);
	else if (e->kind == KD_EV_RECVLAT)
		recvlat_event(ctx, e);
	return 0;
}

static unsigned int tick(void *arg)
{
	struct kd_ctx *ctx = arg;

	if (ctx->rb) {
		symbolizer__begin_round(ctx->sym);
		(void)ring_buffer__consume(ctx->rb);
	}
	(void)probe_rt__flush(ctx->rt);
	return TICK_MS;
}

/* ---- reports -------------------------------------------------------------------------------------- */

/* Sum of a per-CPU u64 array's entry. */
static uint64_t percpu_sum(struct kd_ctx *ctx, int fd, uint32_t key)
{
	uint64_t s = 0;

	if (bpf_map_lookup_elem(fd, &key, ctx->percpu))
		return 0;
	for (int c = 0; c < ctx->ncpus; c++)
		s += ctx->percpu[c];
	return s;
}

static void flow_keys(struct probe_rec *r, const struct kd_flow *f)
{
	char sa[INET6_ADDRSTRLEN], da[INET6_ADDRSTRLEN], pb[12];

	addr_str(f->family, f->saddr, sa, sizeof(sa));
	addr_str(f->family, f->daddr, da, sizeof(da));
	probe_rec__str(r, f->family ? proto_name(f->proto, pb, sizeof(pb)) : "-");
	probe_rec__str(r, sa);
	probe_rec__u64(r, f->sport);
	probe_rec__str(r, da);
	probe_rec__u64(r, f->dport);
}

/* The kernel's entries since the last report (read and deleted, a buffer b at a time) into the
 * cumulative table t: merge(ctx, row, key, val) with the key's row, NULL when t is full. */
static void drain_map(struct kd_ctx *ctx, const struct bpf_map *map, struct gg_bpf_map_buf *b, struct kd_table *t,
		      void (*merge)(struct kd_ctx *ctx, void *row, const void *key, const void *val))
{
	struct gg_bpf_dump_cursor cur = {0};
	uint32_t n;

	while (!cur.done) {
		if (gg_bpf_map_buf__dump(b, map, &cur, &n, 1))
			break;
		for (uint32_t i = 0; i < n; i++) {
			const char *k = (const char *)b->keys + (size_t)i * b->key_size;
			void *row;

			merge(ctx, kd_table__get(t, k, &row) == 0 ? row : NULL, k,
			      (const char *)b->vals + (size_t)i * b->val_size);
		}
	}
}

static void drop_merge(struct kd_ctx *ctx, void *row, const void *key, const void *val)
{
	const struct kd_drop_key *k = key;
	const struct kd_drop_val *d = val;
	struct kd_drop_val *v = row;

	if (!v) {
		ctx->drop_over[k->reason < KD_REASON_SLOTS ? k->reason : KD_REASON_SLOTS - 1] += d->count;
		return;
	}
	v->count += d->count;
	if (d->cgid)
		v->cgid = d->cgid;
}

static void report_drops(struct kd_ctx *ctx)
{
	static struct probe_rec r;
	int rfd = bpf_map__fd(ctx->skel->maps.kd_reasons), ffd = bpf_map__fd(ctx->skel->maps.kd_flow_full);

	drain_map(ctx, ctx->skel->maps.kd_flows, &ctx->flows, &ctx->drops, drop_merge);
	for (uint32_t slot = 0; slot < KD_REASON_SLOTS; slot++) {
		uint64_t d = percpu_sum(ctx, rfd, slot), full;

		if (!d)
			continue;
		probe_rec__begin(&r, &TBL_kdiag_drop_reason);
		probe_rec__str(&r, reason_name(ctx, slot));
		probe_rec__u64(&r, d);
		(void)probe_rt__emit(ctx->rt, &r);
		full = percpu_sum(ctx, ffd, slot);
		if (!full && !ctx->drop_over[slot])
			continue;
		probe_rec__begin(&r, &TBL_kdiag_drop_flow);
		probe_rec__u64(&r, 0);
		probe_rec__u64(&r, 0);
		probe_rec__str(&r, reason_name(ctx, slot));
		probe_rec__str(&r, "-");
		probe_rec__str(&r, "other");
		probe_rec__str(&r, "*");
		probe_rec__u64(&r, 0);
		probe_rec__str(&r, "*");
		probe_rec__u64(&r, 0);
		probe_rec__str(&r, "");
		probe_rec__u64(&r, full + ctx->drop_over[slot]);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	for (uint32_t i = 0; i < ctx->drops.n; i++) {
		const struct kd_drop_key *k = kd_table__key(&ctx->drops, i);
		const struct kd_drop_val *v = kd_table__val(&ctx->drops, i);
		const struct kd_cg *cg = cg_lookup(ctx, v->cgid);

		probe_rec__begin(&r, &TBL_kdiag_drop_flow);
		probe_rec__u64(&r, cg ? cg->tgid : 0);
		probe_rec__u64(&r, k->flow.netns);
		probe_rec__str(&r, reason_name(ctx, k->reason < KD_REASON_SLOTS ? k->reason : KD_REASON_SLOTS - 1));
		probe_rec__str(&r, k->flow.dir == KD_DIR_IN ? "in" : "out");
		flow_keys(&r, &k->flow);
		probe_rec__str(&r, cg ? cg->path : "");
		probe_rec__u64(&r, v->count);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

static void hist_merge(struct kd_hist *dst, const struct kd_hist *src)
{
	for (int s = 0; s < GG_LOG2_SLOTS; s++)
		dst->slots[s] += src->slots[s];
	dst->sum_ns += src->sum_ns;
	dst->count += src->count;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
}

static void report_irq(struct kd_ctx *ctx)
{
	static struct probe_rec r;
	int fd = bpf_map__fd(ctx->skel->maps.kd_irq_hist);

	for (uint32_t v = 0; v < KD_NVEC; v++) {
		uint32_t krow = v, drow = KD_NVEC + v;
		struct kd_hist *t = ctx->irq_vals, *d = ctx->irq_vals + ctx->ncpus;

		if (bpf_map_lookup_elem(fd, &krow, t) || bpf_map_lookup_elem(fd, &drow, d))
			continue;
		for (int c = 0; c < ctx->ncpus; c++) {
			if (!t[c].count && !d[c].count)
				continue;
			probe_rec__begin(&r, &TBL_kdiag_irq);
			probe_rec__u64(&r, (uint64_t)c);
			probe_rec__str(&r, vec_names[v]);
			probe_rec__u64(&r, t[c].count);
			probe_rec__u64(&r, t[c].sum_ns);
			probe_rec__u64(&r, t[c].max_ns);
			gg_hist_rec(&r, t[c].slots, IRQ_FIRST, IRQ_N, 1e-3, (double)t[c].sum_ns / 1e3);
			probe_rec__u64(&r, d[c].count);
			probe_rec__u64(&r, d[c].sum_ns);
			probe_rec__u64(&r, d[c].max_ns);
			gg_hist_rec(&r, d[c].slots, IRQ_FIRST, IRQ_N, 1e-3, (double)d[c].sum_ns / 1e3);
			(void)probe_rt__emit(ctx->rt, &r);
		}
	}
}

/* Per interrupt line and CPU (kd_hardirq, a per-CPU hash: every line's value on every CPU). */
static void report_hardirq(struct kd_ctx *ctx)
{
	static struct probe_rec r;
	struct gg_bpf_dump_cursor cur = {0};
	const uint32_t *keys = ctx->hardirq.keys;
	const struct kd_hardirq_val *vals = ctx->hardirq.vals;
	uint32_t n;

	while (!cur.done) {
		if (gg_bpf_map_buf__dump(&ctx->hardirq, ctx->skel->maps.kd_hardirq, &cur, &n, 0))
			break;
		for (uint32_t i = 0; i < n; i++) {
			const struct kd_hardirq_val *v = vals + (size_t)i * (size_t)ctx->ncpus;
			const char *name = "";

			for (int c = 0; c < ctx->ncpus; c++)
				if (v[c].name[0]) {
					name = v[c].name; /* set on the CPU that saw the line first */
					break;
				}
			for (int c = 0; c < ctx->ncpus; c++) {
				char handler[sizeof(v[c].name) + 1];

				if (!v[c].h.count)
					continue;
				snprintf(handler, sizeof(handler), "%.*s", (int)sizeof(v[c].name), name);
				probe_rec__begin(&r, &TBL_kdiag_hardirq);
				probe_rec__u64(&r, (uint64_t)c);
				probe_rec__u64(&r, keys[i]);
				probe_rec__str(&r, handler);
				probe_rec__u64(&r, v[c].h.count);
				probe_rec__u64(&r, v[c].h.sum_ns);
				probe_rec__u64(&r, v[c].h.max_ns);
				gg_hist_rec(&r, v[c].h.slots, IRQ_FIRST, IRQ_N, 1e-3, (double)v[c].h.sum_ns / 1e3);
				(void)probe_rt__emit(ctx->rt, &r);
			}
		}
	}
}

static void rl_rec(struct kd_ctx *ctx, uint32_t tgid, const struct kd_flow *f, const struct kd_hist *h)
{
	static struct probe_rec r;

	probe_rec__begin(&r, &TBL_kdiag_recv_lat);
	probe_rec__u64(&r, tgid);
	probe_rec__u64(&r, f ? f->netns : 0);
	if (f) {
		flow_keys(&r, f);
	} else {
		probe_rec__str(&r, "other");
		probe_rec__str(&r, "*");
		probe_rec__u64(&r, 0);
		probe_rec__str(&r, "*");
		probe_rec__u64(&r, 0);
	}
	probe_rec__u64(&r, h->count);
	probe_rec__u64(&r, h->sum_ns);
	probe_rec__u64(&r, h->max_ns);
	gg_hist_rec(&r, h->slots, RL_FIRST, RL_N, 1e-3, (double)h->sum_ns / 1e3);
	(void)probe_rt__emit(ctx->rt, &r);
}

static void rl_merge(struct kd_ctx *ctx, void *row, const void *key, const void *val)
{
	const struct kd_rl_val *l = val;
	struct kd_rl_val *v = row;

	(void)key;
	if (!v) {
		hist_merge(&ctx->rl_over.h, &l->h);
		return;
	}
	if (!v->tgid)
		v->tgid = l->tgid;
	hist_merge(&v->h, &l->h);
}

static void report_recvlat(struct kd_ctx *ctx)
{
	drain_map(ctx, ctx->skel->maps.kd_rl, &ctx->rlat, &ctx->rl, rl_merge);
	for (uint32_t i = 0; i < ctx->rl.n; i++) {
		const struct kd_rl_val *v = kd_table__val(&ctx->rl, i);

		rl_rec(ctx, v->tgid, kd_table__key(&ctx->rl, i), &v->h);
	}
	if (ctx->rl_over.h.count)
		rl_rec(ctx, 0, NULL, &ctx->rl_over.h);
}

/* recursion_misses of the programs of one event kind */
static uint64_t prog_misses(const struct bpf_program *const *progs, int n)
{
	uint64_t m = 0;

	for (int i = 0; i < n; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (progs[i] && bpf_program__fd(progs[i]) >= 0 &&
		    bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len) == 0)
			m += info.recursion_misses;
	}
	return m;
}

static void report_events(struct kd_ctx *ctx)
{
	static struct probe_rec r;
	struct kdiag *s = ctx->skel;
	int fd = bpf_map__fd(s->maps.kd_ev_stats);
	const struct bpf_program *drop[] = {s->progs.kd_kfree_skb};
	const struct bpf_program *irq[] = {s->progs.kd_irq_entry, s->progs.kd_irq_exit, s->progs.kd_softirq_raise,
					   s->progs.kd_softirq_entry, s->progs.kd_softirq_exit};
	const struct bpf_program *rl[] = {s->progs.kd_netif_receive_skb, s->progs.kd_skb_copy};
	/* recv_lat: also reads the kernel's flow map had no room for (KD_RL_MAP_MAX flows between reports) */
	uint64_t missed[KD_EV_KINDS] = {prog_misses(drop, 1), prog_misses(irq, 5), 0,
					prog_misses(rl, 2) + (s->bss ? s->bss->kd_rl_full : 0)};

	for (uint32_t k = 0; k < KD_EV_KINDS; k++) {
		uint64_t sent = 0, capped = 0, lost = 0;

		if (bpf_map_lookup_elem(fd, &k, ctx->ev_vals) == 0)
			for (int c = 0; c < ctx->ncpus; c++) {
				sent += ctx->ev_vals[c].sent;
				capped += ctx->ev_vals[c].capped;
				lost += ctx->ev_vals[c].lost;
			}
		probe_rec__begin(&r, &TBL_kdiag_event_stat);
		probe_rec__str(&r, kind_names[k]);
		probe_rec__u64(&r, sent);
		probe_rec__u64(&r, capped);
		probe_rec__u64(&r, lost);
		probe_rec__u64(&r, missed[k]);
		(void)probe_rt__emit(ctx->rt, &r);
	}
}

static void report(void *arg)
{
	struct kd_ctx *ctx = arg;
	unsigned int sp = ctx->cur.subprobes;

	tick(ctx);
	if (sp & KD_SP_DROP)
		report_drops(ctx);
	if (sp & KD_SP_IRQ) {
		report_irq(ctx);
		report_hardirq(ctx);
	}
	if (sp & KD_SP_RECVLAT)
		report_recvlat(ctx);
	report_events(ctx);
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats && ctx->skel)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 8);
}

/* ---- configuration and setup ---------------------------------------------------------------------- */

/* The user configuration into the kernel half's (filters checked: -EINVAL with a warning). */
static int kernel_conf(struct kd_ctx *ctx, const struct kd_uconf *u, struct kd_conf *ret)
{
	struct kd_conf k;

	memset(&k, 0, sizeof(k));
	k.subprobes = u->subprobes;
	k.events_per_sec = u->events_per_sec;
	k.port = (uint16_t)u->port;
	if (u->addr[0]) {
		if (inet_pton(AF_INET, u->addr, k.addr) == 1) {
			k.addr_family = AF_INET;
		} else if (inet_pton(AF_INET6, u->addr, k.addr) == 1) {
			k.addr_family = AF_INET6;
		} else {
			probe_log(PLOG_WARN, "filter_addr \"%s\" is not an IPv4 or IPv6 address", u->addr);
			return -EINVAL;
		}
	}
	if (u->drop_reason[0]) {
		if (reason_value(ctx, u->drop_reason, &k.reason)) {
			probe_log(PLOG_WARN, "drop_reason \"%s\" is not a drop reason of this kernel", u->drop_reason);
			return -EINVAL;
		}
		k.filter_reason = 1;
	}
	k.irq_thr_ns = (uint64_t)u->irq_thr_us * 1000;
	k.sirq_delay_thr_ns = (uint64_t)u->softirq_delay_thr_us * 1000;
	k.recv_lat_thr_ns = (uint64_t)u->recv_lat_thr_ms * 1000000;
	*ret = k;
	return 0;
}

static void apply_conf(struct kd_ctx *ctx, const struct kd_conf *k)
{
	struct kdiag *s = ctx->skel;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.kd_kfree_skb, &s->links.kd_kfree_skb, KD_SP_DROP},
		{s->progs.kd_irq_entry, &s->links.kd_irq_entry, KD_SP_IRQ},
		{s->progs.kd_irq_exit, &s->links.kd_irq_exit, KD_SP_IRQ},
		{s->progs.kd_softirq_raise, &s->links.kd_softirq_raise, KD_SP_IRQ},
		{s->progs.kd_softirq_entry, &s->links.kd_softirq_entry, KD_SP_IRQ},
		{s->progs.kd_softirq_exit, &s->links.kd_softirq_exit, KD_SP_IRQ},
		{s->progs.kd_netif_receive_skb, &s->links.kd_netif_receive_skb, KD_SP_RECVLAT},
		{s->progs.kd_skb_copy, &s->links.kd_skb_copy, KD_SP_RECVLAT},
	};

	s->bss->kd_conf = *k;
	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), k->subprobes);
	ctx->drops.max = ctx->cur.flow_max;
	ctx->rl.max = ctx->cur.flow_max;
}

/* A live configuration the kernel half can take (its filters parse). */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct kd_conf k;

	(void)msg;
	return kernel_conf(data, next, &k) ? -EINVAL : 0;
}

static void applied(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct kd_ctx *ctx = data;
	struct kd_conf k;

	(void)version;
	(void)msg;
	if (ctx->skel && kernel_conf(ctx, &ctx->cur, &k) == 0) /* as check_conf found */
		apply_conf(ctx, &k);
}

static void describe(void *arg, char *buf, size_t len)
{
	const struct kd_ctx *ctx = arg;

	snprintf(buf, len, ", events_per_sec %u, flow_max %u, filter port %u addr \"%s\" reason \"%s\"",
		 ctx->cur.events_per_sec, ctx->cur.flow_max, ctx->cur.port, ctx->cur.addr, ctx->cur.drop_reason);
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct kd_ctx *ctx = arg;
	struct kd_conf k;
	int err;

	ctx->rt = rt;
	ctx->cg_mnt_fd = -1;
	ctx->ncpus = libbpf_num_possible_cpus();
	if (ctx->ncpus <= 0) {
		probe_log(PLOG_ERROR, "cannot count the CPUs: %s", strerror(-ctx->ncpus));
		return ctx->ncpus ? ctx->ncpus : -EINVAL;
	}
	gg_bpf_begin();
	load_reason_names(ctx);
	err = kernel_conf(ctx, &ctx->cur, &k);
	if (err)
		return err;
	if (find_cg2_mount(ctx->cg_mnt, sizeof(ctx->cg_mnt)) == 0)
		ctx->cg_mnt_fd = open(ctx->cg_mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ctx->sym = symbolizer__new(&(struct symbolizer_opts){.max_procs = 1});
	ctx->percpu = calloc((size_t)ctx->ncpus, sizeof(*ctx->percpu));
	ctx->irq_vals = calloc((size_t)ctx->ncpus * 2, sizeof(*ctx->irq_vals));
	ctx->ev_vals = calloc((size_t)ctx->ncpus, sizeof(*ctx->ev_vals));
	if (gg_bpf_map_buf__alloc(&ctx->flows, sizeof(struct kd_drop_key), sizeof(struct kd_drop_val), DUMP_CHUNK) ||
	    gg_bpf_map_buf__alloc(&ctx->rlat, sizeof(struct kd_flow), sizeof(struct kd_rl_val), DUMP_CHUNK) ||
	    gg_bpf_map_buf__alloc(&ctx->hardirq, sizeof(uint32_t),
				  (uint32_t)(sizeof(struct kd_hardirq_val) * (size_t)ctx->ncpus), HARDIRQ_CHUNK) ||
	    !ctx->sym || !ctx->percpu || !ctx->irq_vals || !ctx->ev_vals) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	if (kd_table__init(&ctx->drops, sizeof(struct kd_drop_key), sizeof(struct kd_drop_val), ctx->cur.flow_max) ||
	    kd_table__init(&ctx->rl, sizeof(struct kd_flow), sizeof(struct kd_rl_val), ctx->cur.flow_max)) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}

	ctx->skel = kdiag__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	err = gg_bpf_load_ringbuf(ctx->skel->skeleton, rt, ctx->skel->maps.kd_events, on_event, ctx, &ctx->rb);
	if (err)
		return err;
	apply_conf(ctx, &k);
	return 0;
}

static void teardown(void *arg)
{
	struct kd_ctx *ctx = arg;

	ring_buffer__free(ctx->rb);
	kdiag__destroy(ctx->skel);
	symbolizer__free(ctx->sym);
	if (ctx->cg_mnt_fd >= 0)
		close(ctx->cg_mnt_fd);
	kd_table__free(&ctx->drops);
	kd_table__free(&ctx->rl);
	gg_bpf_map_buf__free(&ctx->flows);
	gg_bpf_map_buf__free(&ctx->rlat);
	gg_bpf_map_buf__free(&ctx->hardirq);
	free(ctx->percpu);
	free(ctx->irq_vals);
	free(ctx->ev_vals);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct kd_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct kd_uconf, subprobes), check_conf, applied},
	.setup = setup,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.tick = tick,
	.describe = describe,
	.teardown = teardown,
};
