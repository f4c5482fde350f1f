/* contract.c - reading a probe contract: the binary's ranges, defaults, and the one table-driven
 * parser of a live configuration's "params". */
#include "contract.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "errmsg.h"
#include "ipc_impl.h"

const char *const gg_metrics_types[] = {"raw", "telemetry", NULL};
const char *const gg_envs[] = {"node", "container", "kubenet", NULL};

long long gg_param__min(const struct gg_param_spec *s)
{
	return s->cli_max ? s->cli_min : s->min;
}

long long gg_param__max(const struct gg_param_spec *s)
{
	return s->cli_max ? s->cli_max : s->max;
}

long long gg_param__def(const struct gg_param_spec *s)
{
	return s->cli_max ? s->cli_def : s->def;
}

int gg_param__zero_ok(const struct gg_param_spec *s)
{
	return s->zero_off || gg_param__min(s) == 0;
}

const struct gg_param_spec *gg_contract__param(const struct gg_contract *c, const char *name)
{
	for (unsigned int i = 0; i < c->nparams; i++) {
		if (!strcmp(c->params[i].name, name))
			return &c->params[i];
	}
	return NULL;
}

unsigned int gg_contract__default_subprobes(const struct gg_contract *c)
{
	unsigned int bits = 0;

	for (unsigned int i = 0; i < c->nsubprobes; i++) {
		if (c->subprobes[i].def_on)
			bits |= c->subprobes[i].bit;
	}
	return bits;
}

/* An integer: a JSON number without a fraction, or a decimal string. */
static int json_int(const cJSON *it, long long *ret)
{
	unsigned long long u;

	if (cJSON_IsNumber(it)) {
		double d = cJSON_GetNumberValue(it);

		if (d != floor(d) || fabs(d) >= 9007199254740992.0)
			return -EINVAL;
		*ret = (long long)d;
		return 0;
	}
	if (ipc__decimal(cJSON_GetStringValue(it), &u) || u > (unsigned long long)INT64_MAX)
		return -EINVAL;
	*ret = (long long)u;
	return 0;
}

int gg_in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++) {
		if (!strcmp(*list, s))
			return 1;
	}
	return 0;
}

static int clean_string(const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	}
	return 1;
}

/* Check one value against its spec; with out, store it there (out has s->size bytes). */
static int take(const struct gg_param_spec *s, const cJSON *it, void *out, char *err, size_t errlen)
{
	long long v;
	unsigned int u;
	size_t used = 0;
	const cJSON *e;

	switch (s->type) {
	case GG_PT_INT:
		if (json_int(it, &v) ||
		    !((v >= gg_param__min(s) && v <= gg_param__max(s)) || (v == 0 && gg_param__zero_ok(s))))
			return gg_errf(err, errlen, -EINVAL, "%s must be an integer %lld..%lld%s", s->name, gg_param__min(s),
				    gg_param__max(s), s->zero_off ? " or 0 (off)" : "");
		u = (unsigned int)v;
		if (out)
			memcpy(out, &u, sizeof(u));
		return 0;
	case GG_PT_BOOL:
		if (cJSON_IsBool(it))
			v = cJSON_IsTrue(it);
		else if (json_int(it, &v) || (v != 0 && v != 1))
			return gg_errf(err, errlen, -EINVAL, "%s must be 0, 1, true or false", s->name);
		u = (unsigned int)v;
		if (out)
			memcpy(out, &u, sizeof(u));
		return 0;
	case GG_PT_ENUM_LIST:
		if (cJSON_IsArray(it)) {
			cJSON_ArrayForEach(e, it)
			{
				const char *str = cJSON_GetStringValue(e);
				size_t n = str ? strlen(str) : 0;

				if (!str || !gg_in_list(s->choices, str) || used + n + 1 > s->size)
					return gg_errf(err, errlen, -EINVAL, "%s must be a list of known names, %zu bytes at most",
						    s->name, s->size ? s->size - 1 : 0);
				if (out) {
					if (used)
						((char *)out)[used - 1] = ',';
					memcpy((char *)out + used, str, n + 1);
				}
				used += n + 1;
			}
			if (out && !used && s->size)
				((char *)out)[0] = '\0';
			return 0;
		}
		/* a single string is a list of one */
		__attribute__((fallthrough));
	default: {
		const char *str = cJSON_GetStringValue(it);
		size_t n = str ? strlen(str) : 0;

		if (!str || !clean_string(str) || (s->size && n >= s->size) ||
		    ((s->type == GG_PT_ENUM || s->type == GG_PT_ENUM_LIST) && !gg_in_list(s->choices, str)))
			return gg_errf(err, errlen, -EINVAL,
				    "%s must be a string%s of at most %zu bytes without control characters", s->name,
				    s->choices ? " of its choices" : "", s->size ? s->size - 1 : 0);
		if (out)
			memcpy(out, str, n + 1);
		return 0;
	}
	}
}

int gg_params__parse(const struct gg_param_spec *specs, unsigned int n, const cJSON *params, void *conf, char *err,
		     size_t errlen)
{
	int rc;

	if (!params || cJSON_IsNull(params))
		return 0;
	if (!cJSON_IsObject(params))
		return gg_errf(err, errlen, -EINVAL, "\"params\" must be an object");
	/* Check everything first, then store: all or nothing. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < n; i++) {
			const cJSON *it = cJSON_GetObjectItemCaseSensitive(params, specs[i].name);

			if (!specs[i].size || !it || cJSON_IsNull(it))
				continue;
			if ((specs[i].type == GG_PT_INT || specs[i].type == GG_PT_BOOL) &&
			    specs[i].size != sizeof(unsigned int))
				return gg_errf(err, errlen, -EINVAL, "%s: stored in a field of %zu bytes, not an unsigned int",
					    specs[i].name, specs[i].size);
			rc = take(&specs[i], it, pass ? (char *)conf + specs[i].off : NULL, err, errlen);
			if (rc)
				return rc;
		}
	}
	return 0;
}

void gg_params__defaults(const struct gg_param_spec *specs, unsigned int n, void *conf)
{
	for (unsigned int i = 0; i < n; i++) {
		const struct gg_param_spec *s = &specs[i];
		char *out = (char *)conf + s->off;

		if (!s->size)
			continue;
		if (s->type == GG_PT_INT || s->type == GG_PT_BOOL) {
			unsigned int u = (unsigned int)gg_param__def(s);

			memcpy(out, &u, sizeof(u));
		} else {
			snprintf(out, s->size, "%s", s->cli_def_str ? s->cli_def_str : s->def_str ? s->def_str : "");
		}
	}
}

static const char *const type_names[] = {
	[GG_PT_INT] = "integer",	[GG_PT_BOOL] = "0 or 1",
	[GG_PT_ENUM] = "one of",	[GG_PT_ENUM_LIST] = "list of",
	[GG_PT_HOSTPORT] = "host:port", [GG_PT_NAME] = "device name",
	[GG_PT_OUT_DIR] = "directory",	[GG_PT_ELF_PATH] = "executable path",
};

void gg_param__describe(const struct gg_param_spec *s, int binary, char *buf, size_t len)
{
	size_t n = 0;
	int w;

	if (!len)
		return;
	buf[0] = '\0';
#define ADD(...)                                                                 \
	do {                                                                     \
		w = snprintf(buf + n, len - n, __VA_ARGS__);                     \
		n = w < 0 ? n : ((size_t)w < len - n ? n + (size_t)w : len - 1); \
	} while (0)
	if (s->type == GG_PT_INT) {
		long long lo = binary ? gg_param__min(s) : s->min, hi = binary ? gg_param__max(s) : s->max;

		ADD("%lld..%lld", lo, hi);
		if (s->zero_off && lo != 0)
			ADD(" or 0 (off)");
		if (s->unit)
			ADD(" %s", s->unit);
		ADD(", default %lld", binary ? gg_param__def(s) : s->def);
	} else if (s->type == GG_PT_BOOL) {
		ADD("0 or 1, default %lld", binary ? gg_param__def(s) : s->def);
	} else {
		ADD("%s", type_names[s->type]);
		for (const char *const *c = s->choices; c && *c; c++)
			ADD("%s%s", c == s->choices ? " " : ", ", *c);
		ADD(", default \"%s\"", binary && s->cli_def_str ? s->cli_def_str : s->def_str ? s->def_str : "");
	}
#undef ADD
}
