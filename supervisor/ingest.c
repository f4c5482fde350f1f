/* ingest.c - the data path: IPC batches (and extend probes' stdout lines) -> sequence accounting ->
 * schema validation -> counted rejections -> export (export.c: imdb, kafka, logs, events). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "supervisor.h"
#include "uvutil.h"

#define SAMPLE_INTERVAL_MS 1000u

void gg_ingest__flush(struct gg_sup *sup)
{
	gg_export__flush(sup);
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
	p->sup->ingest_ops.logf(p, "rejected record (%s%s%d; %llu similar messages suppressed): %s%s",
				meta_reject__str(why), field >= 0 ? ", field " : "", field >= 0 ? field + 1 : 0,
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
	gg_export__record(sup, p, &rec);
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
	p = sup->ingest_ops.find(sup, hdr.probe);
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
	/* A probe's first batch means it is connected: its configuration goes out now, not at the tick. */
	sup->ingest_ops.connected(p, p->last_batch_ms);
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

#define DRAIN_BUDGET_NS (4u * 1000u * 1000u) /* per wake-up: then the loop serves REST, scrapes, timers */

/* Drain what is waiting, within a time budget: NNG's receive fd stays readable while messages are
 * queued, so the loop comes back here after the other handles had their turn. Under a flood the queue
 * (IPC_SUB_DEFAULT_RECVBUF) fills and the rest is dropped by NNG and counted as IPC loss: the control
 * plane stays responsive and memory stays bounded. */
static void on_sub_readable(uv_poll_t *h, int status, int events)
{
	struct gg_sup *sup = h->data;
	uint64_t t0 = uv_hrtime();

	(void)events;
	if (status < 0)
		return;
	for (unsigned int i = 0;; i++) {
		void *msg;
		size_t len;
		int r;

		if ((i & 7) == 7 && uv_hrtime() - t0 > DRAIN_BUDGET_NS)
			break;
		r = ipc_sub__recv(sup->sub, &msg, &len);
		if (r <= 0)
			break;
		gg_ingest__message(sup, msg, len);
		ipc_msg__free(msg);
	}
}

/* Only root may connect: the mode must not depend on the umask (who connects is checked too). */
static int chmod_sockets(const struct gg_sup *sup)
{
	if (chmod(sup->data_url + strlen("ipc://"), 0600) || chmod(sup->ctrl_url + strlen("ipc://"), 0600))
		return -errno;
	return 0;
}

/* Logs "cannot <what> <where>: <reason>" and gives err (a negative errno) back. */
static int init_failed(int err, const char *what, const char *where)
{
	gg_error("cannot %s %s: %s", what, where, strerror(-err));
	return err;
}

int gg_ingest__init(struct gg_sup *sup)
{
	int err;

	sup->sub = ipc_sub__new(sup->data_url);
	if (!sup->sub)
		return init_failed(-errno, "listen on", sup->data_url);
	err = ipc_sub__set_recvbuf(sup->sub, sup->cfg.global.ipc_queue);
	if (err) {
		gg_error("cannot set the IPC queue to %d batches: %s", sup->cfg.global.ipc_queue, strerror(-err));
		return err;
	}
	/* Only processes we spawned (and their process groups) running as us may publish records. */
	err = ipc_sub__restrict_peers(sup->sub, geteuid(), getpid());
	if (err)
		return init_failed(err, "restrict publishers on", sup->data_url);
	sup->ctrl = ipc_ctrl_pub__new(sup->ctrl_url);
	if (!sup->ctrl)
		return init_failed(-errno, "listen on", sup->ctrl_url);
	err = chmod_sockets(sup);
	if (err)
		return init_failed(err, "chmod the IPC sockets in", sup->cfg.global.run_dir);
	{
		struct stat st;

		if (stat(sup->cfg.global.run_dir, &st) == 0) {
			sup->run_dev = st.st_dev;
			sup->run_ino = st.st_ino;
		}
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
	gg_uv_close_open((uv_handle_t *)&sup->sub_poll, sup->sub_poll.data != NULL);
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
	gg_export__flush(sup);
	ipc_sub__free(sup->sub);
	sup->sub = NULL;
	ipc_ctrl_pub__free(sup->ctrl);
	sup->ctrl = NULL;
}

/* ---- run_dir watch --------------------------------------------------------------------------------- */

static int socket_present(const char *url)
{
	struct stat st;

	return lstat(url + strlen("ipc://"), &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Make run_dir again (private) and listen again on what is missing; 0 or negative errno with why. */
static int run_dir_repair(struct gg_sup *sup, int dir_gone, char *why, size_t whylen)
{
	const char *dir = sup->cfg.global.run_dir;
	struct stat st;
	int err;

	if (gg_mkdir_p(dir, 0750)) {
		err = -errno;
		snprintf(why, whylen, "cannot create it: %s", strerror(errno));
		return err;
	}
	err = gg_private_dir(dir, why, whylen);
	if (err)
		return err;
	/* A new directory holds no sockets; in the old one only the missing socket is listened again
	 * (doing so drops that socket's connections: the probes reconnect by themselves). */
	if (dir_gone || !socket_present(sup->data_url)) {
		err = ipc_sub__relisten(sup->sub, sup->data_url);
		if (err) {
			snprintf(why, whylen, "cannot listen on data.ipc: %s", strerror(-err));
			return err;
		}
	}
	if (dir_gone || !socket_present(sup->ctrl_url)) {
		err = ipc_ctrl_pub__relisten(sup->ctrl, sup->ctrl_url);
		if (err) {
			snprintf(why, whylen, "cannot listen on ctrl.ipc: %s", strerror(-err));
			return err;
		}
	}
	err = chmod_sockets(sup);
	if (err) {
		snprintf(why, whylen, "cannot chmod the IPC sockets: %s", strerror(-err));
		return err;
	}
	if (lstat(dir, &st) == 0) {
		sup->run_dev = st.st_dev;
		sup->run_ino = st.st_ino;
	}
	if (sup->ingest_ops.write_children)
		sup->ingest_ops.write_children(sup);
	return 0;
}

void gg_ingest__watch_run_dir(struct gg_sup *sup)
{
	const char *dir = sup->cfg.global.run_dir;
	struct stat st;
	char why[256];
	int dir_gone, err;

	if (!sup->sub || !sup->ctrl)
		return;
	/* Gone, or another directory (or a symlink) put in its place: nothing of ours is in it. */
	dir_gone =
		lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_dev != sup->run_dev || st.st_ino != sup->run_ino;
	if (!dir_gone && socket_present(sup->data_url) && socket_present(sup->ctrl_url)) {
		sup->run_dir_lost = 0;
		return;
	}
	err = run_dir_repair(sup, dir_gone, why, sizeof(why));
	if (err) {
		sup->st.run_dir_failures++;
		if (!sup->run_dir_lost) /* once per episode: it is retried every second */
			gg_error("global.run_dir %s %s: probes cannot deliver until it is fixed (%s)", dir,
				 dir_gone ? "was deleted or replaced" : "lost an IPC socket", why);
		sup->run_dir_lost = 1;
		return;
	}
	sup->st.run_dir_repairs++;
	sup->run_dir_lost = 0;
	gg_warn("global.run_dir %s %s: made again; probes reconnect", dir,
		dir_gone ? "was deleted or replaced" : "lost an IPC socket");
}
