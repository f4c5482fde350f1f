/* validate.h - what the REST API knows about each probe (probe_table.c: the probes' contracts) and
 * the request-body decoder and the validator that turns a PUT body into a normalized configuration
 * (pure code: no supervisor state). */
#ifndef GG_REST_VALIDATE_H
#define GG_REST_VALIDATE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "contract.h"
#include "ctrl_msg.h"

#define GG_REST_JSON_MAX 2048u /* characters of configuration JSON per request (seed: 2048) */
/* Bytes of request body: the URL-encoded form of a maximal JSON (every character as %XX) + "json=". */
#define GG_REST_WIRE_MAX (3u * GG_REST_JSON_MAX + 16u)

/* Bounds of what one PUT may ask for. */
#define GG_REST_SUBPROBES_MAX	   16u
#define GG_REST_PROC_IDS_MAX	   64u
#define GG_REST_PROC_NAMES_MAX	   32u
#define GG_REST_PODS_MAX	   32u
#define GG_REST_CONTAINERS_MAX	   32u
#define GG_REST_CONTAINER_NAME_MAX 128u /* characters of a container_name entry */
#define GG_REST_GAUSSDB_MAX	   8u
#define GG_REST_CMDLINE_MAX	   256u
#define GG_REST_COMM_MAX	   15u	   /* TASK_COMM_LEN - 1 */
#define GG_REST_COMM_RE_MAX	   64u	   /* characters of a proc_name.comm pattern */
#define GG_REST_COMM_RE_BOUND	   16u	   /* largest count of an interval ({n,m}) in a comm pattern */
#define GG_REST_COMM_RE_BRACES	   2u	   /* intervals in a comm pattern */
#define GG_REST_PID_MAX		   4194304 /* PID_MAX_LIMIT */
#define GG_REST_LABELS_MAX	   10u	   /* custom_labels, and pod_labels (gala-gopher's bound) */
#define GG_REST_LABEL_NAME_MAX	   63u	   /* characters of a label name (a .meta field name) */
#define GG_REST_LABEL_VALUE_MAX	   256u	   /* bytes of a custom label's value */
#define GG_REST_POD_LABEL_KEY_MAX  317u	   /* a Kubernetes label key: 253 (prefix) + '/' + 63 (name) */

/* One probe the REST API manages: its contract (ipc/contract.h) as the validator reads it. */
struct gg_probe_def {
	const char *rest_name;
	const char *bin;		    /* binary name in global.probes_dir */
	const char *const *subprobes;	    /* the names REST offers, NULL-terminated; NULL when the probe has none */
	unsigned int snoopers;		    /* enum gg_snoop_kind bits */
	const char *check_cmd;		    /* built-in start condition, or NULL */
	const char *subprobe_flag;	    /* flag taking the comma-joined sub-probe list on a restart, or NULL */
	const struct gg_contract *contract; /* parameters (in the order "allowed" lists them), extend_params */
};

unsigned int gg_probe_defs__count(void);
const struct gg_probe_def *gg_probe_defs__at(unsigned int i);
const struct gg_probe_def *gg_probe_defs__find(const char *rest_name);
const struct gg_probe_def *gg_probe_defs__find_bin(const char *bin);
/* The parameter `name` of probe def; NULL if the probe does not take it. */
const struct gg_param_spec *gg_param_spec__find(const struct gg_probe_def *def, const char *name);

/* A runtime parameter gala-gopher knows (seed 000's table): its range as gala-gopher takes it and the
 * seed's "Supported Monitoring Scope" (REST names). */
struct gg_gala_param {
	struct gg_param_spec spec;
	const char *scope;
};
unsigned int gg_gala_params__count(void);
const struct gg_gala_param *gg_gala_params__at(unsigned int i);
/* NULL when gala-gopher has no parameter of that name. */
const struct gg_gala_param *gg_gala_params__find(const char *name);

/*
 * Decode a PUT body into configuration JSON text (malloc'd, NUL-terminated, in *ret_json).
 * Accepted: `json=<url-encoded JSON>` (curl --data-urlencode), `json=<raw JSON>` (curl -d), and a
 * raw JSON object (any Content-Type; application/json always means raw). Returns 0, or an HTTP
 * status (400 malformed, 413 JSON longer than GG_REST_JSON_MAX) with a message in err.
 */
int gg_rest_body__decode(const char *body, size_t len, const char *content_type, char **ret_json, char *err,
			 size_t errlen);

/* proc_name.comm is a POSIX extended regular expression matched anywhere in the 15-character comm, as
 * gala-gopher matches it. Bounded so that no pattern can stall the supervisor's scan: at most
 * GG_REST_COMM_RE_MAX characters, no back-references (the only construct glibc's matcher backtracks
 * on), at most GG_REST_COMM_RE_BRACES intervals of counts up to GG_REST_COMM_RE_BOUND (glibc copies
 * the repeated expression count times), and it must compile. 0, or -EINVAL with the reason in why. */
int gg_comm_pattern__check(const char *pat, char *why, size_t whylen);

/* What the validator needs to know beyond the table. */
struct gg_rest_check_ctx {
	const char *registered_bin; /* absolute path of the probe's binary */
	const char *check_cmd;	    /* the configured start condition ("" when none) */
	const char *out_base;	    /* svg_dir, flame_dir must resolve under this directory */
	const char *elf_bases;	    /* elf_path must resolve under one of these (':' separated) */
	int extend;		    /* the probe is an extend probe: no control channel, so no snoopers */
	cJSON *warnings;	    /* or NULL: an array that receives what was accepted and has no effect */
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
