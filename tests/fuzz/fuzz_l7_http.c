/* fuzz_l7_http.c - libFuzzer target: l7probe's http parser (and inference) on any script of chunks. */
#include "hpack.h"

#define FUZZ_L7_PROTO L7_PROTO_HTTP
/* an h2c upgrade turns the session into HTTP/2: fuzz_l7_http2's bound */
#define FUZZ_L7_MEM_MAX                            \
	(16384 + 2 * 8192 + L7_PENDING_MAX * 128 + \
	 2 * (HPACK_STORE_MAX + HPACK_ENTRIES_MAX * sizeof(struct hpack_entry)) + 2048)
#include "fuzz_l7.h"
