/* l7_user.h - l7probe's user half: the connection tracker (conn.c: events from the kernel into
 * connections, protocol sessions and reported aggregates) and the OpenSSL uprobes (tls.c). */
#ifndef GG_L7PROBE_USER_H
#define GG_L7PROBE_USER_H

#include <stddef.h>
#include <stdint.h>

#include "bpf_util.h"
#include "l7_conf.h"
#include "l7_proto.h"
#include "l7probe.h"
#include "probe.h"

/* Chunks of a connection l7_infer may look at before the connection is given up as unknown, and
 * the bytes of consecutive chunks in one direction it is given joined. */
#define L7_INFER_TRIES 8
#define L7_INFER_BUF   256u
/* Connections tracked at once (default of -m) and reported keys. */
#define L7_CONNS_DEFAULT 65536u
#define L7_KEYS_MAX	 16384u
/* A connection with no traffic for this long is forgotten (its close was missed). */
#define L7_CONN_IDLE_NS (600ull * 1000000000ull)
/* A key without connections and without traffic for this long is no longer reported. */
#define L7_KEY_IDLE_NS (300ull * 1000000000ull)

/* Latency histogram: log2 slots of ns; bucket 0 holds everything below 2^(FIRST+1) ns (1 us), the last 2^32 ns (4.3 s).
 */
#define L7_HIST_FIRST 9u
#define L7_HIST_N     23u

/* Counters of the tracker (cumulative). */
struct l7_tracker_stats {
	uint64_t unparsable;
	uint64_t resp_unmatched;
	uint64_t req_lost;
	uint64_t hpack_unresolved;
	uint64_t untracked;
	uint64_t conn_overflow;
	uint64_t key_overflow;
	uint64_t conns; /* tracked now */
	uint64_t bad_events;
	uint64_t exits;	       /* processes in scope that exited */
	uint64_t api_overflow; /* requests counted in an api row "__other__": their process had api_limit apis */
	uint64_t apis;	       /* l7_rpc_api rows now */
};

/* Most l7_rpc_api rows at once (all processes), besides one "__other__" row per l7_rpc key. */
#define L7_API_ROWS_MAX 32768u
/* Default of api_limit: distinct apis per process before the rest go to "__other__". */
#define L7_API_LIMIT_DEFAULT 100u

/* One request with its response, and the connection it went over (for traces and SLI tables). */
struct l7_span {
	const struct l7_rpc *rpc;
	const char *api; /* normalised (l7_api__normalize) */
	uint32_t tgid;
	int32_t fd;
	uint16_t family; /* AF_INET or AF_INET6 */
	uint16_t client_port, server_port;
	const uint8_t *client_ip, *server_ip; /* 16 bytes; IPv4 in the first 4 */
	uint8_t l4_role;		      /* 0 udp, 1 tcp_client, 2 tcp_server */
	uint8_t l7_role;		      /* 1 client, 2 server */
	uint8_t proto;			      /* enum l7_proto */
	uint8_t ssl;
};
typedef void (*l7_span_cb)(void *ctx, const struct l7_span *sp);

struct l7_tracker;

/* NULL + errno (ENOMEM). */
struct l7_tracker *l7_tracker__new(uint32_t max_conns, uint32_t max_keys);
/* Accepts NULL. */
void l7_tracker__free(struct l7_tracker *t);
/* Protocols l7_infer may choose from (1u << enum l7_proto; HTTP brings HTTP/2 with it); connections
 * already identified keep theirs. */
void l7_tracker__set_protocols(struct l7_tracker *t, unsigned int mask);
/* One event of the l7_events ring (a ring_buffer_sample_fn: always returns 0). */
int l7_tracker__event(void *t, void *data, size_t size);
/* Distinct apis per process in l7_rpc_api (0: no l7_rpc_api rows at all); more go to "__other__". */
void l7_tracker__set_api_limit(struct l7_tracker *t, uint32_t limit);
/* Called for every request matched with its response (NULL: none). */
void l7_tracker__set_span_cb(struct l7_tracker *t, l7_span_cb cb, void *ctx);
/* Every request matched also goes to share's per-process aggregates (l7share.h; NULL: none). */
struct l7s_table;
void l7_tracker__set_share(struct l7_tracker *t, struct l7s_table *share);
/* Emit l7_link (L7_SP_BYTES), l7_rpc and l7_rpc_api (L7_SP_RPC) rows, one per key (none when rt is NULL), then
 * forget connections idle since before now_ns - L7_CONN_IDLE_NS and keys without connections idle
 * since before now_ns - L7_KEY_IDLE_NS. period_s is the time since the previous report. */
void l7_tracker__report(struct l7_tracker *t, struct probe_rt *rt, unsigned int subs, double period_s, uint64_t now_ns);
void l7_tracker__stats(const struct l7_tracker *t, struct l7_tracker_stats *ret);

/* One key's values (for tests and debugging). */
struct l7_key_values {
	uint64_t rpcs, errs, lat_sum;
	uint64_t bytes_sent, bytes_recv, segs_sent, segs_recv;
	uint8_t client_ip[16];
	int proto, l4_role, ssl; /* l4_role: 0 udp, 1 tcp_client, 2 tcp_server */
};
/* The first key of tgid with that l7 role (1 client, 2 server) and server port: 0, or -ENOENT. */
int l7_tracker__lookup(const struct l7_tracker *t, uint32_t tgid, int l7_role, uint16_t server_port,
		       struct l7_key_values *ret);

/* One api row's values of the first key of tgid with that l7 role and server port: 0, or -ENOENT. */
struct l7_api_values {
	uint64_t rpcs, errs, client_errs, server_errs, lat_sum;
};
int l7_tracker__lookup_api(const struct l7_tracker *t, uint32_t tgid, int l7_role, uint16_t server_port,
			   const char *api, struct l7_api_values *ret);

/* OpenSSL uprobes (tls.c). */
struct l7probe;
struct l7_tls;
struct l7_tls *l7_tls__new(struct l7probe *skel);
/* Attach to every libssl mapped by the processes of scope (all processes when the scope is all or
 * has cgroups), detach from those no longer mapped. Returns the number of libraries probed. */
int l7_tls__scan(struct l7_tls *tls, const struct gg_scope *scope);
/* Detach every uprobe (support_ssl turned off). */
void l7_tls__clear(struct l7_tls *tls);
/* Detach everything; accepts NULL. */
void l7_tls__free(struct l7_tls *tls);

#endif
