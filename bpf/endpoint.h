/* endpoint.h - types shared by endpoint's kernel half (endpoint.bpf.c) and user half
 * (probes/endpoint/): listening sockets, outgoing connects, UDP sockets and socket-less drops. */
#ifndef GG_ENDPOINT_H
#define GG_ENDPOINT_H

#include "gg_common.h"

#define EP_LISTEN_MAX  4096
#define EP_CONNECT_MAX 8192
#define EP_PENDING_MAX 16384
#define EP_UDP_MAX     8192
#define EP_DROP_MAX    1024

/* ep_listen.flags, ep_udp.flags */
#define EP_F_CLOSED	  0x01 /* the socket closed: final values, reported once more then deleted */
#define EP_F_ACCEPTQ_FULL 0x02 /* the accept queue was full at some point since the last snapshot */

/* A listening TCP socket (key: its address). Counters are cumulative since it started listening. */
struct ep_listen {
	__u64 sk;
	__u64 cookie;
	__u64 cgroup_id;
	__u32 tgid;
	__u32 netns;
	char comm[16];
	__u8 family;
	__u8 flags;
	__u16 port;
	__u32 pad;
	__u8 addr[16];
	__u64 passive_open;	   /* SYN_RECV -> ESTABLISHED */
	__u64 passive_open_failed; /* SYN_RECV -> CLOSE */
	__u64 retran_synacks;
	__u64 listen_drops;    /* sk_drops: every connection request the listener dropped */
	__u64 accept_overflow; /* listen drops while the accept queue was full */
	__u64 syn_overflow;    /* listen drops while it was not (SYN queue full, memory) */
	__u32 drops_seen;      /* sk_drops at the last snapshot */
	__u32 acceptq_len;     /* at the last snapshot */
	__u32 acceptq_max;
	__u32 synq_len;
	__u64 hs_sum_us; /* handshake RTT (SYN-ACK to ACK), sum and histogram, us */
	__u64 hs_hist[GG_LOG2_SLOTS];
};

/* Outgoing connects of one process to one destination (address, port). */
struct ep_connect_key {
	__u32 tgid;
	__u16 rport;
	__u8 family;
	__u8 pad;
	__u8 raddr[16];
};

struct ep_connect {
	char comm[16];
	__u64 cgroup_id;
	__u64 active_open;	  /* SYN_SENT -> ESTABLISHED */
	__u64 active_open_failed; /* SYN_SENT -> CLOSE */
	__u64 syn_retrans;
	__u64 lat_sum_us; /* connect() to ESTABLISHED, sum and histogram, us */
	__u64 lat_hist[GG_LOG2_SLOTS];
};

/* A connect in progress (key: socket address). */
struct ep_pending {
	struct ep_connect_key key;
	char comm[16];
	__u64 cgroup_id;
	__u64 start_ns;
	__u32 syn_retrans;
	__u32 pad;
};

/* A UDP socket (key: its address), from its first send or receive. */
struct ep_udp {
	__u64 sk;
	__u64 cookie;
	__u64 cgroup_id;
	__u32 tgid;
	__u8 family;
	__u8 flags;
	__u16 port;
	char comm[16];
	__u8 addr[16];
	__u64 tx_bytes;
	__u64 rx_bytes;
	__u64 tx_pkts;	  /* send calls that sent something */
	__u64 rx_pkts;	  /* receive calls that got something */
	__u64 rcv_drops;  /* datagrams the socket could not queue (udp_fail_queue_rcv_skb) */
	__s32 last_err;	  /* errno of the last queueing failure */
	__u32 sk_drops;	  /* the socket's own drop counter, at the last snapshot */
	__u32 rmem_alloc; /* bytes queued for reading, at the last snapshot */
	__u32 pad;
};

/* Packets freed as dropped, by protocol, reason and (for NO_SOCKET) destination port. */
struct ep_drop_key {
	__u16 reason; /* enum skb_drop_reason */
	__u16 port;   /* destination port for NO_SOCKET drops, else 0 */
	__u8 proto;   /* IPPROTO_TCP or IPPROTO_UDP */
	__u8 pad[3];
};

#endif
