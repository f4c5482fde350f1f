/* ctrl_msg.c - the control message (sub-probes, params, scope) to and from its JSON text. */
#include "ctrl_msg.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errmsg.h"
#include "ipc_impl.h"

/* ---- scope ------------------------------------------------------------------------------------------ */

void gg_scope__init(struct gg_scope *s)
{
	s->all = 1;
	s->truncated = 0;
	s->ntgid = 0;
	s->ncgrp = 0;
}

int gg_scope__equal(const struct gg_scope *a, const struct gg_scope *b)
{
	return a->all == b->all && a->truncated == b->truncated && a->ntgid == b->ntgid && a->ncgrp == b->ncgrp &&
	       !memcmp(a->tgid, b->tgid, a->ntgid * sizeof(a->tgid[0])) &&
	       !memcmp(a->cgrp, b->cgrp, a->ncgrp * sizeof(a->cgrp[0]));
}

cJSON *gg_scope__to_json(const struct gg_scope *s)
{
	cJSON *o = cJSON_CreateObject(), *pids, *cgs;

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "all", s->all);
	pids = cJSON_AddArrayToObject(o, "pids");
	cgs = cJSON_AddArrayToObject(o, "cgroup_ids");
	for (uint32_t i = 0; i < s->ntgid; i++)
		cJSON_AddItemToArray(pids, cJSON_CreateNumber(s->tgid[i]));
	for (uint32_t i = 0; i < s->ncgrp; i++)
		cJSON_AddItemToArray(cgs, cJSON_CreateNumber((double)s->cgrp[i]));
	if (s->truncated)
		cJSON_AddBoolToObject(o, "truncated", 1);
	return o;
}

/* A positive integer from a JSON number or a decimal string. */
static int json_id(const cJSON *it, uint64_t max, uint64_t *ret)
{
	unsigned long long v;

	if (cJSON_IsNumber(it)) {
		double d = cJSON_GetNumberValue(it);

		if (d < 1 || d > (double)max || d != floor(d) || d >= 9007199254740992.0)
			return -EINVAL;
		*ret = (uint64_t)d;
		return 0;
	}
	if (ipc__decimal(cJSON_GetStringValue(it), &v) || v < 1 || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Add unless present: the sets are small (the BPF maps' sizes) and a duplicate would be harmless. */
static int add_id(void *set, uint32_t *n, uint32_t max, int wide, uint64_t id)
{
	for (uint32_t i = 0; i < *n; i++) {
		if (wide ? ((uint64_t *)set)[i] == id : ((uint32_t *)set)[i] == (uint32_t)id)
			return 0;
	}
	if (*n >= max)
		return -E2BIG;
	if (wide)
		((uint64_t *)set)[(*n)++] = id;
	else
		((uint32_t *)set)[(*n)++] = (uint32_t)id;
	return 0;
}

static int ids_from_json(const cJSON *list, void *set, uint32_t *n, uint32_t max, int wide)
{
	const cJSON *it;
	uint64_t id;
	int err;

	if (!list || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return -EINVAL;
	cJSON_ArrayForEach(it, list)
	{
		if (json_id(it, wide ? UINT64_MAX : UINT32_MAX, &id))
			return -EINVAL;
		err = add_id(set, n, max, wide, id);
		if (err)
			return err;
	}
	return 0;
}

int gg_scope__from_json(const cJSON *scope, struct gg_scope *ret)
{
	static struct gg_scope s; /* large: not on the stack; callers are single-threaded */
	const cJSON *all, *trunc;
	int err;

	if (!cJSON_IsObject(scope))
		return -EINVAL;
	gg_scope__init(&s);
	all = cJSON_GetObjectItemCaseSensitive(scope, "all");
	trunc = cJSON_GetObjectItemCaseSensitive(scope, "truncated");
	if ((all && !cJSON_IsBool(all)) || (trunc && !cJSON_IsBool(trunc)))
		return -EINVAL;
	err = ids_from_json(cJSON_GetObjectItemCaseSensitive(scope, "pids"), s.tgid, &s.ntgid, GG_SCOPE_TGID_MAX, 0);
	if (!err)
		err = ids_from_json(cJSON_GetObjectItemCaseSensitive(scope, "cgroup_ids"), s.cgrp, &s.ncgrp,
				    GG_SCOPE_CGRP_MAX, 1);
	if (err)
		return err;
	/* No "all" member: everything unless sets were given. */
	s.all = all ? cJSON_IsTrue(all) : (!s.ntgid && !s.ncgrp);
	s.truncated = cJSON_IsTrue(trunc);
	*ret = s;
	return 0;
}

/* ---- the message ------------------------------------------------------------------------------------ */

void gg_ctrl_msg__init(struct gg_ctrl_msg *m)
{
	m->nsubprobes = 0;
	m->params = NULL;
	m->snoopers = NULL;
	m->has_scope = 0;
	gg_scope__init(&m->scope);
}

void gg_ctrl_msg__fini(struct gg_ctrl_msg *m)
{
	if (!m)
		return;
	cJSON_Delete(m->params);
	cJSON_Delete(m->snoopers);
	gg_ctrl_msg__init(m);
}

int gg_ctrl_msg__encode(const struct gg_ctrl_msg *m, char **ret_json)
{
	cJSON *o = cJSON_CreateObject(), *list;
	int err = -ENOMEM;
	char *txt;

	if (!o)
		return -ENOMEM;
	if (m->nsubprobes) {
		list = cJSON_AddArrayToObject(o, "probe");
		if (!list)
			goto cleanup;
		for (unsigned int i = 0; i < m->nsubprobes; i++)
			cJSON_AddItemToArray(list, cJSON_CreateString(m->subprobes[i]));
	}
	if (m->params && !cJSON_AddItemToObject(o, "params", cJSON_Duplicate(m->params, 1)))
		goto cleanup;
	if (m->snoopers && !cJSON_AddItemToObject(o, "snoopers", cJSON_Duplicate(m->snoopers, 1)))
		goto cleanup;
	if (m->has_scope && !cJSON_AddItemToObject(o, "scope", gg_scope__to_json(&m->scope)))
		goto cleanup;
	txt = cJSON_PrintUnformatted(o);
	if (!txt)
		goto cleanup;
	*ret_json = txt;
	err = 0;
cleanup:
	cJSON_Delete(o);
	return err;
}

/* "probe" at the top level, or "cmd": {"probe": [...]}; absent, null or empty: none. */
static int subprobes_from_json(const cJSON *root, struct gg_ctrl_msg *m, char *err, size_t errlen)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "probe"), *it;

	if (!list) {
		const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(root, "cmd");

		if (cJSON_IsObject(cmd))
			list = cJSON_GetObjectItemCaseSensitive(cmd, "probe");
	}
	if (!list || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return gg_errf(err, errlen, -EINVAL, "\"probe\" must be a list of sub-probe names");
	cJSON_ArrayForEach(it, list)
	{
		const char *name = cJSON_GetStringValue(it);

		if (!name)
			return gg_errf(err, errlen, -EINVAL, "\"probe\"[%u] must be a string", m->nsubprobes);
		if (strlen(name) >= GG_CTRL_SUBPROBE_LEN || m->nsubprobes >= GG_CTRL_SUBPROBES_MAX)
			return gg_errf(err, errlen, -E2BIG, "\"probe\": at most %u names of %u characters",
				    GG_CTRL_SUBPROBES_MAX, GG_CTRL_SUBPROBE_LEN - 1);
		memcpy(m->subprobes[m->nsubprobes++], name, strlen(name) + 1);
	}
	return 0;
}

int gg_ctrl_msg__decode(const char *json, struct gg_ctrl_msg *ret, char *err, size_t errlen)
{
	cJSON *root = json ? cJSON_Parse(json) : NULL, *params, *sn;
	const cJSON *scope;
	int rc;

	gg_ctrl_msg__init(ret);
	if (!cJSON_IsObject(root)) {
		rc = gg_errf(err, errlen, -EINVAL, "not a JSON object");
		goto cleanup;
	}
	rc = subprobes_from_json(root, ret, err, errlen);
	if (rc)
		goto cleanup;
	params = cJSON_GetObjectItemCaseSensitive(root, "params");
	if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params)) {
		rc = gg_errf(err, errlen, -EINVAL, "\"params\" must be an object");
		goto cleanup;
	}
	if (cJSON_IsObject(params))
		ret->params = cJSON_DetachItemViaPointer(root, params);
	sn = cJSON_GetObjectItemCaseSensitive(root, "snoopers");
	if (sn && !cJSON_IsNull(sn))
		ret->snoopers = cJSON_DetachItemViaPointer(root, sn);
	scope = cJSON_GetObjectItemCaseSensitive(root, "scope");
	if (scope && !cJSON_IsNull(scope)) {
		rc = gg_scope__from_json(scope, &ret->scope);
		if (rc) {
			rc = gg_errf(err, errlen, rc, "bad \"scope\" (%s)", strerror(-rc));
			goto cleanup;
		}
		ret->has_scope = 1;
	}
cleanup:
	cJSON_Delete(root);
	return rc;
}
