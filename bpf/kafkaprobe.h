/* kafkaprobe.h - types shared by kafkaprobe's kernel half (bpf/kafkaprobe.bpf.c, XDP) and user half
 * (probes/kafkaprobe/): each request start seen in a TCP segment to the Kafka port, and the flow state
 * that finds them (the next request's sequence number). */
#ifndef GG_KAFKAPROBE_H
#define GG_KAFKAPROBE_H

/* Payload bytes copied per request start at most. */
#define KP_CAP 1024 /* a power of 2 (the kernel half masks with KP_CAP - 1) */

#define KP_F_START 0x4 /* a request starts at data[0] (seq is its first byte): parse one */

/* Requests a segment may start (more: the flow loses its place, counted as a resync). */
#define KP_STARTS_MAX 32
/* The largest request size taken as real (Kafka's socket.request.max.bytes is 100 MiB). */
#define KP_REQ_MAX (1u << 28)

/* One request start seen in a segment to the Kafka port: its flow, its sequence number and the first
 * bytes of the request (the size prefix first). */
struct kp_pkt {
	unsigned char family;	     /* 4 or 6 */
	unsigned char flags;	     /* KP_F_* */
	unsigned short sport, dport; /* host order */
	unsigned short pad;
	unsigned int seq;		    /* TCP sequence number of the request's first byte */
	unsigned int payload_len;	    /* the segment's payload from the request start on */
	unsigned int cap_len;		    /* bytes in data (>= 4) */
	unsigned char saddr[16], daddr[16]; /* IPv4: the first 4 bytes */
	unsigned char data[KP_CAP];
};

/* Where a flow is: the sequence number its next request starts at, the end of what was seen. */
struct kp_fkey {
	unsigned char family;
	unsigned char pad;
	unsigned short sport; /* the client's; the server's is kafka_port */
	unsigned char saddr[16], daddr[16];
};

struct kp_flow {
	unsigned int next;   /* the next request's first byte */
	unsigned int hi;     /* the end of the highest segment seen */
	unsigned int synced; /* next is known */
};

/* Per-CPU counters (kp_stats, a per-CPU array). */
enum kp_stat {
	KP_ST_PKTS = 0,	    /* segments with payload to the port */
	KP_ST_RESYNC = 1,   /* a flow lost its place (a request start in bytes not seen, a size split
			     * across segments or out of range, more than KP_STARTS_MAX starts in one) */
	KP_ST_RB_LOST = 2,  /* request starts the ring buffer had no room for */
	KP_ST_UNSYNCED = 3, /* segments passed over while a flow looked for a request start */
	KP_ST_MAX = 4,
};

#endif
