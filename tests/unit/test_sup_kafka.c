/* test_sup_kafka.c - unit tests of the Kafka channel: its configuration keys, errors naming the key, and
 * the producer against librdkafka's mock cluster in this process (delivery counted, queue bound,
 * outage then delivery). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "../../supervisor/config.h"
#include "../../supervisor/export/kafka.h"

static struct gg_config cfg;

GG_TEST(test_config_keys)
{
	const char *text = "kafka = { kafka_broker = [\"a:9092\", \"b:9092\"]; message_timeout_ms = 5000;\n"
			   "  security_protocol = \"sasl_ssl\"; sasl_mechanisms = \"PLAIN\"; sasl_username = \"u\";\n"
			   "  sasl_password = \"p\"; ssl_ca_location = \"ca.pem\";\n"
			   "  properties = (\"socket.keepalive.enable=true\", \"client.rack=r1\"); };\n"
			   "logs = { event_total_size = 7; meta_total_size = 3; };\n"
			   "meta = { report_interval = 30; };\nimdb = { max_memory_mb = 64; };\n";
	char err[512] = "";

	assert_int_equal(gg_config__load_buf(&cfg, "/etc/gg/t.conf", text, err, sizeof(err), NULL), 0);
	assert_string_equal(cfg.kafka.kafka_broker, "a:9092,b:9092");
	assert_int_equal(cfg.kafka.message_timeout_ms, 5000);
	assert_string_equal(cfg.kafka.security_protocol, "sasl_ssl");
	assert_string_equal(cfg.kafka.sasl_password, "p");
	assert_string_equal(cfg.kafka.ssl_ca_location, "/etc/gg/ca.pem"); /* relative to the file */
	assert_string_equal(cfg.kafka.properties, "socket.keepalive.enable=true\nclient.rack=r1");
	assert_int_equal(cfg.logs.event_total_size, 7);
	assert_int_equal(cfg.logs.meta_total_size, 3);
	assert_int_equal(cfg.meta_report_interval, 30);
	assert_int_equal(cfg.imdb.max_memory_mb, 64);
	gg_config__fini(&cfg);

	assert_int_equal(
		gg_config__load_buf(&cfg, "t.conf", "kafka = { properties = (\"novalue\"); };", err, sizeof(err), NULL),
		-EINVAL);
	assert_non_null(strstr(err, "t.conf:1: kafka.properties: element 0 must be a \"name=value\" string"));
	assert_int_equal(gg_config__load_buf(&cfg, "t.conf", "kafka = { security_protocol = \"tls\"; };", err,
					     sizeof(err), NULL),
			 -EINVAL);
	assert_non_null(strstr(err, "kafka.security_protocol"));
}

GG_TEST(test_bad_property_names_the_key)
{
	struct gg_kafka_opts o = {.brokers = "127.0.0.1:1",
				  .batch_num_messages = 10,
				  .compression_codec = "none",
				  .queue_buffering_max_messages = 10,
				  .queue_buffering_max_kbytes = 10,
				  .properties = "no.such.property=1"};
	char err[512] = "";

	assert_null(gg_kafka__new(uv_default_loop(), &o, err, sizeof(err)));
	assert_non_null(strstr(err, "kafka.properties: "));
	assert_non_null(strstr(err, "no.such.property"));
	o.properties = NULL;
	o.compression_codec = "brotli";
	assert_null(gg_kafka__new(uv_default_loop(), &o, err, sizeof(err)));
	assert_non_null(strstr(err, "kafka.compression_codec: "));
}

/* The loop runs until pred holds or timeout_ms passes. */
struct waiter {
	uv_timer_t t;
	uv_timer_t limit;
	struct gg_kafka *k;
	int topic;
	uint64_t want_delivered;
	int timed_out;
};

static void on_check(uv_timer_t *h)
{
	struct waiter *w = h->data;

	if (gg_kafka__stats(w->k, w->topic)->delivered >= w->want_delivered)
		uv_stop(h->loop);
}

static void on_limit(uv_timer_t *h)
{
	struct waiter *w = h->data;

	w->timed_out = 1;
	uv_stop(h->loop);
}

static int run_until_delivered(struct gg_kafka *k, int topic, uint64_t n, unsigned int timeout_ms)
{
	struct waiter w = {.k = k, .topic = topic, .want_delivered = n};
	uv_loop_t *loop = uv_default_loop();

	uv_timer_init(loop, &w.t);
	uv_timer_init(loop, &w.limit);
	w.t.data = w.limit.data = &w;
	uv_timer_start(&w.t, on_check, 5, 5);
	uv_timer_start(&w.limit, on_limit, timeout_ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&w.t, NULL);
	uv_close((uv_handle_t *)&w.limit, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return w.timed_out ? -ETIMEDOUT : 0;
}

GG_TEST(test_produce_outage_and_bound)
{
	char errstr[256], err[512];
	rd_kafka_conf_t *mconf = rd_kafka_conf_new();
	rd_kafka_t *mrk;
	rd_kafka_mock_cluster_t *mc;
	struct gg_kafka_opts o = {.batch_num_messages = 1000,
				  .compression_codec = "none",
				  .queue_buffering_max_messages = 50,
				  .queue_buffering_max_kbytes = 1024,
				  .queue_buffering_max_ms = 1,
				  .properties = "reconnect.backoff.ms=50\nreconnect.backoff.max.ms=200"};
	struct gg_kafka *k;
	const struct gg_kafka_topic_stats *st;
	int topic, ret = 0;

	(void)rd_kafka_conf_set(mconf, "log_level", "2", errstr, sizeof(errstr));
	mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mconf, errstr, sizeof(errstr));
	assert_non_null(mrk);
	mc = rd_kafka_mock_cluster_new(mrk, 1);
	assert_non_null(mc);
	assert_int_equal(rd_kafka_mock_topic_create(mc, "t", 1, 1), 0);
	o.brokers = rd_kafka_mock_cluster_bootstraps(mc);

	k = gg_kafka__new(uv_default_loop(), &o, err, sizeof(err));
	assert_non_null(k);
	topic = gg_kafka__topic(k, "t", err, sizeof(err));
	assert_int_equal(topic, 0);
	assert_int_equal(gg_kafka__topic(k, "t", err, sizeof(err)), 0);
	st = gg_kafka__stats(k, topic);

	for (int i = 0; i < 40; i++)
		assert_int_equal(gg_kafka__produce(k, topic, "{\"x\":1}", 7), 0);
	assert_int_equal(run_until_delivered(k, topic, 40, 10000), 0);
	assert_int_equal(st->delivered, 40);
	assert_int_equal(st->bytes_delivered, 40 * 7);

	/* broker down: 50 fit in the queue, 30 are refused and counted; back up: the 50 are delivered */
	assert_int_equal(rd_kafka_mock_broker_set_down(mc, 1), 0);
	for (int i = 0; i < 80; i++) {
		int r = gg_kafka__produce(k, topic, "{\"y\":2}", 7);

		if (r)
			ret = r;
		assert_true(r == 0 || r == -ENOBUFS);
	}
	assert_int_equal(ret, -ENOBUFS);
	assert_int_equal(st->produced, 90);
	assert_int_equal(st->dropped_queue_full, 30);
	assert_int_equal(run_until_delivered(k, topic, 90, 500), -ETIMEDOUT); /* nothing while down */
	assert_int_equal(st->delivered, 40);
	assert_true(gg_kafka__queue_len(k) >= 50);
	assert_int_equal(rd_kafka_mock_broker_set_up(mc, 1), 0);
	assert_int_equal(run_until_delivered(k, topic, 90, 15000), 0);
	assert_int_equal(st->delivered, 90);
	assert_int_equal(st->failed, 0);

	gg_kafka__close(k);
	uv_run(uv_default_loop(), UV_RUN_DEFAULT);
	assert_int_equal(gg_kafka__flush(k, 1000), 0);
	gg_kafka__free(k, 0);
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(mrk);
}
