/* export.c - dispatch of validated records, events and metadata to the configured channels (imdb +
 * web_server, Kafka, JSON-lines log files). Runs on the loop thread. */
#include "clock.h"
#include "export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "http.h"
#include "ident_export.h"
#include "metadata.h"
#include "otel.h"
#include "uvutil.h"
#include "metric_json.h"
#include "selfmetrics.h"
#include "supervisor.h"

#define LOGS_FLUSH_AT	      (256u * 1024u)  /* buffered metric lines written out at this size (or every second) */
#define SCRAPE_MAX	      (1024ull << 20) /* a /metrics answer larger than this is a 500 */
#define KAFKA_LOG_INTERVAL_MS 5000u
#define KAFKA_FLUSH_MS	      2000

static const char *const stream_names[GG_STREAM__COUNT] = {"metric", "event", "meta"};
static const char *const log_names[GG_STREAM__COUNT] = {"metrics.log", "events.log", "metadata.log"};

/* ---- logs channel ---------------------------------------------------------------------------------- */

static void logs_flush(struct gg_logs_out *l)
{
	size_t lost = 0;
	int err;

	if (!l->open || !l->buf.len)
		return;
	err = rot_file__write_lines(&l->file, l->buf.data, l->buf.len, &lost);
	l->lines += l->pending - lost;
	l->lost_lines += lost;
	l->buf.len = 0;
	l->pending = 0;
	if (err) {
		l->write_errors++;
		l->episode_lost += lost;
		/* Once per episode (and to stderr too: the supervisor's own log is likely on the same disk). */
		if (!l->failing) {
			gg_error("cannot write %s: %s; lines are dropped (and counted) until it can be written again",
				 l->file.path, strerror(-err));
			l->failing = 1;
		}
	} else if (l->failing) {
		gg_warn("%s is written again; %llu lines were lost meanwhile", l->file.path,
			(unsigned long long)l->episode_lost);
		l->failing = 0;
		l->episode_lost = 0;
	}
}

static int logs_open(struct gg_logs_out *l, const char *dir, const char *name, int total_mb)
{
	char path[PATH_MAX + 64];
	int err;

	if (gg_mkdir_p(dir, 0750))
		gg_warn("cannot create %s: %s", dir, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* two files (current + .1) share the total size */
	err = rot_file__open(&l->file, path, ((uint64_t)total_mb << 20) / 2, 1);
	if (err) {
		gg_error("cannot open %s: %s", path, strerror(-err));
		return err;
	}
	gg_buf__init(&l->buf, 0);
	l->open = 1;
	return 0;
}

/* ---- sinks ----------------------------------------------------------------------------------------- */

/* exp->msg holds one JSON object: send it on stream s's channel. */
static void emit(struct gg_export *exp, enum gg_stream s)
{
	if (exp->msg.oom) {
		exp->st.render_errors++;
		gg_buf__fini(&exp->msg);
		return;
	}
	switch (exp->sink[s]) {
	case GG_SINK_LOGS: {
		struct gg_logs_out *l = &exp->logs[s];

		gg_buf__put(&l->buf, exp->msg.data, exp->msg.len);
		gg_buf__putc(&l->buf, '\n');
		if (l->buf.oom) {
			exp->st.render_errors++;
			l->lost_lines += l->pending; /* the buffered lines go with the buffer */
			l->pending = 0;
			gg_buf__fini(&l->buf);
			return;
		}
		l->pending++;
		/* events and metadata are rare: written at once; metric lines in batches */
		if (s != GG_STREAM_METRIC || l->buf.len >= LOGS_FLUSH_AT)
			logs_flush(l);
		break;
	}
	case GG_SINK_KAFKA:
		if (gg_kafka__produce(exp->kafka, exp->topic[s], exp->msg.data, exp->msg.len))
			exp->st.kafka_refused[s]++;
		break;
	default:
		break;
	}
}

/* {"timestamp":ms,"machine_id":..,"hostname":..,"entity_name":..,"table_name":..,"<field>":value,...}:
 * keys and labels as strings, gauges and counters as numbers, histograms and summaries as their
 * encoded strings. */
static void render_metric_json(struct gg_export *exp, struct gg_buf *b, const struct meta_record *rec, uint64_t now)
{
	const struct meta_table *t = rec->table;
	const struct gg_sup *sup = exp->sup;

	gg_buf__puts(b, "{\"timestamp\":");
	gg_buf__put_u64(b, now);
	gg_buf__put_json_member(b, ",\"machine_id\":", sup->machine_id);
	gg_buf__put_json_member(b, ",\"hostname\":", sup->hostname);
	gg_buf__put_json_member(b, ",\"entity_name\":", t->entity);
	gg_buf__put_json_member(b, ",\"table_name\":", t->name);
	for (unsigned int i = 0; i < rec->nvalues; i++) {
		const struct meta_field *f = &t->fields[i];

		if (!strcmp(f->name, "machine_id") || !strcmp(f->name, "hostname"))
			continue; /* ours, already there: one value per name in every channel */
		gg_buf__putc(b, ',');
		gg_buf__put_json_str(b, f->name, strlen(f->name));
		gg_buf__putc(b, ':');
		if (f->type == META_GAUGE || f->type == META_COUNTER)
			gg_buf__put_json_number(b, rec->values[i], rec->lens[i]);
		else
			gg_buf__put_json_str(b, rec->values[i], rec->lens[i]);
	}
	gg_buf__putc(b, '}');
}

static void metric_record(struct gg_export *exp, const struct meta_record *rec)
{
	exp->st.records[GG_STREAM_METRIC]++;
	switch (exp->sink[GG_STREAM_METRIC]) {
	case GG_SINK_IMDB:
		if (imdb__update(exp->db, rec, gg_now_ms(), NULL) == 0)
			exp->st.imdb_stored++;
		else
			exp->st.imdb_dropped++;
		break;
	case GG_SINK_LOGS:
	case GG_SINK_KAFKA:
		exp->msg.len = 0;
		if (exp->metric_nested)
			gg_metric_json__render_nested(&exp->msg, rec, gg_wall_ms(), exp->sup->machine_id,
						      exp->sup->hostname);
		else
			render_metric_json(exp, &exp->msg, rec, gg_wall_ms());
		emit(exp, GG_STREAM_METRIC);
		break;
	default:
		break;
	}
}

static void event_record(struct gg_export *exp, const struct meta_record *rec)
{
	if (exp->sink[GG_STREAM_EVENT] == GG_SINK_OFF || !exp->events)
		return;
	exp->st.records[GG_STREAM_EVENT]++;
	exp->msg.len = 0;
	if (gg_events__process(exp->events, rec, gg_wall_ms(), gg_now_ms(), &exp->msg) == 0) {
		if (!exp->msg.oom)
			gg_recent__push(exp->recent, exp->msg.data, exp->msg.len); /* the web page's event log */
		emit(exp, GG_STREAM_EVENT);
	}
}

/* The container id and name of process tgid, by the identity resolver ctx. */
static void otel_container(void *ctx, uint32_t tgid, const char **ret_id, const char **ret_name)
{
	const struct gg_ident *id = gg_identity__lookup(gg_ident_export__identity(ctx), tgid, gg_now_ms());

	*ret_id = id ? id->v[GG_IDENT_CONTAINER_ID] : NULL;
	*ret_name = id ? id->v[GG_IDENT_CONTAINER_NAME] : NULL;
}

/* A request span or an OpenTelemetry log record (tprofiling's thread events), rendered by render: JSON on
 * the event channel, as is (no de-duplication: each is one request or one event), counted in st. */
static void otel_record(struct gg_export *exp, const struct meta_record *rec,
			int (*render)(const struct gg_otel_opts *o, const struct meta_record *rec, struct gg_buf *out),
			struct gg_rendered_stats *st)
{
	const struct gg_otel_opts o = {.machine_id = exp->sup->machine_id,
				       .hostname = exp->sup->hostname,
				       .version = GG_VERSION,
				       .container = exp->ident ? otel_container : NULL,
				       .ctx = exp->ident};

	if (exp->sink[GG_STREAM_EVENT] == GG_SINK_OFF) {
		st->off++;
		return;
	}
	exp->msg.len = 0;
	if (render(&o, rec, &exp->msg)) {
		st->invalid++;
		return;
	}
	st->sent++;
	emit(exp, GG_STREAM_EVENT);
}

void gg_export__record(struct gg_sup *sup, struct gg_probe *p, const struct meta_record *rec)
{
	struct gg_export *exp = sup->exp;

	(void)p;
	if (!exp)
		return;
	if (gg_events__is_event_table(rec->table))
		event_record(exp, rec);
	else if (gg_traces__is_trace_table(rec->table))
		otel_record(exp, rec, gg_traces__render, &exp->st.spans);
	else if (gg_otel_logs__is_log_table(rec->table))
		otel_record(exp, rec, gg_otel_logs__render, &exp->st.logs);
	else if (exp->sink[GG_STREAM_METRIC] == GG_SINK_OFF)
		metric_record(exp, rec); /* counted only: no lookup */
	else {				 /* labels added here, once, so that every channel has the same series */
		const struct meta_table *stale = NULL;
		const struct meta_record *out = gg_ident_export__probe_record(exp->ident, p, rec, gg_now_ms(), &stale);

		if (stale) {
			/* the probe's labels changed: rows of the old label set go at once (one family, one
			 * label set), and the table's metadata is sent again */
			imdb__clear(exp->db, stale);
			if (exp->sink[GG_STREAM_META] != GG_SINK_OFF) {
				exp->msg.len = 0;
				gg_metadata__render(&exp->msg, out->table, gg_wall_ms());
				exp->st.records[GG_STREAM_META]++;
				emit(exp, GG_STREAM_META);
			}
		}
		metric_record(exp, out);
	}
}

/* ---- metadata -------------------------------------------------------------------------------------- */

static void meta_report(struct gg_export *exp, unsigned int from)
{
	const struct meta_registry *reg = exp->sup->reg;
	unsigned int n = meta_registry__count(reg);
	uint64_t now = gg_wall_ms();

	for (unsigned int i = from; i < n; i++) {
		const struct meta_table *t = meta_registry__at(reg, i);

		if (gg_events__is_event_table(t) || gg_traces__is_trace_table(t) || gg_otel_logs__is_log_table(t))
			continue;
		exp->msg.len = 0;
		gg_metadata__render(&exp->msg, gg_ident_export__table(exp->ident, t), now);
		exp->st.records[GG_STREAM_META]++;
		emit(exp, GG_STREAM_META);
	}
	exp->meta_reported = n;
}

static void meta_tick(struct gg_export *exp)
{
	uint64_t now = gg_now_ms();
	unsigned int n;

	if (exp->sink[GG_STREAM_META] == GG_SINK_OFF)
		return;
	n = meta_registry__count(exp->sup->reg);
	if (now - exp->meta_last_ms >= (uint64_t)exp->sup->cfg.meta_report_interval * 1000u) {
		meta_report(exp, 0);
		exp->meta_last_ms = now;
		exp->st.meta_reports++;
	} else if (n > exp->meta_reported) {
		meta_report(exp, exp->meta_reported); /* tables added since (schema reload) */
	}
}

/* ---- web_server ------------------------------------------------------------------------------------ */

int gg_export__render_metrics(struct gg_sup *sup, struct gg_buf *b)
{
	struct gg_export *exp = sup->exp;
	uint64_t series = 0;

	if (exp->db) {
		exp->st.imdb_expired += imdb__expire(exp->db, gg_now_ms());
		series = prom_render_imdb(b, exp->db, exp->fams, gg_selfmetrics__reserved, &exp->fam_conflicts);
	}
	exp->st.last_scrape_series = series;
	gg_selfmetrics__render(b, sup);
	return b->oom ? -ENOMEM : 0;
}

static void on_http(void *ctx, const struct gg_http_request *req, struct gg_http_response *resp)
{
	struct gg_sup *sup = ctx;
	struct gg_export *exp = sup->exp;
	uint64_t t0 = gg_mono_ns();
	struct gg_buf b;

	if (strcmp(req->path, "/metrics") && strcmp(req->path, "/")) {
		resp->status = 404;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup("not found: metrics are at /metrics\n");
		resp->body_len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
		resp->status = 405;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup("method not allowed\n");
		resp->body_len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	gg_buf__init(&b, SCRAPE_MAX);
	(void)gg_buf__reserve(&b, exp->scrape_hint + exp->scrape_hint / 8 + 4096);
	exp->st.scrapes++;
	if (gg_export__render_metrics(sup, &b)) {
		gg_buf__fini(&b);
		exp->st.scrape_errors++;
		resp->status = 500;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup("out of memory rendering the metrics\n");
		resp->body_len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	exp->scrape_hint = b.len;
	exp->st.last_scrape_bytes = b.len;
	resp->status = 200;
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	resp->body = gg_buf__steal(&b, &resp->body_len);
	exp->st.last_scrape_ns = gg_mono_ns() - t0;
}

/* ---- lifecycle ------------------------------------------------------------------------------------- */

static void on_kafka_log(void *ctx, int level, const char *msg)
{
	struct gg_export *exp = ctx;
	uint64_t now = gg_now_ms();

	if (level >= 6) {
		gg_debug("%s", msg);
		return;
	}
	/* A broker outage makes librdkafka repeat itself every second: one line per interval. */
	if (exp->kafka_log_ms && now - exp->kafka_log_ms < KAFKA_LOG_INTERVAL_MS) {
		exp->kafka_log_suppressed++;
		return;
	}
	if (exp->kafka_log_suppressed)
		gg_log(level <= 4 ? GG_LOG_WARN : GG_LOG_INFO, "%s (%llu similar messages suppressed)", msg,
		       (unsigned long long)exp->kafka_log_suppressed);
	else
		gg_log(level <= 4 ? GG_LOG_WARN : GG_LOG_INFO, "%s", msg);
	exp->kafka_log_ms = now;
	exp->kafka_log_suppressed = 0;
}

static void on_timer(uv_timer_t *h)
{
	struct gg_export *exp = h->data;

	for (int s = 0; s < GG_STREAM__COUNT; s++)
		logs_flush(&exp->logs[s]);
	if (exp->db)
		exp->st.imdb_expired += imdb__expire(exp->db, gg_now_ms());
	meta_tick(exp);
}

static enum gg_stream_out sink_of(enum gg_stream s, enum gg_out_channel ch)
{
	switch (ch) {
	case GG_OUT_WEB_SERVER:
		if (s == GG_STREAM_METRIC)
			return GG_SINK_IMDB;
		gg_warn("%s.out_channel: web_server serves metrics only; %s output is off", stream_names[s],
			stream_names[s]);
		return GG_SINK_OFF;
	case GG_OUT_LOGS:
		return GG_SINK_LOGS;
	case GG_OUT_JSON: /* gala-gopher's: the log files, metric lines in the nested form */
		if (s != GG_STREAM_METRIC)
			gg_warn("%s.out_channel: json is a metric channel; %s goes to the log files", stream_names[s],
				stream_names[s]);
		return GG_SINK_LOGS;
	case GG_OUT_KAFKA:
		return GG_SINK_KAFKA;
	default:
		return GG_SINK_OFF;
	}
}

static int init_web_server(struct gg_sup *sup, struct gg_export *exp)
{
	const struct gg_http_conf *w = &sup->cfg.web_server;
	struct imdb_limits lim = {
		.max_tables = (unsigned int)sup->cfg.imdb.max_tables_num,
		.max_records = (unsigned int)sup->cfg.imdb.max_records_num,
		.max_metrics = (unsigned int)sup->cfg.imdb.max_metrics_num,
		.max_bytes = (uint64_t)sup->cfg.imdb.max_memory_mb << 20,
		.record_timeout_ms = (uint64_t)sup->cfg.imdb.record_timeout * 1000u,
	};
	static const char *const ours[] = {"machine_id", "hostname", NULL};
	struct gg_http_opts o;
	struct gg_buf extra;

	gg_buf__init(&extra, 0);
	gg_buf__puts(&extra, "machine_id=\"");
	gg_buf__put_prom_label(&extra, sup->machine_id, strlen(sup->machine_id));
	gg_buf__puts(&extra, "\",hostname=\"");
	gg_buf__put_prom_label(&extra, sup->hostname, strlen(sup->hostname));
	gg_buf__putc(&extra, '"');
	exp->db = extra.oom ? NULL : imdb__new(&lim, extra.data, ours);
	gg_buf__fini(&extra);
	exp->fams = prom_families__new();
	if (!exp->db || !exp->fams) {
		gg_error("imdb: out of memory");
		return -ENOMEM;
	}
	gg_http_opts_from_conf(w, "web_server", &o);
	o.max_body = 4096;
	o.handler = on_http;
	o.ctx = sup;
	exp->http = gg_http_server__new(sup->loop, &o);
	if (!exp->http) {
		int err = -errno;

		gg_error("web_server: cannot serve on %s port %d: %s", w->bind_addr, w->port, strerror(errno));
		return err ? err : -EIO;
	}
	gg_info("web_server: metrics on http%s://%s:%d/metrics", w->ssl_auth ? "s" : "", w->bind_addr, w->port);
	return 0;
}

static int init_kafka(struct gg_sup *sup, struct gg_export *exp)
{
	const struct gg_config *c = &sup->cfg;
	const struct gg_channel_conf *ch[GG_STREAM__COUNT] = {&c->metric, &c->event, &c->meta};
	struct gg_kafka_opts o = {
		.brokers = c->kafka.kafka_broker,
		.batch_num_messages = c->kafka.batch_num_messages,
		.compression_codec = c->kafka.compression_codec,
		.queue_buffering_max_messages = c->kafka.queue_buffering_max_messages,
		.queue_buffering_max_kbytes = c->kafka.queue_buffering_max_kbytes,
		.queue_buffering_max_ms = c->kafka.queue_buffering_max_ms,
		.message_timeout_ms = c->kafka.message_timeout_ms,
		.security_protocol = c->kafka.security_protocol,
		.ssl_ca_location = c->kafka.ssl_ca_location,
		.ssl_certificate_location = c->kafka.ssl_certificate_location,
		.ssl_key_location = c->kafka.ssl_key_location,
		.ssl_key_password = c->kafka.ssl_key_password,
		.sasl_mechanisms = c->kafka.sasl_mechanisms,
		.sasl_username = c->kafka.sasl_username,
		.sasl_password = c->kafka.sasl_password,
		.properties = c->kafka.properties,
		.log = on_kafka_log,
		.log_ctx = exp,
	};
	char err[512];

	exp->kafka = gg_kafka__new(sup->loop, &o, err, sizeof(err));
	if (!exp->kafka) {
		gg_error("%s", err);
		return -EINVAL;
	}
	for (int s = 0; s < GG_STREAM__COUNT; s++) {
		if (exp->sink[s] != GG_SINK_KAFKA)
			continue;
		exp->topic[s] = gg_kafka__topic(exp->kafka, ch[s]->kafka_topic, err, sizeof(err));
		if (exp->topic[s] < 0) {
			gg_error("%s.kafka_topic: %s", stream_names[s], err);
			return exp->topic[s];
		}
	}
	gg_info("kafka: producing to %s", c->kafka.kafka_broker);
	return 0;
}

static void event_ident(void *ctx, uint32_t tgid, struct gg_buf *out)
{
	gg_ident_export__json_members(ctx, tgid, gg_now_ms(), out);
}

static void on_cgroup_events(uv_poll_t *h, int status, int events)
{
	struct gg_export *exp = h->data;

	(void)status;
	(void)events;
	(void)gg_identity__process_events(gg_ident_export__identity(exp->ident));
}

static int init_identity(struct gg_sup *sup, struct gg_export *exp)
{
	const struct gg_config *c = &sup->cfg;
	struct gg_identity_opts o = {
		.proc_root = c->identity.proc_root,
		.containerd_dir = c->identity.containerd_dir,
		.crio_dir = c->identity.crio_dir,
		.storage_dir = c->identity.storage_dir,
		.docker_dir = c->identity.docker_dir,
		.containerd_root = c->identity.containerd_root,
		.max_procs = (unsigned int)c->identity.max_procs,
		.max_cgroups = (unsigned int)c->identity.max_containers,
		.proc_ttl_ms = (uint64_t)c->identity.proc_refresh_ms,
		.cgroup_ttl_ms = (uint64_t)c->identity.names_refresh_s * 1000u,
		.watch = c->identity.watch_cgroups,
		.max_watches = (unsigned int)c->identity.max_watches,
	};
	struct gg_identity *id;
	int fd;

	if (!c->identity.enabled)
		return 0;
	id = gg_identity__new(&o);
	exp->ident = id ? gg_ident_export__new(id) : NULL;
	if (!exp->ident) {
		gg_error("identity: out of memory");
		return -ENOMEM;
	}
	fd = gg_identity__watch_fd(id);
	if (c->identity.watch_cgroups && fd < 0)
		gg_warn("identity: cannot watch the cgroup hierarchies (inotify): a process's container is "
			"found within identity.proc_refresh_ms only");
	if (fd >= 0 && uv_poll_init(sup->loop, &exp->ident_poll, fd) == 0) {
		exp->ident_poll.data = exp;
		exp->ident_poll_open = 1;
		uv_poll_start(&exp->ident_poll, UV_READABLE, on_cgroup_events);
	}
	return 0;
}

int gg_export__init(struct gg_sup *sup)
{
	const struct gg_config *c = &sup->cfg;
	const enum gg_out_channel chans[GG_STREAM__COUNT] = {c->metric.out, c->event.out, c->meta.out};
	const char *dirs[GG_STREAM__COUNT] = {c->logs.metric_dir, c->logs.event_dir, c->logs.meta_dir};
	const int sizes[GG_STREAM__COUNT] = {c->logs.metric_total_size, c->logs.event_total_size,
					     c->logs.meta_total_size};
	struct gg_export *exp = calloc(1, sizeof(*exp));
	int err, kafka = 0;

	if (!exp)
		return -ENOMEM;
	sup->exp = exp;
	exp->sup = sup;
	gg_buf__init(&exp->msg, 0);
	for (int s = 0; s < GG_STREAM__COUNT; s++) {
		exp->sink[s] = sink_of((enum gg_stream)s, chans[s]);
		exp->metric_nested |= s == GG_STREAM_METRIC && chans[s] == GG_OUT_JSON;
		exp->topic[s] = -1;
		kafka |= exp->sink[s] == GG_SINK_KAFKA;
		if (exp->sink[s] == GG_SINK_LOGS) {
			err = logs_open(&exp->logs[s], dirs[s], log_names[s], sizes[s]);
			if (err)
				return err;
		}
	}
	if (exp->sink[GG_STREAM_METRIC] == GG_SINK_IMDB) {
		err = init_web_server(sup, exp);
		if (err)
			return err;
	}
	if (kafka) {
		err = init_kafka(sup, exp);
		if (err)
			return err;
	}
	err = init_identity(sup, exp);
	if (err)
		return err;
	if (exp->sink[GG_STREAM_EVENT] != GG_SINK_OFF) {
		struct gg_events_opts eo = {
			.timeout_s = (unsigned int)c->event_timeout,
			.zh_cn = !strcmp(c->event_desc_language, "zh_CN"),
			.machine_id = sup->machine_id,
			.hostname = sup->hostname,
			.ident = exp->ident ? event_ident : NULL,
			.ident_ctx = exp->ident,
		};

		exp->events = gg_events__new(&eo);
		exp->recent = gg_recent__new();
		if (!exp->events || !exp->recent)
			return -ENOMEM;
	}
	uv_timer_init(sup->loop, &exp->timer);
	exp->timer.data = exp;
	exp->timer_open = 1;
	uv_timer_start(&exp->timer, on_timer, 1000, 1000);
	if (exp->sink[GG_STREAM_META] != GG_SINK_OFF) {
		meta_report(exp, 0);
		exp->meta_last_ms = gg_now_ms();
		exp->st.meta_reports++;
	}
	gg_info("export: metric -> %s, event -> %s, meta -> %s", gg_out_channel__str(c->metric.out),
		exp->sink[GG_STREAM_EVENT] ? gg_out_channel__str(c->event.out) : "off",
		exp->sink[GG_STREAM_META] ? gg_out_channel__str(c->meta.out) : "off");
	return 0;
}

void gg_export__flush(struct gg_sup *sup)
{
	struct gg_export *exp = sup->exp;

	if (!exp)
		return;
	for (int s = 0; s < GG_STREAM__COUNT; s++)
		logs_flush(&exp->logs[s]);
}

void gg_export__close(struct gg_sup *sup)
{
	struct gg_export *exp = sup->exp;

	if (!exp)
		return;
	gg_uv_close_open((uv_handle_t *)&exp->timer, exp->timer_open);
	gg_uv_close_open((uv_handle_t *)&exp->ident_poll, exp->ident_poll_open);
	gg_http_server__close(exp->http);
	exp->http = NULL;
	gg_kafka__close(exp->kafka);
}

void gg_export__free(struct gg_sup *sup)
{
	struct gg_export *exp = sup->exp;

	if (!exp)
		return;
	gg_export__flush(sup);
	for (int s = 0; s < GG_STREAM__COUNT; s++) {
		if (exp->logs[s].open)
			rot_file__close(&exp->logs[s].file);
		gg_buf__fini(&exp->logs[s].buf);
	}
	if (exp->kafka) {
		uint64_t left = gg_kafka__flush(exp->kafka, KAFKA_FLUSH_MS);

		if (left)
			gg_warn("kafka: %llu messages not delivered within %d ms of stopping; dropped",
				(unsigned long long)left, KAFKA_FLUSH_MS);
		gg_kafka__free(exp->kafka, 0);
		exp->kafka = NULL;
	}
	imdb__free(exp->db);
	prom_families__free(exp->fams);
	gg_events__free(exp->events);
	gg_recent__free(exp->recent);
	gg_ident_export__free(exp->ident);
	gg_buf__fini(&exp->msg);
	free(exp);
	sup->exp = NULL;
}

/* ---- status.json ----------------------------------------------------------------------------------- */

/* A reserved table's counters as object name in obj, what was sent under sent_key. */
static void rendered_stats__status(cJSON *obj, const char *name, const char *sent_key,
				   const struct gg_rendered_stats *st)
{
	cJSON *o = cJSON_AddObjectToObject(obj, name);

	gg_json_add_u64(o, sent_key, st->sent);
	gg_json_add_u64(o, "invalid", st->invalid);
	gg_json_add_u64(o, "channel_off", st->off);
}

void gg_export__status(struct gg_sup *sup, struct cJSON *obj)
{
	static const char *const sink_names[] = {"off", "web_server", "logs", "kafka"};
	struct gg_export *exp = sup->exp;
	cJSON *o, *a;

	if (!exp)
		return;
	for (int s = 0; s < GG_STREAM__COUNT; s++) {
		o = cJSON_AddObjectToObject(obj, stream_names[s]);
		cJSON_AddStringToObject(o, "channel", sink_names[exp->sink[s]]);
		gg_json_add_u64(o, "records", exp->st.records[s]);
		gg_json_add_u64(o, "kafka_refused", exp->st.kafka_refused[s]);
		if (exp->logs[s].open) {
			gg_json_add_u64(o, "log_lines", exp->logs[s].lines);
			gg_json_add_u64(o, "log_lost_lines", exp->logs[s].lost_lines);
			gg_json_add_u64(o, "log_write_errors", exp->logs[s].write_errors);
		}
		if (exp->kafka && exp->topic[s] >= 0) {
			const struct gg_kafka_topic_stats *ks = gg_kafka__stats(exp->kafka, exp->topic[s]);

			cJSON_AddStringToObject(o, "kafka_topic", gg_kafka__topic_name(exp->kafka, exp->topic[s]));
			gg_json_add_u64(o, "kafka_produced", ks->produced);
			gg_json_add_u64(o, "kafka_delivered", ks->delivered);
			gg_json_add_u64(o, "kafka_failed", ks->failed);
			gg_json_add_u64(o, "kafka_dropped_queue_full", ks->dropped_queue_full);
			gg_json_add_u64(o, "kafka_dropped_other", ks->dropped_other);
		}
	}
	gg_json_add_u64(obj, "render_errors", exp->st.render_errors);
	if (exp->kafka) {
		gg_json_add_u64(obj, "kafka_queue", gg_kafka__queue_len(exp->kafka));
		gg_json_add_u64(obj, "kafka_errors", gg_kafka__errors(exp->kafka));
	}
	if (exp->events) {
		const struct gg_events_stats *es = gg_events__stats(exp->events);

		o = cJSON_AddObjectToObject(obj, "events");
		gg_json_add_u64(o, "received", es->received);
		gg_json_add_u64(o, "reported", es->reported);
		gg_json_add_u64(o, "deduplicated", es->deduplicated);
		gg_json_add_u64(o, "invalid", es->invalid);
		gg_json_add_u64(o, "dedup_full", es->dedup_full);
	}
	gg_json_add_u64(obj, "meta_reports", exp->st.meta_reports);
	rendered_stats__status(obj, "traces", "spans", &exp->st.spans);
	rendered_stats__status(obj, "logs", "records", &exp->st.logs);
	if (exp->ident) {
		const struct gg_identity_stats *is = gg_identity__stats(gg_ident_export__identity(exp->ident));

		o = cJSON_AddObjectToObject(obj, "identity");
		gg_json_add_u64(o, "lookups", is->lookups);
		gg_json_add_u64(o, "proc_reads", is->proc_reads);
		gg_json_add_u64(o, "state_reads", is->state_reads);
		gg_json_add_u64(o, "state_errors", is->state_errors);
		gg_json_add_u64(o, "evictions", is->evictions);
		gg_json_add_u64(o, "procs", is->procs);
		gg_json_add_u64(o, "containers", is->cgroups);
		gg_json_add_u64(o, "watches", is->watches);
		gg_json_add_u64(o, "cgroup_events", is->cgroup_events);
		gg_json_add_u64(o, "watch_overflows", is->watch_overflows);
		gg_json_add_u64(o, "pod_label_reads", is->pod_label_reads);
	}
	if (exp->db) {
		o = cJSON_AddObjectToObject(obj, "imdb");
		gg_json_add_u64(o, "rows", imdb__rows(exp->db));
		gg_json_add_u64(o, "bytes", imdb__bytes(exp->db));
		gg_json_add_u64(o, "stored", exp->st.imdb_stored);
		gg_json_add_u64(o, "dropped", exp->st.imdb_dropped);
		gg_json_add_u64(o, "expired", exp->st.imdb_expired);
		gg_json_add_u64(o, "scrapes", exp->st.scrapes);
		gg_json_add_u64(o, "last_scrape_us", exp->st.last_scrape_ns / 1000u);
		a = cJSON_AddArrayToObject(o, "tables");
		for (unsigned int i = 0; i < imdb__ntables(exp->db); i++) {
			const struct imdb_table *t = imdb__table(exp->db, i);
			cJSON *e = cJSON_CreateObject(), *d;

			cJSON_AddStringToObject(e, "table", t->meta->name);
			gg_json_add_u64(e, "rows", t->age.n);
			gg_json_add_u64(e, "expired", t->expired);
			d = cJSON_AddObjectToObject(e, "dropped");
			for (int r = 0; r < IMDB_DROP__COUNT; r++)
				gg_json_add_u64(d, imdb_drop__str((enum imdb_drop)r), t->dropped[r]);
			cJSON_AddItemToArray(a, e);
		}
	}
}
