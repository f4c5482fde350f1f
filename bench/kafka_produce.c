/* kafka_produce.c - benchmark of the Kafka channel (supervisor/export/kafka.c): N metric-record JSON messages
 * (rendered per message like the supervisor does) produced from a libuv loop to a broker, until every
 * delivery report is in. Prints records/s delivered and the CPU this process used.
 *   build/bench/kafka_produce -b BOOTSTRAP [-n N] [-t TOPIC] [-q QUEUE_MESSAGES]
 * bench/kafka_produce.sh runs it against tests/helpers/kafka_mock and adds the broker's CPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "../supervisor/export/kafka.h"

struct bench {
	struct gg_kafka *k;
	int topic;
	unsigned long n, produced, full_waits;
	uint64_t t_start, t_end;
	uv_timer_t produce, check;
};

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static void on_produce(uv_timer_t *h)
{
	struct bench *b = h->data;
	char msg[512];

	if (!b->t_start)
		b->t_start = gg_mono_ns();
	for (int i = 0; i < 50000 && b->produced < b->n; i++) {
		unsigned long x = b->produced;
		int len = snprintf(
			msg, sizeof(msg),
			"{\"timestamp\":%llu,\"machine_id\":\"3d1219c7c4c5404aaa1f6d2a48adfda4\",\"hostname\":\"vm\","
			"\"entity_name\":\"tcp_link\",\"table_name\":\"tcp_link_bench\",\"tgid\":\"%lu\",\"role\":"
			"\"client\","
			"\"client_ip\":\"10.0.%lu.%lu\",\"server_ip\":\"192.168.1.10\",\"server_port\":\"8080\","
			"\"rx_bytes\":%lu,\"tx_bytes\":%lu,\"srtt\":%lu.5,\"snd_cwnd\":10}",
			(unsigned long long)(b->t_start / 1000000u), 1000 + x % 5000, (x / 250) % 250, x % 250,
			x * 1500, x * 900, 100 + x % 900);
		int err = gg_kafka__produce(b->k, b->topic, msg, (size_t)len);

		if (err == -ENOBUFS) {
			b->full_waits++;
			return; /* the queue is full: the next tick, after delivery reports made room */
		}
		if (err) {
			fprintf(stderr, "kafka_produce: produce: %s\n", strerror(-err));
			exit(1);
		}
		b->produced++;
	}
	if (b->produced == b->n)
		uv_timer_stop(h);
}

static void on_check(uv_timer_t *h)
{
	struct bench *b = h->data;
	const struct gg_kafka_topic_stats *st = gg_kafka__stats(b->k, b->topic);

	if (st->delivered + st->failed < b->n)
		return;
	b->t_end = gg_mono_ns();
	uv_close((uv_handle_t *)&b->produce, NULL);
	uv_close((uv_handle_t *)&b->check, NULL);
	gg_kafka__close(b->k);
}

int main(int argc, char **argv)
{
	struct bench b = {.n = 1000000};
	const char *boot = NULL, *topic = "gala_gopher";
	int queue = 100000, c;
	struct gg_kafka_opts o = {0};
	const struct gg_kafka_topic_stats *st;
	uv_loop_t *loop = uv_default_loop();
	char err[512];
	double cpu0, cpu, secs;

	while ((c = getopt(argc, argv, "b:n:t:q:")) != -1) {
		if (c == 'b')
			boot = optarg;
		else if (c == 'n')
			b.n = strtoul(optarg, NULL, 10);
		else if (c == 't')
			topic = optarg;
		else if (c == 'q')
			queue = atoi(optarg);
		else
			return 2;
	}
	if (!boot || !b.n) {
		fprintf(stderr, "usage: kafka_produce -b BOOTSTRAP [-n N] [-t TOPIC] [-q QUEUE_MESSAGES]\n");
		return 2;
	}
	/* the supervisor's defaults (config.c) */
	o.brokers = boot;
	o.batch_num_messages = 10000;
	o.compression_codec = "none";
	o.queue_buffering_max_messages = queue;
	o.queue_buffering_max_kbytes = 1048576;
	o.queue_buffering_max_ms = 5;
	b.k = gg_kafka__new(loop, &o, err, sizeof(err));
	if (!b.k || (b.topic = gg_kafka__topic(b.k, topic, err, sizeof(err))) < 0) {
		fprintf(stderr, "kafka_produce: %s\n", err);
		return 1;
	}
	uv_timer_init(loop, &b.produce);
	uv_timer_init(loop, &b.check);
	b.produce.data = b.check.data = &b;
	cpu0 = cpu_s();
	uv_timer_start(&b.produce, on_produce, 0, 1);
	uv_timer_start(&b.check, on_check, 10, 10);
	uv_run(loop, UV_RUN_DEFAULT);
	cpu = cpu_s() - cpu0;
	st = gg_kafka__stats(b.k, b.topic);
	secs = (double)(b.t_end - b.t_start) / 1e9;
	printf("kafka: %lu messages (%lu bytes each ~%.0f), delivered %llu, failed %llu in %.2f s: %.0f records/s, "
	       "%.1f MiB/s; producer CPU %.2f s (%.0f%% of one core), %.2f us/record; queue-full waits %lu\n",
	       b.n, (unsigned long)(st->bytes_delivered / (st->delivered ? st->delivered : 1)),
	       (double)st->bytes_delivered / (double)(st->delivered ? st->delivered : 1),
	       (unsigned long long)st->delivered, (unsigned long long)st->failed, secs, (double)st->delivered / secs,
	       (double)st->bytes_delivered / secs / (1 << 20), cpu, 100.0 * cpu / secs, cpu * 1e6 / (double)b.n,
	       b.full_waits);
	gg_kafka__free(b.k, 1000);
	uv_loop_close(loop);
	return st->failed ? 1 : 0;
}
