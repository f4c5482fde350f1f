/* test_l7_infer.c - l7_infer across protocols: each protocol's first chunks (recorded from real clients
 * and servers) are recognised as that protocol with the right direction and never as another; random
 * bytes and other well-known protocols are (almost) never taken for one. */
#include "test_l7_util.h"

#include "data/l7_kafka_kcat.h"
#include "data/l7_mongo_msgs.h"
#include "data/l7_rocketmq_msgs.h"

struct sample {
	const char *what;
	const char *data;
	size_t len;
	enum l7_transport tr;
	uint16_t port;
	enum l7_proto proto;
	enum l7_flow flow;
};

#define TCP(w, s, p, f)                                        \
	{                                                      \
		w, s, sizeof(s) - 1, L7_TRANSPORT_TCP, 0, p, f \
	}
#define UDP(w, s, p, f)                                        \
	{                                                      \
		w, s, sizeof(s) - 1, L7_TRANSPORT_UDP, 0, p, f \
	}

static const struct sample samples[] = {
	TCP("curl GET", "GET /index.html?x=1 HTTP/1.1\r\nHost: 127.0.0.1:18931\r\nUser-Agent: curl/7.88.1\r\n\r\n",
	    L7_PROTO_HTTP, L7_FLOW_REQ),
	TCP("POST", "POST /api HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", L7_PROTO_HTTP, L7_FLOW_REQ),
	TCP("nginx 200", "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n", L7_PROTO_HTTP, L7_FLOW_RESP),
	TCP("redis SET", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", L7_PROTO_REDIS, L7_FLOW_REQ),
	TCP("redis +OK", "+OK\r\n", L7_PROTO_REDIS, L7_FLOW_RESP),
	TCP("redis -WRONGTYPE", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	    L7_PROTO_REDIS, L7_FLOW_RESP),
	TCP("redis :2", ":2\r\n", L7_PROTO_REDIS, L7_FLOW_RESP),
	TCP("psql startup",
	    "\x00\x00\x00\x3f\x00\x03\x00\x00user\x00postgres\x00"
	    "database\x00postgres\x00"
	    "application_name\x00psql\x00\x00",
	    L7_PROTO_PGSQL, L7_FLOW_REQ),
	TCP("pg SSLRequest", "\x00\x00\x00\x08\x04\xd2\x16/", L7_PROTO_PGSQL, L7_FLOW_REQ),
	TCP("pg Query", "Q\x00\x00\x00\x12SELECT 1 AS x\x00", L7_PROTO_PGSQL, L7_FLOW_REQ),
	TCP("pg AuthenticationOk", "R\x00\x00\x00\x08\x00\x00\x00\x00S\x00\x00\x00\x1a", L7_PROTO_PGSQL, L7_FLOW_RESP),
	TCP("pg command complete",
	    "C\x00\x00\x00\x11"
	    "CREATE TABLE\x00Z\x00\x00\x00\x05I",
	    L7_PROTO_PGSQL, L7_FLOW_RESP),
	TCP("mariadb greeting",
	    "d\x00\x00\x00\x0a"
	    "5.5.5-10.11.19-MariaDB-0+deb12u1\x00\x06\x00\x00\x00"
	    "5h/Nz=^C\x00\xfe\xf7-\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00t?yh|Vz%DeSM\x00"
	    "mysql_native_password\x00",
	    L7_PROTO_MYSQL, L7_FLOW_RESP),
	TCP("mysql COM_QUERY", "\x19\x00\x00\x00\x03SELECT 1 AS x, 'ab' AS y", L7_PROTO_MYSQL, L7_FLOW_REQ),
	TCP("mysql ERR", "'\x00\x00\x01\xffz\x04#42S02Table 'nosuch.t' doesn't exist", L7_PROTO_MYSQL, L7_FLOW_RESP),
	TCP("mysql OK", "\x07\x00\x00\x01\x00\x01\x00\x02\x00\x00\x00", L7_PROTO_MYSQL, L7_FLOW_RESP),
	UDP("dig A",
	    "\xe2\x17\x01\x20\x00\x01\x00\x00\x00\x00\x00\x01\x03www\x07"
	    "example\x04test\x00\x00\x01\x00\x01\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x0c\x00\x0a\x00\x08\x38\xfa"
	    "\xd1\x37\xb1\xe1\x65\x99",
	    L7_PROTO_DNS, L7_FLOW_REQ),
	UDP("dnsmasq NXDOMAIN",
	    "\x00\x02\x81\x83\x00\x01\x00\x00\x00\x00\x00\x00\x07"
	    "example\x03org\x00\x00\x10\x00\x01",
	    L7_PROTO_DNS, L7_FLOW_RESP),
	TCP("dig +tcp",
	    "\x00\x1d\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07"
	    "example\x03org\x00\x00\x0f\x00\x01",
	    L7_PROTO_DNS, L7_FLOW_REQ),
	TCP("kcat ApiVersions v3 (flexible header)", KCAT_API_VERSIONS_V3, L7_PROTO_KAFKA, L7_FLOW_REQ),
	TCP("kcat Metadata v2", KCAT_METADATA_T1_3, L7_PROTO_KAFKA, L7_FLOW_REQ),
	TCP("pymongo isMaster (OP_QUERY)", HELLO_Q, L7_PROTO_MONGO, L7_FLOW_REQ),
	TCP("pymongo find (OP_MSG)", FIND, L7_PROTO_MONGO, L7_FLOW_REQ),
	TCP("mongo insert (kind 1 section)", INSERT, L7_PROTO_MONGO, L7_FLOW_REQ),
	TCP("mongo find reply (OP_MSG)", FIND_R, L7_PROTO_MONGO, L7_FLOW_RESP),
	TCP("mongo error reply", DROP_R, L7_PROTO_MONGO, L7_FLOW_RESP),
	TCP("rocketmq HEART_BEAT (binary header)", B_HB, L7_PROTO_ROCKETMQ, L7_FLOW_REQ),
	TCP("rocketmq SEND_MESSAGE_V2 (binary header)", B_SEND, L7_PROTO_ROCKETMQ, L7_FLOW_REQ),
	TCP("rocketmq SEND_MESSAGE (fastjson header)", J_SEND, L7_PROTO_ROCKETMQ, L7_FLOW_REQ),
	TCP("rocketmq SEND_MESSAGE_V2 (Go client's JSON)", G_SEND, L7_PROTO_ROCKETMQ, L7_FLOW_REQ),
	TCP("rocketmq TOPIC_NOT_EXIST (binary)", B_SEND_MISSING_R, L7_PROTO_ROCKETMQ, L7_FLOW_RESP),
	TCP("rocketmq route answer (fastjson)", J_ROUTE_R, L7_PROTO_ROCKETMQ, L7_FLOW_RESP),
	TCP("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", L7_PROTO_HTTP2, L7_FLOW_REQ),
	TCP("nginx h2 SETTINGS",
	    "\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x80\x00\x04\x00\x01\x00\x00\x00\x05\x00\xff\xff"
	    "\xff",
	    L7_PROTO_HTTP2, L7_FLOW_RESP),
	TCP("grpc server SETTINGS (with 0xfe03)",
	    "\x00\x00\x18\x04\x00\x00\x00\x00\x00\x00\x04\x00\x3f\xff\xff\x00\x05\x00\x3f\xff\xff\x00\x06\x00\x00\x20"
	    "\x00\xfe\x03\x00\x00\x00\x01",
	    L7_PROTO_HTTP2, L7_FLOW_RESP),
	TCP("h2 HEADERS mid-connection (nghttp GET)",
	    "\x00\x00\x13\x01\x25\x00\x00\x00\x0f\x00\x00\x00\x0b\x0f\x82\x04\x86\x62\x93\x21\x06\xaa\x6f\x86\xc0\xbf"
	    "\x90\xbe",
	    L7_PROTO_HTTP2, L7_FLOW_REQ),
	TCP("h2 HEADERS mid-connection (grpc, dynamic fields only)",
	    "\x00\x00\x08\x01\x04\x00\x00\x00\x03\xc3\xc2\x83\x86\xc1\xc0\xbf\xbe", L7_PROTO_HTTP2, L7_FLOW_REQ),
	TCP("h2 WINDOW_UPDATE + PING ACK + HEADERS mid-connection",
	    "\x00\x00\x04\x08\x00\x00\x00\x00\x00\x00\x00\x00\x11\x00\x00\x08\x06\x01\x00\x00\x00\x00\x00\x00\x00"
	    "\x00\x00\x00\x00\x01\x00\x00\x08\x01\x04\x00\x00\x00\x03\xc3\xc2\x83\x86\xc1\xc0\xbf\xbe",
	    L7_PROTO_HTTP2, L7_FLOW_REQ),
	TCP("h2 PING alone (no direction)", "\x00\x00\x08\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01",
	    L7_PROTO_UNKNOWN, L7_FLOW_REQ),
	TCP("h2 response HEADERS mid-connection", "\x00\x00\x03\x01\x04\x00\x00\x00\x07\x88\xc1\xc0", L7_PROTO_HTTP2,
	    L7_FLOW_RESP),
	/* none of ours */
	TCP("TLS ClientHello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x8a\x1b", L7_PROTO_UNKNOWN, L7_FLOW_REQ),
	TCP("SSH banner", "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", L7_PROTO_UNKNOWN, L7_FLOW_REQ),
	TCP("SMTP greeting", "220 mail.example.org ESMTP Postfix\r\n", L7_PROTO_UNKNOWN, L7_FLOW_REQ),
	TCP("memcached get", "get key1\r\n", L7_PROTO_UNKNOWN, L7_FLOW_REQ),
	TCP("json", "{\"jsonrpc\":\"2.0\",\"id\":1}\n", L7_PROTO_UNKNOWN, L7_FLOW_REQ),
	UDP("NTP", "\x23\x00\x06\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
	    L7_PROTO_UNKNOWN, L7_FLOW_REQ),
};

GG_TEST(test_samples)
{
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		const struct sample *s = &samples[i];
		enum l7_flow f = s->flow == L7_FLOW_REQ ? L7_FLOW_RESP : L7_FLOW_REQ;
		enum l7_proto p = l7_infer((const uint8_t *)s->data, s->len, s->tr, s->port, ~0u, &f);

		if (p != s->proto || (p != L7_PROTO_UNKNOWN && f != s->flow))
			fail_msg("%s: inferred %s (%s), expected %s", s->what, l7_proto__name(p),
				 f == L7_FLOW_REQ ? "request" : "response", l7_proto__name(s->proto));
		/* only its own protocol enabled: still found; all others: not found */
		if (s->proto != L7_PROTO_UNKNOWN) {
			assert_int_equal(l7_infer((const uint8_t *)s->data, s->len, s->tr, s->port, 1u << s->proto, &f),
					 s->proto);
			assert_int_equal(
				l7_infer((const uint8_t *)s->data, s->len, s->tr, s->port, ~0u & ~(1u << s->proto), &f),
				L7_PROTO_UNKNOWN);
		}
	}
}

/* 200k random chunks of 1 to 64 bytes: a handful at most taken for a protocol. */
GG_TEST(test_random)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t buf[64];
	unsigned int hits = 0;
	enum l7_flow f;

	for (int i = 0; i < 200000; i++) {
		size_t n = 1 + (size_t)(x % 64);

		for (size_t k = 0; k < n; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[k] = (uint8_t)x;
		}
		hits += l7_infer(buf, n, (i & 1) ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP, 0, ~0u, &f) != L7_PROTO_UNKNOWN;
	}
	print_message("random chunks taken for a protocol: %u of 200000\n", hits);
	assert_true(hits <= 20);
}
