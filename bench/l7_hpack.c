/* l7_hpack.c - HPACK decoder and HTTP/2 session throughput on one core: the header blocks of
 * RFC 7541 C.4 and C.6 (requests and responses with Huffman strings and a dynamic table) and of
 * recorded nghttp/nginx and python3-grpcio traffic, decoded in a loop on a long-lived table; then the
 * recorded gRPC call (request HEADERS + DATA, response HEADERS + DATA + trailers) through a session.
 *   build/bench/l7_hpack [-n iterations] [-r repeats]
 * Prints, per case, the median of the repeats and their min-max: MB/s of header block bytes and
 * header fields/s (decoder), calls/s and MB/s (session). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../probes/l7probe/hpack.h"
#include "../probes/l7probe/l7_proto.h"

static size_t unhex(const char *hex, uint8_t *out)
{
	size_t n = 0;
	unsigned int b;

	for (; hex[0] && hex[1] && sscanf(hex, "%2x", &b) == 1; hex += 2)
		out[n++] = (uint8_t)b;
	return n;
}

/* A sequence of blocks decoded in order on one table (the table carries over between rounds, as on a
 * long-lived connection; blocks that insert keep evicting). */
struct blocks {
	const char *name;
	uint32_t table_size;
	const char *hex[4];
};

static const struct blocks cases[] = {
	{"RFC 7541 C.4 requests (Huffman)",
	 4096,
	 {"828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
	  "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf", NULL}},
	{"RFC 7541 C.6 responses (Huffman, 256-byte table)",
	 256,
	 {"488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d"
	  "3",
	  "4883640effc1c0bf",
	  "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af2708"
	  "7f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
	  NULL}},
	{"nginx h2 response (first, then indexed)",
	 4096,
	 {"8876 89aa6355e580ae212e1f 6196df697e94134a693f750401 38a0417191 5c6c4a62d1bf 5f87497ca589d34d1f 5c01 36 "
	  "6c96df69"
	  "7e94134a693f75040138a0417191 5c6c2a62d1bf 00832a47378afe5c8c0db8ec8cace7f3 0089 "
	  "19085ad2b583aa62a3848fd24a8f",
	  NULL}},
	{"grpc request + response + trailers (literals, then indexed)",
	 4096,
	 {"4005 3a70617468 0c 2f6c372e4563686f2f536179 400a 3a617574686f72697479 0f 3132372e302e302e313a3138393738 8386"
	  "400c 636f6e74656e742d74797065 10 6170706c69636174696f6e2f67727063 4002 7465 08 747261696c657273",
	  "c3c28386c1c0bfbe", "88c0bf", "be"}},
};

/* hex with spaces (for reading) into bytes */
static size_t unhex_sp(const char *hex, uint8_t *out)
{
	char clean[1024];
	size_t k = 0;

	for (; *hex && k + 1 < sizeof(clean); hex++)
		if (*hex != ' ')
			clean[k++] = *hex;
	clean[k] = '\0';
	return unhex(clean, out);
}

static uint64_t fields;

static void count(void *ctx, const struct hpack_field *f)
{
	(void)ctx;
	(void)f;
	fields++;
}

#include "../tests/unit/data/l7_h2_caps.h"
#include "../tests/unit/l7_steps.h"
#include "bench_util.h"

static const struct l7t_step grpc[] = {GRPC_1};

static uint64_t rpcs;

static void on_rpc(void *ctx, const struct l7_rpc *r)
{
	(void)ctx;
	(void)r;
	rpcs++;
}

int main(int argc, char **argv)
{
	long iters = 200000, repeats = 7;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			iters = atol(optarg);
		else if (opt == 'r')
			repeats = atol(optarg);
		else
			return 2;
	}
	if (repeats < 1 || repeats > 101 || iters < 1)
		return 2;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint8_t blk[4][512];
		size_t len[4], nb = 0, bytes = 0;
		double mbs[101], fps[101];

		for (; nb < 4 && cases[c].hex[nb]; nb++) {
			len[nb] = unhex_sp(cases[c].hex[nb], blk[nb]);
			bytes += len[nb];
		}
		for (long r = 0; r < repeats; r++) {
			struct hpack_table t;
			double t0;

			hpack_table__init(&t);
			hpack_table__settings(&t, cases[c].table_size);
			fields = 0;
			t0 = bench_now_s(CLOCK_MONOTONIC);
			for (long i = 0; i < iters; i++)
				for (size_t b = 0; b < nb; b++)
					if (hpack_decode(&t, blk[b], len[b], count, NULL, NULL) != (long)len[b])
						return 1;
			t0 = bench_now_s(CLOCK_MONOTONIC) - t0;
			mbs[r] = (double)bytes * (double)iters / t0 / 1e6;
			fps[r] = (double)fields / t0;
			hpack_table__fini(&t);
		}
		qsort(mbs, (size_t)repeats, sizeof(double), bench_cmp_double);
		qsort(fps, (size_t)repeats, sizeof(double), bench_cmp_double);
		printf("hpack %-58s %7.1f MB/s (%.1f .. %.1f), %6.2f M fields/s (%.2f .. %.2f)\n", cases[c].name,
		       mbs[repeats / 2], mbs[0], mbs[repeats - 1], fps[repeats / 2] / 1e6, fps[0] / 1e6,
		       fps[repeats - 1] / 1e6);
	}
	{
		/* the calls after the first (dynamic table references only) replayed on one session: find the
		 * chunks of the call on stream 3 (request, response) */
		size_t first = 0, bytes = 0;
		double cps[101], mbs[101];

		while (first < sizeof(grpc) / sizeof(grpc[0]) &&
		       memcmp(grpc[first].data, "\x00\x00\x08\x01\x04\x00\x00\x00\x03", 9))
			first++;
		if (first + 1 >= sizeof(grpc) / sizeof(grpc[0]))
			return 1;
		bytes = grpc[first].len + grpc[first + 1].len;
		for (long r = 0; r < repeats; r++) {
			struct l7_session *s = l7_session__new(L7_PROTO_HTTP2, L7_TRANSPORT_TCP);
			uint8_t req[256], resp[256];
			double t0;

			if (!s || grpc[first].len > sizeof(req) || grpc[first + 1].len > sizeof(resp))
				return 1;
			memcpy(req, grpc[first].data, grpc[first].len);
			memcpy(resp, grpc[first + 1].data, grpc[first + 1].len);
			/* the whole first exchange once, so that the tables hold what the later calls refer to */
			for (size_t i = 0; i < first; i++)
				l7_session__feed(s, grpc[i].flow, grpc[i].data, grpc[i].len, grpc[i].len, 1, on_rpc,
						 NULL);
			rpcs = 0;
			t0 = bench_now_s(CLOCK_MONOTONIC);
			for (long i = 0; i < iters; i++) {
				l7_session__feed(s, L7_FLOW_REQ, req, grpc[first].len, grpc[first].len, (uint64_t)i * 2,
						 on_rpc, NULL);
				l7_session__feed(s, L7_FLOW_RESP, resp, grpc[first + 1].len, grpc[first + 1].len,
						 (uint64_t)i * 2 + 1, on_rpc, NULL);
			}
			t0 = bench_now_s(CLOCK_MONOTONIC) - t0;
			if (rpcs != (uint64_t)iters)
				return 1;
			cps[r] = (double)iters / t0;
			mbs[r] = (double)bytes * (double)iters / t0 / 1e6;
			l7_session__free(s);
		}
		qsort(cps, (size_t)repeats, sizeof(double), bench_cmp_double);
		qsort(mbs, (size_t)repeats, sizeof(double), bench_cmp_double);
		printf("session grpc unary call (request + response chunks, %zu bytes)     %6.2f M calls/s (%.2f .. "
		       "%.2f), "
		       "%.1f MB/s\n",
		       bytes, cps[repeats / 2] / 1e6, cps[0] / 1e6, cps[repeats - 1] / 1e6, mbs[repeats / 2]);
	}
	return 0;
}
