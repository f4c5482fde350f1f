/* supervisor.h - the supervisor's state: one libuv loop owning the probes, the IPC sockets, the
 * outputs and the periodic status. Every handle here is touched only from the loop thread. */
#ifndef GG_SUPERVISOR_H
#define GG_SUPERVISOR_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include <cjson/cJSON.h>

#include "cglimits.h"
#include "config.h"
#include "fsutil.h"
#include "ipc.h"
#include "log.h"
#include "meta.h"

#define GG_BACKOFF_MIN_MS   500u
#define GG_BACKOFF_MAX_MS   60000u
#define GG_STABLE_UPTIME_MS 10000u /* up this long -> the next crash starts from the minimum backoff */
#define GG_REJ_TABLES_MAX   64u	   /* (table, reason) pairs tracked per probe; the rest count as "(other)" */
#define GG_CHECK_OUT_MAX    256u

enum gg_probe_state {
	GG_PS_STOPPED = 0, /* switched off, or stopped on request */
	GG_PS_CHECKING,	   /* check_cmd running */
	GG_PS_CHECK_WAIT,  /* check_cmd said no; re-checked every global.check_interval */
	GG_PS_RUNNING,
	GG_PS_BACKOFF,	/* exited unexpectedly; restart timer armed */
	GG_PS_STOPPING, /* SIGTERM sent, SIGKILL after the grace period */
};
const char *gg_probe_state__str(enum gg_probe_state s);
struct gg_probe;
/* The state as operators see it: "hung" for a running probe the watchdog found silent. */
const char *gg_probe__state_name(const struct gg_probe *p);
/* argv joined with spaces, arguments with blanks or quotes quoted as param splitting reads them back. */
size_t gg_cmdline__format(char *buf, size_t len, char *const *argv);

/* Records rejected for one (table, reason). */
struct gg_rej_entry {
	char table[META_NAME_MAX];
	enum meta_reject reason;
	uint64_t count;
};

/* What the supervisor has counted for one probe; nothing is dropped without landing here. */
struct gg_probe_stats {
	uint64_t batches;
	uint64_t records; /* record lines received (IPC or extend stdout) */
	uint64_t accepted;
	uint64_t rejected[META_REJ__COUNT];
	uint64_t bad_batches;	  /* messages that failed to decode (their records are unknown) */
	uint64_t stdout_overlong; /* extend probe lines over IPC_RECORD_MAX_LEN (also counted malformed) */
	struct gg_rej_entry rej[GG_REJ_TABLES_MAX];
	unsigned int nrej;
	uint64_t rej_other;
};

struct gg_sup;

/* One configured probe and its child process. */
struct gg_probe {
	struct gg_sup *sup;
	const struct gg_probe_conf *conf;
	enum gg_probe_state state;

	uv_process_t proc;
	uv_pipe_t out, err;
	uv_timer_t timer;		   /* backoff, check retry, stop grace */
	int proc_open, out_open, err_open; /* handle initialised and not yet closed */
	pid_t pid;
	uint64_t started_ms;
	uint64_t starts;     /* successful spawns */
	uint64_t restarts;   /* spawns after an unexpected exit */
	uint64_t backoff_ms; /* delay of the next restart */
	int64_t last_exit_status;
	int last_term_signal;
	uint64_t last_exit_ms;

	/* check_cmd */
	uv_process_t check_proc;
	uv_pipe_t check_out;
	uv_timer_t check_timer;
	int check_proc_open, check_out_open, check_timer_open, check_done, check_exited, check_eof;
	char check_buf[GG_CHECK_OUT_MAX];
	size_t check_len;
	int64_t check_status;
	long long check_value; /* last number printed, -1 when none */
	uint64_t checks;

	struct rot_file log;
	int log_open;

	/* extend probes: stdout split into lines */
	char *line;
	size_t line_len;
	int line_overflow;

	struct ipc_seq_tracker seq;
	struct gg_probe_stats st;
	uint64_t sample_last_ms; /* rate limit of rejected-record samples in the probe log */
	uint64_t samples_suppressed;

	/* control plane */
	char *cfg_json;
	uint64_t cfg_version; /* latest version handed to the probe */
	uint64_t cfg_applied; /* version the probe reported in its last batch */
	uint64_t cfg_last_send_ms;
	uint64_t first_batch_ms;
	uint64_t last_batch_ms;

	/* hung-probe watchdog: a native probe heartbeats every second, so a long silence is a hang */
	uint64_t hung_since_ms; /* 0: not hung */
	uint64_t hangs;		/* times found hung */
	int hung_kill_sent;

	/* hard limits (cglimits.c) */
	struct gg_limits limits; /* in force for the running process */
	int limits_set;		 /* its cgroups were made and written */
	uint64_t oom_base;	 /* the memory cgroup's OOM kills when the process started */
	uint64_t oom_kills;	 /* exits by the memory limit */

	/* run-time control (REST API, rest.c) */
	int desired;	      /* enum gg_desired: follow conf->sw, or started/stopped on request */
	char **extra_argv;    /* flags appended to conf->param at the next start (NULL-terminated), or NULL */
	char cmdline[2048];   /* the command the running process was started with ("" when none) */
	int start_after_stop; /* a stop in progress is a restart: start again once it has exited */
};

/* What the operator asked for at run time (REST "state"). */
enum gg_desired {
	GG_DESIRED_SWITCH = 0, /* the configuration file's switch */
	GG_DESIRED_RUNNING,
	GG_DESIRED_STOPPED,
};

/* Supervisor-wide counters. */
struct gg_sup_stats {
	uint64_t batches;
	uint64_t records;
	uint64_t accepted;
	uint64_t unknown_probe_batches; /* batches whose header names no configured probe */
	uint64_t bad_batches;
	uint64_t run_dir_repairs;  /* run_dir or an IPC socket found gone and made again */
	uint64_t run_dir_failures; /* ticks on which that could not be done */
};

struct gg_export;
struct gg_rest;

struct gg_sup;

/* What the data path (ingest.c) needs of the probe manager: set by gg_probes__init, called through
 * here, so that ingest.c and probe_mgr.c do not depend on each other. */
struct gg_ingest_ops {
	struct gg_probe *(*find)(struct gg_sup *sup, const char *name);
	/* a batch came from p (its control socket is connected): it may get its configuration now */
	void (*connected)(struct gg_probe *p, uint64_t now_ms);
	void (*logf)(struct gg_probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	/* the run directory was made again: rewrite its children file */
	void (*write_children)(struct gg_sup *sup);
};

struct gg_sup {
	uv_loop_t *loop;
	struct gg_config cfg;
	struct meta_registry *reg;
	char self_exe[4096];
	char data_url[4200];
	char ctrl_url[4200];
	char machine_id[64];
	char hostname[256];

	struct ipc_sub *sub;
	struct gg_cglimits cg; /* each probe's memory, CPU and pids limits (cglimits.h) */
	uv_poll_t sub_poll;
	struct ipc_ctrl_pub *ctrl;
	dev_t run_dev; /* run_dir as made at start (or last repaired): a replaced one is noticed */
	ino_t run_ino;
	int run_dir_lost; /* in an episode of a missing run_dir: logged once */

	uv_timer_t tick;	/* 1 s: status, config resends, output flush */
	uint64_t tick_last_ms;	/* the watchdog's previous look */
	uint64_t watch_from_ms; /* silences before this do not count: the supervisor itself was stalled */
	uv_signal_t sig_term, sig_int, sig_hup;
	uint64_t start_ms;
	int stopping;
	int exit_code;

	unsigned int nprobes;
	struct gg_probe *probes; /* room for GG_PROBES_MAX: the REST API adds entries at run time */

	struct gg_export *exp; /* channels: imdb + web_server, kafka, logs; events; metadata (export.h) */
	struct gg_rest *rest;  /* REST API server, run-time probe configuration, snoopers (rest.h) */
	/* The REST server's part of status.json, set by gg_rest__init: status.c reaches rest/ through it,
	 * as the web page (rest/webui.c) reads status.json's document from status.c. */
	void (*rest_status)(struct gg_sup *sup, cJSON *obj);

	struct gg_sup_stats st;
	struct gg_ingest_ops ingest_ops;
};

/* A counter into a JSON object (status.json, REST replies): cJSON holds numbers as doubles. */
static inline void gg_json_add_u64(cJSON *o, const char *k, uint64_t v)
{
	cJSON_AddNumberToObject(o, k, (double)v);
}

/* probe_mgr.c: a probe's process in o (pid, starts, restarts, uptime_ms, last_exit_status,
 * last_exit_signal), for status.json and the REST API's runtime object alike. */
void gg_probe__json_process(cJSON *o, const struct gg_probe *p);

uint64_t gg_now_ms(void);  /* monotonic */
uint64_t gg_wall_ms(void); /* since the epoch */

/* probe_mgr.c */
int gg_probes__init(struct gg_sup *sup);
void gg_probes__start_all(struct gg_sup *sup);
/* Stop every probe; cb-free: the loop ends once every child has exited and handles are closed. */
void gg_probes__stop_all(struct gg_sup *sup);
int gg_probes__all_stopped(const struct gg_sup *sup);
void gg_probes__close(struct gg_sup *sup);
/* After the loop has closed every handle. */
void gg_probes__free(struct gg_sup *sup);
struct gg_probe *gg_probes__find(struct gg_sup *sup, const char *name);
void gg_probes__tick(struct gg_sup *sup);
/* Send p its unconfirmed configuration when it is connected (called as its batches arrive). */
void gg_probe__offer_config(struct gg_probe *p, uint64_t now);
/* Send (re-send after 500 ms) configurations not yet confirmed to connected probes; returns how many
 * running probes still wait for theirs (the REST API polls faster while some do). */
unsigned int gg_probes__push_configs(struct gg_sup *sup);
/* Kill process groups left behind by a previous supervisor that was killed (pid + start time). */
void gg_probes__reap_leftovers(const struct gg_sup *sup);
void gg_probe__logf(struct gg_probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Add a probe at run time for conf (stored in sup->cfg.probes, outliving the probe). NULL + errno
 * (ENOSPC when GG_PROBES_MAX are configured). The probe starts stopped. */
struct gg_probe *gg_probes__add(struct gg_sup *sup, const struct gg_probe_conf *conf);
/* Start now when not running or starting (check_cmd first when there is one); a probe being stopped
 * starts again once it has exited. Resets the restart backoff. */
void gg_probe__start(struct gg_probe *p);
/* Stop: SIGTERM to its process group, SIGKILL after global.stop_grace_ms; no restart. */
void gg_probe__stop(struct gg_probe *p);
/* Stop and start a fresh process (e.g. with new extra_argv); a probe not running just starts. */
void gg_probe__restart(struct gg_probe *p);
/* 1 while a process is running or about to be (running, checking, check_wait, backoff). */
int gg_probe__active(const struct gg_probe *p);
/* Replace the live configuration (takes ownership of json): a new version, sent at once when the
 * probe is connected and re-sent by gg_probes__tick until the probe confirms it. */
void gg_probe__set_config(struct gg_probe *p, char *json);

/* ingest.c */
int gg_ingest__init(struct gg_sup *sup);
void gg_ingest__close(struct gg_sup *sup);
/* Validate one record line (no newline) from probe p and pass it on. */
void gg_ingest__record(struct gg_sup *sup, struct gg_probe *p, const char *line, size_t len);
/* Handle one decoded IPC message. */
void gg_ingest__message(struct gg_sup *sup, const void *msg, size_t len);
void gg_ingest__flush(struct gg_sup *sup);
void gg_ingest__free(struct gg_sup *sup);

/* status.c */
int gg_status__write(struct gg_sup *sup);
/* What status.json holds, as an object (NULL when out of memory); the web page reads it. */
cJSON *gg_status__json(struct gg_sup *sup);

/* util.c */
int gg_read_machine_id(char *buf, size_t len);
int gg_ensure_tracefs(void);
int gg_ensure_bpffs(void); /* /sys/fs/bpf, where probes pin shared maps (global.pin_path) */
/* /proc/<pid>/stat: its text, the comm in it (comm_len bytes after the '(') and the fields after the
 * comm's ')' (rest). */
struct gg_proc_stat {
	char buf[1024];
	const char *comm, *rest;
	size_t comm_len;
};
int gg_proc_stat(pid_t pid, struct gg_proc_stat *ret); /* 0 or negative errno */
int gg_proc_starttime(pid_t pid, unsigned long long *ret);
/* 0 when path is a directory (not a symlink) of ours that only we may write; otherwise a negative errno
 * and why in `why` ("is owned by uid 1000, ..."). */
int gg_private_dir(const char *path, char *why, size_t whylen);
/* A directory fd of run_dir, the one the supervisor made (not a symlink, not a directory put in its
 * place: -ESTALE); files in it are written relative to it. Negative errno on failure. */
int gg_run_dir_fd(const struct gg_sup *sup);
/* *ret: the listener of an HTTP server block of the configuration (web_server, rest_api_server):
 * address, port, TLS files, named name in messages; everything else zero, for the caller to add. */
struct gg_http_opts;
void gg_http_opts_from_conf(const struct gg_http_conf *c, const char *name, struct gg_http_opts *ret);
/* Rewrite <run_dir>/children (the live probe process groups). */
void gg_probes__write_children(struct gg_sup *sup);
/* Every tick: run_dir deleted or replaced -> logged, recreated, the IPC sockets listened again, counted. */
void gg_ingest__watch_run_dir(struct gg_sup *sup);

#endif
