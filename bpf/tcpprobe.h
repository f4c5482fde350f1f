/* tcpprobe.h - types shared by tcpprobe's kernel half (tcpprobe.bpf.c) and user half
 * (probes/tcpprobe/): one entry per TCP link in the live and closed link maps. */
#ifndef GG_TCPPROBE_H
#define GG_TCPPROBE_H

#include "gg_common.h"

#define TCP_LINKS_MAX 16384u /* live links tracked (map size; -m changes it) */
/* Bytes of the closed-link ring (~1,500 links; -m smaller than 4096 shrinks it). User space is woken at a
 * quarter full, so at 55,000 closes a second the drain has ~20 ms to run before a close is lost (and
 * counted: tcp_closed_lost, "closed links lost" in the log). */
#define TCP_CLOSED_RING	    (2u << 20)
#define TCP_CLOSED_RING_MIN (256u << 10)

/* Roles, as gala-gopher's `role` key. */
#define TCP_ROLE_SERVER	 0
#define TCP_ROLE_CLIENT	 1
#define TCP_ROLE_UNKNOWN 2 /* link found established: user space decides by the port range */

/* tcp_link.flags */
#define TCP_LF_CLOSED	      0x01 /* reached TCP_CLOSE: final values */
#define TCP_LF_CONNECT_FAILED 0x02 /* SYN_SENT -> CLOSE */
#define TCP_LF_OUT_OF_SCOPE   0x04 /* attributed to a process out of scope: not reported */
#define TCP_LF_ESTABLISHED    0x08 /* reached ESTABLISHED */
#define TCP_LF_STALE	      0x10 /* the socket was found freed or reused by the snapshot walk */
#define TCP_LF_SEEDED	      0x20 /* found established by the seeding iterator (opened before us) */
#define TCP_LF_TGID_GUESS     0x40 /* passive open: tgid is the listener's, until the iterator finds the holder */
#define TCP_LF_GUESS_HINT     0x80 /* counted in tcp_guess_hint (kernel side only) until it closes */

/* Sub-probe bits (rodata/bss `tcp_subprobes`): which hooks do work. */
#define TCP_SP_ABNORMAL 0x01 /* tcp_abnormal */
#define TCP_SP_RTT	0x02 /* tcp_rtt */
#define TCP_SP_WINDOWS	0x04 /* tcp_windows */
#define TCP_SP_RATE	0x08 /* tcp_rate */
#define TCP_SP_SRTT	0x10 /* tcp_srtt */
#define TCP_SP_SOCKBUF	0x20 /* tcp_sockbuf */
#define TCP_SP_STATS	0x40 /* tcp_stats */
#define TCP_SP_DELAY	0x80 /* tcp_delay */
#define TCP_SP_ALL	0xffu
/* Not a sub-probe: the per-segment hook bit user space adds when tcp_rtt or tcp_windows was asked for
 * explicitly (by -P or the live configuration's "probe" list). */
#define TCP_SP_SEGMENT 0x100u

/* seg_work (.bss): what the per-segment hook does. */
#define SEG_RTT	  0x1 /* per-segment RTT samples and zero windows */
#define SEG_DELAY 0x2 /* tcp_delay */

/* What the snapshot reads from the socket (struct tcp_sock and struct sock), cumulative or current. */
struct tcp_snap {
	__u64 bytes_acked;    /* sent and acknowledged (tx) */
	__u64 bytes_received; /* received in order (rx) */
	__u64 bytes_sent;     /* sent, retransmissions included */
	__u64 bytes_retrans;
	__u64 pacing_rate; /* bytes/s */
	__u64 max_pacing_rate;
	__u64 snap_ns; /* when (bpf_ktime_get_ns) */
	__u32 segs_in;
	__u32 segs_out;
	__u32 data_segs_in;
	__u32 data_segs_out;
	__u32 total_retrans; /* segments retransmitted over the link's life */
	__u32 lost_out;
	__u32 sacked_out;
	__u32 retrans_out;
	__u32 srtt_us; /* smoothed RTT, us */
	__u32 mdev_us;
	__u32 rcv_rtt_us; /* receiver-side RTT estimate, us (0 until measured) */
	__u32 snd_cwnd;	  /* segments */
	__u32 snd_ssthresh;
	__u32 snd_wnd; /* bytes */
	__u32 rcv_wnd;
	__u32 reordering;
	__u32 rto_us;
	__u32 ato_us;
	__u32 rcv_ssthresh;
	__u32 advmss;
	__u32 mss_cache;
	__u32 rcv_space;
	__u32 notsent_bytes;  /* write_seq - snd_nxt */
	__u32 notack_bytes;   /* snd_nxt - snd_una */
	__u32 rate_delivered; /* segments delivered in the last rate sample */
	__u32 rate_interval_us;
	__s32 sk_err;
	__s32 sk_err_soft;
	__u32 sk_drops;
	__s32 rmem_alloc;
	__s32 wmem_alloc;
	__s32 wmem_queued;
	__s32 omem_alloc;
	__s32 forward_alloc;
	__s32 rcvbuf;
	__s32 sndbuf;
	__s32 backlog_len;
	__u32 rcvq_len;
	__u32 wrq_len;
	__u32 errq_len;
	__u32 state;
	__u32 pad;
};

/* One TCP link (a socket), keyed by the socket's address in tcp_links; its histograms are in tcp_hists. */
struct tcp_link {
	__u64 sk;	      /* kernel address, identity only */
	__u64 cookie;	      /* socket cookie: tells a reused address from the same socket */
	__u64 cgroup_id;      /* cgroup v2 the socket was created in */
	__u64 open_ns;	      /* first seen (SYN_SENT, SYN_RECV or found established) */
	__u64 established_ns; /* unused (kept for the layout) */
	__u64 close_ns;
	__u32 tgid; /* 0 until attributed (connect, accept) */
	__u8 role;
	__u8 family; /* AF_INET or AF_INET6 */
	__u8 flags;
	__u8 pad0;
	__u16 lport; /* host order */
	__u16 rport;
	__u32 hists;	/* 1 once it has an entry in tcp_hists (a histogram sample) */
	__u8 laddr[16]; /* IPv4 in the first 4 bytes */
	__u8 raddr[16];
	char comm[16];
	struct tcp_snap s;
	/* Counted by hooks. */
	__u32 retrans_events; /* tcp_retransmit_skb */
	__u32 syn_retrans;    /* SYN retransmitted while connecting */
	__u32 send_rsts;
	__u32 recv_rsts;
	__u32 zero_snd_wnd;	/* the peer advertised a zero window (seen on an incoming segment) */
	__u32 zero_rcv_wnd;	/* we advertised a zero window */
	__u32 rcvq_full;	/* sock_rcvqueue_full */
	__u32 sndbuf_limit;	/* sock_exceed_buf_limit */
	__u32 drops;		/* kfree_skb with this socket */
	__u32 drops_backlog;	/* ... reason SOCKET_BACKLOG */
	__u32 drops_filter;	/* ... reason SOCKET_FILTER */
	__u32 drops_rmem;	/* ... reasons SOCKET_RCVBUFF, PROTO_MEM */
	__u32 last_drop_reason; /* enum skb_drop_reason */
	__u32 syn_srtt_us;	/* RTT of the handshake (srtt when ESTABLISHED was reached) */
	__u32 samples;		/* tcp_probe events seen */
	__u32 pad1;
};

/* A link's histograms, in tcp_hists under the same key: only for links that have samples (the snapshot
 * walk saw them established, or a per-segment / tcp_delay hook sampled them); tcp_link.hists says one
 * exists. Kept out of tcp_links so that a new link copies ~400 bytes instead of ~1.5 KB, which is what
 * every short connection paid for histograms it never fills. */
struct tcp_hists {
	__u64 srtt_sum_us;		   /* sum of srtt samples (per incoming segment) */
	__u64 srtt_hist[GG_LOG2_SLOTS];	   /* srtt per incoming segment, us */
	__u64 rcv_rtt_hist[GG_LOG2_SLOTS]; /* rcv_rtt per incoming segment, us */
	__u64 rcv_rtt_sum_us;
	__u32 rcv_rtt_samples;
	__u32 pad2;
	/* tcp_delay: receive delay (segment processed by TCP -> its last byte read by the application) and
	 * send delay (send() returned -> its last byte acknowledged by the peer), us. */
	__u64 rx_delay_hist[GG_LOG2_SLOTS];
	__u64 tx_delay_hist[GG_LOG2_SLOTS];
	__u64 rx_delay_sum_us;
	__u64 tx_delay_sum_us;
};

/* A closed link in tcp_closed: the link, then its histograms when it has some (tcp_link.hists); a
 * record without them is sizeof(struct tcp_link) bytes long, most of them with short connections. */
struct tcp_link_rec {
	struct tcp_link l;
	struct tcp_hists h;
};

#endif
