/* selfmetrics.c - the agent's own metrics, rendered at every scrape from the counters the supervisor
 * keeps anyway (nothing is counted twice). */
#include "selfmetrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "export_state.h"
#include "http.h"
#include "supervisor.h"

#define BPF_PROGS_MAX 256u /* per probe, for de-duplicating program ids */

static const char *const reserved[] = {
	"gala_gopher_build_info",
	"gala_gopher_probe_up",
	"gala_gopher_probe_starts_total",
	"gala_gopher_probe_restarts_total",
	"gala_gopher_probe_hangs_total",
	"gala_gopher_probe_oom_kills_total",
	"gala_gopher_probe_batches_received_total",
	"gala_gopher_probe_records_received_total",
	"gala_gopher_probe_records_accepted_total",
	"gala_gopher_probe_records_rejected_total",
	"gala_gopher_ipc_lost_batches_total",
	"gala_gopher_ipc_lost_records_total",
	"gala_gopher_probe_config_version",
	"gala_gopher_probe_config_version_applied",
	"gala_gopher_probe_bpf_programs",
	"gala_gopher_probe_bpf_run_count_total",
	"gala_gopher_probe_bpf_run_time_seconds_total",
	"gala_gopher_bpf_stats_enabled",
	"gala_gopher_sup_start_time_seconds",
	"gala_gopher_sup_cpu_seconds_total",
	"gala_gopher_sup_resident_memory_bytes",
	"gala_gopher_sup_scrapes_total",
	"gala_gopher_sup_scrape_duration_seconds",
	"gala_gopher_sup_scrape_series",
	"gala_gopher_web_server_requests_total",
	"gala_gopher_web_server_refused_total",
	"gala_gopher_sup_records_received_total",
	"gala_gopher_sup_bad_batches_total",
	"gala_gopher_sup_ipc_refused_peers_total",
	"gala_gopher_sup_run_dir_repairs_total",
	"gala_gopher_sup_unknown_probe_batches_total",
	"gala_gopher_export_records_total",
	"gala_gopher_export_render_errors_total",
	"gala_gopher_imdb_rows",
	"gala_gopher_imdb_series",
	"gala_gopher_imdb_memory_bytes",
	"gala_gopher_imdb_memory_limit_bytes",
	"gala_gopher_imdb_dropped_records_total",
	"gala_gopher_imdb_expired_records_total",
	"gala_gopher_imdb_family_conflicts",
	"gala_gopher_kafka_queue_messages",
	"gala_gopher_kafka_messages_produced_total",
	"gala_gopher_kafka_messages_delivered_total",
	"gala_gopher_kafka_delivery_errors_total",
	"gala_gopher_kafka_messages_dropped_total",
	"gala_gopher_kafka_client_errors_total",
	"gala_gopher_logs_lines_total",
	"gala_gopher_logs_write_errors_total",
	"gala_gopher_logs_lost_lines_total",
	"gala_gopher_events_total",
	"gala_gopher_metadata_messages_total",
	NULL,
};

int gg_selfmetrics__reserved(const char *family)
{
	if (strncmp(family, "gala_gopher_", 12))
		return 0;
	for (const char *const *p = reserved; *p; p++) {
		if (!strcmp(*p, family))
			return 1;
	}
	return 0;
}

static const char *const stream_names[GG_STREAM__COUNT] = {"metric", "event", "meta"};

/* l="v" */
static void label(struct gg_buf *b, const char *l, const char *v)
{
	gg_buf__puts(b, l);
	gg_buf__put(b, "=\"", 2);
	gg_buf__put_prom_label(b, v, strlen(v));
	gg_buf__putc(b, '"');
}

/* name{l1="v1"[,l2="v2"]} and the space before the value */
static void sample_head(struct gg_buf *b, const char *name, const char *l1, const char *v1, const char *l2,
			const char *v2)
{
	gg_buf__puts(b, name);
	if (l1) {
		gg_buf__putc(b, '{');
		label(b, l1, v1);
		if (l2) {
			gg_buf__putc(b, ',');
			label(b, l2, v2);
		}
		gg_buf__putc(b, '}');
	}
	gg_buf__putc(b, ' ');
}

/* name{l1="v1"[,l2="v2"]} value */
static void sample(struct gg_buf *b, const char *name, const char *l1, const char *v1, const char *l2, const char *v2,
		   uint64_t v)
{
	sample_head(b, name, l1, v1, l2, v2);
	gg_buf__put_u64(b, v);
	gg_buf__putc(b, '\n');
}

static void sample_d(struct gg_buf *b, const char *name, const char *l1, const char *v1, double v)
{
	sample_head(b, name, l1, v1, NULL, NULL);
	gg_buf__put_double(b, v);
	gg_buf__putc(b, '\n');
}

/* ---- BPF programs of a probe (kernel bpf_stats, visible in /proc/<pid>/fdinfo) ------------------------ */

struct bpf_sum {
	unsigned int nprogs;
	uint64_t run_cnt, run_time_ns;
	uint32_t ids[BPF_PROGS_MAX];
};

static void bpf_fdinfo(int pid, const char *fd, struct bpf_sum *s)
{
	char path[300], buf[1024];
	unsigned long long id = 0, cnt = 0, ns = 0;
	ssize_t n;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		(void)(sscanf(line, "prog_id: %llu", &id) || sscanf(line, "run_time_ns: %llu", &ns) ||
		       sscanf(line, "run_cnt: %llu", &cnt));
	}
	if (!id)
		return;
	for (unsigned int i = 0; i < s->nprogs; i++) {
		if (s->ids[i] == id)
			return; /* the same program through another fd */
	}
	if (s->nprogs < BPF_PROGS_MAX)
		s->ids[s->nprogs++] = (uint32_t)id;
	s->run_cnt += cnt;
	s->run_time_ns += ns;
}

static void bpf_of_pid(int pid, struct bpf_sum *s)
{
	char path[64], link[64];
	struct dirent *de;
	DIR *d;

	memset(s, 0, sizeof(*s));
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char fdpath[330];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		n = readlink(fdpath, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (!strcmp(link, "anon_inode:bpf-prog"))
			bpf_fdinfo(pid, de->d_name, s);
	}
	closedir(d);
}

/* ---- families -------------------------------------------------------------------------------------- */

static uint64_t p_up(const struct gg_probe *p)
{
	return p->state == GG_PS_RUNNING && p->pid > 0 && !p->hung_since_ms;
}
static uint64_t p_hangs(const struct gg_probe *p)
{
	return p->hangs;
}
static uint64_t p_oom(const struct gg_probe *p)
{
	return p->oom_kills;
}
static uint64_t p_starts(const struct gg_probe *p)
{
	return p->starts;
}
static uint64_t p_restarts(const struct gg_probe *p)
{
	return p->restarts;
}
static uint64_t p_batches(const struct gg_probe *p)
{
	return p->st.batches;
}
static uint64_t p_records(const struct gg_probe *p)
{
	return p->st.records;
}
static uint64_t p_accepted(const struct gg_probe *p)
{
	return p->st.accepted;
}
static uint64_t p_lost_batches(const struct gg_probe *p)
{
	return p->seq.lost_batches;
}
static uint64_t p_lost_records(const struct gg_probe *p)
{
	return p->seq.lost_records;
}
static uint64_t p_cfg(const struct gg_probe *p)
{
	return p->cfg_version;
}
static uint64_t p_cfg_applied(const struct gg_probe *p)
{
	return p->cfg_applied;
}

/* One family with a sample per probe. */
static void probe_family(struct gg_buf *b, const struct gg_sup *sup, const char *name, const char *help,
			 const char *type, uint64_t (*get)(const struct gg_probe *))
{
	prom_family_header(b, name, help, type);
	for (unsigned int i = 0; i < sup->nprobes; i++)
		sample(b, name, "probe", sup->probes[i].conf->name, NULL, NULL, get(&sup->probes[i]));
}

static void render_probes(struct gg_buf *b, struct gg_sup *sup)
{
	struct bpf_sum *bpf = calloc(sup->nprobes ? sup->nprobes : 1, sizeof(*bpf));
	char tmp[16];

	probe_family(b, sup, "gala_gopher_probe_up", "1 when the probe process is running and not hung", "gauge", p_up);
	probe_family(b, sup, "gala_gopher_probe_oom_kills_total",
		     "exits of the probe killed by its own memory limit (global.probe_memory_mb)", "counter", p_oom);
	probe_family(b, sup, "gala_gopher_probe_hangs_total",
		     "times the watchdog found the probe silent for global.hung_timeout", "counter", p_hangs);
	probe_family(b, sup, "gala_gopher_probe_starts_total", "probe processes started", "counter", p_starts);
	probe_family(b, sup, "gala_gopher_probe_restarts_total", "restarts after an unexpected exit", "counter",
		     p_restarts);
	probe_family(b, sup, "gala_gopher_probe_batches_received_total", "IPC batches received", "counter", p_batches);
	probe_family(b, sup, "gala_gopher_probe_records_received_total", "records received (IPC or stdout)", "counter",
		     p_records);
	probe_family(b, sup, "gala_gopher_probe_records_accepted_total", "records that passed validation", "counter",
		     p_accepted);
	prom_family_header(b, "gala_gopher_probe_records_rejected_total", "records rejected by validation, by reason",
			   "counter");
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		for (int r = 1; r < META_REJ__COUNT; r++)
			sample(b, "gala_gopher_probe_records_rejected_total", "probe", sup->probes[i].conf->name,
			       "reason", meta_reject__str((enum meta_reject)r), sup->probes[i].st.rejected[r]);
	}
	probe_family(b, sup, "gala_gopher_ipc_lost_batches_total", "IPC batches lost (sequence gaps)", "counter",
		     p_lost_batches);
	probe_family(b, sup, "gala_gopher_ipc_lost_records_total", "records in lost IPC batches", "counter",
		     p_lost_records);
	probe_family(b, sup, "gala_gopher_probe_config_version", "latest configuration version sent to the probe",
		     "gauge", p_cfg);
	probe_family(b, sup, "gala_gopher_probe_config_version_applied",
		     "configuration version the probe reports as applied", "gauge", p_cfg_applied);

	if (bpf) {
		for (unsigned int i = 0; i < sup->nprobes; i++)
			bpf_of_pid(sup->probes[i].state == GG_PS_RUNNING ? sup->probes[i].pid : 0, &bpf[i]);
		prom_family_header(b, "gala_gopher_probe_bpf_programs", "BPF programs loaded by the probe process",
				   "gauge");
		for (unsigned int i = 0; i < sup->nprobes; i++)
			sample(b, "gala_gopher_probe_bpf_programs", "probe", sup->probes[i].conf->name, NULL, NULL,
			       bpf[i].nprogs);
		prom_family_header(b, "gala_gopher_probe_bpf_run_count_total",
				   "runs of the probe's BPF programs (kernel.bpf_stats_enabled=1)", "counter");
		for (unsigned int i = 0; i < sup->nprobes; i++)
			sample(b, "gala_gopher_probe_bpf_run_count_total", "probe", sup->probes[i].conf->name, NULL,
			       NULL, bpf[i].run_cnt);
		prom_family_header(b, "gala_gopher_probe_bpf_run_time_seconds_total",
				   "time spent in the probe's BPF programs (kernel.bpf_stats_enabled=1)", "counter");
		for (unsigned int i = 0; i < sup->nprobes; i++)
			sample_d(b, "gala_gopher_probe_bpf_run_time_seconds_total", "probe", sup->probes[i].conf->name,
				 (double)bpf[i].run_time_ns / 1e9);
		free(bpf);
	}
	if (gg_read_small("/proc/sys/kernel/bpf_stats_enabled", tmp, sizeof(tmp)) >= 0) {
		prom_family_header(b, "gala_gopher_bpf_stats_enabled", "kernel.bpf_stats_enabled", "gauge");
		sample(b, "gala_gopher_bpf_stats_enabled", NULL, NULL, NULL, NULL, (uint64_t)atoi(tmp));
	}
}

static void render_supervisor(struct gg_buf *b, struct gg_sup *sup)
{
	struct gg_export *exp = sup->exp;
	struct rusage ru;
	char statm[128];
	unsigned long long pages = 0, rss = 0;

	prom_family_header(b, "gala_gopher_build_info", "version of the agent", "gauge");
	sample(b, "gala_gopher_build_info", "version", GG_VERSION, NULL, NULL, 1);
	prom_family_header(b, "gala_gopher_sup_start_time_seconds", "when the supervisor started (Unix time)", "gauge");
	sample_d(b, "gala_gopher_sup_start_time_seconds", NULL, NULL,
		 (double)(gg_wall_ms() - (gg_now_ms() - sup->start_ms)) / 1000.0);
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		prom_family_header(b, "gala_gopher_sup_cpu_seconds_total", "CPU time of the supervisor", "counter");
		sample_d(b, "gala_gopher_sup_cpu_seconds_total", "mode", "user",
			 (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6);
		sample_d(b, "gala_gopher_sup_cpu_seconds_total", "mode", "system",
			 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	}
	if (gg_read_small("/proc/self/statm", statm, sizeof(statm)) >= 0 &&
	    sscanf(statm, "%llu %llu", &pages, &rss) == 2) {
		prom_family_header(b, "gala_gopher_sup_resident_memory_bytes", "resident memory of the supervisor",
				   "gauge");
		sample(b, "gala_gopher_sup_resident_memory_bytes", NULL, NULL, NULL, NULL,
		       rss * (uint64_t)sysconf(_SC_PAGESIZE));
	}
	prom_family_header(b, "gala_gopher_sup_records_received_total", "records received from all probes", "counter");
	sample(b, "gala_gopher_sup_records_received_total", NULL, NULL, NULL, NULL, sup->st.records);
	prom_family_header(b, "gala_gopher_sup_bad_batches_total", "IPC messages that failed to decode", "counter");
	sample(b, "gala_gopher_sup_bad_batches_total", NULL, NULL, NULL, NULL, sup->st.bad_batches);
	prom_family_header(b, "gala_gopher_sup_ipc_refused_peers_total",
			   "connections to the data socket refused: not a process the supervisor spawned", "counter");
	sample(b, "gala_gopher_sup_ipc_refused_peers_total", NULL, NULL, NULL, NULL, ipc_sub__refused(sup->sub));
	prom_family_header(
		b, "gala_gopher_sup_run_dir_repairs_total",
		"run_dir or an IPC socket found deleted, by outcome of making it again (retried every second)",
		"counter");
	sample(b, "gala_gopher_sup_run_dir_repairs_total", "result", "repaired", NULL, NULL, sup->st.run_dir_repairs);
	sample(b, "gala_gopher_sup_run_dir_repairs_total", "result", "failed", NULL, NULL, sup->st.run_dir_failures);
	prom_family_header(b, "gala_gopher_sup_unknown_probe_batches_total", "IPC batches naming no configured probe",
			   "counter");
	sample(b, "gala_gopher_sup_unknown_probe_batches_total", NULL, NULL, NULL, NULL, sup->st.unknown_probe_batches);
	if (!exp)
		return;
	prom_family_header(b, "gala_gopher_sup_scrapes_total", "/metrics requests answered", "counter");
	sample(b, "gala_gopher_sup_scrapes_total", NULL, NULL, NULL, NULL, exp->st.scrapes);
	prom_family_header(b, "gala_gopher_sup_scrape_duration_seconds", "time to render the previous scrape", "gauge");
	sample_d(b, "gala_gopher_sup_scrape_duration_seconds", NULL, NULL, (double)exp->st.last_scrape_ns / 1e9);
	prom_family_header(b, "gala_gopher_sup_scrape_series", "probe series in this scrape", "gauge");
	sample(b, "gala_gopher_sup_scrape_series", NULL, NULL, NULL, NULL, exp->st.last_scrape_series);
	if (exp->http) {
		struct gg_http_stats hs;

		gg_http_server__stats(exp->http, &hs);
		prom_family_header(b, "gala_gopher_web_server_requests_total", "requests answered by the handler",
				   "counter");
		sample(b, "gala_gopher_web_server_requests_total", NULL, NULL, NULL, NULL, hs.requests);
		prom_family_header(b, "gala_gopher_web_server_refused_total", "requests refused by the server",
				   "counter");
		sample(b, "gala_gopher_web_server_refused_total", "reason", "too_large", NULL, NULL, hs.too_large);
		sample(b, "gala_gopher_web_server_refused_total", "reason", "tls_client_cert", NULL, NULL,
		       hs.tls_refused);
		sample(b, "gala_gopher_web_server_refused_total", "reason", "unavailable", NULL, NULL, hs.unavailable);
		sample(b, "gala_gopher_web_server_refused_total", "reason", "head_timeout", NULL, NULL,
		       hs.head_timeout);
		sample(b, "gala_gopher_web_server_refused_total", "reason", "evicted", NULL, NULL, hs.evicted);
		sample(b, "gala_gopher_web_server_refused_total", "reason", "body_timeout", NULL, NULL,
		       hs.body_timeout);
	}
	prom_family_header(b, "gala_gopher_export_records_total", "records, events and metadata messages exported",
			   "counter");
	for (int s = 0; s < GG_STREAM__COUNT; s++)
		sample(b, "gala_gopher_export_records_total", "stream", stream_names[s], NULL, NULL,
		       exp->st.records[s]);
	prom_family_header(b, "gala_gopher_export_render_errors_total", "messages lost to out-of-memory", "counter");
	sample(b, "gala_gopher_export_render_errors_total", NULL, NULL, NULL, NULL, exp->st.render_errors);
}

static void render_imdb(struct gg_buf *b, struct gg_export *exp)
{
	struct imdb *db = exp->db;
	unsigned int n = imdb__ntables(db);
	const struct imdb_table *t;

	prom_family_header(b, "gala_gopher_imdb_rows", "rows (keys) held per table", "gauge");
	for (unsigned int i = 0; i < n; i++) {
		t = imdb__table(db, i);
		sample(b, "gala_gopher_imdb_rows", "table", t->meta->name, NULL, NULL, t->age.n);
	}
	prom_family_header(b, "gala_gopher_imdb_series", "series exported per table (rows x metric fields)", "gauge");
	for (unsigned int i = 0; i < n; i++) {
		t = imdb__table(db, i);
		sample(b, "gala_gopher_imdb_series", "table", t->meta->name, NULL, NULL, t->age.n * t->nmetrics);
	}
	prom_family_header(b, "gala_gopher_imdb_dropped_records_total", "records refused by an imdb limit", "counter");
	for (unsigned int i = 0; i < n; i++) {
		t = imdb__table(db, i);
		for (int r = 0; r < IMDB_DROP__COUNT; r++)
			sample(b, "gala_gopher_imdb_dropped_records_total", "table", t->meta->name, "reason",
			       imdb_drop__str((enum imdb_drop)r), t->dropped[r]);
	}
	prom_family_header(b, "gala_gopher_imdb_expired_records_total", "rows removed after record_timeout", "counter");
	for (unsigned int i = 0; i < n; i++) {
		t = imdb__table(db, i);
		sample(b, "gala_gopher_imdb_expired_records_total", "table", t->meta->name, NULL, NULL, t->expired);
	}
	prom_family_header(b, "gala_gopher_imdb_memory_bytes", "memory held by the imdb", "gauge");
	sample(b, "gala_gopher_imdb_memory_bytes", NULL, NULL, NULL, NULL, imdb__bytes(db));
	prom_family_header(b, "gala_gopher_imdb_memory_limit_bytes", "imdb.max_memory_mb", "gauge");
	sample(b, "gala_gopher_imdb_memory_limit_bytes", NULL, NULL, NULL, NULL,
	       (uint64_t)exp->sup->cfg.imdb.max_memory_mb << 20);
	prom_family_header(b, "gala_gopher_imdb_family_conflicts",
			   "metric fields left out: same name as another table's field of another type, or reserved",
			   "gauge");
	sample(b, "gala_gopher_imdb_family_conflicts", NULL, NULL, NULL, NULL, exp->fam_conflicts);
}

static void render_kafka(struct gg_buf *b, struct gg_export *exp)
{
	struct gg_kafka *k = exp->kafka;
	int nt = gg_kafka__ntopics(k);

	prom_family_header(b, "gala_gopher_kafka_queue_messages", "messages waiting in the producer", "gauge");
	sample(b, "gala_gopher_kafka_queue_messages", NULL, NULL, NULL, NULL, gg_kafka__queue_len(k));
	prom_family_header(b, "gala_gopher_kafka_messages_produced_total", "messages accepted by the producer queue",
			   "counter");
	for (int t = 0; t < nt; t++)
		sample(b, "gala_gopher_kafka_messages_produced_total", "topic", gg_kafka__topic_name(k, t), NULL, NULL,
		       gg_kafka__stats(k, t)->produced);
	prom_family_header(b, "gala_gopher_kafka_messages_delivered_total", "messages acknowledged by the broker",
			   "counter");
	for (int t = 0; t < nt; t++)
		sample(b, "gala_gopher_kafka_messages_delivered_total", "topic", gg_kafka__topic_name(k, t), NULL, NULL,
		       gg_kafka__stats(k, t)->delivered);
	prom_family_header(b, "gala_gopher_kafka_delivery_errors_total",
			   "messages that failed delivery (timed out, refused)", "counter");
	for (int t = 0; t < nt; t++)
		sample(b, "gala_gopher_kafka_delivery_errors_total", "topic", gg_kafka__topic_name(k, t), NULL, NULL,
		       gg_kafka__stats(k, t)->failed);
	prom_family_header(b, "gala_gopher_kafka_messages_dropped_total", "messages refused by the producer queue",
			   "counter");
	for (int t = 0; t < nt; t++) {
		sample(b, "gala_gopher_kafka_messages_dropped_total", "topic", gg_kafka__topic_name(k, t), "reason",
		       "queue_full", gg_kafka__stats(k, t)->dropped_queue_full);
		sample(b, "gala_gopher_kafka_messages_dropped_total", "topic", gg_kafka__topic_name(k, t), "reason",
		       "other", gg_kafka__stats(k, t)->dropped_other);
	}
	prom_family_header(b, "gala_gopher_kafka_client_errors_total", "client errors (brokers down, ...)", "counter");
	sample(b, "gala_gopher_kafka_client_errors_total", NULL, NULL, NULL, NULL, gg_kafka__errors(k));
}

static void render_streams(struct gg_buf *b, struct gg_export *exp)
{
	int any = 0;

	for (int s = 0; s < GG_STREAM__COUNT; s++)
		any |= exp->logs[s].open;
	if (any) {
		prom_family_header(b, "gala_gopher_logs_lines_total", "JSON lines written to the log files", "counter");
		for (int s = 0; s < GG_STREAM__COUNT; s++) {
			if (exp->logs[s].open)
				sample(b, "gala_gopher_logs_lines_total", "stream", stream_names[s], NULL, NULL,
				       exp->logs[s].lines);
		}
		prom_family_header(b, "gala_gopher_logs_lost_lines_total",
				   "JSON lines that could not be written to the log files (full disk, I/O error)",
				   "counter");
		for (int s = 0; s < GG_STREAM__COUNT; s++) {
			if (exp->logs[s].open)
				sample(b, "gala_gopher_logs_lost_lines_total", "stream", stream_names[s], NULL, NULL,
				       exp->logs[s].lost_lines);
		}
		prom_family_header(b, "gala_gopher_logs_write_errors_total", "failed writes (flushes) to the log files",
				   "counter");
		for (int s = 0; s < GG_STREAM__COUNT; s++) {
			if (exp->logs[s].open)
				sample(b, "gala_gopher_logs_write_errors_total", "stream", stream_names[s], NULL, NULL,
				       exp->logs[s].write_errors);
		}
	}
	if (exp->events) {
		const struct gg_events_stats *es = gg_events__stats(exp->events);

		prom_family_header(b, "gala_gopher_events_total", "event records by outcome", "counter");
		sample(b, "gala_gopher_events_total", "result", "reported", NULL, NULL, es->reported);
		sample(b, "gala_gopher_events_total", "result", "deduplicated", NULL, NULL, es->deduplicated);
		sample(b, "gala_gopher_events_total", "result", "invalid", NULL, NULL, es->invalid);
		sample(b, "gala_gopher_events_total", "result", "dedup_full", NULL, NULL, es->dedup_full);
	}
	if (exp->sink[GG_STREAM_META] != GG_SINK_OFF) {
		prom_family_header(b, "gala_gopher_metadata_messages_total", "metadata messages sent", "counter");
		sample(b, "gala_gopher_metadata_messages_total", NULL, NULL, NULL, NULL,
		       exp->st.records[GG_STREAM_META]);
	}
}

void gg_selfmetrics__render(struct gg_buf *b, struct gg_sup *sup)
{
	render_probes(b, sup);
	render_supervisor(b, sup);
	if (!sup->exp)
		return;
	if (sup->exp->db)
		render_imdb(b, sup->exp);
	if (sup->exp->kafka)
		render_kafka(b, sup->exp);
	render_streams(b, sup->exp);
}
