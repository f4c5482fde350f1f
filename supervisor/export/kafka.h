/* kafka.h - the Kafka channel: one librdkafka producer shared by the metric, event and metadata
 * topics. Producing never blocks the libuv loop (a full queue is a counted drop); delivery reports and
 * librdkafka's own log and error events are served on the loop thread (its main queue signals a pipe
 * watched by uv_poll, with a 100 ms timer as a backstop). */
#ifndef GG_KAFKA_H
#define GG_KAFKA_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define GG_KAFKA_TOPICS_MAX 4u

/* Counters of one topic. produced = delivered + failed + in the queue. */
struct gg_kafka_topic_stats {
	uint64_t produced;  /* accepted by the producer queue */
	uint64_t delivered; /* acknowledged by the broker */
	uint64_t failed;    /* delivery reports with an error (timed out in the queue, refused by the broker) */
	uint64_t dropped_queue_full; /* refused at once: the queue bound was reached */
	uint64_t dropped_other;	     /* refused at once for another reason (message too large, ...) */
	uint64_t bytes_delivered;
};

struct gg_kafka_opts {
	const char *brokers; /* "host:port[,host:port...]" */
	int batch_num_messages;
	const char *compression_codec;
	int queue_buffering_max_messages;
	int queue_buffering_max_kbytes;
	int queue_buffering_max_ms;
	int message_timeout_ms; /* 0 = librdkafka's default */
	/* optional (NULL or "" = unset) */
	const char *security_protocol, *ssl_ca_location, *ssl_certificate_location, *ssl_key_location,
		*ssl_key_password, *sasl_mechanisms, *sasl_username, *sasl_password;
	const char *properties; /* further librdkafka properties: "name=value" lines separated by '\n' */
	/* called on the loop thread for librdkafka's log lines and errors (may be NULL) */
	void (*log)(void *ctx, int level, const char *msg); /* level: syslog levels as librdkafka uses */
	void *log_ctx;
};

struct gg_kafka;

/* NULL on error, with a message naming the offending setting in err. */
struct gg_kafka *gg_kafka__new(uv_loop_t *loop, const struct gg_kafka_opts *opts, char *err, size_t errlen);
/* A topic handle index (0 .. GG_KAFKA_TOPICS_MAX-1) or a negative errno. The same name twice gives the
 * same index. */
int gg_kafka__topic(struct gg_kafka *k, const char *name, char *err, size_t errlen);
/* Queue one message (copied). 0, -ENOBUFS (queue full, counted), or another negative errno (counted). */
int gg_kafka__produce(struct gg_kafka *k, int topic, const void *payload, size_t len);
/* Serve delivery reports and events now (the loop does it by itself). */
void gg_kafka__poll(struct gg_kafka *k);

const char *gg_kafka__topic_name(const struct gg_kafka *k, int topic);
int gg_kafka__ntopics(const struct gg_kafka *k);
const struct gg_kafka_topic_stats *gg_kafka__stats(const struct gg_kafka *k, int topic);
/* Messages waiting in the producer (queued or in flight). */
uint64_t gg_kafka__queue_len(const struct gg_kafka *k);
uint64_t gg_kafka__errors(const struct gg_kafka *k); /* client-level errors (broker down, ...) */

/* Stop the uv handles (memory stays until gg_kafka__free). Accepts NULL. */
void gg_kafka__close(struct gg_kafka *k);
/* Wait up to flush_ms for queued messages to be delivered (no more events are signalled to the loop
 * afterwards). Returns how many are still waiting. */
uint64_t gg_kafka__flush(struct gg_kafka *k, int flush_ms);
/* Wait up to flush_ms for queued messages to be delivered, then destroy. Call after the loop has closed
 * the handles. Accepts NULL. */
void gg_kafka__free(struct gg_kafka *k, int flush_ms);

#endif
