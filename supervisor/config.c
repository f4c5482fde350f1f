/* config.c - loads gala-gopher.conf: known keys are checked against their type and range, unknown
 * keys are warned about, and every error names the key and its line. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipc.h"
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

enum key_kind { K_STR, K_PATH, K_INT, K_ONOFF, K_CHANNEL, K_ENUM, K_BROKERS, K_KVLIST, K_IGNORED };

/* How one key of a section is read and checked, and its value when the file does not give it. */
struct key_spec {
	const char *name;
	enum key_kind kind;
	size_t off;
	size_t size;
	long min, max;
	const char *const *choices;
	const char *def; /* default of a string key (NULL: empty) */
	long idef;	 /* default of an integer, switch or channel key */
};

static const char *const loglevels[] = {"debug", "info", "warn", "warning", "error", NULL};
static const char *const languages[] = {"en_US", "zh_CN", NULL};
static const char *const codecs[] = {"none", "gzip", "snappy", "lz4", "zstd", NULL};
static const char *const machine_id_sources[] = {"machine-id", "dmi-ip", NULL};
static const char *const security_protocols[] = {"", "plaintext", "ssl", "sasl_plaintext", "sasl_ssl", NULL};

#define FIELD(f) .off = offsetof(struct gg_config, f), .size = sizeof(((struct gg_config *)0)->f)
#define STR(f, n, d)                                         \
	{                                                    \
		.name = n, .kind = K_STR, FIELD(f), .def = d \
	}
#define PATHK(f, n, d)                                        \
	{                                                     \
		.name = n, .kind = K_PATH, FIELD(f), .def = d \
	}
#define INT(f, n, lo, hi, d)                                                        \
	{                                                                           \
		.name = n, .kind = K_INT, FIELD(f), .min = lo, .max = hi, .idef = d \
	}
#define ONOFF(f, n, d)                                          \
	{                                                       \
		.name = n, .kind = K_ONOFF, FIELD(f), .idef = d \
	}
#define ENUMK(f, n, c, d)                                                   \
	{                                                                   \
		.name = n, .kind = K_ENUM, FIELD(f), .choices = c, .def = d \
	}
#define IGN(n)                               \
	{                                    \
		.name = n, .kind = K_IGNORED \
	}

static const struct key_spec global_keys[] = {
	STR(global.log_file_name, "log_file_name", "gala-gopher.log"),
	ENUMK(global.log_level, "log_level", loglevels, "info"),
	PATHK(global.pin_path, "pin_path", "/sys/fs/bpf/gala-gopher"),
	PATHK(global.run_dir, "run_dir", "/var/run/gala-gopher"),
	PATHK(global.meta_path, "meta_path", "/opt/gala-gopher/meta"),
	PATHK(global.probes_dir, "probes_dir", "/opt/gala-gopher/probes"),
	INT(global.check_interval, "check_interval", 1, 3600, 30),
	INT(global.check_timeout, "check_timeout", 1, 300, 5),
	INT(global.stop_grace_ms, "stop_grace_ms", 100, 60000, 2000),
	INT(global.hung_timeout, "hung_timeout", 0, 3600, 30),
	INT(global.hung_grace, "hung_grace", 1, 3600, 10),
	INT(global.ipc_queue, "ipc_queue", 16, 8192, IPC_SUB_DEFAULT_RECVBUF),
	INT(global.probe_limits.memory_mb, "probe_memory_mb", 0, 1048576, GG_PROBE_MEMORY_MB_DEFAULT),
	INT(global.probe_limits.cpu_percent, "probe_cpu_percent", 0, 100000, 100),
	INT(global.probe_limits.pids, "probe_pids_max", 0, 1000000, 256),
	ONOFF(global.rest_api_on, "rest_api_on", 1),
	ENUMK(global.machine_id, "machine_id", machine_id_sources, "machine-id"),
	PATHK(global.product_uuid_file, "product_uuid_file", "/sys/class/dmi/id/product_uuid"),
	IGN("bpf_pin_path"),
	{0},
};

#define CHANNEL_KEYS(sec, topic)                                                         \
	{.name = "out_channel", .kind = K_CHANNEL, FIELD(sec.out), .idef = GG_OUT_LOGS}, \
		STR(sec.kafka_topic, "kafka_topic", topic)

static const struct key_spec metric_keys[] = {CHANNEL_KEYS(metric, "gala_gopher"), {0}};
static const struct key_spec meta_keys[] = {
	CHANNEL_KEYS(meta, "gala_gopher_metadata"),
	INT(meta_report_interval, "report_interval", 1, 86400, 600),
	{0},
};
static const struct key_spec event_keys[] = {
	CHANNEL_KEYS(event, "gala_gopher_event"),
	INT(event_timeout, "timeout", 1, 86400, 600),
	ENUMK(event_desc_language, "desc_language", languages, "en_US"),
	{0},
};
static const struct key_spec ingress_keys[] = {IGN("interval"), {0}};
static const struct key_spec egress_keys[] = {IGN("interval"), IGN("time_range"), {0}};
static const struct key_spec imdb_keys[] = {
	INT(imdb.max_tables_num, "max_tables_num", 1, 65536, 1024),
	INT(imdb.max_records_num, "max_records_num", 1, 10000000, 1024),
	INT(imdb.max_metrics_num, "max_metrics_num", 1, 65536, 1024),
	INT(imdb.record_timeout, "record_timeout", 1, 86400 * 7, 60),
	INT(imdb.max_memory_mb, "max_memory_mb", 1, 1048576, 256),
	{0},
};

/* port_min 0 (REST): any free port (the one chosen is in status.json) */
#define HTTP_KEYS(sec, port_min, port_def)                                                              \
	STR(sec.bind_addr, "bind_addr", "127.0.0.1"), INT(sec.port, "port", port_min, 65535, port_def), \
		ONOFF(sec.ssl_auth, "ssl_auth", 0), PATHK(sec.private_key, "private_key", NULL),        \
		PATHK(sec.cert_file, "cert_file", NULL), PATHK(sec.ca_file, "ca_file", NULL)

static const struct key_spec web_keys[] = {HTTP_KEYS(web_server, 1, 8888), {0}};
static const struct key_spec rest_keys[] = {
	HTTP_KEYS(rest_api_server, 0, 9999),
	PATHK(rest.state_dir, "state_dir", "/var/lib/gala-gopher"),
	PATHK(rest.output_base_dir, "output_base_dir", "/var/log/gala-gopher"),
	STR(rest.elf_base_dirs, "elf_base_dirs", "/usr:/opt:/srv:/home:/var/lib:/bin:/sbin:/lib:/lib64"),
	{0},
};
static const struct key_spec kafka_keys[] = {
	{.name = "kafka_broker", .kind = K_BROKERS, FIELD(kafka.kafka_broker), .def = "localhost:9092"},
	INT(kafka.batch_num_messages, "batch_num_messages", 1, 1000000, 10000),
	ENUMK(kafka.compression_codec, "compression_codec", codecs, "none"),
	INT(kafka.queue_buffering_max_messages, "queue_buffering_max_messages", 1, 10000000, 100000),
	INT(kafka.queue_buffering_max_kbytes, "queue_buffering_max_kbytes", 1, 2097151, 1048576),
	INT(kafka.queue_buffering_max_ms, "queue_buffering_max_ms", 0, 900000, 5),
	INT(kafka.message_timeout_ms, "message_timeout_ms", 0, 2147483647, 0),
	ENUMK(kafka.security_protocol, "security_protocol", security_protocols, NULL),
	PATHK(kafka.ssl_ca_location, "ssl_ca_location", NULL),
	PATHK(kafka.ssl_certificate_location, "ssl_certificate_location", NULL),
	PATHK(kafka.ssl_key_location, "ssl_key_location", NULL),
	STR(kafka.ssl_key_password, "ssl_key_password", NULL),
	STR(kafka.sasl_mechanisms, "sasl_mechanisms", NULL),
	STR(kafka.sasl_username, "sasl_username", NULL),
	STR(kafka.sasl_password, "sasl_password", NULL),
	{.name = "properties", .kind = K_KVLIST, FIELD(kafka.properties)},
	{0},
};
static const struct key_spec logs_keys[] = {
	PATHK(logs.metric_dir, "metric_dir", "/var/log/gala-gopher/metrics"),
	PATHK(logs.event_dir, "event_dir", "/var/log/gala-gopher/event"),
	PATHK(logs.meta_dir, "meta_dir", "/var/log/gala-gopher/meta"),
	PATHK(logs.debug_dir, "debug_dir", "/var/log/gala-gopher/debug"),
	INT(logs.metric_total_size, "metric_total_size", 1, 1048576, 100),
	INT(logs.event_total_size, "event_total_size", 1, 1048576, 100),
	INT(logs.meta_total_size, "meta_total_size", 1, 1048576, 10),
	INT(logs.debug_file_size, "debug_file_size", 1, 1024, 10),
	{0},
};

static const struct key_spec identity_keys[] = {
	ONOFF(identity.enabled, "enabled", 1),
	PATHK(identity.proc_root, "proc_root", "/proc"),
	PATHK(identity.containerd_dir, "containerd_dir", "/run/containerd/io.containerd.runtime.v2.task"),
	PATHK(identity.crio_dir, "crio_dir", "/run/containers/storage"),
	PATHK(identity.storage_dir, "storage_dir", "/var/lib/containers/storage"),
	PATHK(identity.docker_dir, "docker_dir", "/var/lib/docker"),
	PATHK(identity.containerd_root, "containerd_root", "/var/lib/containerd"),
	INT(identity.max_procs, "max_procs", 16, 1048576, 16384),
	INT(identity.max_containers, "max_containers", 16, 1048576, 4096),
	INT(identity.proc_refresh_ms, "proc_refresh_ms", 100, 3600000, 5000),
	INT(identity.names_refresh_s, "names_refresh_s", 1, 86400, 60),
	ONOFF(identity.watch_cgroups, "watch_cgroups", 1),
	INT(identity.max_watches, "max_watches", 16, 1048576, 8192),
	{0},
};

/* Sections of the file and their keys; `probes` and `extend_probes` are lists, read separately. */
static const struct {
	const char *name;
	const struct key_spec *keys;
} sections[] = {
	{"global", global_keys},	{"metric", metric_keys}, {"event", event_keys}, {"meta", meta_keys},
	{"ingress", ingress_keys},	{"egress", egress_keys}, {"imdb", imdb_keys},	{"web_server", web_keys},
	{"rest_api_server", rest_keys}, {"kafka", kafka_keys},	 {"logs", logs_keys},	{"identity", identity_keys},
};

struct load_ctx {
	struct gg_config *cfg;
	char *err;
	size_t errlen;
	gg_config_warn_fn warn;
	const char *file;
};

static int fail(struct load_ctx *c, const config_setting_t *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct load_ctx *c, const config_setting_t *s, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (s && config_setting_source_line(s))
		n = snprintf(c->err, c->errlen, "%s:%d: ", c->file, config_setting_source_line(s));
	else
		n = snprintf(c->err, c->errlen, "%s: ", c->file);
	if (n < 0 || (size_t)n >= c->errlen)
		n = 0;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void warnf(struct load_ctx *c, const config_setting_t *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void warnf(struct load_ctx *c, const config_setting_t *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	if (!c->warn)
		return;
	n = snprintf(msg, sizeof(msg), "%s:%d: ", c->file, s ? config_setting_source_line(s) : 0);
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	c->warn(msg);
}

static int copy_str(struct load_ctx *c, const config_setting_t *s, const char *key, const char *v, char *dst,
		    size_t size)
{
	if (strlen(v) >= size)
		return fail(c, s, "%s: value too long (at most %zu characters)", key, size - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int resolve_path(struct load_ctx *c, const config_setting_t *s, const char *key, const char *v, char *dst,
			size_t size)
{
	int n;

	if (!v[0] || v[0] == '/')
		return copy_str(c, s, key, v, dst, size);
	n = snprintf(dst, size, "%s/%s", c->cfg->dir, v);
	if (n < 0 || (size_t)n >= size)
		return fail(c, s, "%s: path too long", key);
	return 0;
}

static const char *const channel_names[] = {"", "web_server", "logs", "kafka", "json"};

const char *gg_out_channel__str(enum gg_out_channel ch)
{
	return (unsigned int)ch < sizeof(channel_names) / sizeof(channel_names[0]) ? channel_names[ch] : "?";
}

static int read_key(struct load_ctx *c, const char *sec, const struct key_spec *k, const config_setting_t *s)
{
	char *base = (char *)c->cfg;
	char key[128];
	const char *v;

	snprintf(key, sizeof(key), "%s.%s", sec, k->name);
	switch (k->kind) {
	case K_IGNORED:
		return 0;
	case K_INT: {
		long long x;

		if (config_setting_type(s) == CONFIG_TYPE_INT || config_setting_type(s) == CONFIG_TYPE_INT64)
			x = config_setting_get_int64(s);
		else if (config_setting_type(s) == CONFIG_TYPE_STRING) {
			char *end;

			v = config_setting_get_string(s);
			errno = 0;
			x = strtoll(v, &end, 10);
			if (!v[0] || *end || errno)
				return fail(c, s, "%s: must be an integer in [%ld, %ld], got \"%s\"", key, k->min,
					    k->max, v);
		} else
			return fail(c, s, "%s: must be an integer in [%ld, %ld]", key, k->min, k->max);
		if (x < k->min || x > k->max)
			return fail(c, s, "%s: %lld is out of range [%ld, %ld]", key, x, k->min, k->max);
		*(int *)(base + k->off) = (int)x;
		return 0;
	}
	default:
		break;
	}

	if (k->kind == K_BROKERS && (config_setting_is_list(s) || config_setting_is_array(s))) {
		char *dst = base + k->off;
		size_t used = 0;

		dst[0] = 0;
		for (int i = 0; i < config_setting_length(s); i++) {
			const char *b = config_setting_get_string_elem(s, i);
			size_t bl;

			if (!b || !b[0])
				return fail(c, s, "%s: element %d must be a non-empty \"host:port\" string", key, i);
			bl = strlen(b);
			if (used + bl + 2 > k->size)
				return fail(c, s, "%s: broker list too long (at most %zu characters)", key,
					    k->size - 1);
			if (used)
				dst[used++] = ',';
			memcpy(dst + used, b, bl + 1);
			used += bl;
		}
		return 0;
	}

	if (k->kind == K_KVLIST) {
		char *dst = base + k->off;
		size_t used = 0;

		if (!config_setting_is_list(s) && !config_setting_is_array(s))
			return fail(c, s, "%s: must be a list of \"name=value\" strings", key);
		dst[0] = 0;
		for (int i = 0; i < config_setting_length(s); i++) {
			const char *b = config_setting_get_string_elem(s, i);
			size_t bl;

			if (!b || !strchr(b, '=') || b[0] == '=' || strchr(b, '\n'))
				return fail(c, s, "%s: element %d must be a \"name=value\" string", key, i);
			bl = strlen(b);
			if (used + bl + 2 > k->size)
				return fail(c, s, "%s: too long (at most %zu characters)", key, k->size - 1);
			if (used)
				dst[used++] = '\n';
			memcpy(dst + used, b, bl + 1);
			used += bl;
		}
		return 0;
	}

	if (k->kind == K_ONOFF && config_setting_type(s) == CONFIG_TYPE_BOOL) {
		/* gala-gopher writes switches as booleans (rest_api_on = true;) */
		*(int *)(base + k->off) = config_setting_get_bool(s);
		return 0;
	}
	if (config_setting_type(s) != CONFIG_TYPE_STRING)
		return fail(c, s, "%s: must be a string", key);
	v = config_setting_get_string(s);

	switch (k->kind) {
	case K_STR:
	case K_BROKERS:
		return copy_str(c, s, key, v, base + k->off, k->size);
	case K_PATH:
		return resolve_path(c, s, key, v, base + k->off, k->size);
	case K_ONOFF:
		if (!strcasecmp(v, "on") || !strcasecmp(v, "true"))
			*(int *)(base + k->off) = 1;
		else if (!strcasecmp(v, "off") || !strcasecmp(v, "false") || !v[0])
			*(int *)(base + k->off) = 0;
		else
			return fail(c, s, "%s: must be \"on\" or \"off\" (or true, false), got \"%s\"", key, v);
		return 0;
	case K_CHANNEL:
		for (int i = 0; i < (int)(sizeof(channel_names) / sizeof(channel_names[0])); i++) {
			if (!strcmp(v, channel_names[i])) {
				*(int *)(base + k->off) = i;
				return 0;
			}
		}
		if (!strcmp(v, "off")) {
			*(int *)(base + k->off) = GG_OUT_OFF;
			return 0;
		}
		return fail(
			c, s,
			"%s: must be one of \"web_server\", \"logs\", \"kafka\", \"json\" or \"\" (off), got \"%s\"",
			key, v);
	case K_ENUM:
		for (int i = 0; k->choices[i]; i++) {
			if (!strcmp(v, k->choices[i]))
				return copy_str(c, s, key, v, base + k->off, k->size);
		}
		{
			char allowed[256] = "";

			for (int i = 0; k->choices[i]; i++) {
				strncat(allowed, i ? ", " : "", sizeof(allowed) - strlen(allowed) - 1);
				strncat(allowed, k->choices[i], sizeof(allowed) - strlen(allowed) - 1);
			}
			return fail(c, s, "%s: must be one of %s, got \"%s\"", key, allowed, v);
		}
	default:
		return fail(c, s, "%s: unsupported", key);
	}
}

static int read_section(struct load_ctx *c, const char *sec, const struct key_spec *keys, const config_setting_t *g)
{
	if (!config_setting_is_group(g))
		return fail(c, g, "%s: must be a group { ... }", sec);
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned int)i);
		const char *name = config_setting_name(s);
		const struct key_spec *k = keys;
		int err;

		while (k->name && strcmp(k->name, name))
			k++;
		if (!k->name) {
			warnf(c, s, "unknown key '%s.%s' ignored", sec, name);
			continue;
		}
		err = read_key(c, sec, k, s);
		if (err)
			return err;
	}
	return 0;
}

static int valid_probe_name(const char *s)
{
	if (!s[0] || strlen(s) >= GG_NAME_MAX)
		return 0;
	for (; *s; s++) {
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return 0;
	}
	return 1;
}

/* `params = { report_period = 5; ... }` of a probe entry -> JSON text for the control plane. */
static int params_to_json(struct load_ctx *c, const config_setting_t *g, const char *where, char **ret)
{
	cJSON *root = cJSON_CreateObject(), *params = cJSON_AddObjectToObject(root, "params");
	char *txt;

	if (!root || !params) {
		cJSON_Delete(root);
		return -ENOMEM;
	}
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned int)i);
		const char *name = config_setting_name(s);

		switch (config_setting_type(s)) {
		case CONFIG_TYPE_INT:
		case CONFIG_TYPE_INT64:
			cJSON_AddNumberToObject(params, name, (double)config_setting_get_int64(s));
			break;
		case CONFIG_TYPE_FLOAT:
			cJSON_AddNumberToObject(params, name, config_setting_get_float(s));
			break;
		case CONFIG_TYPE_STRING:
			cJSON_AddStringToObject(params, name, config_setting_get_string(s));
			break;
		case CONFIG_TYPE_BOOL:
			cJSON_AddNumberToObject(params, name, config_setting_get_bool(s));
			break;
		default:
			cJSON_Delete(root);
			return fail(c, s, "%s.params.%s: must be a number or a string", where, name);
		}
	}
	txt = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!txt)
		return -ENOMEM;
	*ret = txt;
	return 0;
}

/* Root must not execute what someone else could have written: the real file (symlinks resolved)
 * must be a regular executable file owned by root and writable by nobody else, and so must be every
 * directory above it (a root-owned sticky directory such as /tmp counts as safe: others cannot
 * rename or replace what root put there). */
int gg_exec_trusted(const char *path, char *why, size_t whylen)
{
	unsigned long long dev, ino;

	return gg_exec_trusted_id(path, &dev, &ino, why, whylen);
}

int gg_exec_trusted_id(const char *path, unsigned long long *ret_dev, unsigned long long *ret_ino, char *why,
		       size_t whylen)
{
	char real[PATH_MAX], dir[PATH_MAX], *slash;
	unsigned long long dev, ino;
	struct stat st;

	if (!realpath(path, real)) {
		snprintf(why, whylen, "\"%s\": %s", path, strerror(errno));
		return -errno;
	}
	if (stat(real, &st) || !S_ISREG(st.st_mode) || access(real, X_OK)) {
		snprintf(why, whylen, "\"%s\" is not an executable file", real);
		return -EACCES;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, whylen, "\"%s\" is owned by uid %u, not by root", real, (unsigned)st.st_uid);
		return -EACCES;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "\"%s\" is writable by %s (mode %04o)", real,
			 (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
		return -EACCES;
	}
	dev = (unsigned long long)st.st_dev;
	ino = (unsigned long long)st.st_ino;
	snprintf(dir, sizeof(dir), "%s", real);
	while ((slash = strrchr(dir, '/')) != NULL) {
		if (slash == dir)
			slash[1] = 0;
		else
			*slash = 0;
		if (stat(dir, &st)) {
			snprintf(why, whylen, "directory \"%s\": %s", dir, strerror(errno));
			return -errno;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			snprintf(why, whylen, "\"%s\" is in directory \"%s\" owned by uid %u, not by root", real, dir,
				 (unsigned)st.st_uid);
			return -EACCES;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
			snprintf(why, whylen, "\"%s\" is in directory \"%s\" writable by %s (mode %04o)", real, dir,
				 (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
			return -EACCES;
		}
		if (!strcmp(dir, "/"))
			break;
	}
	*ret_dev = dev;
	*ret_ino = ino;
	return 0;
}

static int read_probe(struct load_ctx *c, const config_setting_t *e, int native, unsigned int idx)
{
	struct gg_config *cfg = c->cfg;
	struct gg_probe_conf *p;
	const char *list = native ? "probes" : "extend_probes";
	char where[96], why[1024];
	const char *name = NULL, *v;
	char **argv = NULL;
	int err = 0, nargs;

	if (!config_setting_is_group(e))
		return fail(c, e, "%s[%u]: must be a group { name = ...; }", list, idx);
	if (cfg->nprobes >= GG_PROBES_MAX)
		return fail(c, e, "%s: too many probes (at most %d in all)", list, GG_PROBES_MAX);
	if (!config_setting_lookup_string(e, "name", &name) || !valid_probe_name(name))
		return fail(c, e, "%s[%u].name: required, letters, digits, '_', '-' or '.', at most %d characters",
			    list, idx, GG_NAME_MAX - 1);
	for (unsigned int i = 0; i < cfg->nprobes; i++) {
		if (!strcmp(cfg->probes[i].name, name))
			return fail(c, e, "%s[%u].name: \"%s\" is defined twice", list, idx, name);
	}
	p = &cfg->probes[cfg->nprobes];
	memset(p, 0, sizeof(*p));
	p->native = native;
	p->sw = GG_SWITCH_OFF;
	p->limits = (struct gg_limits){-1, -1, -1};
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(where, sizeof(where), "%s.%s", list, name);

	for (int i = 0; i < config_setting_length(e); i++) {
		const config_setting_t *s = config_setting_get_elem(e, (unsigned int)i);
		const char *k = config_setting_name(s);
		char key[160];

		snprintf(key, sizeof(key), "%s.%s", where, k);
		if (!strcmp(k, "name"))
			continue;
		if (!strcmp(k, "params")) {
			if (!config_setting_is_group(s))
				return fail(c, s, "%s: must be a group { key = value; }", key);
			if (p->params_json)
				err = fail(c, s, "%s: given twice", key);
			else
				err = params_to_json(c, s, where, &p->params_json);
			if (err)
				goto err_free;
			continue;
		}
		if (!strcmp(k, "check_type"))
			continue; /* gala-gopher's "count": the only kind we run */
		if (!strcmp(k, "memory_mb") || !strcmp(k, "cpu_percent") || !strcmp(k, "pids_max")) {
			int *dst = k[0] == 'm'	 ? &p->limits.memory_mb
				   : k[0] == 'c' ? &p->limits.cpu_percent
						 : &p->limits.pids;
			long long max = k[0] == 'm' ? 1048576 : k[0] == 'c' ? 100000 : 1000000;

			if (config_setting_type(s) != CONFIG_TYPE_INT && config_setting_type(s) != CONFIG_TYPE_INT64) {
				err = fail(c, s, "%s: must be an integer (0: no limit)", key);
				goto err_free;
			}
			if (config_setting_get_int64(s) < 0 || config_setting_get_int64(s) > max) {
				err = fail(c, s, "%s: %lld is out of range [0, %lld] (0: no limit)", key,
					   (long long)config_setting_get_int64(s), max);
				goto err_free;
			}
			*dst = (int)config_setting_get_int64(s);
			continue;
		}
		if (strcmp(k, "command") && strcmp(k, "param") && strcmp(k, "switch") && strcmp(k, "check_cmd") &&
		    strcmp(k, "start_check")) {
			warnf(c, s, "unknown key '%s' ignored", key);
			continue;
		}
		if (config_setting_type(s) != CONFIG_TYPE_STRING)
			return fail(c, s, "%s: must be a string", key);
		v = config_setting_get_string(s);
		if (!strcmp(k, "command"))
			err = resolve_path(c, s, key, v, p->command, sizeof(p->command));
		else if (!strcmp(k, "param"))
			err = copy_str(c, s, key, v, p->param, sizeof(p->param));
		else if (!strcmp(k, "check_cmd") || !strcmp(k, "start_check"))
			err = copy_str(c, s, key, v, p->check_cmd, sizeof(p->check_cmd));
		else if (!strcasecmp(v, "on"))
			p->sw = GG_SWITCH_ON;
		else if (!strcasecmp(v, "off"))
			p->sw = GG_SWITCH_OFF;
		else if (!strcasecmp(v, "auto"))
			p->sw = GG_SWITCH_AUTO;
		else
			err = fail(c, s, "%s: must be \"on\", \"off\" or \"auto\", got \"%s\"", key, v);
		if (err)
			goto err_free;
	}

	if (!p->command[0]) {
		size_t dl = strlen(cfg->global.probes_dir), nl = strlen(p->name);

		if (!native) {
			err = fail(c, e, "%s.command: required for an extend probe", where);
			goto err_free;
		}
		if (dl + 1 + nl >= sizeof(p->command)) {
			err = fail(c, e, "%s: binary path too long", where);
			goto err_free;
		}
		memcpy(p->command, cfg->global.probes_dir, dl);
		p->command[dl] = '/';
		memcpy(p->command + dl + 1, p->name, nl + 1);
	}
	nargs = gg_split_args(p->param, &argv);
	gg_free_args(argv);
	if (nargs < 0) {
		err = fail(c, e, "%s.param: unbalanced quote", where);
		goto err_free;
	}
	if (p->sw != GG_SWITCH_OFF && access(p->command, X_OK) != 0) {
		err = fail(c, e, "%s: \"%s\" is not an executable file", where, p->command);
		goto err_free;
	}
	if (p->sw != GG_SWITCH_OFF && gg_exec_trusted(p->command, why, sizeof(why))) {
		err = fail(c, e, "%s: refusing to run it as root: %s", where, why);
		goto err_free;
	}
	cfg->nprobes++;
	return 0;

err_free:
	free(p->params_json);
	p->params_json = NULL;
	return err;
}

/* Every key's default from the tables above (the struct is zeroed before). */
static void set_defaults(struct gg_config *cfg)
{
	char *base = (char *)cfg;

	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		for (const struct key_spec *k = sections[i].keys; k->name; k++) {
			if (k->def)
				snprintf(base + k->off, k->size, "%s", k->def);
			else if (k->kind == K_INT || k->kind == K_ONOFF || k->kind == K_CHANNEL)
				*(int *)(base + k->off) = (int)k->idef;
		}
	}
}

static int load(struct load_ctx *c, config_t *lc)
{
	config_setting_t *root = config_root_setting(lc);
	int err;

	/* Sections first (global.probes_dir is needed to resolve native probes), then the lists. */
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		config_setting_t *g = config_setting_get_member(root, sections[i].name);

		if (g) {
			err = read_section(c, sections[i].name, sections[i].keys, g);
			if (err)
				return err;
		}
	}
	for (int i = 0; i < config_setting_length(root); i++) {
		const config_setting_t *s = config_setting_get_elem(root, (unsigned int)i);
		const char *name = config_setting_name(s);
		int native = !strcmp(name, "probes");
		int known = native || !strcmp(name, "extend_probes");

		for (size_t j = 0; !known && j < sizeof(sections) / sizeof(sections[0]); j++)
			known = !strcmp(sections[j].name, name);
		if (!known) {
			warnf(c, s, "unknown section '%s' ignored", name);
			continue;
		}
		if (!native && strcmp(name, "extend_probes"))
			continue;
		if (!config_setting_is_list(s) && !config_setting_is_array(s))
			return fail(c, s, "%s: must be a list ( { ... }, ... )", name);
		for (int j = 0; j < config_setting_length(s); j++) {
			err = read_probe(c, config_setting_get_elem(s, (unsigned int)j), native, (unsigned int)j);
			if (err)
				return err;
		}
	}
	if (c->cfg->web_server.ssl_auth && (!c->cfg->web_server.private_key[0] || !c->cfg->web_server.cert_file[0]))
		return fail(c, NULL, "web_server.ssl_auth is on: private_key and cert_file are required");
	if (c->cfg->rest_api_server.ssl_auth &&
	    (!c->cfg->rest_api_server.private_key[0] || !c->cfg->rest_api_server.cert_file[0]))
		return fail(c, NULL, "rest_api_server.ssl_auth is on: private_key and cert_file are required");
	return 0;
}

/* libconfig 1.5 silently truncates an integer literal beyond 32 bits without the L suffix
 * (port = 4294985184 became 17888): find such a literal in the text first. 1 and its line when found. */
#define CONFIG_TEXT_MAX (4u << 20) /* scanned for truncated integers; larger files are not expected */

static int int_literal_overflows(const char *t, int *ret_line, char *lit, size_t litlen)
{
	int line = 1;

	for (const char *p = t; *p; p++) {
		if (*p == '\n') {
			line++;
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (p[1] && p[1] != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
				line += *p == '\n';
			if (!*p)
				break;
			p++;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				line += *p == '\n';
			}
			if (!*p)
				break;
		} else if (isalpha((unsigned char)*p) || *p == '_') {
			while (isalnum((unsigned char)p[1]) || p[1] == '_' || p[1] == '-' || p[1] == '*')
				p++;
		} else if (isdigit((unsigned char)*p)) {
			const char *b = p;
			int neg = b > t && b[-1] == '-';
			unsigned long long v;

			if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
				for (p += 2; isxdigit((unsigned char)p[1]); p++)
					;
				continue;
			}
			while (isdigit((unsigned char)p[1]))
				p++;
			if (p[1] == '.' || p[1] == 'e' || p[1] == 'E') { /* a float: libconfig reads it as such */
				while (p[1] && (isdigit((unsigned char)p[1]) || strchr(".eE+-", p[1])))
					p++;
				continue;
			}
			if (p[1] == 'L')
				continue;
			errno = 0;
			v = strtoull(b, NULL, 10);
			if (errno || v > (neg ? 2147483648ull : 2147483647ull)) {
				snprintf(lit, litlen, "%s%.*s", neg ? "-" : "", (int)(p - b + 1), b);
				*ret_line = line;
				return 1;
			}
		}
	}
	return 0;
}

static int load_common(struct gg_config *cfg, const char *name, const char *text, char *err, size_t errlen,
		       gg_config_warn_fn warn)
{
	struct load_ctx c = {.cfg = cfg, .err = err, .errlen = errlen, .warn = warn, .file = name};
	config_t lc;
	int ok, ret;
	char *slash;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	snprintf(cfg->dir, sizeof(cfg->dir), "%s", name);
	slash = strrchr(cfg->dir, '/');
	if (slash && slash != cfg->dir)
		*slash = 0;
	else if (slash)
		cfg->dir[1] = 0;
	else
		snprintf(cfg->dir, sizeof(cfg->dir), ".");
	{
		/* Paths relative to the file become absolute: probes are run, and paths compared, by them. */
		char *abs = realpath(cfg->dir, NULL);

		if (abs && strlen(abs) < sizeof(cfg->dir))
			memcpy(cfg->dir, abs, strlen(abs) + 1);
		free(abs);
	}
	set_defaults(cfg);

	config_init(&lc);
	ok = text ? config_read_string(&lc, text) : config_read_file(&lc, name);
	if (ok != CONFIG_TRUE) {
		if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
			snprintf(err, errlen, "%s: cannot read: %s", name, strerror(errno));
		else
			snprintf(err, errlen, "%s:%d: syntax error: %s", name, config_error_line(&lc),
				 config_error_text(&lc));
		config_destroy(&lc);
		return -EINVAL;
	}
	{
		char *buf = NULL, lit[64];
		const char *t = text;
		int line;

		if (!t) {
			FILE *f = fopen(name, "re");

			buf = calloc(1, CONFIG_TEXT_MAX + 1);
			if (f && buf)
				(void)fread(buf, 1, CONFIG_TEXT_MAX, f);
			if (f)
				fclose(f);
			t = buf;
		}
		if (t && int_literal_overflows(t, &line, lit, sizeof(lit))) {
			snprintf(err, errlen, "%s:%d: integer %s does not fit in 32 bits (it would be truncated)", name,
				 line, lit);
			free(buf);
			config_destroy(&lc);
			return -EINVAL;
		}
		free(buf);
	}
	ret = load(&c, &lc);
	config_destroy(&lc);
	if (ret)
		gg_config__fini(cfg);
	return ret;
}

int gg_config__load(struct gg_config *cfg, const char *path, char *err, size_t errlen, gg_config_warn_fn warn)
{
	return load_common(cfg, path, NULL, err, errlen, warn);
}

int gg_config__load_buf(struct gg_config *cfg, const char *name, const char *text, char *err, size_t errlen,
			gg_config_warn_fn warn)
{
	return load_common(cfg, name, text, err, errlen, warn);
}

void gg_config__fini(struct gg_config *cfg)
{
	for (unsigned int i = 0; i < cfg->nprobes; i++) {
		free(cfg->probes[i].params_json);
		cfg->probes[i].params_json = NULL;
	}
	cfg->nprobes = 0;
}

int gg_split_args(const char *s, char ***ret_argv)
{
	size_t cap = 8, n = 0, len = strlen(s);
	char **argv = calloc(cap, sizeof(*argv));
	char *word = malloc(len + 1);

	if (!argv || !word)
		goto err_nomem;
	while (*s) {
		size_t w = 0;
		char quote = 0;

		while (*s && isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		while (*s && (quote || !isspace((unsigned char)*s))) {
			if (!quote && (*s == '\'' || *s == '"'))
				quote = *s;
			else if (quote && *s == quote)
				quote = 0;
			else
				word[w++] = *s;
			s++;
		}
		if (quote) {
			free(word);
			gg_free_args(argv);
			return -EINVAL;
		}
		word[w] = 0;
		if (n + 2 > cap) {
			char **nv = realloc(argv, cap * 2 * sizeof(*argv));

			if (!nv)
				goto err_nomem;
			memset(nv + cap, 0, cap * sizeof(*argv));
			argv = nv;
			cap *= 2;
		}
		argv[n] = strdup(word);
		if (!argv[n])
			goto err_nomem;
		n++;
	}
	free(word);
	*ret_argv = argv;
	return (int)n;

err_nomem:
	free(word);
	gg_free_args(argv);
	return -ENOMEM;
}

void gg_free_args(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}
