/* config.h - gala-gopher.conf (libconfig syntax): the supervisor's configuration. */
#ifndef GG_CONFIG_H
#define GG_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define GG_NAME_MAX   64
#define GG_STR_MAX    1024
#define GG_PROBES_MAX 128

/* global.probe_memory_mb's default. ASan's shadow memory and quarantine multiply what a probe holds:
 * sanitizer builds (tests) get room for them. */
#if defined(__SANITIZE_ADDRESS__)
#define GG_PROBE_MEMORY_MB_DEFAULT 4096
#else
#define GG_PROBE_MEMORY_MB_DEFAULT 512
#endif

/* Hard limits of a probe (cglimits.c applies them). 0 = no limit; -1 (configuration only) = the global
 * default. */
struct gg_limits {
	int memory_mb;
	int cpu_percent; /* of one CPU: 200 = two CPUs */
	int pids;
};

/* GG_OUT_JSON: gala-gopher's "json" metric channel, the log files with nested JSON lines */
enum gg_out_channel { GG_OUT_OFF = 0, GG_OUT_WEB_SERVER, GG_OUT_LOGS, GG_OUT_KAFKA, GG_OUT_JSON };

enum gg_switch { GG_SWITCH_OFF = 0, GG_SWITCH_ON, GG_SWITCH_AUTO };

/* One entry of `probes` (native: our own binaries) or `extend_probes` (any command printing records). */
struct gg_probe_conf {
	char name[GG_NAME_MAX];
	char command[PATH_MAX];	    /* absolute path of the executable */
	char param[GG_STR_MAX];	    /* command-line flags, split on white space (quotes honoured), no shell */
	char check_cmd[GG_STR_MAX]; /* start condition, run by /bin/sh; only ever from this file */
	enum gg_switch sw;
	int native;
	char *params_json;	 /* optional `params` group as JSON: the first control-plane update */
	struct gg_limits limits; /* -1: global.probe_* */
};

struct gg_channel_conf {
	enum gg_out_channel out;
	char kafka_topic[256];
};

struct gg_http_conf {
	char bind_addr[64];
	int port;
	int ssl_auth;
	char private_key[PATH_MAX];
	char cert_file[PATH_MAX];
	char ca_file[PATH_MAX];
};

struct gg_config {
	char path[PATH_MAX];
	char dir[PATH_MAX]; /* relative paths in the file are relative to this directory */

	struct {
		char log_file_name[256];
		char log_level[16];
		char pin_path[PATH_MAX];
		char run_dir[PATH_MAX];		  /* IPC sockets and status.json */
		char meta_path[PATH_MAX];	  /* directory of .meta files */
		char probes_dir[PATH_MAX];	  /* where native probe binaries live */
		int check_interval;		  /* seconds between check_cmd retries */
		int check_timeout;		  /* seconds before a check_cmd is killed */
		int stop_grace_ms;		  /* SIGTERM -> SIGKILL */
		int hung_timeout;		  /* s without a batch or heartbeat -> "hung" (0: no watchdog) */
		int hung_grace;			  /* s hung -> killed and restarted */
		int ipc_queue;			  /* batches that may wait for the supervisor (NNG_OPT_RECVBUF) */
		struct gg_limits probe_limits;	  /* per probe, unless the probe's entry says otherwise */
		int rest_api_on;		  /* gala-gopher's switch: 0 = no REST listener at all */
		char machine_id[16];		  /* "machine-id" (/etc/machine-id) or "dmi-ip" (gala-gopher's) */
		char product_uuid_file[PATH_MAX]; /* the DMI product uuid of "dmi-ip" */
	} global;

	struct gg_channel_conf metric, event, meta;
	int event_timeout;
	char event_desc_language[16];
	int meta_report_interval; /* meta.report_interval: seconds between metadata reports */

	struct {
		int max_tables_num, max_records_num, max_metrics_num, record_timeout;
		int max_memory_mb; /* all tables together */
	} imdb;

	struct gg_http_conf web_server, rest_api_server;
	/* rest_api_server keys beyond the HTTP ones (REST issue) */
	struct {
		char state_dir[PATH_MAX];	/* REST-applied configuration is kept here across restarts */
		char output_base_dir[PATH_MAX]; /* svg_dir, flame_dir from REST must resolve under it */
		char elf_base_dirs[GG_STR_MAX]; /* ':' separated; elf_path from REST must resolve under one */
	} rest;

	struct {
		char kafka_broker[GG_STR_MAX];
		int batch_num_messages;
		char compression_codec[32];
		int queue_buffering_max_messages;
		int queue_buffering_max_kbytes;
		int queue_buffering_max_ms;
		int message_timeout_ms; /* 0 = librdkafka's default */
		/* TLS / SASL (empty = unset), passed to librdkafka as security.protocol, ssl.*, sasl.* */
		char security_protocol[32];
		char ssl_ca_location[PATH_MAX], ssl_certificate_location[PATH_MAX], ssl_key_location[PATH_MAX];
		char ssl_key_password[256];
		char sasl_mechanisms[64], sasl_username[256], sasl_password[256];
		char properties[4 * GG_STR_MAX]; /* further librdkafka properties: "name=value" lines */
	} kafka;

	struct {
		char metric_dir[PATH_MAX], event_dir[PATH_MAX], meta_dir[PATH_MAX], debug_dir[PATH_MAX];
		int metric_total_size;		       /* MiB over all metric files */
		int event_total_size, meta_total_size; /* MiB over the event files, the metadata files */
		int debug_file_size;		       /* MiB per probe log before rotation */
	} logs;

	/* container and pod labels (identity.h): where the container runtimes keep their state */
	struct {
		int enabled;
		char proc_root[PATH_MAX];
		char containerd_dir[PATH_MAX], crio_dir[PATH_MAX], storage_dir[PATH_MAX], docker_dir[PATH_MAX];
		char containerd_root[PATH_MAX]; /* containerd's root: its metadata database (pod labels) */
		int max_procs, max_containers;	/* cache bounds */
		int proc_refresh_ms;		/* a process's cgroup is read again after this long */
		int names_refresh_s;		/* a container's names are read again after this long */
		int watch_cgroups;		/* inotify on the cgroup hierarchies (mkdir/rmdir, moves) */
		int max_watches;		/* cgroup directories watched at most */
	} identity;

	unsigned int nprobes;
	struct gg_probe_conf probes[GG_PROBES_MAX];
};

typedef void (*gg_config_warn_fn)(const char *msg);

/*
 * Load and check a configuration file. On error returns a negative errno with a message naming
 * the key (and line) in err. Unknown keys are passed to warn (may be NULL).
 */
int gg_config__load(struct gg_config *cfg, const char *path, char *err, size_t errlen, gg_config_warn_fn warn);
int gg_config__load_buf(struct gg_config *cfg, const char *name, const char *text, char *err, size_t errlen,
			gg_config_warn_fn warn);
void gg_config__fini(struct gg_config *cfg);

/* Split a param string into argv (white space separated, '...' and "..." quoting, no expansion).
 * Returns the number of words or a negative errno; *ret_argv is malloc'd (NULL-terminated). */
int gg_split_args(const char *s, char ***ret_argv);
void gg_free_args(char **argv);

const char *gg_out_channel__str(enum gg_out_channel c);

/* 0 when root may execute path: the real file and every directory above it owned by root and
 * writable by nobody else (see config.c); else negative errno and the reason in why. */
int gg_exec_trusted(const char *path, char *why, size_t whylen);
/* The same check, giving the checked file's identity (st_dev, st_ino of the real file): the spawn
 * wrapper opens the binary once and runs it only if it is still that file. */
int gg_exec_trusted_id(const char *path, unsigned long long *ret_dev, unsigned long long *ret_ino, char *why,
		       size_t whylen);

#endif
