/* contract.c - jvmprobe's contract: REST name "jvm", no sub-probes, parameters (ipc/contract.h). */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "jvm_conf.h"
#endif

/* clang-format off */
static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct jvm_conf, period_s)),
	GG_PARAMS_SEED_COMMON(GG_NOSTORE),
};
/* clang-format on */

/* Seed 000 gives jvm no sub-probes ("NA"): no GG_CONTRACT (its sizeof needs a non-empty list). */
const struct gg_contract gg_contract_jvmprobe = {
	.rest_name = "jvm",
	.bin = "jvmprobe",
	.summary = "JVM classes, threads, heap and non-heap pools, GC, safepoints and JIT from HotSpot's perf "
		   "counters (hsperfdata; no attach)",
	.params = params,
	.nparams = sizeof(params) / sizeof(params[0]),
	.snoopers = GG_SNOOP_ALL,
};
