/* probe_conf.c - a probe's configuration from its contract: sub-probe lists (-P, the live "probe"
 * list), the command-line options every probe shares, and applying a control message. */
#include "probe_conf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "probe_scope.h"

static int subprobe_lookup(const char *s, size_t len, const struct gg_subprobe *tab, size_t n, unsigned int *ret)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(tab[i].name) == len && !memcmp(tab[i].name, s, len)) {
			if (!tab[i].bit)
				probe_log(PLOG_WARN, "sub-probe '%.*s' is not implemented, ignored", (int)len, s);
			*ret = tab[i].bit;
			return 0;
		}
	}
	return -EINVAL;
}

static void copy_bad(char *bad, size_t badlen, const char *s, size_t len)
{
	if (!bad || !badlen)
		return;
	if (len >= badlen)
		len = badlen - 1;
	memcpy(bad, s, len);
	bad[len] = '\0';
}

int gg_subprobes_parse(const char *csv, const struct gg_subprobe *tab, size_t n, unsigned int *ret, char *bad,
		       size_t badlen)
{
	unsigned int bits = 0, bit;
	const char *p = csv;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (subprobe_lookup(p, len, tab, n, &bit)) {
			copy_bad(bad, badlen, p, len);
			return -EINVAL;
		}
		bits |= bit;
		if (!comma)
			break;
		p = comma + 1;
	}
	*ret = bits;
	return 0;
}

/* "a, b, c": every name of the table. */
static void subprobes_expected(const struct gg_subprobe *tab, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", tab[i].name);
}

int gg_subprobes_arg(const char *prog, const char *csv, const struct gg_subprobe *tab, size_t n, unsigned int *ret)
{
	char bad[64], names[256];

	if (!gg_subprobes_parse(csv, tab, n, ret, bad, sizeof(bad)))
		return 0;
	subprobes_expected(tab, n, names, sizeof(names));
	fprintf(stderr, "%s: unknown sub-probe '%s' in -P (expected %s)\n", prog, bad, names);
	return -EINVAL;
}

/* One of GG_LONGOPTS_COMMON that this probe does not take: as an unknown option (status 2). */
static int not_taken(const char *prog, const char *name)
{
	fprintf(stderr, "%s: unknown option '%s'\nTry '%s --help'.\n", prog, name, prog);
	return 2;
}

int gg_opt_common(const char *prog, int c, const char *arg, const struct gg_opts *o)
{
	switch (c) {
	case 't':
		if (!o->period_s)
			return 0;
		if (probe_parse_uint(arg, o->period_min, o->period_max, o->period_s)) {
			fprintf(stderr, "%s: invalid report period '%s' for -t (expected %u..%u seconds)\n", prog, arg,
				o->period_min, o->period_max);
			return 2;
		}
		return 1;
	case 'l':
		if (!o->level)
			return 0;
		if (probe_log_level__parse(arg, o->level)) {
			fprintf(stderr, "%s: invalid log level '%s' for -l (expected debug, info, warn, error)\n", prog,
				arg);
			return 2;
		}
		return 1;
	case GG_OPT_PID:
		if (!o->scope)
			return not_taken(prog, "--pid");
		if (gg_scope__add_pids(o->scope, arg)) {
			fprintf(stderr, "%s: invalid process list '%s' for --pid (expected PID[,PID...], at most %d)\n",
				prog, arg, GG_SCOPE_TGID_MAX);
			return 2;
		}
		return 1;
	case GG_OPT_COMM:
		if (!o->comm || !o->scope)
			return not_taken(prog, "--comm");
		if (!arg[0] || strlen(arg) > 15) {
			fprintf(stderr, "%s: invalid process name '%s' for --comm (1 to 15 characters)\n", prog, arg);
			return 2;
		}
		*o->comm = arg;
		o->scope->all = 0;
		return 1;
	case GG_OPT_BPF_STATS:
		if (!o->bpf_stats)
			return not_taken(prog, "--bpf-stats");
		*o->bpf_stats = 1;
		return 1;
	default:
		return 0;
	}
}

void gg_subprobes_str(unsigned int bits, const struct gg_subprobe *tab, size_t n, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w;

		if (!(tab[i].bit & bits) || used >= len)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", tab[i].name);
		if (w > 0)
			used += (size_t)w < len - used ? (size_t)w : len - used;
	}
	if (!used)
		snprintf(buf, len, "none");
}

void probe_conf__defaults(const struct gg_contract *c, void *conf, unsigned int *subprobes)
{
	gg_params__defaults(c->params, c->nparams, conf);
	*subprobes = gg_contract__default_subprobes(c);
}

int probe_conf__apply(const struct gg_contract *c, const struct gg_ctrl_msg *m, void *conf, unsigned int *ret_subprobes)
{
	char err[160], names[256];
	unsigned int bits = 0, bit;

	for (unsigned int i = 0; i < m->nsubprobes; i++) {
		const char *name = m->subprobes[i];

		if (subprobe_lookup(name, strlen(name), c->subprobes, c->nsubprobes, &bit)) {
			subprobes_expected(c->subprobes, c->nsubprobes, names, sizeof(names));
			probe_log(PLOG_WARN, "configuration: unknown sub-probe '%s' (expected %s)", name, names);
			return -EINVAL;
		}
		bits |= bit;
	}
	if (gg_params__parse(c->params, c->nparams, m->params, conf, err, sizeof(err))) {
		probe_log(PLOG_WARN, "configuration: %s", err);
		return -EINVAL;
	}
	if (!m->nsubprobes)
		return 0;
	*ret_subprobes = bits;
	return 1;
}

static const char *value_name(const struct gg_param_spec *s)
{
	switch (s->type) {
	case GG_PT_INT:
		return "N";
	case GG_PT_BOOL:
		return "0|1";
	case GG_PT_HOSTPORT:
		return "HOST:PORT";
	case GG_PT_OUT_DIR:
		return "DIR";
	case GG_PT_ELF_PATH:
		return "PATH";
	case GG_PT_ENUM_LIST:
		return "LIST";
	default:
		return "NAME";
	}
}

static void usage_line(FILE *f, const char *opt, const char *help)
{
	fprintf(f, "  %-26s %s\n", opt, help);
}

void probe_conf__usage(FILE *f, const struct probe_args *a)
{
	const struct gg_contract *c = a->contract;
	char opt[64], line[512], desc[160];
	size_t n = 0;
	int live_only = 0;

	fprintf(f, "Usage: %s [OPTION]...\n%s (gala-gopher probe \"%s\": PUT /%s).\n", a->prog, c->summary,
		c->rest_name, c->rest_name);
	fprintf(f, "Without the supervisor, records are printed on stdout, one |table|...| line each.\n\n");
	for (unsigned int i = 0; i < c->nparams; i++) {
		const struct gg_param_spec *s = &c->params[i];

		if (!s->size)
			continue;
		if (!s->flag) {
			live_only = 1;
			continue;
		}
		gg_param__describe(s, 1, desc, sizeof(desc));
		snprintf(opt, sizeof(opt), "%s%s %s", s->flag[1] == '-' ? "    " : "", s->flag, value_name(s));
		snprintf(line, sizeof(line), "%s: %s (%s)", s->name, s->help ? s->help : "", desc);
		usage_line(f, opt, line);
	}
	if (a->subprobes) {
		line[0] = '\0';
		for (unsigned int i = 0; i < c->nsubprobes && n < sizeof(line); i++)
			n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%s%s", i ? ", " : "", c->subprobes[i].name,
					      c->subprobes[i].def_on ? "*" : "");
		fprintf(f, "  %-26s sub-probes, comma separated (* = on by default): %s\n", "-P LIST", line);
	}
	if (a->level)
		usage_line(f, "-l LEVEL", "log level: debug, info, warn or error (default info)");
	if (a->scope)
		usage_line(f, "    --pid PID[,PID...]", "only these processes (default: every process)");
	if (a->scope && a->comm)
		usage_line(f, "    --comm NAME", "only processes with this command name (rescanned as they come)");
	if (a->bpf_stats)
		usage_line(f, "    --bpf-stats", "log each BPF program's runs and ns per run every period");
	for (unsigned int i = 0; i < a->nown; i++) {
		const struct probe_opt *o = &a->own[i];

		if (!o->help)
			continue;
		if (o->short_opt && o->name)
			snprintf(opt, sizeof(opt), "-%c, --%s%s%s", o->short_opt, o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else if (o->short_opt)
			snprintf(opt, sizeof(opt), "-%c%s%s", o->short_opt, o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(opt, sizeof(opt), "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		usage_line(f, opt, o->help);
	}
	usage_line(f, "-h, --help", "show this help and exit");
	usage_line(f, "    --version", "show the version and exit");
	if (live_only) {
		fprintf(f, "\nLive only (\"params\" of a live configuration):\n");
		for (unsigned int i = 0; i < c->nparams; i++) {
			const struct gg_param_spec *s = &c->params[i];

			if (!s->size || s->flag)
				continue;
			gg_param__describe(s, 1, desc, sizeof(desc));
			usage_line(f, s->name, desc);
		}
	}
	if (a->notes)
		fprintf(f, "\n%s", a->notes);
}

/* ---- the command line from the contract ----------------------------------------------------------- */

enum { ID_VERSION = 0x1100, ID_PARAM = 0x2000, ID_OWN = 0x3000, OPTS_MAX = 64 };

/* One contract parameter's flag and value into the probe's configuration: 0, or 2 (message printed). */
static int param_arg(const struct probe_args *a, const struct gg_param_spec *s, const char *arg)
{
	char *out = (char *)a->conf + s->off, desc[160];
	unsigned int v;
	size_t n = strlen(arg);
	int ok;

	switch (s->type) {
	case GG_PT_INT:
		ok = !probe_parse_uint(arg, 0, (unsigned int)gg_param__max(s), &v) &&
		     (v >= gg_param__min(s) || (v == 0 && gg_param__zero_ok(s)));
		break;
	case GG_PT_BOOL:
		ok = !probe_parse_uint(arg, 0, 1, &v);
		break;
	default:
		ok = n < s->size && (s->type != GG_PT_ENUM || !s->choices);
		for (const char *const *c = s->choices; !ok && c && *c && n < s->size; c++)
			ok = !strcmp(*c, arg);
		for (size_t i = 0; ok && i < n; i++)
			ok = (unsigned char)arg[i] >= 0x20 && arg[i] != 0x7f;
		if (ok)
			memcpy(out, arg, n + 1);
		break;
	}
	if (ok && (s->type == GG_PT_INT || s->type == GG_PT_BOOL))
		memcpy(out, &v, sizeof(v));
	if (ok)
		return 0;
	gg_param__describe(s, 1, desc, sizeof(desc));
	fprintf(stderr, "%s: invalid value '%s' for %s (expected %s)\nTry '%s --help'.\n", a->prog, arg, s->flag, desc,
		a->prog);
	return 2;
}

static void add_short(char *so, size_t len, int c, int has_arg)
{
	size_t n = strlen(so);

	if (n + 3 > len)
		return;
	so[n++] = (char)c;
	if (has_arg)
		so[n++] = ':';
	so[n] = '\0';
}

static void add_long(struct option *lo, unsigned int *n, const char *name, int has_arg, int id)
{
	if (*n + 1 < OPTS_MAX)
		lo[(*n)++] = (struct option){name, has_arg, NULL, id};
}

int probe_conf__parse_args(const struct probe_args *a, int argc, char **argv)
{
	const struct gg_contract *c = a->contract;
	const struct gg_opts common = {
		.level = a->level, .scope = a->scope, .comm = a->comm, .bpf_stats = a->bpf_stats};
	struct option lo[OPTS_MAX];
	unsigned char pshort[256] = {0}, oshort[256] = {0};
	char so[128] = ":h";
	unsigned int nlo = 0;
	int opt, rc;

	add_long(lo, &nlo, "help", no_argument, 'h');
	add_long(lo, &nlo, "version", no_argument, ID_VERSION);
	/* the probe's own options first: they may take a letter the generic ones would (tcpprobe's -P) */
	for (unsigned int i = 0; i < a->nown && i < 255; i++) {
		if (a->own[i].short_opt) {
			add_short(so, sizeof(so), a->own[i].short_opt, a->own[i].has_arg);
			oshort[(unsigned char)a->own[i].short_opt] = (unsigned char)(i + 1);
		}
		if (a->own[i].name)
			add_long(lo, &nlo, a->own[i].name, a->own[i].has_arg, ID_OWN + (int)i);
	}
	for (unsigned int i = 0; i < c->nparams && i < 255; i++) {
		const char *f = c->params[i].flag;

		if (!f || !c->params[i].size)
			continue;
		if (f[1] != '-') {
			add_short(so, sizeof(so), f[1], 1);
			pshort[(unsigned char)f[1]] = (unsigned char)(i + 1);
		} else {
			add_long(lo, &nlo, f + 2, required_argument, ID_PARAM + (int)i);
		}
	}
	if (a->level)
		add_short(so, sizeof(so), 'l', 1);
	if (a->subprobes)
		add_short(so, sizeof(so), 'P', 1);
	if (a->scope)
		add_long(lo, &nlo, "pid", required_argument, GG_OPT_PID);
	if (a->scope && a->comm)
		add_long(lo, &nlo, "comm", required_argument, GG_OPT_COMM);
	if (a->bpf_stats)
		add_long(lo, &nlo, "bpf-stats", no_argument, GG_OPT_BPF_STATS);
	lo[nlo] = (struct option){NULL, 0, NULL, 0};

	opterr = 0;
	while ((opt = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		int own = -1, param = -1;

		if (opt >= ID_OWN && opt < ID_OWN + 256)
			own = opt - ID_OWN;
		else if (opt >= ID_PARAM && opt < ID_PARAM + 256)
			param = opt - ID_PARAM;
		else if (opt > 0 && opt < 256 && oshort[opt])
			own = oshort[opt] - 1;
		else if (opt > 0 && opt < 256 && pshort[opt])
			param = pshort[opt] - 1;
		if (own >= 0) {
			rc = a->own_cb(a->ctx, a->own[own].id, optarg);
			if (rc)
				return rc;
		} else if (param >= 0) {
			if (param_arg(a, &c->params[param], optarg))
				return 2;
		} else if (opt == 'P' && a->subprobes) {
			if (gg_subprobes_arg(a->prog, optarg, c->subprobes, c->nsubprobes, a->subprobes))
				return 2;
		} else if (opt == 'h') {
			probe_conf__usage(stdout, a);
			return 0;
		} else {
			rc = gg_opt_common(a->prog, opt, optarg, &common);
			if (rc == 1)
				continue;
			return rc ? rc : probe_opt_other(a->prog, opt, ID_VERSION, argv, NULL);
		}
	}
	return probe_opt_rest(a->prog, argc, argv);
}
