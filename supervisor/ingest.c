/* ingest.c - the data path: IPC batches (and extend probes' stdout lines) -> sequence accounting ->
 * schema validation -> counted rejections -> the metric output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor.h"

#define MBUF_SIZE (256u * 1024u)
#define SAMPLE_INTERVAL_MS 1000u

/* ---- metric output (logs channel): one JSON object per record ------------------------------------ */

static void mbuf_flush(struct gg_sup *sup)
{
	if (!sup->mbuf_len)
		return;
	if (sup->metric_out_open && rot_file__write(&sup->metric_out, sup->mbuf, sup->mbuf_len))
		sup->st.metric_write_errors++;
	sup->mbuf_len = 0;
}

static int mbuf_reserve(struct gg_sup *sup, size_t n)
{
	if (sup->mbuf_len + n > MBUF_SIZE)
		mbuf_flush(sup);
	return n <= MBUF_SIZE ? 0 : -E2BIG;
}

static void mbuf_put(struct gg_sup *sup, const char *s, size_t n)
{
	memcpy(sup->mbuf + sup->mbuf_len, s, n);
	sup->mbuf_len += n;
}

static void mbuf_puts(struct gg_sup *sup, const char *s)
{
	mbuf_put(sup, s, strlen(s));
}

/* JSON string body; the input is validated UTF-8 without control characters (keys, labels) or
 * validated numbers/encodings, so only '"' and '\\' need escaping. */
static void mbuf_put_json_str(struct gg_sup *sup, const char *s, size_t n)
{
	sup->mbuf[sup->mbuf_len++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"' || s[i] == '\\')
			sup->mbuf[sup->mbuf_len++] = '\\';
		sup->mbuf[sup->mbuf_len++] = s[i];
	}
	sup->mbuf[sup->mbuf_len++] = '"';
}

/* A validated number is valid JSON unless it has a leading '+', leading zeros, or a bare '.'. */
static int json_number_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i >= n || s[i] < '0' || s[i] > '9')
		return 0;
	if (s[i] == '0' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')
		return 0;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i < n && s[i] == '.') {
		i++;
		if (i >= n || s[i] < '0' || s[i] > '9')
			return 0;
	}
	return 1;
}

static void output_record(struct gg_sup *sup, const struct meta_record *rec, uint64_t now_wall)
{
	const struct meta_table *t = rec->table;
	size_t need = 256 + strlen(sup->machine_id) + strlen(sup->hostname);
	char num[64];
	int n;

	if (sup->cfg.metric.out == GG_OUT_OFF || !sup->metric_out_open)
		return;
	for (unsigned int i = 0; i < rec->nvalues; i++)
		need += 2 * (size_t)rec->lens[i] + strlen(t->fields[i].name) + 8;
	if (mbuf_reserve(sup, need))
		return;
	n = snprintf(num, sizeof(num), "{\"timestamp\":%llu,\"machine_id\":", (unsigned long long)now_wall);
	mbuf_put(sup, num, (size_t)n);
	mbuf_put_json_str(sup, sup->machine_id, strlen(sup->machine_id));
	mbuf_puts(sup, ",\"hostname\":");
	mbuf_put_json_str(sup, sup->hostname, strlen(sup->hostname));
	mbuf_puts(sup, ",\"entity_name\":");
	mbuf_put_json_str(sup, t->entity, strlen(t->entity));
	mbuf_puts(sup, ",\"table_name\":");
	mbuf_put_json_str(sup, t->name, strlen(t->name));
	for (unsigned int i = 0; i < rec->nvalues; i++) {
		const struct meta_field *f = &t->fields[i];
		const char *v = rec->values[i];
		size_t vl = rec->lens[i];

		mbuf_put(sup, ",", 1);
		mbuf_put_json_str(sup, f->name, strlen(f->name));
		mbuf_put(sup, ":", 1);
		if (f->type == META_GAUGE || f->type == META_COUNTER) {
			if (json_number_ok(v, vl)) {
				mbuf_put(sup, v, vl);
			} else {
				double d = 0;

				(void)meta_parse_number(v, vl, &d);
				n = snprintf(num, sizeof(num), "%.17g", d);
				mbuf_put(sup, num, (size_t)n);
			}
		} else {
			mbuf_put_json_str(sup, v, vl);
		}
	}
	mbuf_put(sup, "}\n", 2);
}

void gg_ingest__flush(struct gg_sup *sup)
{
	mbuf_flush(sup);
}

/* ---- validation and accounting ------------------------------------------------------------------- */

static void count_reject(struct gg_probe *p, const char *line, size_t len, enum meta_reject why)
{
	struct gg_probe_stats *st = &p->st;
	char table[META_NAME_MAX] = "";
	const char *end;
	size_t tl;

	st->rejected[why]++;
	/* The table name as sent, when the framing allows reading one. */
	if (len > 1 && line[0] == '|') {
		end = memchr(line + 1, '|', len - 1);
		tl = end ? (size_t)(end - line - 1) : 0;
		if (tl && tl < sizeof(table) && meta_utf8_valid(line + 1, tl)) {
			memcpy(table, line + 1, tl);
			table[tl] = 0;
		}
	}
	for (unsigned int i = 0; i < st->nrej; i++) {
		if (st->rej[i].reason == why && !strcmp(st->rej[i].table, table)) {
			st->rej[i].count++;
			return;
		}
	}
	if (st->nrej < GG_REJ_TABLES_MAX) {
		struct gg_rej_entry *e = &st->rej[st->nrej++];

		memcpy(e->table, table, sizeof(table));
		e->reason = why;
		e->count = 1;
		return;
	}
	st->rej_other++;
}

static void sample_reject(struct gg_probe *p, const char *line, size_t len, enum meta_reject why, int field)
{
	uint64_t now = gg_now_ms();
	char shown[201];
	size_t n = len < 200 ? len : 200;

	if (p->sample_last_ms && now - p->sample_last_ms < SAMPLE_INTERVAL_MS) {
		p->samples_suppressed++;
		return;
	}
	for (size_t i = 0; i < n; i++)
		shown[i] = (line[i] >= 0x20 && line[i] < 0x7f) ? line[i] : '?';
	shown[n] = 0;
	gg_probe__logf(p, "rejected record (%s%s%d; %llu similar messages suppressed): %s%s", meta_reject__str(why),
		       field >= 0 ? ", field " : "", field >= 0 ? field + 1 : 0,
		       (unsigned long long)p->samples_suppressed, shown, len > n ? "..." : "");
	p->sample_last_ms = now;
	p->samples_suppressed = 0;
}

void gg_ingest__record(struct gg_sup *sup, struct gg_probe *p, const char *line, size_t len)
{
	struct meta_record rec;
	enum meta_reject why;
	int field = -1;

	p->st.records++;
	sup->st.records++;
	why = meta_record__parse(sup->reg, line, len, &rec, &field);
	if (why != META_OK) {
		count_reject(p, line, len, why);
		sample_reject(p, line, len, why, field);
		return;
	}
	p->st.accepted++;
	sup->st.accepted++;
	output_record(sup, &rec, gg_wall_ms());
}

void gg_ingest__message(struct gg_sup *sup, const void *msg, size_t len)
{
	struct ipc_batch_hdr hdr;
	const char *payload, *c, *end;
	struct gg_probe *p;
	int err;

	sup->st.batches++;
	err = ipc_batch__decode(msg, len, &hdr, &payload);
	if (err) {
		sup->st.bad_batches++;
		return;
	}
	p = gg_probes__find(sup, hdr.probe);
	if (!p || !p->conf->native) {
		sup->st.unknown_probe_batches++;
		return;
	}
	ipc_seq_tracker__update(&p->seq, &hdr);
	p->last_batch_ms = gg_now_ms();
	if (!p->st.batches)
		p->first_batch_ms = p->last_batch_ms;
	p->st.batches++;
	if (hdr.pid == (uint32_t)p->pid || !p->pid)
		p->cfg_applied = hdr.config_version;
	c = payload;
	end = payload + hdr.payload_len;
	while (c < end) {
		const char *nl = memchr(c, '\n', (size_t)(end - c));

		if (!nl)
			break; /* decode guarantees the payload ends with '\n' */
		gg_ingest__record(sup, p, c, (size_t)(nl - c));
		c = nl + 1;
	}
}

/* Drain everything waiting: NNG's receive fd signals "at least one", so read until empty. */
static void on_sub_readable(uv_poll_t *h, int status, int events)
{
	struct gg_sup *sup = h->data;

	(void)events;
	if (status < 0)
		return;
	for (int i = 0; i < 4096; i++) {
		void *msg;
		size_t len;
		int r = ipc_sub__recv(sup->sub, &msg, &len);

		if (r <= 0)
			break;
		gg_ingest__message(sup, msg, len);
		ipc_msg__free(msg);
	}
}

int gg_ingest__init(struct gg_sup *sup)
{
	char path[4200];
	int err;

	sup->mbuf = malloc(MBUF_SIZE);
	if (!sup->mbuf)
		return -ENOMEM;
	if (sup->cfg.metric.out != GG_OUT_OFF) {
		if (gg_mkdir_p(sup->cfg.logs.metric_dir, 0750))
			gg_warn("cannot create %s: %s", sup->cfg.logs.metric_dir, strerror(errno));
		snprintf(path, sizeof(path), "%s/metrics.log", sup->cfg.logs.metric_dir);
		/* two files (current + .1) share metric_total_size */
		err = rot_file__open(&sup->metric_out, path, ((uint64_t)sup->cfg.logs.metric_total_size << 20) / 2, 1);
		if (err) {
			gg_error("cannot open metric output %s: %s", path, strerror(-err));
			return err;
		}
		sup->metric_out_open = 1;
	}

	sup->sub = ipc_sub__new(sup->data_url);
	if (!sup->sub) {
		err = -errno;
		gg_error("cannot listen on %s: %s", sup->data_url, strerror(errno));
		return err;
	}
	sup->ctrl = ipc_ctrl_pub__new(sup->ctrl_url);
	if (!sup->ctrl) {
		err = -errno;
		gg_error("cannot listen on %s: %s", sup->ctrl_url, strerror(errno));
		return err;
	}
	err = uv_poll_init(sup->loop, &sup->sub_poll, ipc_sub__fd(sup->sub));
	if (err) {
		gg_error("uv_poll_init on the IPC socket: %s", uv_strerror(err));
		return -EIO;
	}
	sup->sub_poll.data = sup;
	uv_poll_start(&sup->sub_poll, UV_READABLE, on_sub_readable);
	return 0;
}

void gg_ingest__close(struct gg_sup *sup)
{
	if (sup->sub_poll.data && !uv_is_closing((uv_handle_t *)&sup->sub_poll))
		uv_close((uv_handle_t *)&sup->sub_poll, NULL);
}

void gg_ingest__free(struct gg_sup *sup)
{
	/* Records still queued in the socket are taken before it closes. */
	if (sup->sub) {
		void *msg;
		size_t len;

		while (ipc_sub__recv(sup->sub, &msg, &len) > 0) {
			gg_ingest__message(sup, msg, len);
			ipc_msg__free(msg);
		}
	}
	mbuf_flush(sup);
	ipc_sub__free(sup->sub);
	sup->sub = NULL;
	ipc_ctrl_pub__free(sup->ctrl);
	sup->ctrl = NULL;
	if (sup->metric_out_open)
		rot_file__close(&sup->metric_out);
	sup->metric_out_open = 0;
	free(sup->mbuf);
	sup->mbuf = NULL;
}
