/* kafkaprobe.h - types shared by kafkaprobe's kernel half (bpf/kafkaprobe.bpf.c, XDP) and user half
 * (probes/kafkaprobe/): one TCP segment to the Kafka port, its 4-tuple, sequence number and a prefix
 * of its payload. */
#ifndef GG_KAFKAPROBE_H
#define GG_KAFKAPROBE_H

/* Payload bytes copied per segment at most. */
#define KP_CAP 1024 /* a power of 2 (the kernel half masks with KP_CAP - 1) */

#define KP_F_SYN 0x1 /* a SYN (no payload): the flow starts at seq + 1 */
#define KP_F_END 0x2 /* a FIN or RST (payload may follow): the flow ends */

struct kp_pkt {
	unsigned char family;	     /* 4 or 6 */
	unsigned char flags;	     /* KP_F_* */
	unsigned short sport, dport; /* host order */
	unsigned short pad;
	unsigned int seq;		    /* TCP sequence number of the first payload byte */
	unsigned int payload_len;	    /* the segment's TCP payload */
	unsigned int cap_len;		    /* bytes in data */
	unsigned char saddr[16], daddr[16]; /* IPv4: the first 4 bytes */
	unsigned char data[KP_CAP];
};

/* Per-CPU counters (kp_stats, a per-CPU array). */
enum kp_stat {
	KP_ST_PKTS = 0,	   /* segments with payload to the port */
	KP_ST_CUT = 1,	   /* segments whose payload did not fit in KP_CAP */
	KP_ST_RB_LOST = 2, /* segments the ring buffer had no room for */
	KP_ST_MAX = 3,
};

#endif
