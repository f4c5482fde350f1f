/* kafkaprobe.bpf.c - kafkaprobe's kernel half: an XDP program on one device that copies every TCP
 * segment to the Kafka port (IPv4 and IPv6: 4-tuple, sequence number, a prefix of the payload; SYN,
 * FIN and RST without payload too) into a ring buffer. Always XDP_PASS: packets are never changed or
 * dropped. */
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

SEC("xdp")
int kp_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 l4, ip_end, pkt_len = bpf_xdp_get_buff_len(ctx), payload_off, payload_len, cap;
	unsigned char saddr[16] = {}, daddr[16] = {};
	struct tcphdr *tcp;
	struct kp_pkt *r;
	__u8 family, flags = 0;

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
		__builtin_memcpy(saddr, &ip->saddr, 4);
		__builtin_memcpy(daddr, &ip->daddr, 4);
		family = 4;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6_)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u32 plen;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP_)
			return XDP_PASS;
		l4 = sizeof(*eth) + sizeof(*ip6);
		plen = bpf_ntohs(ip6->payload_len);
		ip_end = plen ? l4 + plen : pkt_len; /* 0: a jumbogram / BIG TCP */
		__builtin_memcpy(saddr, &ip6->saddr, 16);
		__builtin_memcpy(daddr, &ip6->daddr, 16);
		family = 6;
	} else {
		return XDP_PASS;
	}
	if (l4 > 256)
		return XDP_PASS;
	tcp = data + l4;
	if ((void *)(tcp + 1) > end || tcp->dest != bpf_htons(kp_port) || tcp->doff < 5)
		return XDP_PASS;
	if (ip_end > pkt_len)
		ip_end = pkt_len;
	payload_off = l4 + tcp->doff * 4;
	payload_len = ip_end > payload_off ? ip_end - payload_off : 0;
	if (tcp->syn)
		flags |= KP_F_SYN;
	if (tcp->fin || tcp->rst)
		flags |= KP_F_END;
	if (!payload_len && !flags)
		return XDP_PASS;
	if (payload_len)
		count(KP_ST_PKTS);
	r = bpf_ringbuf_reserve(&kp_events, sizeof(*r), 0);
	if (!r) {
		count(KP_ST_RB_LOST);
		return XDP_PASS;
	}
	r->family = family;
	r->flags = flags;
	r->sport = bpf_ntohs(tcp->source);
	r->dport = kp_port;
	r->pad = 0;
	r->seq = bpf_ntohl(tcp->seq);
	r->payload_len = payload_len;
	__builtin_memcpy(r->saddr, saddr, 16);
	__builtin_memcpy(r->daddr, daddr, 16);
	cap = payload_len;
	if (cap > KP_CAP) {
		cap = KP_CAP;
		count(KP_ST_CUT);
	}
	r->cap_len = 0;
	if (cap >= 1) {
		/* cap is 1..KP_CAP already; said by arithmetic the verifier follows (the compiler turns range
		 * tests into forms it does not) */
		__u64 n = ((__u64)cap - 1) & (KP_CAP - 1);

		n += 1;
		if (bpf_xdp_load_bytes(ctx, payload_off, r->data, n) == 0)
			r->cap_len = n;
	}
	/* user space drains the ring every 200 ms: woken only once a quarter of it is waiting (a wake-up per
	 * segment is an irq_work and a reader's wake-up each) */
	bpf_ringbuf_submit(r, bpf_ringbuf_query(&kp_events, BPF_RB_AVAIL_DATA) > KP_RING_BYTES / 4 ? BPF_RB_FORCE_WAKEUP
												   : BPF_RB_NO_WAKEUP);
	return XDP_PASS;
}
