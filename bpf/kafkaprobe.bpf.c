/* kafkaprobe.bpf.c - kafkaprobe's kernel half: an XDP program on one device that follows each TCP flow
 * to the Kafka port (IPv4 and IPv6) from request to request: a request starts 4 + its size prefix after
 * the previous one, so every request start in a segment is found, wherever TCP put it, and its first
 * bytes are copied into a ring buffer (the 4-tuple, the start's sequence number, up to KP_CAP bytes).
 * Always XDP_PASS: packets are never changed or dropped. */
#include "vmlinux.h"

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "kafkaprobe.h"

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP_     0x0800
#define ETH_P_IPV6_   0x86DD
#define IPPROTO_TCP_  6
#define KP_RING_BYTES (4 * 1024 * 1024)

/* the Kafka port, set before load */
const volatile __u16 kp_port = 9092;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KP_RING_BYTES);
} kp_events SEC(".maps");

/* Flows (LRU: a flow closed without a FIN or RST seen ages out). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct kp_fkey);
	__type(value, struct kp_flow);
} kp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KP_ST_MAX);
	__type(key, __u32);
	__type(value, __u64);
} kp_stats SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&kp_stats, &i);

	if (v)
		*v += 1;
}

/* Whether a segment of a flow whose place is not known starts with what looks like a request header: a
 * sane size, an api key and a version Kafka has. */
static __always_inline int plausible(struct xdp_md *ctx, __u32 off, __u32 len)
{
	__u8 h[8];
	__u32 size;
	__u16 key, ver;

	if (len < 8 || bpf_xdp_load_bytes(ctx, off, h, sizeof(h)))
		return 0;
	size = (__u32)h[0] << 24 | (__u32)h[1] << 16 | (__u32)h[2] << 8 | h[3];
	key = (__u16)(h[4] << 8 | h[5]);
	ver = (__u16)(h[6] << 8 | h[7]);
	return size >= 8 && size <= KP_REQ_MAX && key <= 80 && ver <= 20;
}

/* The request starting at payload offset off (rest: the segment's bytes from there): its flow, sequence
 * number and first bytes into the ring. */
static __always_inline void emit(struct xdp_md *ctx, const struct kp_fkey *k, __u32 seq, __u32 off, __u32 rest)
{
	struct kp_pkt *r = bpf_ringbuf_reserve(&kp_events, sizeof(*r), 0);
	__u64 n;

	if (!r) {
		count(KP_ST_RB_LOST);
		return;
	}
	r->family = k->family;
	r->flags = KP_F_START;
	r->sport = k->sport;
	r->dport = kp_port;
	r->pad = 0;
	r->seq = seq;
	r->payload_len = rest;
	__builtin_memcpy(r->saddr, k->saddr, 16);
	__builtin_memcpy(r->daddr, k->daddr, 16);
	/* 1..KP_CAP bytes, said by arithmetic the verifier follows (rest >= 4 here) */
	n = (((__u64)rest - 1) & (KP_CAP - 1)) + 1;
	if (rest > KP_CAP)
		n = KP_CAP;
	r->cap_len = bpf_xdp_load_bytes(ctx, off, r->data, n) ? 0 : (__u32)n;
	/* user space drains the ring every 200 ms: woken only once a quarter of it is waiting (a wake-up per
	 * record is an irq_work and a reader's wake-up each) */
	bpf_ringbuf_submit(r, bpf_ringbuf_query(&kp_events, BPF_RB_AVAIL_DATA) > KP_RING_BYTES / 4 ? BPF_RB_FORCE_WAKEUP
												   : BPF_RB_NO_WAKEUP);
}

static __always_inline void lost(struct kp_flow *f)
{
	f->synced = 0;
	count(KP_ST_RESYNC);
}

/* Every request start in the segment [seq, seq + len) of payload offset off, from f->next on. */
static __always_inline void starts(struct xdp_md *ctx, struct kp_flow *f, const struct kp_fkey *k, __u32 seq, __u32 off,
				   __u32 len)
{
	for (int i = 0; i < KP_STARTS_MAX; i++) {
		__u32 d = f->next - seq, size;

		if (d >= len)
			return; /* the next request starts in a later segment */
		if (len - d < 4 || bpf_xdp_load_bytes(ctx, off + d, &size, sizeof(size))) {
			lost(f); /* its size prefix continues in the next segment */
			return;
		}
		size = bpf_ntohl(size);
		if (size < 8 || size > KP_REQ_MAX) {
			lost(f);
			return;
		}
		emit(ctx, k, f->next, off + d, len - d);
		f->next += 4 + size;
	}
	if (f->next - seq < len)
		lost(f); /* more starts than followed in one segment */
}

SEC("xdp")
int kp_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 l4, ip_end, pkt_len = bpf_xdp_get_buff_len(ctx), payload_off, payload_len, seq;
	struct kp_fkey k = {};
	struct kp_flow *f;
	struct tcphdr *tcp;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP_)) {
		struct iphdr *ip = (void *)(eth + 1);
		__u32 tot;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP_ || ip->ihl < 5 ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return XDP_PASS;
		l4 = sizeof(*eth) + ip->ihl * 4;
		tot = bpf_ntohs(ip->tot_len);
		ip_end = tot ? sizeof(*eth) + tot : pkt_len; /* 0: BIG TCP */
		__builtin_memcpy(k.saddr, &ip->saddr, 4);
		__builtin_memcpy(k.daddr, &ip->daddr, 4);
		k.family = 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6_)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u32 plen;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP_)
			return XDP_PASS;
		l4 = sizeof(*eth) + sizeof(*ip6);
		plen = bpf_ntohs(ip6->payload_len);
		ip_end = plen ? l4 + plen : pkt_len; /* 0: a jumbogram / BIG TCP */
		__builtin_memcpy(k.saddr, &ip6->saddr, 16);
		__builtin_memcpy(k.daddr, &ip6->daddr, 16);
		k.family = 6;
	} else {
		return XDP_PASS;
	}
	if (l4 > 256)
		return XDP_PASS;
	tcp = data + l4;
	if ((void *)(tcp + 1) > end || tcp->dest != bpf_htons(kp_port) || tcp->doff < 5)
		return XDP_PASS;
	k.sport = bpf_ntohs(tcp->source);
	seq = bpf_ntohl(tcp->seq);
	if (tcp->syn) { /* the first request starts right after the SYN */
		struct kp_flow nf = {.next = seq + 1, .hi = seq + 1, .synced = 1};

		bpf_map_update_elem(&kp_flows, &k, &nf, BPF_ANY);
		return XDP_PASS;
	}
	if (ip_end > pkt_len)
		ip_end = pkt_len;
	payload_off = l4 + tcp->doff * 4;
	payload_len = ip_end > payload_off ? ip_end - payload_off : 0;
	if (payload_len) {
		count(KP_ST_PKTS);
		f = bpf_map_lookup_elem(&kp_flows, &k);
		if (!f) { /* a flow that began before the probe, or aged out */
			struct kp_flow nf = {};

			bpf_map_update_elem(&kp_flows, &k, &nf, BPF_NOEXIST);
			f = bpf_map_lookup_elem(&kp_flows, &k);
		}
		if (!f)
			return XDP_PASS;
		if (f->synced) {
			if ((__s32)(seq + payload_len - f->hi) <= 0)
				goto out; /* a retransmission of what was seen */
			if ((__s32)(f->next - seq) < 0)
				lost(f); /* the next request started in bytes not seen */
		}
		if (!f->synced) {
			if (!plausible(ctx, payload_off, payload_len)) {
				count(KP_ST_UNSYNCED);
				f->hi = seq + payload_len;
				goto out;
			}
			f->next = seq;
			f->synced = 1;
		}
		f->hi = seq + payload_len;
		starts(ctx, f, &k, seq, payload_off, payload_len);
	}
out:
	if (tcp->fin || tcp->rst)
		bpf_map_delete_elem(&kp_flows, &k);
	return XDP_PASS;
}
