/* status.c - <run_dir>/status.json, rewritten atomically every second: the supervisor's and every
 * probe's state and counters, for operators, tests and (later) the self-metrics exporter. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "export.h"
#include "supervisor.h"

static cJSON *probe_json(const struct gg_probe *p)
{
	const struct gg_probe_stats *st = &p->st;
	cJSON *o = cJSON_CreateObject(), *rej, *tabs;
	uint64_t rejected = 0;

	cJSON_AddStringToObject(o, "name", p->conf->name);
	cJSON_AddStringToObject(o, "kind", p->conf->native ? "native" : "extend");
	cJSON_AddStringToObject(o, "command", p->conf->command);
	cJSON_AddStringToObject(o, "param", p->conf->param);
	cJSON_AddStringToObject(o, "state", gg_probe__state_name(p));
	cJSON_AddStringToObject(o, "desired",
				p->desired == GG_DESIRED_RUNNING   ? "running"
				: p->desired == GG_DESIRED_STOPPED ? "stopped"
								   : "switch");
	gg_probe__json_process(o, p);
	gg_json_add_u64(o, "oom_kills", p->oom_kills);
	{
		cJSON *l = cJSON_AddObjectToObject(o, "limits");

		cJSON_AddBoolToObject(l, "applied", p->limits_set);
		cJSON_AddNumberToObject(l, "memory_mb", p->limits.memory_mb);
		cJSON_AddNumberToObject(l, "cpu_percent", p->limits.cpu_percent);
		cJSON_AddNumberToObject(l, "pids", p->limits.pids);
	}
	gg_json_add_u64(o, "backoff_ms", p->backoff_ms);
	gg_json_add_u64(o, "checks", p->checks);
	cJSON_AddNumberToObject(o, "check_value", (double)p->check_value);
	gg_json_add_u64(o, "batches", st->batches);
	/* ms since the supervisor started: when data first and last arrived (benchmarks use them) */
	gg_json_add_u64(o, "first_batch_ms", p->first_batch_ms ? p->first_batch_ms - p->sup->start_ms : 0);
	gg_json_add_u64(o, "last_batch_ms", p->last_batch_ms ? p->last_batch_ms - p->sup->start_ms : 0);
	gg_json_add_u64(o, "records", st->records);
	gg_json_add_u64(o, "accepted", st->accepted);
	gg_json_add_u64(o, "bad_batches", st->bad_batches);
	gg_json_add_u64(o, "ipc_lost_batches", p->seq.lost_batches);
	gg_json_add_u64(o, "ipc_lost_records", p->seq.lost_records);
	gg_json_add_u64(o, "config_version", p->cfg_version);
	gg_json_add_u64(o, "config_version_applied", p->cfg_applied);
	rej = cJSON_AddObjectToObject(o, "rejected");
	for (int r = 1; r < META_REJ__COUNT; r++) {
		gg_json_add_u64(rej, meta_reject__str((enum meta_reject)r), st->rejected[r]);
		rejected += st->rejected[r];
	}
	gg_json_add_u64(o, "rejected_total", rejected);
	tabs = cJSON_AddArrayToObject(o, "rejected_by_table");
	for (unsigned int i = 0; i < st->nrej; i++) {
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "table", st->rej[i].table);
		cJSON_AddStringToObject(e, "reason", meta_reject__str(st->rej[i].reason));
		gg_json_add_u64(e, "count", st->rej[i].count);
		cJSON_AddItemToArray(tabs, e);
	}
	gg_json_add_u64(o, "rejected_other_tables", st->rej_other);
	return o;
}

cJSON *gg_status__json(struct gg_sup *sup)
{
	cJSON *root = cJSON_CreateObject(), *s, *probes;
	struct rusage ru;

	if (!root)
		return NULL;
	s = cJSON_AddObjectToObject(root, "supervisor");
	cJSON_AddStringToObject(s, "version", GG_VERSION);
	cJSON_AddNumberToObject(s, "pid", getpid());
	gg_json_add_u64(s, "uptime_ms", gg_now_ms() - sup->start_ms);
	cJSON_AddStringToObject(s, "machine_id", sup->machine_id);
	cJSON_AddStringToObject(s, "hostname", sup->hostname);
	gg_json_add_u64(s, "batches", sup->st.batches);
	gg_json_add_u64(s, "records", sup->st.records);
	gg_json_add_u64(s, "accepted", sup->st.accepted);
	gg_json_add_u64(s, "bad_batches", sup->st.bad_batches);
	gg_json_add_u64(s, "ipc_refused_peers", ipc_sub__refused(sup->sub));
	gg_json_add_u64(s, "run_dir_repairs", sup->st.run_dir_repairs);
	gg_json_add_u64(s, "run_dir_repair_failures", sup->st.run_dir_failures);
	gg_json_add_u64(s, "unknown_probe_batches", sup->st.unknown_probe_batches);
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		gg_json_add_u64(s, "max_rss_kb", (uint64_t)ru.ru_maxrss);
		gg_json_add_u64(s, "cpu_user_us",
				(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec);
		gg_json_add_u64(s, "cpu_sys_us",
				(uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec);
	}
	gg_export__status(sup, cJSON_AddObjectToObject(root, "export"));
	{
		cJSON *rest = cJSON_AddObjectToObject(root, "rest_api_server");

		if (sup->rest_status)
			sup->rest_status(sup, rest);
	}
	probes = cJSON_AddArrayToObject(root, "probes");
	for (unsigned int i = 0; i < sup->nprobes; i++)
		cJSON_AddItemToArray(probes, probe_json(&sup->probes[i]));
	return root;
}

int gg_status__write(struct gg_sup *sup)
{
	cJSON *root = gg_status__json(sup);
	char *txt;
	int fd, dfd, err = 0;
	size_t len;

	if (!root)
		return -ENOMEM;
	txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return -ENOMEM;
	dfd = gg_run_dir_fd(sup);
	if (dfd < 0) { /* run_dir lost: ingest.c repairs it, then this writes again */
		free(txt);
		return dfd;
	}
	fd = openat(dfd, "status.json.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		err = -errno;
		close(dfd);
		free(txt);
		return err;
	}
	(void)fchmod(fd, 0640); /* a file left by an older version may have been 0644 */
	len = strlen(txt);
	if (write(fd, txt, len) != (ssize_t)len)
		err = -EIO;
	close(fd);
	free(txt);
	if (!err && renameat(dfd, "status.json.tmp", dfd, "status.json"))
		err = -errno;
	close(dfd);
	return err;
}
