/* fuzz_l7_http2.c - libFuzzer target: l7probe's HTTP/2 frame parser and HPACK decoder (and inference)
 * on any script of chunks. */
#include "hpack.h"

#define FUZZ_L7_PROTO L7_PROTO_HTTP2
/* the shared bound plus two HPACK tables (store and entries) and a full stream table */
#define FUZZ_L7_MEM_MAX                            \
	(16384 + 2 * 8192 + L7_PENDING_MAX * 128 + \
	 2 * (HPACK_STORE_MAX + HPACK_ENTRIES_MAX * sizeof(struct hpack_entry)) + 2048)
#include "fuzz_l7.h"
