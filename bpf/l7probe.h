/* l7probe.h - types shared by l7probe's kernel half (bpf/l7probe.bpf.c) and user half
 * (probes/l7probe/): the events of the l7_events ring buffer and the loss counters. */
#ifndef GG_L7PROBE_H
#define GG_L7PROBE_H

/* Payload bytes a data event can carry (a power of two); the captured prefix (l7_cap, default
 * L7_CAP_DEFAULT) is at most this. */
#define L7_DATA_MAX    8192u
#define L7_CAP_DEFAULT 4096u
/* iovecs of readv/writev/sendmsg/recvmsg copied (the rest only counted). */
#define L7_IOV_MAX 32
/* Ring buffer of events (bytes, a power of two). */
#define L7_RING_BYTES (16u << 20)
/* Sockets followed at once (and the size of the cache of fds that are not sockets). */
#define L7_SOCKS_MAX 65536u
/* Threads inside a traced syscall or SSL call at once. */
#define L7_INFLIGHT_MAX 16384u
/* Scope verdict bitmap: two bits per tgid below this. */
#define L7_VERDICT_PIDS (4u * 1024u * 1024u)

/* Event types. */
enum l7_ev_type {
	L7_EV_DATA = 1,	 /* bytes moved by a syscall or an SSL call (header + captured prefix) */
	L7_EV_CLOSE = 2, /* close(2) of a socket fd */
	L7_EV_EXIT = 3,	 /* a process in scope exited */
};

/* Direction of a data event, from the process's side. */
enum l7_dir {
	L7_DIR_SEND = 0,
	L7_DIR_RECV = 1,
};

/* Role known from the system call that made the connection. */
enum l7_sock_role {
	L7_ROLE_UNKNOWN = 0, /* found in use (before the probe started, or fd passed) */
	L7_ROLE_CLIENT = 1,  /* connect() */
	L7_ROLE_SERVER = 2,  /* accept()/accept4() */
};

/* Data event flags. */
#define L7_EF_SSL	0x1 /* plaintext from SSL_read/SSL_write */
#define L7_EF_ENCRYPTED 0x2 /* a syscall made inside SSL_read/SSL_write: ciphertext, not captured */
#define L7_EF_UDP	0x4 /* the socket is a datagram socket */
#define L7_EF_NOCOPY	0x8 /* bytes not copied (sendfile, or capture off): all of total is a gap */

/* Every event starts with this header; data events are followed by len payload bytes. */
struct l7_ev {
	__u8 type;  /* enum l7_ev_type */
	__u8 dir;   /* enum l7_dir */
	__u8 flags; /* L7_EF_* */
	__u8 role;  /* enum l7_sock_role */
	__u32 tgid;
	__u32 pid;
	__s32 fd;
	__u64 ts_ns; /* CLOCK_MONOTONIC: entry of a send, exit of a receive */
	__u64 sk;    /* struct sock address: tells a reused fd from the connection before */
	__u32 total; /* bytes the call moved */
	__u32 len;   /* of which captured (a prefix) */
	__u16 family;
	__u16 lport; /* host order */
	__u16 rport; /* host order; for unconnected UDP the datagram's peer */
	__u16 pad;
	__u8 laddr[16]; /* IPv4 in the first 4 bytes */
	__u8 raddr[16];
};

/* Loss counters (a per-CPU array indexed by these). */
enum l7_stat {
	L7_ST_EVENTS = 0,    /* data events sent */
	L7_ST_RB_FULL,	     /* events lost: ring buffer full */
	L7_ST_TRUNCATED,     /* data events whose payload was cut to the capture size */
	L7_ST_INFLIGHT_FULL, /* calls not followed: too many threads inside calls at once */
	L7_ST_SSL_NOFD,	     /* SSL calls whose socket could not be found */
	L7_ST_IOV_TRUNC,     /* vectored calls with more iovecs than copied */
	L7_ST_SOCKS_FULL,    /* sockets not followed: their socket local storage entry could not be made */
	L7_ST_UNKNOWN_CALL,  /* socket payloads of calls whose buffer is not known (io_uring, ...) */
	L7_ST__COUNT,
};

#endif
