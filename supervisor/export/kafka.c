/* kafka.c - librdkafka producer driven from the libuv loop: non-blocking produce, delivery reports
 * counted per topic, librdkafka's events served on the loop thread. */
#include "kafka.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "uvutil.h"

#define POLL_BACKSTOP_MS 100u
#define SERVE_EVERY	 4096u /* produce() calls between two services of the event queue */

struct gg_kafka {
	rd_kafka_t *rk;
	rd_kafka_queue_t *mainq;
	rd_kafka_topic_t *topics[GG_KAFKA_TOPICS_MAX];
	char *names[GG_KAFKA_TOPICS_MAX];
	struct gg_kafka_topic_stats st[GG_KAFKA_TOPICS_MAX];
	int ntopics;
	uint64_t errors;
	unsigned int since_serve;

	int pipefd[2];
	uv_poll_t poll;
	uv_timer_t timer;
	int poll_open, timer_open;

	void (*log)(void *ctx, int level, const char *msg);
	void *log_ctx;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct gg_kafka *k = opaque;
	uintptr_t t = (uintptr_t)m->_private;

	(void)rk;
	if (t >= (uintptr_t)k->ntopics)
		return;
	if (m->err) {
		k->st[t].failed++;
	} else {
		k->st[t].delivered++;
		k->st[t].bytes_delivered += m->len;
	}
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct gg_kafka *k = opaque;
	char msg[512];

	(void)rk;
	k->errors++;
	if (k->log) {
		snprintf(msg, sizeof(msg), "kafka: %s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
		k->log(k->log_ctx, 3, msg);
	}
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	struct gg_kafka *k = rd_kafka_opaque(rk);
	char msg[512];

	if (!k || !k->log)
		return;
	snprintf(msg, sizeof(msg), "kafka: %s: %s", fac, buf);
	k->log(k->log_ctx, level, msg);
}

static int set(rd_kafka_conf_t *conf, const char *key, const char *name, const char *value, char *err, size_t errlen)
{
	char e[256];

	if (!value || !value[0])
		return 0;
	if (rd_kafka_conf_set(conf, name, value, e, sizeof(e)) != RD_KAFKA_CONF_OK) {
		snprintf(err, errlen, "kafka.%s: %s", key, e);
		return -EINVAL;
	}
	return 0;
}

static int set_int(rd_kafka_conf_t *conf, const char *key, const char *name, int value, char *err, size_t errlen)
{
	char v[24];

	snprintf(v, sizeof(v), "%d", value);
	return set(conf, key, name, v, err, errlen);
}

/* "name=value" lines */
static int set_properties(rd_kafka_conf_t *conf, const char *props, char *err, size_t errlen)
{
	char *copy, *line, *save = NULL;
	int ret = 0;

	if (!props || !props[0])
		return 0;
	copy = strdup(props);
	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line && !ret; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq || eq == line) {
			snprintf(err, errlen, "kafka.properties: \"%s\" is not name=value", line);
			ret = -EINVAL;
			break;
		}
		*eq = 0;
		ret = set(conf, "properties", line, eq + 1, err, errlen);
	}
	free(copy);
	return ret;
}

static void serve(struct gg_kafka *k)
{
	k->since_serve = 0;
	/* bounded: a burst of events is served over several loop iterations */
	for (int i = 0; i < 64 && rd_kafka_poll(k->rk, 0) > 0; i++)
		;
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct gg_kafka *k = h->data;
	char tmp[256];

	(void)status;
	(void)events;
	/* drain first: an event queued after the poll below signals the pipe again */
	while (read(k->pipefd[0], tmp, sizeof(tmp)) > 0)
		;
	serve(k);
}

static void on_timer(uv_timer_t *h)
{
	serve(h->data);
}

struct gg_kafka *gg_kafka__new(uv_loop_t *loop, const struct gg_kafka_opts *o, char *err, size_t errlen)
{
	struct gg_kafka *k = calloc(1, sizeof(*k));
	rd_kafka_conf_t *conf = NULL;
	char e[512];

	if (!k) {
		snprintf(err, errlen, "kafka: out of memory");
		return NULL;
	}
	k->pipefd[0] = k->pipefd[1] = -1;
	k->log = o->log;
	k->log_ctx = o->log_ctx;
	conf = rd_kafka_conf_new();
	if (!conf)
		goto err_nomem;
	if (set(conf, "kafka_broker", "bootstrap.servers", o->brokers, err, errlen) ||
	    set(conf, "client_id", "client.id", "gala-gopher", err, errlen) ||
	    set_int(conf, "batch_num_messages", "batch.num.messages", o->batch_num_messages, err, errlen) ||
	    set(conf, "compression_codec", "compression.codec", o->compression_codec, err, errlen) ||
	    set_int(conf, "queue_buffering_max_messages", "queue.buffering.max.messages",
		    o->queue_buffering_max_messages, err, errlen) ||
	    set_int(conf, "queue_buffering_max_kbytes", "queue.buffering.max.kbytes", o->queue_buffering_max_kbytes,
		    err, errlen) ||
	    set_int(conf, "queue_buffering_max_ms", "queue.buffering.max.ms", o->queue_buffering_max_ms, err, errlen) ||
	    (o->message_timeout_ms > 0 &&
	     set_int(conf, "message_timeout_ms", "message.timeout.ms", o->message_timeout_ms, err, errlen)) ||
	    set(conf, "security_protocol", "security.protocol", o->security_protocol, err, errlen) ||
	    set(conf, "ssl_ca_location", "ssl.ca.location", o->ssl_ca_location, err, errlen) ||
	    set(conf, "ssl_certificate_location", "ssl.certificate.location", o->ssl_certificate_location, err,
		errlen) ||
	    set(conf, "ssl_key_location", "ssl.key.location", o->ssl_key_location, err, errlen) ||
	    set(conf, "ssl_key_password", "ssl.key.password", o->ssl_key_password, err, errlen) ||
	    set(conf, "sasl_mechanisms", "sasl.mechanisms", o->sasl_mechanisms, err, errlen) ||
	    set(conf, "sasl_username", "sasl.username", o->sasl_username, err, errlen) ||
	    set(conf, "sasl_password", "sasl.password", o->sasl_password, err, errlen) ||
	    set(conf, "(log)", "log.queue", "true", err, errlen) || set_properties(conf, o->properties, err, errlen))
		goto err_out;
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_error_cb(conf, on_error);
	rd_kafka_conf_set_log_cb(conf, on_log);
	rd_kafka_conf_set_opaque(conf, k);

	k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof(e));
	if (!k->rk) {
		snprintf(err, errlen, "kafka: cannot create the producer: %s", e);
		goto err_out;
	}
	conf = NULL; /* owned by rk now */
	k->mainq = rd_kafka_queue_get_main(k->rk);
	if (!k->mainq || rd_kafka_set_log_queue(k->rk, NULL)) {
		snprintf(err, errlen, "kafka: cannot route the log to the main queue");
		goto err_out;
	}
	if (pipe2(k->pipefd, O_NONBLOCK | O_CLOEXEC)) {
		snprintf(err, errlen, "kafka: pipe: %s", strerror(errno));
		goto err_out;
	}
	/* Nothing below fails: the timer alone keeps things going if the pipe cannot be watched. */
	uv_timer_init(loop, &k->timer);
	k->timer_open = 1;
	k->timer.data = k;
	uv_timer_start(&k->timer, on_timer, POLL_BACKSTOP_MS, POLL_BACKSTOP_MS);
	if (uv_poll_init(loop, &k->poll, k->pipefd[0]) == 0) {
		k->poll_open = 1;
		k->poll.data = k;
		rd_kafka_queue_io_event_enable(k->mainq, k->pipefd[1], "1", 1);
		uv_poll_start(&k->poll, UV_READABLE, on_readable);
	}
	return k;

err_nomem:
	snprintf(err, errlen, "kafka: out of memory");
err_out:
	if (conf)
		rd_kafka_conf_destroy(conf);
	gg_kafka__free(k, 0);
	return NULL;
}

int gg_kafka__topic(struct gg_kafka *k, const char *name, char *err, size_t errlen)
{
	for (int i = 0; i < k->ntopics; i++) {
		if (!strcmp(k->names[i], name))
			return i;
	}
	if (k->ntopics >= (int)GG_KAFKA_TOPICS_MAX) {
		snprintf(err, errlen, "kafka: too many topics");
		return -ENOSPC;
	}
	k->names[k->ntopics] = strdup(name);
	if (!k->names[k->ntopics])
		return -ENOMEM;
	k->topics[k->ntopics] = rd_kafka_topic_new(k->rk, name, NULL);
	if (!k->topics[k->ntopics]) {
		snprintf(err, errlen, "kafka: topic \"%s\": %s", name, rd_kafka_err2str(rd_kafka_last_error()));
		free(k->names[k->ntopics]);
		k->names[k->ntopics] = NULL;
		return -EINVAL;
	}
	return k->ntopics++;
}

int gg_kafka__produce(struct gg_kafka *k, int topic, const void *payload, size_t len)
{
	struct gg_kafka_topic_stats *st;
	rd_kafka_resp_err_t e;

	if (topic < 0 || topic >= k->ntopics)
		return -EINVAL;
	st = &k->st[topic];
	/* Messages count against the queue bound until their delivery report is served. A long burst on the
	 * loop (one IPC callback can carry many batches) would starve the pipe callback: serve here too. */
	if (++k->since_serve >= SERVE_EVERY)
		serve(k);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (rd_kafka_produce(k->topics[topic], RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, (void *)payload, len,
				     NULL, 0, (void *)(uintptr_t)topic) == 0) {
			st->produced++;
			return 0;
		}
		e = rd_kafka_last_error();
		if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			break;
		serve(k); /* reports already in make room at once */
	}
	if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
		st->dropped_queue_full++;
		return -ENOBUFS;
	}
	st->dropped_other++;
	return e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ? -EMSGSIZE : -EIO;
}

void gg_kafka__poll(struct gg_kafka *k)
{
	if (k && k->rk)
		serve(k);
}

const char *gg_kafka__topic_name(const struct gg_kafka *k, int topic)
{
	return topic >= 0 && topic < k->ntopics ? k->names[topic] : "";
}

int gg_kafka__ntopics(const struct gg_kafka *k)
{
	return k->ntopics;
}

const struct gg_kafka_topic_stats *gg_kafka__stats(const struct gg_kafka *k, int topic)
{
	return topic >= 0 && topic < k->ntopics ? &k->st[topic] : NULL;
}

uint64_t gg_kafka__queue_len(const struct gg_kafka *k)
{
	int n = k->rk ? rd_kafka_outq_len(k->rk) : 0;

	return n > 0 ? (uint64_t)n : 0;
}

uint64_t gg_kafka__errors(const struct gg_kafka *k)
{
	return k->errors;
}

void gg_kafka__close(struct gg_kafka *k)
{
	if (!k)
		return;
	gg_uv_close_open((uv_handle_t *)&k->poll, k->poll_open);
	gg_uv_close_open((uv_handle_t *)&k->timer, k->timer_open);
}

uint64_t gg_kafka__flush(struct gg_kafka *k, int flush_ms)
{
	if (!k || !k->rk)
		return 0;
	if (k->mainq)
		rd_kafka_queue_io_event_enable(k->mainq, -1, NULL, 0);
	if (flush_ms > 0)
		(void)rd_kafka_flush(k->rk, flush_ms); /* serves delivery reports: the counters stay right */
	return gg_kafka__queue_len(k);
}

void gg_kafka__free(struct gg_kafka *k, int flush_ms)
{
	if (!k)
		return;
	(void)gg_kafka__flush(k, flush_ms);
	for (int i = 0; i < k->ntopics; i++) {
		rd_kafka_topic_destroy(k->topics[i]);
		free(k->names[i]);
	}
	if (k->mainq)
		rd_kafka_queue_destroy(k->mainq);
	if (k->rk)
		rd_kafka_destroy(k->rk);
	if (k->pipefd[0] >= 0)
		close(k->pipefd[0]);
	if (k->pipefd[1] >= 0)
		close(k->pipefd[1]);
	free(k);
}
