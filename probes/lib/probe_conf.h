/* probe_conf.h - a probe's configuration from its contract (ipc/contract.h): sub-probe lists (-P and
 * the live "probe" list), the command-line options every probe shares, and applying a control message
 * (ipc/ctrl_msg.h) with the one parameter parser. */
#ifndef GG_PROBE_CONF_H
#define GG_PROBE_CONF_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "contract.h"
#include "ctrl_msg.h"
#include "probe.h"

/*
 * A comma separated sub-probe list ("-P tcp_rtt,tcp_abnormal") into *ret. 0, or -EINVAL with the
 * first unknown name copied to bad (cut to badlen, may be NULL). Names with bit 0 are accepted.
 */
int gg_subprobes_parse(const char *csv, const struct gg_subprobe *tab, size_t n, unsigned int *ret, char *bad,
		       size_t badlen);
/* gg_subprobes_parse for a probe's -P: on an unknown name, "PROG: unknown sub-probe 'x' in -P
 * (expected a, b, c)" on stderr and -EINVAL. */
int gg_subprobes_arg(const char *prog, const char *csv, const struct gg_subprobe *tab, size_t n, unsigned int *ret);
/*
 * The command-line options most probes share. A probe lists GG_LONGOPTS_COMMON in its long options,
 * "t:l:" in its short ones, and passes each option its own switch does not know to gg_opt_common;
 * a NULL field means the probe does not take that option.
 */
enum { GG_OPT_PID = 0x1000, GG_OPT_COMM, GG_OPT_BPF_STATS };
/* clang-format off */
#define GG_LONGOPTS_COMMON \
	{"pid", required_argument, NULL, GG_OPT_PID}, \
	{"comm", required_argument, NULL, GG_OPT_COMM}, \
	{"bpf-stats", no_argument, NULL, GG_OPT_BPF_STATS}
/* clang-format on */
struct gg_opts {
	unsigned int *period_s; /* -t SEC, in [period_min, period_max] */
	unsigned int period_min, period_max;
	enum probe_log_level *level; /* -l LEVEL */
	struct gg_scope *scope;	     /* --pid LIST adds to it; --comm makes it filtered */
	const char **comm;	     /* --comm NAME, 1 to 15 characters */
	int *bpf_stats;		     /* --bpf-stats */
};
/* 1: c was one of the shared options and is applied; 0: it is not one of them; 2: its value is
 * invalid, or it is one this probe does not take (a message on stderr; the exit status). */
int gg_opt_common(const char *prog, int c, const char *arg, const struct gg_opts *o);
/* "a,b,c" of the names whose bits are set ("none" when none). */
void gg_subprobes_str(unsigned int bits, const struct gg_subprobe *tab, size_t n, char *buf, size_t len);

/* The contract's defaults: every stored parameter's binary default into conf, the default sub-probes
 * into *subprobes. */
void probe_conf__defaults(const struct gg_contract *c, void *conf, unsigned int *subprobes);

/*
 * A control message into a probe's configuration by its contract: conf (the caller's copy of its
 * command-line configuration) takes the message's params (gg_params__parse, c->params); *ret_subprobes
 * the bits of the sub-probes it names. 1 when it names sub-probes, 0 when not (keep the command
 * line's), -EINVAL (a warning logged, naming the bad value; conf and *ret_subprobes untouched) when a
 * parameter or a sub-probe name is invalid.
 */
int probe_conf__apply(const struct gg_contract *c, const struct gg_ctrl_msg *m, void *conf,
		      unsigned int *ret_subprobes);

/* An option of the probe's own, beyond its contract's parameters and the shared ones. */
struct probe_opt {
	const char *name; /* long name without "--", or NULL */
	int short_opt;	  /* its letter, or 0 */
	int has_arg;	  /* no_argument or required_argument */
	int id;		  /* given to own_cb */
	const char *arg;  /* its value's name in --help ("N", "PATH"), NULL without one */
	const char *help; /* one line for --help */
};

/* What probe_conf__parse_args needs; a NULL pointer means the probe does not take that option. */
struct probe_args {
	const char *prog;
	const struct gg_contract *contract; /* every parameter with a flag: its value into conf (GG_STORE) */
	void *conf;
	unsigned int *subprobes;     /* -P LIST of the contract's sub-probe names */
	enum probe_log_level *level; /* -l LEVEL */
	struct gg_scope *scope;	     /* --pid LIST */
	const char **comm;	     /* --comm NAME (with scope) */
	int *bpf_stats;		     /* --bpf-stats */
	const struct probe_opt *own; /* checked first: a letter here wins over a shared one */
	unsigned int nown;
	int (*own_cb)(void *ctx, int id, const char *arg); /* 0, or the exit status (message printed) */
	void *ctx;
	const char *notes; /* after the options in --help: tables, costs, the live configuration */
};

/* --help, from the contract and a: what the probe is, every option with its range and default (the
 * contract's parameters with a flag; those without one are listed as live only), then a->notes. */
void probe_conf__usage(FILE *f, const struct probe_args *a);

/*
 * The probe's command line: its contract's parameter flags (range and type from the contract: "PROG:
 * invalid value 'x' for -t (expected 1..600 s, default 5)"), -P, -l, --pid, --comm, --bpf-stats, its
 * own options, -h/--help and --version. -1 to go on, or the exit status (0 after --help/--version, 2
 * on a bad option or value, with a message on stderr).
 */
int probe_conf__parse_args(const struct probe_args *a, int argc, char **argv);

#endif
