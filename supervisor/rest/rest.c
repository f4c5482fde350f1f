/* rest.c - the REST API: PUT /<probe> validates all or nothing, persists, then applies (start/stop,
 * live configuration over the control channel, or a restart with new flags); GET /<probe> and
 * GET /probes report configuration and run-time facts; a timer keeps every probe's scope current. */
#include "rest.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "ident_export.h"
#include "persist.h"
#include "validate.h"
#include "profile_query.h"
#include "snoopers.h"
#include "supervisor.h"
#include "webui.h"

#define PERSIST_MAX (64u * 1024u) /* a stored configuration is at most a few KiB */
#define MSG_MAX	    1024

/* The REST side of one probe of the table. */
struct rest_probe {
	const struct gg_probe_def *def;
	struct gg_probe *p; /* NULL until configured or created */
	cJSON *conf;	    /* stored configuration (normalized, merged), NULL when never PUT */
	int has_snoopers;   /* conf has a "snoopers" or a "blacklist" part: the probe gets a "scope" */
	struct gg_snoopers sn;
	struct gg_snoopers bl; /* the blacklist */
	struct gg_scope scope;
	uint64_t scope_changes;
};

struct gg_rest {
	struct gg_sup *sup;
	struct gg_http_server *srv;
	int port;
	char error[256];
	char state_dir[PATH_MAX];
	uv_timer_t scan;
	int scan_init, closed;
	unsigned int nprobes;
	struct rest_probe *probes;
	/* counters */
	uint64_t puts_ok, puts_failed, gets, scans, persist_errors;
	struct gg_scan_stats last_scan;
	uint64_t last_scan_us;
};

static struct rest_probe *find_rest_probe(struct gg_rest *r, const char *name)
{
	for (unsigned int i = 0; i < r->nprobes; i++) {
		if (!strcmp(r->probes[i].def->rest_name, name))
			return &r->probes[i];
	}
	return NULL;
}

/* The configured probe that a REST name manages: one named like it (gala-gopher's extend_probes
 * use REST names), else a native one named after its binary, else one whose command is the binary. */
static struct gg_probe *find_configured(struct gg_sup *sup, const struct gg_probe_def *def)
{
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		if (!strcmp(sup->probes[i].conf->name, def->rest_name))
			return &sup->probes[i];
	}
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		if (sup->probes[i].conf->native && !strcmp(sup->probes[i].conf->name, def->bin))
			return &sup->probes[i];
	}
	for (unsigned int i = 0; i < sup->nprobes; i++) {
		const char *c = sup->probes[i].conf->command, *b = strrchr(c, '/');

		if (!strcmp(b ? b + 1 : c, def->bin))
			return &sup->probes[i];
	}
	return NULL;
}

static void registered_bin(struct gg_rest *r, const struct rest_probe *rp, char *buf, size_t len)
{
	int n;

	if (rp->p)
		n = snprintf(buf, len, "%s", rp->p->conf->command);
	else
		n = snprintf(buf, len, "%s/%s", r->sup->cfg.global.probes_dir, rp->def->bin);
	if (n < 0 || (size_t)n >= len)
		buf[0] = '\0'; /* too long: names nothing (and nothing is executable) */
}

static const char *configured_check(const struct rest_probe *rp)
{
	if (rp->p)
		return rp->p->conf->check_cmd;
	return rp->def->check_cmd ? rp->def->check_cmd : "";
}

/* What checking a configuration of rp needs beyond its body; bin receives the registered binary. */
static struct gg_rest_check_ctx check_ctx(struct gg_rest *r, const struct rest_probe *rp, char *bin, size_t len)
{
	registered_bin(r, rp, bin, len);
	return (struct gg_rest_check_ctx){
		.registered_bin = bin,
		.check_cmd = configured_check(rp),
		.out_base = r->sup->cfg.rest.output_base_dir,
		.elf_bases = r->sup->cfg.rest.elf_base_dirs,
		.extend = rp->p && !rp->p->conf->native,
	};
}

/* Create the supervisor's entry for a probe that is not in the configuration file. */
static int ensure_entry(struct gg_rest *r, struct rest_probe *rp)
{
	struct gg_sup *sup = r->sup;
	struct gg_probe_conf *c;
	struct gg_probe *p;

	if (rp->p)
		return 0;
	if (sup->cfg.nprobes >= GG_PROBES_MAX)
		return -ENOSPC;
	c = &sup->cfg.probes[sup->cfg.nprobes];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", rp->def->bin);
	if (snprintf(c->command, sizeof(c->command), "%s/%s", sup->cfg.global.probes_dir, rp->def->bin) >=
	    (int)sizeof(c->command))
		return -ENAMETOOLONG;
	snprintf(c->check_cmd, sizeof(c->check_cmd), "%s", rp->def->check_cmd ? rp->def->check_cmd : "");
	c->sw = GG_SWITCH_OFF;
	c->native = 1;
	c->limits = (struct gg_limits){-1, -1, -1}; /* global.probe_* */
	p = gg_probes__add(sup, c);
	sup->cfg.nprobes++; /* the entry holds c even when it failed half-way (it is freed with the rest) */
	if (!p)
		return -errno;
	rp->p = p;
	gg_info("rest: probe %s (%s) added at run time", rp->def->rest_name, c->command);
	return 0;
}

/* ---- what a probe is sent --------------------------------------------------------------------------- */

/* The "params" part in force: the REST one when given, else the configuration file's. */
static cJSON *effective_params(const struct rest_probe *rp)
{
	const cJSON *rest = rp->conf ? cJSON_GetObjectItemCaseSensitive(rp->conf, "params") : NULL;
	cJSON *file, *params;

	if (rest)
		return cJSON_Duplicate(rest, 1);
	if (!rp->p || !rp->p->conf->params_json)
		return NULL;
	file = cJSON_Parse(rp->p->conf->params_json);
	params = cJSON_DetachItemFromObjectCaseSensitive(file, "params");
	cJSON_Delete(file);
	return params;
}

static const cJSON *conf_subprobes(const struct rest_probe *rp)
{
	const cJSON *cmd = rp->conf ? cJSON_GetObjectItemCaseSensitive(rp->conf, "cmd") : NULL;

	return cmd ? cJSON_GetObjectItemCaseSensitive(cmd, "probe") : NULL;
}

/* The control message (ipc/ctrl_msg.h) in force for rp, encoded: only the parts that are set. */
static char *build_ctrl_json(const struct rest_probe *rp)
{
	static struct gg_ctrl_msg m; /* large (the scope sets): not on the stack; the loop thread only */
	const cJSON *sub = conf_subprobes(rp), *it;
	char *txt = NULL;

	gg_ctrl_msg__init(&m);
	cJSON_ArrayForEach(it, sub)
	{
		const char *name = cJSON_GetStringValue(it);

		/* validated names (GG_REST_SUBPROBES_MAX <= GG_CTRL_SUBPROBES_MAX): the checks never drop one */
		if (name && strlen(name) < GG_CTRL_SUBPROBE_LEN && m.nsubprobes < GG_CTRL_SUBPROBES_MAX)
			snprintf(m.subprobes[m.nsubprobes++], GG_CTRL_SUBPROBE_LEN, "%s", name);
	}
	m.params = effective_params(rp);
	if (rp->conf && rp->has_snoopers) {
		const cJSON *sn = cJSON_GetObjectItemCaseSensitive(rp->conf, "snoopers");

		m.snoopers = sn ? cJSON_Duplicate(sn, 1) : cJSON_CreateObject();
		m.has_scope = 1;
		m.scope = rp->scope;
	}
	(void)gg_ctrl_msg__encode(&m, &txt);
	gg_ctrl_msg__fini(&m);
	return txt;
}

static int push_arg(char ***v, unsigned int *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

static void join_values(const cJSON *v, char *buf, size_t len)
{
	const cJSON *e;
	size_t n = 0;

	buf[0] = '\0';
	if (cJSON_IsNumber(v)) {
		snprintf(buf, len, "%lld", (long long)v->valuedouble);
	} else if (cJSON_IsString(v)) {
		snprintf(buf, len, "%s", v->valuestring);
	} else if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(e, v)
		{
			if (cJSON_IsString(e) && n + 1 < len)
				n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", e->valuestring);
		}
	}
}

/* The flags a restart of this probe gets on top of the configuration file's param (the probe's
 * table entry maps parameters and sub-probes to flags). NULL when there are none. */
static char **build_extra_argv(const struct rest_probe *rp)
{
	const struct gg_probe_def *def = rp->def;
	cJSON *params = effective_params(rp);
	const cJSON *sub = conf_subprobes(rp);
	char **v = NULL, val[1024];
	unsigned int n = 0;
	int err = 0;

	for (const char *const *pn = def->contract->extend_params; pn && *pn && !err; pn++) {
		const struct gg_param_spec *s = gg_param_spec__find(def, *pn);
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(params, *pn);

		if (!x || !s || !s->flag)
			continue;
		join_values(x, val, sizeof(val));
		err = push_arg(&v, &n, s->flag);
		if (!err)
			err = push_arg(&v, &n, val);
	}
	if (!err && def->subprobe_flag && sub && cJSON_GetArraySize(sub) > 0) {
		join_values(sub, val, sizeof(val));
		err = push_arg(&v, &n, def->subprobe_flag);
		if (!err)
			err = push_arg(&v, &n, val);
	}
	cJSON_Delete(params);
	if (err) {
		gg_free_args(v);
		return NULL;
	}
	return v;
}

static int argv_equal(char **a, char **b)
{
	for (; a && b && *a && *b; a++, b++) {
		if (strcmp(*a, *b))
			return 0;
	}
	return (!a || !*a) && (!b || !*b);
}

/* A parameter that chooses what the probe attaches to changed. */
static int restart_param_changed(const struct rest_probe *rp, const cJSON *old_params, const cJSON *new_params)
{
	for (unsigned int i = 0; i < rp->def->contract->nparams; i++) {
		const struct gg_param_spec *s = &rp->def->contract->params[i];
		const cJSON *a, *b;

		if (!s->restart)
			continue;
		a = cJSON_GetObjectItemCaseSensitive(old_params, s->name);
		b = cJSON_GetObjectItemCaseSensitive(new_params, s->name);
		if ((!a) != (!b) || (a && !cJSON_Compare(a, b, 1)))
			return 1;
	}
	return 0;
}

/* container_name snoopers: the identity resolver's name of the container of pid (scan_opts). */
static const char *scan_container_name(void *ctx, uint32_t pid)
{
	struct gg_sup *sup = ctx;
	const struct gg_ident *id;

	if (!sup->exp || !sup->exp->ident)
		return NULL;
	id = gg_identity__lookup(gg_ident_export__identity(sup->exp->ident), pid, gg_now_ms());
	return id->v[GG_IDENT_CONTAINER_NAME];
}

static const struct gg_scan_opts *scan_opts(struct gg_rest *r, struct gg_scan_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->container_name = scan_container_name;
	o->ctx = r->sup;
	return o;
}

static void resolve_one(struct gg_rest *r, struct rest_probe *rp)
{
	const struct gg_snoopers *set = &rp->sn, *bl = &rp->bl;
	struct gg_scan_stats st;
	struct gg_scan_opts o;

	if (!rp->has_snoopers)
		return;
	scan_opts(r, &o);
	o.exclude = &bl;
	if (gg_snoopers__resolve(&set, 1, &rp->scope, &o, &st) == 0)
		r->last_scan = st;
}

/* snoopers.custom_labels and snoopers.pod_labels (validated) onto the probe's series. */
static void apply_labels(struct gg_rest *r, struct rest_probe *rp)
{
	const cJSON *sn = rp->conf ? cJSON_GetObjectItemCaseSensitive(rp->conf, "snoopers") : NULL, *e;
	struct gg_ext_labels *l;

	if (!r->sup->exp || !r->sup->exp->ident) {
		if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sn, "custom_labels")) > 0 ||
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(sn, "pod_labels")) > 0)
			gg_warn("rest: probe %s: custom_labels and pod_labels are not added with identity.enabled = "
				"off",
				rp->def->rest_name);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		gg_error("rest: probe %s: out of memory for its labels", rp->def->rest_name);
		return;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "custom_labels"))
	{
		if (l->ncustom >= GG_EXT_LABELS_MAX || !cJSON_IsString(e))
			continue;
		snprintf(l->custom_name[l->ncustom], sizeof(l->custom_name[0]), "%s", e->string);
		snprintf(l->custom_value[l->ncustom], sizeof(l->custom_value[0]), "%s", e->valuestring);
		l->ncustom++;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "pod_labels"))
	{
		if (l->npod >= GG_EXT_LABELS_MAX || !cJSON_IsString(e) ||
		    gg_pod_label__name(e->valuestring, l->pod_name[l->npod], sizeof(l->pod_name[0])))
			continue;
		snprintf(l->pod_key[l->npod], sizeof(l->pod_key[0]), "%s", e->valuestring);
		l->npod++;
	}
	if (gg_ident_export__set_labels(r->sup->exp->ident, rp->p, l))
		gg_error("rest: probe %s: out of memory for its labels", rp->def->rest_name);
	free(l);
}

/* Send the probe what it should run with now (when it changed). */
static void push_config(struct rest_probe *rp)
{
	char *json;

	if (!rp->p)
		return;
	json = build_ctrl_json(rp);
	if (!json)
		return;
	if (rp->p->cfg_json && !strcmp(rp->p->cfg_json, json) && rp->p->cfg_version) {
		free(json);
		return;
	}
	gg_probe__set_config(rp->p, json);
}

/*
 * Make the probe match rp->conf (old_conf: what it was; initial: restoring at start-up, before the
 * probes start). Native probes get params, sub-probes and scope live; a change of a parameter that
 * chooses what is attached (spec->restart) restarts them; extend probes have no control channel and
 * restart whenever their flags change.
 */
static void apply(struct gg_rest *r, struct rest_probe *rp, const cJSON *old_conf, int initial)
{
	struct gg_probe *p = rp->p;
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(rp->conf, "state");
	cJSON *old_params, *new_params;
	char **extra = build_extra_argv(rp);
	int restart = 0, native = p->conf->native;

	rp->has_snoopers = cJSON_GetObjectItemCaseSensitive(rp->conf, "snoopers") != NULL ||
			   cJSON_GetObjectItemCaseSensitive(rp->conf, "blacklist") != NULL;
	gg_snoopers__from_json(cJSON_GetObjectItemCaseSensitive(rp->conf, "snoopers"), &rp->sn);
	gg_snoopers__from_json(cJSON_GetObjectItemCaseSensitive(rp->conf, "blacklist"), &rp->bl);
	if (rp->has_snoopers)
		resolve_one(r, rp);
	else
		gg_scope__init(&rp->scope);
	apply_labels(r, rp);

	/* the parameters in force before (old_conf, else the file's) and now */
	{
		cJSON *saved = rp->conf;

		rp->conf = (cJSON *)old_conf;
		old_params = effective_params(rp);
		rp->conf = saved;
		new_params = effective_params(rp);
	}
	if (native)
		restart = restart_param_changed(rp, old_params, new_params);
	else
		restart = !argv_equal(extra, p->extra_argv);
	cJSON_Delete(old_params);
	cJSON_Delete(new_params);
	gg_free_args(p->extra_argv);
	p->extra_argv = extra;
	if (native)
		push_config(rp);

	if (state && !strcmp(state->valuestring, "stopped")) {
		p->desired = GG_DESIRED_STOPPED;
		if (!initial)
			gg_probe__stop(p);
		return;
	}
	if (state && !strcmp(state->valuestring, "running")) {
		p->desired = GG_DESIRED_RUNNING;
		if (!initial && !gg_probe__active(p)) {
			gg_probe__start(p);
			return;
		}
	}
	if (!initial && restart && p->state == GG_PS_RUNNING) {
		gg_info("rest: probe %s restarts to apply its new configuration", p->conf->name);
		gg_probe__logf(p, "restarting with new flags (REST configuration)");
		gg_probe__restart(p);
	}
}

/* ---- replies ---------------------------------------------------------------------------------------- */

static void reply_json(struct gg_http_response *resp, unsigned int status, cJSON *o)
{
	resp->status = status;
	resp->content_type = "application/json";
	resp->body = o ? cJSON_PrintUnformatted(o) : NULL;
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	cJSON_Delete(o);
	if (!resp->body)
		resp->status = 500;
}

static void reply(struct gg_http_response *resp, unsigned int status, const char *msg)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "result", status == 200 ? "success" : "failed");
	cJSON_AddStringToObject(o, "message", msg);
	reply_json(resp, status, o);
}

static int available(struct gg_rest *r, const struct rest_probe *rp)
{
	char bin[PATH_MAX];

	registered_bin(r, rp, bin, sizeof(bin));
	return access(bin, X_OK) == 0;
}

static cJSON *runtime_json(struct gg_rest *r, const struct rest_probe *rp)
{
	const struct gg_probe *p = rp->p;
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "available", available(r, rp));
	if (!p) {
		cJSON_AddStringToObject(o, "state", "stopped");
		return o;
	}
	cJSON_AddStringToObject(o, "state", gg_probe__state_name(p));
	cJSON_AddStringToObject(o, "kind", p->conf->native ? "native" : "extend");
	cJSON_AddStringToObject(o, "name", p->conf->name);
	gg_probe__json_process(o, p);
	gg_json_add_u64(o, "config_version", p->cfg_version);
	gg_json_add_u64(o, "config_version_applied", p->cfg_applied);
	cJSON_AddBoolToObject(o, "config_confirmed",
			      p->conf->native && p->cfg_version && p->state == GG_PS_RUNNING &&
				      p->cfg_applied >= p->cfg_version);
	{
		/* command_line: what the running process was started with; next_command_line: what the next
		 * start runs (the configuration's param plus the REST flags), when that differs or none runs */
		char next[2048], **pargv = NULL;
		size_t n;
		int nargs = gg_split_args(p->conf->param, &pargv);

		n = (size_t)snprintf(next, sizeof(next), "%s", p->conf->command);
		if (nargs > 0 && n + 1 < sizeof(next)) {
			next[n++] = ' ';
			n += gg_cmdline__format(next + n, sizeof(next) - n, pargv);
		}
		if (nargs >= 0)
			gg_free_args(pargv);
		if (n + 1 < sizeof(next) && p->extra_argv && p->extra_argv[0]) {
			next[n++] = ' ';
			(void)gg_cmdline__format(next + n, sizeof(next) - n, p->extra_argv);
		}
		if (p->pid > 0 && p->cmdline[0])
			cJSON_AddStringToObject(o, "command_line", p->cmdline);
		else
			cJSON_AddNullToObject(o, "command_line");
		if (!(p->pid > 0 && !strcmp(next, p->cmdline)))
			cJSON_AddStringToObject(o, "next_command_line", next);
	}
	if (rp->has_snoopers) {
		cJSON_AddItemToObject(o, "scope", gg_scope__to_json(&rp->scope));
		gg_json_add_u64(o, "scope_changes", rp->scope_changes);
	} else {
		cJSON *sc = cJSON_AddObjectToObject(o, "scope");

		cJSON_AddBoolToObject(sc, "all", 1);
	}
	return o;
}

/* The configuration as GET shows it (passwords masked). */
static cJSON *conf_json(struct gg_rest *r, const struct rest_probe *rp)
{
	cJSON *o = cJSON_CreateObject(), *cmd, *sn, *params;
	const cJSON *sub = conf_subprobes(rp), *x;
	char bin[PATH_MAX];

	registered_bin(r, rp, bin, sizeof(bin));
	cmd = cJSON_AddObjectToObject(o, "cmd");
	cJSON_AddStringToObject(cmd, "bin", bin);
	cJSON_AddStringToObject(cmd, "check_cmd", configured_check(rp));
	cJSON_AddItemToObject(cmd, "probe", sub ? cJSON_Duplicate(sub, 1) : cJSON_CreateArray());
	x = rp->conf ? cJSON_GetObjectItemCaseSensitive(rp->conf, "snoopers") : NULL;
	sn = x ? cJSON_Duplicate(x, 1) : cJSON_CreateObject();
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(sn, "gaussdb"))
	{
		if (cJSON_GetObjectItemCaseSensitive(x, "dbpass"))
			cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)x, "dbpass", cJSON_CreateString("******"));
	}
	cJSON_AddItemToObject(o, "snoopers", sn);
	x = rp->conf ? cJSON_GetObjectItemCaseSensitive(rp->conf, "blacklist") : NULL;
	if (x)
		cJSON_AddItemToObject(o, "blacklist", cJSON_Duplicate(x, 1));
	params = effective_params(rp);
	cJSON_AddItemToObject(o, "params", params ? params : cJSON_CreateObject());
	cJSON_AddStringToObject(o, "state", rp->p && gg_probe__active(rp->p) ? "running" : "stopped");
	return o;
}

static void handle_get_one(struct gg_rest *r, struct rest_probe *rp, struct gg_http_response *resp)
{
	cJSON *o = conf_json(r, rp);

	cJSON_AddItemToObject(o, "runtime", runtime_json(r, rp));
	reply_json(resp, 200, o);
}

static void handle_list(struct gg_rest *r, struct gg_http_response *resp)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "probes");

	for (unsigned int i = 0; i < r->nprobes; i++) {
		struct rest_probe *rp = &r->probes[i];
		cJSON *e = runtime_json(r, rp);

		cJSON_AddStringToObject(e, "rest_state", rp->p && gg_probe__active(rp->p) ? "running" : "stopped");
		cJSON_AddStringToObject(e, "rest_name", rp->def->rest_name);
		cJSON_AddStringToObject(e, "bin", rp->def->bin);
		cJSON_AddItemToArray(arr, e);
	}
	reply_json(resp, 200, o);
}

/* The stored configuration after a PUT: each part present replaces that part. */
static cJSON *merge(const cJSON *old, const cJSON *put)
{
	cJSON *m = old ? cJSON_Duplicate(old, 1) : cJSON_CreateObject();
	const cJSON *part;

	if (!m)
		return NULL;
	cJSON_ArrayForEach(part, put)
	{
		cJSON_DeleteItemFromObjectCaseSensitive(m, part->string);
		cJSON_AddItemToObject(m, part->string, cJSON_Duplicate(part, 1));
	}
	return m;
}

static void handle_put(struct gg_rest *r, struct rest_probe *rp, const struct gg_http_request *req,
		       struct gg_http_response *resp)
{
	char msg[MSG_MAX], bin[PATH_MAX], why[1024], *json = NULL, *text = NULL;
	struct gg_rest_check_ctx ctx;
	cJSON *put = NULL, *merged = NULL, *old, *warnings = NULL, *o;
	int status, err;

	status = gg_rest_body__decode(req->body, req->body_len, req->content_type, &json, msg, sizeof(msg));
	if (status)
		goto fail;
	ctx = check_ctx(r, rp, bin, sizeof(bin));
	ctx.warnings = warnings = cJSON_CreateArray();
	status = gg_rest_conf__check(rp->def, &ctx, json, &put, msg, sizeof(msg));
	if (status)
		goto fail;
	if (access(bin, X_OK) != 0) {
		status = 404;
		snprintf(msg, sizeof(msg), "probe %s is not installed: %.512s is not an executable file",
			 rp->def->rest_name, bin);
		goto fail;
	}
	if (gg_exec_trusted(bin, why, sizeof(why))) {
		status = 400;
		snprintf(msg, sizeof(msg), "cmd.bin of probe %s: refusing to run it as root: %.700s",
			 rp->def->rest_name, why);
		goto fail;
	}
	err = ensure_entry(r, rp);
	if (err) {
		status = 503;
		snprintf(msg, sizeof(msg), "cannot add probe %s: %s", rp->def->rest_name, strerror(-err));
		goto fail;
	}
	merged = merge(rp->conf, put);
	text = merged ? cJSON_Print(merged) : NULL;
	if (!text) {
		status = 500;
		snprintf(msg, sizeof(msg), "out of memory");
		goto fail;
	}
	/* Saved before it is applied: an acknowledged configuration survives a crash. */
	err = gg_persist__save(r->state_dir, rp->def->rest_name, text);
	if (err) {
		r->persist_errors++;
		status = 500;
		snprintf(msg, sizeof(msg), "cannot save the configuration in %.512s: %s (nothing changed)",
			 r->state_dir, strerror(-err));
		goto fail;
	}
	old = rp->conf;
	rp->conf = merged;
	merged = NULL;
	apply(r, rp, old, 0);
	cJSON_Delete(old);
	r->puts_ok++;
	gg_info("rest: PUT /%s applied (configuration version %llu)", rp->def->rest_name,
		(unsigned long long)rp->p->cfg_version);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "result", "success");
	cJSON_AddStringToObject(o, "message", "New config takes effect");
	/* Accepted for gala-gopher's sake but without effect: the client is told, and so is the log. */
	if (o && warnings && cJSON_GetArraySize(warnings) > 0) {
		const cJSON *w;

		cJSON_ArrayForEach(w, warnings)
		{
			gg_warn("rest: PUT /%s: %s", rp->def->rest_name, cJSON_GetStringValue(w));
		}
		cJSON_AddItemToObject(o, "warnings", warnings);
		warnings = NULL;
	}
	reply_json(resp, 200, o);
	goto out;

fail:
	r->puts_failed++;
	gg_info("rest: PUT /%s refused (%d): %s", rp->def->rest_name, status, msg);
	reply(resp, (unsigned int)status, msg);
out:
	free(text);
	free(json);
	cJSON_Delete(put);
	cJSON_Delete(merged);
	cJSON_Delete(warnings);
}

/* GET|POST /flamegraph/query (alias /v1/profile/ProfileTracing): the flame graph query API over
 * stackprobe's profile store, <flame_dir>/store (flame_dir from the flamegraph REST params); GET
 * /autotrace/query the same over autotrace's store (its captures, by profile_id). */
static void handle_profile_query(struct gg_rest *r, const struct gg_http_request *req, struct gg_http_response *resp,
				 const char *probe, const char *def_dir)
{
	struct rest_probe *rp = find_rest_probe(r, probe);
	const cJSON *params = rp && rp->conf ? cJSON_GetObjectItemCaseSensitive(rp->conf, "params") : NULL;
	const char *dir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "flame_dir"));
	char store[PATH_MAX + 8];
	unsigned int status = 500;
	size_t len = 0;

	snprintf(store, sizeof(store), "%s/store", dir && dir[0] ? dir : def_dir);
	/* Total's processes in containers go under [Pod] and [Con] layers (the container labels' resolver) */
	profile_query__handle_ident(store, req->method, req->body, req->body_len, req->nargs, req->arg_names,
				    req->arg_values, (int64_t)time(NULL),
				    r->sup->exp && r->sup->exp->ident ? gg_ident_export__names : NULL,
				    r->sup->exp ? r->sup->exp->ident : NULL, &status, &resp->body, &len);
	resp->status = status;
	resp->body_len = len;
	resp->content_type = "application/json";
}

void gg_rest__handle(struct gg_sup *sup, const struct gg_http_request *req, struct gg_http_response *resp)
{
	struct gg_rest *r = sup->rest;
	char name[GG_NAME_MAX + 2], msg[MSG_MAX];
	const char *path = req->path;
	size_t n;
	int get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
	struct rest_probe *rp;

	if (gg_webui__refused(sup, req, resp))
		return; /* a browser on another site's name or origin (webui.c) */
	if (gg_webui__match(path)) {
		gg_webui__handle(sup, req, resp); /* the built-in web page (webui.c) */
		return;
	}
	while (*path == '/')
		path++;
	n = strlen(path);
	while (n && path[n - 1] == '/')
		n--;
	if ((n == 16 && !strncmp(path, "flamegraph/query", n)) ||
	    (n == 25 && !strncmp(path, "v1/profile/ProfileTracing", n))) {
		handle_profile_query(r, req, resp, "flamegraph", "/var/log/gala-gopher/flamegraph");
		return;
	}
	if (n == 15 && !strncmp(path, "autotrace/query", n)) {
		handle_profile_query(r, req, resp, "autotrace", "/var/log/gala-gopher/autotrace");
		return;
	}
	if (n >= sizeof(name) - 1 || memchr(path, '/', n)) {
		reply(resp, 404, "unknown path (use /<probe> or /probes)");
		return;
	}
	memcpy(name, path, n);
	name[n] = '\0';
	if (get && (!n || !strcmp(name, "probes"))) {
		r->gets++;
		handle_list(r, resp);
		return;
	}
	rp = find_rest_probe(r, name);
	if (!rp) {
		char known[512] = "";

		for (unsigned int i = 0; i < r->nprobes; i++) {
			size_t l = strlen(known);

			snprintf(known + l, sizeof(known) - l, "%s%s", i ? ", " : "", r->probes[i].def->rest_name);
		}
		for (char *c = name; *c; c++) {
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
				*c = '?';
		}
		snprintf(msg, sizeof(msg), "unknown probe \"%.64s\" (known: %s)", name, known);
		reply(resp, 404, msg);
		return;
	}
	if (get) {
		r->gets++;
		handle_get_one(r, rp, resp);
		return;
	}
	if (!strcmp(req->method, "PUT")) {
		handle_put(r, rp, req, resp);
		return;
	}
	snprintf(msg, sizeof(msg), "method %.16s not allowed (GET, PUT)", req->method);
	reply(resp, 405, msg);
}

static void on_request(void *ctx, const struct gg_http_request *req, struct gg_http_response *resp)
{
	gg_rest__handle(ctx, req, resp);
	if (!resp->headers)
		resp->headers = gg_webui_api_headers; /* nosniff, no framing, no caching */
}

/* ---- configuration delivery ------------------------------------------------------------------------ */

/* ---- snooper scan ------------------------------------------------------------------------------------ */

static void on_scan(uv_timer_t *t)
{
	struct gg_rest *r = t->data;
	const struct gg_snoopers *sets[GG_SCAN_SETS_MAX], *bls[GG_SCAN_SETS_MAX];
	struct rest_probe *who[GG_SCAN_SETS_MAX];
	struct gg_scope *scopes;
	struct gg_scan_stats st;
	struct gg_scan_opts o;
	unsigned int n = 0;
	uint64_t t0;

	if (r->sup->stopping)
		return;
	for (unsigned int i = 0; i < r->nprobes && n < GG_SCAN_SETS_MAX; i++) {
		struct rest_probe *rp = &r->probes[i];

		/* only probes that run (or are about to) and have targets to resolve */
		if (!rp->p || !rp->has_snoopers || (gg_snoopers__empty(&rp->sn) && gg_snoopers__empty(&rp->bl)) ||
		    !gg_probe__active(rp->p))
			continue;
		bls[n] = &rp->bl;
		sets[n] = &rp->sn;
		who[n++] = rp;
	}
	if (!n)
		return;
	scopes = calloc(n, sizeof(*scopes));
	if (!scopes)
		return;
	for (unsigned int i = 0; i < n; i++)
		gg_scope__init(&scopes[i]);
	t0 = uv_hrtime();
	scan_opts(r, &o);
	o.exclude = bls;
	if (gg_snoopers__resolve(sets, n, scopes, &o, &st) == 0) {
		r->scans++;
		r->last_scan = st;
		r->last_scan_us = (uv_hrtime() - t0) / 1000;
		for (unsigned int i = 0; i < n; i++) {
			if (gg_scope__equal(&scopes[i], &who[i]->scope))
				continue;
			who[i]->scope = scopes[i];
			who[i]->scope_changes++;
			if (who[i]->p->conf->native)
				push_config(who[i]);
		}
	}
	free(scopes);
}

/* ---- life cycle -------------------------------------------------------------------------------------- */

static void restore(struct gg_rest *r, struct rest_probe *rp)
{
	char *text = NULL, *json = NULL, msg[MSG_MAX], bin[PATH_MAX];
	struct gg_rest_check_ctx ctx;
	cJSON *saved, *cmd, *conf = NULL;
	int err = gg_persist__load(r->state_dir, rp->def->rest_name, PERSIST_MAX, &text);

	if (err == -ENOENT)
		return;
	if (err) {
		gg_warn("rest: cannot read the saved configuration of %s in %s: %s", rp->def->rest_name, r->state_dir,
			strerror(-err));
		return;
	}
	/* cmd.bin and cmd.check_cmd always come from the configuration file: drop the saved copies and
	 * check the rest as if it were a PUT (the file or the base directories may have changed). */
	saved = cJSON_Parse(text);
	cmd = cJSON_GetObjectItemCaseSensitive(saved, "cmd");
	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "bin");
	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "check_cmd");
	json = saved ? cJSON_PrintUnformatted(saved) : NULL;
	cJSON_Delete(saved);
	ctx = check_ctx(r, rp, bin, sizeof(bin));
	if (!json || gg_rest_conf__check(rp->def, &ctx, json, &conf, msg, sizeof(msg))) {
		gg_warn("rest: ignoring the saved configuration of %s: %s", rp->def->rest_name,
			json ? msg : "not valid JSON");
		goto out;
	}
	if (access(bin, X_OK) != 0) {
		gg_warn("rest: ignoring the saved configuration of %s: %s is not installed", rp->def->rest_name, bin);
		goto out;
	}
	err = ensure_entry(r, rp);
	if (err) {
		gg_warn("rest: cannot add probe %s: %s", rp->def->rest_name, strerror(-err));
		goto out;
	}
	rp->conf = conf;
	conf = NULL;
	apply(r, rp, NULL, 1);
	gg_info("rest: restored the configuration of %s from %s", rp->def->rest_name, r->state_dir);
out:
	cJSON_Delete(conf);
	free(json);
	free(text);
}

int gg_rest__init(struct gg_sup *sup)
{
	const struct gg_http_conf *hc = &sup->cfg.rest_api_server;
	struct gg_http_opts o;
	struct gg_rest *r;

	sup->rest_status = gg_rest__status;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->sup = sup;
	r->nprobes = gg_probe_defs__count();
	r->probes = calloc(r->nprobes, sizeof(*r->probes));
	if (!r->probes) {
		free(r);
		return -ENOMEM;
	}
	sup->rest = r;
	if (snprintf(r->state_dir, sizeof(r->state_dir), "%s/rest", sup->cfg.rest.state_dir) >=
	    (int)sizeof(r->state_dir))
		gg_warn("rest_api_server.state_dir is too long: REST configuration will not be saved");
	for (unsigned int i = 0; i < r->nprobes; i++) {
		struct rest_probe *rp = &r->probes[i];

		rp->def = gg_probe_defs__at(i);
		rp->p = find_configured(sup, rp->def);
		gg_scope__init(&rp->scope);
	}
	for (unsigned int i = 0; i < r->nprobes; i++)
		restore(r, &r->probes[i]);

	uv_timer_init(sup->loop, &r->scan);
	r->scan.data = r;
	r->scan_init = 1;
	uv_timer_start(&r->scan, on_scan, GG_REST_SCAN_MS, GG_REST_SCAN_MS);

	if (!sup->cfg.global.rest_api_on) {
		/* gala-gopher's switch: no listener at all (configuration saved by REST earlier still applies) */
		snprintf(r->error, sizeof(r->error), "off (global.rest_api_on = false)");
		gg_info("rest_api_server: off (global.rest_api_on = false): no REST listener");
		return 0;
	}
	gg_http_opts_from_conf(hc, "rest_api_server", &o);
	o.max_body = GG_REST_WIRE_MAX;
	o.max_connections = 64;
	o.handler = on_request;
	o.ctx = sup;
	if (hc->ssl_auth && !hc->ca_file[0])
		gg_warn("rest_api_server: ssl_auth is on without ca_file: any client can use the REST API");
	r->srv = gg_http_server__new(sup->loop, &o);
	if (!r->srv) {
		snprintf(r->error, sizeof(r->error), "cannot listen on %s:%d%s: %s", hc->bind_addr, hc->port,
			 hc->ssl_auth ? " (https)" : "", strerror(errno));
		gg_error("rest_api_server: %s; the REST API is not available", r->error);
		return 0;
	}
	r->port = gg_http_server__port(r->srv);
	gg_info("rest_api_server: listening on %s:%d (%s%s)", hc->bind_addr, r->port, hc->ssl_auth ? "https" : "http",
		hc->ssl_auth && hc->ca_file[0] ? ", client certificates required" : "");
	return 0;
}

void gg_rest__close(struct gg_sup *sup)
{
	struct gg_rest *r = sup->rest;

	if (!r || r->closed)
		return;
	r->closed = 1;
	gg_http_server__close(r->srv);
	r->srv = NULL;
	if (r->scan_init) {
		uv_timer_stop(&r->scan);
		uv_close((uv_handle_t *)&r->scan, NULL);
	}
	gg_comm__cache_clear();
}

void gg_rest__free(struct gg_sup *sup)
{
	struct gg_rest *r = sup->rest;

	if (!r)
		return;
	for (unsigned int i = 0; i < r->nprobes; i++) {
		cJSON_Delete(r->probes[i].conf);
	}
	free(r->probes);
	free(r);
	sup->rest = NULL;
}

void gg_rest__status(struct gg_sup *sup, cJSON *o)
{
	struct gg_rest *r = sup->rest;
	struct gg_http_stats hs;

	if (!r || !o)
		return;
	cJSON_AddBoolToObject(o, "listening", r->srv != NULL);
	cJSON_AddNumberToObject(o, "port", r->port);
	if (r->error[0])
		cJSON_AddStringToObject(o, "error", r->error);
	gg_http_server__stats(r->srv, &hs);
	gg_json_add_u64(o, "requests", hs.requests);
	gg_json_add_u64(o, "refused_too_large", hs.too_large);
	gg_json_add_u64(o, "refused_client_cert", hs.tls_refused);
	gg_json_add_u64(o, "refused_shutting_down", hs.unavailable);
	gg_json_add_u64(o, "refused_head_timeout", hs.head_timeout);
	gg_json_add_u64(o, "refused_evicted", hs.evicted);
	gg_json_add_u64(o, "refused_body_timeout", hs.body_timeout);
	gg_json_add_u64(o, "puts_applied", r->puts_ok);
	gg_json_add_u64(o, "puts_refused", r->puts_failed);
	gg_json_add_u64(o, "persist_errors", r->persist_errors);
	gg_json_add_u64(o, "snooper_scans", r->scans);
	gg_json_add_u64(o, "snooper_scan_procs", r->last_scan.procs);
	gg_json_add_u64(o, "snooper_scan_files", r->last_scan.files);
	gg_json_add_u64(o, "snooper_scan_us", r->last_scan_us);
}
