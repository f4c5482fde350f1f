/* l7_conf.h - l7probe's configuration (what its command line and a live configuration set) and its
 * sub-probe bits, shared by main.c and contract.c. */
#ifndef GG_L7PROBE_CONF_H
#define GG_L7PROBE_CONF_H

/* Sub-probe bits. */
#define L7_SP_BYTES   0x1u /* l7_bytes_metrics -> l7_link */
#define L7_SP_RPC     0x2u /* l7_rpc_metrics -> l7_rpc, l7_rpc_api */
#define L7_SP_TRACE   0x4u /* l7_rpc_trace -> trace_span records (OpenTelemetry spans on the event channel) */
#define L7_SP_DEFAULT (L7_SP_BYTES | L7_SP_RPC)

struct l7_conf {
	unsigned int period_s;
	unsigned int subs;
	char protos_str[96];	      /* l7_protocol as the contract stores it: "http,redis" */
	int ssl;		      /* support_ssl */
	unsigned int protos;	      /* protos_str as a mask of 1u << enum l7_proto (main.c derives it) */
	unsigned int api_limit;	      /* distinct apis per process in l7_rpc_api; 0: no l7_rpc_api */
	unsigned int trace_permille;  /* share of requests traced (errors and slow ones always are) */
	unsigned int trace_slow_ms;   /* requests at least this slow are always traced; 0: none */
	unsigned int trace_max_per_s; /* most spans a second */
	unsigned int latency_thr_ms;  /* ksliprobe, pgsliprobe: an event when a request is slower; 0: none */
};

#endif
