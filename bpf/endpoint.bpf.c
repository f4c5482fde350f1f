// SPDX-License-Identifier: GPL-2.0
/* endpoint.bpf.c - endpoint's kernel half: listening sockets (opens, drops, accept/SYN queue
 * overflow, SYN-ACK retransmits), outgoing connects (opens, failures, latency), UDP sockets (bytes,
 * queueing drops) and socket-less drops, from tracepoints only plus a snapshot walk user space runs
 * once per report period (BPF_PROG_TEST_RUN). */
#include "vmlinux.h"

#include "endpoint.h"
#include "gg_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT	2
#define TCP_SYN_RECV	3
#define TCP_CLOSE	7
#define TCP_LISTEN	10
#define IPPROTO_TCP	6
#define IPPROTO_UDP	17
#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD

/* Drops not counted because ep_drops was full. */
__u64 ep_drops_lost;

/* Listeners, connect aggregates, UDP sockets and drop reasons change rarely: their maps allocate
 * entries as they fill (BPF_F_NO_PREALLOC) instead of holding every entry from the start (6 MiB);
 * ep_pending, one entry per connecting socket address, stays preallocated (its churn is per connection). */
struct listen_port_key {
	__u32 netns;
	__u16 port;
	__u16 pad;
};

GG_MAP(ep_listen, BPF_MAP_TYPE_HASH, __u64, struct ep_listen, EP_LISTEN_MAX, BPF_F_NO_PREALLOC);

/* A child socket only knows its port: find its listener by (netns, port). */
GG_MAP(ep_listen_port, BPF_MAP_TYPE_HASH, struct listen_port_key, __u64, EP_LISTEN_MAX, BPF_F_NO_PREALLOC);

GG_MAP(ep_connect, BPF_MAP_TYPE_HASH, struct ep_connect_key, struct ep_connect, EP_CONNECT_MAX, BPF_F_NO_PREALLOC);

/* Entries are not deleted when the handshake ends (start_ns = 0): socket structures are recycled by the
 * slab allocator, so the next connect is mostly a lookup and stores in place instead of a hash insert
 * and delete under the bucket lock (~30 % of ep_state in perf); LRU: addresses not reused age out.
 * (Socket-local storage instead was measured at twice ep_state's time: an allocation per socket.) */
GG_MAP(ep_pending, BPF_MAP_TYPE_LRU_HASH, __u64, struct ep_pending, EP_PENDING_MAX, 0);

GG_MAP(ep_udp, BPF_MAP_TYPE_HASH, __u64, struct ep_udp, EP_UDP_MAX, BPF_F_NO_PREALLOC);

GG_MAP(ep_drops, BPF_MAP_TYPE_HASH, struct ep_drop_key, __u64, EP_DROP_MAX, BPF_F_NO_PREALLOC);

/* New entries are built here (too large for the BPF stack). */
GG_MAP(ep_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct ep_listen, 1, 0);

/* sk is a BTF pointer in every caller of these (tp_btf programs): direct loads, no helper calls. */
static __always_inline __u32 sk_netns(const struct sock *sk)
{
	return sk->__sk_common.skc_net.net->ns.inum;
}

static __always_inline void local_addr(const struct sock *sk, __u8 *family, __u8 *addr, __u16 *port)
{
	*family = (__u8)sk->__sk_common.skc_family;
	*port = sk->__sk_common.skc_num;
	gg_sk_laddr_btf(sk, addr);
}

static __always_inline struct ep_listen *listener_of_child(const struct sock *child)
{
	struct listen_port_key pk = {.netns = sk_netns(child), .port = child->__sk_common.skc_num};
	__u64 *lsk = bpf_map_lookup_elem(&ep_listen_port, &pk);

	return lsk ? bpf_map_lookup_elem(&ep_listen, lsk) : NULL;
}

static __always_inline void on_listen(const struct sock *sk)
{
	struct listen_port_key pk = {.netns = sk_netns(sk), .port = sk->__sk_common.skc_num};
	__u64 key = bpf_get_socket_cookie((void *)sk); /* as ep_udp: a closed listener keeps its row */
	struct ep_listen *l;

	if (!gg_scope_current())
		return;
	l = gg_map_elem0(&ep_scratch);
	if (!l)
		return;
	__builtin_memset(l, 0, sizeof(*l));
	l->sk = (__u64)sk;
	l->cookie = key;
	l->cgroup_id = gg_sk_cgroup_id_btf(sk);
	l->tgid = gg_current_tgid();
	l->netns = pk.netns;
	bpf_get_current_comm(l->comm, sizeof(l->comm));
	local_addr(sk, &l->family, l->addr, &l->port);
	l->drops_seen = sk->sk_drops.counter;
	bpf_map_update_elem(&ep_listen, &key, l, BPF_ANY);
	bpf_map_update_elem(&ep_listen_port, &pk, &key, BPF_ANY);
}

static __always_inline void on_unlisten(const struct sock *sk)
{
	__u64 key = bpf_get_socket_cookie((void *)sk);
	struct ep_listen *l = bpf_map_lookup_elem(&ep_listen, &key);
	struct listen_port_key pk = {.netns = sk_netns(sk), .port = sk->__sk_common.skc_num};
	__u64 *owner;

	if (!l)
		return;
	l->flags |= EP_F_CLOSED;
	owner = bpf_map_lookup_elem(&ep_listen_port, &pk);
	if (owner && *owner == key)
		bpf_map_delete_elem(&ep_listen_port, &pk);
}

static __always_inline void on_connect_start(const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct ep_pending *p;
	__u32 tgid;

	if (!gg_scope_current())
		return;
	p = bpf_map_lookup_elem(&ep_pending, &key);
	if (!p) {
		struct ep_pending zero = {};

		bpf_map_update_elem(&ep_pending, &key, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&ep_pending, &key);
		if (!p)
			return;
	}
	tgid = gg_current_tgid();
	if (p->key.tgid != tgid || !p->comm[0]) {
		p->key.tgid = tgid;
		bpf_get_current_comm(p->comm, sizeof(p->comm));
	}
	p->syn_retrans = 0;
	p->key.family = (__u8)sk->__sk_common.skc_family;
	p->key.rport = bpf_ntohs(sk->__sk_common.skc_dport);
	__builtin_memset(p->key.raddr, 0, sizeof(p->key.raddr)); /* an IPv4 address fills 4 of them */
	gg_sk_raddr_btf(sk, p->key.raddr);
	p->cgroup_id = gg_sk_cgroup_id_btf(sk);
	p->start_ns = bpf_ktime_get_ns();
}

static __always_inline void on_connect_end(const struct sock *sk, int ok)
{
	__u64 key = (__u64)sk;
	struct ep_pending *p = bpf_map_lookup_elem(&ep_pending, &key);
	struct ep_connect *c;

	if (!p || !p->start_ns)
		return;
	c = bpf_map_lookup_elem(&ep_connect, &p->key);
	if (!c) {
		struct ep_connect *n = gg_map_elem0(&ep_scratch);

		if (!n)
			goto out;
		__builtin_memset(n, 0, sizeof(*n));
		__builtin_memcpy(n->comm, p->comm, sizeof(n->comm));
		n->cgroup_id = p->cgroup_id;
		bpf_map_update_elem(&ep_connect, &p->key, n, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&ep_connect, &p->key);
		if (!c)
			goto out;
	}
	__sync_fetch_and_add(&c->syn_retrans, p->syn_retrans);
	if (ok) {
		__u64 us = (bpf_ktime_get_ns() - p->start_ns) / 1000;

		__sync_fetch_and_add(&c->active_open, 1);
		__sync_fetch_and_add(&c->lat_sum_us, us);
		gg_hist_add(c->lat_hist, us);
	} else {
		__sync_fetch_and_add(&c->active_open_failed, 1);
	}
out:
	p->start_ns = 0; /* done: the entry waits for the next socket at this address */
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(ep_state, const struct sock *sk, const int oldstate, const int newstate)
{
	struct ep_listen *l;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	if (newstate == TCP_LISTEN) {
		on_listen(sk);
	} else if (oldstate == TCP_LISTEN) {
		on_unlisten(sk);
	} else if (newstate == TCP_SYN_SENT) {
		on_connect_start(sk);
	} else if (oldstate == TCP_SYN_SENT) {
		on_connect_end(sk, newstate == TCP_ESTABLISHED);
	} else if (oldstate == TCP_SYN_RECV) {
		l = listener_of_child(sk);
		if (!l)
			return 0;
		if (newstate == TCP_ESTABLISHED) {
			const struct sock *lsk = (const struct sock *)l->sk;
			const struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);
			__u32 us = tp ? tp->srtt_us >> 3 : 0;

			__sync_fetch_and_add(&l->passive_open, 1);
			__sync_fetch_and_add(&l->hs_sum_us, us);
			gg_hist_add(l->hs_hist, us);
			/* The child is in the accept queue now: note when that made it full. */
			if (BPF_CORE_READ(lsk, sk_ack_backlog) > BPF_CORE_READ(lsk, sk_max_ack_backlog))
				l->flags |= EP_F_ACCEPTQ_FULL;
		} else if (newstate == TCP_CLOSE) {
			__sync_fetch_and_add(&l->passive_open_failed, 1);
		}
	}
	return 0;
}

SEC("tp_btf/tcp_retransmit_synack")
int BPF_PROG(ep_synack_retrans, const struct sock *sk, const struct request_sock *req)
{
	__u64 key = bpf_get_socket_cookie((void *)sk);
	struct ep_listen *l = bpf_map_lookup_elem(&ep_listen, &key);

	if (l)
		__sync_fetch_and_add(&l->retran_synacks, 1);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(ep_retrans, const struct sock *sk, const struct sk_buff *skb)
{
	__u64 key = (__u64)sk;
	struct ep_pending *p;

	if (sk->__sk_common.skc_state != TCP_SYN_SENT)
		return 0;
	p = bpf_map_lookup_elem(&ep_pending, &key);
	if (p && p->start_ns)
		__sync_fetch_and_add(&p->syn_retrans, 1);
	return 0;
}

/* ---- UDP ------------------------------------------------------------------------------------ */

/* Keyed by the socket's cookie, not its address: a closed socket's entry waits for the next report,
 * and a new socket at the same address (slab reuse, common under UDP churn) must not add its traffic
 * to the old one's row. */
static __always_inline struct ep_udp *udp_entry(const struct sock *sk)
{
	__u64 key = bpf_get_socket_cookie((void *)sk);
	struct ep_udp *u = bpf_map_lookup_elem(&ep_udp, &key);

	if (u)
		return u;
	if (!gg_scope_current())
		return NULL;
	u = gg_map_elem0(&ep_scratch);
	if (!u)
		return NULL;
	__builtin_memset(u, 0, sizeof(*u));
	u->sk = (__u64)sk;
	u->cookie = key;
	u->cgroup_id = gg_sk_cgroup_id_btf(sk);
	u->tgid = gg_current_tgid();
	bpf_get_current_comm(u->comm, sizeof(u->comm));
	local_addr(sk, &u->family, u->addr, &u->port);
	bpf_map_update_elem(&ep_udp, &key, u, BPF_NOEXIST);
	return bpf_map_lookup_elem(&ep_udp, &key);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(ep_udp_send, struct sock *sk, int ret, int flags)
{
	struct ep_udp *u;

	if (ret <= 0 || sk->sk_protocol != IPPROTO_UDP)
		return 0;
	u = udp_entry(sk);
	if (u) {
		__sync_fetch_and_add(&u->tx_bytes, ret);
		__sync_fetch_and_add(&u->tx_pkts, 1);
		if (!u->port) /* an unbound socket gets its port on the first send */
			u->port = sk->__sk_common.skc_num;
	}
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(ep_udp_recv, struct sock *sk, int ret, int flags)
{
	struct ep_udp *u;

	/* MSG_PEEK (2) and MSG_ERRQUEUE (0x2000) do not consume datagrams. */
	if (ret <= 0 || sk->sk_protocol != IPPROTO_UDP || (flags & 0x2002))
		return 0;
	u = udp_entry(sk);
	if (u) {
		__sync_fetch_and_add(&u->rx_bytes, ret);
		__sync_fetch_and_add(&u->rx_pkts, 1);
	}
	return 0;
}

SEC("tp_btf/udp_fail_queue_rcv_skb")
int BPF_PROG(ep_udp_fail, int rc, struct sock *sk)
{
	__u64 key = bpf_get_socket_cookie((void *)sk);
	struct ep_udp *u = bpf_map_lookup_elem(&ep_udp, &key);

	if (u) {
		__sync_fetch_and_add(&u->rcv_drops, 1);
		u->last_err = rc < 0 ? -rc : rc;
	}
	return 0;
}

/* ---- drops ---------------------------------------------------------------------------------- */

static __always_inline void count_drop(const struct sk_buff *skb, __u32 reason)
{
	struct ep_drop_key k = {.reason = (__u16)reason};
	unsigned char *head;
	__u16 nh, th, proto = bpf_ntohs(skb->protocol), dport = 0;
	__u8 ip[10] = {}, l4 = 0;
	__u64 one = 1, *cnt;

	if (reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_NOT_SPECIFIED))
		return;
	if (proto != ETH_P_IP && proto != ETH_P_IPV6)
		return;
	head = skb->head;
	nh = skb->network_header;
	th = skb->transport_header;
	if (nh == 0xffff)
		return;
	/* One read for the version and both protocol fields (IPv4 byte 9, IPv6 byte 6): every header is
	 * longer than 10 bytes. */
	bpf_probe_read_kernel(ip, sizeof(ip), head + nh);
	if ((ip[0] >> 4) == 4)
		l4 = ip[9];
	else if ((ip[0] >> 4) == 6)
		l4 = ip[6];
	if (l4 != IPPROTO_TCP && l4 != IPPROTO_UDP)
		return;
	k.proto = l4;
	if (reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_NO_SOCKET) && th != 0xffff && th > nh) {
		bpf_probe_read_kernel(&dport, 2, head + th + 2);
		k.port = bpf_ntohs(dport);
	}
	cnt = bpf_map_lookup_elem(&ep_drops, &k);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
		return;
	}
	if (bpf_map_update_elem(&ep_drops, &k, &one, BPF_NOEXIST)) {
		cnt = bpf_map_lookup_elem(&ep_drops, &k);
		if (cnt)
			__sync_fetch_and_add(cnt, 1);
		else
			__sync_fetch_and_add(&ep_drops_lost, 1);
	}
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(ep_drop4, struct sk_buff *skb, void *location, enum skb_drop_reason reason, struct sock *rx_sk)
{
	count_drop(skb, reason);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(ep_drop3, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	count_drop(skb, reason);
	return 0;
}

/* ---- the snapshot walk ---------------------------------------------------------------------- */

static __always_inline int sk_gone(const struct sock *sk, __u64 cookie)
{
	int refs = BPF_CORE_READ(sk, __sk_common.skc_refcnt.refs.counter);

	return refs <= 0 || (cookie && BPF_CORE_READ(sk, __sk_common.skc_cookie.counter) != cookie);
}

static long snap_listen(struct bpf_map *map, __u64 *key, struct ep_listen *l, void *ctx)
{
	const struct sock *sk = (const struct sock *)l->sk;
	const struct inet_connection_sock *icsk = (const struct inet_connection_sock *)l->sk;
	__u32 drops, delta;

	if (l->flags & EP_F_CLOSED)
		return 0;
	if (sk_gone(sk, l->cookie)) {
		l->flags |= EP_F_CLOSED;
		return 0;
	}
	drops = BPF_CORE_READ(sk, sk_drops.counter);
	l->acceptq_len = BPF_CORE_READ(sk, sk_ack_backlog);
	l->acceptq_max = BPF_CORE_READ(sk, sk_max_ack_backlog);
	l->synq_len = BPF_CORE_READ(icsk, icsk_accept_queue.qlen.counter);
	if (l->acceptq_len > l->acceptq_max)
		l->flags |= EP_F_ACCEPTQ_FULL;
	delta = drops - l->drops_seen;
	l->drops_seen = drops;
	l->listen_drops += delta;
	if (l->flags & EP_F_ACCEPTQ_FULL)
		l->accept_overflow += delta;
	else
		l->syn_overflow += delta;
	/* Full again next period only if it still is or fills up again. */
	if (l->acceptq_len <= l->acceptq_max)
		l->flags &= ~EP_F_ACCEPTQ_FULL;
	return 0;
}

static long snap_udp(struct bpf_map *map, __u64 *key, struct ep_udp *u, void *ctx)
{
	const struct sock *sk = (const struct sock *)u->sk;

	if (u->flags & EP_F_CLOSED)
		return 0;
	if (sk_gone(sk, u->cookie)) {
		u->flags |= EP_F_CLOSED;
		return 0;
	}
	u->sk_drops = BPF_CORE_READ(sk, sk_drops.counter);
	u->rmem_alloc = BPF_CORE_READ(sk, sk_backlog.rmem_alloc.counter);
	if (!u->port)
		u->port = BPF_CORE_READ(sk, __sk_common.skc_num);
	return 0;
}

SEC("raw_tp")
int ep_snapshot(void *ctx)
{
	bpf_for_each_map_elem(&ep_listen, snap_listen, NULL, 0);
	bpf_for_each_map_elem(&ep_udp, snap_udp, NULL, 0);
	return 0;
}
