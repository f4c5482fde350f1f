/* fuzz_l7.h - the body shared by the l7probe parser fuzzers (fuzz_l7_<proto>.c define FUZZ_L7_PROTO):
 * the input is a script of chunks (direction, captured bytes, bytes lost after them) fed to one
 * session, after l7_infer on its first chunk; checks memory bounds and record consistency. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "l7_api.h"
#include "l7_proto.h"

/* what a session may hold at most: itself, two reassembly buffers, a full pending queue (a protocol
 * with state of its own sets its bound before including this) */
#ifndef FUZZ_L7_MEM_MAX
#define FUZZ_L7_MEM_MAX (16384 + 2 * 8192 + L7_PENDING_MAX * 128)
#endif

struct fuzz_l7_ctx {
	uint64_t n;
	uint64_t ts;
};

static void fuzz_l7_cb(void *ctx, const struct l7_rpc *r)
{
	struct fuzz_l7_ctx *c = ctx;

	/* api is a string; a request cannot end after its response was seen, nor later than now */
	if (memchr(r->api, '\0', sizeof(r->api)) == NULL || r->req_ts_ns > r->resp_ts_ns || r->resp_ts_ns > c->ts ||
	    (r->error != 0 && r->error != 1))
		abort();
	{
		/* its l7_rpc_api form: a string within the buffer, no control character */
		char norm[L7_API_MAX];
		size_t k = l7_api__normalize(L7_PROTO_HTTP, r->api, norm, sizeof(norm));

		if (k >= sizeof(norm) || strlen(norm) != k)
			abort();
		for (size_t i = 0; i < k; i++)
			if ((unsigned char)norm[i] < 0x20 || norm[i] == 0x7f)
				abort();
	}
	c->n++;
}

/*
 * Input: byte 0 picks the transport (bit 0, UDP when the protocol has it) and a capture limit (bits
 * 1-3: chunks longer than 16 << k bytes are cut, the rest counted as a gap). Then records:
 * [flags][len] data[len], flags bit 0 = response, bit 1 = a gap follows (two more bytes of size,
 * times 4096 when bit 2), bit 3 = feed byte by byte.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_l7_ctx ctx = {0};
	struct l7_session_stats st, prev = {0};
	enum l7_transport tr = L7_TRANSPORT_TCP;
	struct l7_session *s;
	enum l7_flow f;
	size_t i = 1, cap;
	int first = 1;

	if (size < 1)
		return 0;
	if ((data[0] & 1) && FUZZ_L7_PROTO == L7_PROTO_DNS)
		tr = L7_TRANSPORT_UDP;
	cap = (size_t)16 << ((data[0] >> 1) & 7);
	s = l7_session__new(FUZZ_L7_PROTO, tr);
	if (!s)
		abort();
	while (i + 2 <= size) {
		uint8_t fl = data[i];
		size_t len = data[i + 1];
		uint64_t gap = 0;
		enum l7_flow flow = (fl & 1) ? L7_FLOW_RESP : L7_FLOW_REQ;

		i += 2;
		if (fl & 2) {
			if (i + 2 > size)
				break;
			gap = (uint64_t)data[i] << 8 | data[i + 1];
			if (fl & 4)
				gap *= 4096;
			i += 2;
		}
		if (len > size - i)
			len = size - i;
		size_t rec = len;

		if (first) {
			enum l7_proto p = l7_infer(data + i, len, tr, 0, ~0u, &f);

			if ((unsigned int)p >= L7_PROTO__COUNT)
				abort();
			first = 0;
		}
		if (len > cap) {
			gap += len - cap;
			len = cap;
		}
		ctx.ts += 1000;
		if ((fl & 8) && tr == L7_TRANSPORT_TCP) {
			for (size_t k = 0; k < len; k++)
				if (l7_session__feed(s, flow, data + i + k, 1, 1 + (k + 1 == len ? gap : 0), ctx.ts,
						     fuzz_l7_cb, &ctx))
					abort();
		} else if (l7_session__feed(s, flow, data + i, len, len + gap, ctx.ts, fuzz_l7_cb, &ctx)) {
			abort();
		}
		i += rec;
		l7_session__stats(s, &st);
		if (l7_session__mem(s) > FUZZ_L7_MEM_MAX || st.rpcs != ctx.n || st.rpcs < prev.rpcs ||
		    st.unparsable < prev.unparsable || st.gap_bytes < prev.gap_bytes)
			abort();
		prev = st;
	}
	ctx.ts += 1000;
	l7_session__close(s, ctx.ts, fuzz_l7_cb, &ctx);
	l7_session__stats(s, &st);
	if (st.rpcs != ctx.n)
		abort();
	l7_session__free(s);
	return 0;
}
