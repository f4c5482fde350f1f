/* ctrl_msg.h - the one control message: the configuration the supervisor sends a probe (sub-probes,
 * parameters, resolved scope) as a C value, and its JSON encoding on the control channel. */
#ifndef GG_CTRL_MSG_H
#define GG_CTRL_MSG_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gg_common.h" /* GG_SCOPE_TGID_MAX, GG_SCOPE_CGRP_MAX: what the probes' BPF scope maps hold */

/* A monitoring scope: everything, or a set of tgids and cgroup v2 ids (the supervisor's resolved
 * snoopers, or a probe's --pid/--comm). The supervisor keeps the sets sorted. */
struct gg_scope {
	int all;       /* 1: no filter (the sets are ignored) */
	int truncated; /* more matched than the sets hold (the rest is left out) */
	uint32_t ntgid;
	uint32_t ncgrp;
	uint32_t tgid[GG_SCOPE_TGID_MAX];
	uint64_t cgrp[GG_SCOPE_CGRP_MAX]; /* cgroup v2 ids: inode numbers of the cgroup directories */
};

/* Everything in scope, empty sets. */
void gg_scope__init(struct gg_scope *s);
int gg_scope__equal(const struct gg_scope *a, const struct gg_scope *b);
/* {"all": bool, "pids": [...], "cgroup_ids": [...]} (+ "truncated": true when set); NULL on ENOMEM. */
cJSON *gg_scope__to_json(const struct gg_scope *s);
/*
 * From that object (pids and cgroup ids as positive JSON integers or decimal strings; without "all",
 * everything unless a set is given). 0 and *ret filled; -EINVAL when malformed, -E2BIG when a set is
 * larger than its map (ret untouched either way).
 */
int gg_scope__from_json(const cJSON *scope, struct gg_scope *ret);

#define GG_CTRL_SUBPROBES_MAX 32u
#define GG_CTRL_SUBPROBE_LEN  32u /* bytes of a sub-probe name, NUL included */

/*
 * What a probe is told, version by version. Every part is optional: what is absent keeps the probe's
 * command-line value (the REST interface is stateless: each version is the whole configuration).
 * JSON: {"probe": ["a", ...], "params": {...}, "snoopers": {...}, "scope": {...}}; the decoder also
 * takes the sub-probes as {"cmd": {"probe": [...]}} (a REST body as typed).
 */
struct gg_ctrl_msg {
	unsigned int nsubprobes; /* 0: keep the command line's sub-probes */
	char subprobes[GG_CTRL_SUBPROBES_MAX][GG_CTRL_SUBPROBE_LEN];
	cJSON *params;	 /* an object, or NULL; owned (gg_ctrl_msg__fini frees it) */
	cJSON *snoopers; /* the REST API's normalized snoopers, or NULL; owned; for the record only */
	int has_scope;
	struct gg_scope scope;
};

/* An empty message (nothing set). */
void gg_ctrl_msg__init(struct gg_ctrl_msg *m);
/* Free what init/decode/the caller attached; the message is empty again. Accepts NULL. */
void gg_ctrl_msg__fini(struct gg_ctrl_msg *m);
/* JSON text (malloc'd, caller frees) holding only the parts set. 0 or -ENOMEM. */
int gg_ctrl_msg__encode(const struct gg_ctrl_msg *m, char **ret_json);
/*
 * Parse JSON text into *ret (initialised here; gg_ctrl_msg__fini it whatever the result). 0, or
 * -EINVAL (not an object; "probe" not a list of names; "params" not an object or null; bad "scope")
 * or -E2BIG (more sub-probes or scope entries than fit) with a message in err (may be NULL).
 */
int gg_ctrl_msg__decode(const char *json, struct gg_ctrl_msg *ret, char *err, size_t errlen);

#endif
