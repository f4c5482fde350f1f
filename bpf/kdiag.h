/* kdiag.h - types shared by kdiag's kernel half (bpf/kdiag.bpf.c) and user half (probes/kdiag/): packet
 * drops (skb:kfree_skb), hard/soft interrupt time and softirq delay, receive latency. */
#ifndef GG_KDIAG_H
#define GG_KDIAG_H

#include "gg_common.h"

/* Sub-probes (their bits, also the kernel half's conf.subprobes). */
#define KD_SP_DROP    0x1u /* kdiag_drop_reason, kdiag_drop_flow, drop events */
#define KD_SP_IRQ     0x2u /* kdiag_irq: hardirq/softirq time, softirq raise->entry delay */
#define KD_SP_RECVLAT 0x4u /* kdiag_recv_lat: netif_receive_skb -> the application's copy */

#define KD_STACK_MAX	32  /* kernel frames kept per event */
#define KD_REASON_SLOTS 256 /* drop reasons counted one by one; larger values (subsystem reasons) in the last */
#define KD_NR_SOFTIRQ	10  /* NR_SOFTIRQS */
#define KD_VEC_HARDIRQ	KD_NR_SOFTIRQ /* the time histograms' row for hard interrupts */
#define KD_NVEC		(KD_NR_SOFTIRQ + 1)
/* kd_irq_hist rows: time in vector v at v (hardirq at KD_VEC_HARDIRQ), raise->entry delay of softirq
 * vector v at KD_NVEC + v */
#define KD_IRQ_ROWS (2 * KD_NVEC)

#define KD_FLOW_MAP_MAX 8192  /* flows (per reason) between two reports in the kernel's drop map */
#define KD_RL_MAP_MAX	4096  /* flows between two reports in the kernel's receive latency map */
#define KD_RX_TS_MAX	16384 /* received skbs not yet read (LRU: the oldest are forgotten) */

/* A packet's flow, as its headers say (addresses in network order, IPv4 in the first 4 bytes). */
struct kd_flow {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport, dport; /* host order; 0 for protocols without ports */
	__u8 family;	    /* AF_INET, AF_INET6, 0: not IP */
	__u8 proto;	    /* IPPROTO_* */
	__u8 dir;	    /* enum kd_dir */
	__u8 pad;
	__u32 netns; /* inode number of the network namespace (0: unknown) */
};

enum kd_dir {
	KD_DIR_OUT = 0, /* not received (locally sent or forwarded before its input device was set) */
	KD_DIR_IN = 1,	/* received on skb_iif */
};

/* Key of the kernel's drop map: the flow and the reason. */
struct kd_drop_key {
	struct kd_flow flow;
	__u32 reason;
	__u32 pad;
};

struct kd_drop_val {
	__u64 count;
	__u64 cgid; /* cgroup v2 id of the socket (last seen; 0: no socket) */
};

/* A log2 histogram of nanoseconds with its sum and count. */
struct kd_hist {
	__u64 slots[GG_LOG2_SLOTS];
	__u64 sum_ns;
	__u64 count;
	__u64 max_ns;
};

/* Time in one device interrupt line's handlers (kd_hardirq, per-CPU hash keyed by the irq number). */
struct kd_hardirq_val {
	struct kd_hist h;
	char name[16]; /* the first handler's name (irqaction) */
};

#define KD_HARDIRQ_MAX 1024 /* interrupt lines */

/* Receive latency of one flow. */
struct kd_rl_val {
	struct kd_hist h;
	__u64 cgid;
	__u32 tgid; /* the reader */
	__u32 pad;
};

/* The kernel half's configuration (in .bss: user space writes it while the programs run). */
struct kd_conf {
	__u32 subprobes;
	__u32 events_per_sec; /* ring buffer records per second, all kinds together (0: none) */
	__u32 filter_reason;  /* 1: count only drops of reason `reason` */
	__u32 reason;
	__u16 port;	  /* 0: any; else one of the ports (source or destination) */
	__u8 addr_family; /* 0: any address; else one of the addresses equals addr */
	__u8 pad;
	__u8 addr[16];
	__u64 irq_thr_ns;	 /* event when a hardirq or softirq runs longer (0: never) */
	__u64 sirq_delay_thr_ns; /* event when a softirq waits longer after its raise (0: never) */
	__u64 recv_lat_thr_ns;	 /* event when a packet waits longer for its read (0: never) */
};

enum kd_ev_kind {
	KD_EV_DROP = 0,
	KD_EV_IRQ = 1,	      /* hardirq or softirq time over irq_thr */
	KD_EV_SIRQ_DELAY = 2, /* softirq raise->entry over sirq_delay_thr */
	KD_EV_RECVLAT = 3,    /* receive latency over recv_lat_thr */
	KD_EV_KINDS = 4,
};

/* Counters per event kind (kd_ev_stats, per-CPU array of KD_EV_KINDS). */
struct kd_ev_stat {
	__u64 sent;   /* records written to the ring buffer */
	__u64 capped; /* over events_per_sec: counted here, not sent */
	__u64 lost;   /* the ring buffer was full */
};

/* One ring buffer record. */
struct kd_event {
	__u32 kind; /* enum kd_ev_kind */
	__u32 cpu;
	__u64 ts_ns;	/* bpf_ktime_get_ns */
	__u64 value_ns; /* time, delay or latency (not for drops) */
	__u32 reason;	/* drop reason */
	__u32 vec;	/* softirq vector, KD_VEC_HARDIRQ, or for hardirqs the irq number in irq */
	__u32 irq;
	__u32 tgid;	/* current task (0: interrupt or idle) */
	__u64 location; /* where the skb was freed */
	__u64 cgid;	/* socket's cgroup v2 id */
	__u32 ifindex;
	__s32 nstack; /* bytes of stack written, negative: error */
	struct kd_flow flow;
	char comm[16];
	char name[16]; /* hardirq: the handler's name */
	__u64 stack[KD_STACK_MAX];
};

#endif
