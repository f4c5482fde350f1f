/* test_l7_kafka.c - l7probe's Kafka parser on bytes recorded from kcat and librdkafka's mock cluster
 * (strace): ApiVersions (flexible request header, error 35 then the v0 retry), Metadata, Produce, Fetch
 * (an out-of-range offset: error 1), ListOffsets; split at every byte, gaps, garbage, bounded memory. */
#include "test_l7_util.h"

#include "data/l7_kafka_kcat.h"

/* kcat -P -t t1 -p 0: two messages in one batch */
GG_TEST(test_produce)
{
	static const struct l7t_step steps[] = {KCAT_PRODUCE_0};
	static const struct l7t_want want[] = {
		/* librdkafka asks ApiVersions v3 first; the mock only has v0-2 and says UNSUPPORTED_VERSION (35) */
		{.api = "ApiVersions", .status = 35, .error = 1, .req_bytes = 40, .resp_bytes = 8 + 13},
		{.api = "ApiVersions", .req_bytes = 21, .resp_bytes = 8 + 108},
		{.api = "Metadata", .req_bytes = 29, .resp_bytes = 8 + 95},
		{.api = "Produce t1", .req_bytes = 129, .resp_bytes = 8 + 46, .req_ts_ns = 10000, .resp_ts_ns = 12000},
	};

	l7t_check_script(L7_PROTO_KAFKA, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* kcat -C -t t1 -p 0 -o 0 -e */
GG_TEST(test_consume)
{
	static const struct l7t_step steps[] = {KCAT_CONSUME_0};
	static const struct l7t_want want[] = {
		{0}, /* ApiVersions, twice: not checked here */
		{0},
		{.api = "Metadata", .req_bytes = 29, .resp_bytes = 103},
		{.api = "Metadata", .req_bytes = 29, .resp_bytes = 103},
		{.api = "Fetch t1", .req_bytes = 92, .resp_bytes = 152},
		{.api = "Fetch t1", .req_bytes = 92, .resp_bytes = 72},
	};

	/* two Metadata in flight (corr 3, 4), three fetches: the last one unanswered when kcat exits */
	l7t_check_script(L7_PROTO_KAFKA, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* kcat -C -o 100: the fetch answers OFFSET_OUT_OF_RANGE, ListOffsets, then fetches from the end */
GG_TEST(test_fetch_out_of_range)
{
	static const struct l7t_step steps[] = {KCAT_FETCH_OOR_0};
	static const struct l7t_want want[] = {
		{0}, /* the four before: not checked here */
		{0},
		{0},
		{0},
		/* OFFSET_OUT_OF_RANGE in its partition */
		{.api = "Fetch t1", .status = 1, .error = 1, .req_bytes = 92, .resp_bytes = 72},
		{.api = "ListOffsets", .req_bytes = 50, .resp_bytes = 46},
		{.api = "Fetch t1", .req_bytes = 92, .resp_bytes = 72},
	};

	l7t_check_script(L7_PROTO_KAFKA, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* kcat -P -t 'bad name!': the mock cluster creates the topic anyway (a real broker says
 * INVALID_TOPIC_EXCEPTION, 17: see test_crafted_errors) */
GG_TEST(test_bad_topic)
{
	static const struct l7t_step steps[] = {KCAT_BAD_TOPIC_0};
	static const struct l7t_want want[] = {
		{0}, /* ApiVersions, twice: not checked here */
		{0},
		{.api = "Metadata", .req_bytes = 36, .resp_bytes = 188},
		{.api = "Produce bad name!", .req_bytes = 136, .resp_bytes = 61},
	};

	l7t_check_script(L7_PROTO_KAFKA, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* The recorded conversations with every chunk cut to 24 bytes (the rest a gap): bodies are skipped by
 * count, so the same calls pair with the same sizes; errors read past byte 24 are not seen. */
GG_TEST(test_capture_cut)
{
	static const struct l7t_step fetch[] = {KCAT_FETCH_OOR_0}, produce[] = {KCAT_PRODUCE_0};
	const struct {
		const struct l7t_step *steps;
		size_t n, rpcs;
	} conv[] = {{fetch, NSTEPS(fetch), 7}, {produce, NSTEPS(produce), 4}};
	struct l7t_step cut[64];
	struct l7t_out o, whole;

	for (size_t c = 0; c < 2; c++) {
		for (size_t i = 0; i < conv[c].n; i++) {
			cut[i] = conv[c].steps[i];
			cut[i].total = cut[i].len;
			if (cut[i].len > 24)
				cut[i].len = 24;
		}
		l7t_run(L7_PROTO_KAFKA, L7_TRANSPORT_TCP, conv[c].steps, conv[c].n, SIZE_MAX, 0, 0, &whole);
		l7t_run_all_splits(L7_PROTO_KAFKA, cut, conv[c].n, &o);
		l7t_expect_stats(&o, conv[c].rpcs, 0, 0, 0);
		for (size_t i = 0; i < o.n; i++) {
			/* the topic is past the first 24 bytes */
			assert_memory_equal(o.rpc[i].api, whole.rpc[i].api, strlen(o.rpc[i].api));
			assert_int_equal(o.rpc[i].req_bytes, whole.rpc[i].req_bytes);
			assert_int_equal(o.rpc[i].resp_bytes, whole.rpc[i].resp_bytes);
		}
		/* ApiVersions' error is the response body's first field: still read */
		assert_int_equal(o.rpc[0].status, 35);
	}
}

/* the mock's Metadata v2 answer with the topic's error set to UNKNOWN_TOPIC_OR_PARTITION (3) */
#define METADATA_T1_ERR                                                                                    \
	"\x00\x00\x00\x63\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x09\x31\x32\x37\x2e\x30\x2e" \
	"\x30\x2e\x31\x00\x00\xab\x13\xff\xff\x00\x17\x6d\x6f\x63\x6b\x43\x6c\x75\x73\x74\x65\x72\x31\x35" \
	"\x36\x36\x31\x36\x30\x63\x37\x30\x61\x38\x00\x00\x00\x00\x00\x00\x00\x01\x00\x03\x00\x02\x74\x31" \
	"\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00" \
	"\x00\x00\x01\x00\x00\x00\x01"
/* Produce v7 answered INVALID_TOPIC_EXCEPTION (17) as a broker does for 'bad name!' */
#define PRODUCE_V7_ERR                                                                                               \
	"\x00\x00\x00\x32\x00\x00\x00\x04\x00\x00\x00\x01\x00\x02t1\x00\x00\x00\x01\x00\x00\x00\x00\x00\x11\xff\xff" \
	"\xff\xff"                                                                                                   \
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00"
#define PRODUCE_V7_HEAD "\x00\x00\x00\x2d\x00\x00\x00\x07\x00\x00\x00\x04\x00\x07rdkafka\xff\xff"
/* Produce v9 (flexible: header v2 with tagged fields, compact strings and arrays), CORRUPT_MESSAGE (2) */
#define PRODUCE_V9                                                                                                     \
	"\x00\x00\x00\x26\x00\x00\x00\x09\x00\x00\x00\x09\x00\x07\x72\x64\x6b\x61\x66\x6b\x61\x00\x00\xff\xff\x00\x00" \
	"\x75\x30\x02"                                                                                                 \
	"\x03\x74\x31\x02\x00\x00\x00\x00\x01\x00\x00\x00"
#define PRODUCE_V9_R                                                                                                   \
	"\x00\x00\x00\x31\x00\x00\x00\x09\x00\x02\x03\x74\x31\x02\x00\x00\x00\x00\x00\x02\xff\xff\xff\xff\xff\xff\xff" \
	"\xff\xff\xff\xff"                                                                                             \
	"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00\x00\x00\x00\x00"

GG_TEST(test_crafted_errors)
{
	/* acks=0 (v7: after the null transactional id): the broker never answers it */
	static const char acks0[] = PRODUCE_V7_HEAD "\x00\x00\x00\x00\x75\x30\x00\x00\x00\x01\x00\x02t1\x00\x00\x00\x01"
						    "\x00\x00\x00\x00\x00\x00\x00\x00";
	static const char acks1[] = PRODUCE_V7_HEAD "\x00\x01\x00\x00\x75\x30\x00\x00\x00\x01\x00\x02t1\x00\x00\x00\x01"
						    "\x00\x00\x00\x00\x00\x00\x00\x00";
	static const struct l7t_step steps[] = {
		REQ(KCAT_METADATA_T1_3), RESP(METADATA_T1_ERR), REQ(acks0),	    REQ(acks1),
		RESP(PRODUCE_V7_ERR),	 REQ(PRODUCE_V9),	RESP(PRODUCE_V9_R),
	};
	static const struct l7t_want want[] = {
		{.api = "Metadata", .status = 3, .error = 1, .req_bytes = 29, .resp_bytes = 103},
		{.api = "Produce t1",
		 .status = 17,
		 .error = 1,
		 .req_bytes = sizeof(acks1) - 1,
		 .resp_bytes = 54,
		 .req_ts_ns = 4000},
		{.api = "Produce t1",
		 .status = 2,
		 .error = 1,
		 .req_bytes = sizeof(PRODUCE_V9) - 1,
		 .resp_bytes = sizeof(PRODUCE_V9_R) - 1},
	};

	l7t_check_script(L7_PROTO_KAFKA, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 0, 0, 0, NULL);
}

/* A capture that starts with a response, garbage in both directions, a response to nothing waiting. */
GG_TEST(test_garbage_and_unmatched)
{
	static const struct l7t_step steps[] = {
		RESP(PRODUCE_V7_ERR),			      /* its request was before the capture */
		REQ("GET / HTTP/1.1\r\n\r\n"),		      /* not Kafka */
		REQ(KCAT_METADATA_T1_3),		      /* corr 3 */
		RESP("\x00\x00\x00\x08\x00\x00\x00\x63zzzz"), /* corr 0x63: answers nothing waiting */
		RESP(METADATA_T1_ERR),
		RESP(METADATA_T1_ERR), /* again: nothing waits */
	};
	static const struct l7t_want want[] = {
		{.api = "Metadata", .status = 3, .error = 1, .req_bytes = 29, .resp_bytes = 103},
	};

	/* not split: a split chunk of garbage is two chunks of garbage */
	l7t_check_script(L7_PROTO_KAFKA, L7T_WHOLE_TCP, steps, NSTEPS(steps), want, NSTEPS(want), 2, 2, 0, NULL);
}

/* Responses come in request order: an answer to a later request means the earlier ones' were lost
 * (here: the Metadata answer's header fell in a gap). */
GG_TEST(test_lost_in_order)
{
	static const char acks1[] = PRODUCE_V7_HEAD "\x00\x01\x00\x00\x75\x30\x00\x00\x00\x01\x00\x02t1\x00\x00\x00\x01"
						    "\x00\x00\x00\x00\x00\x00\x00\x00";
	static const struct l7t_step steps[] = {
		REQ(KCAT_METADATA_T1_3),
		REQ(acks1),
		RESP_GAP("\x00\x00", 103),
		RESP(PRODUCE_V7_ERR),
	};
	static const struct l7t_want want[] = {
		{.api = "Produce t1", .status = 17, .error = 1, .resp_bytes = 54},
	};

	l7t_check_script(L7_PROTO_KAFKA, L7T_ALL_SPLITS, steps, NSTEPS(steps), want, NSTEPS(want), 1, 0, 1, NULL);
}

/* Requests never answered: the pending queue stays bounded, the oldest are dropped and counted. */
GG_TEST(test_bounded)
{
	/* correlation id: big-endian at 8 */
	l7t_check_unanswered_bounded(L7_PROTO_KAFKA, KCAT_METADATA_T1_3, sizeof(KCAT_METADATA_T1_3) - 1, 8,
				     L7T_BIG_ENDIAN);
}
