// SPDX-License-Identifier: GPL-2.0
/* l7probe.bpf.c - l7probe's kernel half: the payloads of socket system calls (syscall tracepoints)
 * and of OpenSSL's SSL_read/SSL_write (uprobes) of processes in scope, as bounded prefixes into one
 * ring buffer; user space tracks connections and parses protocols. */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "l7probe.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT	    00170000
#define S_IFSOCK    0140000
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define EINPROGRESS 115

/* Set by user space (the skeleton's .data/.bss). */
__u32 cap_bytes = L7_CAP_DEFAULT; /* payload prefix copied per call (0: count bytes only) */
__u32 ssl_on;			  /* follow SSL calls (support_ssl) */
/* Two bits per tgid: 00 not known yet, 01 in scope, 10 out. Cleared by user space when the scope
 * changes: the verdict of a process costs the scope maps' lookups once, then one load per call,
 * which is what every system call of a process out of scope pays. */
__u64 verdict[L7_VERDICT_PIDS / 32];

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, L7_RING_BYTES);
} l7_events SEC(".maps");

/* The TCP or UDP socket a (tgid, fd) is, with its addresses. A plain hash, not an LRU one (which
 * evicts before it is full): a socket's entry must stay until its close(2), which is what tells user
 * space the connection ended. Entries of processes that exit without closing are swept by user
 * space. */
struct l7_sock {
	__u64 sk;
	__u8 is_sock;
	__u8 role;
	__u8 udp;
	__u8 pad;
	__u16 family;
	__u16 lport;
	__u16 rport;
	__u16 pad2;
	__u8 laddr[16];
	__u8 raddr[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, L7_SOCKS_MAX);
	__type(key, __u64); /* tgid << 32 | fd */
	__type(value, struct l7_sock);
} l7_socks SEC(".maps");

/* (tgid, fd)s found not to be TCP/UDP sockets, so that the fd table is walked once per fd, not once
 * per call; dropped at close(2), LRU: a miss only costs a new walk. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, L7_SOCKS_MAX);
	__type(key, __u64);
	__type(value, __u8);
} l7_nonsock SEC(".maps");

enum call_kind { CK_BUF = 0, CK_IOV, CK_SENDFILE, CK_CONNECT };

/* A system call between its entry and its exit, per thread. */
struct l7_call {
	__u64 ts;
	__u64 buf;  /* buffer, or iovec array */
	__u64 addr; /* user sockaddr (sendto/recvfrom, msg_name), 0 when none */
	__s64 nr;   /* syscall number (the low 32 bits of the tracepoint field are __syscall_nr): an exit only takes the
		       entry of its own call */
	__u32 iovcnt;
	__s32 fd;
	__u8 kind;
	__u8 dir;
	__u8 flags;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, L7_INFLIGHT_MAX);
	__type(key, __u64); /* pid_tgid */
	__type(value, struct l7_call);
} l7_inflight SEC(".maps");

/* An SSL_read/SSL_write between its entry and its return, per thread; fd is set by the read or write
 * system call OpenSSL makes inside it. */
struct l7_ssl_call {
	__u64 ssl;
	__u64 buf;
	__u64 retp; /* size_t *readbytes/written of the _ex variants, 0 otherwise */
	__u64 ts;
	__s32 fd;
	__u8 dir;
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, L7_INFLIGHT_MAX);
	__type(key, __u64);
	__type(value, struct l7_ssl_call);
} l7_ssl SEC(".maps");

/* The fd an SSL object was last seen using, for calls served from OpenSSL's buffer without a system
 * call. */
struct ssl_key {
	__u64 ssl;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, L7_SOCKS_MAX);
	__type(key, struct ssl_key);
	__type(value, __s32);
} l7_ssl_fd SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct l7_buf);
} l7_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, L7_ST__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} l7_stats SEC(".maps");

static __always_inline void stat_inc(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&l7_stats, &i);

	if (v)
		(*v)++;
}

/* ---- scope --------------------------------------------------------------------------------------- */

static __always_inline int in_scope(__u32 tgid)
{
	__u32 w, sh;
	__u64 bits;
	int in;

	if (tgid >= L7_VERDICT_PIDS)
		return gg_scope_current();
	w = tgid >> 5;
	barrier_var(w);
	w &= L7_VERDICT_PIDS / 32 - 1;
	sh = (tgid & 31) * 2;
	bits = (verdict[w] >> sh) & 3;
	if (bits)
		return bits == 1;
	in = gg_scope_current();
	__sync_fetch_and_or(&verdict[w], (__u64)(in ? 1 : 2) << sh);
	return in;
}

/* The cached verdict of tgid is "in scope" (or it is beyond the bitmap): for exits, whose entry
 * computed the verdict, so that a process out of scope pays one load there too, not a hash lookup. */
static __always_inline int verdict_in(__u32 tgid)
{
	__u32 w;

	if (tgid >= L7_VERDICT_PIDS)
		return 1;
	w = tgid >> 5;
	barrier_var(w);
	w &= L7_VERDICT_PIDS / 32 - 1;
	return ((verdict[w] >> ((tgid & 31) * 2)) & 3) == 1;
}

/* ---- sockets ------------------------------------------------------------------------------------- */

static __always_inline __u64 sock_key(__u32 tgid, int fd)
{
	return ((__u64)tgid << 32) | (__u32)fd;
}

/* Walk the current task's fd table for fd and cache what it is. NULL when it is not a TCP/UDP
 * socket (or the fd is not open). */
static __always_inline struct l7_sock *sock_walk(__u32 tgid, int fd, __u8 role)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct l7_sock v = {};
	struct file **fds;
	struct file *f = NULL;
	struct sock *sk;
	__u64 key = sock_key(tgid, fd);
	unsigned int max;
	__u16 mode, proto;

	if (fd < 0)
		return NULL;
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((unsigned int)fd >= max)
		return NULL;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) == S_IFSOCK) {
		struct socket *so = BPF_CORE_READ(f, private_data);

		sk = BPF_CORE_READ(so, sk);
		v.family = BPF_CORE_READ(sk, __sk_common.skc_family);
		proto = BPF_CORE_READ(sk, sk_protocol);
		if (sk && (v.family == AF_INET || v.family == AF_INET6) &&
		    (proto == IPPROTO_TCP || proto == IPPROTO_UDP)) {
			v.is_sock = 1;
			v.sk = (__u64)sk;
			v.role = role;
			v.udp = proto == IPPROTO_UDP;
			v.lport = BPF_CORE_READ(sk, __sk_common.skc_num);
			v.rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
			if (v.family == AF_INET6) {
				BPF_CORE_READ_INTO(&v.laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
				BPF_CORE_READ_INTO(&v.raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
			} else {
				BPF_CORE_READ_INTO((__u32 *)v.laddr, sk, __sk_common.skc_rcv_saddr);
				BPF_CORE_READ_INTO((__u32 *)v.raddr, sk, __sk_common.skc_daddr);
			}
		}
	}
	if (!v.is_sock) {
		__u8 one = 1;

		bpf_map_update_elem(&l7_nonsock, &key, &one, BPF_ANY);
		return NULL;
	}
	if (bpf_map_update_elem(&l7_socks, &key, &v, BPF_ANY)) {
		stat_inc(L7_ST_SOCKS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&l7_socks, &key);
}

/* The cached socket of (tgid, fd), walking the fd table on a miss. */
static __always_inline struct l7_sock *sock_get(__u32 tgid, int fd)
{
	__u64 key = sock_key(tgid, fd);
	struct l7_sock *s = bpf_map_lookup_elem(&l7_socks, &key);

	if (s)
		return s;
	if (bpf_map_lookup_elem(&l7_nonsock, &key))
		return NULL;
	return sock_walk(tgid, fd, L7_ROLE_UNKNOWN);
}

/* A new connection on fd (connect or accept returned): forget what was cached, walk again. */
static __always_inline void sock_new(__u32 tgid, int fd, __u8 role)
{
	__u64 key = sock_key(tgid, fd);

	bpf_map_delete_elem(&l7_socks, &key);
	bpf_map_delete_elem(&l7_nonsock, &key);
	sock_walk(tgid, fd, role);
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

static __always_inline struct l7_buf *ev_begin(const struct l7_sock *s, __u32 tgid, __u32 pid, int fd, __u8 dir,
					       __u64 ts)
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
	e->h.sk = s->sk;
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

/* ---- socket system calls ------------------------------------------------------------------------- */

static __always_inline int data_enter(long nr, int fd, __u64 buf, __u32 iovcnt, __u64 addr, __u8 kind, __u8 dir)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct l7_ssl_call *ssl;
	struct l7_call c = {};

	if (!in_scope(tgid))
		return 0;
	if (!sock_get(tgid, fd))
		return 0;
	c.ts = bpf_ktime_get_ns();
	c.nr = (int)nr;
	c.buf = buf;
	c.addr = addr;
	c.iovcnt = iovcnt;
	c.fd = fd;
	c.kind = kind;
	c.dir = dir;
	if (ssl_on) {
		ssl = bpf_map_lookup_elem(&l7_ssl, &id);
		if (ssl) {
			/* Inside SSL_read/SSL_write: this is ciphertext, the plaintext comes at the return. */
			ssl->fd = fd;
			c.flags = L7_EF_ENCRYPTED;
		}
	}
	if (bpf_map_update_elem(&l7_inflight, &id, &c, BPF_ANY))
		stat_inc(L7_ST_INFLIGHT_FULL);
	return 0;
}

static __always_inline int data_exit(long nr, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct l7_call *cp;
	struct l7_call c;
	struct l7_sock *s;
	struct l7_buf *e;
	__u64 key;
	__u32 want;

	if (!verdict_in(tgid))
		return 0;
	cp = bpf_map_lookup_elem(&l7_inflight, &id);
	if (!cp)
		return 0;
	c = *cp;
	bpf_map_delete_elem(&l7_inflight, &id);
	if (ret <= 0 || c.nr != (int)nr)
		return 0;
	key = sock_key(tgid, c.fd);
	s = bpf_map_lookup_elem(&l7_socks, &key);
	if (!s || !s->is_sock)
		return 0;
	e = ev_begin(s, tgid, (__u32)id, c.fd, c.dir, c.dir == L7_DIR_SEND ? c.ts : bpf_ktime_get_ns());
	if (!e)
		return 0;
	e->h.total = ret > 0xffffffffL ? 0xffffffffu : (__u32)ret;
	e->h.flags |= c.flags;
	want = cap_bytes;
	if (want > e->h.total)
		want = e->h.total;
	if ((c.flags & L7_EF_ENCRYPTED) || c.kind == CK_SENDFILE || !want) {
		if (!(c.flags & L7_EF_ENCRYPTED))
			e->h.flags |= L7_EF_NOCOPY;
	} else if (c.kind == CK_IOV) {
		e->h.len = copy_iov(e, c.buf, c.iovcnt, want);
	} else {
		e->h.len = copy_buf(e, c.buf, want);
	}
	if (e->h.len < e->h.total && !(e->h.flags & (L7_EF_ENCRYPTED | L7_EF_NOCOPY)))
		stat_inc(L7_ST_TRUNCATED);
	if (s->udp && c.addr)
		peer_from_user(&e->h, c.addr);
	ev_submit(e);
	return 0;
}

/* sendmsg/recvmsg: the iovecs and the peer address from the user's msghdr. */
static __always_inline int msg_enter(long nr, int fd, __u64 umsg, __u8 dir)
{
	struct user_msghdr mh;

	if (bpf_probe_read_user(&mh, sizeof(mh), (void *)umsg))
		return 0;
	return data_enter(nr, fd, (__u64)mh.msg_iov, (__u32)mh.msg_iovlen, (__u64)mh.msg_name, CK_IOV, dir);
}

SEC("tracepoint/syscalls/sys_enter_read")
int l7_enter_read(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], ctx->args[1], 0, 0, CK_BUF, L7_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_read")
int l7_exit_read(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_write")
int l7_enter_write(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], ctx->args[1], 0, 0, CK_BUF, L7_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_write")
int l7_exit_write(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_readv")
int l7_enter_readv(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], ctx->args[1], (__u32)ctx->args[2], 0, CK_IOV, L7_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_readv")
int l7_exit_readv(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_writev")
int l7_enter_writev(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], ctx->args[1], (__u32)ctx->args[2], 0, CK_IOV, L7_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_writev")
int l7_exit_writev(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_sendto")
int l7_enter_sendto(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], ctx->args[1], 0, ctx->args[4], CK_BUF, L7_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int l7_exit_sendto(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_recvfrom")
int l7_enter_recvfrom(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], ctx->args[1], 0, ctx->args[4], CK_BUF, L7_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int l7_exit_recvfrom(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int l7_enter_sendmsg(struct trace_event_raw_sys_enter *ctx)
{
	return msg_enter(ctx->id, (int)ctx->args[0], ctx->args[1], L7_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int l7_exit_sendmsg(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_recvmsg")
int l7_enter_recvmsg(struct trace_event_raw_sys_enter *ctx)
{
	return msg_enter(ctx->id, (int)ctx->args[0], ctx->args[1], L7_DIR_RECV);
}

SEC("tracepoint/syscalls/sys_exit_recvmsg")
int l7_exit_recvmsg(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

/* sendfile(out_fd, in_fd, ...): a body the parsers skip by count (nginx serves files so). */
SEC("tracepoint/syscalls/sys_enter_sendfile64")
int l7_enter_sendfile(struct trace_event_raw_sys_enter *ctx)
{
	return data_enter(ctx->id, (int)ctx->args[0], 0, 0, 0, CK_SENDFILE, L7_DIR_SEND);
}

SEC("tracepoint/syscalls/sys_exit_sendfile64")
int l7_exit_sendfile(struct trace_event_raw_sys_exit *ctx)
{
	return data_exit(ctx->id, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_connect")
int l7_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct l7_call c = {.fd = (int)ctx->args[0], .kind = CK_CONNECT};

	if (!in_scope(id >> 32))
		return 0;
	if (bpf_map_update_elem(&l7_inflight, &id, &c, BPF_ANY))
		stat_inc(L7_ST_INFLIGHT_FULL);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_connect")
int l7_exit_connect(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct l7_call *cp;
	int fd;

	if (!verdict_in(id >> 32))
		return 0;
	cp = bpf_map_lookup_elem(&l7_inflight, &id);
	if (!cp)
		return 0;
	fd = cp->fd;
	if (cp->kind != CK_CONNECT) /* a stale entry of another call */
		fd = -1;
	bpf_map_delete_elem(&l7_inflight, &id);
	/* A non-blocking connect has its addresses set already when it returns EINPROGRESS. */
	if (fd >= 0 && (ctx->ret == 0 || ctx->ret == -EINPROGRESS))
		sock_new(id >> 32, fd, L7_ROLE_CLIENT);
	return 0;
}

static __always_inline int accept_exit(long ret)
{
	__u32 tgid = gg_current_tgid();

	if (ret < 0 || !in_scope(tgid))
		return 0;
	sock_new(tgid, (int)ret, L7_ROLE_SERVER);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept")
int l7_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return accept_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int l7_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return accept_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_close")
int l7_enter_close(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	int fd = (int)ctx->args[0];
	__u64 key = sock_key(tgid, fd);
	struct l7_sock *s;
	struct l7_ev ev = {};

	if (!in_scope(tgid))
		return 0;
	s = bpf_map_lookup_elem(&l7_socks, &key);
	if (!s) {
		bpf_map_delete_elem(&l7_nonsock, &key);
		return 0;
	}
	ev.type = L7_EV_CLOSE;
	ev.tgid = tgid;
	ev.pid = (__u32)id;
	ev.fd = fd;
	ev.sk = s->sk;
	ev.ts_ns = bpf_ktime_get_ns();
	if (bpf_ringbuf_output(&l7_events, &ev, sizeof(ev), BPF_RB_NO_WAKEUP))
		stat_inc(L7_ST_RB_FULL);
	bpf_map_delete_elem(&l7_socks, &key);
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
	__u64 id = bpf_get_current_pid_tgid();
	struct l7_ssl_call c = {.ssl = ssl, .buf = buf, .retp = retp, .fd = -1, .dir = dir};

	if (!ssl_on || !in_scope(id >> 32))
		return 0;
	c.ts = bpf_ktime_get_ns();
	/* NOEXIST: an SSL call made inside another (a wrapper) keeps the outer one's state. */
	bpf_map_update_elem(&l7_ssl, &id, &c, BPF_NOEXIST);
	return 0;
}

static __always_inline int ssl_exit(long ret, int ex)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct l7_ssl_call *cp = bpf_map_lookup_elem(&l7_ssl, &id);
	struct l7_ssl_call c;
	struct ssl_key sk = {};
	struct l7_sock *s;
	struct l7_buf *e;
	__u64 bytes = 0;
	__u32 want;
	__s32 *fdp;

	if (!cp)
		return 0;
	c = *cp;
	bpf_map_delete_elem(&l7_ssl, &id);
	if (ex) {
		if (ret == 1 && c.retp)
			bpf_probe_read_user(&bytes, sizeof(bytes), (void *)c.retp);
	} else if ((int)ret > 0) {
		bytes = (__u64)(int)ret;
	}
	if (!bytes)
		return 0;
	sk.ssl = c.ssl;
	sk.tgid = tgid;
	if (c.fd >= 0) {
		bpf_map_update_elem(&l7_ssl_fd, &sk, &c.fd, BPF_ANY);
	} else {
		fdp = bpf_map_lookup_elem(&l7_ssl_fd, &sk);
		if (!fdp) {
			stat_inc(L7_ST_SSL_NOFD);
			return 0;
		}
		c.fd = *fdp;
	}
	s = sock_get(tgid, c.fd);
	if (!s) {
		stat_inc(L7_ST_SSL_NOFD);
		return 0;
	}
	e = ev_begin(s, tgid, (__u32)id, c.fd, c.dir, c.dir == L7_DIR_SEND ? c.ts : bpf_ktime_get_ns());
	if (!e)
		return 0;
	e->h.flags |= L7_EF_SSL;
	e->h.total = bytes > 0xffffffffull ? 0xffffffffu : (__u32)bytes;
	want = cap_bytes;
	if (want > e->h.total)
		want = e->h.total;
	if (want)
		e->h.len = copy_buf(e, c.buf, want);
	else
		e->h.flags |= L7_EF_NOCOPY;
	if (e->h.len < e->h.total && want)
		stat_inc(L7_ST_TRUNCATED);
	ev_submit(e);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(l7_ssl_read, void *ssl, void *buf)
{
	return ssl_enter((__u64)ssl, (__u64)buf, 0, L7_DIR_RECV);
}

SEC("uretprobe")
int BPF_KRETPROBE(l7_ssl_read_ret, long ret)
{
	return ssl_exit(ret, 0);
}

SEC("uprobe")
int BPF_KPROBE(l7_ssl_write, void *ssl, void *buf)
{
	return ssl_enter((__u64)ssl, (__u64)buf, 0, L7_DIR_SEND);
}

SEC("uretprobe")
int BPF_KRETPROBE(l7_ssl_write_ret, long ret)
{
	return ssl_exit(ret, 0);
}

SEC("uprobe")
int BPF_KPROBE(l7_ssl_read_ex, void *ssl, void *buf, __u64 num, void *readbytes)
{
	return ssl_enter((__u64)ssl, (__u64)buf, (__u64)readbytes, L7_DIR_RECV);
}

SEC("uretprobe")
int BPF_KRETPROBE(l7_ssl_read_ex_ret, long ret)
{
	return ssl_exit(ret, 1);
}

SEC("uprobe")
int BPF_KPROBE(l7_ssl_write_ex, void *ssl, void *buf, __u64 num, void *written)
{
	return ssl_enter((__u64)ssl, (__u64)buf, (__u64)written, L7_DIR_SEND);
}

SEC("uretprobe")
int BPF_KRETPROBE(l7_ssl_write_ex_ret, long ret)
{
	return ssl_exit(ret, 1);
}
