/* probe_names.h - what the REST API knows about each probe: REST name <-> binary, sub-probes,
 * parameters (type, default, range), accepted snooper kinds; and the request-body decoder and the
 * validator that turns a PUT body into a normalized configuration (pure code: no supervisor state). */
#ifndef GG_PROBE_NAMES_H
#define GG_PROBE_NAMES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define GG_REST_JSON_MAX 2048u /* characters of configuration JSON per request (seed: 2048) */
/* Bytes of request body: the URL-encoded form of a maximal JSON (every character as %XX) + "json=". */
#define GG_REST_WIRE_MAX (3u * GG_REST_JSON_MAX + 16u)

/* Bounds of what one PUT may ask for. */
#define GG_REST_SUBPROBES_MAX  16u
#define GG_REST_PROC_IDS_MAX   64u
#define GG_REST_PROC_NAMES_MAX 32u
#define GG_REST_PODS_MAX       32u
#define GG_REST_CONTAINERS_MAX 32u
#define GG_REST_GAUSSDB_MAX    8u
#define GG_REST_CMDLINE_MAX    256u
#define GG_REST_COMM_MAX       15u     /* TASK_COMM_LEN - 1 */
#define GG_REST_PID_MAX	       4194304 /* PID_MAX_LIMIT */

/* Snooper kinds a probe accepts. */
enum gg_snoop_kind {
	GG_SNOOP_PROC_ID = 1u << 0,
	GG_SNOOP_PROC_NAME = 1u << 1,
	GG_SNOOP_POD_ID = 1u << 2,
	GG_SNOOP_CONTAINER_ID = 1u << 3,
	GG_SNOOP_GAUSSDB = 1u << 4, /* openGauss instances: {dbip, dbport, dbname, dbuser, dbpass} */
};
#define GG_SNOOP_ALL  (GG_SNOOP_PROC_ID | GG_SNOOP_PROC_NAME | GG_SNOOP_POD_ID | GG_SNOOP_CONTAINER_ID)
#define GG_SNOOP_PROC (GG_SNOOP_PROC_ID | GG_SNOOP_PROC_NAME)

enum gg_param_type {
	GG_PT_INT,	 /* integer in [min, max] (or 0 when zero_off) */
	GG_PT_BOOL,	 /* 0 or 1 (true/false accepted) */
	GG_PT_ENUM,	 /* one string of choices */
	GG_PT_ENUM_LIST, /* a list of strings of choices (a single string is taken as a list of one) */
	GG_PT_HOSTPORT,	 /* "host:port" or "" (off) */
	GG_PT_NAME,	 /* a device name: letters, digits, '_', '-', '.', ':'; at most 63 characters; may be "" */
	GG_PT_OUT_DIR,	 /* a directory the probe writes to: confined under the configured output base */
	GG_PT_ELF_PATH,	 /* an executable the probe reads: confined under the configured ELF base directories */
};

/* One runtime parameter (seed 000, "Configuring Probe Runtime Parameters"). */
struct gg_param_spec {
	const char *name;
	enum gg_param_type type;
	const char *probes;	    /* REST names separated by spaces, or "*" for all */
	long long def, min, max;    /* GG_PT_INT, GG_PT_BOOL */
	int zero_off;		    /* 0 is accepted besides [min, max] ("0 = off") */
	const char *def_str;	    /* default of string types (lists: comma separated) */
	const char *const *choices; /* GG_PT_ENUM, GG_PT_ENUM_LIST */
	const char *unit;
	int restart; /* a change needs a fresh probe process (it chooses what is attached) */
};

/* A command-line flag a parameter maps to when a probe is restarted with new flags. */
struct gg_param_flag {
	const char *param;
	const char *flag;
};

/* One probe the REST API manages. */
struct gg_probe_def {
	const char *rest_name;
	const char *bin;		   /* binary name in global.probes_dir */
	const char *const *subprobes;	   /* NULL-terminated, NULL when the probe has none */
	unsigned int snoopers;		   /* enum gg_snoop_kind bits */
	const char *check_cmd;		   /* built-in start condition, or NULL */
	const char *subprobe_flag;	   /* flag taking the comma-joined sub-probe list on a restart, or NULL */
	const struct gg_param_flag *flags; /* param -> flag on a restart; NULL-terminated, or NULL */
};

unsigned int gg_probe_defs__count(void);
const struct gg_probe_def *gg_probe_defs__at(unsigned int i);
const struct gg_probe_def *gg_probe_defs__find(const char *rest_name);
const struct gg_probe_def *gg_probe_defs__find_bin(const char *bin);
/* The parameter spec `name` as it applies to probe def (per-probe variants first); NULL if the probe
 * does not take it. */
const struct gg_param_spec *gg_param_spec__find(const struct gg_probe_def *def, const char *name);
unsigned int gg_param_specs__count(void);
const struct gg_param_spec *gg_param_specs__at(unsigned int i);
/* Whether spec applies to probe def. */
int gg_param_spec__applies(const struct gg_param_spec *spec, const struct gg_probe_def *def);

/*
 * Decode a PUT body into configuration JSON text (malloc'd, NUL-terminated, in *ret_json).
 * Accepted: `json=<url-encoded JSON>` (curl --data-urlencode), `json=<raw JSON>` (curl -d), and a
 * raw JSON object (any Content-Type; application/json always means raw). Returns 0, or an HTTP
 * status (400 malformed, 413 JSON longer than GG_REST_JSON_MAX) with a message in err.
 */
int gg_rest_body__decode(const char *body, size_t len, const char *content_type, char **ret_json, char *err,
			 size_t errlen);

/* What the validator needs to know beyond the table. */
struct gg_rest_check_ctx {
	const char *registered_bin; /* absolute path of the probe's binary */
	const char *check_cmd;	    /* the configured start condition ("" when none) */
	const char *out_base;	    /* svg_dir, flame_dir must resolve under this directory */
	const char *elf_bases;	    /* elf_path must resolve under one of these (':' separated) */
	int extend;		    /* the probe is an extend probe: no control channel, so no snoopers */
};

/*
 * Parse (comments allowed: // and block comments) and validate configuration JSON for probe def.
 * All or nothing: returns 0 and a normalized object holding only the parts present ({"cmd": {"bin",
 * "check_cmd", "probe": [...]}, "snoopers": {...}, "params": {...}, "state": "..."}) in *ret, or an
 * HTTP status (400 invalid, 403 refused: cmd.bin, cmd.check_cmd, a path escaping its base) with a
 * message naming the field (and the allowed range) in err; *ret is untouched then.
 */
int gg_rest_conf__check(const struct gg_probe_def *def, const struct gg_rest_check_ctx *ctx, const char *json,
			cJSON **ret, char *err, size_t errlen);

/*
 * Confine a path: absolute, no "." or ".." component, and once existing components are resolved
 * (symlinks included) under one of the ':' separated bases (also resolved). must_exist: the path
 * must exist (as a regular file when want_file). 0, -EINVAL (not absolute, bad component, too long),
 * -EACCES (outside every base), -ENOENT (must exist and does not; or no base exists).
 */
int gg_path__confine(const char *path, const char *bases, int must_exist, int want_file);

#endif
