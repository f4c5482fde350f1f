/* l7_parse.c - l7probe parser throughput: request/response pairs per second on one core, per protocol,
 * fed to one long-lived session as whole chunks and as chunks split in two (a header spanning them).
 *   build/bench/l7_parse [-n pairs] [-r repeats] [-c case-substring]
 * Prints, per case, the median rate of the repeats and their min-max, and bytes/s at the median. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../probes/l7probe/l7_proto.h"
#include "../tests/unit/data/l7_mongo_msgs.h"
#include "../tests/unit/data/l7_rocketmq_msgs.h"
#include "bench_util.h"

struct bench_case {
	const char *name;
	enum l7_proto proto;
	enum l7_transport tr;
	const char *req;
	size_t req_len;
	const char *resp;
	size_t resp_len;
};

#define S(x) x, sizeof(x) - 1

/* the exchanges of the unit tests (recorded from real clients and servers) */
static const struct bench_case cases[] = {
	{"http GET 200 (curl/nginx)", L7_PROTO_HTTP, L7_TRANSPORT_TCP,
	 S("GET /index.html?x=1 HTTP/1.1\r\nHost: 127.0.0.1:18931\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n"
	   "Accept-Encoding: gzip\r\n\r\n"),
	 S("HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 06:59:02 GMT\r\nContent-Type: "
	   "text/html\r\nContent-Length: 6\r\nLast-Modified: Tue, 24 Nov 2026 06:59:02 GMT\r\nConnection: "
	   "keep-alive\r\nETag: \"6b0535b6-6\"\r\nAccept-Ranges: bytes\r\n\r\nhello\n")},
	{"http chunked 404", L7_PROTO_HTTP, L7_TRANSPORT_TCP, S("GET /missing HTTP/1.1\r\nHost: x\r\n\r\n"),
	 S("HTTP/1.1 404 Not Found\r\nServer: nginx/1.22.1\r\nTransfer-Encoding: chunked\r\nConnection: "
	   "keep-alive\r\n\r\n72\r\n"
	   "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
	   "01234567890123\r\n0\r\n\r\n")},
	{"redis SET +OK", L7_PROTO_REDIS, L7_TRANSPORT_TCP, S("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"),
	 S("+OK\r\n")},
	{"redis HGETALL map", L7_PROTO_REDIS, L7_TRANSPORT_TCP, S("*2\r\n$7\r\nHGETALL\r\n$1\r\nh\r\n"),
	 S("%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")},
	{"pgsql simple SELECT", L7_PROTO_PGSQL, L7_TRANSPORT_TCP, S("Q\x00\x00\x00\x12SELECT 1 AS x\x00"),
	 S("T\x00\x00\x00\x1a\x00\x01x\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00"
	   "D\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x01"
	   "1C\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I")},
	{"pgsql extended (pgbench)", L7_PROTO_PGSQL, L7_TRANSPORT_TCP,
	 S("P\x00\x00\x00\x16\x00select $1 + 1;\x00\x00\x00"
	   "B\x00\x00\x00\x13\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01"
	   "5\x00\x01\x00\x00"
	   "D\x00\x00\x00\x06P\x00"
	   "E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04"),
	 S("1\x00\x00\x00\x04"
	   "2\x00\x00\x00\x04T\x00\x00\x00!\x00\x01?column?\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17\x00\x04\xff"
	   "\xff\xff\xff\x00\x00"
	   "D\x00\x00\x00\x0b\x00\x01\x00\x00\x00\x01"
	   "6C\x00\x00\x00\x0dSELECT 1\x00Z\x00\x00\x00\x05I")},
	{"mysql COM_QUERY 1 row", L7_PROTO_MYSQL, L7_TRANSPORT_TCP, S("\x19\x00\x00\x00\x03SELECT 1 AS x, 'ab' AS y"),
	 S("\x02\x00\x00\x01\x02\x01\x18\x00\x00\x02\x03"
	   "def\x00\x00\x00\x01x\x00\x00\x0c\x3f\x00\x01\x00\x00\x00\x03\x81\x00\x00\x00\x00\x18\x00\x00\x03\x03"
	   "def\x00\x00\x00\x01y\x00\x00\x0c!\x00\x06\x00\x00\x00\xfd\x01\x00'\x00\x00\x05\x00\x00\x04\xfe\x00\x00"
	   "\x02\x00\x05\x00\x00\x05\x01"
	   "1\x02"
	   "ab\x05\x00\x00\x06\xfe\x00\x00\x02\x00")},
	{"mysql COM_QUERY OK", L7_PROTO_MYSQL, L7_TRANSPORT_TCP,
	 S("\x05\x00\x00\x00\x03"
	   "DO 1"),
	 S("\x07\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00")},
	{"dns udp A (dig/dnsmasq)", L7_PROTO_DNS, L7_TRANSPORT_UDP,
	 S("\xe2\x17\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01\x03www\x07"
	   "example\x04test\x00\x00\x01\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c\x00\x0a\x00\x08\x38\xfa"
	   "\xd1\x37\xb1\xe1\x65\x99"),
	 S("\xe2\x17\x85\x80\x00\x01\x00\x01\x00\x00\x00\x01\x03www\x07"
	   "example\x04test\x00\x00\x01\x00\x01\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x00\x00\x04\xc0\x00\x02\x07\x00"
	   "\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00")},
	{"kafka Produce v7 (kcat/mock)", L7_PROTO_KAFKA, L7_TRANSPORT_TCP,
	 S("\x00\x00\x00\x7d\x00\x00\x00\x07\x00\x00\x00\x04\x00\x07\x72\x64\x6b\x61\x66\x6b\x61\xff\xff\xff"
	   "\xff\x00\x00\x75\x30\x00\x00\x00\x01\x00\x02\x74\x31\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
	   "\x50\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x44\x00\x00\x00\x00\x02\x0b\xf6\x0d\x84\x00\x00"
	   "\x00\x00\x00\x00\x00\x00\x01\xa2\x0c\x95\x5d\x71\x00\x00\x01\xa2\x0c\x95\x5d\x71\xff\xff\xff\xff"
	   "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x01\x24\x00\x00\x00\x01\x18\x68\x65\x6c\x6c"
	   "\x6f\x0a\x77\x6f\x72\x6c\x64\x0a\x00"),
	 S("\x00\x00\x00\x32\x00\x00\x00\x04\x00\x00\x00\x01\x00\x02\x74\x31\x00\x00\x00\x01\x00\x00\x00\x00"
	   "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\xd2\x00\x00\x00\x00\x00\x00"
	   "\x00\x00\x00\x00\x00\x00")},
	{"mongo OP_MSG find", L7_PROTO_MONGO, L7_TRANSPORT_TCP, S(FIND), S(FIND_R)},
	{"mongo OP_MSG error (ok 0)", L7_PROTO_MONGO, L7_TRANSPORT_TCP, S(DROP), S(DROP_R)},
	{"rocketmq SEND_MESSAGE_V2 (binary header)", L7_PROTO_ROCKETMQ, L7_TRANSPORT_TCP, S(B_SEND), S(B_SEND_R)},
	{"rocketmq SEND_MESSAGE (fastjson header)", L7_PROTO_ROCKETMQ, L7_TRANSPORT_TCP, S(J_SEND), S(J_SEND_R)},
	{"rocketmq SEND_MESSAGE_V2 (Go JSON header)", L7_PROTO_ROCKETMQ, L7_TRANSPORT_TCP, S(G_SEND), S(G_SEND_R)},
	{"rocketmq TOPIC_NOT_EXIST (binary)", L7_PROTO_ROCKETMQ, L7_TRANSPORT_TCP, S(B_SEND_MISSING),
	 S(B_SEND_MISSING_R)},
};

static uint64_t rpcs_seen;

static void count_cb(void *ctx, const struct l7_rpc *r)
{
	(void)ctx;
	(void)r;
	rpcs_seen++;
}

static void feed(struct l7_session *s, enum l7_flow flow, const char *p, size_t n, int split, uint64_t ts)
{
	if (split && n > 1) {
		size_t h = n / 2;

		l7_session__feed(s, flow, (const uint8_t *)p, h, h, ts, count_cb, NULL);
		l7_session__feed(s, flow, (const uint8_t *)p + h, n - h, n - h, ts, count_cb, NULL);
	} else {
		l7_session__feed(s, flow, (const uint8_t *)p, n, n, ts, count_cb, NULL);
	}
}

/* pairs per CPU second for one run of n pairs */
static double run_once(const struct bench_case *c, int split, long n)
{
	struct l7_session *s = l7_session__new(c->proto, c->tr);
	double t0, t1;

	if (!s) {
		perror("l7_session__new");
		exit(1);
	}
	rpcs_seen = 0;
	t0 = bench_now_s(CLOCK_THREAD_CPUTIME_ID);
	for (long i = 0; i < n; i++) {
		feed(s, L7_FLOW_REQ, c->req, c->req_len, split, (uint64_t)i * 2);
		feed(s, L7_FLOW_RESP, c->resp, c->resp_len, split, (uint64_t)i * 2 + 1);
	}
	t1 = bench_now_s(CLOCK_THREAD_CPUTIME_ID);
	l7_session__free(s);
	if (rpcs_seen != (uint64_t)n) {
		fprintf(stderr, "%s: %llu records for %ld pairs\n", c->name, (unsigned long long)rpcs_seen, n);
		exit(1);
	}
	return (double)n / (t1 - t0);
}

int main(int argc, char **argv)
{
	long n = 1000000;
	int reps = 5, opt;
	const char *only = NULL;
	double r[64];

	while ((opt = getopt(argc, argv, "n:r:c:")) != -1) {
		if (opt == 'c')
			only = optarg;
		else if (opt == 'n')
			n = strtol(optarg, NULL, 10);
		else if (opt == 'r')
			reps = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-n pairs] [-r repeats] [-c case-substring]\n", argv[0]);
			return 2;
		}
	}
	if (n <= 0 || reps <= 0 || reps > 64)
		return 2;
	printf("| case | chunks | pairs/s (median) | min - max | MB/s | ns/pair |\n|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bench_case *c = &cases[i];

		if (only && !strstr(c->name, only))
			continue;
		for (int split = 0; split <= (c->tr == L7_TRANSPORT_TCP); split++) {
			double med;

			for (int k = 0; k < reps; k++)
				r[k] = run_once(c, split, n);
			qsort(r, (size_t)reps, sizeof(r[0]), bench_cmp_double);
			med = r[reps / 2];
			printf("| %s | %s | %.2f M | %.2f - %.2f M | %.0f | %.0f |\n", c->name,
			       split ? "split" : "whole", med / 1e6, r[0] / 1e6, r[reps - 1] / 1e6,
			       med * (double)(c->req_len + c->resp_len) / 1e6, 1e9 / med);
		}
	}
	return 0;
}
