// SPDX-License-Identifier: GPL-2.0
/* l7probe.bpf.c - l7probe's kernel half: the payloads of socket sends and receives (tracepoints)
 * and of OpenSSL's SSL_read/SSL_write (uprobes) of processes in scope, as bounded prefixes into one
 * ring buffer; user space tracks connections and parses protocols. Socket payloads come from
 * sock_sendmsg/sock_recvmsg's tracepoints, not from system call tracepoints (see sock_data). */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "l7probe.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT	     00170000
#define S_IFSOCK     0140000
#define IPPROTO_TCP  6
#define IPPROTO_UDP  17
#define EINPROGRESS  115
#define PF_IO_WORKER 0x00000010
#define PF_KTHREAD   0x00200000

/* Set by user space (the skeleton's .data/.bss). */
__u32 cap_bytes = L7_CAP_DEFAULT; /* payload prefix copied per call (0: count bytes only) */
__u32 ssl_on;			  /* follow SSL calls (support_ssl) */
__u32 udp_on;			  /* a UDP protocol (dns) is parsed: UDP payloads are copied */
/* Two bits per tgid: 00 not known yet, 01 in scope, 10 out. Cleared by user space when the scope
 * changes: the verdict of a process costs the scope maps' lookups once, then one load per call,
 * which is what every system call of a process out of scope pays. */
__u64 verdict[L7_VERDICT_PIDS / 32];

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, L7_RING_BYTES);
} l7_events SEC(".maps");

/* What the events of a socket of a process in scope carry: the process and fd that last moved data on
 * it, its role and 4-tuple. */
struct l7_sock {
	__u32 tgid;
	__s32 fd;
	__u8 role;
	__u8 udp;
	__u8 enc; /* a Go TLS connection: its socket payloads are ciphertext */
	__u8 pad;
	__u16 family;
	__u16 lport;
	__u16 rport;
	__u8 laddr[16];
	__u8 raddr[16];
};

/* A TCP socket of a process in scope that moved data, in the socket's local storage: a send or receive
 * finds it with a few loads through sk->sk_bpf_storage (a keep-alive connection's entry is made once),
 * where a hash keyed by the socket's address cost a hash and a bucket walk per event. It is freed with
 * the socket; its TCP_CLOSE turns it into the close event user space ends the connection on (tgid 0
 * after: a later use of the same socket is taken for a new one). UDP sockets have none. */
struct l7_sk {
	struct l7_sock s;
	__u64 send_ts;	/* when the send under way entered tcp_sendmsg_locked (0: none) */
	__u64 send_jif; /* jiffies then: how a send tells a time left over without reading the clock */
	__u32 enc_gen;	/* enc_gen when s.enc was last brought up to date from l7_fdsk */
	__u32 pad;
};

/* A send time is taken by the send event that follows within a tick (HZ 100..1000). */
#define SEND_TS_MAX_JIFFIES 1

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct l7_sk);
} l7_sks SEC(".maps");

/* Bumped when a Go TLS call marks a socket encrypted (l7_fdsk's copy): a socket entry whose enc_gen
 * differs looks the flag up again, so the data path pays one load while no Go TLS is followed. */
__u32 enc_gen;

/* The role of a TCP socket from its handshake (SYN_SENT: connect, client; SYN_RECV: accepted,
 * server), whatever process it belongs to: the handshake of an accepted socket happens in softirq,
 * before any process owns it. One update and one delete per TCP connection of the host; LRU, so a
 * miss only makes the role unknown (user space infers it). */
GG_MAP(l7_role, BPF_MAP_TYPE_LRU_HASH, __u64, __u8, L7_SOCKS_MAX, 0);

enum call_kind { CK_BUF = 0, CK_IOV, CK_SENDFILE };

/* An SSL_read/SSL_write between its entry and its return, per thread (task local storage: no hash
 * insert and delete per call, ~2.3 SSL calls per HTTPS request); fd is set by the read or write system
 * call OpenSSL makes inside it. */
struct l7_ssl_call {
	__u64 ssl;
	__u64 buf;
	__u64 retp; /* size_t *readbytes/written of the _ex variants, 0 otherwise */
	__u64 ts;
	__s32 fd;
	__u8 dir;
	__u8 active; /* between an entry and its return */
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct l7_ssl_call);
} l7_ssl SEC(".maps");

/* An entry whose return never came (the thread left the call by other means) is forgotten after this. */
#define SSL_CALL_MAX_NS (10ull * 1000000000ull)

/* The fd an SSL object was last seen using, for calls served from OpenSSL's buffer without a system
 * call. */
struct ssl_key {
	__u64 ssl;
	__u32 tgid;
	__u32 pad;
};

GG_MAP(l7_ssl_fd, BPF_MAP_TYPE_LRU_HASH, struct ssl_key, __s32, L7_SOCKS_MAX, 0);

/* An event being built (too large for the stack). Three times L7_DATA_MAX so that an iovec copied
 * at any offset below L7_DATA_MAX with any length below 2 * L7_DATA_MAX (the bound the verifier is
 * shown, see bound()) stays inside. */
struct l7_buf {
	struct l7_ev h;
	__u8 data[3 * L7_DATA_MAX];
};

/* v (already <= L7_DATA_MAX) masked in the very register that is used next: clang otherwise checks
 * one copy and passes another, which the verifier sees unbounded. */
static __always_inline __u64 bound(__u64 v)
{
	asm volatile("%[v] &= %[m]" : [v] "+r"(v) : [m] "i"(2 * L7_DATA_MAX - 1));
	return v;
}

GG_MAP(l7_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct l7_buf, 1, 0);

GG_MAP(l7_stats, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, L7_ST__COUNT, 0);

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&l7_stats, &i);

	if (v)
		(*v)++;
}

/* ---- scope --------------------------------------------------------------------------------------- */

static __always_inline int in_scope(__u32 tgid)
{
	return gg_scope_current_cached(verdict, L7_VERDICT_PIDS, tgid);
}

/* ---- sockets ------------------------------------------------------------------------------------- */

static __always_inline __u64 fd_key(__u32 tgid, int fd)
{
	return ((__u64)tgid << 32) | (__u32)fd;
}

/* The socket a (tgid, fd) was last seen moving data on, with a copy of its entry: how SSL and Go TLS
 * calls, which know their fd, find their socket (socket local storage needs the socket itself). Made
 * when (tgid, fd) is new to the socket, deleted at its TCP_CLOSE. LRU: a miss only loses that call
 * (counted as ssl_nofd). */
struct l7_fd {
	__u64 sk;
	struct l7_sock s;
};

/* key: tgid << 32 | fd */
GG_MAP(l7_fdsk, BPF_MAP_TYPE_LRU_HASH, __u64, struct l7_fd, L7_SOCKS_MAX, 0);

/* The sources of the datagrams queued to an unconnected UDP socket of a process in scope, in order:
 * recvfrom/recvmsg write the peer's sockaddr to user memory only after sock_recv_length has fired,
 * and the datagram is freed by then (on another CPU, possibly), so its source is taken when it is
 * queued (sk_data_ready, the queue's tail) and handed to the receives in the same order. A datagram
 * dropped after it was queued (bad checksum) shifts the pairing until the ring turns over: the
 * counts stay right, the peer of a few events may not. */
#define UDP_Q_LEN 8

struct udp_src {
	__u16 family;
	__u16 port;
	__u8 addr[16];
};

struct udp_q {
	__u32 enq;
	__u32 deq;
	struct udp_src ring[UDP_Q_LEN];
};

/* key: struct sock * */
GG_MAP(l7_udp_q, BPF_MAP_TYPE_LRU_HASH, __u64, struct udp_q, 16384, 0);

/* The time a TCP send event carries: when the send entered tcp_sendmsg_locked (its tracepoint, once per
 * chunk of up to a GSO segment; the first sets it), kept in the socket's entry. sock_send_length fires
 * when the send returns, which on loopback is after the receiver's whole input path (run in the
 * sender's softirq) and the copy; a request's latency starts at the system call's entry. (Before: a
 * program on every packet queued on the host, net_dev_queue, kept the time of a thread's first
 * packet in task storage, ~100-130 ns a packet.) UDP sends: see l7_udp_tx. */

/* What an event says about sk (a BTF pointer) for (tgid, fd), by direct loads. */
static __always_inline void sock_fill(struct l7_sock *v, const struct sock *sk, __u32 tgid, int fd, __u8 udp)
{
	__u64 key = (__u64)sk;
	__u8 *role;

	v->tgid = tgid;
	v->fd = fd;
	v->udp = udp;
	v->enc = 0;
	v->family = sk->__sk_common.skc_family;
	v->lport = sk->__sk_common.skc_num;
	v->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	__builtin_memset(v->laddr, 0, sizeof(v->laddr));
	__builtin_memset(v->raddr, 0, sizeof(v->raddr));
	gg_sk_laddr_btf(sk, v->laddr);
	gg_sk_raddr_btf(sk, v->raddr);
	role = udp ? NULL : bpf_map_lookup_elem(&l7_role, &key);
	v->role = role ? *role : L7_ROLE_UNKNOWN;
}

/* 1 when fd of the current process is sk's socket. The registers a socket tracepoint reads belong to
 * the system call under way, which is not always the one that moved the data: io_uring completes a
 * receive in task work run on the way out of any other system call. Checked when (tgid, fd) is new to
 * sk (a few loads through the fd table), not on every call. */
static __always_inline int fd_is_sock(int fd, const struct sock *sk)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = task->files;
	struct file **fds = NULL, *f = NULL;
	struct fdtable *fdt = NULL;
	void *priv = NULL;
	unsigned int max = 0;

	if (!files || fd < 0)
		return 0;
	if (bpf_probe_read_kernel(&fdt, sizeof(fdt), &files->fdt) || !fdt ||
	    bpf_probe_read_kernel(&max, sizeof(max), &fdt->max_fds) || (unsigned int)fd >= max ||
	    bpf_probe_read_kernel(&fds, sizeof(fds), &fdt->fd) || !fds ||
	    bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f ||
	    bpf_probe_read_kernel(&priv, sizeof(priv), &f->private_data))
		return 0;
	return priv && priv == (void *)sk->sk_socket;
}

/* The entry of a TCP socket used by (tgid, fd), made or brought up to date (the same socket seen
 * through another fd or process). NULL when it cannot be made (counted), or when fd is not sk's
 * (*ret_foreign set: the data moved outside the system call under way, see fd_is_sock). */
static __always_inline struct l7_sk *sock_get(struct sock *sk, __u32 tgid, int fd, int *ret_foreign)
{
	struct l7_sk *x = bpf_sk_storage_get(&l7_sks, sk, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct l7_fd f;
	__u64 fk;
	__u8 enc;

	if (!x) {
		stat_inc(L7_ST_SOCKS_FULL);
		return NULL;
	}
	if (x->s.tgid == tgid && x->s.fd == fd) {
		if (x->enc_gen != enc_gen) {
			/* a Go TLS call marked some socket encrypted since: this one? */
			struct l7_fd *fp;

			fk = fd_key(tgid, fd);
			fp = bpf_map_lookup_elem(&l7_fdsk, &fk);
			x->enc_gen = enc_gen;
			if (fp && fp->sk == (__u64)sk && fp->s.enc)
				x->s.enc = 1;
		}
		return x;
	}
	if (!fd_is_sock(fd, sk)) {
		*ret_foreign = 1;
		return NULL;
	}
	enc = x->s.tgid ? x->s.enc : 0;
	sock_fill(&x->s, sk, tgid, fd, 0);
	x->s.enc = enc;
	x->enc_gen = enc_gen;
	fk = fd_key(tgid, fd);
	f.sk = (__u64)sk;
	f.s = x->s;
	bpf_map_update_elem(&l7_fdsk, &fk, &f, BPF_ANY);
	return x;
}

/* The socket entry of (tgid, fd) for SSL and Go TLS calls (l7_fdsk's copy); *ret_sk its address. */
static __always_inline struct l7_sock *sock_of_fd(__u32 tgid, int fd, __u64 *ret_sk)
{
	__u64 fk = fd_key(tgid, fd);
	struct l7_fd *f = bpf_map_lookup_elem(&l7_fdsk, &fk);

	if (!f || f->s.tgid != tgid || f->s.fd != fd)
		return NULL;
	*ret_sk = f->sk;
	return &f->s;
}

/* The peer of a datagram from a user sockaddr (IPv4 or IPv6) into the event. */
static __always_inline void peer_from_user(struct l7_ev *h, __u64 uaddr)
{
	__u16 family = 0;

	if (!uaddr || bpf_probe_read_user(&family, sizeof(family), (void *)uaddr))
		return;
	if (family == AF_INET) {
		struct sockaddr_in sin;

		if (bpf_probe_read_user(&sin, sizeof(sin), (void *)uaddr))
			return;
		h->rport = bpf_ntohs(sin.sin_port);
		__builtin_memset(h->raddr, 0, sizeof(h->raddr));
		__builtin_memcpy(h->raddr, &sin.sin_addr.s_addr, 4);
	} else if (family == AF_INET6) {
		struct sockaddr_in6 sin6;

		if (bpf_probe_read_user(&sin6, sizeof(sin6), (void *)uaddr))
			return;
		h->rport = bpf_ntohs(sin6.sin6_port);
		__builtin_memcpy(h->raddr, sin6.sin6_addr.in6_u.u6_addr8, 16);
	}
}

/* ---- events -------------------------------------------------------------------------------------- */

static __always_inline struct l7_buf *ev_begin(const struct l7_sock *s, __u64 sk, __u32 tgid, __u32 pid, int fd,
					       __u8 dir, __u64 ts)
{
	__u32 zero = 0;
	struct l7_buf *e = bpf_map_lookup_elem(&l7_scratch, &zero);

	if (!e)
		return NULL;
	e->h.type = L7_EV_DATA;
	e->h.dir = dir;
	e->h.flags = s->udp ? L7_EF_UDP : 0;
	e->h.role = s->role;
	e->h.tgid = tgid;
	e->h.pid = pid;
	e->h.fd = fd;
	e->h.ts_ns = ts;
	e->h.sk = sk;
	e->h.family = s->family;
	e->h.lport = s->lport;
	e->h.rport = s->rport;
	e->h.pad = 0;
	__builtin_memcpy(e->h.laddr, s->laddr, 16);
	__builtin_memcpy(e->h.raddr, s->raddr, 16);
	e->h.total = 0;
	e->h.len = 0;
	return e;
}

/* Copy up to want bytes of a user buffer into the event. Returns the bytes copied. */
static __always_inline __u32 copy_buf(struct l7_buf *e, __u64 ubuf, __u32 want)
{
	if (want > L7_DATA_MAX)
		want = L7_DATA_MAX;
	if (bpf_probe_read_user(e->data, bound(want), (void *)ubuf))
		return 0;
	return want;
}

/* The same for the first L7_IOV_MAX iovecs of an array of cnt. */
static __always_inline __u32 copy_iov(struct l7_buf *e, __u64 uiov, __u32 cnt, __u32 want)
{
	__u32 off = 0;

	if (want > L7_DATA_MAX)
		want = L7_DATA_MAX;
	for (int i = 0; i < L7_IOV_MAX; i++) {
		struct iovec iov;
		__u64 n;

		if ((__u32)i >= cnt || off >= want)
			break;
		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)(uiov + i * sizeof(iov))))
			break;
		n = iov.iov_len;
		if (n > want - off)
			n = want - off;
		if (bpf_probe_read_user(&e->data[off & (L7_DATA_MAX - 1)], bound(n), iov.iov_base))
			break;
		off += n;
	}
	if (cnt > L7_IOV_MAX && off < want)
		stat_inc(L7_ST_IOV_TRUNC);
	return off;
}

static __always_inline void ev_submit(struct l7_buf *e)
{
	__u32 len = e->h.len;

	if (len > L7_DATA_MAX)
		len = L7_DATA_MAX;
	if (bpf_ringbuf_output(&l7_events, e, sizeof(e->h) + bound(len), BPF_RB_NO_WAKEUP))
		stat_inc(L7_ST_RB_FULL);
	else
		stat_inc(L7_ST_EVENTS);
}

/* Kernels >= 6.16: a user buffer read straight into a ring buffer record whose size is known at run
 * time. Without them the payload is read into l7_scratch and copied again into the ring by
 * bpf_ringbuf_output (a second copy of up to cap_bytes per event: 10-15 % of nginx's added CPU per
 * HTTP/2 request, see bench/RESULTS.md). */
extern int bpf_probe_read_user_dynptr(struct bpf_dynptr *dptr, __u32 off, __u32 size,
				      const void *unsafe_ptr) __ksym __weak;

/* Read want bytes of one buffer (CK_BUF) or of the first L7_IOV_MAX iovecs of an array of cnt
 * (CK_IOV) into a record at sizeof(struct l7_ev). The iovec array is read in one piece into e's
 * data area (unused on this path): one helper call instead of one per iovec (an HTTP/2 writev of
 * nginx carries 20-40). Returns the bytes read. */
static __always_inline __u32 dyn_copy(struct l7_buf *e, struct bpf_dynptr *dp, __u8 kind, __u64 ubuf, __u32 cnt,
				      __u32 want)
{
	const __u32 at = sizeof(struct l7_ev);
	struct iovec *iov = (struct iovec *)e->data;
	__u32 off = 0, n_iov = cnt < L7_IOV_MAX ? cnt : L7_IOV_MAX;

	if (kind != CK_IOV)
		return bpf_probe_read_user_dynptr(dp, at, want, (void *)ubuf) ? 0 : want;
	if (!n_iov || bpf_probe_read_user(iov, bound(n_iov * sizeof(*iov)), (void *)ubuf))
		return 0;
	for (int i = 0; i < L7_IOV_MAX; i++) {
		__u64 n;

		if ((__u32)i >= n_iov || off >= want)
			break;
		n = iov[i].iov_len;
		if (n > want - off)
			n = want - off;
		if (n && bpf_probe_read_user_dynptr(dp, at + off, (__u32)n, iov[i].iov_base))
			break;
		off += n;
	}
	if (cnt > L7_IOV_MAX && off < want)
		stat_inc(L7_ST_IOV_TRUNC);
	return off;
}

/* Send the event e->h with up to want bytes of the caller's buffer (kind CK_BUF or CK_IOV; want 0:
 * no payload). Sets e->h.len; counts a payload cut by the capture size. */
static __always_inline void ev_send(struct l7_buf *e, __u8 kind, __u64 ubuf, __u32 cnt, __u32 want)
{
	if (want > L7_DATA_MAX)
		want = L7_DATA_MAX;
	if (want && bpf_probe_read_user_dynptr) {
		struct bpf_dynptr dp;

		if (bpf_ringbuf_reserve_dynptr(&l7_events, sizeof(e->h) + want, 0, &dp)) {
			bpf_ringbuf_discard_dynptr(&dp, 0);
			stat_inc(L7_ST_RB_FULL);
			return;
		}
		e->h.len = dyn_copy(e, &dp, kind, ubuf, cnt, want);
		bpf_dynptr_write(&dp, 0, &e->h, sizeof(e->h), 0);
		bpf_ringbuf_submit_dynptr(&dp, BPF_RB_NO_WAKEUP);
		stat_inc(L7_ST_EVENTS);
	} else {
		if (want)
			e->h.len = kind == CK_IOV ? copy_iov(e, ubuf, cnt, want) : copy_buf(e, ubuf, want);
		ev_submit(e);
	}
	if (want && e->h.len < e->h.total)
		stat_inc(L7_ST_TRUNCATED);
}

/* The time a UDP send event carries: when its datagram was queued for transmission (net_dev_queue),
 * per sending thread. The send's tracepoint fires after the datagram's delivery on loopback, and often
 * after the receiver, woken on the same CPU, has preempted the sender and answered. Taken by the
 * thread's next UDP send from the same local port within a tick. */
struct udp_tx {
	__u64 ts;
	__u64 jif;
	__u16 port;
	__u8 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct udp_tx);
} l7_udp_tx SEC(".maps");

/* A datagram queued to a followed unconnected UDP socket (see l7_udp_q). Fires at every wake-up of a
 * socket's reader: others leave at the protocol test or the hash lookup. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(l7_dgram, const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct udp_src src = {};
	struct sk_buff *skb;
	unsigned char *head;
	struct udp_q *q;
	struct udphdr uh;
	__u32 i;
	__u8 ver = 0;

	if (sk->sk_protocol != IPPROTO_UDP)
		return 0;
	q = bpf_map_lookup_elem(&l7_udp_q, &key);
	if (!q)
		return 0;
	skb = sk->sk_receive_queue.prev;
	if (!skb || (void *)skb == (void *)&sk->sk_receive_queue)
		return 0;
	head = skb->head;
	if (bpf_probe_read_kernel(&ver, 1, head + skb->network_header))
		return 0;
	ver >>= 4;
	if (ver == 4) {
		struct iphdr ih;

		if (bpf_probe_read_kernel(&ih, sizeof(ih), head + skb->network_header))
			return 0;
		src.family = AF_INET;
		__builtin_memcpy(src.addr, &ih.saddr, 4);
	} else if (ver == 6) {
		struct ipv6hdr ih6;

		if (bpf_probe_read_kernel(&ih6, sizeof(ih6), head + skb->network_header))
			return 0;
		src.family = AF_INET6;
		__builtin_memcpy(src.addr, &ih6.saddr, 16);
	} else {
		return 0;
	}
	if (bpf_probe_read_kernel(&uh, sizeof(uh), head + skb->transport_header))
		return 0;
	src.port = bpf_ntohs(uh.source);
	/* Not atomic (clang's BPF v1 has no fetch-and-add with a result): two CPUs queueing to one
	 * socket at the same instant may keep one source for both. */
	i = q->enq;
	q->ring[i & (UDP_Q_LEN - 1)] = src;
	q->enq = i + 1;
	return 0;
}

/* The source of the datagram a receive on an unconnected UDP socket took, into the event. */
static __always_inline void udp_recv_peer(struct l7_ev *h, struct sock *sk, __u64 skey)
{
	struct udp_q *q = bpf_map_lookup_elem(&l7_udp_q, &skey);
	struct udp_src *src;
	__u32 d;

	if (!q) {
		struct udp_q nq = {};
		__u32 qlen = sk->sk_receive_queue.qlen + BPF_CORE_READ((struct udp_sock *)sk, reader_queue.qlen);

		/* Followed from now on: the next datagrams' sources are kept; the ones queued already
		 * (their sources unknown) are received first, counted below zero. */
		nq.deq = 0 - qlen;
		bpf_map_update_elem(&l7_udp_q, &skey, &nq, BPF_NOEXIST);
		return;
	}
	d = q->deq;
	if ((__s32)(q->enq - d) > UDP_Q_LEN)
		d = q->enq - UDP_Q_LEN; /* more queued than kept: the oldest are lost */
	if (d == q->enq)
		return; /* more receives than datagrams seen queued (a missed wake-up) */
	q->deq = d + 1;
	if ((__s32)d < 0)
		return; /* queued before the socket was followed */
	src = &q->ring[d & (UDP_Q_LEN - 1)];
	if (src->family == h->family) {
		h->rport = src->port;
		__builtin_memcpy(h->raddr, src->addr, 16);
	} else if (src->family == AF_INET) {
		/* IPv4 on a dual-stack socket: the v4-mapped address. */
		__builtin_memset(h->raddr, 0, 10);
		h->raddr[10] = 0xff;
		h->raddr[11] = 0xff;
		__builtin_memcpy(&h->raddr[12], src->addr, 4);
		h->rport = src->port;
	}
}

/* ---- socket data --------------------------------------------------------------------------------- */

/* Payloads are taken where every send and receive of a socket passes (sock_sendmsg and
 * sock_recvmsg's tracepoints), not at the system call tracepoints: a syscall tracepoint with a
 * program puts every system call of every process of the host on the slow path and adds the perf
 * dispatch to each traced call (+280 ns per read or write of a process out of scope, see
 * bench/RESULTS.md); these fire for socket operations only, and a process out of scope pays one
 * load of its verdict there. The system call (its number, fd, buffer) is read from the registers
 * it saved on entry (x86-64 numbers). */
#define NR_READ	     0
#define NR_WRITE     1
#define NR_READV     19
#define NR_WRITEV    20
#define NR_SENDFILE  40
#define NR_SENDTO    44
#define NR_RECVFROM  45
#define NR_SENDMSG   46
#define NR_RECVMSG   47
#define NR_SPLICE    275
#define NR_RECVMMSG  299
#define NR_SENDMMSG  307
#define NR_URING     426
#define MSG_PEEK     2
#define MSG_ERRQUEUE 0x2000

/* sendmmsg/recvmmsg: one system call, one sock_sendmsg/sock_recvmsg (and tracepoint) per message,
 * in order, the kernel writing each message's msg_len to the user's array once it is done. Which
 * message a firing is for is kept per thread: the next one of the same array when the previous
 * message's msg_len already holds what that message moved (written by the kernel between the two),
 * else the first one of a new call; a message that fails ends the call (see sock_data). Ambiguous
 * only when a call stops early without a failing message (recvmmsg's timeout, a partial send on a
 * stream socket) and the next one uses the same array without clearing its msg_len fields. */
struct mmsg_pos {
	__u64 vec;
	__u32 next; /* index of the message the next firing of the same call is for */
	__u32 last; /* what message next - 1 moved */
	__u32 nr;   /* sendmmsg or recvmmsg: a server answering a batch on the array it received it in
		     * leaves msg_len fields that match */
	__u32 pad;
};

/* key: pid_tgid */
GG_MAP(l7_mmsg, BPF_MAP_TYPE_LRU_HASH, __u64, struct mmsg_pos, L7_INFLIGHT_MAX, 0);

/* Offset of msg_len in struct mmsghdr (x86-64: after the 56-byte user_msghdr; 64 bytes each). */
#define MMSG_SIZE   64
#define MMSG_LENOFF 56

/* The index of the message this firing of a sendmmsg/recvmmsg is for (ret: what it moved, < 0 ends
 * the call), or -1 past the array. */
static __always_inline int mmsg_index(__u64 id, __u64 vec, __u32 vlen, int ret, __u32 nr)
{
	struct mmsg_pos *p = bpf_map_lookup_elem(&l7_mmsg, &id), v = {.vec = vec, .nr = nr};
	__u32 idx = 0, ml = 0;

	if (p && p->vec == vec && p->nr == nr && p->next > 0 && p->next < vlen &&
	    !bpf_probe_read_user(&ml, sizeof(ml), (void *)(vec + (__u64)(p->next - 1) * MMSG_SIZE + MMSG_LENOFF)) &&
	    ml == p->last)
		idx = p->next;
	if (idx >= vlen || idx >= 1024)
		return -1;
	v.next = ret < 0 ? 0 : idx + 1;
	v.last = ret < 0 ? 0 : (__u32)ret;
	if (p)
		*p = v;
	else
		bpf_map_update_elem(&l7_mmsg, &id, &v, BPF_ANY);
	return (int)idx;
}

static __always_inline int sock_data(struct sock *sk, int ret, int flags, __u8 dir)
{
	__u64 id, nr, buf, ts, addr = 0, skey = (__u64)sk;
	struct task_struct *task;
	struct l7_ssl_call *ssl;
	struct l7_sock *s, tmp;
	struct pt_regs *regs;
	struct l7_buf *e;
	__u32 tgid, iovcnt = 0, want;
	__u16 family, proto;
	__u8 kind, evflags = 0;
	int fd;

	/* the ids by loads from the task (one helper call instead of two: each call and return costs
	 * ~10-40 ns on this VM) */
	task = bpf_get_current_task_btf();
	tgid = task->tgid;
	if (!in_scope(tgid))
		return 0;
	id = ((__u64)tgid << 32) | (__u32)task->pid;
	if (ret < 0) {
		/* a sendmmsg/recvmmsg ends at a message that fails (EAGAIN after the last datagram): the
		 * thread's next one starts at message 0, whatever its array's msg_len fields hold */
		struct mmsg_pos *p = bpf_map_lookup_elem(&l7_mmsg, &id);

		if (p)
			p->next = 0;
		if (dir == L7_DIR_SEND && sk->sk_protocol == IPPROTO_TCP) {
			/* a failed send leaves no time behind for the next one */
			struct l7_sk *x = bpf_sk_storage_get(&l7_sks, sk, 0, 0);

			if (x)
				x->send_ts = 0;
		}
		return 0;
	}
	family = sk->__sk_common.skc_family;
	proto = sk->sk_protocol;
	if ((family != AF_INET && family != AF_INET6) || (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return 0;
	if (task->flags & PF_KTHREAD)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return 0;
	/* io_uring's workers have no system call of their own (their saved registers are not one) */
	nr = (task->flags & PF_IO_WORKER) ? NR_URING : regs->orig_ax;
	fd = (int)regs->di;
	buf = regs->si;
	switch (nr) {
	case NR_READ:
	case NR_WRITE:
		kind = CK_BUF;
		break;
	case NR_READV:
	case NR_WRITEV:
		kind = CK_IOV;
		iovcnt = (__u32)regs->dx;
		break;
	case NR_SENDTO:
	case NR_RECVFROM:
		kind = CK_BUF;
		addr = regs->r8;
		break;
	case NR_SENDMSG:
	case NR_RECVMSG:
	case NR_SENDMMSG:
	case NR_RECVMMSG: {
		struct user_msghdr mh;
		__u64 at = buf; /* the msghdr: sendmmsg/recvmmsg's is the first of an mmsghdr array */

		if (nr == NR_SENDMMSG || nr == NR_RECVMMSG) {
			int idx = mmsg_index(id, buf, (__u32)regs->dx, ret, (__u32)nr);

			if (idx < 0)
				return 0;
			at += (__u64)idx * MMSG_SIZE;
		}
		if (bpf_probe_read_user(&mh, sizeof(mh), (void *)at))
			return 0;
		kind = CK_IOV;
		buf = (__u64)mh.msg_iov;
		iovcnt = (__u32)mh.msg_iovlen;
		addr = (__u64)mh.msg_name;
		break;
	}
	case NR_SENDFILE:
		kind = CK_SENDFILE;
		break;
	case NR_SPLICE:
		kind = CK_SENDFILE;
		fd = (int)regs->dx; /* fd_out */
		break;
	default: {
		/* io_uring (its buffer is in a submission entry this tracepoint cannot reach; the fd in
		 * the registers is the ring's), ...: counted, and on a TCP socket this process was seen
		 * using through its fd, its bytes are reported (a gap for the parsers). */
		struct l7_sk *known;

		if (!ret || (flags & (MSG_PEEK | MSG_ERRQUEUE)))
			return 0;
		stat_inc(L7_ST_UNKNOWN_CALL);
		known = proto == IPPROTO_TCP ? bpf_sk_storage_get(&l7_sks, sk, 0, 0) : NULL;
		if (!known || known->s.tgid != tgid)
			return 0;
		fd = known->s.fd;
		kind = CK_SENDFILE;
		break;
	}
	}
	/* a peek is read again; the error queue is not the peer's data */
	if (!ret || (flags & (MSG_PEEK | MSG_ERRQUEUE)))
		return 0;
	ts = 0;
	if (proto == IPPROTO_UDP) {
		sock_fill(&tmp, sk, tgid, fd, 1);
		s = &tmp;
		if (dir == L7_DIR_SEND) {
			struct udp_tx *t = bpf_task_storage_get(&l7_udp_tx, task, 0, 0);

			if (t && t->port == s->lport && t->port) {
				if (bpf_jiffies64() - t->jif <= SEND_TS_MAX_JIFFIES)
					ts = t->ts;
				t->port = 0;
			}
		}
	} else {
		struct l7_sk *x;
		int foreign = 0;

		x = sock_get(sk, tgid, fd, &foreign);
		if (!x && foreign) {
			/* io_uring's task work during another call: counted, and on a socket this process
			 * was seen using, its bytes reported (as for io_uring_enter, see above) */
			stat_inc(L7_ST_UNKNOWN_CALL);
			x = bpf_sk_storage_get(&l7_sks, sk, 0, 0);
			if (!x || x->s.tgid != tgid)
				return 0;
			fd = x->s.fd;
			kind = CK_SENDFILE;
		}
		if (!x)
			return 0;
		s = &x->s;
		if (s->enc)
			evflags = L7_EF_ENCRYPTED; /* a Go TLS connection: its plaintext comes from the uprobes */
		if (dir == L7_DIR_SEND && x->send_ts) {
			/* taken by this send (see l7_send_begin); one older than a tick is left over */
			if (bpf_jiffies64() - x->send_jif <= SEND_TS_MAX_JIFFIES)
				ts = x->send_ts;
			x->send_ts = 0;
		}
	}
	if (ssl_on) {
		ssl = bpf_task_storage_get(&l7_ssl, task, 0, 0);
		if (ssl && ssl->active) {
			/* Inside SSL_read/SSL_write: this is ciphertext, the plaintext comes at the return. */
			ssl->fd = fd;
			evflags = L7_EF_ENCRYPTED;
		}
	}
	if (!ts)
		ts = bpf_ktime_get_ns();
	e = ev_begin(s, skey, tgid, (__u32)id, fd, dir, ts);
	if (!e)
		return 0;
	e->h.total = (__u32)ret;
	e->h.flags |= evflags;
	want = cap_bytes;
	if (want > e->h.total)
		want = e->h.total;
	/* no parser takes UDP payloads without dns: their bytes are counted (l7_link), not copied */
	if (evflags || kind == CK_SENDFILE || !want || (proto == IPPROTO_UDP && !udp_on)) {
		if (!evflags)
			e->h.flags |= L7_EF_NOCOPY;
		want = 0;
	}
	if (proto == IPPROTO_UDP) {
		if (dir == L7_DIR_SEND) {
			peer_from_user(&e->h, addr);
		} else if (!e->h.rport) {
			udp_recv_peer(&e->h, sk, skey); /* an unconnected socket: the datagram's source */
		}
	}
	ev_send(e, kind, buf, iovcnt, want);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(l7_sock_send, struct sock *sk, int ret, int flags)
{
	return sock_data(sk, ret, flags, L7_DIR_SEND);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(l7_sock_recv, struct sock *sk, int ret, int flags)
{
	return sock_data(sk, ret, flags, L7_DIR_RECV);
}

/* A TCP send of a thread in scope enters tcp_sendmsg_locked: its time, for its send event (see
 * l7_sk.send_ts). Fires once per chunk of a send (up to a GSO segment); the first one of a send sets
 * the time. Makes the socket's entry: a connection's first send is timed too. */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(l7_send_begin, struct sock *sk)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 jif;
	struct l7_sk *x;

	if ((task->flags & PF_KTHREAD) || !in_scope(task->tgid))
		return 0;
	x = bpf_sk_storage_get(&l7_sks, sk, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!x)
		return 0;
	jif = bpf_jiffies64();
	if (x->send_ts && jif - x->send_jif <= SEND_TS_MAX_JIFFIES)
		return 0; /* a later chunk of the same send */
	x->send_ts = bpf_ktime_get_ns();
	x->send_jif = jif;
	return 0;
}

/* A UDP datagram queued for transmission by a thread in scope: its time (see l7_udp_tx). Fires for every
 * packet of the host; a TCP one leaves at the protocol test (TCP sends are timed by l7_send_begin). */
SEC("tp_btf/net_dev_queue")
int BPF_PROG(l7_xmit_q, struct sk_buff *skb)
{
	struct sock *sk = skb->sk;
	struct task_struct *task;
	struct udp_tx *t;

	if (!sk || sk->sk_protocol != IPPROTO_UDP)
		return 0;
	task = bpf_get_current_task_btf();
	if ((task->flags & PF_KTHREAD) || !in_scope(task->tgid))
		return 0;
	t = bpf_task_storage_get(&l7_udp_tx, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	t->ts = bpf_ktime_get_ns();
	t->jif = bpf_jiffies64();
	t->port = sk->__sk_common.skc_num;
	return 0;
}

/* TCP handshakes give a socket its role; its end (TCP_CLOSE, in whatever context) is the close event
 * of the process that used it. */
#define TCP_SYN_SENT 2
#define TCP_SYN_RECV 3
#define TCP_CLOSE_ST 7

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(l7_state, const struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk, fk;
	struct l7_ev ev = {};
	struct l7_fd *f;
	struct l7_sk *x;
	__u8 role;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	if (newstate == TCP_SYN_SENT || newstate == TCP_SYN_RECV) {
		role = newstate == TCP_SYN_SENT ? L7_ROLE_CLIENT : L7_ROLE_SERVER;
		/* connect() runs in the process: leave processes out of scope alone. */
		if (role == L7_ROLE_CLIENT && !in_scope(gg_current_tgid()))
			return 0;
		bpf_map_update_elem(&l7_role, &key, &role, BPF_ANY);
		return 0;
	}
	if (newstate != TCP_CLOSE_ST)
		return 0;
	bpf_map_delete_elem(&l7_role, &key);
	x = bpf_sk_storage_get(&l7_sks, (struct sock *)sk, 0, 0);
	if (!x || !x->s.tgid)
		return 0;
	ev.type = L7_EV_CLOSE;
	ev.tgid = x->s.tgid;
	ev.fd = x->s.fd;
	ev.sk = key;
	ev.ts_ns = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&l7_events, &ev, sizeof(ev), BPF_RB_NO_WAKEUP))
		stat_inc(L7_ST_RB_FULL);
	fk = fd_key(x->s.tgid, x->s.fd);
	f = bpf_map_lookup_elem(&l7_fdsk, &fk);
	if (f && f->sk == key)
		bpf_map_delete_elem(&l7_fdsk, &fk);
	/* a later use of this socket is a new connection */
	x->s.tgid = 0;
	x->s.fd = -1;
	x->send_ts = 0;
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(l7_exit, struct task_struct *p)
{
	__u32 tgid = p->tgid, w;
	struct l7_ev ev = {};

	if (p->pid != tgid || tgid >= L7_VERDICT_PIDS)
		return 0;
	w = tgid >> 5;
	barrier_var(w);
	w &= L7_VERDICT_PIDS / 32 - 1;
	if (((verdict[w] >> ((tgid & 31) * 2)) & 3) == 1) {
		ev.type = L7_EV_EXIT;
		ev.tgid = tgid;
		ev.ts_ns = bpf_ktime_get_ns();
		if (bpf_ringbuf_output(&l7_events, &ev, sizeof(ev), BPF_RB_NO_WAKEUP))
			stat_inc(L7_ST_RB_FULL);
	}
	/* The tgid may be reused by an unrelated process: forget its verdict. */
	__sync_fetch_and_and(&verdict[w], ~((__u64)3 << ((tgid & 31) * 2)));
	return 0;
}

/* ---- OpenSSL ------------------------------------------------------------------------------------- */

static __always_inline int ssl_enter(__u64 ssl, __u64 buf, __u64 retp, __u8 dir)
{
	__u64 id = bpf_get_current_pid_tgid(), now;
	struct l7_ssl_call *c;

	if (!ssl_on || !in_scope(id >> 32))
		return 0;
	c = bpf_task_storage_get(&l7_ssl, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		stat_inc(L7_ST_INFLIGHT_FULL);
		return 0;
	}
	now = bpf_ktime_get_ns();
	/* an SSL call made inside another (a wrapper) keeps the outer one's state */
	if (c->active && now - c->ts < SSL_CALL_MAX_NS)
		return 0;
	c->ssl = ssl;
	c->buf = buf;
	c->retp = retp;
	c->ts = now;
	c->fd = -1;
	c->dir = dir;
	c->active = 1;
	return 0;
}

/* The plaintext of an SSL_read/SSL_write or a Go Read/Write (total bytes) as a data event on its socket. */
static __always_inline int tls_emit(__u64 id, int fd, __u8 dir, __u64 buf, __u32 total, __u64 ts)
{
	__u32 tgid = id >> 32, want;
	struct l7_sock *s;
	struct l7_buf *e;
	__u64 skey = 0;

	s = sock_of_fd(tgid, fd, &skey);
	if (!s) {
		stat_inc(L7_ST_SSL_NOFD);
		return 0;
	}
	e = ev_begin(s, skey, tgid, (__u32)id, fd, dir, ts);
	if (!e)
		return 0;
	e->h.flags |= L7_EF_SSL;
	e->h.total = total;
	want = cap_bytes;
	if (want > e->h.total)
		want = e->h.total;
	if (!want)
		e->h.flags |= L7_EF_NOCOPY;
	ev_send(e, CK_BUF, buf, 0, want);
	return 0;
}

static __always_inline int ssl_exit(long ret, int ex)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct l7_ssl_call *cp = bpf_task_storage_get(&l7_ssl, bpf_get_current_task_btf(), 0, 0);
	struct l7_ssl_call c;
	struct ssl_key sk = {};
	__u64 bytes = 0;
	__s32 *fdp;

	if (!cp || !cp->active)
		return 0;
	c = *cp;
	cp->active = 0;
	if (ex) {
		/* SSL_read_ex/SSL_write_ex return 1, the internal functions probed instead a count > 0 */
		if ((int)ret > 0 && c.retp)
			bpf_probe_read_user(&bytes, sizeof(bytes), (void *)c.retp);
	} else if ((int)ret > 0) {
		bytes = (__u64)(int)ret;
	}
	if (!bytes)
		return 0;
	sk.ssl = c.ssl;
	sk.tgid = tgid;
	fdp = bpf_map_lookup_elem(&l7_ssl_fd, &sk);
	if (c.fd >= 0) {
		/* an LRU update costs ~3 lookups: only when the SSL object moved to another fd */
		if (!fdp || *fdp != c.fd)
			bpf_map_update_elem(&l7_ssl_fd, &sk, &c.fd, BPF_ANY);
	} else {
		if (!fdp) {
			stat_inc(L7_ST_SSL_NOFD);
			return 0;
		}
		c.fd = *fdp;
	}
	return tls_emit(id, c.fd, c.dir, c.buf, bytes > 0xffffffffull ? 0xffffffffu : (__u32)bytes,
			c.dir == L7_DIR_SEND ? c.ts : bpf_ktime_get_ns());
}

/* A libssl function: its entry (the buffer; for the _ex ones also where the byte count is written) and its
 * return; the programs l7_<fn> and l7_<fn>_ret. */
#define L7_SSL_FN(fn, dir, ex)                                                           \
	SEC("uprobe")                                                                    \
	int BPF_KPROBE(l7_##fn, void *ssl, void *buf, __u64 num, void *nbytes)           \
	{                                                                                \
		return ssl_enter((__u64)ssl, (__u64)buf, (ex) ? (__u64)nbytes : 0, dir); \
	}                                                                                \
	SEC("uretprobe")                                                                 \
	int BPF_KRETPROBE(l7_##fn##_ret, long ret)                                       \
	{                                                                                \
		return ssl_exit(ret, ex);                                                \
	}

L7_SSL_FN(ssl_read, L7_DIR_RECV, 0)
L7_SSL_FN(ssl_write, L7_DIR_SEND, 0)
L7_SSL_FN(ssl_read_ex, L7_DIR_RECV, 1)
L7_SSL_FN(ssl_write_ex, L7_DIR_SEND, 1)

/* ---- Go crypto/tls ------------------------------------------------------------------------------- */

/* A Read or Write's byte count as an event's total. */
static __always_inline __u32 go_total(__s64 n)
{
	return n > 0xffffffffll ? 0xffffffffu : (__u32)n;
}

/* A crypto/tls.(*Conn).Read or Write between its entry and one of its ret instructions (no uretprobe
 * on Go: it moves goroutine stacks, which a hijacked return address breaks), per goroutine (r14 is
 * the current g in Go's register ABI, go >= 1.17): a goroutine may block in Read and resume on
 * another thread. */
struct go_key {
	__u32 tgid;
	__u32 pad;
	__u64 g;
};

struct go_call {
	__u64 buf;
	__u64 ts;
	__s32 fd;
	__u8 dir;
	__u8 pad[3];
};

GG_MAP(l7_go, BPF_MAP_TYPE_LRU_HASH, struct go_key, struct go_call, L7_INFLIGHT_MAX, 0);

/* The fd under a *tls.Conn, by offsets stable from go 1.x to 1.22 (checked on Debian's 1.19):
 * tls.Conn.conn (a net.Conn interface: itab, data) at 0, its data a *net.TCPConn whose first word is
 * conn.fd (*net.netFD); netFD starts with pfd (internal/poll.FD): fdmu (fdMutex, 16 bytes), then
 * Sysfd (int). -1 when a word cannot be read (another net.Conn type gives a wrong fd, which the socket
 * lookup then refuses). */
static __always_inline int go_conn_fd(__u64 conn)
{
	__u64 data = 0, nfd = 0;
	__s64 fd = -1;

	if (bpf_probe_read_user(&data, sizeof(data), (void *)(conn + 8)) || !data)
		return -1;
	if (bpf_probe_read_user(&nfd, sizeof(nfd), (void *)data) || !nfd)
		return -1;
	if (bpf_probe_read_user(&fd, sizeof(fd), (void *)(nfd + 16)))
		return -1;
	return fd >= 0 && fd < (1 << 30) ? (int)fd : -1;
}

/* Entry (after the stack check's cmp, at its jbe: emulated, the arguments still in registers):
 * rax = c *Conn, rbx/rcx = b []byte. A Write is emitted here, whole (crypto/tls writes all of b or
 * fails, and the connection then ends): at its return the response may already have been read by
 * another goroutine (net/http's readLoop), which would put the request behind its response in the
 * ring. A Read is kept for its ret instructions, where its count is known. */
static __always_inline int go_enter(struct pt_regs *ctx, __u8 dir)
{
	__u64 id = bpf_get_current_pid_tgid(), skey = 0;
	__u32 tgid = id >> 32;
	struct go_key k = {.tgid = tgid, .g = ctx->r14};
	struct go_call c = {.buf = ctx->bx, .dir = dir};
	struct l7_sock *s;

	if (!ssl_on || !in_scope(tgid))
		return 0;
	c.fd = go_conn_fd(ctx->ax);
	if (c.fd < 0) {
		stat_inc(L7_ST_SSL_NOFD);
		return 0;
	}
	c.ts = bpf_ktime_get_ns();
	/* The socket's own payloads are ciphertext from now on: counted, not parsed. */
	s = sock_of_fd(tgid, c.fd, &skey);
	if (s && !s->enc) {
		s->enc = 1;
		__sync_fetch_and_add(&enc_gen, 1); /* the socket's entry looks it up (sock_get) */
	}
	if (dir == L7_DIR_SEND) {
		if ((__s64)ctx->cx > 0)
			tls_emit(id, c.fd, dir, c.buf, go_total((__s64)ctx->cx), c.ts);
		return 0;
	}
	bpf_map_update_elem(&l7_go, &k, &c, BPF_ANY);
	return 0;
}

SEC("uprobe")
int l7_go_read(struct pt_regs *ctx)
{
	return go_enter(ctx, L7_DIR_RECV);
}

SEC("uprobe")
int l7_go_write(struct pt_regs *ctx)
{
	return go_enter(ctx, L7_DIR_SEND);
}

/* The end of a Read with its count n: the plaintext as a data event. */
static __always_inline int go_read_done(struct pt_regs *ctx, __s64 n)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct go_key k = {.tgid = id >> 32, .g = ctx->r14};
	struct go_call *cp = bpf_map_lookup_elem(&l7_go, &k);
	struct go_call c;

	if (!cp)
		return 0;
	c = *cp;
	bpf_map_delete_elem(&l7_go, &k);
	if (n <= 0)
		return 0;
	return tls_emit(id, c.fd, c.dir, c.buf, go_total(n), bpf_ktime_get_ns());
}

/* At a ret of Read: rax = n. A ret is single-stepped by the kernel (20 - 30 us a hit under this VM's
 * hypervisor, bench/RESULTS.md): used only where l7_go_defer cannot be placed. */
SEC("uprobe")
int l7_go_ret(struct pt_regs *ctx)
{
	return go_read_done(ctx, (__s64)ctx->ax);
}

/* At the entry (the stack check's jbe: emulated) of Read's deferred closure (crypto/tls.(*Conn).Read.
 * func1, c.in.Unlock), which Read calls just before each of its rets once its result is in its frame.
 * The attach cookie says where: bits 32-63 Read's start minus this site (signed), 16-31 Read's size,
 * 0-15 the result's offset in Read's frame. Called from Read itself (the return address is in Read),
 * Read's stack pointer is ours + 8; a call from the runtime (deferreturn after a panic) is skipped. */
SEC("uprobe")
int l7_go_defer(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), ra = 0, sp = ctx->sp;
	__u64 start = ctx->ip + (__s64)(__s32)(cookie >> 32);
	__s64 n = 0;

	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)sp) || ra - start >= ((cookie >> 16) & 0xffff))
		return 0;
	if (bpf_probe_read_user(&n, sizeof(n), (void *)(sp + 8 + (cookie & 0xffff))))
		return 0;
	return go_read_done(ctx, n);
}
