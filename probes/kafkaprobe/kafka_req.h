/* kafka_req.h - kafkaprobe's Kafka request parser: the request header, and in Produce requests (api_key
 * 0, v3..v12) the records count of each partition's RecordBatches, in Fetch requests (api_key 1,
 * v4..v12) each partition's fetch_offset. Works on a prefix of the request (what the kernel captured):
 * never reads past it, says what it could not see. */
#ifndef GG_KAFKA_REQ_H
#define GG_KAFKA_REQ_H

#include <stddef.h>
#include <stdint.h>

#define KREQ_PRODUCE 0
#define KREQ_FETCH   1

/* The largest request size taken as sane (the broker's default socket.request.max.bytes is 100 MiB). */
#define KREQ_SIZE_MAX (100u << 20)

enum kreq_result {
	KREQ_OK = 0,	      /* parsed; every partition seen */
	KREQ_TRUNCATED = 1,   /* parsed up to the end of the prefix; partitions after it not seen */
	KREQ_OTHER = 2,	      /* a valid header of another api_key (nothing to count) */
	KREQ_UNSUPPORTED = 3, /* Produce < v3 or > v12, Fetch < v4 or > v12 (v13+: topic ids) */
	KREQ_BAD = -1,	      /* not a Kafka request as this parser knows them */
};

struct kreq_hdr {
	uint32_t size; /* the request's size prefix: bytes after it */
	int16_t api_key, api_version;
	int32_t correlation_id;
};

/* For each partition: Produce: value = records (sum of the records counts of its RecordBatches whose
 * header is in the prefix); Fetch: value = fetch_offset. topic is not NUL-terminated. */
typedef void (*kreq_part_cb)(void *arg, int api_key, const char *topic, size_t topic_len, int32_t partition,
			     int64_t value);

/* The request header at buf (the 4-byte size first), len bytes available (len may be less than the
 * request: a prefix). 0 when it looks like a Kafka request header (size sane, api_key 0..80, version
 * 0..20, correlation_id >= 0, a client_id length that fits), else KREQ_BAD. */
int kreq_header(const uint8_t *buf, size_t len, struct kreq_hdr *hdr);

/* The whole request at buf (size prefix first), len bytes of it available: enum kreq_result. cb (may be
 * NULL) is called for each partition seen. *batches_cut (may be NULL) gets the Produce RecordBatches
 * whose header is past the prefix (not counted). */
int kreq_parse(const uint8_t *buf, size_t len, kreq_part_cb cb, void *arg, struct kreq_hdr *hdr,
	       unsigned int *batches_cut);

#endif
