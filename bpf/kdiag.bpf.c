/* kdiag.bpf.c - kdiag's kernel half: packet drops with reason, flow and kernel stack (tp_btf/kfree_skb),
 * hard and soft interrupt time and softirq raise->entry delay per CPU and vector (irq:*), and the time a
 * received packet waits for the application's read (netif_receive_skb -> skb_copy_datagram_iovec). Only
 * tracepoints: the kernels we run on offer neither kprobes nor fentry. */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "kdiag.h"

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP     0x0800
#define ETH_P_IPV6   0x86DD
#define NSEC_PER_SEC 1000000000ull

/* Written by user space while the programs run (live configuration). */
struct kd_conf kd_conf = {};

/* The per-second cap's window (racy updates across CPUs only blur the window's edge). */
__u64 kd_win_start = 0;
__u32 kd_win_count = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 512 * 1024);
} kd_events SEC(".maps");

GG_MAP(kd_ev_stats, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct kd_ev_stat, KD_EV_KINDS, 0);

/* Drops by reason since the start (index: reason, the last slot for larger values). */
GG_MAP(kd_reasons, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, KD_REASON_SLOTS, 0);

/* Drops by flow and reason since the last report (user space reads and deletes them). */
GG_MAP(kd_flows, BPF_MAP_TYPE_HASH, struct kd_drop_key, struct kd_drop_val, KD_FLOW_MAP_MAX, 0);

/* Drops that found kd_flows full, by reason slot (they are in kd_reasons too). */
GG_MAP(kd_flow_full, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, KD_REASON_SLOTS, 0);

/* ---- interrupts ---- */

GG_MAP(kd_irq_hist, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct kd_hist, KD_IRQ_ROWS, 0);

GG_MAP(kd_hardirq, BPF_MAP_TYPE_PERCPU_HASH, __u32, struct kd_hardirq_val, KD_HARDIRQ_MAX, 0);

/* Per CPU: when each softirq vector was first raised while not pending, when it entered, and when the
 * running hard interrupt handler did. */
struct kd_irq_state {
	__u64 raise[KD_NR_SOFTIRQ];
	__u64 entry[KD_NR_SOFTIRQ];
	__u64 hard_entry;
	__s32 hard_irq;
	__u32 pad;
};

GG_MAP(kd_irq_state, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct kd_irq_state, 1, 0);

/* ---- receive latency ---- */

struct kd_rx_ts {
	__u64 ts;
	__u64 head; /* the skb's data buffer: a reused sk_buff with another buffer is not this packet */
};

GG_MAP(kd_rx_ts, BPF_MAP_TYPE_LRU_HASH, __u64, struct kd_rx_ts, KD_RX_TS_MAX, 0);

GG_MAP(kd_rl, BPF_MAP_TYPE_HASH, struct kd_flow, struct kd_rl_val, KD_RL_MAP_MAX, 0);

__u64 kd_rl_full = 0; /* reads not counted: kd_rl was full */

/* scratch for building keys and values bigger than the stack likes */
struct kd_scratch {
	struct kd_drop_key dk;
	struct kd_rl_val rv;
};

GG_MAP(kd_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct kd_scratch, 1, 0);

/* ---- helpers ---- */

static __always_inline void hist_add(struct kd_hist *h, __u64 ns)
{
	h->slots[gg_log2_slot(ns) & (GG_LOG2_SLOTS - 1)]++;
	h->sum_ns += ns;
	h->count++;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

static __always_inline void ev_count(__u32 kind, int field)
{
	struct kd_ev_stat *st = bpf_map_lookup_elem(&kd_ev_stats, &kind);

	if (!st)
		return;
	if (field == 0)
		st->sent++;
	else if (field == 1)
		st->capped++;
	else
		st->lost++;
}

/* A ring buffer record for an event of kind, within the per-second cap; NULL when capped or full
 * (counted either way). */
static __always_inline struct kd_event *ev_reserve(__u32 kind, __u64 now)
{
	__u32 cap = kd_conf.events_per_sec;
	struct kd_event *e;

	if (now - kd_win_start >= NSEC_PER_SEC) {
		kd_win_start = now;
		kd_win_count = 0;
	} else if (kd_win_count >= cap) {
		ev_count(kind, 1); /* over the cap: no atomic on the shared counter */
		return NULL;
	}
	/* (the value the add returns needs BPF v3; reading it back is as good for a cap) */
	__sync_fetch_and_add(&kd_win_count, 1);
	if (kd_win_count > cap) {
		ev_count(kind, 1);
		return NULL;
	}
	e = bpf_ringbuf_reserve(&kd_events, sizeof(*e), 0);
	if (!e) {
		ev_count(kind, 2);
		return NULL;
	}
	ev_count(kind, 0);
	e->kind = kind;
	e->cpu = bpf_get_smp_processor_id();
	e->ts_ns = now;
	e->value_ns = 0;
	e->reason = e->vec = e->irq = 0;
	e->tgid = gg_current_tgid();
	e->location = e->cgid = 0;
	e->ifindex = 0;
	e->nstack = 0;
	__builtin_memset(&e->flow, 0, sizeof(e->flow));
	__builtin_memset(e->name, 0, sizeof(e->name));
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	return e;
}

/* An event of kind for a duration of d ns at now, when a threshold is set (thr, ns) and d reaches it:
 * reserved (ev_reserve) with its value set; NULL otherwise. */
static __always_inline struct kd_event *ev_over(__u32 kind, __u64 now, __u64 d, __u64 thr)
{
	struct kd_event *e;

	if (!thr || d < thr)
		return NULL;
	e = ev_reserve(kind, now);
	if (e)
		e->value_ns = d;
	return e;
}

/* Send e with the kernel stack of ctx. */
static __always_inline void ev_submit_stack(void *ctx, struct kd_event *e)
{
	e->nstack = bpf_get_stack(ctx, e->stack, sizeof(e->stack), 0);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline __u32 net_inum(const struct net *net)
{
	return net ? net->ns.inum : 0;
}

/* The first bytes at the network header: an IPv6 header and the ports after it, or an IPv4 header with up
 * the ports (IPv4 options are rare: then the ports take a second read). */
struct kd_hdr {
	union {
		struct iphdr ip;
		struct ipv6hdr ip6;
		__u8 b[48];
	};
};

/* The flow of an skb from its network header (set on both the receive and the send path once IP has
 * seen it); skb is a BTF pointer (tp_btf): its fields are direct loads, only the packet is read by helper,
 * once. 0, or -1 when it is not IP or the header is not set. */
static __always_inline int skb_flow(const struct sk_buff *skb, struct kd_flow *f)
{
	unsigned char *head = skb->head;
	__u16 nh = skb->network_header;
	struct kd_hdr h;
	__u32 l4 = 0;
	__u16 ports[2] = {0, 0};

	if (!head || nh == (__u16)~0U || bpf_probe_read_kernel(&h, sizeof(h), head + nh))
		return -1;
	if (h.ip.version == 4) {
		f->family = AF_INET;
		__builtin_memcpy(f->saddr, &h.ip.saddr, 4);
		__builtin_memcpy(f->daddr, &h.ip.daddr, 4);
		f->proto = h.ip.protocol;
		/* fragments after the first carry no ports */
		if (!(bpf_ntohs(h.ip.frag_off) & 0x1FFF))
			l4 = h.ip.ihl * 4;
	} else if (h.ip.version == 6) {
		f->family = AF_INET6;
		__builtin_memcpy(f->saddr, &h.ip6.saddr, 16);
		__builtin_memcpy(f->daddr, &h.ip6.daddr, 16);
		f->proto = h.ip6.nexthdr; /* extension headers are not walked: their packets count without ports */
		l4 = sizeof(struct ipv6hdr);
	} else {
		return -1;
	}
	if (!l4 || (f->proto != IPPROTO_TCP && f->proto != IPPROTO_UDP && f->proto != IPPROTO_SCTP))
		return 0;
	/* constant offsets in the copy (the usual cases); otherwise one more read */
	if (l4 == 20) {
		__builtin_memcpy(ports, &h.b[20], 4);
	} else if (l4 == 40) {
		__builtin_memcpy(ports, &h.b[40], 4);
	} else if (bpf_probe_read_kernel(ports, sizeof(ports), head + nh + l4)) {
		return 0;
	}
	f->sport = bpf_ntohs(ports[0]);
	f->dport = bpf_ntohs(ports[1]);
	return 0;
}

static __always_inline int addr_eq(const __u8 *a, const __u8 *b, int n)
{
	for (int i = 0; i < 16; i++)
		if (i < n && a[i] != b[i])
			return 0;
	return 1;
}

/* The port/address filter of kd_conf. */
static __always_inline int flow_passes(const struct kd_flow *f)
{
	__u16 port = kd_conf.port;
	__u8 af = kd_conf.addr_family;

	if (port && f->sport != port && f->dport != port)
		return 0;
	if (af) {
		int n = af == AF_INET ? 4 : 16;

		if (f->family != af)
			return 0;
		if (!addr_eq(f->saddr, (const __u8 *)kd_conf.addr, n) &&
		    !addr_eq(f->daddr, (const __u8 *)kd_conf.addr, n))
			return 0;
	}
	return 1;
}

/* ---- drops ---- */

SEC("tp_btf/kfree_skb")
int BPF_PROG(kd_kfree_skb, struct sk_buff *skb, void *location, enum skb_drop_reason reason, struct sock *rx_sk)
{
	__u32 slot = reason < KD_REASON_SLOTS ? reason : KD_REASON_SLOTS - 1;
	struct kd_scratch *s;
	struct kd_drop_val *v, nv = {};
	struct sock *sk;
	struct net_device *dev;
	__u64 *cnt, now;
	struct kd_event *e;

	/* consume_skb-like frees (SKB_CONSUMED) are not drops */
	if (reason == SKB_CONSUMED || !(kd_conf.subprobes & KD_SP_DROP))
		return 0;
	if (kd_conf.filter_reason && reason != kd_conf.reason)
		return 0;
	s = gg_map_elem0(&kd_scratch);
	if (!s)
		return 0;
	__builtin_memset(&s->dk, 0, sizeof(s->dk));
	(void)skb_flow(skb, &s->dk.flow);
	if (!flow_passes(&s->dk.flow))
		return 0;
	sk = rx_sk ? rx_sk : skb->sk;
	dev = skb->dev;
	if (sk)
		s->dk.flow.netns = net_inum(sk->__sk_common.skc_net.net);
	if (!s->dk.flow.netns && dev)
		s->dk.flow.netns = net_inum(dev->nd_net.net);
	s->dk.flow.dir = skb->skb_iif ? KD_DIR_IN : KD_DIR_OUT;
	s->dk.reason = reason;

	cnt = bpf_map_lookup_elem(&kd_reasons, &slot);
	if (cnt)
		(*cnt)++;
	nv.cgid = sk ? gg_sk_cgroup_id_btf(sk) : 0;
	v = bpf_map_lookup_elem(&kd_flows, &s->dk);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		if (nv.cgid)
			v->cgid = nv.cgid;
	} else {
		nv.count = 1;
		if (bpf_map_update_elem(&kd_flows, &s->dk, &nv, BPF_NOEXIST)) {
			v = bpf_map_lookup_elem(&kd_flows, &s->dk); /* another CPU added it meanwhile */
			if (v) {
				__sync_fetch_and_add(&v->count, 1);
			} else {
				cnt = bpf_map_lookup_elem(&kd_flow_full, &slot);
				if (cnt)
					(*cnt)++;
			}
		}
	}

	now = bpf_ktime_get_ns();
	e = ev_reserve(KD_EV_DROP, now);
	if (!e)
		return 0;
	e->reason = reason;
	e->location = (__u64)location;
	e->cgid = nv.cgid;
	e->ifindex = dev ? dev->ifindex : 0;
	e->flow = s->dk.flow;
	ev_submit_stack(ctx, e);
	return 0;
}

/* ---- interrupts ---- */

static __always_inline void irq_hist(__u32 row, __u64 ns)
{
	struct kd_hist *h = bpf_map_lookup_elem(&kd_irq_hist, &row);

	if (h)
		hist_add(h, ns); /* per-CPU value, updated only from its own CPU with interrupts off */
}

/* A zeroed kd_hardirq value to insert (too big for the stack), from a per-CPU scratch slot. */
GG_MAP(kd_hardirq_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct kd_hardirq_val, 1, 0);

static __always_inline struct kd_hardirq_val *kd_hardirq_zero(void)
{
	struct kd_hardirq_val *z = gg_map_elem0(&kd_hardirq_scratch);

	if (z)
		__builtin_memset(z, 0, sizeof(*z));
	return z;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(kd_irq_entry, int irq, struct irqaction *action)
{
	struct kd_irq_state *st = gg_map_elem0(&kd_irq_state);

	if (st) {
		st->hard_entry = bpf_ktime_get_ns();
		st->hard_irq = irq;
	}
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(kd_irq_exit, int irq, struct irqaction *action, int ret)
{
	struct kd_irq_state *st = gg_map_elem0(&kd_irq_state);
	struct kd_hardirq_val *line;
	struct kd_event *e;
	__u32 key = (__u32)irq;
	__u64 now, d;

	if (!st || !st->hard_entry || st->hard_irq != irq)
		return 0;
	now = bpf_ktime_get_ns();
	d = now - st->hard_entry;
	st->hard_entry = 0;
	irq_hist(KD_VEC_HARDIRQ, d);
	line = bpf_map_lookup_elem(&kd_hardirq, &key);
	if (!line) {
		struct kd_hardirq_val *z = kd_hardirq_zero();

		if (z) {
			bpf_probe_read_kernel_str(z->name, sizeof(z->name), action->name);
			bpf_map_update_elem(&kd_hardirq, &key, z, BPF_NOEXIST);
			line = bpf_map_lookup_elem(&kd_hardirq, &key);
		}
	}
	if (line)
		hist_add(&line->h, d); /* this CPU's value, interrupts off */
	e = ev_over(KD_EV_IRQ, now, d, kd_conf.irq_thr_ns);
	if (!e)
		return 0;
	e->vec = KD_VEC_HARDIRQ;
	e->irq = irq;
	bpf_probe_read_kernel_str(e->name, sizeof(e->name), action->name);
	ev_submit_stack(ctx, e);
	return 0;
}

SEC("tp_btf/softirq_raise")
int BPF_PROG(kd_softirq_raise, unsigned int vec)
{
	struct kd_irq_state *st = gg_map_elem0(&kd_irq_state);

	/* the first raise while not pending: later raises join the same run */
	if (st && vec < KD_NR_SOFTIRQ && !st->raise[vec])
		st->raise[vec] = bpf_ktime_get_ns();
	return 0;
}

/* A span of softirq vec that began at *start ends at now: *start is cleared, the span counted in
 * histogram row and, at *thr_ns or more, sent as an event of kind with the stack. The raise -> entry
 * delay and the entry -> exit run differ only in these. thr_ns is a pointer so that the threshold is
 * read after the histogram, where the event is decided (by value it was loaded first: 3 instructions more). */
static __always_inline void sirq_span(void *ctx, __u64 *start, __u64 now, __u32 row, unsigned int vec, __u32 kind,
				      const __u64 *thr_ns)
{
	__u64 d = now - *start;
	struct kd_event *e;

	*start = 0;
	irq_hist(row, d);
	e = ev_over(kind, now, d, *thr_ns);
	if (!e)
		return;
	e->vec = vec;
	ev_submit_stack(ctx, e);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(kd_softirq_entry, unsigned int vec)
{
	struct kd_irq_state *st = gg_map_elem0(&kd_irq_state);
	__u64 now;

	if (!st || vec >= KD_NR_SOFTIRQ)
		return 0;
	now = bpf_ktime_get_ns();
	st->entry[vec] = now;
	if (!st->raise[vec])
		return 0; /* raised before we attached */
	sirq_span(ctx, &st->raise[vec], now, KD_NVEC + vec, vec, KD_EV_SIRQ_DELAY, &kd_conf.sirq_delay_thr_ns);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(kd_softirq_exit, unsigned int vec)
{
	struct kd_irq_state *st = gg_map_elem0(&kd_irq_state);

	if (!st || vec >= KD_NR_SOFTIRQ || !st->entry[vec])
		return 0;
	sirq_span(ctx, &st->entry[vec], bpf_ktime_get_ns(), vec, vec, KD_EV_IRQ, &kd_conf.irq_thr_ns);
	return 0;
}

/* ---- receive latency ---- */

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(kd_netif_receive_skb, struct sk_buff *skb)
{
	struct kd_rx_ts v;
	__u64 key = (__u64)skb;

	v.ts = bpf_ktime_get_ns();
	v.head = (__u64)skb->head;
	bpf_map_update_elem(&kd_rx_ts, &key, &v, BPF_ANY);
	return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(kd_skb_copy, const struct sk_buff *skb, int len)
{
	__u64 key = (__u64)skb, now, d;
	struct kd_rx_ts *ts = bpf_map_lookup_elem(&kd_rx_ts, &key);
	struct kd_scratch *s;
	struct kd_rl_val *v;
	struct kd_event *e;
	struct task_struct *task;

	if (!ts)
		return 0;
	if (ts->head != (__u64)skb->head) {
		bpf_map_delete_elem(&kd_rx_ts, &key);
		return 0;
	}
	now = bpf_ktime_get_ns();
	d = now - ts->ts;
	/* the first read of a packet is its latency; later reads of the same skb (partial reads) are not */
	bpf_map_delete_elem(&kd_rx_ts, &key);
	s = gg_map_elem0(&kd_scratch);
	if (!s)
		return 0;
	__builtin_memset(&s->dk, 0, sizeof(s->dk));
	if (skb_flow(skb, &s->dk.flow) || !flow_passes(&s->dk.flow))
		return 0;
	task = bpf_get_current_task_btf();
	s->dk.flow.netns = task->nsproxy ? net_inum(task->nsproxy->net_ns) : 0;
	s->dk.flow.dir = KD_DIR_IN;
	v = bpf_map_lookup_elem(&kd_rl, &s->dk.flow);
	if (!v) {
		__builtin_memset(&s->rv, 0, sizeof(s->rv));
		s->rv.tgid = gg_current_tgid();
		s->rv.cgid = bpf_get_current_cgroup_id();
		bpf_map_update_elem(&kd_rl, &s->dk.flow, &s->rv, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&kd_rl, &s->dk.flow);
		if (!v) {
			__sync_fetch_and_add(&kd_rl_full, 1);
			return 0;
		}
	}
	/* one flow is read by its own socket's readers: concurrent updates are rare, a lost one harmless */
	hist_add(&v->h, d);
	e = ev_over(KD_EV_RECVLAT, now, d, kd_conf.recv_lat_thr_ns);
	if (!e)
		return 0;
	e->flow = s->dk.flow;
	e->cgid = v->cgid;
	e->nstack = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
