/* main.c - kafkaprobe ("kafka"): Kafka messages produced and consumed per client, topic and broker,
 * from the Kafka requests arriving at one device. The kernel half (bpf/kafkaprobe.bpf.c, XDP in generic
 * mode) follows each flow from request to request and copies the first bytes of every request; here
 * Produce and Fetch requests are parsed (kafka_req.c) and counted. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/if_link.h>

#include "bpf_util.h"
#include "kafka_req.h"
#include "kafkaprobe.h"
#include "kafkaprobe.meta.h"
#include "kafkaprobe.skel.h"
#include "kp_conf.h"
#include "hash.h"
#include "probe.h"
#include "probe_runner.h"

#define TICK_MS		     200u
#define FIRST_CONFIG_WAIT_MS 5000u
#define ROWS_MAX	     4096u  /* keys of the kafkaprobe table (power of 2) */
#define OFFS_MAX	     16384u /* consumer offsets per (client, server, topic, partition) (power of 2) */
#define TOPIC_MAX	     249    /* Kafka's longest topic name */

extern const struct gg_contract gg_contract_kafkaprobe;

struct kp_addr {
	uint8_t family;
	uint8_t pad;
	uint16_t cport, sport;
	uint8_t caddr[16], saddr[16];
};

struct kp_row_key {
	struct kp_addr a;
	uint8_t type; /* KREQ_PRODUCE or KREQ_FETCH */
	uint8_t topic_len;
	char topic[TOPIC_MAX + 1];
};

struct kp_row {
	struct kp_row_key k;
	uint8_t used;
	uint64_t num;
	uint64_t seen_ms; /* when a request last named it */
};

struct kp_off {
	struct kp_row_key k;
	int32_t partition;
	uint8_t used;
	int64_t offset;
	struct kp_row *row;
	uint64_t seen_ms;
};

struct kp_stats {
	uint64_t requests, produce, fetch, unparsable, truncated, unsupported, keys_full;
};

struct kp_ctx {
	struct probe_rt *rt;
	struct kp_conf base, cur;
	struct kafkaprobe *skel;
	struct ring_buffer *rb;
	int link_fd;	/* the XDP link, -1 while not attached */
	int attach_err; /* the last attach failure (logged once) */
	int bpf_stats;
	struct gg_bpf_stats_prev stats_prev[1];
	char dev[64];
	struct kp_row *rows;
	struct kp_off *offs;
	unsigned int nrows;
	uint64_t now_ms; /* monotonic, as of the last tick */
	struct kp_stats st;
	const struct kp_pkt *cur_pkt; /* the packet being parsed (for the partition callback) */
};

static const char notes[] =
	"Tables: kafkaprobe (one row per msg_type, client, topic and broker; num a cumulative counter) and\n"
	"kafkaprobe_stats. Only what arrives at the device (XDP, ingress) is seen; requests are found by\n"
	"following TCP sequence numbers; Fetch v13+ (topic ids), TLS and SASL encryption are not parsed.\n";

/* ---- addresses ------------------------------------------------------------------------------------ */

static void addr_of(const struct kp_pkt *r, struct kp_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = r->family;
	a->cport = r->sport;
	a->sport = r->dport;
	memcpy(a->caddr, r->saddr, r->family == 4 ? 4 : 16);
	memcpy(a->saddr, r->daddr, r->family == 4 ? 4 : 16);
}

/* ---- rows and consumer offsets ------------------------------------------------------------------ */

static void row_key(struct kp_row_key *k, const struct kp_pkt *r, int type, const char *topic, size_t len)
{
	memset(k, 0, sizeof(*k));
	addr_of(r, &k->a);
	k->type = (uint8_t)type;
	k->topic_len = (uint8_t)(len > TOPIC_MAX ? TOPIC_MAX : len);
	memcpy(k->topic, topic, k->topic_len);
}

static struct kp_row *row_get(struct kp_ctx *ctx, const struct kp_row_key *k)
{
	uint64_t h = gg_fnv1a(GG_FNV1A_INIT, k, sizeof(*k));

	for (unsigned int i = 0; i < ROWS_MAX; i++) {
		struct kp_row *w = &ctx->rows[(h + i) & (ROWS_MAX - 1)];

		if (!w->used) {
			if (ctx->nrows >= ROWS_MAX * 3 / 4)
				return NULL;
			w->used = 1;
			w->k = *k;
			ctx->nrows++;
			return w;
		}
		if (!memcmp(&w->k, k, sizeof(*k)))
			return w;
	}
	return NULL;
}

static struct kp_off *off_get(struct kp_ctx *ctx, const struct kp_row_key *k, int32_t partition, int *created)
{
	uint64_t h = gg_fnv1a(gg_fnv1a(GG_FNV1A_INIT, k, sizeof(*k)), &partition, sizeof(partition));

	for (unsigned int i = 0; i < OFFS_MAX / 2; i++) { /* probes at most half the table */
		struct kp_off *o = &ctx->offs[(h + i) & (OFFS_MAX - 1)];

		if (!o->used) {
			o->used = 1;
			o->k = *k;
			o->partition = partition;
			*created = 1;
			return o;
		}
		if (o->partition == partition && !memcmp(&o->k, k, sizeof(*k)))
			return o;
	}
	return NULL;
}

static void on_partition(void *arg, int api_key, const char *topic, size_t topic_len, int32_t partition, int64_t value)
{
	struct kp_ctx *ctx = arg;
	struct kp_row_key k;
	struct kp_row *w;

	row_key(&k, ctx->cur_pkt, api_key, topic, topic_len);
	if (api_key == KREQ_PRODUCE) {
		if (value <= 0)
			return;
		if (!(w = row_get(ctx, &k))) {
			ctx->st.keys_full++;
			return;
		}
		w->num += (uint64_t)value;
		w->seen_ms = ctx->now_ms;
	} else {
		int created = 0;
		struct kp_off *o = off_get(ctx, &k, partition, &created);

		if (!o) {
			ctx->st.keys_full++;
			return;
		}
		if (!o->row && !(o->row = row_get(ctx, &k))) {
			ctx->st.keys_full++;
			return;
		}
		if (!created && value > o->offset)
			o->row->num += (uint64_t)(value - o->offset);
		o->offset = value; /* lower: the consumer went back; the new place is the base */
		o->seen_ms = o->row->seen_ms = ctx->now_ms;
	}
}

/* ---- segments ------------------------------------------------------------------------------------ */

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* One request from its first bytes (the kernel half found where it starts). */
static int on_record(void *data, void *rec, size_t size)
{
	struct kp_ctx *ctx = data;
	const struct kp_pkt *r = rec;
	struct kreq_hdr h;
	unsigned int cut = 0;
	uint32_t len;
	int res;

	if (size < sizeof(*r) || (r->family != 4 && r->family != 6) || r->cap_len > KP_CAP || r->cap_len < 4 ||
	    !(r->flags & KP_F_START))
		return 0;
	len = be32(r->data);
	ctx->cur_pkt = r;
	res = kreq_parse(r->data, r->cap_len - 4 < len ? r->cap_len : 4 + (size_t)len, on_partition, ctx, &h, &cut);
	if (res == KREQ_BAD) {
		ctx->st.unparsable++;
		return 0;
	}
	ctx->st.requests++;
	if (h.api_key == KREQ_PRODUCE)
		ctx->st.produce++;
	else if (h.api_key == KREQ_FETCH)
		ctx->st.fetch++;
	if (res == KREQ_TRUNCATED)
		ctx->st.truncated++;
	else if (res == KREQ_UNSUPPORTED)
		ctx->st.unsupported++;
	return 0;
}

static unsigned int tick(void *arg)
{
	struct kp_ctx *ctx = arg;

	ctx->now_ms = probe_now_mono_ms();
	if (ctx->rb)
		(void)ring_buffer__consume(ctx->rb);
	return TICK_MS;
}

/* The XDP program on the device, when it is not yet: a device that does not exist (yet), or that another
 * program holds, is tried again every report period (logged once per reason). */
static void attach(struct kp_ctx *ctx)
{
	struct bpf_link_create_opts opts = {.sz = sizeof(opts), .flags = XDP_FLAGS_SKB_MODE};
	unsigned int ifindex;
	int err;

	if (ctx->link_fd >= 0 || !ctx->skel)
		return;
	ifindex = if_nametoindex(ctx->dev);
	/* generic (SKB) mode: every driver has it; the link goes with this process */
	err = ifindex ? bpf_link_create(bpf_program__fd(ctx->skel->progs.kp_xdp), (int)ifindex, BPF_XDP, &opts)
		      : -errno;
	if (err < 0) {
		if (err != ctx->attach_err)
			probe_log(PLOG_WARN, "XDP on %s: %s; trying again every period", ctx->dev, strerror(-err));
		ctx->attach_err = err;
		return;
	}
	ctx->link_fd = err;
	ctx->attach_err = 0;
	probe_log(PLOG_INFO, "XDP (generic) on %s (ifindex %u), Kafka port %u", ctx->dev, ifindex, ctx->cur.port);
}

/* Keys not seen for idle_timeout (their connections are gone: a client port is a key) leave both tables,
 * which are open-addressed without deletion: rebuilt from what stays, when anything goes. A consumer
 * offset whose row went finds (or makes) its row again at its next Fetch. */
static void forget_idle(struct kp_ctx *ctx)
{
	uint64_t idle = (uint64_t)ctx->cur.idle_s * 1000, cut = ctx->now_ms > idle ? ctx->now_ms - idle : 0;
	struct kp_row *old_rows = ctx->rows;
	struct kp_off *old_offs = ctx->offs;
	int stale = 0;

	for (unsigned int i = 0; i < ROWS_MAX && !stale; i++)
		stale = old_rows[i].used && old_rows[i].seen_ms < cut;
	for (unsigned int i = 0; i < OFFS_MAX && !stale; i++)
		stale = old_offs[i].used && old_offs[i].seen_ms < cut;
	if (!stale)
		return;
	ctx->rows = calloc(ROWS_MAX, sizeof(*ctx->rows));
	ctx->offs = calloc(OFFS_MAX, sizeof(*ctx->offs));
	if (!ctx->rows || !ctx->offs) { /* kept as they are, tried again next period */
		free(ctx->rows);
		free(ctx->offs);
		ctx->rows = old_rows;
		ctx->offs = old_offs;
		return;
	}
	ctx->nrows = 0;
	for (unsigned int i = 0; i < ROWS_MAX; i++) {
		struct kp_row *w;

		if (old_rows[i].used && old_rows[i].seen_ms >= cut && (w = row_get(ctx, &old_rows[i].k))) {
			w->num = old_rows[i].num;
			w->seen_ms = old_rows[i].seen_ms;
		}
	}
	for (unsigned int i = 0; i < OFFS_MAX; i++) {
		int created = 0;
		struct kp_off *o;

		if (old_offs[i].used && old_offs[i].seen_ms >= cut &&
		    (o = off_get(ctx, &old_offs[i].k, old_offs[i].partition, &created))) {
			o->offset = old_offs[i].offset;
			o->seen_ms = old_offs[i].seen_ms;
		}
	}
	free(old_rows);
	free(old_offs);
}

/* ---- reports ------------------------------------------------------------------------------------- */

static void kernel_stats(struct kp_ctx *ctx, uint64_t out[KP_ST_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;

	memset(out, 0, sizeof(uint64_t) * KP_ST_MAX);
	if (!ctx->skel || ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	for (uint32_t i = 0; i < KP_ST_MAX; i++)
		if (bpf_map__lookup_elem(ctx->skel->maps.kp_stats, &i, sizeof(i), v, sizeof(*v) * (size_t)ncpu, 0) == 0)
			for (int c = 0; c < ncpu; c++)
				out[i] += v[c];
	free(v);
}

static void addr_str(int family, const uint8_t *a, char *buf, size_t len)
{
	if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void report(void *arg)
{
	struct kp_ctx *ctx = arg;
	static struct probe_rec r;
	uint64_t ks[KP_ST_MAX];

	tick(ctx);
	attach(ctx);
	for (unsigned int i = 0; i < ROWS_MAX; i++) {
		const struct kp_row *w = &ctx->rows[i];
		char c[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN];

		if (!w->used)
			continue;
		addr_str(w->k.a.family, w->k.a.caddr, c, sizeof(c));
		addr_str(w->k.a.family, w->k.a.saddr, s, sizeof(s));
		probe_rec__begin(&r, &TBL_kafkaprobe);
		probe_rec__str(&r, w->k.type == KREQ_PRODUCE ? "Producer" : "Consumer");
		probe_rec__str(&r, c);
		probe_rec__u64(&r, w->k.a.cport);
		probe_rec__u64(&r, w->num);
		probe_rec__strn(&r, w->k.topic, w->k.topic_len);
		probe_rec__str(&r, s);
		probe_rec__u64(&r, w->k.a.sport);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	kernel_stats(ctx, ks);
	probe_rec__begin(&r, &TBL_kafkaprobe_stats);
	probe_rec__str(&r, ctx->dev);
	probe_rec__u64(&r, ks[KP_ST_PKTS]);
	probe_rec__u64(&r, ctx->st.requests);
	probe_rec__u64(&r, ctx->st.produce);
	probe_rec__u64(&r, ctx->st.fetch);
	probe_rec__u64(&r, ctx->st.unparsable);
	probe_rec__u64(&r, ks[KP_ST_RESYNC]);
	probe_rec__u64(&r, ctx->st.truncated);
	probe_rec__u64(&r, ks[KP_ST_RB_LOST]);
	probe_rec__u64(&r, ks[KP_ST_UNSYNCED]);
	probe_rec__u64(&r, ctx->st.unsupported);
	probe_rec__u64(&r, ctx->st.keys_full);
	(void)probe_rt__emit(ctx->rt, &r);
	(void)probe_rt__flush(ctx->rt);
	forget_idle(ctx);
	if (ctx->bpf_stats && ctx->skel)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 1);
}

/* ---- setup ---------------------------------------------------------------------------------------- */

static int setup(void *arg, struct probe_rt *rt)
{
	struct kp_ctx *ctx = arg;
	int err;

	ctx->rt = rt;
	ctx->link_fd = -1;
	ctx->now_ms = probe_now_mono_ms();
	/* under the supervisor, the device and port come with the first live configuration (PUT /kafka) */
	(void)probe_runner__wait_first_config(FIRST_CONFIG_WAIT_MS);
	snprintf(ctx->dev, sizeof(ctx->dev), "%s", ctx->cur.dev_name[0] ? ctx->cur.dev_name : "eth0");
	ctx->rows = calloc(ROWS_MAX, sizeof(*ctx->rows));
	ctx->offs = calloc(OFFS_MAX, sizeof(*ctx->offs));
	if (!ctx->rows || !ctx->offs)
		return -ENOMEM;
	gg_bpf_begin();
	ctx->skel = kafkaprobe__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	ctx->skel->rodata->kp_port = (uint16_t)ctx->cur.port;
	err = gg_bpf_load_ringbuf(ctx->skel->skeleton, rt, ctx->skel->maps.kp_events, on_record, ctx, &ctx->rb);
	if (err)
		return err;
	attach(ctx);
	return 0;
}

static void teardown(void *arg)
{
	struct kp_ctx *ctx = arg;

	if (ctx->link_fd >= 0)
		close(ctx->link_fd);
	ring_buffer__free(ctx->rb);
	kafkaprobe__destroy(ctx->skel);
	free(ctx->rows);
	free(ctx->offs);
}

static void describe(void *arg, char *buf, size_t len)
{
	struct kp_ctx *ctx = arg;

	snprintf(buf, len, ", device %s, Kafka port %u", ctx->dev, ctx->cur.port);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct kp_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = &gg_contract_kafkaprobe,
	.ctx = &g_ctx,
	.args = {.bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct kp_conf, subprobes), NULL, NULL},
	.setup = setup,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.tick = tick,
	.describe = describe,
	.teardown = teardown,
};
