/* probe_runner.h - the main() every probe shares: logging, the contract's defaults, the command line,
 * the runtime (signals, IPC, live configuration), bpf_stats, the report loop and the teardown. */
#ifndef GG_PROBE_RUNNER_H
#define GG_PROBE_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "contract.h"
#include "probe.h"
#include "probe_conf.h"

/*
 * The configuration kept the way most probes keep it: base from the command line (the contract's
 * defaults, then the flags), cur the one in force, size bytes each, with the sub-probe bits (-P, the
 * live "probe" list) at subprobes_off (unused when the contract has no sub-probes: no -P then). The runner copies base
 * into cur before setup; a live configuration is applied to a copy of base (stateless like REST: what the message
 * leaves out, the command line's), which check(ctx, next, msg) may refuse (negative errno, a warning logged), complete
 * from msg (its scope) and compare with cur (what turns on); then it is copied into cur and
 * applied(ctx, version, msg) puts it in place. Both callbacks optional. What takes longer or must not
 * run inside the control channel's callback goes into the runner's apply_conf.
 */
struct probe_runner_conf {
	void *base;
	void *cur;
	size_t size;
	size_t subprobes_off;
	int (*check)(void *ctx, void *next, const struct gg_ctrl_msg *msg);
	void (*applied)(void *ctx, uint64_t version, const struct gg_ctrl_msg *msg);
};

/*
 * A probe: its contract, where its command-line configuration goes, and its callbacks. Each callback
 * gets ctx. A probe defines `const struct probe_runner gg_probe_runner = {...};` and no main(): the
 * library's (probe_main.c) is `return probe_runner__main(&gg_probe_runner, argc, argv);`, which runs
 *
 *   1. probe_log_setup(contract->rest_name); the contract's defaults into conf and *subprobes; an
 *      empty (everything) args.scope; init(ctx);
 *   2. the command line (probe_conf__parse_args(&args), prog, contract and -l filled in), then
 *      check_args(ctx): --help, --version and bad options end here (exit status 0 or 2);
 *   3. with conf.base, cur = base; the runtime (probe_rt__start, with on_config), then setup(ctx,
 *      rt): allocate, open, load and attach the BPF programs (exit status 1 when it fails); the
 *      "started" line;
 *   4. with *args.bpf_stats set, BPF run-time statistics on (*args.bpf_stats back to 0 when that
 *      failed, so a probe logs them only when they are collected);
 *   5. the loop (probe_rt__run): apply, tick and report until SIGTERM/SIGINT or probe_rt__stop;
 *   6. stop(ctx, ...) (last reports; extra words for the "stopping: N records emitted, M invalid"
 *      line), then teardown(ctx) (also after a failed setup) and the runtime freed.
 */
struct probe_runner {
	const struct gg_contract *contract; /* its rest_name is the log and IPC name, its bin the program */
	void *ctx;
	/* The command line: conf, subprobes (-P), scope, comm, bpf_stats, own options and notes, as
	 * probe_conf__parse_args takes them; prog, contract and level are the runner's, and args.ctx (for
	 * own_cb) is ctx when NULL. */
	struct probe_args args;
	/* Where the contract's default sub-probes go when not args.subprobes (a probe with its own -P). */
	unsigned int *subprobes;
	/* With conf.base: args.conf, args.subprobes and cur_subprobes follow from it, and on_config is
	 * the runner's (a probe gives one or the other). */
	struct probe_runner_conf conf;

	/* All optional but report or tick. Return 0 or a negative errno. */
	void (*init)(void *ctx);		      /* before the command line: defaults beyond the contract's */
	int (*check_args)(void *ctx);		      /* after it: an error has been printed on stderr (exit 2) */
	int (*setup)(void *ctx, struct probe_rt *rt); /* an error has been logged (exit 1) */
	/* A live configuration (runs inside the loop's waits); after a 0 the loop is woken, so that a new
	 * report period counts at once. */
	probe_config_cb on_config;
	void (*apply)(void *ctx); /* first in every turn of the loop */
	/* With conf.base: before apply in the loop's first turn after a live configuration was put in
	 * place (once for any number of them; not for those before setup returned: setup applies cur). */
	void (*apply_conf)(void *ctx);
	const unsigned int *period_s; /* report every *period_s s (NULL: ticks only) */
	void (*report)(void *ctx);
	unsigned int (*tick)(void *ctx); /* returns the ms until the next tick (probe_rt__run_ticking) */
	/* With cur_subprobes (the sub-probes in force) or conf.base: the runner logs "started: report
	 * period P s, sub-probes a,b" after setup and "configuration V: report period P s, sub-probes a,b"
	 * after each on_config that returned 0, both followed by what describe writes (", scope all").
	 * The report period only with period_s, the sub-probes only when the contract has some (describe's
	 * leading ", " is dropped when nothing comes before it). */
	const unsigned int *cur_subprobes;
	void (*describe)(void *ctx, char *buf, size_t len);
	/* Under the supervisor, no report before a live configuration was applied or this many ms passed. */
	unsigned int first_config_wait_ms;
	void (*stop)(void *ctx, char *note, size_t len); /* after a clean stop; note may stay "" */
	void (*teardown)(void *ctx);			 /* frees what setup made, even half of it */
};

/* The probe's whole life; returns its exit status. */
int probe_runner__main(const struct probe_runner *r, int argc, char **argv);

/* The probe's runner, for the library's main() (a program with its own main() need not define it). */
extern const struct probe_runner gg_probe_runner;

/* Whether a live configuration was applied (by conf or on_config) since probe_runner__main started. */
int probe_runner__configured(void);
/* In setup, under the supervisor: wait until a live configuration was applied, at most ms (it brings
 * the scope, or what to load). 1 when a stop was asked for meanwhile, else 0 (also when not
 * supervised: no wait). */
int probe_runner__wait_first_config(unsigned int ms);

#endif
