// SPDX-License-Identifier: GPL-2.0
/* tcpprobe.bpf.c - tcpprobe's kernel half: follows TCP links through tracepoints only (state changes,
 * accept, tcp_probe, retransmits, resets, drops) and a snapshot walk that user space runs once per
 * report period (BPF_PROG_TEST_RUN) to read every live socket's counters. */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "tcpprobe.h"

char LICENSE[] SEC("license") = "GPL";

/* Kernel constants not in vmlinux.h. */
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT	2
#define TCP_SYN_RECV	3
#define TCP_CLOSE_WAIT	8
#define TCP_CLOSE	7
#define TCP_LISTEN	10
#define IPPROTO_TCP	6
#define USEC_PER_SEC	1000000ULL
#define EEXIST		17

extern unsigned int CONFIG_HZ __kconfig __weak;

/* Closed links lost because tcp_closed was full; links not tracked because tcp_links was full. */
__u64 tcp_closed_lost;
__u64 tcp_links_lost;
__u64 tcp_closed_wake_at = TCP_CLOSED_RING / 4;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCP_LINKS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* struct sock * */
	__type(value, struct tcp_link);
} tcp_links SEC(".maps");

/* Closed links, final values, in the order they closed. No wakeup per record: user space is woken
 * when the ring's fill crosses a multiple of tcp_closed_wake_at bytes (a quarter; set by user space with the size,
 * TCP_CLOSED_RING) and drains it then and at every report, so an idle or keep-alive host costs no
 * wakeup at all between reports. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TCP_CLOSED_RING);
} tcp_closed SEC(".maps");

/* Histograms of the links that have samples, same key as tcp_links (tcp_link.hists: one exists). Filled by
 * the snapshot walk and the opt-in per-segment hooks only: tcp_state never touches it for a link without. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCP_LINKS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64); /* struct sock * */
	__type(value, struct tcp_hists);
} tcp_hists SEC(".maps");

/* Never written: the zeroes new links and histograms start from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_link_rec);
} tcp_zero SEC(".maps");

/* tcp_state builds a new link here and inserts it with one copy: no copy of the zero entry, no lookup
 * after the insert. Per CPU and used by tcp_state alone, which does not nest on a CPU (a tracing
 * program's recursion guard). Only the fields link_stage() and its callers write (every time) ever
 * change: the rest stays zero. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_link);
} tcp_stage SEC(".maps");

/* Live links that may still wait for their process name (TCP_LF_GUESS_HINT), counted per slot of the
 * socket's cookie (set when the link was made, read back from the socket by a plain load; the address
 * cannot be hashed, the verifier keeps it a pointer): FIN_WAIT1/LAST_ACK look a link up only when its
 * slot is not zero, so the other end of a connection (a client, named at connect) pays no lookup there.
 * A link deleted without its close (stale, found by user space) leaves its slot above zero: a lookup
 * too many, never one too few. */
#define TCP_HINT_SLOTS 1024u
__u32 tcp_guess_hint[TCP_HINT_SLOTS];

static __always_inline __u32 hint_slot(__u64 cookie)
{
	return (__u32)((cookie * 0x9E3779B97F4A7C15ull) >> 54) & (TCP_HINT_SLOTS - 1);
}

/* Every live link, counted the same way (the slot of the cookie it was made with): a socket whose
 * slot is zero has no link, so a hook looks nothing up for it (the sockets of processes out of scope,
 * those closed before we started): no hash walk that can only miss. A link made without a cookie (the
 * seeding iterator, whose socket pointer bpf_get_socket_cookie refuses, of a socket that had none; the
 * accept() fallback) is counted in tcp_uncookied instead, and while any is, every socket is looked up:
 * it takes the socket's cookie (link_adopt_cookie) the first time a hook or the snapshot walk sees it.
 * Stale links leave their count behind, as above (user space takes an uncookied one back). */
__u32 tcp_live_hint[TCP_HINT_SLOTS];
__u32 tcp_uncookied;

static __always_inline void live_hint_add(__u64 cookie, int n)
{
	if (cookie)
		__sync_fetch_and_add(&tcp_live_hint[hint_slot(cookie)], n);
	else
		__sync_fetch_and_add(&tcp_uncookied, n);
}

/* l, made without a cookie, takes `cookie` (the socket's, now that it has one); once, if several CPUs
 * race. */
static __always_inline void link_set_cookie(struct tcp_link *l, __u64 cookie)
{
	if (cookie && __sync_val_compare_and_swap(&l->cookie, 0, cookie) == 0) {
		live_hint_add(cookie, 1);
		live_hint_add(0, -1);
	}
}

/* sk a BTF pointer bpf_get_socket_cookie takes (a tp_btf argument): assigns one if it had none. */
static __always_inline void link_adopt_cookie(const struct sock *sk, struct tcp_link *l)
{
	if (!l->cookie)
		link_set_cookie(l, bpf_get_socket_cookie((void *)sk));
}

/* sk may have a link (a lookup is worth it); 0: certainly none. sk a BTF pointer. */
static __always_inline int maybe_linked(const struct sock *sk)
{
	__u64 cookie = sk->__sk_common.skc_cookie.counter;

	if (tcp_uncookied)
		return 1;
	return cookie && tcp_live_hint[hint_slot(cookie)];
}

static __always_inline __u32 jiffies_to_us(__u32 j)
{
	unsigned int hz = CONFIG_HZ;

	return hz ? (__u32)((__u64)j * USEC_PER_SEC / hz) : 0;
}

/* tp_btf callers: sk is a BTF pointer, read directly. */
static __always_inline int sk_is_tcp(const struct sock *sk)
{
	return sk->sk_protocol == IPPROTO_TCP;
}

static __always_inline void link_fill_addrs(struct tcp_link *l, const struct sock *sk)
{
	l->family = (__u8)BPF_CORE_READ(sk, __sk_common.skc_family);
	l->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	l->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (l->family == AF_INET6) {
		bpf_core_read(l->laddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_core_read(l->raddr, 16, &sk->__sk_common.skc_v6_daddr);
	} else {
		bpf_core_read(l->laddr, 4, &sk->__sk_common.skc_rcv_saddr);
		bpf_core_read(l->raddr, 4, &sk->__sk_common.skc_daddr);
	}
}

/* The same with direct loads, for tp_btf programs (no helper call per field). */
static __always_inline void link_fill_addrs_btf(struct tcp_link *l, const struct sock *sk)
{
	l->family = (__u8)sk->__sk_common.skc_family;
	l->lport = sk->__sk_common.skc_num;
	l->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	gg_sk_laddr_btf(sk, l->laddr);
	gg_sk_raddr_btf(sk, l->raddr);
}

/* Read the socket's counters into s (probe reads: usable from any program type). */
static __always_inline void snap_read(const struct sock *sk, struct tcp_snap *s)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	const struct inet_connection_sock *icsk = (const struct inet_connection_sock *)sk;
	__u32 write_seq, snd_nxt, snd_una;

	s->bytes_acked = BPF_CORE_READ(tp, bytes_acked);
	s->bytes_received = BPF_CORE_READ(tp, bytes_received);
	if (bpf_core_field_exists(tp->bytes_sent))
		s->bytes_sent = BPF_CORE_READ(tp, bytes_sent);
	if (bpf_core_field_exists(tp->bytes_retrans))
		s->bytes_retrans = BPF_CORE_READ(tp, bytes_retrans);
	s->pacing_rate = BPF_CORE_READ(sk, sk_pacing_rate);
	s->max_pacing_rate = BPF_CORE_READ(sk, sk_max_pacing_rate);
	s->segs_in = BPF_CORE_READ(tp, segs_in);
	s->segs_out = BPF_CORE_READ(tp, segs_out);
	s->data_segs_in = BPF_CORE_READ(tp, data_segs_in);
	s->data_segs_out = BPF_CORE_READ(tp, data_segs_out);
	s->total_retrans = BPF_CORE_READ(tp, total_retrans);
	s->lost_out = BPF_CORE_READ(tp, lost_out);
	s->sacked_out = BPF_CORE_READ(tp, sacked_out);
	s->retrans_out = BPF_CORE_READ(tp, retrans_out);
	s->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;
	s->mdev_us = BPF_CORE_READ(tp, mdev_us) >> 2;
	s->rcv_rtt_us = BPF_CORE_READ(tp, rcv_rtt_est.rtt_us) >> 3;
	s->snd_cwnd = BPF_CORE_READ(tp, snd_cwnd);
	s->snd_ssthresh = BPF_CORE_READ(tp, snd_ssthresh);
	s->snd_wnd = BPF_CORE_READ(tp, snd_wnd);
	s->rcv_wnd = BPF_CORE_READ(tp, rcv_wnd);
	s->reordering = BPF_CORE_READ(tp, reordering);
	s->rto_us = jiffies_to_us(BPF_CORE_READ(icsk, icsk_rto));
	s->ato_us = jiffies_to_us((__u32)BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ack.ato));
	s->rcv_ssthresh = BPF_CORE_READ(tp, rcv_ssthresh);
	s->advmss = BPF_CORE_READ(tp, advmss);
	s->mss_cache = BPF_CORE_READ(tp, mss_cache);
	s->rcv_space = BPF_CORE_READ(tp, rcvq_space.space);
	write_seq = BPF_CORE_READ(tp, write_seq);
	snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	snd_una = BPF_CORE_READ(tp, snd_una);
	s->notsent_bytes = (__s32)(write_seq - snd_nxt) > 0 ? write_seq - snd_nxt : 0;
	s->notack_bytes = (__s32)(snd_nxt - snd_una) > 0 ? snd_nxt - snd_una : 0;
	s->rate_delivered = BPF_CORE_READ(tp, rate_delivered);
	s->rate_interval_us = BPF_CORE_READ(tp, rate_interval_us);
	s->sk_err = BPF_CORE_READ(sk, sk_err);
	s->sk_err_soft = BPF_CORE_READ(sk, sk_err_soft);
	s->sk_drops = BPF_CORE_READ(sk, sk_drops.counter);
	s->rmem_alloc = BPF_CORE_READ(sk, sk_backlog.rmem_alloc.counter);
	s->wmem_alloc = BPF_CORE_READ(sk, sk_wmem_alloc.refs.counter);
	s->wmem_queued = BPF_CORE_READ(sk, sk_wmem_queued);
	s->omem_alloc = BPF_CORE_READ(sk, sk_omem_alloc.counter);
	s->forward_alloc = BPF_CORE_READ(sk, sk_forward_alloc);
	s->rcvbuf = BPF_CORE_READ(sk, sk_rcvbuf);
	s->sndbuf = BPF_CORE_READ(sk, sk_sndbuf);
	s->backlog_len = BPF_CORE_READ(sk, sk_backlog.len);
	s->rcvq_len = BPF_CORE_READ(sk, sk_receive_queue.qlen);
	s->wrq_len = BPF_CORE_READ(sk, sk_write_queue.qlen);
	s->errq_len = BPF_CORE_READ(sk, sk_error_queue.qlen);
	s->state = BPF_CORE_READ(sk, __sk_common.skc_state);
	s->snap_ns = bpf_ktime_get_ns();
}

/* The socket's fields by direct loads from tp: a BTF pointer (tp_btf programs) or a copy of the
 * socket in a map (the snapshot walk). icsk_ack.ato, a bit field, is left to the caller. */
static __always_inline void snap_fields(const struct tcp_sock *tp, struct tcp_snap *s)
{
	__u32 write_seq, snd_nxt, snd_una;

	s->bytes_acked = tp->bytes_acked;
	s->bytes_received = tp->bytes_received;
	s->bytes_sent = tp->bytes_sent;
	s->bytes_retrans = tp->bytes_retrans;
	s->pacing_rate = tp->inet_conn.icsk_inet.sk.sk_pacing_rate;
	s->max_pacing_rate = tp->inet_conn.icsk_inet.sk.sk_max_pacing_rate;
	s->segs_in = tp->segs_in;
	s->segs_out = tp->segs_out;
	s->data_segs_in = tp->data_segs_in;
	s->data_segs_out = tp->data_segs_out;
	s->total_retrans = tp->total_retrans;
	s->lost_out = tp->lost_out;
	s->sacked_out = tp->sacked_out;
	s->retrans_out = tp->retrans_out;
	s->srtt_us = tp->srtt_us >> 3;
	s->mdev_us = tp->mdev_us >> 2;
	s->rcv_rtt_us = tp->rcv_rtt_est.rtt_us >> 3;
	s->snd_cwnd = tp->snd_cwnd;
	s->snd_ssthresh = tp->snd_ssthresh;
	s->snd_wnd = tp->snd_wnd;
	s->rcv_wnd = tp->rcv_wnd;
	s->reordering = tp->reordering;
	s->rto_us = jiffies_to_us(tp->inet_conn.icsk_rto);
	s->rcv_ssthresh = tp->rcv_ssthresh;
	s->advmss = tp->advmss;
	s->mss_cache = tp->mss_cache;
	s->rcv_space = tp->rcvq_space.space;
	write_seq = tp->write_seq;
	snd_nxt = tp->snd_nxt;
	snd_una = tp->snd_una;
	s->notsent_bytes = (__s32)(write_seq - snd_nxt) > 0 ? write_seq - snd_nxt : 0;
	s->notack_bytes = (__s32)(snd_nxt - snd_una) > 0 ? snd_nxt - snd_una : 0;
	s->rate_delivered = tp->rate_delivered;
	s->rate_interval_us = tp->rate_interval_us;
	s->sk_err = tp->inet_conn.icsk_inet.sk.sk_err;
	s->sk_err_soft = tp->inet_conn.icsk_inet.sk.sk_err_soft;
	s->sk_drops = tp->inet_conn.icsk_inet.sk.sk_drops.counter;
	s->rmem_alloc = tp->inet_conn.icsk_inet.sk.sk_backlog.rmem_alloc.counter;
	s->wmem_alloc = tp->inet_conn.icsk_inet.sk.sk_wmem_alloc.refs.counter;
	s->wmem_queued = tp->inet_conn.icsk_inet.sk.sk_wmem_queued;
	s->omem_alloc = tp->inet_conn.icsk_inet.sk.sk_omem_alloc.counter;
	s->forward_alloc = tp->inet_conn.icsk_inet.sk.sk_forward_alloc;
	s->rcvbuf = tp->inet_conn.icsk_inet.sk.sk_rcvbuf;
	s->sndbuf = tp->inet_conn.icsk_inet.sk.sk_sndbuf;
	s->backlog_len = tp->inet_conn.icsk_inet.sk.sk_backlog.len;
	s->rcvq_len = tp->inet_conn.icsk_inet.sk.sk_receive_queue.qlen;
	s->wrq_len = tp->inet_conn.icsk_inet.sk.sk_write_queue.qlen;
	s->errq_len = tp->inet_conn.icsk_inet.sk.sk_error_queue.qlen;
	s->state = tp->inet_conn.icsk_inet.sk.__sk_common.skc_state;
	s->snap_ns = bpf_ktime_get_ns();
}

/* For tp_btf programs: the close of a link is on the connection's path. */
static __always_inline void snap_btf(const struct sock *sk, struct tcp_snap *s)
{
	const struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);

	if (!tp) {
		snap_read(sk, s);
		return;
	}
	snap_fields(tp, s);
	/* A direct load (the verifier allows one that covers the whole bit field): no helper call. The
	 * field is named from tp: its offset is tp's (&tp->...icsk_ack + that offset read past the socket). */
	s->ato_us = jiffies_to_us((__u32)BPF_CORE_READ_BITFIELD(tp, inet_conn.icsk_ack.ato));
}

/* A copy of a struct tcp_sock (2,304 bytes on 6.18), per CPU. */
#define TCP_SOCK_COPY_MAX 4096
struct tcp_sock_copy {
	char data[TCP_SOCK_COPY_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_sock_copy);
} tcp_sock_copy SEC(".maps");

/* For the snapshot walk, where sk is only an address: one read of the whole socket, then direct
 * loads, instead of one probe read per field (~50 helper calls, ~10 us per link). */
static __always_inline void snap_copy(const struct sock *sk, struct tcp_snap *s)
{
	__u32 zero = 0, size = bpf_core_type_size(struct tcp_sock);
	struct tcp_sock_copy *c = bpf_map_lookup_elem(&tcp_sock_copy, &zero);
	const struct tcp_sock *tp;

	if (!c || size >= TCP_SOCK_COPY_MAX || bpf_probe_read_kernel(c->data, size & (TCP_SOCK_COPY_MAX - 1), sk)) {
		snap_read(sk, s);
		return;
	}
	tp = (const struct tcp_sock *)c->data;
	snap_fields(tp, s);
	s->ato_us = jiffies_to_us((__u32)BPF_CORE_READ_BITFIELD(tp, inet_conn.icsk_ack.ato));
}

/* Per socket state of the per-segment hook, in socket local storage: a lookup there costs a few ns,
 * a hash lookup several tens, and tcp_probe fires for every incoming segment. */
struct tcp_sk_local {
	__u64 next_sample_us; /* tcp_mstamp from which the next RTT sample is taken */
	__u32 zero_snd;	      /* zero windows seen since the last sample */
	__u32 zero_rcv;
	__u32 untracked; /* out of scope, or the link table was full */
	/* tcp_delay: one timed segment per direction at a time (a sample, not every segment). */
	__u32 rx_end_seq; /* end of the timed incoming segment */
	__u32 tx_end_seq; /* end of the timed send() */
	__u32 rx_pending;
	__u32 tx_pending;
	__u32 pad;
	__u64 rx_ns; /* when TCP processed it */
	__u64 tx_ns; /* when send() returned */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tcp_sk_local);
} tcp_sk SEC(".maps");

/* RTT samples are taken at most once per this many us (10 ms) of a link's packets. */
volatile __u32 rtt_sample_us = 10000;

/* What the per-segment hook does (user space sets it with the sub-probes): SEG_RTT per-segment RTT
 * samples and zero windows (tcp_rtt or tcp_windows asked for explicitly), SEG_DELAY tcp_delay. */
volatile __u32 seg_work;

/* 1: the snapshot walk adds one RTT sample and the zero windows it sees per link (the per-segment
 * hook is off). */
volatile __u32 snap_samples = 1;

/* Links found by the seeding iterator. */
__u64 tcp_seeded;

/* 1: a passive open whose process is a guess (the listener's) was made since user space last cleared
 * it; user space then runs the iterator (tcp_seed), which names the process that holds each of them.
 * Set only when clear: a load per passive open, not an atomic add on a line both CPUs write. */
__u64 tcp_unconfirmed;

/* Who listens on a port: the process that called listen(), or the first holder the iterator found.
 * Passive opens (in softirq, no process) take it as their owner until confirmed: accept() is not
 * traced, since any syscall tracepoint slows every system call of the host. */
struct listen_key {
	__u32 netns;
	__u16 port;
	__u16 pad;
};

struct listen_owner {
	__u32 tgid;
	char comm[16];
	/* The scope verdict of its passive opens (the listener's tgid and the socket's cgroup, which they
	 * inherit): (tcp_scope_gen + 1) << 1 | in; 0 or another generation: not known. One store. */
	__u32 verdict;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct listen_key);
	__type(value, struct listen_owner);
} tcp_listeners SEC(".maps");

/* Moved by user space at every scope change (after the scope maps): cached verdicts of an older
 * generation are not used. */
volatile __u32 tcp_scope_gen;

/* The scope verdicts of processes that connect(), per slot of the tgid, each one 64-bit word written
 * by one store (no torn entry when two CPUs fill a slot at once): bit 63 in scope, the generation's
 * low 9 bits, the tgid's low 22 bits (pid_max is at most 2^22) and 32 bits of the start time of its
 * leader (a reused tgid is another process). A hit costs a few loads instead of the scope maps'
 * lookups (the tgid set, the cgroup and each of its ancestors), which every connection of a process
 * out of scope paid. */
#define TCP_VERDICT_SLOTS 4096u
__u64 tcp_verdicts[TCP_VERDICT_SLOTS];

/* gg_scope_current() for connect(): the current task is in scope. */
static __always_inline int scope_current_cached(void)
{
	struct task_struct *t;
	__u64 start, tag, v;
	__u32 gen, tgid;
	int in;

	if (!gg_scope_filtering())
		return 1;
	gen = tcp_scope_gen; /* before the maps are read: see tcp_scope_gen */
	t = bpf_get_current_task_btf();
	tgid = t->tgid;
	start = t->group_leader->start_time;
	tag = ((__u64)(gen & 0x1ff) << 54) | ((__u64)(tgid & 0x3fffff) << 32) | (__u32)(start ^ (start >> 32));
	v = tcp_verdicts[tgid & (TCP_VERDICT_SLOTS - 1)];
	if (v && (v & ~(1ull << 63)) == tag)
		return (int)(v >> 63);
	in = gg_scope_current();
	tcp_verdicts[tgid & (TCP_VERDICT_SLOTS - 1)] = tag | ((__u64)(in ? 1 : 0) << 63);
	return in;
}

/* gg_scope_sock() for a passive open of listener o (NULL: not known), cached in o. */
static __always_inline int scope_passive_cached(const struct sock *sk, struct listen_owner *o)
{
	__u32 gen, v;
	int in;

	if (!gg_scope_filtering())
		return 1;
	if (!o)
		return gg_scope_sock(sk, 0);
	gen = tcp_scope_gen;
	v = o->verdict;
	if (v >> 1 == gen + 1)
		return (int)(v & 1);
	in = gg_scope_sock(sk, o->tgid);
	o->verdict = (gen + 1) << 1 | (in ? 1 : 0);
	return in;
}

static __always_inline struct listen_key listen_key_of(const struct sock *sk)
{
	struct listen_key k = {.netns = sk->__sk_common.skc_net.net->ns.inum, .port = sk->__sk_common.skc_num};

	return k;
}

/* Zero-window counts not yet moved to the link (it is closing). */
static __always_inline void flush_local(const struct sock *sk, struct tcp_link *l)
{
	struct tcp_sk_local *loc;

	/* Only the per-segment hook keeps counts there (a helper call per close saved without it). */
	if (!seg_work)
		return;
	loc = bpf_sk_storage_get(&tcp_sk, (struct sock *)sk, NULL, 0);
	if (loc) {
		l->zero_snd_wnd += loc->zero_snd;
		l->zero_rcv_wnd += loc->zero_rcv;
		loc->zero_snd = 0;
		loc->zero_rcv = 0;
	}
}

/* A new entry for sk in tcp_links: zeroes inserted, then filled in place (no copy of a large value
 * through the stack); the caller sets the cookie, the cgroup and the rest. NULL if sk has one already or the map is
 * full (counted in tcp_links_lost when count_full). */
static __always_inline struct tcp_link *link_insert(const struct sock *sk, int count_full)
{
	__u64 key = (__u64)sk;
	__u32 zero = 0;
	struct tcp_link_rec *z = bpf_map_lookup_elem(&tcp_zero, &zero);
	struct tcp_link *l;

	if (!z)
		return NULL;
	if (bpf_map_update_elem(&tcp_links, &key, &z->l, BPF_NOEXIST)) {
		if (count_full)
			__sync_fetch_and_add(&tcp_links_lost, 1);
		return NULL;
	}
	l = bpf_map_lookup_elem(&tcp_links, &key);
	if (!l)
		return NULL;
	l->sk = key;
	l->open_ns = bpf_ktime_get_ns();
	return l;
}

/* Start tracking sk (tp_btf programs); returns the new entry or NULL (map full: counted). */
static __always_inline struct tcp_link *link_new(const struct sock *sk, __u8 role, __u32 tgid)
{
	struct tcp_link *l = link_insert(sk, 1);

	if (!l)
		return NULL;
	l->cookie = bpf_get_socket_cookie((void *)sk);
	live_hint_add(l->cookie, 1);
	l->cgroup_id = gg_sk_cgroup_id_btf(sk);
	l->role = role;
	l->tgid = tgid;
	if (tgid)
		bpf_get_current_comm(l->comm, sizeof(l->comm));
	link_fill_addrs_btf(l, sk);
	return l;
}

/* The histograms of link l (key: its socket), created on the first sample; NULL if tcp_hists is full. An
 * entry left over by a link deleted without its close (same socket address) is overwritten with zeroes. */
static __always_inline struct tcp_hists *link_hists(__u64 key, struct tcp_link *l)
{
	struct tcp_link_rec *z;
	struct tcp_hists *h;
	__u32 zero = 0;

	if (l->hists) {
		h = bpf_map_lookup_elem(&tcp_hists, &key);
		if (h)
			return h;
	}
	z = bpf_map_lookup_elem(&tcp_zero, &zero);
	if (!z || bpf_map_update_elem(&tcp_hists, &key, &z->h, BPF_ANY))
		return NULL;
	h = bpf_map_lookup_elem(&tcp_hists, &key);
	if (h)
		l->hists = 1;
	return h;
}

/* tcp_state's new link: the per-CPU staging entry with every field a link can differ in written (the
 * others are never written there: zero); the caller sets comm, flags and syn_srtt_us, then link_add(). */
static __always_inline struct tcp_link *link_stage(const struct sock *sk, __u8 role, __u32 tgid)
{
	__u32 zero = 0;
	struct tcp_link *n = bpf_map_lookup_elem(&tcp_stage, &zero);

	if (!n)
		return NULL;
	n->sk = (__u64)sk;
	n->open_ns = bpf_ktime_get_ns();
	n->cookie = bpf_get_socket_cookie((void *)sk);
	n->cgroup_id = gg_sk_cgroup_id_btf(sk);
	n->role = role;
	n->tgid = tgid;
	__builtin_memset(n->laddr, 0, sizeof(n->laddr));
	__builtin_memset(n->raddr, 0, sizeof(n->raddr));
	link_fill_addrs_btf(n, sk);
	return n;
}

/* Insert the staged link: 0, -EEXIST (sk has one), or another error (tcp_links full: counted). */
static __always_inline long link_add(__u64 key, struct tcp_link *n)
{
	long err = bpf_map_update_elem(&tcp_links, &key, n, BPF_NOEXIST);

	if (err && err != -EEXIST)
		__sync_fetch_and_add(&tcp_links_lost, 1);
	return err;
}

/* The current process holds sk (process context): it owns the link from now on; out of scope if
 * the listener's process was in scope but this one is not. */
static __always_inline void link_name_current(const struct sock *sk, struct tcp_link *l)
{
	l->tgid = gg_current_tgid();
	bpf_get_current_comm(l->comm, sizeof(l->comm));
	l->flags &= ~TCP_LF_TGID_GUESS;
	if (!gg_scope_sock(sk, l->tgid))
		l->flags |= TCP_LF_OUT_OF_SCOPE;
}

/* Final values, then move the link from tcp_links to the tcp_closed ring. */
static __always_inline void link_close(const struct sock *sk, struct tcp_link *l, int failed)
{
	__u64 key = (__u64)sk;

	flush_local(sk, l);
	snap_btf(sk, &l->s);
	if (!l->lport)
		link_fill_addrs_btf(l, sk);
	l->close_ns = l->s.snap_ns;
	l->flags |= TCP_LF_CLOSED | (failed ? TCP_LF_CONNECT_FAILED : 0);
	if (l->flags & TCP_LF_GUESS_HINT)
		__sync_fetch_and_add(&tcp_guess_hint[hint_slot(l->cookie)], -1);
	live_hint_add(l->cookie, -1);
	if (!(l->flags & TCP_LF_OUT_OF_SCOPE)) {
		/* The reader is woken when this record crosses a multiple of the fill level (a quarter of
		 * the ring; the later ones in case a wake-up came while it was still draining), not by
		 * every record past it: each wake-up is an irq_work raised by a self-IPI (a VM exit in a
		 * guest), and past the level every close raised one until user space had drained the ring:
		 * 7.5 % of tcp_state's time with a connection per request. */
		__u64 at = tcp_closed_wake_at ? tcp_closed_wake_at : 1;
		__u64 avail = bpf_ringbuf_query(&tcp_closed, BPF_RB_AVAIL_DATA);
		/* Without samples (every short connection) the record is the link alone. */
		struct tcp_hists *h = l->hists ? bpf_map_lookup_elem(&tcp_hists, &key) : NULL;
		__u64 size = h ? sizeof(struct tcp_link_rec) : sizeof(*l);
		__u64 wake = avail / at != (avail + size + 8) / at ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;

		if (h) {
			struct tcp_link_rec *r = bpf_ringbuf_reserve(&tcp_closed, sizeof(*r), 0);

			if (r) {
				bpf_probe_read_kernel(&r->l, sizeof(r->l), l);
				bpf_probe_read_kernel(&r->h, sizeof(r->h), h);
				bpf_ringbuf_submit(r, wake);
			} else {
				__sync_fetch_and_add(&tcp_closed_lost, 1);
			}
		} else if (bpf_ringbuf_output(&tcp_closed, l, size, wake)) {
			__sync_fetch_and_add(&tcp_closed_lost, 1);
		}
	}
	if (l->hists)
		bpf_map_delete_elem(&tcp_hists, &key);
	bpf_map_delete_elem(&tcp_links, &key);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state, const struct sock *sk, const int oldstate, const int newstate)
{
	__u64 key = (__u64)sk;
	struct tcp_link *l;

	if (!sk_is_tcp(sk))
		return 0;
	switch (newstate) {
	case TCP_LISTEN: {
		/* listen(): process context. */
		struct listen_key lk = listen_key_of(sk);
		struct listen_owner o = {.tgid = gg_current_tgid()};

		bpf_get_current_comm(o.comm, sizeof(o.comm));
		bpf_map_update_elem(&tcp_listeners, &lk, &o, BPF_ANY);
		return 0;
	}
	case TCP_SYN_SENT: {
		/* connect(): process context, the connecting task is current. */
		struct tcp_link *n;
		long err;

		if (!scope_current_cached())
			return 0;
		n = link_stage(sk, TCP_ROLE_CLIENT, gg_current_tgid());
		if (!n)
			return 0;
		bpf_get_current_comm(n->comm, sizeof(n->comm));
		n->flags = 0;
		n->syn_srtt_us = 0;
		/* sk has a link already: one whose close was missed (the walk will find it stale); this
		 * connection goes untracked, and is counted as such. */
		err = link_add(key, n);
		if (!err)
			live_hint_add(n->cookie, 1);
		else if (err == -EEXIST)
			__sync_fetch_and_add(&tcp_links_lost, 1);
		return 0;
	}
	case TCP_ESTABLISHED:
		if (oldstate == TCP_SYN_RECV) {
			/* A passive open (softirq): a new link, owned by the listener's process until
			 * confirmed; inserted complete (no lookup before or after, unless sk has one). */
			struct listen_key lk = listen_key_of(sk);
			struct listen_owner *o = bpf_map_lookup_elem(&tcp_listeners, &lk);
			const struct tcp_sock *tp;
			struct tcp_link *n;
			long err;

			if (!scope_passive_cached(sk, o))
				return 0;
			n = link_stage(sk, TCP_ROLE_SERVER, o ? o->tgid : 0);
			if (!n)
				return 0;
			if (o)
				__builtin_memcpy(n->comm, o->comm, sizeof(n->comm));
			else
				__builtin_memset(n->comm, 0, sizeof(n->comm));
			n->flags = TCP_LF_ESTABLISHED | TCP_LF_TGID_GUESS | TCP_LF_GUESS_HINT;
			tp = bpf_skc_to_tcp_sock((void *)sk);
			n->syn_srtt_us = tp ? tp->srtt_us >> 3 : 0;
			err = link_add(key, n);
			if (!err) {
				__sync_fetch_and_add(&tcp_guess_hint[hint_slot(n->cookie)], 1);
				live_hint_add(n->cookie, 1);
				if (!tcp_unconfirmed)
					tcp_unconfirmed = 1;
			}
			if (err != -EEXIST)
				return 0;
		} else if (!maybe_linked(sk)) {
			return 0;
		}
		l = bpf_map_lookup_elem(&tcp_links, &key);
		if (!l)
			return 0;
		/* established_ns is not read by user space: no clock read here (one per link and side). */
		l->flags |= TCP_LF_ESTABLISHED;
		if (!l->lport)
			link_fill_addrs_btf(l, sk);
		{
			const struct tcp_sock *tp = bpf_skc_to_tcp_sock((void *)sk);

			l->syn_srtt_us = tp ? tp->srtt_us >> 3 : 0;
		}
		return 0;
	case TCP_FIN_WAIT1:
	case TCP_LAST_ACK:
		/* tcp_close() or shutdown(): the process holding the socket is current. A server link
		 * not named yet (closed before the iterator ran) gets it instead of the listener's. No
		 * such link in sk's hint slot: nothing to look up (a client, a named server link). */
		if (!tcp_guess_hint[hint_slot(sk->__sk_common.skc_cookie.counter)])
			return 0;
		l = bpf_map_lookup_elem(&tcp_links, &key);
		if (l && (l->flags & TCP_LF_TGID_GUESS))
			link_name_current(sk, l);
		return 0;
	case TCP_CLOSE:
		if (!maybe_linked(sk))
			return 0;
		l = bpf_map_lookup_elem(&tcp_links, &key);
		if (l)
			link_close(sk, l, oldstate == TCP_SYN_SENT);
		return 0;
	default:
		return 0;
	}
}

/* No tcp_destroy_sock hook: every TCP socket that reaches a link passes TCP_CLOSE (tcp_set_state,
 * tcp_done) before it is destroyed, and a close missed anyway is found by the snapshot walk (freed
 * or reused socket: TCP_LF_STALE). It ran twice per connection for nothing. */

/* accept()/accept4() returned fd: attribute the link to the accepting process. */
static __always_inline int on_accept(long fd)
{
	struct task_struct *task;
	struct file **fds;
	struct file *f = NULL;
	struct socket *so;
	struct sock *sk;
	struct tcp_link *l;
	__u64 key;

	if (fd < 0)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (!fds || fd >= BPF_CORE_READ(task, files, fdt, max_fds))
		return 0;
	bpf_core_read(&f, sizeof(f), &fds[fd]);
	if (!f)
		return 0;
	so = BPF_CORE_READ(f, private_data);
	sk = BPF_CORE_READ(so, sk);
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	key = (__u64)sk;
	l = bpf_map_lookup_elem(&tcp_links, &key);
	if (!gg_scope_current()) {
		if (l) {
			if (l->flags & TCP_LF_GUESS_HINT)
				__sync_fetch_and_add(&tcp_guess_hint[hint_slot(l->cookie)], -1);
			live_hint_add(l->cookie, -1);
			if (l->hists)
				bpf_map_delete_elem(&tcp_hists, &key);
			bpf_map_delete_elem(&tcp_links, &key);
		}
		return 0;
	}
	if (!l) {
		/* Established before we were attached or before a scope change: track it now. */
		l = link_insert(sk, 0);
		if (!l)
			return 0;
		l->cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
		live_hint_add(l->cookie, 1); /* 0 (none yet): taken at the first hook that sees it */
		l->cgroup_id = gg_sk_cgroup_id(sk);
		l->role = TCP_ROLE_SERVER;
		l->flags = TCP_LF_ESTABLISHED;
		link_fill_addrs(l, sk);
	}
	if (!l->tgid || (l->flags & TCP_LF_TGID_GUESS)) {
		l->tgid = gg_current_tgid();
		bpf_get_current_comm(l->comm, sizeof(l->comm));
		l->flags &= ~TCP_LF_TGID_GUESS;
	}
	return 0;
}

SEC("tp/syscalls/sys_exit_accept4")
int tcp_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept(ctx->ret);
}

SEC("tp/syscalls/sys_exit_accept")
int tcp_accept(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept(ctx->ret);
}

/* sk's link, if it may have one; sk any BTF pointer to it. */
static __always_inline struct tcp_link *link_find(const struct sock *sk)
{
	__u64 key = (__u64)sk;

	return sk && maybe_linked(sk) ? bpf_map_lookup_elem(&tcp_links, &key) : NULL;
}

/* The same, for a sk that bpf_get_socket_cookie takes (a tp_btf argument): a link without a cookie
 * takes the socket's. */
static __always_inline struct tcp_link *link_of(const struct sock *sk)
{
	struct tcp_link *l = link_find(sk);

	if (l)
		link_adopt_cookie(sk, l);
	return l;
}

static __always_inline void delay_sample(const struct sock *sk, __u64 us, int rx)
{
	struct tcp_link *l = link_of(sk);
	struct tcp_hists *h;

	if (!l)
		return;
	h = link_hists((__u64)sk, l);
	if (!h)
		return;
	if (rx) {
		__sync_fetch_and_add(&h->rx_delay_hist[gg_log2_slot(us) & (GG_LOG2_SLOTS - 1)], 1);
		__sync_fetch_and_add(&h->rx_delay_sum_us, us);
	} else {
		__sync_fetch_and_add(&h->tx_delay_hist[gg_log2_slot(us) & (GG_LOG2_SLOTS - 1)], 1);
		__sync_fetch_and_add(&h->tx_delay_sum_us, us);
	}
}

/* tcp_delay on an incoming segment (tcp_probe runs before TCP processes it): its ACK may complete the
 * timed send; new in-order data starts a timed receive if none is pending. */
static __always_inline void delay_on_segment(const struct sock *sk, const struct tcp_sock *tp,
					     const struct sk_buff *skb, struct tcp_sk_local *loc)
{
	/* TCP_SKB_CB(skb), read in place (direct loads: no helper call per field). */
	const unsigned char *cb = (const unsigned char *)skb->cb;
	__u32 seq = *(const __u32 *)(cb + bpf_core_field_offset(struct tcp_skb_cb, seq));
	__u32 end_seq = *(const __u32 *)(cb + bpf_core_field_offset(struct tcp_skb_cb, end_seq));
	__u32 ack_seq = *(const __u32 *)(cb + bpf_core_field_offset(struct tcp_skb_cb, ack_seq));
	__u64 now = bpf_ktime_get_ns();

	if (loc->tx_pending && (__s32)(ack_seq - loc->tx_end_seq) >= 0) {
		loc->tx_pending = 0;
		delay_sample(sk, (now - loc->tx_ns) / 1000, 0);
	}
	if (!loc->rx_pending && end_seq != seq && (__s32)(end_seq - tp->rcv_nxt) > 0) {
		loc->rx_end_seq = end_seq;
		loc->rx_ns = now;
		loc->rx_pending = 1;
	}
}

/* The application read: the timed segment is done once copied_seq passed its end. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(tcp_delay_recv, struct sock *sk, int ret, int flags)
{
	struct tcp_sk_local *loc;
	struct tcp_sock *tp;

	/* MSG_PEEK (2) and MSG_ERRQUEUE (0x2000) do not consume data. */
	if (ret <= 0 || sk->sk_protocol != IPPROTO_TCP || (flags & 0x2002))
		return 0;
	loc = bpf_sk_storage_get(&tcp_sk, sk, NULL, 0);
	if (!loc || !loc->rx_pending)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp || (__s32)(tp->copied_seq - loc->rx_end_seq) < 0)
		return 0;
	loc->rx_pending = 0;
	delay_sample(sk, (bpf_ktime_get_ns() - loc->rx_ns) / 1000, 1);
	return 0;
}

/* The application sent: time its last byte (write_seq) until the peer acknowledges it. */
SEC("tp_btf/sock_send_length")
int BPF_PROG(tcp_delay_send, struct sock *sk, int ret, int flags)
{
	struct tcp_sk_local *loc;
	struct tcp_sock *tp;

	if (ret <= 0 || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	loc = bpf_sk_storage_get(&tcp_sk, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!loc || loc->tx_pending || loc->untracked)
		return 0;
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	loc->tx_end_seq = tp->write_seq;
	loc->tx_ns = bpf_ktime_get_ns();
	loc->tx_pending = 1;
	return 0;
}

/* Every incoming segment of an established link (under the socket lock): zero windows; RTT
 * histograms sampled at most every rtt_sample_us; links established before the probe started. */
SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_rcv, struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	struct tcp_sk_local *loc;
	__u64 key = (__u64)sk, now;
	struct tcp_hists *h;
	struct tcp_link *l;
	__u32 srtt, rcv_rtt;

	if (!tp)
		return 0;
	loc = bpf_sk_storage_get(&tcp_sk, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!loc || loc->untracked)
		return 0;
	if (seg_work & SEG_DELAY)
		delay_on_segment(sk, tp, skb, loc);
	if (!(seg_work & SEG_RTT))
		return 0;
	if (!tp->snd_wnd)
		loc->zero_snd++;
	if (!tp->rcv_wnd)
		loc->zero_rcv++;
	now = tp->tcp_mstamp;
	if (now < loc->next_sample_us)
		return 0;
	loc->next_sample_us = now + rtt_sample_us;

	l = bpf_map_lookup_elem(&tcp_links, &key);
	if (!l) {
		if (!gg_scope_sock(sk, 0)) {
			loc->untracked = 1;
			return 0;
		}
		l = link_new(sk, TCP_ROLE_UNKNOWN, 0);
		if (!l) {
			loc->untracked = 1;
			return 0;
		}
		l->flags |= TCP_LF_ESTABLISHED;
	} else {
		link_adopt_cookie(sk, l);
	}
	/* Per link updates are serialised by the socket lock: no atomics needed. */
	h = link_hists(key, l);
	if (!h)
		return 0;
	srtt = tp->srtt_us >> 3;
	h->srtt_hist[gg_log2_slot(srtt)]++;
	h->srtt_sum_us += srtt;
	l->samples++;
	rcv_rtt = tp->rcv_rtt_est.rtt_us >> 3;
	if (rcv_rtt) {
		h->rcv_rtt_hist[gg_log2_slot(rcv_rtt)]++;
		h->rcv_rtt_sum_us += rcv_rtt;
		h->rcv_rtt_samples++;
	}
	l->zero_snd_wnd += loc->zero_snd;
	l->zero_rcv_wnd += loc->zero_rcv;
	loc->zero_snd = 0;
	loc->zero_rcv = 0;
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retrans, const struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_link *l = link_of(sk);

	if (l) {
		/* The local port is bound after SYN_SENT: a connect that never succeeds learns it here. */
		if (!l->lport)
			link_fill_addrs_btf(l, sk);
		__sync_fetch_and_add(&l->retrans_events, 1);
		if (sk->__sk_common.skc_state == TCP_SYN_SENT)
			__sync_fetch_and_add(&l->syn_retrans, 1);
	}
	return 0;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_rst, const struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_link *l = link_of(sk);

	if (l)
		__sync_fetch_and_add(&l->send_rsts, 1);
	return 0;
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_recv_rst, struct sock *sk)
{
	struct tcp_link *l = link_of(sk);

	if (l) {
		if (!l->lport)
			link_fill_addrs_btf(l, sk);
		__sync_fetch_and_add(&l->recv_rsts, 1);
	}
	return 0;
}

SEC("tp_btf/sock_rcvqueue_full")
int BPF_PROG(tcp_rcvq_full, struct sock *sk, struct sk_buff *skb)
{
	struct tcp_link *l = link_of(sk);

	if (l)
		__sync_fetch_and_add(&l->rcvq_full, 1);
	return 0;
}

SEC("tp_btf/sock_exceed_buf_limit")
int BPF_PROG(tcp_buf_limit, struct sock *sk, struct proto *prot, long allocated, int kind)
{
	struct tcp_link *l = link_of(sk);

	if (l)
		__sync_fetch_and_add(&l->sndbuf_limit, 1);
	return 0;
}

static __always_inline void count_drop(const struct sock *sk, __u32 reason)
{
	struct tcp_link *l = link_find(sk); /* skb->sk: an RCU pointer, no cookie taken */

	if (!l)
		return;
	__sync_fetch_and_add(&l->drops, 1);
	l->last_drop_reason = reason;
	if (reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_SOCKET_BACKLOG))
		__sync_fetch_and_add(&l->drops_backlog, 1);
	else if (reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_SOCKET_FILTER))
		__sync_fetch_and_add(&l->drops_filter, 1);
	else if (reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_SOCKET_RCVBUFF) ||
		 reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_PROTO_MEM))
		__sync_fetch_and_add(&l->drops_rmem, 1);
}

/* kfree_skb with the receiving socket as 4th argument (6.12+). */
SEC("tp_btf/kfree_skb")
int BPF_PROG(tcp_drop4, struct sk_buff *skb, void *location, enum skb_drop_reason reason, struct sock *rx_sk)
{
	const struct sock *sk = rx_sk ? rx_sk : skb->sk;

	if (sk)
		count_drop(sk, reason);
	return 0;
}

/* kfree_skb without it (5.17 .. 6.11): only drops of skbs that still own their socket. */
SEC("tp_btf/kfree_skb")
int BPF_PROG(tcp_drop3, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	const struct sock *sk = skb->sk;

	if (sk)
		count_drop(sk, reason);
	return 0;
}

/* ---- the snapshot walk, run by user space with BPF_PROG_TEST_RUN once per report ------------- */

static long snap_one(struct bpf_map *map, __u64 *key, struct tcp_link *l, void *ctx)
{
	const struct sock *sk = (const struct sock *)*key;
	__u64 cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	int refs = BPF_CORE_READ(sk, __sk_common.skc_refcnt.refs.counter);

	/* Freed (no references) or reused for another socket: its close was missed. */
	if (refs <= 0 || (l->cookie && cookie != l->cookie)) {
		l->flags |= TCP_LF_STALE;
		return 0;
	}
	if (!l->cookie)
		link_set_cookie(l, cookie); /* someone gave the socket one since */
	snap_copy(sk, &l->s);
	if (!l->lport)
		link_fill_addrs(l, sk);
	if (snap_samples && l->s.state == TCP_ESTABLISHED) {
		/* Without the per-segment hook: one RTT sample per link and report, and zero windows seen now. */
		struct tcp_hists *h = link_hists(*key, l);

		if (h && l->s.srtt_us) {
			h->srtt_hist[gg_log2_slot(l->s.srtt_us) & (GG_LOG2_SLOTS - 1)]++;
			h->srtt_sum_us += l->s.srtt_us;
			l->samples++;
		}
		if (h && l->s.rcv_rtt_us) {
			h->rcv_rtt_hist[gg_log2_slot(l->s.rcv_rtt_us) & (GG_LOG2_SLOTS - 1)]++;
			h->rcv_rtt_sum_us += l->s.rcv_rtt_us;
			h->rcv_rtt_samples++;
		}
		if (!l->s.snd_wnd)
			l->zero_snd_wnd++;
		if (!l->s.rcv_wnd)
			l->zero_rcv_wnd++;
	}
	return 0;
}

SEC("raw_tp")
int tcp_snapshot(void *ctx)
{
	bpf_for_each_map_elem(&tcp_links, snap_one, NULL, 0);
	return 0;
}

/* ---- seeding: links established before the probe started (or before a scope change) ---------- */

/* Run by user space (bpf_iter_create on an iter/task_file link) at start and after a scope change:
 * every open file of every process; a TCP socket that is established and in scope becomes a link,
 * attributed to the process holding it. iter/task_file rather than iter/tcp: it sees the sockets of
 * every network namespace (iter/tcp only those of the probe's) and tells which process owns each. */
SEC("iter/task_file")
int tcp_seed(struct bpf_iter__task_file *ctx)
{
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;
	struct tcp_link *l;
	struct socket *so;
	struct sock *sk;
	__u32 tgid;
	__u64 key;
	int state;

	if (!task || !file)
		return 0;
	so = bpf_sock_from_file(file);
	if (!so)
		return 0;
	sk = so->sk;
	if (!sk || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	if (sk->__sk_common.skc_family != AF_INET && sk->__sk_common.skc_family != AF_INET6)
		return 0;
	state = sk->__sk_common.skc_state;
	tgid = task->tgid;
	if (state == TCP_LISTEN) {
		/* Listening before we started: the first holder found owns its passive opens. */
		struct listen_key lk = listen_key_of(sk);
		struct listen_owner o = {.tgid = tgid};

		bpf_probe_read_kernel_str(o.comm, sizeof(o.comm), task->comm);
		bpf_map_update_elem(&tcp_listeners, &lk, &o, BPF_NOEXIST);
		return 0;
	}
	if (state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT)
		return 0;
	key = (__u64)sk;
	l = bpf_map_lookup_elem(&tcp_links, &key);
	if (l) {
		/* The process holding a passive open (the first found, if several share it). */
		if (!l->tgid || (l->flags & TCP_LF_TGID_GUESS)) {
			l->tgid = tgid;
			bpf_probe_read_kernel_str(l->comm, sizeof(l->comm), task->comm);
			l->flags &= ~TCP_LF_TGID_GUESS;
			if (!gg_scope_sock(sk, tgid))
				l->flags |= TCP_LF_OUT_OF_SCOPE;
		}
		return 0;
	}
	if (!gg_scope_sock(sk, tgid))
		return 0;
	l = link_insert(sk, 0);
	if (!l)
		return 0;
	/* The socket's cookie if it has one (bpf_get_socket_cookie refuses this untrusted pointer):
	 * otherwise counted as uncookied, and given one at the first hook that sees it. */
	l->cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	live_hint_add(l->cookie, 1);
	l->cgroup_id = gg_sk_cgroup_id_btf(sk);
	l->role = TCP_ROLE_UNKNOWN;
	l->tgid = tgid;
	l->flags = TCP_LF_ESTABLISHED | TCP_LF_SEEDED;
	bpf_probe_read_kernel_str(l->comm, sizeof(l->comm), task->comm);
	link_fill_addrs_btf(l, sk);
	__sync_fetch_and_add(&tcp_seeded, 1);
	return 0;
}
