/* contract.h - a probe's contract (REST name, binary, sub-probes, parameters, snooper kinds), declared
 * once in probes/<bin>/contract.c and read by the probe (options, --help, live configuration), the
 * supervisor (REST validation) and the README generator; and the table-driven parameter parser. */
#ifndef GG_CONTRACT_H
#define GG_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

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

/*
 * One runtime parameter (seed 000, "Configuring Probe Runtime Parameters").
 * def/min/max/zero_off are what the REST API takes (the seed's values). A binary may take a wider range
 * on its command line and live (e.g. report_period 1..600 default 5 for short test periods): then
 * cli_max is set and cli_def/cli_min/cli_max are the binary's (cli_max 0: the binary takes REST's).
 * off/size: where gg_params__parse stores the value in the probe's configuration struct (GG_STORE);
 * size 0: accepted and not stored (the probe has no use for it).
 */
struct gg_param_spec {
	const char *name;
	enum gg_param_type type;
	long long def, min, max;    /* GG_PT_INT, GG_PT_BOOL */
	int zero_off;		    /* 0 is accepted besides [min, max] ("0 = off") */
	const char *def_str;	    /* default of string types (lists: comma separated) */
	const char *const *choices; /* GG_PT_ENUM, GG_PT_ENUM_LIST; NULL-terminated */
	const char *unit;
	int restart;	  /* a change needs a fresh probe process (it chooses what is attached) */
	const char *flag; /* the binary's command-line flag for it ("-t", "--svg-period"), or NULL */
	const char *help; /* one line for --help and the README, or NULL */
	long long cli_def, cli_min, cli_max;
	const char *cli_def_str; /* the binary's default of a string type when it differs from REST's */
	size_t off, size;
};

/* A sub-probe: its name, its bit in the probe's mask (0: accepted, not implemented) and whether it is
 * on without -P or a live list. cli_only: the binary takes it, the REST API does not offer it. */
struct gg_subprobe {
	const char *name;
	unsigned int bit;
	int def_on;
	int cli_only;
};

/* One probe's contract (probes/<bin>/contract.c defines `const struct gg_contract gg_contract_<bin>`). */
struct gg_contract {
	const char *rest_name; /* the REST API's name: PUT /<rest_name> */
	const char *bin;       /* the binary, probes/<bin>/ built into build/probes/<bin> */
	const char *summary;   /* what it reports, one line */
	const struct gg_subprobe *subprobes;
	unsigned int nsubprobes;
	const struct gg_param_spec *params; /* every parameter the REST API takes for it, in message order */
	unsigned int nparams;
	unsigned int snoopers; /* enum gg_snoop_kind bits */
	const char *check_cmd; /* built-in start condition, or NULL */
	/* An extend probe (gala-gopher's script) run under this REST name has no control channel: a change
	 * restarts it with "<subprobe_flag> a,b" and "<flag> <value>" for each parameter named in
	 * extend_params (NULL-terminated). Only baseinfo has them. */
	const char *subprobe_flag;
	const char *const *extend_params;
};

/*
 * Where a parameter is stored in the probe's configuration struct. The supervisor compiles every
 * contract.c with -DGG_CONTRACT_ONLY (it needs names, ranges and defaults, not the probe's headers):
 * then GG_STORE and GG_BIT expand to nothing the probe's headers define (and gg_params__parse must not
 * be given such a table).
 */
#define GG_NOSTORE .size = 0 /* accepted, not stored */
#ifdef GG_CONTRACT_ONLY
/* size 1: "the binary stores it" (for the README); the layout is the binary's own */
#define GG_STORE(type, member) .off = 0, .size = 1
#define GG_BIT(x)	       0u
#else
#define GG_STORE(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define GG_BIT(x)	       (x)
#endif

/* The parameters gala-gopher gives every probe (seed 000), stored by none of ours: put them in a
 * contract's params where they belong in the REST API's "allowed" list. */
extern const char *const gg_metrics_types[];
extern const char *const gg_envs[];
/* clang-format off */
#define GG_PARAMS_SEED_COMMON(report_event_store) \
	{.name = "res_lower_thr", .type = GG_PT_INT, .def = 0, .min = 0, .max = 100, .unit = "percent"}, \
	{.name = "res_upper_thr", .type = GG_PT_INT, .def = 0, .min = 0, .max = 100, .unit = "percent"}, \
	{.name = "report_event", .type = GG_PT_BOOL, .def = 0, .min = 0, .max = 1, report_event_store}, \
	{.name = "metrics_type", .type = GG_PT_ENUM_LIST, .def_str = "raw", .choices = gg_metrics_types}, \
	{.name = "env", .type = GG_PT_ENUM, .def_str = "node", .choices = gg_envs}
/* The seed's report_period: 5..600 s, default 60 over REST; our binaries take 1..600, default 5. */
#define GG_PARAM_REPORT_PERIOD(store) \
	{.name = "report_period", .type = GG_PT_INT, .def = 60, .min = 5, .max = 600, .unit = "s", .flag = "-t", \
	 .help = "report period", .cli_def = 5, .cli_min = 1, .cli_max = 600, store}
/* The seed's sample_period, which it gives io and tcp: accepted, used by none of ours. */
#define GG_PARAM_SAMPLE_PERIOD \
	{.name = "sample_period", .type = GG_PT_INT, .def = 5000, .min = 100, .max = 10000, .unit = "ms"}
/* A threshold: REST 10..100000 or 0 (off), default 0 (seed 000); the binary takes 0..100000. */
#define GG_PARAM_THR(n, u, fl, hl, store) \
	{.name = n, .type = GG_PT_INT, .def = 0, .min = 10, .max = 100000, .zero_off = 1, .unit = u, .flag = fl, \
	 .help = hl, .cli_def = 0, .cli_min = 0, .cli_max = 100000, store}
#define GG_PARAM_BOOL(n, fl, hl, store) \
	{.name = n, .type = GG_PT_BOOL, .def = 0, .min = 0, .max = 1, .flag = fl, .help = hl, store}
/* A contract.c's definition: `GG_CONTRACT(bin, "rest name", snoopers, "summary", more fields...);` with
 * the arrays `subprobes` and `params` defined before it. */
#define GG_CONTRACT(b, rest, sn, sum, ...) \
	const struct gg_contract gg_contract_##b = {.rest_name = rest, .bin = #b, .summary = sum, .snoopers = sn, \
						    GG_CONTRACT_TABLES(subprobes, params), __VA_ARGS__}
/* The same for a probe without sub-probes (seed 000's "NA"): only the array `params` before it. */
#define GG_CONTRACT_NOSUB(b, rest, sn, sum, ...) \
	const struct gg_contract gg_contract_##b = {.rest_name = rest, .bin = #b, .summary = sum, .snoopers = sn, \
						    .params = params, .nparams = sizeof(params) / sizeof(params[0]), \
						    __VA_ARGS__}
/* The tables of a contract: .subprobes/.nsubprobes and .params/.nparams from two arrays. */
#define GG_CONTRACT_TABLES(sp, p) \
	.subprobes = sp, .nsubprobes = sizeof(sp) / sizeof((sp)[0]), .params = p, .nparams = sizeof(p) / sizeof((p)[0])
/* clang-format on */

/* The range and default the binary takes (REST's unless cli_max is set). */
long long gg_param__min(const struct gg_param_spec *s);
long long gg_param__max(const struct gg_param_spec *s);
long long gg_param__def(const struct gg_param_spec *s);
/* Whether the binary takes 0 besides its range. */
int gg_param__zero_ok(const struct gg_param_spec *s);

/* "1..600 s, default 5", "0 or 1, default 0", "one of raw, telemetry, default \"raw\"": the range and
 * default the binary takes (binary), else the REST API's. For --help and the README. */
void gg_param__describe(const struct gg_param_spec *s, int binary, char *buf, size_t len);

/* 1 when s is one of the NULL-terminated list (NULL: an empty list). */
int gg_in_list(const char *const *list, const char *s);

const struct gg_param_spec *gg_contract__param(const struct gg_contract *c, const char *name);
/* The sub-probes on by default (their bits). */
unsigned int gg_contract__default_subprobes(const struct gg_contract *c);

/*
 * The one parameter parser: params (a live configuration's "params") into conf, by the table.
 * - params NULL or JSON null: nothing changes, 0.
 * - params not an object: -EINVAL.
 * - a member that is absent or null keeps conf's value; members the table does not know are ignored
 *   (the supervisor has validated them against the REST table already).
 * - GG_PT_INT: a JSON number that is an integer, or a string of 1 to 19 decimal digits, in
 *   [gg_param__min, gg_param__max] (or 0 when gg_param__zero_ok); stored as unsigned int.
 * - GG_PT_BOOL: true, false, or the integer 0 or 1 as above; stored as int (0/1).
 * - string types: a JSON string without control characters, shorter than the field; GG_PT_ENUM one
 *   of its choices; GG_PT_ENUM_LIST a string or a list of strings of its choices, stored joined by ','.
 * All or nothing: every member is checked before any is stored. 0, or -EINVAL with a message naming
 * the parameter and what it accepts in err (may be NULL).
 */
int gg_params__parse(const struct gg_param_spec *specs, unsigned int n, const cJSON *params, void *conf, char *err,
		     size_t errlen);
/* Every stored parameter's binary default into conf (before the command line is read). */
void gg_params__defaults(const struct gg_param_spec *specs, unsigned int n, void *conf);

#endif
