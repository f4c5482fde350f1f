/* links.c - tcpprobe: folds links (live and closed) into one entry per reported key (tgid, role,
 * client/server address and port, family) and emits the tcp_* tables from them. Counters stay
 * monotonic per key: a closed link's final values move into the key's base, live links are added
 * on top every period. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hash.h"
#include "tcp_user.h"
#include "tcpprobe.meta.h"

#define NS_PER_MS	 1000000ULL
#define AGG_BUCKETS	 4096u
#define IDLE_PERIODS_MAX 3u /* periods a key with no link left is still reported */

/* Histogram layouts (gg_hist_rec first/n): microseconds from <= 16 us to 8.4 s, ms to 35 min. */
#define RTT_FIRST   3u
#define RTT_N	    21u
#define DELAY_FIRST 3u /* delays: <= 16 us to 33 s */
#define DELAY_N	    23u
#define LIFE_FIRST  0u
#define LIFE_N	    22u

struct tp_key {
	uint32_t tgid;
	uint8_t role;
	uint8_t family;
	uint16_t cport;
	uint16_t sport;
	uint8_t cip[16];
	uint8_t sip[16];
};

/* What adds up across links and over time. */
struct tp_sums {
	uint64_t rx, tx, segs_in, segs_out;
	uint64_t retrans, syn_retrans, sk_drops, drops, drops_backlog, drops_filter, drops_rmem;
	uint64_t send_rsts, recv_rsts, zero_snd, zero_rcv, rcvq_full, sndbuf_limit;
	__u64 srtt_hist[GG_LOG2_SLOTS], rcv_rtt_hist[GG_LOG2_SLOTS], syn_hist[GG_LOG2_SLOTS];
	uint64_t srtt_sum, rcv_rtt_sum, syn_sum; /* us */
	__u64 rx_delay_hist[GG_LOG2_SLOTS], tx_delay_hist[GG_LOG2_SLOTS];
	uint64_t rx_delay_sum, tx_delay_sum; /* us */
	uint64_t links, failed;
};

/* Current values, averaged over the links seen this period. */
struct tp_gauges {
	double srtt, rcv_rtt, cwnd, notsent, notack, reordering, snd_wnd, rcv_wnd, avl_wnd;
	double rto, ato, ssthresh, rcv_ssthresh, advmss, rcv_space, delivery_rate, pacing, max_pacing;
	double errq, rcvq, wrq, backlog, omem, fwd, wmem, rmem, rcvbuf, sndbuf, lost_out, sacked_out;
	double sk_err, sk_err_soft;
	unsigned int n, n_rcv_rtt;
};

struct tp_agg {
	struct tp_agg *next;
	struct tp_key key;
	char comm[16];
	struct tp_sums base;   /* closed links, final values */
	struct tp_sums live;   /* live links this period */
	struct tp_gauges acc;  /* this period */
	struct tp_gauges last; /* the last period that had links */
	uint64_t closed;
	__u64 life_hist[GG_LOG2_SLOTS];
	uint64_t life_sum_ms;
	uint32_t syn_srtt_last;
	uint32_t nlive;
	uint32_t seen_period; /* something was folded in this period */
	uint32_t idle;
	uint64_t prev_abn; /* retransmits + drops at the previous report */
	int have_prev;
	int have_last;
};

struct tp_aggs {
	struct tp_agg *buckets[AGG_BUCKETS];
	unsigned int count, max;
	uint64_t overflows;
};

struct tp_aggs *tp_aggs__new(unsigned int max_keys)
{
	struct tp_aggs *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max = max_keys;
	return a;
}

void tp_aggs__free(struct tp_aggs *a)
{
	if (!a)
		return;
	for (unsigned int i = 0; i < AGG_BUCKETS; i++) {
		struct tp_agg *g = a->buckets[i], *next;

		for (; g; g = next) {
			next = g->next;
			free(g);
		}
	}
	free(a);
}

uint64_t tp_aggs__overflows(const struct tp_aggs *a)
{
	return a->overflows;
}

unsigned int tp_aggs__count(const struct tp_aggs *a)
{
	return a->count;
}

static uint32_t key_hash(const struct tp_key *k)
{
	return (uint32_t)gg_fnv1a(GG_FNV1A_INIT, k, sizeof(*k));
}

static struct tp_agg *agg_get(struct tp_aggs *a, const struct tp_key *k)
{
	uint32_t b = key_hash(k) % AGG_BUCKETS;
	struct tp_agg *g;

	for (g = a->buckets[b]; g; g = g->next)
		if (!memcmp(&g->key, k, sizeof(*k)))
			return g;
	if (a->count >= a->max) {
		a->overflows++;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		a->overflows++;
		return NULL;
	}
	g->key = *k;
	g->next = a->buckets[b];
	a->buckets[b] = g;
	a->count++;
	return g;
}

static int is_v4_mapped(const uint8_t *a)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(a, prefix, sizeof(prefix));
}

/* The key a link is reported under: client and server ends from its role. */
static void link_key(const struct tp_report_ctx *ctx, const struct tcp_link *l, struct tp_key *k)
{
	int client = l->role == TCP_ROLE_CLIENT;
	const uint8_t *cip, *sip;

	if (l->role == TCP_ROLE_UNKNOWN) {
		/* Found established: the end with an ephemeral port is the client. */
		int local_eph = l->lport >= ctx->port_lo && l->lport <= ctx->port_hi;
		int remote_eph = l->rport >= ctx->port_lo && l->rport <= ctx->port_hi;

		client = local_eph && !remote_eph ? 1 : (!local_eph && remote_eph ? 0 : l->lport > l->rport);
	}
	memset(k, 0, sizeof(*k));
	k->tgid = l->tgid;
	k->role = client ? TCP_ROLE_CLIENT : TCP_ROLE_SERVER;
	k->family = l->family;
	cip = client ? l->laddr : l->raddr;
	sip = client ? l->raddr : l->laddr;
	k->cport = client ? l->lport : l->rport;
	k->sport = client ? l->rport : l->lport;
	if (l->family == AF_INET6 && is_v4_mapped(cip) && is_v4_mapped(sip)) {
		k->family = AF_INET;
		memcpy(k->cip, cip + 12, 4);
		memcpy(k->sip, sip + 12, 4);
	} else if (l->family == AF_INET6) {
		memcpy(k->cip, cip, 16);
		memcpy(k->sip, sip, 16);
	} else {
		memcpy(k->cip, cip, 4);
		memcpy(k->sip, sip, 4);
	}
	if (!ctx->conf->report_source_port)
		k->cport = 0;
}

static int in_scope(const struct tp_report_ctx *ctx, const struct tcp_link *l)
{
	const struct gg_scope *s = ctx->scope;

	/* Links created after the last scope change were filtered by the kernel, ancestors included. */
	if (s->all || l->open_ns > ctx->scope_changed_ns)
		return 1;
	for (uint32_t i = 0; i < s->ntgid; i++)
		if (s->tgid[i] == l->tgid)
			return 1;
	for (uint32_t i = 0; i < s->ncgrp; i++)
		if (s->cgrp[i] == l->cgroup_id)
			return 1;
	return 0;
}

static void hist_add(__u64 *dst, const __u64 *src)
{
	for (unsigned int i = 0; i < GG_LOG2_SLOTS; i++)
		dst[i] += src[i];
}

static void sums_add(struct tp_sums *d, const struct tcp_link *l, const struct tcp_hists *h)
{
	const struct tcp_snap *s = &l->s;

	d->rx += s->bytes_received;
	d->tx += s->bytes_acked;
	d->segs_in += s->segs_in;
	d->segs_out += s->segs_out;
	d->retrans += s->total_retrans;
	d->syn_retrans += l->syn_retrans;
	d->sk_drops += s->sk_drops;
	d->drops += l->drops;
	d->drops_backlog += l->drops_backlog;
	d->drops_filter += l->drops_filter;
	d->drops_rmem += l->drops_rmem;
	d->send_rsts += l->send_rsts;
	d->recv_rsts += l->recv_rsts;
	d->zero_snd += l->zero_snd_wnd;
	d->zero_rcv += l->zero_rcv_wnd;
	d->rcvq_full += l->rcvq_full;
	d->sndbuf_limit += l->sndbuf_limit;
	if (h) {
		hist_add(d->srtt_hist, h->srtt_hist);
		hist_add(d->rcv_rtt_hist, h->rcv_rtt_hist);
		d->srtt_sum += h->srtt_sum_us;
		d->rcv_rtt_sum += h->rcv_rtt_sum_us;
		hist_add(d->rx_delay_hist, h->rx_delay_hist);
		hist_add(d->tx_delay_hist, h->tx_delay_hist);
		d->rx_delay_sum += h->rx_delay_sum_us;
		d->tx_delay_sum += h->tx_delay_sum_us;
	}
	if (l->flags & TCP_LF_ESTABLISHED && l->syn_srtt_us) {
		d->syn_hist[gg_hist_slot(l->syn_srtt_us)]++;
		d->syn_sum += l->syn_srtt_us;
	}
	d->links++;
	if (l->flags & TCP_LF_CONNECT_FAILED)
		d->failed++;
}

static void gauges_add(struct tp_gauges *g, const struct tcp_link *l)
{
	const struct tcp_snap *s = &l->s;
	double mss = s->mss_cache ? s->mss_cache : 1, wnd = s->snd_wnd, cw = (double)s->snd_cwnd * mss, avl;

	avl = (wnd < cw ? wnd : cw) - s->notack_bytes;
	g->srtt += s->srtt_us;
	if (s->rcv_rtt_us) {
		g->rcv_rtt += s->rcv_rtt_us;
		g->n_rcv_rtt++;
	}
	g->cwnd += s->snd_cwnd;
	g->notsent += s->notsent_bytes;
	g->notack += s->notack_bytes;
	g->reordering += s->reordering;
	g->snd_wnd += s->snd_wnd;
	g->rcv_wnd += s->rcv_wnd;
	g->avl_wnd += avl > 0 ? avl : 0;
	g->rto += s->rto_us;
	g->ato += s->ato_us;
	g->ssthresh += s->snd_ssthresh < 0x7fffffff ? s->snd_ssthresh : 0;
	g->rcv_ssthresh += s->rcv_ssthresh;
	g->advmss += s->advmss;
	g->rcv_space += s->rcv_space;
	if (s->rate_interval_us)
		g->delivery_rate += (double)s->rate_delivered * mss * 1e6 / s->rate_interval_us;
	g->pacing += s->pacing_rate != ~0ULL ? (double)s->pacing_rate : 0;
	g->max_pacing +=
		s->max_pacing_rate != ~0ULL && s->max_pacing_rate != 0xffffffffULL ? (double)s->max_pacing_rate : 0;
	g->errq += s->errq_len;
	g->rcvq += s->rcvq_len;
	g->wrq += s->wrq_len;
	g->backlog += s->backlog_len;
	g->omem += s->omem_alloc;
	g->fwd += s->forward_alloc;
	g->wmem += s->wmem_queued;
	g->rmem += s->rmem_alloc;
	g->rcvbuf += s->rcvbuf;
	g->sndbuf += s->sndbuf;
	g->lost_out += s->lost_out;
	g->sacked_out += s->sacked_out;
	if (s->sk_err)
		g->sk_err = s->sk_err > 0 ? s->sk_err : -s->sk_err;
	if (s->sk_err_soft)
		g->sk_err_soft = s->sk_err_soft > 0 ? s->sk_err_soft : -s->sk_err_soft;
	g->n++;
}

void tp_aggs__add(struct tp_aggs *a, const struct tp_report_ctx *ctx, const struct tcp_link *l,
		  const struct tcp_hists *h, int closed)
{
	struct tp_key k;
	struct tp_agg *g;

	if (l->flags & TCP_LF_OUT_OF_SCOPE || !in_scope(ctx, l))
		return;
	/* A passive open not accepted yet: wait a period for the iterator (or accept()) to name its process. */
	if (!closed && (!l->tgid || (l->flags & TCP_LF_TGID_GUESS)) && l->role == TCP_ROLE_SERVER &&
	    ctx->now_ns - l->open_ns < (uint64_t)ctx->conf->period_s * 1000 * NS_PER_MS)
		return;
	link_key(ctx, l, &k);
	g = agg_get(a, &k);
	if (!g)
		return;
	/* A key born with new links starts from zero: its first period's retransmits and drops count
	 * for drops_thr. Links found established carry their past, which must not. */
	if (!g->have_prev && !g->seen_period && l->open_ns > ctx->start_ns && !(l->flags & TCP_LF_SEEDED) &&
	    !g->closed && !g->nlive)
		g->have_prev = 1;
	if (l->comm[0])
		memcpy(g->comm, l->comm, sizeof(g->comm));
	if (l->syn_srtt_us)
		g->syn_srtt_last = l->syn_srtt_us;
	gauges_add(&g->acc, l);
	g->seen_period = 1;
	if (closed) {
		uint64_t ms = l->close_ns > l->open_ns ? (l->close_ns - l->open_ns) / NS_PER_MS : 0;

		sums_add(&g->base, l, h);
		g->closed++;
		g->life_hist[gg_hist_slot(ms)]++;
		g->life_sum_ms += ms;
	} else {
		sums_add(&g->live, l, h);
		g->nlive++;
	}
}

static void key_strs(const struct tp_key *k, char *cip, char *sip, size_t len)
{
	int af = k->family == AF_INET6 ? AF_INET6 : AF_INET;

	if (!inet_ntop(af, k->cip, cip, (socklen_t)len))
		snprintf(cip, len, "?");
	if (!inet_ntop(af, k->sip, sip, (socklen_t)len))
		snprintf(sip, len, "?");
}

/* The key and label fields every tcp_link table starts with. */
static void rec_keys(struct probe_rec *r, const struct probe_table *t, const struct tp_agg *g, const char *cip,
		     const char *sip)
{
	probe_rec__begin(r, t);
	probe_rec__u64(r, g->key.tgid);
	probe_rec__u64(r, g->key.role);
	probe_rec__str(r, cip);
	probe_rec__str(r, sip);
	probe_rec__u64(r, g->key.cport);
	probe_rec__u64(r, g->key.sport);
	probe_rec__u64(r, g->key.family);
	probe_rec__str(r, g->comm);
}

/* An abnormal link: an event_v2 record (entity tcp_link, WARN). */
static unsigned int link_event(const struct tp_report_ctx *ctx, const struct tp_agg *g, const char *cip,
			       const char *sip, const char *metric, const char *body, const char *body_zh)
{
	char id[160], labels[320], num[24];
	size_t used = 0;

	snprintf(id, sizeof(id), "%u_%u_%s_%s_%u_%u_%u", g->key.tgid, g->key.role, cip, sip, g->key.cport, g->key.sport,
		 g->key.family);
	snprintf(num, sizeof(num), "%u", g->key.tgid);
	gg_event_label(labels, sizeof(labels), &used, "tgid", num);
	gg_event_label(labels, sizeof(labels), &used, "comm", g->comm);
	snprintf(num, sizeof(num), "%u", g->key.role);
	gg_event_label(labels, sizeof(labels), &used, "role", num);
	gg_event_label(labels, sizeof(labels), &used, "client_ip", cip);
	gg_event_label(labels, sizeof(labels), &used, "server_ip", sip);
	snprintf(num, sizeof(num), "%u", g->key.cport);
	gg_event_label(labels, sizeof(labels), &used, "client_port", num);
	snprintf(num, sizeof(num), "%u", g->key.sport);
	gg_event_label(labels, sizeof(labels), &used, "server_port", num);
	return gg_event_emit(ctx->rt, "tcp_link", id, metric, "WARN", body, body_zh, labels) == 0;
}

static unsigned int emit(struct probe_rt *rt, struct probe_rec *r)
{
	return probe_rt__emit(rt, r) == 0;
}

static unsigned int agg_report(const struct tp_report_ctx *ctx, struct tp_agg *g)
{
	static struct probe_rec r; /* large; single-threaded */
	static struct tp_sums t;
	const struct tp_gauges *m = &g->last;
	unsigned int sp = ctx->conf->subprobes, n = 0;
	char cip[INET6_ADDRSTRLEN], sip[INET6_ADDRSTRLEN];
	double k;

	t = g->base;
	for (size_t i = 0; i < sizeof(t) / sizeof(uint64_t); i++)
		((uint64_t *)&t)[i] += ((const uint64_t *)&g->live)[i];
	key_strs(&g->key, cip, sip, sizeof(cip));
	k = m->n ? 1.0 / m->n : 0;

	if (sp & TCP_SP_STATS) {
		rec_keys(&r, &TBL_tcp_tx_rx, g, cip, sip);
		probe_rec__u64(&r, t.rx);
		probe_rec__u64(&r, t.tx);
		probe_rec__u64(&r, t.segs_in);
		probe_rec__u64(&r, t.segs_out);
		probe_rec__u64(&r, t.links);
		probe_rec__u64(&r, g->closed);
		probe_rec__u64(&r, t.failed);
		probe_rec__u64(&r, g->nlive);
		gg_hist_rec(&r, g->life_hist, LIFE_FIRST, LIFE_N, 1.0, (double)g->life_sum_ms);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_RTT) {
		rec_keys(&r, &TBL_tcp_rtt, g, cip, sip);
		probe_rec__f64(&r, m->srtt * k);
		probe_rec__f64(&r, m->n_rcv_rtt ? m->rcv_rtt / m->n_rcv_rtt : 0);
		gg_hist_rec(&r, t.srtt_hist, RTT_FIRST, RTT_N, 1.0, (double)t.srtt_sum);
		gg_hist_rec(&r, t.rcv_rtt_hist, RTT_FIRST, RTT_N, 1.0, (double)t.rcv_rtt_sum);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_WINDOWS) {
		rec_keys(&r, &TBL_tcp_windows, g, cip, sip);
		probe_rec__f64(&r, m->cwnd * k);
		probe_rec__f64(&r, m->notsent * k);
		probe_rec__f64(&r, m->notack * k);
		probe_rec__f64(&r, m->reordering * k);
		probe_rec__f64(&r, m->snd_wnd * k);
		probe_rec__f64(&r, m->rcv_wnd * k);
		probe_rec__f64(&r, m->avl_wnd * k);
		probe_rec__u64(&r, t.zero_snd);
		probe_rec__u64(&r, t.zero_rcv);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_RATE) {
		rec_keys(&r, &TBL_tcp_rate, g, cip, sip);
		probe_rec__f64(&r, m->rto * k);
		probe_rec__f64(&r, m->ato * k);
		probe_rec__f64(&r, m->ssthresh * k);
		probe_rec__f64(&r, m->rcv_ssthresh * k);
		probe_rec__f64(&r, m->advmss * k);
		probe_rec__f64(&r, m->rcv_space * k);
		probe_rec__f64(&r, m->delivery_rate * k);
		probe_rec__f64(&r, m->pacing * k);
		probe_rec__f64(&r, m->max_pacing * k);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_SRTT) {
		rec_keys(&r, &TBL_tcp_srtt, g, cip, sip);
		probe_rec__u64(&r, g->syn_srtt_last);
		gg_hist_rec(&r, t.syn_hist, RTT_FIRST, RTT_N, 1.0, (double)t.syn_sum);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_SOCKBUF) {
		rec_keys(&r, &TBL_tcp_sockbuf, g, cip, sip);
		probe_rec__f64(&r, m->errq * k);
		probe_rec__f64(&r, m->rcvq * k);
		probe_rec__f64(&r, m->wrq * k);
		probe_rec__f64(&r, m->backlog * k);
		probe_rec__f64(&r, m->omem * k);
		probe_rec__f64(&r, m->fwd > 0 ? m->fwd * k : 0);
		probe_rec__f64(&r, m->wmem * k);
		probe_rec__f64(&r, m->rmem > 0 ? m->rmem * k : 0);
		probe_rec__f64(&r, m->rcvbuf * k);
		probe_rec__f64(&r, m->sndbuf * k);
		probe_rec__u64(&r, t.rcvq_full);
		probe_rec__u64(&r, t.sndbuf_limit);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_DELAY) {
		rec_keys(&r, &TBL_tcp_delay, g, cip, sip);
		gg_hist_rec(&r, t.rx_delay_hist, DELAY_FIRST, DELAY_N, 1.0, (double)t.rx_delay_sum);
		gg_hist_rec(&r, t.tx_delay_hist, DELAY_FIRST, DELAY_N, 1.0, (double)t.tx_delay_sum);
		n += emit(ctx->rt, &r);
	}
	if (sp & TCP_SP_ABNORMAL) {
		rec_keys(&r, &TBL_tcp_abn, g, cip, sip);
		probe_rec__u64(&r, t.retrans);
		probe_rec__u64(&r, t.syn_retrans);
		probe_rec__u64(&r, t.sk_drops);
		probe_rec__u64(&r, t.drops);
		probe_rec__u64(&r, t.drops_backlog);
		probe_rec__u64(&r, t.drops_filter);
		probe_rec__u64(&r, t.drops_rmem);
		probe_rec__f64(&r, m->lost_out * k);
		probe_rec__f64(&r, m->sacked_out * k);
		probe_rec__u64(&r, t.send_rsts);
		probe_rec__u64(&r, t.recv_rsts);
		probe_rec__f64(&r, m->sk_err);
		probe_rec__f64(&r, m->sk_err_soft);
		n += emit(ctx->rt, &r);
	}
	/* Events: retransmits + drops in the period past drops_thr; mean srtt past latency_thr. */
	{
		uint64_t abn = t.retrans + t.drops, delta = g->have_prev && abn > g->prev_abn ? abn - g->prev_abn : 0;
		double srtt_ms = m->srtt * k / 1000.0;
		char body[160], body_zh[200];

		if (ctx->conf->drops_thr && (sp & TCP_SP_ABNORMAL) && delta >= ctx->conf->drops_thr) {
			snprintf(body, sizeof(body),
				 "TCP link retransmitted or dropped %llu packets in the last period (drops_thr %u).",
				 (unsigned long long)delta, ctx->conf->drops_thr);
			snprintf(body_zh, sizeof(body_zh), "TCP 链路上一周期重传或丢弃 %llu 个报文（阈值 %u）。",
				 (unsigned long long)delta, ctx->conf->drops_thr);
			n += link_event(ctx, g, cip, sip, "retran_packets", body, body_zh);
		}
		if (ctx->conf->latency_thr && (sp & TCP_SP_RTT) && g->seen_period &&
		    srtt_ms >= ctx->conf->latency_thr) {
			snprintf(body, sizeof(body), "TCP link smoothed RTT is %.1f ms (latency_thr %u ms).", srtt_ms,
				 ctx->conf->latency_thr);
			snprintf(body_zh, sizeof(body_zh), "TCP 链路平滑 RTT 为 %.1f 毫秒（阈值 %u 毫秒）。", srtt_ms,
				 ctx->conf->latency_thr);
			n += link_event(ctx, g, cip, sip, "srtt", body, body_zh);
		}
		g->prev_abn = abn;
		g->have_prev = 1;
	}
	return n;
}

unsigned int tp_aggs__report(struct tp_aggs *a, const struct tp_report_ctx *ctx)
{
	unsigned int n = 0;

	for (unsigned int b = 0; b < AGG_BUCKETS; b++) {
		struct tp_agg **pp = &a->buckets[b];

		while (*pp) {
			struct tp_agg *g = *pp;

			if (g->acc.n) {
				g->last = g->acc;
				g->have_last = 1;
			}
			if (g->seen_period)
				g->idle = 0;
			else if (++g->idle > IDLE_PERIODS_MAX) {
				*pp = g->next;
				a->count--;
				free(g);
				continue;
			}
			n += agg_report(ctx, g);
			memset(&g->live, 0, sizeof(g->live));
			memset(&g->acc, 0, sizeof(g->acc));
			g->nlive = 0;
			g->seen_period = 0;
			pp = &g->next;
		}
	}
	return n;
}
